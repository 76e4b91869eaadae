"""`jackpot-table round`: one round at one table with the cards you name, for trying a hit on the floor (a royal
flush for the sign, a PENDING hit for a supervisor) without hand-built gRPC calls."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import grpc

from jackpotd.api.gen.jackpot.v1 import table_pb2
from jackpotd.domain.ids import visible
from jackpotd.domain.money import format_cents
from jackpotd.domain.verification import HitStatus
from jackpotd.target import add_target_flag, failure_line

from .controller import ControllerConfig, JackpotDisabled, TableController
from .failures import PROG, not_playing
from .packed import accepted_of

# A round is one person waiting at a terminal: calls the service does not answer are retried for this long (not the
# library's 120 s), so that a failure is told within 15 s; the outbox keeps the round for a rerun with --round-id.
ROUND_RETRY_FOR = 8.0

EXAMPLES = """examples:
  jackpot-table round --table demo-table-1 --hand 1=As,Ks,Qs,Js,Ts          # a royal flush at seat 1
  jackpot-table round --table demo-table-2 --hand 3=9h,8h,7h,6h,5h --hand 4=2c,7d,9s,Jh,Kd

Each seat named by --hand takes the jackpot wager (--wager-cents, the link's wager) and is settled with those
cards. The round id is new each time (--round-id to choose it); a repeated command with the same round id is
answered from the table's outbox as the first time, never applied twice."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], epilog: str) -> argparse.ArgumentParser:
    """The `round` command's flags (credentials are added by the caller, as for the other commands)."""
    text = "play one round at one table with the cards you name, and show what it won"
    p = sub.add_parser("round", help=text, description=text + ".", epilog=EXAMPLES + "\n\n" + epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_flag(p)
    p.add_argument("--table", required=True, help="the table id, e.g. demo-table-1")
    p.add_argument("--hand", action="append", required=True, type=_seat_hand, metavar="SEAT=CARDS",
                   help="a seat and its five cards, e.g. 1=As,Ks,Qs,Js,Ts (repeat for more seats)")
    p.add_argument("--wager-cents", type=int, default=100, help="the link's jackpot wager (default 100)")
    p.add_argument("--round-id", default="", help="the round id (default: round-<time>)")
    p.add_argument("--outbox-dir", default="state/outbox", help="where the table keeps its outbox")
    p.set_defaults(setup=None)
    return p


def _seat_hand(text: str) -> tuple[int, list[str]]:
    seat, sep, cards = text.partition("=")
    if not sep or not seat.strip().isdigit():
        raise argparse.ArgumentTypeError(f"--hand {text!r}: give SEAT=CARDS, e.g. 1=As,Ks,Qs,Js,Ts")
    return int(seat), [c.strip() for c in cards.split(",") if c.strip()]


async def play_round(args: argparse.Namespace, config: ControllerConfig) -> int:
    """Commit the named seats' wagers, settle them with their cards, and print the hits; 0 when answered, 1 with
    one line on standard error when the table takes no jackpot wagers or a call fails."""
    round_id = args.round_id or f"round-{int(time.time() * 1000)}"
    hands = dict(args.hand)
    controller = await TableController(config).start()
    try:
        if not controller.jackpot_enabled:
            raise JackpotDisabled(config.table_id)
        committed = await controller.commit(round_id, [(seat, args.wager_cents) for seat in sorted(hands)])
        print(f"{args.table} round {round_id}: {len(accepted_of(committed))} wager(s) accepted")
        settled = await controller.settle(round_id, hands)
    except JackpotDisabled as e:
        print(not_playing(config.target, [controller]) or f"{PROG}: {e}", file=sys.stderr)
        return 1
    except grpc.aio.AioRpcError as e:
        print(f"{failure_line(PROG, config.target, e.code().name, e.details())} (round {round_id})", file=sys.stderr)
        return 1
    finally:
        await controller.close()
    for p in settled.payouts:
        print(_hit_line(args.table, p))
    if not settled.payouts:
        print("no hit")
    print(visible("pools now: " + "  ".join(f"{p.pool} {format_cents(p.amount_cents)}" for p in settled.pools)))
    return 0


def _hit_line(table_id: str, p: table_pb2.Payout) -> str:
    pending = ("  PENDING: a supervisor verifies it (jackpot-floor hits; jackpot-floor approve HIT_ID)"
               if p.status == HitStatus.PENDING else "")
    return visible(f"HIT  seat {p.seat}: {p.hand.replace('_', ' ')} wins {format_cents(p.amount_cents)} from "
                   f"{p.pool}  hit_id {p.hit_id}{pending}")


def round_config(args: argparse.Namespace) -> ControllerConfig:
    """The table's controller for one round: its outbox in --outbox-dir, retries cut to ROUND_RETRY_FOR."""
    return ControllerConfig(args.target, args.table, str(Path(args.outbox_dir) / f"{args.table}.db"),
                            retry_for=ROUND_RETRY_FOR)
