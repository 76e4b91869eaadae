"""`jackpot-floor`: the floor supervisor's tool. Pending hits and their approval or rejection (RULES.md §7,
dual control above the link's threshold), tables and their suspension (NSW 14.13), the audit trail and the
pools, without hand-built gRPC calls (role supervisor, else admin)."""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable

import grpc

from jackpotd.auth.credentials import add_credential_flags
from jackpotd.auth.role_cli import role_main
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.ids import ID_GRAMMAR, TEXT_MAX, parse_hit_id, require_id
from jackpotd.target import add_target_flag, failure_line

from .calls import (
    APPROVAL_REASON,
    DEFAULT_TIMEOUT,
    PAID,
    PENDING,
    REJECTED,
    ROLES,
    FloorCalls,
    FloorError,
)
from .render import (
    render_audit,
    render_changed,
    render_decision,
    render_hits,
    render_pools,
    render_tables,
    to_json,
)

PROG = "jackpot-floor"
ChannelFactory = Callable[[str], grpc.aio.Channel]
STATUSES = (PENDING, PAID, REJECTED)

EPILOG = """examples:
  jackpot-floor hits                                  the hits awaiting verification on link demo
  jackpot-floor hits --all --limit 20                 the latest hits, whatever their status
  jackpot-floor approve demo:demo-table-2:r41:3 --ref SURV-2291
                                                      approve a pending hit (surveillance review SURV-2291)
  jackpot-floor reject demo:demo-table-2:r41:3 --ref SURV-2292 --reason "cards disturbed"
  jackpot-floor tables                                online, suspended, last round
  jackpot-floor suspend demo-table-3 --reason "shuffler fault"
  jackpot-floor resume demo-table-3 --reason "shuffler replaced" --ref INSP-88
  jackpot-floor audit --limit 20                      the latest administrative acts, refused ones included
  jackpot-floor pools --link demo --json              the pools, for a script

Every command takes --link (default demo) and --json (machine output: a JSON document on standard output).
A hit at or above the link's dual_approval_threshold_cents is paid only once two different supervisors have
approved it: the first approval prints "1 of 2 approvals recorded"; the same person again is refused. Every act
says as whom it was done ("approved hit ... as supervisor:bob"; "acting_as" in --json).

Exit status: 0 done; 1 jackpotd refused or could not answer (one line: jackpot-floor: CODE: message);
2 a usage error, a missing credential, or several credentials and none chosen.

Credentials, as every role client (docs/SECURITY.md): plain text presents a supervisor (else admin) token from
--token-file, else from $JACKPOTD_TOKEN_FILE (export JACKPOTD_TOKEN_FILE=state/credentials/tokens/supervisor-
bob.token to act as bob in every command), else one minted with $JACKPOTD_AUTH_KEY_FILE, else the credentials
directory's one supervisor token (tokens/supervisor-*.token) or one minted with its auth.key. It never picks
among several: with supervisor-floor.token and supervisor-bob.token and none chosen, it lists them and stops.
TLS (--tls, or --ca) presents a role certificate from --cert/--key or the one of the credentials directory's
roles/. Free text (reasons, refs, names) prints with control characters and line breaks shown as \\n, \\x1b."""


class UsageError(ValueError):
    """Flags that do not make a request."""


def _sub(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, common: argparse.ArgumentParser,
         summary: str, description: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, parents=[common], help=summary, description=textwrap.fill(description, 100),
                          epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)


def parser() -> argparse.ArgumentParser:
    """Every command and flag, with the examples and exit statuses in each --help."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--link", default="demo", metavar="LINK", help="the link (default demo)")
    add_target_flag(common)
    common.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"how long to wait for jackpotd (default {DEFAULT_TIMEOUT:.0f} s)")
    common.add_argument("--json", action="store_true", help="print JSON for machines instead of a table")
    add_credential_flags(common)

    p = argparse.ArgumentParser(prog=PROG, description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    h = _sub(sub, "hits", common, "hits awaiting verification (or all, --all)",
             "The link's hits, newest first: table, seat, hand, cards, amount, age and approvals. Pending ones by "
             "default.")
    which = h.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="every hit, whatever its status")
    which.add_argument("--status", type=str.upper, choices=STATUSES, help="only hits of this status")
    h.add_argument("--table", default="", metavar="TABLE", help="only the hits of this table")
    h.add_argument("--limit", type=int, default=100, metavar="N", help="at most N hits (default 100, at most 1000)")

    a = _sub(sub, "approve", common, "approve a pending hit (it is paid, or awaits a second supervisor)",
             "Approve a PENDING hit, citing the verification that allows payment (--ref). Under dual control the "
             "first approval is recorded and a second, different supervisor must approve.")
    a.add_argument("hit_id", metavar="HIT_ID", help="the hit (jackpot-floor hits shows it)")
    a.add_argument("--ref", required=True, metavar="REF", help="the verification's reference, e.g. SURV-2291")
    a.add_argument("--reason", default="", metavar="TEXT",
                   help=f"a note for the audit trail (default \"{APPROVAL_REASON}\")")
    a.add_argument("--request-id", metavar="ID", help="retry an earlier call with its id (default: a new one)")

    r = _sub(sub, "reject", common, "reject a pending hit (its amount goes back to its pool)",
             "Reject a PENDING hit: nothing is paid and its amount returns to its pool. The reason and the "
             "reference of the review that found it void are required.")
    r.add_argument("hit_id", metavar="HIT_ID", help="the hit (jackpot-floor hits shows it)")
    r.add_argument("--reason", required=True, metavar="TEXT", help="why the hit is not paid")
    r.add_argument("--ref", required=True, metavar="REF", help="the review that found it void, e.g. SURV-2292")
    r.add_argument("--request-id", metavar="ID", help="retry an earlier call with its id (default: a new one)")

    _sub(sub, "tables", common, "the link's tables: online, suspended, last round",
         "The link's tables: whether their controller is connected, whether their jackpot wagers are suspended, "
         "and how long since their last round.")

    s = _sub(sub, "suspend", common, "take a table's jackpot wagers off (NSW 14.13)",
             "Suspend a table's jackpot wagers until a supervisor resumes it.")
    s.add_argument("table_id", metavar="TABLE", help="the table")
    s.add_argument("--reason", required=True, metavar="TEXT", help="why (for the audit trail)")
    s.add_argument("--request-id", metavar="ID", help="retry an earlier call with its id (default: a new one)")

    u = _sub(sub, "resume", common, "put a suspended table's jackpot wagers back on",
             "Resume a suspended table, citing the inspector's approval (--ref, NSW 14.13).")
    u.add_argument("table_id", metavar="TABLE", help="the table")
    u.add_argument("--reason", required=True, metavar="TEXT", help="why (for the audit trail)")
    u.add_argument("--ref", required=True, metavar="REF", help="the inspector's approval, e.g. INSP-88")
    u.add_argument("--request-id", metavar="ID", help="retry an earlier call with its id (default: a new one)")

    t = _sub(sub, "audit", common, "the administrative acts on the link, newest first",
             "The audit trail of the link, refused acts included: when, who (\"console:floor-1 for "
             "supervisor:alice\" when a console acted for a person), what, why, the reference and the outcome.")
    t.add_argument("--limit", type=int, default=50, metavar="N", help="at most N acts (default 50, at most 1000)")
    t.add_argument("--actor", default="", metavar="NAME", help="only the acts of this person (e.g. alice)")
    t.add_argument("--reads", action="store_true",
                   help="list the answered reads too (ListHits, ListAudit: every look at the hits is on the trail)")

    _sub(sub, "pools", common, "the link's pools in dollars and cents",
         "The link's pools as the signs show them, with any fraction of a cent the exact balance holds.")
    return p


def _id(flag: str, value: str) -> None:
    try:
        require_id(flag, value)
    except InvalidInput:
        raise UsageError(f"{flag} {value[:70]!r}: must be {ID_GRAMMAR}") from None


def check(args: argparse.Namespace) -> argparse.Namespace:
    """The flags, checked before anything is sent; UsageError names the flag and its value."""
    _id("--link", args.link)
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: must be more than 0 seconds")
    limit = getattr(args, "limit", None)
    if limit is not None and not 1 <= limit <= 1000:
        raise UsageError(f"--limit {limit}: must be 1 to 1000")
    if getattr(args, "hit_id", None) is not None:
        try:
            parse_hit_id(args.hit_id)
        except InvalidInput:
            raise UsageError(f"HIT_ID {args.hit_id[:100]!r}: must be <link>:<table>:<round>:<seat>, as "
                             "`jackpot-floor hits` shows it") from None
    for flag in ("table_id", "request_id", "table"):
        value = getattr(args, flag, None)
        if value:
            _id({"table_id": "TABLE", "request_id": "--request-id", "table": "--table"}[flag], value)
    for flag in ("reason", "ref"):
        value = getattr(args, flag, None)
        if value is not None and len(value) > TEXT_MAX:
            raise UsageError(f"--{flag}: {len(value)} characters, at most {TEXT_MAX}")
        if value is not None and flag == "ref" and not value.strip():
            raise UsageError("--ref: empty; cite the approval (e.g. SURV-2291)")
    if args.command in ("reject", "suspend", "resume") and not args.reason.strip():
        raise UsageError("--reason: empty; say why (it goes on the audit trail)")
    return args


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The flags, checked (`check`). argparse's own errors exit 2 (SystemExit), UsageError for the rest."""
    return check(parser().parse_args(argv))


def _who(args: argparse.Namespace) -> str:
    """Whom the credential names ("supervisor:bob"), as `role_main` found it: what every act prints."""
    return str(getattr(args, "acting_as", "") or "")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


async def hits(args: argparse.Namespace, calls: FloorCalls) -> str:
    status = None if args.all else (args.status or PENDING)
    found = await calls.hits(args.link, status, args.limit, table_id=args.table)
    return to_json(found) if args.json else render_hits(found, _now_ms(), args.link, status == PENDING)


async def approve(args: argparse.Namespace, calls: FloorCalls) -> str:
    decision = await calls.approve(args.hit_id, args.ref, args.reason, args.request_id)
    return to_json(decision, _who(args)) if args.json else render_decision(decision, _who(args), "approved")


async def reject(args: argparse.Namespace, calls: FloorCalls) -> str:
    decision = await calls.reject(args.hit_id, args.reason, args.request_id, approval_ref=args.ref)
    return to_json(decision, _who(args)) if args.json else render_decision(decision, _who(args), "rejected")


async def tables(args: argparse.Namespace, calls: FloorCalls) -> str:
    found = await calls.tables(args.link)
    return to_json(found) if args.json else render_tables(found, _now_ms(), args.link)


async def suspend(args: argparse.Namespace, calls: FloorCalls) -> str:
    changed = await calls.suspend(args.table_id, args.reason, args.request_id)
    return to_json(changed, _who(args)) if args.json else render_changed("suspended", args.table_id, changed,
                                                                          _who(args))


async def resume(args: argparse.Namespace, calls: FloorCalls) -> str:
    changed = await calls.resume(args.table_id, args.reason, args.ref, args.request_id)
    return to_json(changed, _who(args)) if args.json else render_changed("resumed", args.table_id, changed,
                                                                          _who(args))


async def audit(args: argparse.Namespace, calls: FloorCalls) -> str:
    found = await calls.audit(args.link, args.limit, args.actor, reads=args.reads)
    return to_json(found) if args.json else render_audit(found, args.link)


async def pools(args: argparse.Namespace, calls: FloorCalls) -> str:
    found = await calls.pools(args.link)
    return to_json(found) if args.json else render_pools(found, args.link)


COMMANDS: dict[str, Callable[[argparse.Namespace, FloorCalls], Awaitable[str]]] = {
    "hits": hits, "approve": approve, "reject": reject, "tables": tables, "suspend": suspend, "resume": resume,
    "audit": audit, "pools": pools}


async def run(args: argparse.Namespace, channel_factory: ChannelFactory) -> int:
    """Run a command of parsed flags (`parse`) on a channel from `channel_factory(args.target)`; the exit status.
    A refusal or an unreachable jackpotd is one line on standard error (status 1), never a traceback."""
    channel = channel_factory(args.target)
    try:
        out = await COMMANDS[args.command](args, FloorCalls(channel, timeout=args.timeout))
    except FloorError as e:
        print(failure_line(PROG, args.target, e.code, e.message), file=sys.stderr)
        return 1
    finally:
        await channel.close(grace=None)
    sys.stdout.write(out)
    sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line: 0 done, 1 refused by (or no answer from) jackpotd, 2 usage or credentials."""
    return role_main(PROG, argv, parse, ROLES, "floor", run)


if __name__ == "__main__":
    sys.exit(main())
