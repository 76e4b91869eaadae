"""Who may call what (jackpotd/auth/policy.py), checked method by method and role by role against a running
service: a credential outside its role is PERMISSION_DENIED, a missing or bad one UNAUTHENTICATED, a table
acts only for itself, and the audit trail records the authenticated actor, not the field."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jackpotd.api.gen.jackpot.v1 import admin_pb2, display_pb2, report_pb2, table_pb2, table_pb2_grpc
from jackpotd.auth.identity import Role
from jackpotd.auth.policy import ALLOWED
from jackpotd.auth.tokens import issue, new_key

from ..conftest import AUTH_KEY, Servers, unique
from .harness import AUDIT, Client, rid, stream_error

S = grpc.StatusCode
REFUSED = {S.UNAUTHENTICATED, S.PERMISSION_DENIED}
SERVICES = {"TableService": table_pb2, "DisplayService": display_pb2, "AdminService": admin_pb2,
            "ReportService": report_pb2}
STREAMS = {"/jackpot.v1.TableService/WatchMeter", "/jackpot.v1.DisplayService/WatchPools",
           "/jackpot.v1.ReportService/ExportLedger", "/jackpot.v1.ReportService/ExportLedgerPages"}


def request_for(method: str, table: str, link: str) -> Any:
    """A request of the method's type, naming `table` and `link` where it has such fields."""
    service, name = method.strip("/").split("/")
    module = SERVICES[service.split(".")[-1]]
    descriptor = module.DESCRIPTOR.services_by_name[service.split(".")[-1]].methods_by_name[name]
    message = getattr(module, descriptor.input_type.name)()
    for field, value in (("table_id", table), ("link_id", link), ("request_id", rid()), ("round_id", "r1")):
        if field in message.DESCRIPTOR.fields_by_name:
            setattr(message, field, value)
    if "audit" in message.DESCRIPTOR.fields_by_name:
        message.audit.CopyFrom(AUDIT)
    return message


async def status_of(channel: grpc.aio.Channel, method: str, request: Any, token: str | None) -> S:
    """The status the call ends with (OK if it succeeds; a stream's first message counts as success)."""
    metadata = (("authorization", f"Bearer {token}"),) if token else None
    kind = type(request)
    try:
        if method in STREAMS:
            call = channel.unary_stream(method, request_serializer=kind.SerializeToString,
                                        response_deserializer=lambda b: b)(request, metadata=metadata, timeout=5)
            async for _ in call:
                break
            call.cancel()
        else:
            await channel.unary_unary(method, request_serializer=kind.SerializeToString,
                                      response_deserializer=lambda b: b)(request, metadata=metadata, timeout=5)
    except grpc.aio.AioRpcError as e:
        return e.code()
    return S.OK


CALLERS: list[tuple[str, Role | None]] = [("table (itself)", Role.TABLE), ("display", Role.DISPLAY),
                                          ("finance", Role.FINANCE), ("supervisor", Role.SUPERVISOR),
                                          ("admin", Role.ADMIN)]


def test_every_rpc_of_every_service_is_in_the_policy() -> None:
    methods = {f"/{m.containing_service.full_name}/{m.name}" for module in SERVICES.values()
               for service in module.DESCRIPTOR.services_by_name.values() for m in service.methods}
    assert methods == set(ALLOWED)


async def test_the_whole_authorisation_table(client: Client, target: str) -> None:
    link, table, other = unique("auth"), unique("t"), unique("t")
    await client.create_link(link)
    await client.register(table, link)
    await client.register(other, link)
    outcomes: dict[tuple[str, str], S] = {}
    async with grpc.aio.insecure_channel(target) as channel:
        for method, allowed in ALLOWED.items():
            for label, role in CALLERS:
                token = issue(AUTH_KEY, role, table if role is Role.TABLE else f"{label}-1") if role else None
                code = await status_of(channel, method, request_for(method, table, link), token)
                outcomes[(method, label)] = code
                assert (code not in REFUSED) == (role in allowed), (method, label, code)
                if role in allowed:
                    assert code != S.UNAUTHENTICATED
                else:
                    assert code == S.PERMISSION_DENIED, (method, label, code)
            # a table acting for another table
            if Role.TABLE in allowed:
                code = await status_of(channel, method, request_for(method, other, link),
                                       issue(AUTH_KEY, Role.TABLE, table))
                assert code == S.PERMISSION_DENIED, (method, "table for another", code)
    assert len(outcomes) == len(ALLOWED) * len(CALLERS)


@pytest.mark.parametrize("case", ["missing", "wrong key", "expired", "not bearer", "garbage"])
async def test_bad_credentials_are_unauthenticated(target: str, case: str) -> None:
    method = "/jackpot.v1.AdminService/FundPool"
    token = {"missing": None, "wrong key": issue(new_key(), Role.ADMIN, "x"),
             "expired": issue(AUTH_KEY, Role.ADMIN, "x", ttl_seconds=-10), "garbage": "abc.def.ghi",
             "not bearer": None}[case]
    async with grpc.aio.insecure_channel(target) as channel:
        request = request_for(method, "t", "l")
        if case == "not bearer":
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await channel.unary_unary(method, request_serializer=type(request).SerializeToString)(
                    request, metadata=(("authorization", "Basic YWRtaW46YWRtaW4="),), timeout=5)
            assert e.value.code() == S.UNAUTHENTICATED
            return
        assert await status_of(channel, method, request, token) == S.UNAUTHENTICATED


async def test_health_and_reflection_stay_open(target: str) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert reply.status in (health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING)


async def test_the_audit_records_the_authenticated_actor_not_the_field(client: Client, target: str) -> None:
    link = unique("actor")
    await client.create_link(link)
    request = admin_pb2.FundPoolRequest(request_id=rid(), link_id=link, pool="MINOR", amount_cents=5, audit=AUDIT)
    request.audit.actor = "someone-else"
    async with grpc.aio.insecure_channel(target) as channel:
        await channel.unary_unary("/jackpot.v1.AdminService/FundPool",
                                  request_serializer=admin_pb2.FundPoolRequest.SerializeToString)(
            request, metadata=(("authorization", f"Bearer {issue(AUTH_KEY, Role.ADMIN, 'alice')}"),), timeout=10)
    entry = await client.pg.fetchval("SELECT entry FROM entries WHERE link_id = $1 AND kind = 'fund'", link)
    assert json.loads(entry)["audit"]["actor"] == "admin:alice"  # with the role it proved


async def test_a_sign_watches_but_cannot_move_money(client: Client, target: str) -> None:
    link = unique("sign")
    await client.create_link(link)
    sign = issue(AUTH_KEY, Role.DISPLAY, "sign-7")
    async with grpc.aio.insecure_channel(target) as channel:
        assert await status_of(channel, "/jackpot.v1.DisplayService/GetPools",
                               display_pb2.GetPoolsRequest(link_id=link), sign) == S.OK
        fund = admin_pb2.FundPoolRequest(request_id=rid(), link_id=link, pool="MINOR", amount_cents=5, audit=AUDIT)
        assert await status_of(channel, "/jackpot.v1.AdminService/FundPool", fund, sign) == S.PERMISSION_DENIED
    # the link's next entry, after the refusal: had the refused fund been taken, it would come before this one
    later = await client.fund(link, "MINOR", 7)
    rows = await client.pg.fetch("SELECT seq, kind FROM entries WHERE link_id = $1 ORDER BY seq", link)
    assert [(r["seq"], r["kind"]) for r in rows] == [(later.sequence - 1, "create_link"), (later.sequence, "fund")]


async def test_a_revoked_token_is_refused_and_its_open_stream_ends_within_5_s(
        client: Client, target: str, servers: Servers, tmp_path: Path) -> None:
    """Issue 19: `jackpotd revoke --token-file` on a table's token: its open WatchMeter stream ends with
    UNAUTHENTICATED within 5 s, and every new call with it is refused. Another token of the same table goes on."""
    link, table = unique("rev"), unique("tbl")
    await client.create_link(link)
    await client.register(table, link)
    token, spare = issue(AUTH_KEY, Role.TABLE, table), issue(AUTH_KEY, Role.TABLE, table)
    token_file = tmp_path / "table.token"
    token_file.write_text(token)
    async with grpc.aio.insecure_channel(target) as channel:
        stub = table_pb2_grpc.TableServiceStub(channel)
        stream = stub.WatchMeter(table_pb2.WatchMeterRequest(table_id=table),
                                 metadata=(("authorization", f"Bearer {token}"),))
        assert (await asyncio.wait_for(stream.read(), 10)).link_id == link  # the snapshot: the stream is open
        env = {**os.environ, "JACKPOTD_REDIS_URL": servers.redis_url(0), "JACKPOTD_POSTGRES_DSN": servers.dsn()}
        out = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "jackpotd.cli", "revoke", "--token-file",
                                                       str(token_file), "--reason", "the tablet was stolen"],
                                      env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "revoked" in out.stdout, out.stdout + out.stderr
        revoked_at = time.monotonic()
        # heartbeats may come first; the stream must end, not go quiet
        ended = await stream_error(stream, 10, "the revoked token's WatchMeter stream")
        assert ended.code() == grpc.StatusCode.UNAUTHENTICATED, ended.details()
        assert "revoked" in (ended.details() or "")
        assert time.monotonic() - revoked_at < 5
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.CommitWagers(table_pb2.CommitWagersRequest(
                request_id=rid(), table_id=table, round_id="r1",
                wagers=[table_pb2.Wager(seat=1, amount_cents=100, ante_placed=True)]),
                metadata=(("authorization", f"Bearer {token}"),))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED and "revoked" in (refused.value.details() or "")
        await stub.CommitWagers(table_pb2.CommitWagersRequest(  # the table's other token is not revoked
            request_id=rid(), table_id=table, round_id="r1",
            wagers=[table_pb2.Wager(seat=1, amount_cents=100, ante_placed=True)]),
            metadata=(("authorization", f"Bearer {spare}"),))
    act = await client.pg.fetchrow("SELECT role, reason, detail FROM admin_audit WHERE method = 'Revoke' AND "
                                   "detail LIKE $1", f"%table:{table}%")
    assert act is not None and act["role"] == "operator" and act["reason"] == "the tablet was stolen", act
