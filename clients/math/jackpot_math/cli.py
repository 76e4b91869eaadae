"""`jackpot-math`: the math certificate of a link's configuration (issue 24), from a TOML file in the terms of
CreateLink or from a running jackpotd (ReportService/GetMath), with a proposed SetRates/UpdateLink beside it; and
the exact hand tables of every game."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc
from tqdm import tqdm

from jackpotd.auth.client import role_channel
from jackpotd.auth.credentials import CredentialsMissing, add_credential_flags, credential_flags, role_credential
from jackpotd.domain import hands as h
from jackpotd.domain.errors import DomainError, InvalidInput
from jackpotd.domain.ids import ID_GRAMMAR, require_id, visible_json
from jackpotd.odds.simulate import rounds_of
from jackpotd.target import add_target_flag, failure_line

from .certificate import build_certificate
from .html import render_html
from .link_toml import LinkFile, PlayFlags, load_link, play_of_flags
from .odds_table import odds_text
from .served import ROLES, CallFailed, Refused, ServedLink, read_link
from .text import text_summary
from .toml_shape import BadInput
from .what_if import load_change

PROG = "jackpot-math"
ChannelFactory = Callable[[str], grpc.aio.Channel]
TIMEOUT = 60.0  # seconds for GetMath: hold'em bonus's exact figures take a moment on a cold server

EPILOG = """examples:
  jackpot-math certify --config clients/math/examples/split.toml --out split-certificate
  jackpot-math certify --config split.toml --tables 20 --seats-filled 6 --hands-per-hour 60 --days 365 --paths 20
  jackpot-math certify --config split.toml --what-if clients/math/examples/rates-change.toml
  jackpot-math certify --link demo --target 127.0.0.1:50051 --no-simulation
  jackpot-math odds --game holdem-bonus

certify writes DIR/certificate.json and DIR/certificate.html (one file that loads nothing from another host) and
prints the key figures. The configuration comes from a TOML file whose top-level keys are CreateLinkRequest's
fields (link_id, mode, wager_amount_cents, [[pools]], [rates] with [[rates.pools]], games, ...), with optional
[[paytables]] (SetPaytable: game, entries), [[tables]] (RegisterTable: table_id, game, seats), [play] (tables = N
or {"caribbean-stud" = 20}, seats_filled, hands_per_hour) and [balances] (cents per pool; default each pool's
reset value, RESERVE 0); or from jackpotd with --link (its config, version and balances as the ledger holds them).
--what-if CHANGE.toml: [set_rates] (SetRatesRequest's rates: [[set_rates.pools]], retained_ppm, effective_at_ms)
and/or [update_link] (UpdateLinkRequest's fields: wager_amount_cents, [[update_link.pools]], ...), applied as
jackpotd applies them; the certificate shows the proposal beside the current configuration.

Money: cents in files and on the wire, µ¢ (millionths of a cent) in pools, ppm for rates: never fractions.

Exit status: 0 done; 2 bad input (a file, a flag, a credential: the message names the key and value); 1 jackpotd
unreachable or refusing the call, an unknown link included (one line naming the address or the refusal).

Credentials (--link), as jackpot-report: plain text presents a finance (else admin) token from --token-file, else
one minted with $JACKPOTD_AUTH_KEY_FILE, else one from the credentials directory; TLS (--tls, or --ca) presents a
role certificate from --cert/--key or from the credentials directory's roles/."""


def _tables(text: str) -> int | dict[str, int]:
    """--tables: N, or GAME=N[,GAME=N...]."""
    try:
        if "=" not in text:
            return int(text)
        return {game.strip(): int(n) for game, n in (part.split("=", 1) for part in text.split(","))}
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of tables, or GAME=N[,GAME=N]") from None


def parser() -> argparse.ArgumentParser:
    """The command line: `certify` and `odds`."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = sub.add_parser("certify", help="the certificate of a configuration: JSON, HTML and a summary",
                       description="Exact hand odds, the jackpot wager's return at the balances and its break-even "
                                   "pool, the time to each hit, the long-run figures and a seeded simulation of the "
                                   "link, written to DIR/certificate.json and DIR/certificate.html.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = c.add_mutually_exclusive_group(required=True)
    where.add_argument("--config", metavar="FILE.toml", type=Path, help="a link described in the terms of CreateLink")
    where.add_argument("--link", metavar="ID", help="a running link: its config and balances from jackpotd (GetMath)")
    add_target_flag(c, ", with --link")
    c.add_argument("--timeout", type=float, default=TIMEOUT, metavar="SECONDS",
                   help=f"how long to wait for jackpotd (default {TIMEOUT:.0f} s)")
    c.add_argument("--tables", type=_tables, metavar="N|GAME=N,...",
                   help="tables playing (default: the file's [play], the link's registered tables, else 20)")
    c.add_argument("--seats-filled", type=int, metavar="S", help="jackpot wagers a round per table (default 6, or "
                                                                  "the file's)")
    c.add_argument("--hands-per-hour", type=int, metavar="H", help="rounds a table deals an hour (default 60)")
    c.add_argument("--days", type=int, default=365, help="the simulated period in days (default 365)")
    c.add_argument("--paths", type=int, default=20, help="simulated paths of the period (default 20)")
    c.add_argument("--seed", type=int, default=1, help="the simulation's seed (default 1): the same seed, the same "
                                                       "certificate")
    c.add_argument("--no-simulation", action="store_true", help="exact and long-run figures only")
    c.add_argument("--out", type=Path, default=Path("certificate"), metavar="DIR",
                   help="where to write certificate.json and certificate.html (default ./certificate)")
    c.add_argument("--what-if", type=Path, metavar="CHANGE.toml",
                   help="a proposed [set_rates] and/or [update_link], certified beside the current config")
    c.add_argument("--json-only", action="store_true", help="write certificate.json only (no HTML)")
    add_credential_flags(c)
    o = sub.add_parser("odds", help="the exact hand table of a game (no server)",
                       description="Every hand of the game: how many of all equally likely hands it is, its exact "
                                   "probability and 1 in N (by enumeration or exact combinatorics, never sampled).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    o.add_argument("--game", choices=h.GAMES, action="append",
                   help="a game (repeat for several; default every game)")
    return p


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The flags, checked; argparse's own errors exit 2 (SystemExit), BadInput for the rest."""
    args = parser().parse_args(argv)
    if args.command != "certify":
        return args
    if args.link is not None:
        try:
            require_id("--link", args.link)
        except InvalidInput:
            raise BadInput(f"--link={args.link[:70]!r}: must be {ID_GRAMMAR}") from None
    for flag in ("days", "paths"):
        if getattr(args, flag) < 1:
            raise BadInput(f"--{flag}={getattr(args, flag)}: must be 1 or more")
    if args.seed < 0:
        raise BadInput(f"--seed={args.seed}: must be 0 or more")
    if args.timeout <= 0:
        raise BadInput(f"--timeout={args.timeout}: must be more than 0 seconds")
    return args


def play_flags(args: argparse.Namespace, given: PlayFlags) -> PlayFlags:
    """The file's [play], each value the flags give replacing its own."""
    return PlayFlags(given.tables if args.tables is None else args.tables,
                     given.seats_filled if args.seats_filled is None else args.seats_filled,
                     given.hands_per_hour if args.hands_per_hour is None else args.hands_per_hour)


def served(args: argparse.Namespace, channel_factory: ChannelFactory | None) -> ServedLink:
    """The running link --link names, read from jackpotd with the role credential the flags name."""
    if channel_factory is None:
        try:
            credential = role_credential(credential_flags(args), ROLES, "math")
        except CredentialsMissing as e:
            raise BadInput(f"no {ROLES[0].value} credential: {e}") from None
        except ValueError as e:
            raise BadInput(str(e)) from None
        channel_factory = lambda target: role_channel(credential, target)  # noqa: E731
    return asyncio.run(read_link(channel_factory, args.target, args.link, args.timeout))


class Progress:
    """A tqdm bar on standard error (hidden when that is not a terminal) fed by the simulation's progress(n), n
    being the rounds just done (an increment; a what-if's two simulations share the bar)."""

    def __init__(self, total: int) -> None:
        self.bar = tqdm(total=total, desc="simulating", unit=" rounds", unit_scale=True, file=sys.stderr,
                        disable=None, leave=False)

    def __call__(self, done: int) -> None:
        self.bar.update(done)

    def close(self) -> None:
        self.bar.close()


def certify(args: argparse.Namespace, link: LinkFile | ServedLink, flags: PlayFlags) -> int:
    """Build, write and summarise the certificate (build_certificate, render_html, text_summary)."""
    play = play_of_flags(link.config, play_flags(args, flags))
    proposed = None if args.what_if is None else load_change(args.what_if, link.config, int(time.time() * 1000))
    simulate = not args.no_simulation
    bar = Progress(args.paths * rounds_of(play, args.days) * (2 if proposed else 1)) if simulate else None
    try:
        certificate = build_certificate(link.config, link.source, play, link.balances_uc, days=args.days,
                                        paths=args.paths, seed=args.seed, simulate=simulate, progress=bar,
                                        proposed=proposed)
    except DomainError as e:  # a figure the math refuses for this configuration, named
        raise BadInput(f"cannot certify link {link.config.link_id}: {e}") from None
    finally:
        if bar is not None:
            bar.close()
    out: Path = args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
        written = [write(out / "certificate.json", visible_json(certificate, indent=2) + "\n")]
        if not args.json_only:
            written.append(write(out / "certificate.html", render_html(certificate)))
    except OSError as e:
        raise BadInput(f"--out={str(out)!r}: cannot write the certificate: {e.strerror or e}") from None
    print(text_summary(certificate))
    print(f"written: {', '.join(written)}")
    return 0


def write(path: Path, text: str) -> str:
    """`text` to `path` by way of a temporary file renamed over it: a certificate is whole or absent."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
    return str(path)


def odds(args: argparse.Namespace) -> int:
    """Print the exact hand table of each game asked for."""
    print(odds_text(args.game or list(h.GAMES)))
    return 0


def run(args: argparse.Namespace, channel_factory: ChannelFactory | None = None) -> int:
    """Run parsed flags; BadInput, Refused and CallFailed propagate to main."""
    if args.command == "odds":
        return odds(args)
    if args.link is not None:
        link: LinkFile | ServedLink = served(args, channel_factory)
        return certify(args, link, PlayFlags())
    file = load_link(args.config)
    return certify(args, file, file.play)


def main(argv: list[str] | None = None, channel_factory: ChannelFactory | None = None) -> int:
    """The command line; exit 0 done, 2 bad input (named), 1 jackpotd unreachable or refusing (one line)."""
    try:
        return run(parse(argv), channel_factory)
    except SystemExit as e:  # argparse: --help (0) or its own usage error (2, message printed)
        return e.code if isinstance(e.code, int) else 2
    except (BadInput, Refused) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except CallFailed as e:
        print(failure_line(PROG, e.target, e.code, e.details), file=sys.stderr)
        return 1
    except MemoryError:
        print(f"{PROG}: out of memory: ask for fewer paths, days or tables", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
