"""`jackpotd`: serve the jackpot network, migrate the ledger, recover, audit, and look at pools."""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from .settings import Settings, SettingsError, load

EPILOG = """With neither --redis-url nor --postgres-dsn, jackpotd starts embedded PostgreSQL and Valkey
servers under --state-dir and stops them when it exits. Settings may also come from JACKPOTD_* variables
(JACKPOTD_REDIS_URL, JACKPOTD_POSTGRES_DSN, JACKPOTD_LISTEN, JACKPOTD_STATE_DIR) or a TOML file (--config)."""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="TOML file with redis_url, postgres_dsn, listen, state_dir, metrics_port")
    p.add_argument("--redis-url", help="Redis or Valkey URL, e.g. redis://10.0.0.5:6379/0")
    p.add_argument("--postgres-dsn", help="PostgreSQL DSN, e.g. postgresql://jackpot@db/jackpot")
    p.add_argument("--state-dir", help="where embedded servers keep their data (default ./state)")
    p.add_argument("--log-level", help="DEBUG, INFO, WARNING (default INFO)")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="jackpotd", description=__doc__, epilog=EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser("serve", help="run the gRPC service (recovers first)", epilog=EPILOG,
                       description="Migrate, recover every link, then serve TableService, DisplayService, "
                                   "AdminService, health and reflection until Ctrl-C.")
    _common(s)
    s.add_argument("--listen", help="host:port to listen on (default 127.0.0.1:50051)")
    s.add_argument("--metrics-port", type=int, help="Prometheus metrics port on loopback (default 9464; 0: off)")
    s.add_argument("--demo", action="store_true", help="load the demo link: one split link, six tables")
    s.add_argument("--workers", type=int, help="gRPC worker processes (default 1; 0 serves in the supervisor)")
    s.add_argument("--group-commit-ms", type=float,
                   help="under load, how long the ledger writer gathers entries into one commit (default 5)")
    s.add_argument("--retention-seconds", type=int,
                   help="how long Redis keeps settled or voided rounds and answered request records after the "
                        "ledger has them; later retries are answered from PostgreSQL (default 60)")
    m = sub.add_parser("migrate", help="apply pending ledger schema migrations", description="Apply pending "
                       "PostgreSQL migrations (also done on every start).")
    _common(m)
    r = sub.add_parser("recover", help="make Redis and the ledger agree for every link",
                       description="Redis ahead: drain its journal into PostgreSQL. Redis behind or empty: "
                                   "rebuild it from PostgreSQL.")
    _common(r)
    a = sub.add_parser("audit", help="recompute every balance from the ledger and check Redis and the chain",
                       description="Exit status 0 when every link's ledger sums, chains and matches Redis.")
    _common(a)
    f = sub.add_parser("fenced", help="list links stopped because the ledger refused one of their entries",
                       description="Each fenced link, the entry the ledger refused and why. Exit status 1 when "
                                   "any link is fenced. See README, 'A fenced link', for what to do.")
    _common(f)
    u = sub.add_parser("unfence", help="lift a link's fence once its cause is resolved",
                       description="Without --discard the ledger writer tries the refused entry again (after the "
                                   "cause was fixed, e.g. a constraint or trigger). With --discard the link is "
                                   "rebuilt from the ledger, dropping the entries the ledger never took (none of "
                                   "them was ever answered), and callers retry with their request ids.")
    _common(u)
    u.add_argument("link", help="the fenced link's id")
    u.add_argument("--discard", action="store_true", help="drop the entries the ledger refused")
    p = sub.add_parser("pools", help="show a link's pools through the gRPC API",
                       description="Ask a running jackpotd for a link's pools (DisplayService.GetPools).")
    p.add_argument("--link", default="demo", help="link id (default demo)")
    p.add_argument("--target", default="127.0.0.1:50051", help="jackpotd address (default 127.0.0.1:50051)")
    return top


def settings_of(args: argparse.Namespace) -> Settings:
    return load(getattr(args, "config", None), **{name: getattr(args, name, None) for name in Settings.model_fields})


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "pools":
        return _pools(args.link, args.target)
    try:
        settings = settings_of(args)
    except SettingsError as e:
        print(f"jackpotd: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=settings.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    metrics_dir = None
    if (args.command == "serve" and settings.workers > 0 and settings.metrics_port > 0
            and not os.environ.get("PROMETHEUS_MULTIPROC_DIR")):
        # Worker processes count requests, latency and hits: prometheus-client's multiprocess mode puts
        # every process's metrics in files the supervisor's /metrics adds up. It must be chosen before
        # prometheus_client is first imported (by .app), and workers inherit it.
        root = Path(settings.state_dir).resolve() / "metrics"
        for old in root.glob("*"):  # left by a killed jackpotd
            if old.name.isdigit() and not Path(f"/proc/{old.name}").exists():
                shutil.rmtree(old, ignore_errors=True)
        metrics_dir = root / str(os.getpid())
        shutil.rmtree(metrics_dir, ignore_errors=True)
        try:
            metrics_dir.mkdir(parents=True)
        except OSError:  # a read-only state directory: anywhere private will do
            metrics_dir = Path(tempfile.mkdtemp(prefix="jackpotd-metrics-"))
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    try:
        from .app import run_loop

        result: int = run_loop(_run(args, settings))
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return result


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from . import app
    from .domain.money import format_cents
    from .store import ledger, recovery

    if args.command == "serve":
        await app.serve(settings, demo=args.demo)
        return 0
    async with app.open_stores(settings) as stores:
        if args.command == "migrate":
            print("schema is up to date")  # open_stores migrated
            return 0
        if args.command == "recover":
            for a in await recovery.recover(stores.redis, stores.pg):
                print(f"{a.link_id}: {a.action} (Redis seq {a.redis_seq}, ledger seq {a.ledger_seq})")
            return 0
        if args.command == "fenced":
            found = await recovery.fenced_links(stores.redis, stores.pg)
            for fence, entry in found:
                print(f"{fence.link_id}: fenced since {fence.fenced_at:%Y-%m-%d %H:%M:%S %Z} at entry {fence.seq} "
                      f"({entry})\n  why: {fence.reason}")
            if not found:
                print("no link is fenced")
            return 1 if found else 0
        if args.command == "unfence":
            print(await recovery.unfence(stores.redis, stores.pg, args.link, discard=args.discard))
            return 0
        failed = 0
        heads = await ledger.heads(stores.pg)
        for link in sorted(heads):
            report = await ledger.audit_link(stores.pg, link, await stores.redis.balances(link),
                                             await stores.redis.seq(link))
            verdict = "OK" if report.ok else "FAILED"
            pools = ", ".join(f"{k} {format_cents(v // 1_000_000)}" for k, v in sorted(report.ledger_pools.items()))
            print(f"{link}: {verdict} - {report.entries} entries, chain {'intact' if report.chain_ok else 'BROKEN'}, "
                  f"pools {pools}")
            for problem in report.problems:
                print(f"  - {problem}")
            failed += not report.ok
        return 1 if failed else 0


def _pools(link: str, target: str) -> int:
    import grpc

    from .api.gen.jackpot.v1 import display_pb2, display_pb2_grpc
    from .domain.money import format_cents

    with grpc.insecure_channel(target) as channel:
        stub = display_pb2_grpc.DisplayServiceStub(channel)
        try:
            resp: Any = stub.GetPools(display_pb2.GetPoolsRequest(link_id=link), timeout=5)
        except grpc.RpcError as e:
            print(f"{e.code().name}: {e.details()}", file=sys.stderr)
            return 1
    print(f"link {resp.link_id} (sequence {resp.sequence})")
    for p in resp.pools:
        print(f"  {p.pool:8} {format_cents(p.amount_cents):>16}   (resets to {format_cents(p.reset_cents)})")
    if resp.HasField("last_hit"):
        h = resp.last_hit
        print(f"  last hit: {h.hand} at {h.table_id} seat {h.seat}, {format_cents(h.amount_cents)} from {h.pool}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
