"""ApproveHit and RejectHit (RULES.md §7, §10): a hit above the verification threshold waits PENDING in
pending_payouts with its pool already reduced; a supervisor approves it (paid) or rejects it (its pool's part
back to the pool, the operator's shortfall back to the operator, the reset left standing). Refusals change
nothing; retries are idempotent; two decisions race and one wins; a lost Redis forgets no pending hit; the
books balance after every decision, and every call is on the audit trail with its authenticated actor."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, table_pb2
from jackpotd.auth.identity import Role
from jackpotd.store import keys
from jackpotd.store.ledger import audit_link

from ..conftest import unique
from .conftest import Private
from .harness import AUDIT, Client, eventually, rid, token, while_unavailable

S = grpc.StatusCode
UC = 1_000_000
ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]
THRESHOLD = 500_000  # $5,000: a royal waits, a $100 flush is paid at once
RESET = 1_000_000  # MAJOR's reset value, $10,000


async def pending_royal(c: Client, major_cents: int = 2_000_000) -> tuple[str, str, table_pb2.Payout]:
    """A split link whose round r1 paid a flush at once (seat 2) and holds a royal PENDING (seat 1)."""
    link, table = unique("hold"), unique("t")
    await c.create_link(link, resets={"MAJOR": RESET}, threshold=THRESHOLD)
    await c.register(table, link)
    await c.fund(link, "MAJOR", major_cents)
    await c.commit(table, "r1", [1, 2])
    settled = await c.settle(table, "r1", {1: ROYAL, 2: FLUSH})
    assert [(p.seat, p.hand, p.status) for p in settled.payouts] == [(2, "flush", "PAID"),
                                                                     (1, "royal_flush", "PENDING")]
    return link, table, settled.payouts[1]


def approve(hit_id: str, request_id: str | None = None) -> admin_pb2.ApproveHitRequest:
    return admin_pb2.ApproveHitRequest(request_id=request_id or rid(), hit_id=hit_id, audit=AUDIT)


def reject(hit_id: str, reason: str = "cards disturbed before verification",
           request_id: str | None = None) -> admin_pb2.RejectHitRequest:
    return admin_pb2.RejectHitRequest(request_id=request_id or rid(), hit_id=hit_id, reason=reason, audit=AUDIT)


async def balances(c: Client, link: str) -> dict[str, int]:
    """Every pool's exact balance in µ¢ as Redis holds it (RESERVE included)."""
    return {k: int(v) for k, v in (await c.redis.hgetall(keys.balances(link))).items()}


async def sums(c: Client, link: str) -> dict[str, int]:
    rows = await c.pg.fetch("SELECT account, sum(amount_uc) AS s FROM postings WHERE link_id = $1 GROUP BY account",
                            link)
    return {r["account"]: int(r["s"]) for r in rows}


async def postings_at(c: Client, link: str, seq: int) -> dict[str, int]:
    rows = await c.pg.fetch("SELECT account, amount_uc FROM postings WHERE link_id = $1 AND seq = $2", link, seq)
    return {r["account"]: int(r["amount_uc"]) for r in rows if int(r["amount_uc"]) != 0}


async def snapshot(c: Client, link: str) -> tuple[dict[str, int], int, list[tuple[str, str]]]:
    """What a refused call must leave as it was: the pools, the ledger's entry count, the hits' statuses."""
    count = await c.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link)
    hits = (await c.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link))).hits
    return await balances(c, link), int(count), [(h.hit_id, h.status) for h in hits]


async def refused(call: Any, code: S) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await call
    assert e.value.code() == code, (e.value.code(), e.value.details())
    return e.value.details() or ""


async def assert_books(c: Client, link: str) -> None:
    """RULES.md §10 over the ledger: the audit passes, each pool's postings are its balance (as Redis and
    GetPools show it, to the µ¢), wagers net of refunds are the contributions plus retained, and what the
    payout accounts hold is what the hits not rejected won (pending_payouts: those still waiting)."""
    held = await balances(c, link)
    report = await audit_link(c.pg, link, held, int(await c.redis.get(keys.seq(link))))
    assert report.ok, report.problems
    total = await sums(c, link)
    for pool, uc in held.items():
        assert total.get(f"pool:{pool}", 0) == uc, pool
    shown = await c.pools(link)
    for pool, amount in shown.items():
        if pool != "_seq":
            assert amount.balance_ucents == held.get(pool, 0), pool
    contributed = await c.pg.fetchval(
        "SELECT coalesce(sum(p.amount_uc), 0) FROM postings p JOIN entries e USING (link_id, seq) WHERE "
        "p.link_id = $1 AND e.kind IN ('commit', 'void') AND (p.account LIKE 'pool:%' OR p.account = 'retained')",
        link)
    assert -total.get("wagers", 0) - total.get("refunds", 0) == int(contributed)
    hits = (await c.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link))).hits
    won = sum(h.amount_cents for h in hits if h.status != "REJECTED")
    waiting = sum(h.amount_cents for h in hits if h.status == "PENDING")
    assert total.get("payouts", 0) + total.get("pending_payouts", 0) == won * UC
    assert total.get("pending_payouts", 0) == waiting * UC


async def statuses(c: Client, link: str, status: str = "") -> dict[str, str]:
    hits = (await c.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link, status=status))).hits
    return {h.hit_id: h.status for h in hits}


async def test_a_held_hit_reduces_its_pool_at_once_and_waits_in_pending_payouts(client: Client) -> None:
    link, _, royal = await pending_royal(client)
    assert royal.amount_cents == 2_000_040 and royal.funded_by_operator_cents == 0  # $20,000 + 2 x 20¢
    assert (await client.pools(link))["MAJOR"].amount_cents == RESET  # the meter shows the new amount now
    total = await sums(client, link)
    assert total["pending_payouts"] == 2_000_040 * UC
    assert total["payouts"] == 10_000 * UC  # only the flush is paid
    assert (await statuses(client, link, "PENDING")) == {royal.hit_id: "PENDING"}
    await assert_books(client, link)


async def test_approval_pays_the_held_prize_and_leaves_the_pools(client: Client) -> None:
    link, _, royal = await pending_royal(client)
    before = await balances(client, link)
    answer = await client.admin.ApproveHit(approve(royal.hit_id))
    assert (answer.hit_id, answer.status, answer.amount_cents, answer.pool) == (royal.hit_id, "PAID", 2_000_040,
                                                                               "MAJOR")
    assert (answer.returned_to_pool_ucents, answer.returned_to_operator_cents) == (0, 0)
    assert await balances(client, link) == before
    assert {p.pool: p.balance_ucents for p in answer.pools if p.pool in before} == {
        p.pool: before[p.pool] for p in answer.pools if p.pool in before}
    assert await postings_at(client, link, answer.sequence) == {"pending_payouts": -2_000_040 * UC,
                                                                "payouts": 2_000_040 * UC}
    entry = await client.entry(link, answer.sequence)
    assert entry["kind"] == "approve_hit"
    assert (await statuses(client, link))[royal.hit_id] == "PAID"
    total = await sums(client, link)
    assert (total["pending_payouts"], total["payouts"]) == (0, (2_000_040 + 10_000) * UC)
    await assert_books(client, link)


async def test_rejection_returns_the_pools_part_to_the_pool_and_the_shortfall_to_the_operator(
        client: Client) -> None:
    link, _, royal = await pending_royal(client, major_cents=820_000)  # §5 example 4: a royal below its minimum
    assert (royal.amount_cents, royal.funded_by_operator_cents) == (1_000_000, 1_000_000 - 820_040)
    before, funding = await balances(client, link), (await sums(client, link))["operator_funding"]
    assert before["MAJOR"] == RESET * UC  # reset after the royal took the pool
    answer = await client.admin.RejectHit(reject(royal.hit_id))
    assert (answer.status, answer.amount_cents, answer.pool) == ("REJECTED", 1_000_000, "MAJOR")
    assert answer.returned_to_pool_ucents == 820_040 * UC
    assert answer.returned_to_operator_cents == 1_000_000 - 820_040
    after = await balances(client, link)
    assert after == {**before, "MAJOR": (RESET + 820_040) * UC}  # the reset stands; what the pool paid is back
    assert {p.pool: p.balance_ucents for p in answer.pools}["MAJOR"] == (RESET + 820_040) * UC
    assert await postings_at(client, link, answer.sequence) == {
        "pending_payouts": -1_000_000 * UC, "pool:MAJOR": 820_040 * UC, "operator_funding": (1_000_000 - 820_040) * UC}
    total = await sums(client, link)
    assert total["pending_payouts"] == 0 and total["operator_funding"] == funding + (1_000_000 - 820_040) * UC
    assert await statuses(client, link, "REJECTED") == {royal.hit_id: "REJECTED"}
    assert await statuses(client, link, "PENDING") == {}
    await assert_books(client, link)


async def test_rejecting_a_royal_the_pool_paid_in_full_returns_it_all(client: Client) -> None:
    link, _, royal = await pending_royal(client)
    answer = await client.admin.RejectHit(reject(royal.hit_id))
    assert (answer.returned_to_pool_ucents, answer.returned_to_operator_cents) == (2_000_040 * UC, 0)
    assert (await client.pools(link))["MAJOR"].balance_ucents == (RESET + 2_000_040) * UC
    await assert_books(client, link)


@pytest.mark.parametrize("bad", ["x", "a:b:c", "a:b:c:x", "h" * 200, "a:b:c:0", ""])
async def test_a_malformed_hit_id_is_invalid_and_changes_nothing(client: Client, bad: str) -> None:
    link, _, _ = await pending_royal(client)
    before = await snapshot(client, link)
    for call in (client.admin.ApproveHit(approve(bad)), client.admin.RejectHit(reject(bad))):
        assert (await refused(call, S.INVALID_ARGUMENT)).startswith("hit_id")
    assert await snapshot(client, link) == before


async def test_a_well_formed_hit_id_of_no_hit_is_not_found(client: Client) -> None:
    link, table, _ = await pending_royal(client)
    before = await snapshot(client, link)
    for missing in (f"{link}:{table}:r1:3", f"{link}:{table}:r9:1", f"{link}:{unique('t')}:r1:1",
                    f"{unique('nolink')}:{table}:r1:1"):
        assert (await refused(client.admin.ApproveHit(approve(missing)), S.NOT_FOUND)).startswith("hit_id=")
        assert (await refused(client.admin.RejectHit(reject(missing)), S.NOT_FOUND)).startswith("hit_id=")
    assert await snapshot(client, link) == before


async def test_only_a_pending_hit_is_decided(client: Client) -> None:
    link, _, royal = await pending_royal(client)
    flush = (await client.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link, status="PAID"))).hits[0]
    before = await snapshot(client, link)
    for call in (client.admin.ApproveHit(approve(flush.hit_id)), client.admin.RejectHit(reject(flush.hit_id))):
        await refused(call, S.FAILED_PRECONDITION)  # paid at once: nothing to decide
    assert await snapshot(client, link) == before
    await client.admin.ApproveHit(approve(royal.hit_id))
    decided = await snapshot(client, link)
    for call in (client.admin.ApproveHit(approve(royal.hit_id)), client.admin.RejectHit(reject(royal.hit_id))):
        await refused(call, S.FAILED_PRECONDITION)  # decided already
    assert await snapshot(client, link) == decided
    await assert_books(client, link)


@pytest.mark.parametrize("reason", ["", "   "])
async def test_a_rejection_must_say_why(client: Client, reason: str) -> None:
    link, _, royal = await pending_royal(client)
    before = await snapshot(client, link)
    details = await refused(client.admin.RejectHit(reject(royal.hit_id, reason=reason)), S.INVALID_ARGUMENT)
    assert details.startswith("reason"), details
    assert await snapshot(client, link) == before


async def test_a_retry_gets_the_same_answer_and_a_reused_id_is_refused(client: Client) -> None:
    link, table, royal = await pending_royal(client)
    await client.commit(table, "r2", [4])
    other = (await client.settle(table, "r2", {4: ROYAL})).payouts[0]  # a second held royal
    assert other.status == "PENDING"
    request = reject(royal.hit_id)
    first = await client.admin.RejectHit(request)
    count = await client.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link)
    again = await client.admin.RejectHit(request)
    assert again.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
    assert await client.pg.fetchval("SELECT count(*) FROM entries WHERE link_id = $1", link) == count
    before = await snapshot(client, link)
    await refused(client.admin.RejectHit(reject(other.hit_id, request_id=request.request_id)), S.ALREADY_EXISTS)
    await refused(client.admin.RejectHit(reject(royal.hit_id, "another reason", request.request_id)),
                  S.ALREADY_EXISTS)
    await refused(client.admin.ApproveHit(approve(royal.hit_id, request.request_id)), S.ALREADY_EXISTS)
    assert await snapshot(client, link) == before
    approval = approve(other.hit_id)
    paid = await client.admin.ApproveHit(approval)
    assert (await client.admin.ApproveHit(approval)).sequence == paid.sequence
    await assert_books(client, link)


async def test_a_round_holding_a_hit_is_neither_voided_nor_settled_again(client: Client) -> None:
    link, table, _ = await pending_royal(client)
    before = await snapshot(client, link)
    await refused(client.table.VoidRound(table_pb2.VoidRoundRequest(
        request_id=rid(), table_id=table, round_id="r1", reason="misdeal")), S.FAILED_PRECONDITION)
    await refused(client.settle(table, "r1", {1: FLUSH}), S.FAILED_PRECONDITION)
    assert await snapshot(client, link) == before


async def test_two_decisions_at_once_one_wins(client: Client) -> None:
    for _ in range(3):
        link, _, royal = await pending_royal(client)
        outcomes = await asyncio.gather(client.admin.ApproveHit(approve(royal.hit_id)),
                                        client.admin.RejectHit(reject(royal.hit_id)), return_exceptions=True)
        won = [o for o in outcomes if isinstance(o, admin_pb2.HitDecisionResponse)]
        lost = [o for o in outcomes if not isinstance(o, admin_pb2.HitDecisionResponse)]
        assert len(won) == 1 and len(lost) == 1, outcomes
        assert isinstance(lost[0], grpc.aio.AioRpcError) and lost[0].code() == S.FAILED_PRECONDITION, lost
        assert (await statuses(client, link))[royal.hit_id] == won[0].status
        decisions = await client.pg.fetchval(
            "SELECT count(*) FROM entries WHERE link_id = $1 AND kind IN ('approve_hit', 'reject_hit')", link)
        assert decisions == 1
        await assert_books(client, link)


async def decide_as(target: str, role: Role, name: str, request: Any) -> S:
    method = "ApproveHit" if isinstance(request, admin_pb2.ApproveHitRequest) else "RejectHit"
    async with grpc.aio.insecure_channel(target) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        try:
            await getattr(stub, method)(request, metadata=(("authorization", f"Bearer {token(role, name)}"),),
                                        timeout=10)
        except grpc.aio.AioRpcError as e:
            return e.code()
    return S.OK


@pytest.mark.parametrize("role", [Role.DISPLAY, Role.FINANCE, Role.TABLE])
async def test_only_supervisors_and_administrators_decide(client: Client, target: str, role: Role) -> None:
    link, _, royal = await pending_royal(client)
    before = await snapshot(client, link)
    name = unique(role.value)
    assert await decide_as(target, role, name, approve(royal.hit_id)) == S.PERMISSION_DENIED
    assert await decide_as(target, role, name, reject(royal.hit_id)) == S.PERMISSION_DENIED
    assert await snapshot(client, link) == before
    rows = (await client.admin.ListAudit(admin_pb2.ListAuditRequest(link_id=link, actor=name))).rows
    assert sorted((r.method, r.role, r.outcome) for r in rows) == [
        ("ApproveHit", role.value, "PERMISSION_DENIED"), ("RejectHit", role.value, "PERMISSION_DENIED")]


@pytest.mark.parametrize("role", [Role.SUPERVISOR, Role.ADMIN])
async def test_every_decision_is_on_the_trail_with_its_actor(client: Client, target: str, role: Role) -> None:
    link, table, royal = await pending_royal(client)
    await client.commit(table, "r2", [3])
    other = (await client.settle(table, "r2", {3: ROYAL})).payouts[0]
    name = unique(role.value)
    approval, rejection = approve(royal.hit_id), reject(other.hit_id, "wrong deck in play")
    assert await decide_as(target, role, name, approval) == S.OK
    assert await decide_as(target, role, name, rejection) == S.OK
    assert await decide_as(target, role, name, approve(other.hit_id)) == S.FAILED_PRECONDITION
    found = await statuses(client, link)
    assert (found[royal.hit_id], found[other.hit_id]) == ("PAID", "REJECTED")
    rows = (await client.admin.ListAudit(admin_pb2.ListAuditRequest(link_id=link, actor=name))).rows
    assert [(r.method, r.role, r.request_id, r.outcome) for r in reversed(rows)] == [
        ("ApproveHit", role.value, approval.request_id, "OK"), ("RejectHit", role.value, rejection.request_id, "OK"),
        ("ApproveHit", role.value, rows[0].request_id, "FAILED_PRECONDITION")]
    assert {r.approval_ref for r in rows} == {AUDIT.approval_ref}
    for answer in (await client.pg.fetch("SELECT entry->'audit'->>'actor' AS actor FROM entries WHERE link_id = $1 "
                                         "AND kind IN ('approve_hit', 'reject_hit')", link)):
        # the ledger's audit names who proved it, with the role, not the request's field
        assert answer["actor"] == f"{role.value}:{name}"
    await assert_books(client, link)


async def test_a_pending_hit_survives_redis_losing_everything(private: Private) -> None:
    c = private.client
    link, _, royal = await pending_royal(c)
    before = await balances(c, link)
    await c.redis.flushall()
    await eventually(lambda: _pools_served(c, link), 15, "the link rebuilt from the ledger")
    assert await balances(c, link) == before
    assert await statuses(c, link, "PENDING") == {royal.hit_id: "PENDING"}
    answer: Any = await while_unavailable(lambda: c.admin.ApproveHit(approve(royal.hit_id)), 15, "ApproveHit")
    assert (answer.status, answer.amount_cents) == ("PAID", 2_000_040)
    assert await balances(c, link) == before
    total = await sums(c, link)
    assert (total["pending_payouts"], total["payouts"]) == (0, (2_000_040 + 10_000) * UC)
    await assert_books(c, link)


async def _pools_served(c: Client, link: str) -> bool:
    return "MAJOR" in await c.pools(link)
