"""Issue 22, P3: an online round of 100,000 seats committed and settled through the real service, durable, its hits
priced as the pure domain prices them; a table of more seats is refused. Speed is measured by
bench/bench_big_round.py, never here."""

from __future__ import annotations

import grpc
import orjson
import pytest
from jackpot_table.packed import accepted_of, hand_columns, seats_of, wager_columns

from jackpotd.api.gen.jackpot.v1 import admin_pb2, table_pb2
from jackpotd.domain.link import MAX_SEATS, LinkConfig
from jackpotd.domain.pricing import Hit, price_round
from jackpotd.domain.rounds import SeatHand, evaluate_round

from ..conftest import unique
from .harness import AUDIT, Client, rid

SEATS = 100_000
DEALT = {1: ["As", "Ks", "Qs", "Js", "Ts"], 25_000: ["9c", "9d", "9h", "9s", "2c"],  # royal, four of a kind
         50_000: ["2h", "5h", "8h", "Jh", "Kh"], 99_999: ["4c", "6d", "8s", "Tc", "Qd"],  # flush, nothing
         SEATS: ["3c", "3d", "3h", "7c", "7d"]}  # full house, at the last seat
DEALER = ["2s", "3s", "Jd", "Ac", "Kc"]


async def test_a_round_of_100000_seats_is_committed_and_settled_as_the_domain_prices_it(client: Client) -> None:
    assert MAX_SEATS == SEATS
    link, table = unique("big"), unique("online")
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
    await client.register(table, link, seats=SEATS)
    await client.fund(link, "MAJOR", 2_000_000)
    seats = [s for s in range(1, SEATS + 1) if s != 77_777]  # a gap: the seat lists are runs, not one range
    committed = await client.commit(table, "r1", seats)
    assert [a.seat for a in committed.accepted] == seats
    assert {(a.amount_cents, a.contributed_ucents, a.overflow_ucents) for a in committed.accepted} == {
        (100, 30_000_000, 0)}  # 20% + 7.5% + 2.5% of $1 into the pools, in µ¢
    ledger = await client.ledger_pools(link)  # answered only once the ledger holds it
    assert ledger["wagers"] == -len(seats) * 100_000_000

    config = LinkConfig.from_dict(orjson.loads(await client.pg.fetchval(
        "SELECT config FROM link_configs WHERE link_id = $1 ORDER BY version DESC LIMIT 1", link)))
    hands = [SeatHand(s, tuple(c)) for s, c in DEALT.items()]
    qualifying = [x for x in evaluate_round("caribbean-stud", SEATS, seats, hands, (), DEALER)
                  if x.category in config.paytable("caribbean-stud").entries]
    assert [(x.seat, x.category) for x in qualifying] == [
        (1, "royal_flush"), (25_000, "four_of_a_kind"), (50_000, "flush"), (SEATS, "full_house")]
    balances = {p.removeprefix("pool:"): uc for p, uc in ledger.items() if p.startswith("pool:")}
    expected = price_round(config.paytable("caribbean-stud"), config.pools, balances,
                           [Hit(x.seat, x.category) for x in qualifying], SEATS)

    request_id = rid()
    settled = await client.settle(table, "r1", DEALT, request_id, others="MUCKED")  # every other seat: MUCKED
    assert [(p.seat, p.hand, p.pool, p.amount_cents, p.funded_by_operator_cents, p.pool_before_ucents, p.rule)
            for p in settled.payouts] == [
        (p.seat, p.category, p.pool, p.amount_cents, p.funded_by_operator_cents, p.pool_before_uc, p.rule)
        for p in expected.payouts]
    assert len(settled.seats) == len(seats) and list(settled.unwagered_seats) == []
    by_seat = {s.seat: (s.hand, s.no_hand) for s in settled.seats}
    assert by_seat[99_999] == ("high_card", "") and by_seat[2] == ("", "MUCKED") and 77_777 not in by_seat
    hits = await client.pg.fetch("SELECT seat, amount_cents FROM hits WHERE link_id = $1 ORDER BY seat", link)
    assert [(h["seat"], h["amount_cents"]) for h in hits] == sorted((p.seat, p.amount_cents) for p in expected.payouts)
    # a retry is answered from the stored reply (its seat runs read back), identical; a new request is refused
    assert await client.settle(table, "r1", DEALT, request_id, others="MUCKED") == settled
    with pytest.raises(grpc.aio.AioRpcError) as again:
        await client.settle(table, "r1", DEALT, others="MUCKED")
    assert again.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_a_round_of_100000_seats_in_columns_is_priced_as_the_domain_says_and_a_retry_in_rows_is_the_same(
        client: Client) -> None:
    """The packed form (API.md Columns): answered in kind, a bad column refused naming it and changing nothing, and
    the same request sent again as a message per seat recognised as a retry (the content is the same)."""
    link, table = unique("big"), unique("online")
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
    await client.register(table, link, seats=SEATS)
    await client.fund(link, "MAJOR", 2_000_000)
    seats = [s for s in range(1, SEATS + 1) if s != 77_777]
    before = await client.ledger_pools(link)
    cols = wager_columns([(s, 100) for s in seats])
    del cols.ante_placed[-1]
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await client.table.CommitWagers(table_pb2.CommitWagersRequest(request_id=rid(), table_id=table,
                                                                      round_id="r1", wager_columns=cols))
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"wager_columns.ante_placed='{len(seats) - 1} values'" in (bad.value.details() or "")
    assert await client.ledger_pools(link) == before  # nothing moved, and the round id is still free

    commit = table_pb2.CommitWagersRequest(request_id=rid(), table_id=table, round_id="r1",
                                           wager_columns=wager_columns([(s, 100) for s in seats]))
    committed = await client.table.CommitWagers(commit)
    assert not committed.accepted and accepted_of(committed) == [(s, 100, 30_000_000, 0) for s in seats]
    again = await client.table.CommitWagers(table_pb2.CommitWagersRequest(  # the same request, a message per seat
        request_id=commit.request_id, table_id=table, round_id="r1",
        wagers=[table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True) for s in seats]))
    assert again.sequence == committed.sequence and not again.HasField("accepted_columns")
    assert accepted_of(again) == accepted_of(committed)
    ledger = await client.ledger_pools(link)
    assert ledger["wagers"] == -len(seats) * 100_000_000

    config = LinkConfig.from_dict(orjson.loads(await client.pg.fetchval(
        "SELECT config FROM link_configs WHERE link_id = $1 ORDER BY version DESC LIMIT 1", link)))
    qualifying = [x for x in evaluate_round("caribbean-stud", SEATS, seats, [SeatHand(s, tuple(c))
                                                                               for s, c in DEALT.items()], (), DEALER)
                  if x.category in config.paytable("caribbean-stud").entries]
    balances = {p.removeprefix("pool:"): uc for p, uc in ledger.items() if p.startswith("pool:")}
    expected = price_round(config.paytable("caribbean-stud"), config.pools, balances,
                           [Hit(x.seat, x.category) for x in qualifying], SEATS)
    folded = {s: "FOLDED" for s in seats if s not in DEALT}
    broken = hand_columns({**DEALT, 50_000: ["2h", "5h", "8h", "Jh", "Xh"]}, folded)
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await client.table.SettleRound(table_pb2.SettleRoundRequest(
            request_id=rid(), table_id=table, round_id="r1", dealer_cards=DEALER, hand_columns=broken))
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"hand_columns.cards[{seats.index(50_000)}][4]='Xh'" in (bad.value.details() or "")

    settle = table_pb2.SettleRoundRequest(request_id=rid(), table_id=table, round_id="r1", dealer_cards=DEALER,
                                          hand_columns=hand_columns(DEALT, folded))
    settled = await client.table.SettleRound(settle)
    assert [(p.seat, p.hand, p.pool, p.amount_cents, p.funded_by_operator_cents, p.pool_before_ucents, p.rule)
            for p in settled.payouts] == [
        (p.seat, p.category, p.pool, p.amount_cents, p.funded_by_operator_cents, p.pool_before_uc, p.rule)
        for p in expected.payouts]
    by_seat = {r.seat: (r.hand, r.no_hand) for r in seats_of(settled)}
    assert not settled.seats and len(by_seat) == len(seats) and 77_777 not in by_seat
    assert by_seat[99_999] == ("high_card", "") and by_seat[2] == ("", "FOLDED") and by_seat[1] == ("royal_flush", "")
    rows = [table_pb2.SeatHand(seat=s, cards=DEALT[s]) if s in DEALT else table_pb2.SeatHand(seat=s, no_hand=1)
            for s in seats]  # the same hands, a message per seat, in the columns' order
    again_settled = await client.table.SettleRound(table_pb2.SettleRoundRequest(
        request_id=settle.request_id, table_id=table, round_id="r1", dealer_cards=DEALER, hands=rows))
    assert list(again_settled.payouts) == list(settled.payouts) and seats_of(again_settled) == seats_of(settled)
    hits = await client.pg.fetch("SELECT seat, amount_cents FROM hits WHERE link_id = $1 ORDER BY seat", link)
    assert [(h["seat"], h["amount_cents"]) for h in hits] == sorted((p.seat, p.amount_cents) for p in expected.payouts)


async def test_a_table_of_more_than_100000_seats_is_refused_naming_seats(client: Client) -> None:
    link = unique("big")
    await client.create_link(link)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await client.admin.RegisterTable(admin_pb2.RegisterTableRequest(
            request_id=rid(), table_id=unique("online"), link_id=link, game="caribbean-stud", seats=SEATS + 1,
            audit=AUDIT))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "seats" in (refused.value.details() or "") and str(SEATS + 1) in (refused.value.details() or "")
