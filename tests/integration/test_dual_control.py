"""Dual control through gRPC (RULES.md §7, NM 15.1.24.12): a hit at or above the link's
dual_approval_threshold_cents is paid only after two distinct supervisors approve it. The first approval is
chained and answered PENDING 1 of 2 (a retry identically); the same person again is refused and changes nothing;
a second person pays it; ListHits, GetPools and the audit show both names; one supervisor rejects after a first
approval; a bad threshold is refused naming the field; a lost Redis forgets no first approval."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import grpc

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, display_pb2, report_pb2
from jackpotd.auth.identity import Role

from ..conftest import unique
from .conftest import Private
from .harness import AUDIT, Client, eventually, rid, token, while_unavailable
from .test_hit_approval import ROYAL, THRESHOLD, S, _pools_served, approve, assert_books, refused, reject, snapshot

DUAL = 1_500_000  # $15,000: the $20,000 royal needs two supervisors
ALICE, BOB = "supervisor:alice", "supervisor:bob"


class Person:
    """The admin service as one supervisor calls it: their own token on every call."""

    def __init__(self, channel: grpc.aio.Channel, name: str) -> None:
        self.stub = admin_pb2_grpc.AdminServiceStub(channel)
        self.meta = (("authorization", f"Bearer {token(Role.SUPERVISOR, name)}"),)

    async def approve(self, request: admin_pb2.ApproveHitRequest) -> admin_pb2.HitDecisionResponse:
        answer: admin_pb2.HitDecisionResponse = await self.stub.ApproveHit(request, metadata=self.meta, timeout=10)
        return answer

    async def reject(self, request: admin_pb2.RejectHitRequest) -> admin_pb2.HitDecisionResponse:
        answer: admin_pb2.HitDecisionResponse = await self.stub.RejectHit(request, metadata=self.meta, timeout=10)
        return answer


@asynccontextmanager
async def people(target: str) -> AsyncIterator[tuple[Person, Person]]:
    """Alice and Bob, two supervisors."""
    async with grpc.aio.insecure_channel(target) as channel:
        yield Person(channel, "alice"), Person(channel, "bob")


async def dual_royal(c: Client) -> tuple[str, str]:
    """A link under dual control whose round r1 holds a $20,000 royal for two supervisors (seat 2 folded)."""
    link, table = unique("dual"), unique("t")
    await c.create_link(link, resets={"MAJOR": 1_000_000}, threshold=THRESHOLD, dual=DUAL)
    await c.register(table, link)
    await c.fund(link, "MAJOR", 2_000_000)
    await c.commit(table, "r1", [1, 2])
    settled = await c.settle(table, "r1", {1: ROYAL})
    assert [(p.hand, p.status) for p in settled.payouts] == [("royal_flush", "PENDING")]
    return link, settled.payouts[0].hit_id


async def hit_row(c: Client, link: str, hit_id: str) -> admin_pb2.HitRow:
    return next(h for h in (await c.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link))).hits
                if h.hit_id == hit_id)


async def test_two_distinct_supervisors_pay_a_hit_at_the_dual_threshold(client: Client, target: str) -> None:
    link, hit_id = await dual_royal(client)
    row = await hit_row(client, link, hit_id)
    assert (row.status, row.approvals_needed, list(row.approved_by), row.at_ms > 0) == ("PENDING", 2, [], True)
    async with people(target) as (alice, bob):
        first_request = approve(hit_id)
        first = await alice.approve(first_request)
        assert (first.status, list(first.approved_by), first.approvals_needed) == ("PENDING", [ALICE], 2)
        assert await alice.approve(first_request) == first  # a retry is answered identically
        entry = await client.entry(link, first.sequence)
        assert (entry["kind"], entry["postings"], entry["audit"]["actor"]) == ("first_approval", [], ALICE)
        last = (await client.display.GetPools(display_pb2.GetPoolsRequest(link_id=link))).last_hit
        assert (last.hit_id, last.status, last.approvals, last.approvals_needed) == (hit_id, "PENDING", 1, 2)

        before = await snapshot(client, link)
        details = await refused(alice.approve(approve(hit_id)), S.FAILED_PRECONDITION)
        assert details.startswith(f"hit_id={hit_id!r}: dual control (NM 15.1.24.12): {ALICE} approved it already; "
                                  "a second, different supervisor must approve"), details
        assert await snapshot(client, link) == before

        paid = await bob.approve(approve(hit_id))
        assert (paid.status, list(paid.approved_by), paid.approvals_needed) == ("PAID", [ALICE, BOB], 2)
    row = await hit_row(client, link, hit_id)
    assert (row.status, list(row.approved_by), row.approvals_needed, row.rejected_by) == ("PAID", [ALICE, BOB], 2, "")
    last = (await client.display.GetPools(display_pb2.GetPoolsRequest(link_id=link))).last_hit
    assert (last.status, last.approvals, last.approvals_needed) == ("PAID", 2, 2)
    verified = await client.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link))
    assert verified.ok, verified
    await assert_books(client, link)


async def test_one_supervisor_rejects_after_a_first_approval(client: Client, target: str) -> None:
    link, hit_id = await dual_royal(client)
    async with people(target) as (alice, bob):
        await alice.approve(approve(hit_id))
        pending = (await client.report.GetLiability(report_pb2.GetLiabilityRequest(link_id=link))).pending_hits
        assert [(h.hit_id, list(h.approved_by)) for h in pending] == [(hit_id, [ALICE])]
        rejected = await bob.reject(reject(hit_id))
    assert (rejected.status, list(rejected.approved_by)) == ("REJECTED", [ALICE])
    row = await hit_row(client, link, hit_id)
    assert (row.status, list(row.approved_by), row.rejected_by) == ("REJECTED", [ALICE], BOB)
    await assert_books(client, link)


async def test_a_dual_threshold_below_the_verification_one_is_refused(client: Client) -> None:
    link = unique("dual")
    details = await refused(client.create_link(link, threshold=THRESHOLD, dual=THRESHOLD - 1), S.INVALID_ARGUMENT)
    assert details.startswith(f"dual_approval_threshold_cents={THRESHOLD - 1}: must be at or above"), details
    await client.create_link(link, threshold=THRESHOLD)
    details = await refused(client.admin.UpdateLink(admin_pb2.UpdateLinkRequest(
        request_id=rid(), link_id=link, dual_approval_threshold_cents=-5, audit=AUDIT)), S.INVALID_ARGUMENT)
    assert details.startswith("dual_approval_threshold_cents=-5"), details
    await client.admin.UpdateLink(admin_pb2.UpdateLinkRequest(request_id=rid(), link_id=link,
                                                              dual_approval_threshold_cents=DUAL, audit=AUDIT))


async def test_a_first_approval_survives_redis_losing_everything(private: Private) -> None:
    c = private.client
    link, hit_id = await dual_royal(c)
    async with people(private.target) as (alice, bob):
        await alice.approve(approve(hit_id))
        await c.redis.flushall()
        await eventually(lambda: _pools_served(c, link), 15, "the link rebuilt from the ledger")
        refusal = await refused(while_unavailable(lambda: alice.approve(approve(hit_id)), 15, "ApproveHit"),
                                S.FAILED_PRECONDITION)
        assert "approved it already" in refusal
        paid = await bob.approve(approve(hit_id))
    assert (paid.status, list(paid.approved_by)) == ("PAID", [ALICE, BOB])
    await assert_books(c, link)
