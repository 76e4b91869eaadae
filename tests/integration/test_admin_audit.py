"""The trail of administrative acts (issue 10, part 4; API.md, ListAudit): every AdminService call, answered
or refused, leaves one row carrying the authenticated actor (never the request's field), ListAudit reads
them, and the service's own role can append to the trail but never change it."""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc
from jackpotd.api.interceptor import CallInterceptor
from jackpotd.auth.guard import Guard
from jackpotd.auth.identity import Role
from jackpotd.auth.tokens import issue
from jackpotd.metrics import ADMIN_AUDIT_FAILURES
from jackpotd.store import ledger

from ..conftest import AUTH_KEY, Isolated, unique
from .harness import Client, rid

S = grpc.StatusCode


def fund_request(link: str, cents: int = 500) -> admin_pb2.FundPoolRequest:
    return admin_pb2.FundPoolRequest(request_id=rid(), link_id=link, pool="MAJOR", amount_cents=cents,
                                     audit=admin_pb2.Audit(actor="someone-else", reason="seed the pool",
                                                           approval_ref="APP-42"))


async def fund_as(target: str, request: admin_pb2.FundPoolRequest, token: str | None) -> S:
    metadata = (("authorization", f"Bearer {token}"),) if token else None
    async with grpc.aio.insecure_channel(target) as channel:
        try:
            await admin_pb2_grpc.AdminServiceStub(channel).FundPool(request, metadata=metadata, timeout=5)
        except grpc.aio.AioRpcError as e:
            return e.code()
    return S.OK


async def rows_of(client: Client, link: str) -> list[admin_pb2.AuditRow]:
    reply = await client.admin.ListAudit(admin_pb2.ListAuditRequest(link_id=link))
    return list(reply.rows)


async def test_a_successful_fund_is_recorded_with_the_authenticated_actor(client: Client, target: str) -> None:
    link = unique("audit")
    await client.create_link(link)
    request = fund_request(link)
    assert await fund_as(target, request, issue(AUTH_KEY, Role.ADMIN, "alice")) == S.OK
    [row] = [r for r in await rows_of(client, link) if r.method == "FundPool"]
    assert (row.actor, row.role, row.outcome, row.detail) == ("alice", "admin", "OK", "")
    assert (row.request_id, row.link_id, row.reason, row.approval_ref) == (request.request_id, link,
                                                                           "seed the pool", "APP-42")
    assert row.id > 0 and row.at_ms > 0


async def test_a_refused_fund_is_recorded_with_the_caller(client: Client, target: str) -> None:
    link = unique("audit")
    await client.create_link(link)
    assert await fund_as(target, fund_request(link), issue(AUTH_KEY, Role.DISPLAY, "sign-7")) == S.PERMISSION_DENIED
    [row] = [r for r in await rows_of(client, link) if r.method == "FundPool"]
    assert (row.actor, row.role, row.outcome) == ("sign-7", "display", "PERMISSION_DENIED")
    assert "may not call FundPool" in row.detail


async def test_an_unauthenticated_call_is_recorded_without_an_actor(client: Client, target: str) -> None:
    link = unique("audit")
    assert await fund_as(target, fund_request(link), None) == S.UNAUTHENTICATED
    [row] = await rows_of(client, link)
    assert (row.actor, row.role, row.method, row.outcome) == ("", "", "FundPool", "UNAUTHENTICATED")


async def test_a_failed_call_is_recorded_with_its_status(client: Client, target: str) -> None:
    link = unique("audit")  # never created
    assert await fund_as(target, fund_request(link), issue(AUTH_KEY, Role.ADMIN, "bob")) == S.NOT_FOUND
    [row] = await rows_of(client, link)
    assert (row.actor, row.outcome) == ("bob", "NOT_FOUND")


async def test_list_audit_filters(client: Client, target: str) -> None:
    link, other = unique("audit"), unique("audit")
    await client.create_link(link)
    await client.create_link(other)
    carol = unique("carol")
    for _ in range(3):
        assert await fund_as(target, fund_request(link), issue(AUTH_KEY, Role.ADMIN, carol)) == S.OK
    assert await fund_as(target, fund_request(other), issue(AUTH_KEY, Role.ADMIN, carol)) == S.OK
    rows = await rows_of(client, link)
    assert {r.link_id for r in rows} == {link}
    assert [r.method for r in rows] == ["FundPool"] * 3 + ["CreateLink"]  # newest first
    assert [r.id for r in rows] == sorted((r.id for r in rows), reverse=True)
    mine = (await client.admin.ListAudit(admin_pb2.ListAuditRequest(actor=carol))).rows
    assert len(mine) == 4 and {r.actor for r in mine} == {carol}
    two = (await client.admin.ListAudit(admin_pb2.ListAuditRequest(actor=carol, limit=2))).rows
    assert [r.id for r in two] == [r.id for r in mine][:2]
    created = (await client.admin.ListAudit(admin_pb2.ListAuditRequest(link_id=link, method="CreateLink"))).rows
    assert len(created) == 1
    newest = mine[0].at_ms
    assert len((await client.admin.ListAudit(admin_pb2.ListAuditRequest(actor=carol, since_ms=newest + 1))).rows) == 0
    assert len((await client.admin.ListAudit(admin_pb2.ListAuditRequest(actor=carol,
                                                                        until_ms=newest + 1))).rows) == 4
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.admin.ListAudit(admin_pb2.ListAuditRequest(limit=1001))
    assert e.value.code() == S.INVALID_ARGUMENT
    assert not [r for r in (await client.admin.ListAudit(admin_pb2.ListAuditRequest(limit=1000))).rows
                if r.method == "ListAudit"]  # reading the trail is no act


@pytest.mark.parametrize(("role", "allowed"), [(Role.FINANCE, True), (Role.SUPERVISOR, True), (Role.ADMIN, True),
                                               (Role.DISPLAY, False)])
async def test_who_may_read_the_trail(target: str, role: Role, allowed: bool) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        call = admin_pb2_grpc.AdminServiceStub(channel).ListAudit(
            admin_pb2.ListAuditRequest(), metadata=(("authorization", f"Bearer {issue(AUTH_KEY, role, 'x')}"),),
            timeout=5)
        if allowed:
            await call
        else:
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await call
            assert e.value.code() == S.PERMISSION_DENIED


@pytest.mark.parametrize("sql", ["UPDATE admin_audit SET actor = 'mallory'", "DELETE FROM admin_audit",
                                 "TRUNCATE admin_audit"])
async def test_the_app_role_cannot_change_the_trail(isolated: Isolated, sql: str) -> None:
    await ledger.migrate(isolated.dsn)
    conn = await asyncpg.connect(isolated.app_dsn)
    try:
        await ledger.record_admin_act(conn, ledger.AdminAct("alice", "admin", "FundPool", link_id="l"))
        [act] = await ledger.admin_acts(conn, ledger.AdminActFilter(link_id="l"))
        assert (act.actor, act.outcome) == ("alice", "OK")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(sql)
        assert await conn.fetchval("SELECT count(*) FROM admin_audit") == 1
    finally:
        await conn.close()
    owner = await asyncpg.connect(isolated.dsn)
    try:  # the trigger refuses the owner too
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await owner.execute(sql)
    finally:
        await owner.close()


class Context:
    """What the interceptor asks of a call's context: its credential, its deadline (none), and abort."""

    def __init__(self, token: str) -> None:
        self.token = token

    def time_remaining(self) -> float | None:
        return None

    def auth_context(self) -> dict[str, Any]:
        return {}

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)

    async def abort(self, code: S, message: str) -> None:
        raise AssertionError(f"aborted: {code} {message}")


async def test_a_trail_that_cannot_be_written_changes_no_answer(caplog: pytest.LogCaptureFixture) -> None:
    path = "/jackpot.v1.AdminService/FundPool"
    answer = admin_pb2.FundPoolResponse(sequence=7)

    async def handler(request: Any, context: Any) -> admin_pb2.FundPoolResponse:
        return answer

    async def broken(act: ledger.AdminAct) -> None:
        raise ConnectionError("the ledger is gone")

    async def continuation(details: Any) -> Any:
        return grpc.unary_unary_rpc_method_handler(handler, admin_pb2.FundPoolRequest.FromString,
                                                   admin_pb2.FundPoolResponse.SerializeToString)

    class Details:
        method = path

    interceptor = CallInterceptor(Guard(AUTH_KEY, tables_by_token=True), record=broken)
    wrapped = await interceptor.intercept_service(continuation, Details())
    failures = ADMIN_AUDIT_FAILURES.labels("FundPool")
    before = failures._value.get()
    with caplog.at_level(logging.ERROR, logger="jackpotd.api"):
        assert await wrapped.unary_unary(fund_request("l"), Context(issue(AUTH_KEY, Role.ADMIN, "dave"))) is answer
    assert failures._value.get() == before + 1
    assert any(r.levelno == logging.ERROR and "dave" in r.getMessage() for r in caplog.records)
