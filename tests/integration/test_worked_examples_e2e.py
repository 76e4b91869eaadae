"""RULES.md §5 worked examples end to end: commit, settle, read the pools back, check the ledger rows."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from jackpotd.api.gen.jackpot.v1 import table_pb2

from ..conftest import unique
from .harness import Client

UC = 1_000_000
ROYAL_S = ["As", "Ks", "Qs", "Js", "Ts"]
ROYAL_H = ["Ah", "Kh", "Qh", "Jh", "Th"]
ROYAL_D = ["Ad", "Kd", "Qd", "Jd", "Td"]
SF_H = ["9h", "8h", "7h", "6h", "5h"]
SF_D = ["9d", "8d", "7d", "6d", "5d"]
FLUSH_C = ["2c", "5c", "9c", "Jc", "Kc"]
FULL_HOUSE = ["3d", "3h", "3s", "4c", "4d"]
QUADS = ["7c", "7d", "7h", "7s", "2d"]


async def setup(client: Client, mode: str, resets: dict[str, int], funds: dict[str, int]) -> tuple[str, str]:
    """A link whose wagers are all retained, so the pools hold exactly what the example says."""
    link, table = unique("ex"), unique("tbl")
    rates = {"MAJOR": 0, "MINOR": 0, "RESERVE": 0} if mode == "SPLIT" else {"JACKPOT": 0, "RESERVE": 0}
    await client.create_link(link, mode, rates=rates, retained=1_000_000, resets=resets)
    await client.register(table, link)
    for pool, cents in funds.items():
        await client.fund(link, pool, cents)
    return link, table


async def play(client: Client, table: str, hands: dict[int, Sequence[str]]) -> table_pb2.SettleRoundResponse:
    await client.commit(table, "round-1", sorted(hands))
    return await client.settle(table, "round-1", hands)


async def ledger_entry(client: Client, link: str, seq: int) -> dict[str, int]:
    rows = await client.pg.fetch("SELECT account, amount_uc FROM postings WHERE link_id = $1 AND seq = $2", link, seq)
    assert sum(int(r["amount_uc"]) for r in rows) == 0  # double entry
    out: dict[str, int] = {}
    for r in rows:
        out[r["account"]] = out.get(r["account"], 0) + int(r["amount_uc"])
    return out


async def test_example_1_contribution(client: Client) -> None:
    link, table = unique("ex1"), unique("tbl")
    await client.create_link(link, "SPLIT", rates={"MAJOR": 200_000, "MINOR": 75_000, "RESERVE": 25_000},
                             retained=700_000)
    await client.register(table, link)
    first = await client.commit(table, "r1", [1])
    pools = {p.pool: p for p in first.pools}
    assert (pools["MAJOR"].amount_cents, pools["MINOR"].amount_cents, pools["MINOR"].balance_ucents) == (
        20, 7, 7_500_000)
    entry = await ledger_entry(client, link, first.sequence)
    assert entry == {"wagers": -100 * UC, "pool:MAJOR": 20 * UC, "pool:MINOR": 7_500_000,
                     "pool:RESERVE": 2_500_000, "retained": 70 * UC}
    second = await client.commit(table, "r2", [1])
    assert {p.pool: p.amount_cents for p in second.pools}["MINOR"] == 15
    assert (await client.ledger_pools(link))["pool:MINOR"] == 15 * UC


async def test_example_2_one_straight_flush(client: Client) -> None:
    link, table = await setup(client, "COMBINED", {"JACKPOT": 1_000_000}, {"JACKPOT": 2_345_678})
    resp = await play(client, table, {4: SF_H})
    assert [(p.seat, p.hand, p.amount_cents) for p in resp.payouts] == [(4, "straight_flush", 234_567)]
    assert (await client.pools(link))["JACKPOT"].amount_cents == 2_111_111
    entry = await ledger_entry(client, link, resp.sequence)
    assert entry == {"pool:JACKPOT": -234_567 * UC, "payouts": 234_567 * UC}


async def test_example_3_two_straight_flushes_and_a_royal(client: Client) -> None:
    link, table = await setup(client, "SPLIT", {"MAJOR": 1_000_000}, {"MAJOR": 5_000_000, "RESERVE": 300_000})
    resp = await play(client, table, {6: SF_H, 2: SF_D, 4: ROYAL_S})
    assert [(p.seat, p.hand, p.amount_cents) for p in resp.payouts] == [
        (6, "straight_flush", 475_000), (2, "straight_flush", 475_000), (4, "royal_flush", 4_050_000)]
    assert [(r.pool, r.from_reserve_cents, r.from_operator_cents) for r in resp.resets] == [
        ("MAJOR", 300_000, 700_000)]
    pools = await client.pools(link)
    assert pools["MAJOR"].amount_cents == 1_000_000
    entry = await ledger_entry(client, link, resp.sequence)
    assert entry["payouts"] == 4_050_000 * UC + 2 * 475_000 * UC
    assert entry["operator_funding"] == -700_000 * UC
    assert entry["pool:RESERVE"] == -300_000 * UC
    assert (await client.ledger_pools(link))["pool:RESERVE"] == 0


async def test_example_4_royal_below_its_minimum(client: Client) -> None:
    link, table = await setup(client, "SPLIT", {"MAJOR": 1_000_000}, {"MAJOR": 820_000})
    resp = await play(client, table, {1: ROYAL_S})
    (payout,) = resp.payouts
    assert (payout.amount_cents, payout.funded_by_operator_cents) == (1_000_000, 180_000)
    assert [(r.from_reserve_cents, r.from_operator_cents) for r in resp.resets] == [(0, 1_000_000)]
    entry = await ledger_entry(client, link, resp.sequence)
    assert entry["operator_funding"] == -1_180_000 * UC
    assert (await client.pools(link))["MAJOR"].amount_cents == 1_000_000


async def test_example_5_three_royals(client: Client) -> None:
    link, table = await setup(client, "SPLIT", {"MAJOR": 1_000_000}, {"MAJOR": 10_000_000, "RESERVE": 5_000_000})
    resp = await play(client, table, {1: ROYAL_S, 3: ROYAL_H, 7: ROYAL_D})
    assert [(p.seat, p.amount_cents) for p in resp.payouts] == [
        (7, 3_333_333), (3, 3_333_333), (1, 3_333_333)]
    assert [(r.from_reserve_cents, r.from_operator_cents) for r in resp.resets] == [(999_999, 0)]
    ledger = await client.ledger_pools(link)
    assert ledger["pool:RESERVE"] == 4_000_001 * UC
    assert ledger["pool:MAJOR"] == 1_000_000 * UC
    assert "operator_funding" not in await ledger_entry(client, link, resp.sequence)


async def test_example_6_mixed_round_one_pool(client: Client) -> None:
    link, table = await setup(client, "COMBINED", {"JACKPOT": 1_000_000}, {"JACKPOT": 6_000_000})
    resp = await play(client, table, {7: FLUSH_C, 5: ROYAL_S, 3: SF_H, 2: FULL_HOUSE})
    assert [(p.seat, p.hand, p.amount_cents) for p in resp.payouts] == [
        (7, "flush", 10_000), (3, "straight_flush", 599_000), (2, "full_house", 15_000),
        (5, "royal_flush", 5_376_000)]
    assert [p.pool_before_ucents // UC for p in resp.payouts] == [
        6_000_000, 5_990_000, 5_391_000, 5_376_000]
    assert [(r.from_reserve_cents, r.from_operator_cents) for r in resp.resets] == [(0, 1_000_000)]
    assert (await client.pools(link))["JACKPOT"].amount_cents == 1_000_000


async def test_example_7_two_straight_flushes_on_a_small_pool(client: Client) -> None:
    link, table = await setup(client, "COMBINED", {"JACKPOT": 200_000}, {"JACKPOT": 500_000})
    resp = await play(client, table, {5: SF_H, 2: SF_D})
    assert [(p.seat, p.amount_cents, p.funded_by_operator_cents) for p in resp.payouts] == [
        (5, 100_000, 0), (2, 100_000, 0)]
    assert (await client.pools(link))["JACKPOT"].amount_cents == 300_000


async def test_example_8_minor_pool_short(client: Client) -> None:
    link, table = await setup(client, "SPLIT", {"MAJOR": 1_000_000, "MINOR": 100_000},
                              {"MAJOR": 2_000_000, "MINOR": 12_000})
    resp = await play(client, table, {6: FLUSH_C, 3: QUADS})
    assert [(p.seat, p.amount_cents, p.funded_by_operator_cents) for p in resp.payouts] == [
        (6, 10_000, 0), (3, 50_000, 48_000)]
    entry = await ledger_entry(client, link, resp.sequence)
    assert entry["operator_funding"] == -148_000 * UC
    assert "pool:MAJOR" not in entry
    pools = await client.pools(link)
    assert (pools["MAJOR"].amount_cents, pools["MINOR"].amount_cents) == (2_000_000, 100_000)


@pytest.mark.parametrize("game,hands,board,expected", [
    ("three-card", {1: ["Ah", "2h", "3h"]}, [], "straight_flush"),
    ("four-card", {2: ["9c", "9d", "9h", "9s", "Kh"]}, [], "four_of_a_kind"),
    ("holdem-bonus", {3: ["As", "Ks"]}, ["Qs", "Js", "Ts", "2c", "3d"], "royal_flush"),
])
async def test_other_games_on_the_same_link(client: Client, game: str, hands: dict[int, list[str]],
                                            board: list[str], expected: str) -> None:
    link, _ = await setup(client, "SPLIT", {"MAJOR": 1_000_000, "MINOR": 100_000},
                          {"MAJOR": 2_000_000, "MINOR": 200_000})
    table = unique(game)
    await client.register(table, link, game=game)
    await client.commit(table, "r", sorted(hands))
    resp = await client.settle(table, "r", hands, board=board)
    assert [s.hand for s in resp.seats] == [expected]
    assert [p.hand for p in resp.payouts] == [expected]
