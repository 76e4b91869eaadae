"""CombinePools and SplitPools (RULES.md §3, §4, §9; NZ 11.6A/B): MAJOR and MINOR become one JACKPOT holding
both balances to the µ¢, and JACKPOT becomes MAJOR and MINOR by an allocation that adds up to its balance
exactly; only between rounds, with an approval reference, by an administrator; the new rates and the mode's
paytable price what comes after the act and nothing before it; refusals change nothing; a rebuilt Redis
shows the restructured pools."""

from __future__ import annotations

import time
from typing import Any

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc
from jackpotd.auth.identity import Role
from jackpotd.store import keys

from ..conftest import unique
from .conftest import Private
from .harness import ADMIN, Client, eventually, rid, token, while_unavailable
from .test_hit_approval import ROYAL, UC, approve, assert_books, balances, postings_at, refused, snapshot

S = grpc.StatusCode
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]
APPROVED = admin_pb2.Audit(actor="x", reason="regulator approved the restructure", approval_ref="NZ-CCA-11.6-42")


def rates(pools: dict[str, int], retained: int, at_ms: int = 0) -> admin_pb2.Rates:
    return admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool=p, ppm=v) for p, v in pools.items()],
                           retained_ppm=retained, effective_at_ms=at_ms)


JACKPOT_RATES = {"JACKPOT": 300_000, "RESERVE": 50_000}  # retained 650,000: each differs from the split rates
SPLIT_RATES = {"MAJOR": 200_000, "MINOR": 75_000, "RESERVE": 25_000}  # retained 700,000


def combine(link: str, *, at_ms: int = 0, audit: admin_pb2.Audit = APPROVED,
            request_id: str | None = None, reset: int = 1_000_000) -> admin_pb2.CombinePoolsRequest:
    return admin_pb2.CombinePoolsRequest(request_id=request_id or rid(), link_id=link,
                                         jackpot=admin_pb2.PoolConfig(pool="JACKPOT", reset_cents=reset),
                                         rates=rates(JACKPOT_RATES, 650_000, at_ms), audit=audit)


def split(link: str, allocation: list[tuple[str, int]], *, at_ms: int = 0, audit: admin_pb2.Audit = APPROVED,
          request_id: str | None = None) -> admin_pb2.SplitPoolsRequest:
    return admin_pb2.SplitPoolsRequest(
        request_id=request_id or rid(), link_id=link,
        pools=[admin_pb2.PoolConfig(pool="MAJOR", reset_cents=1_000_000),
               admin_pb2.PoolConfig(pool="MINOR", reset_cents=100_000)],
        allocation=[admin_pb2.PoolAllocation(pool=p, amount_ucents=uc) for p, uc in allocation],
        rates=rates(SPLIT_RATES, 700_000, at_ms), audit=audit)


async def split_link(c: Client) -> tuple[str, str]:
    """A SPLIT link with money in every pool, MINOR and RESERVE to a fraction of a cent, between rounds."""
    link, table = unique("restructure"), unique("t")
    await c.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000}, games=("caribbean-stud", "three-card"))
    await c.register(table, link)
    for pool, cents in (("MAJOR", 1_234_567), ("MINOR", 98_765), ("RESERVE", 5_000)):
        await c.fund(link, pool, cents)
    await c.commit(table, "r0", [1, 2, 3])  # MINOR + 22.5¢, RESERVE + 7.5¢
    await c.settle(table, "r0", {})
    return link, table


async def combined_link(c: Client) -> tuple[str, str]:
    link, table = unique("restructure"), unique("t")
    await c.create_link(link, "COMBINED", resets={"JACKPOT": 1_000_000})
    await c.register(table, link)
    await c.fund(link, "JACKPOT", 1_500_000)
    await c.commit(table, "r0", [1])  # JACKPOT + 27.5¢
    await c.settle(table, "r0", {})
    return link, table


async def shown(c: Client, link: str) -> dict[str, int]:
    """The visible pools GetPools shows, exact µ¢."""
    return {k: v.balance_ucents for k, v in (await c.pools(link)).items() if k != "_seq"}


async def test_combining_moves_major_and_minor_into_jackpot_to_the_microcent(client: Client) -> None:
    link, table = await split_link(client)
    before = await balances(client, link)
    major, minor = before["MAJOR"], before["MINOR"]
    assert minor % UC != 0  # a fraction of a cent that must move too
    answer = await client.admin.CombinePools(combine(link))
    assert (answer.link_id, answer.mode) == (link, "COMBINED")
    assert {p.pool: p.balance_ucents for p in answer.pools} == {"JACKPOT": major + minor, "RESERVE": before["RESERVE"]}
    assert await shown(client, link) == {"JACKPOT": major + minor}
    after = await balances(client, link)
    assert (after["JACKPOT"], after["RESERVE"], after.get("MAJOR", 0), after.get("MINOR", 0)) == (
        major + minor, before["RESERVE"], 0, 0)
    assert await postings_at(client, link, answer.sequence) == {"pool:MAJOR": -major, "pool:MINOR": -minor,
                                                                "pool:JACKPOT": major + minor}
    entry = await client.entry(link, answer.sequence)
    assert entry["kind"] == "combine_pools" and entry["config"]["mode"] == "COMBINED"
    assert entry["audit"] == {"actor": f"admin:{ADMIN}", "reason": APPROVED.reason,
                              "approval_ref": APPROVED.approval_ref}
    # the combined profile (§4), for every game of the link: a flush, and three of a kind at three card
    # poker, are paid from JACKPOT
    three = unique("t3")
    await client.register(three, link, game="three-card")
    await client.commit(table, "r1", [1])
    paid = await client.settle(table, "r1", {1: FLUSH})
    assert [(p.hand, p.pool, p.amount_cents) for p in paid.payouts] == [("flush", "JACKPOT", 10_000)]
    await client.commit(three, "r1", [2])
    paid = await client.settle(three, "r1", {2: ["7c", "7d", "7h"]})
    assert [(p.hand, p.pool, p.amount_cents) for p in paid.payouts] == [("three_of_a_kind", "JACKPOT", 10_000)]
    assert (await balances(client, link))["JACKPOT"] == major + minor + 2 * 30 * UC - 20_000 * UC
    await assert_books(client, link)


async def test_a_commit_before_the_combine_is_priced_by_the_old_rates_and_one_after_by_the_new(
        client: Client) -> None:
    link, table = await split_link(client)
    old = await client.commit(table, "r1", [1])
    await client.settle(table, "r1", {})
    await client.admin.CombinePools(combine(link))
    new = await client.commit(table, "r2", [1])
    assert await postings_at(client, link, old.sequence) == {
        "wagers": -100 * UC, "pool:MAJOR": 20 * UC, "pool:MINOR": 7_500_000, "pool:RESERVE": 2_500_000,
        "retained": 70 * UC}
    assert await postings_at(client, link, new.sequence) == {
        "wagers": -100 * UC, "pool:JACKPOT": 30 * UC, "pool:RESERVE": 5 * UC, "retained": 65 * UC}
    await client.settle(table, "r2", {})
    await assert_books(client, link)


async def test_splitting_allocates_jackpot_exactly_as_asked(client: Client) -> None:
    link, table = await combined_link(client)
    before = await balances(client, link)
    held = before["JACKPOT"]
    assert held % UC != 0
    minor = 100_000 * UC + 123  # any split to the µ¢
    answer = await client.admin.SplitPools(split(link, [("MAJOR", held - minor), ("MINOR", minor)]))
    assert answer.mode == "SPLIT"
    assert {p.pool: p.balance_ucents for p in answer.pools} == {"MAJOR": held - minor, "MINOR": minor,
                                                                "RESERVE": before["RESERVE"]}
    assert await shown(client, link) == {"MAJOR": held - minor, "MINOR": minor}
    assert (await balances(client, link)).get("JACKPOT", 0) == 0
    assert await postings_at(client, link, answer.sequence) == {"pool:JACKPOT": -held, "pool:MAJOR": held - minor,
                                                                "pool:MINOR": minor}
    assert (await client.entry(link, answer.sequence))["kind"] == "split_pools"
    await client.commit(table, "r1", [1, 2])  # the split profile: a flush from MINOR, a royal takes MAJOR
    paid = await client.settle(table, "r1", {1: FLUSH, 2: ROYAL})
    assert [(p.hand, p.pool) for p in paid.payouts] == [("flush", "MINOR"), ("royal_flush", "MAJOR")]
    await assert_books(client, link)


@pytest.mark.parametrize("case", ["short", "over", "one pool", "negative", "twice", "JACKPOT"])
async def test_an_allocation_that_is_not_jackpots_balance_changes_nothing(client: Client, case: str) -> None:
    link, _ = await combined_link(client)
    held = (await balances(client, link))["JACKPOT"]
    allocation = {"short": [("MAJOR", held - 1), ("MINOR", 0)], "over": [("MAJOR", held), ("MINOR", 1)],
                  "one pool": [("MAJOR", held)], "negative": [("MAJOR", held + 1), ("MINOR", -1)],
                  "twice": [("MAJOR", held), ("MAJOR", 0)], "JACKPOT": [("MAJOR", held), ("JACKPOT", 0)]}[case]
    before = await snapshot(client, link)
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.admin.SplitPools(split(link, allocation))
    assert e.value.code() in (S.FAILED_PRECONDITION, S.INVALID_ARGUMENT), e.value.details()
    assert (e.value.details() or "").startswith("allocation"), e.value.details()
    assert await snapshot(client, link) == before
    assert list(await shown(client, link)) == ["JACKPOT"]


async def test_combine_then_split_keeps_every_microcent(client: Client) -> None:
    link, _ = await split_link(client)
    before = await balances(client, link)
    await client.admin.CombinePools(combine(link))
    assert sum((await balances(client, link)).values()) == sum(before.values())
    await client.admin.SplitPools(split(link, [("MAJOR", before["MAJOR"]), ("MINOR", before["MINOR"])]))
    after = await balances(client, link)
    assert {k: v for k, v in after.items() if v} == {k: v for k, v in before.items() if v}
    total = await client.pg.fetchval("SELECT sum(amount_uc) FROM postings WHERE link_id = $1", link)
    assert total == 0  # every µ¢ that left a pool arrived in another, or in a counter-account
    await assert_books(client, link)


@pytest.mark.parametrize("hours", [1, -1])
async def test_rates_take_effect_with_the_act_not_later_or_earlier(client: Client, hours: int) -> None:
    link, _ = await split_link(client)
    before = await snapshot(client, link)
    at = int(time.time() * 1000) + hours * 3_600_000
    details = await refused(client.admin.CombinePools(combine(link, at_ms=at)), S.INVALID_ARGUMENT)
    assert details.startswith("rates.effective_at_ms"), details
    assert await snapshot(client, link) == before
    combined, _ = await combined_link(client)
    held = (await balances(client, combined))["JACKPOT"]
    details = await refused(client.admin.SplitPools(split(combined, [("MAJOR", held), ("MINOR", 0)], at_ms=at)),
                            S.INVALID_ARGUMENT)
    assert details.startswith("rates.effective_at_ms"), details


async def test_an_open_round_blocks_a_combine_until_it_is_settled(client: Client) -> None:
    link, table = await split_link(client)
    await client.commit(table, "r1", [1])
    before = await snapshot(client, link)
    details = await refused(client.admin.CombinePools(combine(link)), S.FAILED_PRECONDITION)
    assert "open" in details, details
    assert await snapshot(client, link) == before and "MAJOR" in await shown(client, link)
    await client.settle(table, "r1", {})
    assert (await client.admin.CombinePools(combine(link))).mode == "COMBINED"


async def test_a_round_holding_a_pending_hit_is_open(client: Client) -> None:
    link, table = unique("restructure"), unique("t")
    await client.create_link(link, "COMBINED", resets={"JACKPOT": 1_000_000}, threshold=500_000)
    await client.register(table, link)
    await client.fund(link, "JACKPOT", 2_000_000)
    await client.commit(table, "r1", [1])
    royal = (await client.settle(table, "r1", {1: ROYAL})).payouts[0]
    assert royal.status == "PENDING"
    held = (await balances(client, link))["JACKPOT"]
    request = split(link, [("MAJOR", held), ("MINOR", 0)])
    before = await snapshot(client, link)
    details = await refused(client.admin.SplitPools(request), S.FAILED_PRECONDITION)
    assert "open" in details, details
    assert await snapshot(client, link) == before
    await client.admin.ApproveHit(approve(royal.hit_id))
    assert (await client.admin.SplitPools(split(link, [("MAJOR", held), ("MINOR", 0)]))).mode == "SPLIT"
    await assert_books(client, link)


async def test_a_restructure_needs_an_approval_reference(client: Client) -> None:
    link, _ = await split_link(client)
    no_ref = admin_pb2.Audit(actor="x", reason="combine for the promotion")
    before = await snapshot(client, link)
    details = await refused(client.admin.CombinePools(combine(link, audit=no_ref)), S.INVALID_ARGUMENT)
    assert details.startswith("audit.approval_ref"), details
    assert await snapshot(client, link) == before
    combined, _ = await combined_link(client)
    held = (await balances(client, combined))["JACKPOT"]
    details = await refused(client.admin.SplitPools(split(combined, [("MAJOR", held), ("MINOR", 0)], audit=no_ref)),
                            S.INVALID_ARGUMENT)
    assert details.startswith("audit.approval_ref"), details


async def test_each_act_needs_the_other_mode(client: Client) -> None:
    combined, _ = await combined_link(client)
    before = await snapshot(client, combined)
    assert (await refused(client.admin.CombinePools(combine(combined)), S.FAILED_PRECONDITION)).startswith("mode")
    assert await snapshot(client, combined) == before
    link, _ = await split_link(client)
    before = await snapshot(client, link)
    details = await refused(client.admin.SplitPools(split(link, [("MAJOR", 0), ("MINOR", 0)])),
                            S.FAILED_PRECONDITION)
    assert details.startswith("mode"), details
    assert await snapshot(client, link) == before


async def test_a_retry_is_answered_alike_and_moves_nothing_twice(client: Client) -> None:
    link, _ = await split_link(client)
    request = combine(link)
    first = await client.admin.CombinePools(request)
    moved = await snapshot(client, link)
    again = await client.admin.CombinePools(request)
    assert (again.sequence, again.mode) == (first.sequence, "COMBINED")
    assert [(p.pool, p.balance_ucents) for p in again.pools] == [(p.pool, p.balance_ucents) for p in first.pools]
    assert await snapshot(client, link) == moved
    await refused(client.admin.CombinePools(combine(link, request_id=request.request_id, reset=2_000_000)),
                  S.ALREADY_EXISTS)
    assert await snapshot(client, link) == moved


async def restructure_as(target: str, role: Role, request: Any) -> S:
    method = "CombinePools" if isinstance(request, admin_pb2.CombinePoolsRequest) else "SplitPools"
    async with grpc.aio.insecure_channel(target) as channel:
        try:
            await getattr(admin_pb2_grpc.AdminServiceStub(channel), method)(
                request, metadata=(("authorization", f"Bearer {token(role, unique('who'))}"),), timeout=10)
        except grpc.aio.AioRpcError as e:
            return e.code()
    return S.OK


@pytest.mark.parametrize("role", [Role.SUPERVISOR, Role.FINANCE, Role.DISPLAY, Role.TABLE])
async def test_only_an_administrator_restructures(client: Client, target: str, role: Role) -> None:
    link, _ = await split_link(client)
    combined, _ = await combined_link(client)
    held = (await balances(client, combined))["JACKPOT"]
    before = (await snapshot(client, link), await snapshot(client, combined))
    assert await restructure_as(target, role, combine(link)) == S.PERMISSION_DENIED
    assert await restructure_as(target, role, split(combined, [("MAJOR", held), ("MINOR", 0)])) == S.PERMISSION_DENIED
    assert (await snapshot(client, link), await snapshot(client, combined)) == before
    assert await restructure_as(target, Role.ADMIN, combine(link)) == S.OK
    rows = (await client.admin.ListAudit(admin_pb2.ListAuditRequest(link_id=link, method="CombinePools"))).rows
    assert [(r.role, r.outcome) for r in rows] == [("admin", "OK"), (role.value, "PERMISSION_DENIED")]


async def test_a_combined_link_is_rebuilt_combined_after_redis_forgot_it(private: Private) -> None:
    c = private.client
    link, table = await split_link(c)
    answer = await c.admin.CombinePools(combine(link))
    before = await balances(c, link)
    await c.redis.flushall()
    await eventually(lambda: _jackpot_shown(c, link), 15, "the link rebuilt with its JACKPOT")
    assert await shown(c, link) == {"JACKPOT": before["JACKPOT"]}
    assert await balances(c, link) == before
    new: Any = await while_unavailable(lambda: c.commit(table, "r1", [1]), 15, "a commit once rebuilt")
    assert new.sequence > answer.sequence
    assert await postings_at(c, link, new.sequence) == {
        "wagers": -100 * UC, "pool:JACKPOT": 30 * UC, "pool:RESERVE": 5 * UC, "retained": 65 * UC}
    await c.settle(table, "r1", {})
    await assert_books(c, link)


async def _jackpot_shown(c: Client, link: str) -> bool:
    return "JACKPOT" in await c.pools(link)


async def test_a_link_whose_open_round_count_redis_lost_is_rebuilt_before_a_restructure(private: Private) -> None:
    """Without its count of open rounds Redis cannot tell whether the link is between rounds: the restructure
    is refused as UNAVAILABLE (not allowed), the writer's probe rebuilds the link from the ledger, and a round
    still open there keeps the restructure refused."""
    c = private.client
    link, table = await split_link(c)
    await c.commit(table, "open", [1])
    await c.redis.delete(keys.open_rounds(link))
    code = await refused_or_ok(c.admin.CombinePools(combine(link)))
    assert code in (S.UNAVAILABLE, S.FAILED_PRECONDITION)  # lost, or already rebuilt and counting the round
    await eventually(lambda: c.redis.get(keys.open_rounds(link)), 10, "the count rebuilt from the ledger")
    assert await c.redis.get(keys.open_rounds(link)) == "1"
    details = await refused(c.admin.CombinePools(combine(link)), S.FAILED_PRECONDITION)
    assert "open" in details
    await c.settle(table, "open", {})
    await c.admin.CombinePools(combine(link))
    await assert_books(c, link)


async def refused_or_ok(call: Any) -> S:
    try:
        await call
    except grpc.aio.AioRpcError as e:
        return e.code()
    return S.OK
