"""jackpotd over TLS with client certificates (docs/SECURITY.md): the certificate says who calls, a table acts
for itself only, each role within its policy, a certificate of another CA never gets through the handshake,
and plain text is refused anywhere but loopback."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jackpotd.api.gen.jackpot.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    display_pb2,
    display_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from jackpotd.api.transport import ListenRefused
from jackpotd.app import serve
from jackpotd.auth.client import bearer, open_channel
from jackpotd.auth.identity import ON_BEHALF_OF, Role
from jackpotd.auth.issue import IssueOrder, issue_into
from jackpotd.auth.tokens import issue, read_key
from jackpotd.embedded import free_port
from jackpotd.settings import Settings

from ..conftest import Isolated, unique
from .conftest import start_private

ROLES = [(Role.ADMIN, "ops"), (Role.DISPLAY, "sign-1"), (Role.SUPERVISOR, "floor-1"), (Role.FINANCE, "office"),
         (Role.CONSOLE, "floor-1")]
AUDIT = admin_pb2.Audit(actor="ignored", reason="tls test", approval_ref="TLS-1")


@dataclass
class Tls:
    """A jackpotd serving TLS on the isolated stores, and the credentials directories it trusts (and not)."""

    target: str
    creds: Path
    other: Path  # another CA's credentials
    link: str
    tables: tuple[str, str]
    channels: list[grpc.aio.Channel]

    def channel(self, cert: str | None, *, root: Path | None = None, token: str | None = None) -> grpc.aio.Channel:
        """A TLS channel trusting our CA and presenting `cert` (e.g. "tables/t", "roles/admin-ops") from `root`."""
        root = root or self.creds
        ca = (self.creds / "ca.pem").read_bytes()
        pair = ((root / f"{cert}.pem").read_bytes(), (root / f"{cert}.key").read_bytes()) if cert else (None, None)
        channel = open_channel(self.target, ca=ca, cert=pair[0], key=pair[1],
                               interceptors=bearer(token) if token else ())
        self.channels.append(channel)
        return channel

    def admin(self, cert: str = "roles/admin-ops", **kw: Any) -> Any:
        return admin_pb2_grpc.AdminServiceStub(self.channel(cert, **kw))

    def table(self, cert: str, **kw: Any) -> Any:
        return table_pb2_grpc.TableServiceStub(self.channel(cert, **kw))

    def display(self, cert: str, **kw: Any) -> Any:
        return display_pb2_grpc.DisplayServiceStub(self.channel(cert, **kw))


def commit(table_id: str, round_id: str) -> table_pb2.CommitWagersRequest:
    return table_pb2.CommitWagersRequest(request_id=unique("r"), table_id=table_id, round_id=round_id,
                                         wagers=[table_pb2.Wager(seat=1, amount_cents=100, ante_placed=True)])


def fund(link: str) -> admin_pb2.FundPoolRequest:
    return admin_pb2.FundPoolRequest(request_id=unique("f"), link_id=link, pool="MAJOR", amount_cents=500,
                                     audit=AUDIT)


async def code_of(call: Awaitable[Any]) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as e:
        return e.code()
    return grpc.StatusCode.OK


@pytest_asyncio.fixture
async def tls(isolated: Isolated, tmp_path: Path) -> AsyncIterator[Tls]:
    tables = (unique("t"), unique("t"))
    creds, other = tmp_path / "credentials", tmp_path / "other-ca"
    issue_into(creds, IssueOrder(tables=tables, roles=ROLES))
    issue_into(other, IssueOrder(tables=tables, roles=ROLES[:1]))
    listen = f"127.0.0.1:{free_port()}"
    settings = Settings(redis_url=isolated.redis_url, postgres_dsn=isolated.dsn, listen=listen, metrics_port=0,
                        workers=0, tls_cert_file=str(creds / "server.pem"), tls_key_file=str(creds / "server.key"),
                        tls_ca_file=str(creds / "ca.pem"), auth_key_file=str(creds / "auth.key"))
    task, stop = await start_private(settings)
    t = Tls(listen, creds, other, unique("link"), tables, [])
    try:
        admin = t.admin()
        await admin.CreateLink(admin_pb2.CreateLinkRequest(
            request_id=unique("c"), link_id=t.link, mode="SPLIT", wager_amount_cents=100,
            pools=[admin_pb2.PoolConfig(pool="MAJOR", reset_cents=1_000_000),
                   admin_pb2.PoolConfig(pool="MINOR", reset_cents=100_000), admin_pb2.PoolConfig(pool="RESERVE")],
            rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool="MAJOR", ppm=200_000),
                                         admin_pb2.PoolRate(pool="MINOR", ppm=75_000),
                                         admin_pb2.PoolRate(pool="RESERVE", ppm=25_000)], retained_ppm=700_000),
            audit=AUDIT))
        for table in tables:
            await admin.RegisterTable(admin_pb2.RegisterTableRequest(
                request_id=unique("reg"), table_id=table, link_id=t.link, game="caribbean-stud", seats=7,
                audit=AUDIT))
        yield t
    finally:
        for channel in t.channels:
            await channel.close()
        stop.set()
        with contextlib.suppress(Exception):
            await task


async def test_a_table_certificate_commits_for_its_own_table_only(tls: Tls) -> None:
    mine, other = tls.tables
    stub = tls.table(f"tables/{mine}")
    resp = await stub.CommitWagers(commit(mine, "1"))
    assert [a.seat for a in resp.accepted] == [1]
    for request in (commit(other, "1"),
                    table_pb2.SettleRoundRequest(request_id=unique("s"), table_id=other, round_id="1"),
                    table_pb2.VoidRoundRequest(request_id=unique("v"), table_id=other, round_id="1", reason="x")):
        method = {"CommitWagersRequest": stub.CommitWagers, "SettleRoundRequest": stub.SettleRound,
                  "VoidRoundRequest": stub.VoidRound}[type(request).__name__]
        try:
            await method(request)
        except grpc.aio.AioRpcError as e:
            assert e.code() == grpc.StatusCode.PERMISSION_DENIED, e
            assert mine in e.details() and other in e.details()
        else:
            raise AssertionError(f"table {mine} acted for {other}")
    # a table cannot administer, nor read the pools (the policy's READERS are people and signs)
    assert await code_of(tls.admin(f"tables/{mine}").FundPool(fund(tls.link))) == grpc.StatusCode.PERMISSION_DENIED


async def test_roles_by_certificate(tls: Tls) -> None:
    table = tls.tables[0]
    display = tls.display("roles/display-sign-1")
    pools = await display.GetPools(display_pb2.GetPoolsRequest(link_id=tls.link))
    assert {p.pool for p in pools.pools} == {"MAJOR", "MINOR"}  # the signs show the prize pools
    sign_as_table = tls.table("roles/display-sign-1")
    assert await code_of(sign_as_table.CommitWagers(commit(table, "2"))) == grpc.StatusCode.PERMISSION_DENIED
    assert await code_of(tls.admin("roles/display-sign-1").FundPool(fund(tls.link))) == \
        grpc.StatusCode.PERMISSION_DENIED
    # finance reads only; the supervisor suspends and resumes but does not fund
    finance = tls.channel("roles/finance-office")
    assert await code_of(display_pb2_grpc.DisplayServiceStub(finance).GetPools(
        display_pb2.GetPoolsRequest(link_id=tls.link))) == grpc.StatusCode.OK
    assert await code_of(admin_pb2_grpc.AdminServiceStub(finance).FundPool(fund(tls.link))) == \
        grpc.StatusCode.PERMISSION_DENIED
    supervisor = tls.admin("roles/supervisor-floor-1")
    assert await code_of(supervisor.FundPool(fund(tls.link))) == grpc.StatusCode.PERMISSION_DENIED
    assert await code_of(supervisor.SuspendTable(admin_pb2.SuspendTableRequest(
        request_id=unique("s"), table_id=table, audit=AUDIT))) == grpc.StatusCode.OK
    assert await code_of(supervisor.ResumeTable(admin_pb2.ResumeTableRequest(
        request_id=unique("s"), table_id=table, audit=AUDIT))) == grpc.StatusCode.OK
    # the console's certificate reads the pools on its own, and acts only for a supervisor it names (issue 21)
    console = tls.admin("roles/console-floor-1")
    assert await code_of(tls.display("roles/console-floor-1").GetPools(
        display_pb2.GetPoolsRequest(link_id=tls.link))) == grpc.StatusCode.OK
    suspend = admin_pb2.SuspendTableRequest(request_id=unique("s"), table_id=table, audit=AUDIT)
    assert await code_of(console.SuspendTable(suspend)) == grpc.StatusCode.PERMISSION_DENIED
    assert await code_of(console.SuspendTable(suspend, metadata=((ON_BEHALF_OF, "supervisor:bob"),))) == \
        grpc.StatusCode.OK
    assert await code_of(console.FundPool(fund(tls.link), metadata=((ON_BEHALF_OF, "admin:ops"),))) == \
        grpc.StatusCode.PERMISSION_DENIED
    assert await code_of(console.ResumeTable(admin_pb2.ResumeTableRequest(
        request_id=unique("s"), table_id=table, audit=AUDIT), metadata=((ON_BEHALF_OF, "supervisor:bob"),))) == \
        grpc.StatusCode.OK
    # the administrator (who created the link and registered the tables in the fixture) funds
    funded = await tls.admin().FundPool(fund(tls.link))
    assert funded is not None
    # the certificate decides: an admin token beside a sign's certificate gives the sign no more rights
    admin_token = issue(read_key(tls.creds / "auth.key"), Role.ADMIN, "ops")
    assert await code_of(tls.admin("roles/display-sign-1", token=admin_token).FundPool(fund(tls.link))) == \
        grpc.StatusCode.PERMISSION_DENIED


async def test_the_handshake_refuses_another_ca_no_certificate_and_plain_text(tls: Tls) -> None:
    """grpc fails these in the TLS handshake, before any call reaches the service: the client sees UNAVAILABLE
    (never UNAUTHENTICATED: there is no call for the service to answer)."""
    table = tls.tables[0]
    foreign = tls.table(f"tables/{table}", root=tls.other)  # same table id and layout, another CA
    assert await code_of(foreign.CommitWagers(commit(table, "3"), timeout=5)) == grpc.StatusCode.UNAVAILABLE
    assert await code_of(tls.admin("roles/admin-ops", root=tls.other).FundPool(fund(tls.link), timeout=5)) == \
        grpc.StatusCode.UNAVAILABLE
    no_certificate = tls.display(None)
    assert await code_of(no_certificate.GetPools(display_pb2.GetPoolsRequest(link_id=tls.link), timeout=5)) == \
        grpc.StatusCode.UNAVAILABLE
    token = issue(read_key(tls.creds / "auth.key"), Role.DISPLAY, "sign-1")  # a token is no way around it
    with_token = tls.display(None, token=token)
    assert await code_of(with_token.GetPools(display_pb2.GetPoolsRequest(link_id=tls.link), timeout=5)) == \
        grpc.StatusCode.UNAVAILABLE
    async with grpc.aio.insecure_channel(tls.target) as plain:
        stub = display_pb2_grpc.DisplayServiceStub(plain)
        assert await code_of(stub.GetPools(display_pb2.GetPoolsRequest(link_id=tls.link), timeout=5)) == \
            grpc.StatusCode.UNAVAILABLE
    # and nothing of those reached the ledger: the table's round 3 does not exist
    mine = tls.table(f"tables/{table}")
    assert await code_of(mine.VoidRound(table_pb2.VoidRoundRequest(
        request_id=unique("v"), table_id=table, round_id="3", reason="x"))) == grpc.StatusCode.NOT_FOUND


async def test_health_over_tls(tls: Tls) -> None:
    for cert in (f"tables/{tls.tables[0]}", "roles/display-sign-1"):
        health = health_pb2_grpc.HealthStub(tls.channel(cert))
        for service in ("", "jackpot.v1.TableService"):
            resp = await health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert resp.status == health_pb2.HealthCheckResponse.SERVING


async def test_plain_text_off_loopback_is_refused_at_start(isolated: Isolated, tmp_path: Path) -> None:
    settings = Settings(redis_url=isolated.redis_url, postgres_dsn=isolated.dsn, listen=f"0.0.0.0:{free_port()}",
                        metrics_port=0, workers=0)
    with pytest.raises(ListenRefused, match="plain text is allowed on loopback only"):
        await serve(settings)
    # the command says so and exits 2, before touching a store
    env = {**os.environ, "JACKPOTD_REDIS_URL": isolated.redis_url, "JACKPOTD_POSTGRES_DSN": isolated.dsn}
    run = subprocess.run([sys.executable, "-m", "jackpotd.cli", "serve", "--listen", "0.0.0.0:50999",
                          "--metrics-port", "0"], capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("jackpotd: listen='0.0.0.0:50999': plain text is allowed on loopback only"), \
        run.stderr
