"""`jackpot-report`: reconcile a link's gaming day or any period, export its ledger to CSV, verify its ledger,
and show what its pools owe players (jackpotd's ReportService, role finance; RULES.md §10)."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections.abc import Awaitable, Callable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import grpc
from tqdm import tqdm

from jackpotd.auth.credentials import add_credential_flags
from jackpotd.auth.role_cli import role_main
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.ids import ID_GRAMMAR, require_id
from jackpotd.target import add_target_flag, failure_line

from .calls import (
    ROLES,
    export_columns,
    fetch_liability,
    fetch_reconciliation,
    report_stub,
    verify_ledger,
)
from .ledger_csv import page_csv
from .model import report_dict
from .provenance import write_provenance
from .render import RECONCILIATION_FORMATS, render_liability, render_verification
from .spreadsheet import ENCODING, EXPORT_COLUMNS, to_csv
from .times import parse_instant
from .today import UnknownZone, current_day

if TYPE_CHECKING:
    from jackpotd.api.gen.jackpot.v1.report_pb2_grpc import ReportServiceAsyncStub

T = TypeVar("T")
PROG = "jackpot-report"
ChannelFactory = Callable[[str], grpc.aio.Channel]
UNARY_TIMEOUT = 120.0  # seconds: reconcile and liability; verify and export take as long as the ledger needs
SPINNER = "|/-\\"

EPILOG = """examples:
  jackpot-report reconcile --link demo --format html --out today.html     # the link's current gaming day
  jackpot-report reconcile --link demo --day 2024-05-01 --format html --out demo-2024-05-01.html
  jackpot-report reconcile --link demo --from 2024-05-01T00:00:00Z --to 2024-05-02T00:00:00Z --format csv
  jackpot-report export --link demo --from-seq 1 --to-seq 5000 --out ledger.csv    # --from-seq 1: the whole ledger
  jackpot-report verify --link demo
  jackpot-report liability --link demo --format json

Without --day or --from (export: nor --from-seq/--to-seq), reconcile and export take the link's current gaming
day by jackpotd's clock, and say which on standard error; liability is as of now and names that day too.
Times are ISO 8601 with an offset or Z (2024-05-01T06:00:00+10:00); a time without one is refused. A gaming
day starts at the link's configured local time in its time zone. Amounts read as dollars and cents ($1,043.35);
a pool's exact balance is kept in millionths of a cent (µ¢, 1 cent = 1,000,000 µ¢) so that contributions never
round, and where it has a fraction of a cent the reconciliation shows it beside the cents (+0.5¢: signs and
payouts show whole cents, rounded down; the remainder stays in the pool). `liability`, JSON and CSV are exact,
never rounded ($1,043.355; CSV and JSON in µ¢ too). An empty period says "No activity in this period". CSV files
are UTF-8 with a byte-order mark (Excel needs it to read UTF-8), and text cells that would start a formula get a
leading apostrophe; the export has a row per posting and a row per hit (hand, seat, cards, pool before, rule,
status, approved by, rejected by) beside its entry's postings.

Exit status: 0 when every identity holds (reconcile) or the ledger verifies (verify); 1 when one does not, or
when jackpotd is unreachable or refuses the call (one line: what happened and what to do); 2 for a usage error
or a missing credential.

Credentials, as every role client (docs/SECURITY.md): plain text presents a finance (else admin) token from
--token-file, else one minted with $JACKPOTD_AUTH_KEY_FILE, else one from the credentials directory's tokens/
or minted with its auth.key; TLS (--tls, or --ca) presents a role certificate from --cert/--key or from the
credentials directory's roles/."""


class UsageError(ValueError):
    """Flags that do not make a request."""


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--link", required=True, metavar="LINK", help="the link to report on")
    add_target_flag(common)
    common.add_argument("--timeout", type=float, metavar="SECONDS",
                        help=f"how long to wait for a reply (default {UNARY_TIMEOUT:.0f} s for reconcile and "
                             "liability; none for verify and export)")
    add_credential_flags(common)
    fmt = {"text", "json"}

    p = argparse.ArgumentParser(prog=PROG, description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser("reconcile", parents=[common], help="a period's reconciliation (RULES.md §10)",
                       description="A gaming day's or a period's movements per pool and per link, and whether every "
                                   "identity of RULES.md §10 holds (exit 1 when one does not).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    period = r.add_mutually_exclusive_group()
    period.add_argument("--day", metavar="YYYY-MM-DD", help="a gaming day of the link (default: its current one)")
    period.add_argument("--from", dest="start", metavar="ISO", help="the period's start (inclusive), with --to")
    r.add_argument("--to", dest="end", metavar="ISO", help="the period's end (exclusive), with --from")
    r.add_argument("--format", choices=sorted(RECONCILIATION_FORMATS), default="text",
                   help="text (default), csv, json, or html (one self-contained file)")
    r.add_argument("--out", metavar="FILE", help="write the report here (default: standard output)")

    e = sub.add_parser("export", parents=[common],
                       help="the ledger's entries to a CSV file, one row per posting and per hit",
                       description="Stream the ledger's entries (by sequence, or by time) into a CSV file that a "
                                   "spreadsheet opens as it is: UTF-8 with a BOM, one row per posting with its "
                                   "entry's columns repeated, and one row per hit the entry settled or decided "
                                   "(hand, seat, cards, pool before, rule, status, approved by, rejected by).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("--from-seq", type=int, default=0, metavar="N",
                   help="the first sequence (1: from the first; with neither --from-seq, --to-seq nor --from, the "
                        "link's current gaming day)")
    e.add_argument("--to-seq", type=int, default=0, metavar="N", help="the last sequence (default the last)")
    e.add_argument("--from", dest="start", metavar="ISO", help="or by time: from (inclusive), with --to")
    e.add_argument("--to", dest="end", metavar="ISO", help="to (exclusive), with --from")
    e.add_argument("--out", required=True, metavar="FILE.csv", help="the CSV file to write")

    v = sub.add_parser("verify", parents=[common], help="verify the hash chain, balances, summaries and Redis",
                       description="Recompute the hash chain, every balance and every summary from the ledger's "
                                   "entries and compare the pools with Redis (exit 1 when anything disagrees).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("--format", choices=sorted(fmt), default="text", help="text (default) or json")

    li = sub.add_parser("liability", parents=[common], help="what the pools owe players now",
                        description="The pools' balances, RESERVE, the hits awaiting verification, the reset values "
                                    "the operator must fund beyond RESERVE, and the total owed to players: exact, "
                                    "never rounded (dollars with every place the µ¢ need, and µ¢).",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    li.add_argument("--format", choices=sorted(fmt), default="text", help="text (default) or json")
    return p


def _instant(flag: str, text: str) -> int:
    try:
        return parse_instant(text)
    except ValueError as e:
        raise UsageError(f"{flag}: {e}") from None


def _times(args: argparse.Namespace) -> tuple[int, int]:
    """--from and --to as [from_ms, to_ms), (0, 0) when neither is given."""
    if (args.start is None) != (args.end is None):
        raise UsageError("--from and --to go together")
    if args.start is None:
        return 0, 0
    start, end = _instant("--from", args.start), _instant("--to", args.end)
    if end <= start:
        raise UsageError(f"--to ({args.end}) must be after --from ({args.start})")
    return start, end


def check(args: argparse.Namespace) -> argparse.Namespace:
    """What the flags ask for, checked and resolved (args.from_ms, args.to_ms); UsageError when they do not
    make a request."""
    try:
        require_id("--link", args.link)
    except InvalidInput:
        raise UsageError(f"--link {args.link[:70]!r}: must be {ID_GRAMMAR}") from None
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    args.from_ms, args.to_ms = 0, 0
    args.today = False  # no period given: the link's current gaming day (resolved on the channel, `_today`)
    if args.command == "reconcile":
        if args.day is not None:
            if args.end is not None:
                raise UsageError("--to goes with --from, not with --day")
            try:
                if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.day):
                    raise ValueError(args.day)
                date.fromisoformat(args.day)
            except ValueError:
                raise UsageError(f"--day {args.day[:40]!r}: must be a date YYYY-MM-DD") from None
        else:
            args.from_ms, args.to_ms = _times(args)
            args.today = not args.from_ms
    elif args.command == "export":
        args.from_ms, args.to_ms = _times(args)
        args.today = not (args.from_ms or args.from_seq or args.to_seq)
        if args.from_seq < 0 or args.to_seq < 0:
            raise UsageError("--from-seq and --to-seq are sequences: 1 or more")
        if args.to_seq and args.from_seq > args.to_seq:
            raise UsageError(f"--from-seq {args.from_seq} is after --to-seq {args.to_seq}")
        if args.from_ms and (args.from_seq or args.to_seq):
            raise UsageError("export by sequence (--from-seq/--to-seq) or by time (--from/--to), not both")
    return args


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The flags, checked (`check`). argparse's own errors exit 2 (SystemExit), UsageError for the rest."""
    return check(parser().parse_args(argv))


def _write(path: str | None, text: str, encoding: str = "utf-8") -> None:
    """To --out, or standard output."""
    if path is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        Path(path).write_text(text, encoding=encoding, newline="")


async def _spinning(call: Awaitable[T], desc: str) -> T:
    """Await `call` with a spinner on standard error (hidden when that is not a terminal)."""
    task = asyncio.ensure_future(call)
    with tqdm(total=None, desc=desc, file=sys.stderr, disable=None, leave=False,
              bar_format="{desc} {elapsed}") as bar:
        turn = 0
        while not task.done():
            await asyncio.wait({task}, timeout=0.2)
            bar.set_description_str(f"{desc} {SPINNER[turn % len(SPINNER)]}")
            turn += 1
    return task.result()


async def _today(args: argparse.Namespace, stub: ReportServiceAsyncStub, said: str) -> None:
    """The link's current gaming day as the period (args.day, args.from_ms and args.to_ms), told in one line on
    standard error: `said` with {day} standing for the day, its zone and start."""
    day = await current_day(stub, args.link, args.timeout or UNARY_TIMEOUT)
    args.day, args.from_ms, args.to_ms = day.day.isoformat(), day.from_ms, day.to_ms
    print(f"{PROG}: " + said.format(day=f"the link's current gaming day {day.said()}"), file=sys.stderr)


async def reconcile(args: argparse.Namespace, stub: ReportServiceAsyncStub) -> int:
    if args.today:
        await _today(args, stub, "no --day given: using {day}")
        args.from_ms = args.to_ms = 0  # the server finds the day's bounds itself
    rec = await fetch_reconciliation(stub, args.link, gaming_day=args.day or "", from_ms=args.from_ms,
                                     to_ms=args.to_ms, timeout=args.timeout or UNARY_TIMEOUT)
    report = report_dict(rec)
    _write(args.out, RECONCILIATION_FORMATS[args.format](report), ENCODING if args.format == "csv" else "utf-8")
    if report["verdict_holds"]:
        return 0
    failing = [i["name"] for i in report["identities"] if not i["holds"]]
    failing += [f"pool {p['pool']} (figures do not add up)" for p in report["pools"] if not p["checked"]]
    failing += [] if report["link"]["checked"] else ["link (figures do not add up)"]
    print(f"{PROG}: link {args.link}: NOT RECONCILED: "
          f"{', '.join(failing) or 'the server says not every identity holds'}", file=sys.stderr)
    return 1


async def export(args: argparse.Namespace, stub: ReportServiceAsyncStub) -> int:
    """Writes FILE.csv.partial and renames it when the stream has ended, so a failed export leaves no file that
    looks complete."""
    if args.today:
        await _today(args, stub, "no --from or --from-seq given: exporting {day}")
    out = Path(args.out)
    partial = out.with_name(out.name + ".partial")
    entries = postings = 0
    seen: dict[str, dict[str, object]] = {}  # the hits met so far: a decision's row names its hit's hand and cards
    try:
        with partial.open("w", encoding=ENCODING, newline="") as f, \
                tqdm(total=None, desc="export", unit=" entries", file=sys.stderr, disable=None) as bar:
            f.write(to_csv([EXPORT_COLUMNS]))
            async for page in export_columns(stub, args.link, from_sequence=args.from_seq, to_sequence=args.to_seq,
                                             from_ms=args.from_ms, to_ms=args.to_ms):
                if bar.total is None and page.export_last_sequence:
                    bar.total = page.export_last_sequence - page.export_first_sequence + 1
                    bar.refresh()
                f.write(page_csv(page, seen))  # a page's rows written (and the bar moved) at once
                entries += len(page.sequence)
                postings += len(page.account)
                bar.update(len(page.sequence))
        sidecar = write_provenance(partial, out, args.link, entries, postings)  # names the software and the CSV
        partial.replace(out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    print(f"exported {entries} entries ({postings} postings) of link {args.link} to {out} (provenance: {sidecar})")
    return 0


async def verify(args: argparse.Namespace, stub: ReportServiceAsyncStub) -> int:
    resp = await _spinning(verify_ledger(stub, args.link, timeout=args.timeout), f"verifying link {args.link}")
    _write(None, render_verification(resp, args.format))
    if not resp.ok:
        print(f"{PROG}: link {args.link}: the ledger does not verify", file=sys.stderr)
    return 0 if resp.ok else 1


async def liability(args: argparse.Namespace, stub: ReportServiceAsyncStub) -> int:
    await _today(args, stub, "liability as of now, in {day}")  # no period to choose: it names the day it falls in
    liab = await fetch_liability(stub, args.link, timeout=args.timeout or UNARY_TIMEOUT)
    _write(None, render_liability(liab, args.format))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, ReportServiceAsyncStub], Awaitable[int]]] = {
    "reconcile": reconcile, "export": export, "verify": verify, "liability": liability}


async def run(args: argparse.Namespace, channel_factory: ChannelFactory) -> int:
    """Run a command of parsed flags (`parse`) on a channel from `channel_factory(args.target)`; the exit status.
    A gRPC error is one line on standard error (status 1), a file that cannot be written too (status 2); neither
    is raised."""
    channel = channel_factory(args.target)
    try:
        return await COMMANDS[args.command](args, report_stub(channel))
    except grpc.aio.AioRpcError as e:
        print(failure_line(PROG, args.target, e.code().name, e.details()), file=sys.stderr)
        return 1
    except UnknownZone as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    finally:
        await channel.close(grace=None)


def main(argv: list[str] | None = None) -> int:
    """The command line (jackpotd.auth.role_cli): exit codes as the help says."""
    return role_main(PROG, argv, parse, ROLES, "finance", run)


if __name__ == "__main__":
    sys.exit(main())
