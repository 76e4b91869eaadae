"""Issue 19: every wagered seat is accounted for in SettleRound, and hands of seats without a wager are checked
with the deck, named in the reply and never paid."""

from __future__ import annotations

from jackpotd.api.gen.jackpot.v1 import table_pb2

from ..conftest import unique
from .harness import Client, rid

ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]
FLUSH = ["2h", "5h", "9h", "Jh", "Kh"]


async def test_folded_seats_lose_and_an_unwagered_royal_is_named_never_paid(client: Client) -> None:
    link, table = unique("seats"), unique("t")
    await client.create_link(link, resets={"MAJOR": 1_000_000})
    await client.register(table, link)
    await client.fund(link, "MAJOR", 1_000_000)
    await client.commit(table, "r1", [1, 2, 4])
    before = await client.pools(link)
    request = table_pb2.SettleRoundRequest(request_id=rid(), table_id=table, round_id="r1", hands=[
        table_pb2.SeatHand(seat=1, no_hand=table_pb2.FOLDED),
        table_pb2.SeatHand(seat=2, cards=FLUSH),
        table_pb2.SeatHand(seat=3, cards=ROYAL),  # no jackpot wager on seat 3: checked, never paid
        table_pb2.SeatHand(seat=4, no_hand=table_pb2.DEAD)])
    settled = await client.table.SettleRound(request)
    assert [(p.seat, p.hand, p.amount_cents) for p in settled.payouts] == [(2, "flush", 10_000)]
    assert [(s.seat, s.hand, s.no_hand) for s in settled.seats] == [(1, "", "FOLDED"), (2, "flush", ""),
                                                                    (4, "", "DEAD")]
    assert list(settled.unwagered_seats) == [3]
    after = await client.pools(link)
    assert after["MAJOR"].balance_ucents == before["MAJOR"].balance_ucents  # the royal took nothing
    again = await client.table.SettleRound(request)  # a retry gets the very same answer, from the stored reply
    assert again == settled
    row = await client.pg.fetchrow("SELECT reply FROM entries WHERE link_id = $1 AND seq = $2", link, settled.sequence)
    assert row is not None and '"unwagered":[3]' in row["reply"] and '"no_hand":"FOLDED"' in row["reply"]
