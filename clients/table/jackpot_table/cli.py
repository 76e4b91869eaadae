"""`jackpot-table`: run simulated tables against jackpotd, or load it for a benchmark."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path

import grpc
from tqdm import tqdm

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, table_pb2
from jackpotd.domain.money import format_cents

from .controller import ControllerConfig, TableController
from .deal import LAYOUTS, system_rng
from .simulator import Scenario, TableSettings, Tally, percentile, play

EPILOG = """Tables must be registered on a link first: `jackpotd serve --demo` registers demo-table-1..6 on
link "demo"; --setup LINK registers the simulated tables on LINK (and creates it as a split link if
it does not exist). Each table keeps its outbox in --outbox-dir, so a restarted simulator resumes."""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="jackpot-table", description=__doc__, epilog=EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in (("simulate", "deal real rounds at N tables and show the live pools and every hit"),
                       ("load", "drive the service as hard as N tables can for a benchmark, then summarize")):
        p = sub.add_parser(name, help=text, description=text + ".", epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--target", default="127.0.0.1:50051", help="jackpotd address (default 127.0.0.1:50051)")
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
            p.add_argument("--scenario", help="JSON file of forced hands: "
                                              '{"tables": {"demo-table-1": {"0": {"3": ["As","Ks","Qs","Js","Ts"]}}}}')
        else:
            p.add_argument("--seconds", type=float, default=30, help="how long to run (default 30)")
    return top


async def setup(target: str, link: str, tables: list[str], game: str, seats: int, wager_cents: int) -> None:
    audit = admin_pb2.Audit(actor="jackpot-table", reason="simulator set-up", approval_ref="SIMULATOR")
    async with grpc.aio.insecure_channel(target) as channel:
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
    print(f"HIT  {table_id} seat {p.seat}: {p.hand.replace('_', ' ')} wins {format_cents(p.amount_cents)} "
          f"from {p.pool}{funded}", flush=True)


async def run(args: argparse.Namespace) -> int:
    tables = [f"{args.table_prefix}{i}" for i in range(1, args.tables + 1)]
    if args.setup:
        await setup(args.target, args.setup, tables, args.game, args.seats, args.wager_cents)
    settings = TableSettings(args.game, args.seats, args.wager_cents, args.share,
                             getattr(args, "misdeal_rate", 0.0), getattr(args, "absent_rate", 0.0))
    scenario = Scenario.load(args.scenario) if getattr(args, "scenario", None) else None
    controllers = [await TableController(ControllerConfig(args.target, t, str(Path(args.outbox_dir) / f"{t}.db"))
                                         ).start() for t in tables]
    tally = Tally()
    stop = asyncio.Event()
    try:
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
          f"hits {sum(tally.hits.values()):,} ({format_cents(tally.paid_cents)}), "
          f"skipped while the service was silent {tally.skipped}")
    print(f"latency p50 {percentile(tally.latencies, .5) * 1000:.1f} ms, "
          f"p99 {percentile(tally.latencies, .99) * 1000:.1f} ms over {len(tally.latencies):,} calls")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return asyncio.run(run(args))
    except KeyboardInterrupt:
        return 130
    except grpc.aio.AioRpcError as e:
        print(f"{e.code().name}: {e.details()}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())



