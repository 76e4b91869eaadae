"""A table-controller load for tests: rounds on several tables at once, retrying with the same ids."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

import grpc

from jackpotd.api.gen.jackpot.v1 import table_pb2, table_pb2_grpc
from jackpotd.domain.cards import card_name

from .harness import rid

RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
FORCED = [["As", "Ks", "Qs", "Js", "Ts"], ["9h", "8h", "7h", "6h", "5h"], ["2c", "5c", "9c", "Jc", "Kc"],
          ["3d", "3h", "3s", "4c", "4d"]]


@dataclass
class Tally:
    """What the clients were told: request id -> sequence of every acknowledged call."""

    acked: dict[str, int] = field(default_factory=dict)
    wagered_cents: int = 0
    paid_cents: int = 0
    hits: int = 0
    retries: int = 0


async def call(method: Any, request: Any, tally: Tally, patience: float = 60.0) -> Any:
    """Call until answered; on UNAVAILABLE or a deadline, retry the same request id."""
    deadline = asyncio.get_running_loop().time() + patience
    delay = 0.05
    while True:
        try:
            return await method(request, timeout=5)
        except grpc.aio.AioRpcError as e:
            if e.code() not in RETRYABLE or asyncio.get_running_loop().time() > deadline:
                raise
            tally.retries += 1
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)


async def run_table(target: str, table: str, rounds: int, tally: Tally, seed: int, hit_every: int = 5,
                    prefix: str = "r") -> None:
    rng = random.Random(seed)
    async with grpc.aio.insecure_channel(target) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        for n in range(rounds):
            round_id = f"{prefix}{n}"
            commit = table_pb2.CommitWagersRequest(
                request_id=rid(), table_id=table, round_id=round_id,
                wagers=[table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True) for s in range(1, 8)])
            resp = await call(stub.CommitWagers, commit, tally)
            tally.acked[commit.request_id] = resp.sequence
            tally.wagered_cents += 700
            if n % 7 == 6:  # now and then a misdeal
                void = table_pb2.VoidRoundRequest(request_id=rid(), table_id=table, round_id=round_id,
                                                  reason="misdeal")
                resp = await call(stub.VoidRound, void, tally)
                tally.acked[void.request_id] = resp.sequence
                tally.wagered_cents -= 700
                continue
            hands: dict[int, list[str]] = {}
            if n % hit_every == 0:  # forced hits on several tables at once
                for seat, cards in zip((7, 4, 2), rng.sample(FORCED, 3), strict=True):
                    hands[seat] = cards
            used = {c.lower() for cards in hands.values() for c in cards}
            deck = [card_name(c) for c in range(52) if card_name(c).lower() not in used]
            rng.shuffle(deck)
            for seat in range(1, 8):
                if seat not in hands:
                    hands[seat] = [deck.pop() for _ in range(5)]
            settle = table_pb2.SettleRoundRequest(request_id=rid(), table_id=table, round_id=round_id,
                                                  hands=[table_pb2.SeatHand(seat=s, cards=c)
                                                         for s, c in sorted(hands.items())])
            resp = await call(stub.SettleRound, settle, tally)
            tally.acked[settle.request_id] = resp.sequence
            tally.paid_cents += sum(p.amount_cents for p in resp.payouts)
            tally.hits += len(resp.payouts)
