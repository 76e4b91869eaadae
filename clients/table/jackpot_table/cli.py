"""`jackpot-table`: run simulated tables against jackpotd, play one round with chosen cards, or load it for a
benchmark."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from tqdm import tqdm

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, table_pb2
from jackpotd.auth.client import bearer, open_channel
from jackpotd.auth.credentials import configured_auth_key, default_credentials_dir, role_certificate, role_token
from jackpotd.auth.guard import identity_of_certificate
from jackpotd.auth.identity import Role
from jackpotd.auth.tokens import issue, read_key
from jackpotd.domain.ids import visible
from jackpotd.domain.money import format_cents
from jackpotd.domain.verification import HitStatus
from jackpotd.target import add_target_flag, failure_line

from .controller import ControllerConfig, TableController
from .deal import LAYOUTS, system_rng
from .failures import PROG, not_playing
from .one_round import add_parser as add_round_parser
from .one_round import play_round, round_config
from .simulator import Scenario, TableSettings, Tally, percentile, play

EPILOG = """Tables must be registered on a link first: `jackpotd serve --demo` registers demo-table-1..6 on
link "demo"; --setup LINK registers the simulated tables on LINK (and creates it as a split link if
it does not exist). Each table keeps its outbox in --outbox-dir, so a restarted simulator resumes.

Credentials. Plain text (a loopback jackpotd): each table presents a token, from --token-file (a path
in which {table} stands for the table id), or minted for it with $JACKPOTD_AUTH_KEY_FILE when that is set,
else with the credentials directory's auth.key (the development key `jackpotd serve` issues under
state/credentials). TLS (--tls, or --ca): each table presents its own certificate: --cert/--key for the
one table the certificate names, or --certs-dir DIR with DIR/<table>.pem and .key (default: the
credentials directory's tables/). --setup acts as an administrator: --admin-token-file, or
--admin-cert/--admin-key on TLS, by default the credentials directory's admin token or certificate."""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="jackpot-table", description=__doc__, epilog=EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in (("simulate", "deal real rounds at N tables and show the live pools and every hit"),
                       ("load", "drive the service as hard as N tables can for a benchmark, then summarize")):
        p = sub.add_parser(name, help=text, description=text + ".", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        add_target_flag(p)
        p.add_argument("--tables", type=int, default=6, help="how many tables (default 6)")
        p.add_argument("--table-prefix", default="demo-table-", help="table ids are PREFIX1..PREFIXN")
        p.add_argument("--game", choices=sorted(LAYOUTS), default="caribbean-stud", help="the tables' game")
        p.add_argument("--seats", type=int, default=7, help="seats per table (default 7)")
        p.add_argument("--wager-cents", type=int, default=100, help="the link's jackpot wager (default 100)")
        p.add_argument("--share", type=float, default=0.6, help="share of seats taking the jackpot wager")
        p.add_argument("--outbox-dir", default="state/outbox", help="where each table keeps its outbox")
        p.add_argument("--setup", metavar="LINK", help="register the tables on LINK first (creating it)")
        p.add_argument("--round-prefix", default=f"{int(time.time())}-",
                       help="round ids are PREFIX0, PREFIX1, ... (default: the start time)")
        if name == "simulate":
            p.add_argument("--rounds", type=int, default=100, help="rounds per table (default 100)")
            p.add_argument("--misdeal-rate", type=float, default=0.01, help="share of rounds voided whole")
            p.add_argument("--absent-rate", type=float, default=0.01, help="share of rounds with an absent player")
            p.add_argument("--fold-rate", type=float, default=0.02,
                           help="share of wagered seats that fold (settled as FOLDED, without cards)")
            p.add_argument("--scenario", help="JSON file of forced hands: "
                                              '{"tables": {"demo-table-1": {"0": {"3": ["As","Ks","Qs","Js","Ts"]}}}}')
        else:
            p.add_argument("--seconds", type=float, default=30, help="how long to run (default 30)")
        _credential_flags(p)
    _credential_flags(add_round_parser(sub, EPILOG))
    return top


def _credential_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("credentials (see below)")
    g.add_argument("--credentials", metavar="DIR",
                   help="a credentials directory (`jackpotd certs`, or the development one); default "
                        "$JACKPOTD_STATE_DIR/credentials or state/credentials")
    g.add_argument("--token-file", help="plain text: each table's bearer token; {table} in the path is the table id")
    g.add_argument("--admin-token-file", help="plain text: the administrator's token for --setup")
    g.add_argument("--tls", action="store_true", help="TLS with the credentials directory's ca.pem and tables/")
    g.add_argument("--ca", help="TLS: the CA certificate that signed the server's certificate")
    g.add_argument("--cert", help="TLS: a table's client certificate: simulate that one table (--tables and "
                                  "--table-prefix are then ignored)")
    g.add_argument("--key", help="TLS: the table's client certificate key (a single table)")
    g.add_argument("--certs-dir", help="TLS: a directory with <table>.pem and <table>.key for every table")
    g.add_argument("--admin-cert", help="TLS: an administrator's client certificate for --setup")
    g.add_argument("--admin-key", help="TLS: its key")


@dataclass(frozen=True)
class Credentials:
    """How the simulated tables, and --setup, authenticate."""

    ca: bytes | None = None  # TLS when set
    table_certs: Mapping[str, tuple[bytes, bytes]] = field(default_factory=dict)  # table -> (cert, key)
    table_tokens: Mapping[str, str] = field(default_factory=dict)
    admin_cert: tuple[bytes, bytes] | None = None
    admin_token: str | None = None

    def table_config(self, config: ControllerConfig) -> ControllerConfig:
        if self.ca is not None:
            cert, key = self.table_certs[config.table_id]
            config.credentials = grpc.ssl_channel_credentials(self.ca, key, cert)
        else:
            config.token = self.table_tokens.get(config.table_id)
        return config

    def admin_channel(self, target: str) -> grpc.aio.Channel:
        if self.ca is not None:
            cert, key = self.admin_cert or (None, None)
            return open_channel(target, ca=self.ca, cert=cert, key=key)
        return open_channel(target, interceptors=bearer(self.admin_token) if self.admin_token else [])


class CredentialError(ValueError):
    """The credential flags do not fit together or name files that are missing."""


def credentials_of(args: argparse.Namespace, tables: list[str]) -> Credentials:
    """The credentials the flags and the credentials directory give (docs/SECURITY.md)."""
    root = Path(args.credentials) if args.credentials else default_credentials_dir()
    ca_file = args.ca or (root / "ca.pem" if args.tls else None)
    if ca_file is None:
        if args.cert or args.key or args.certs_dir or args.admin_cert or args.admin_key:
            raise CredentialError("--cert, --key, --certs-dir, --admin-cert and --admin-key are for TLS: give --ca "
                                  "or --tls")
        configured = None if args.credentials else configured_auth_key()
        key_file = configured or root / "auth.key"
        if args.token_file:
            tokens = {t: _read(args.token_file.replace("{table}", t)).decode().strip() for t in tables}
        elif configured or key_file.exists():
            key = _key(key_file)  # development: a token minted for each table
            tokens = {t: issue(key, Role.TABLE, t) for t in tables}
        else:
            raise CredentialError(f"no credentials: {root} has no auth.key; give --token-file (plain text), "
                                  "--tls or --ca with --certs-dir (TLS), or --credentials DIR")
        admin = None
        if args.admin_token_file:
            admin = _read(args.admin_token_file).decode().strip()
        elif args.setup and configured:
            admin = issue(_key(configured), Role.ADMIN, "jackpot-table")
        elif args.setup:
            try:
                admin = role_token(root, [Role.ADMIN], "jackpot-table")
            except (OSError, ValueError) as e:
                raise CredentialError(str(e)) from None
            if admin is None:
                raise CredentialError(f"--setup needs an administrator's token: --admin-token-file, or "
                                      f"{root}/tokens/admin-*.token")
        return Credentials(table_tokens=tokens, admin_token=admin)
    if args.token_file or args.admin_token_file:
        raise CredentialError("on TLS the tables and --setup present certificates, not tokens")
    certs: dict[str, tuple[bytes, bytes]] = {}
    if args.cert or args.key:
        if not (args.cert and args.key):
            raise CredentialError("--cert and --key go together")
        certs[tables[0]] = (_read(args.cert), _read(args.key))
    else:
        where = Path(args.certs_dir) if args.certs_dir else root / "tables"
        certs = {t: (_read(where / f"{t}.pem"), _read(where / f"{t}.key")) for t in tables}
    admin_cert = None
    if args.admin_cert or args.admin_key:
        if not (args.admin_cert and args.admin_key):
            raise CredentialError("--admin-cert and --admin-key go together")
        admin_cert = (_read(args.admin_cert), _read(args.admin_key))
    elif args.setup:
        found = role_certificate(root, [Role.ADMIN])
        if found is None:
            raise CredentialError(f"--setup on TLS needs an administrator's certificate: --admin-cert/--admin-key, "
                                  f"or one in {root / 'roles'} (`jackpotd certs --roles admin:NAME`)")
        admin_cert = (_read(found[0]), _read(found[1]))
    return Credentials(ca=_read(ca_file), table_certs=certs, admin_cert=admin_cert)


def tables_of(args: argparse.Namespace) -> list[str]:
    """The simulated tables: PREFIX1..PREFIXN, or with --cert the one table its certificate names."""
    if not args.cert:
        return [f"{args.table_prefix}{i}" for i in range(1, args.tables + 1)]
    named = identity_of_certificate(_read(args.cert))
    if named is None or named.table_id is None:
        raise CredentialError(f"--cert {args.cert} names no table (urn:jackpot:table:<id>): it names "
                              f"{named.role.value + ' ' + named.actor if named else 'nobody'}")
    return [named.table_id]


def _key(path: Path) -> bytes:
    try:
        return read_key(path)
    except (OSError, ValueError) as e:
        raise CredentialError(str(e)) from None


def _read(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise CredentialError(f"{path}: {e.strerror or e}") from None


async def setup(target: str, link: str, tables: list[str], game: str, seats: int, wager_cents: int,
                credentials: Credentials | None = None) -> None:
    audit = admin_pb2.Audit(actor="jackpot-table", reason="simulator set-up", approval_ref="SIMULATOR")
    async with (credentials or Credentials()).admin_channel(target) as channel:
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        try:
            await admin.CreateLink(admin_pb2.CreateLinkRequest(
                request_id=f"sim-create-{link}", link_id=link, mode="SPLIT", wager_amount_cents=wager_cents,
                pools=[admin_pb2.PoolConfig(pool="MAJOR", reset_cents=1_000_000),
                       admin_pb2.PoolConfig(pool="MINOR", reset_cents=100_000), admin_pb2.PoolConfig(pool="RESERVE")],
                rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool="MAJOR", ppm=200_000),
                                             admin_pb2.PoolRate(pool="MINOR", ppm=75_000),
                                             admin_pb2.PoolRate(pool="RESERVE", ppm=25_000)], retained_ppm=700_000),
                audit=audit))
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.FAILED_PRECONDITION:  # it exists already
                raise
        for t in tables:
            await admin.RegisterTable(admin_pb2.RegisterTableRequest(
                request_id=f"sim-register-{t}", table_id=t, link_id=link, game=game, seats=seats, audit=audit))


def _print_hit(table_id: str, p: table_pb2.Payout) -> None:
    funded = f" (operator added {format_cents(p.funded_by_operator_cents)})" if p.funded_by_operator_cents else ""
    pending = ", awaiting a supervisor's verification" if p.status == HitStatus.PENDING else ""
    print(visible(f"HIT  {table_id} seat {p.seat}: {p.hand.replace('_', ' ')} wins {format_cents(p.amount_cents)} "
                  f"from {p.pool}{funded}{pending}"), flush=True)


async def run(args: argparse.Namespace) -> int:
    if args.command == "round":
        credentials = credentials_of(args, [args.table])
        return await play_round(args, credentials.table_config(round_config(args)))
    tables = tables_of(args)
    credentials = credentials_of(args, tables)
    if args.setup:
        await setup(args.target, args.setup, tables, args.game, args.seats, args.wager_cents, credentials)
    settings = TableSettings(args.game, args.seats, args.wager_cents, args.share,
                             getattr(args, "misdeal_rate", 0.0), getattr(args, "absent_rate", 0.0),
                             getattr(args, "fold_rate", 0.0))
    scenario = Scenario.load(args.scenario) if getattr(args, "scenario", None) else None
    controllers = list(await asyncio.gather(*(TableController(credentials.table_config(
        ControllerConfig(args.target, t, str(Path(args.outbox_dir) / f"{t}.db")))).start() for t in tables)))
    tally = Tally()
    stop = asyncio.Event()
    try:
        idle = not_playing(args.target, controllers)
        if idle and not any(c.jackpot_enabled for c in controllers):
            print(idle, file=sys.stderr)  # nothing to play: say why at once rather than skip every round
            return 1
        if idle:
            print(idle, file=sys.stderr)  # the others play; these join in when the service lets them
        resumed = sum([await c.resume() for c in controllers])
        if resumed:
            print(f"resumed {resumed} unanswered request(s) from the outboxes")
        rng = system_rng()
        if args.command == "simulate":
            on_hit = _print_hit
            rounds = args.rounds
        else:
            on_hit = None
            rounds = 10**9
            asyncio.get_running_loop().call_later(args.seconds, stop.set)
        started = time.perf_counter()
        games = asyncio.gather(*(play(c, settings, rounds, tally, rng, scenario, args.round_prefix, on_hit, stop)
                                 for c in controllers))
        with tqdm(total=None if args.command == "simulate" else int(args.seconds), unit="s", disable=None,
                  desc="load" if args.command == "load" else "rounds") as bar:
            while not games.done():
                await asyncio.wait([games], timeout=1.0)
                if args.command == "load":
                    bar.update(1)
                else:
                    bar.n = tally.rounds
                    bar.refresh()
                pools = controllers[0].pools
                if pools and args.command == "simulate":
                    bar.set_postfix_str("  ".join(f"{k} {format_cents(v)}" for k, v in sorted(pools.items())))
        await games
        elapsed = time.perf_counter() - started
    finally:
        for c in controllers:
            await c.close()
    print(f"rounds {tally.rounds:,} ({tally.rounds / elapsed:,.1f}/s), wagers {tally.wagers:,} "
          f"({format_cents(tally.wagered_cents)}), refunds {format_cents(tally.refunded_cents)}, "
          f"hits {sum(tally.hits.values()):,} (paid {format_cents(tally.paid_cents)}, awaiting verification "
          f"{format_cents(tally.pending_cents)}), "
          f"skipped while the service was silent {tally.skipped}")
    print(f"latency p50 {percentile(tally.latencies, .5) * 1000:.1f} ms, "
          f"p99 {percentile(tally.latencies, .99) * 1000:.1f} ms over {len(tally.latencies):,} calls")
    if tally.skipped and not tally.latencies:  # rounds were dealt, but not one jackpot wager reached the service
        print(not_playing(args.target, controllers) or f"{PROG}: no jackpot wager was played: every round was "
              "skipped while the service was silent", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return asyncio.run(run(args))
    except KeyboardInterrupt:
        return 130
    except CredentialError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except grpc.aio.AioRpcError as e:
        print(failure_line(PROG, args.target, e.code().name, e.details()), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())



