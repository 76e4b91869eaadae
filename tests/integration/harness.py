"""An in-process jackpotd on the test session's servers, with stubs and helpers to drive it."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import asyncpg
import grpc
import redis.asyncio as aioredis

from jackpotd.api.gen.jackpot.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    display_pb2,
    display_pb2_grpc,
    report_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from jackpotd.auth.client import TableTokens, open_channel
from jackpotd.auth.identity import Role
from jackpotd.auth.tokens import issue
from jackpotd.store import keys

from ..conftest import AUTH_KEY

T = TypeVar("T")


ADMIN = "test-admin"  # who the harness's admin calls are from: the audit trail's actor


# Reconnecting as the table controller does (jackpot_table.controller): a restarted service is reached again within
# 2 s, not after gRPC's default backoff (up to 120 s).
RECONNECT = [("grpc.initial_reconnect_backoff_ms", 200), ("grpc.max_reconnect_backoff_ms", 2000)]


def authorized_channel(target: str, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """A channel whose table calls carry a token of the request's table and other calls an admin token."""
    return open_channel(target, interceptors=TableTokens(AUTH_KEY, Role.ADMIN, ADMIN).interceptors(),
                        options=options)


def token(role: Role, name: str) -> str:
    """A bearer token of the test session's key (for a controller, or a call with explicit metadata)."""
    return issue(AUTH_KEY, role, name)


def rid() -> str:
    return str(uuid.uuid4())


AUDIT = admin_pb2.Audit(actor="test", reason="test", approval_ref="TEST-1")


@dataclass
class Client:
    """Stubs of the three services plus the ledger connection for checks."""

    channel: grpc.aio.Channel
    table: table_pb2_grpc.TableServiceStub
    display: display_pb2_grpc.DisplayServiceStub
    admin: admin_pb2_grpc.AdminServiceStub
    report: report_pb2_grpc.ReportServiceStub
    pg: asyncpg.Pool
    redis: Any  # redis.asyncio.Redis with decoded replies
    # the seats each round committed through this client: settle() states the ones given no cards as FOLDED
    wagered: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    @staticmethod
    async def connect(target: str, dsn: str, redis_url: str) -> Client:
        channel = authorized_channel(target, RECONNECT)
        pg = await asyncpg.create_pool(dsn, min_size=1, max_size=4)
        assert pg is not None
        return Client(channel, table_pb2_grpc.TableServiceStub(channel), display_pb2_grpc.DisplayServiceStub(channel),
                      admin_pb2_grpc.AdminServiceStub(channel), report_pb2_grpc.ReportServiceStub(channel), pg,
                      aioredis.Redis.from_url(redis_url, decode_responses=True))

    def method(self, name: str) -> Callable[[Any], Awaitable[Any]]:
        """The stub method of that name, whichever service has it."""
        for stub in (self.table, self.display, self.admin, self.report):
            if hasattr(stub, name):
                fn: Callable[[Any], Awaitable[Any]] = getattr(stub, name)
                return fn
        raise AssertionError(name)

    async def close(self) -> None:
        await self.channel.close()
        await self.pg.close()
        await self.redis.aclose()

    async def create_link(self, link_id: str, mode: str = "SPLIT", *, rates: dict[str, int] | None = None,
                          retained: int = 700_000, resets: dict[str, int] | None = None,
                          caps: dict[str, int] | None = None, wager: int = 100, games: Sequence[str] = (),
                          threshold: int = 0, dual: int = 0) -> None:
        if rates is None:
            rates = ({"MAJOR": 200_000, "MINOR": 75_000, "RESERVE": 25_000} if mode == "SPLIT"
                     else {"JACKPOT": 275_000, "RESERVE": 25_000})
        pools = ["MAJOR", "MINOR", "RESERVE"] if mode == "SPLIT" else ["JACKPOT", "RESERVE"]
        resets = resets or {}
        caps = caps or {}
        await self.admin.CreateLink(admin_pb2.CreateLinkRequest(
            request_id=rid(), link_id=link_id, mode=mode, wager_amount_cents=wager,
            pools=[admin_pb2.PoolConfig(pool=p, reset_cents=resets.get(p, 0), cap_cents=caps.get(p))
                   if p in caps else admin_pb2.PoolConfig(pool=p, reset_cents=resets.get(p, 0)) for p in pools],
            rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool=k, ppm=v) for k, v in rates.items()],
                                  retained_ppm=retained),
            games=list(games), verification_threshold_cents=threshold, dual_approval_threshold_cents=dual,
            audit=AUDIT))

    async def register(self, table_id: str, link_id: str, seats: int = 7, game: str = "caribbean-stud") -> None:
        await self.admin.RegisterTable(admin_pb2.RegisterTableRequest(
            request_id=rid(), table_id=table_id, link_id=link_id, game=game, seats=seats, audit=AUDIT))

    async def fund(self, link_id: str, pool: str, cents: int) -> admin_pb2.FundPoolResponse:
        resp: admin_pb2.FundPoolResponse = await self.admin.FundPool(admin_pb2.FundPoolRequest(
            request_id=rid(), link_id=link_id, pool=pool, amount_cents=cents, audit=AUDIT))
        return resp

    async def commit(self, table_id: str, round_id: str, seats: Sequence[int], amount: int = 100,
                     request_id: str | None = None) -> table_pb2.CommitWagersResponse:
        resp: table_pb2.CommitWagersResponse = await self.table.CommitWagers(table_pb2.CommitWagersRequest(
            request_id=request_id or rid(), table_id=table_id, round_id=round_id,
            wagers=[table_pb2.Wager(seat=s, amount_cents=amount, ante_placed=True) for s in seats]))
        self.wagered[table_id, round_id] = list(seats)
        return resp

    async def settle(self, table_id: str, round_id: str, hands: dict[int, Sequence[str]],
                     request_id: str | None = None, board: Sequence[str] = (),
                     others: str | None = "FOLDED") -> table_pb2.SettleRoundResponse:
        """Settle with these hands; every other seat this client committed in the round is stated as `others`
        (FOLDED by default; None sends only `hands`, as a controller that forgot a seat would)."""
        sent = [table_pb2.SeatHand(seat=s, cards=list(c)) for s, c in hands.items()]
        if others is not None:
            sent += [table_pb2.SeatHand(seat=s, no_hand=table_pb2.NoHand.Value(others))
                     for s in self.wagered.get((table_id, round_id), []) if s not in hands]
        resp: table_pb2.SettleRoundResponse = await self.table.SettleRound(table_pb2.SettleRoundRequest(
            request_id=request_id or rid(), table_id=table_id, round_id=round_id, hands=sent,
            board_cards=list(board)))
        return resp

    async def pools(self, link_id: str) -> dict[str, Any]:
        resp = await self.display.GetPools(display_pb2.GetPoolsRequest(link_id=link_id))
        return {p.pool: p for p in resp.pools} | {"_seq": resp.sequence}

    async def ledger_pools(self, link_id: str) -> dict[str, int]:
        rows = await self.pg.fetch("SELECT account, balance_uc FROM account_balances WHERE link_id = $1", link_id)
        return {r["account"]: int(r["balance_uc"]) for r in rows}

    async def entry(self, link_id: str, seq: int) -> dict[str, Any]:
        """The ledger entry of the link at `seq`, as the service wrote it (its `kind`, `audit`, `config`, ...)."""
        text = await self.pg.fetchval("SELECT entry::text FROM entries WHERE link_id = $1 AND seq = $2", link_id, seq)
        assert text is not None, f"no ledger entry {seq} on link {link_id}"
        entry: dict[str, Any] = json.loads(text)
        return entry


@dataclass
class Commits:
    """What a test's tables were told under a disruption: each request id's sequence, and how many tries were
    refused as UNAVAILABLE (proof the disruption reached them)."""

    acknowledged: dict[str, int] = field(default_factory=dict)
    refused: int = 0

    async def play(self, client: Client, table: str, rounds: int, pace: float = 0.0, timeout: float = 60.0) -> None:
        """Commit seats 1 and 2 at `table` for rounds r0.., each retried with its request id while UNAVAILABLE (the
        API's "safe to retry") until answered, for at most `timeout` seconds a round; any other status, or a round
        still refused after that, fails the test. `pace`: seconds between rounds (it paces the load)."""
        for n in range(rounds):
            request_id = rid()
            deadline = time.monotonic() + timeout
            while True:
                try:
                    done = await client.commit(table, f"r{n}", [1, 2], request_id=request_id)
                    self.acknowledged[request_id] = done.sequence
                    break
                except grpc.aio.AioRpcError as e:
                    assert e.code() == grpc.StatusCode.UNAVAILABLE, e.details()
                    self.refused += 1
                    if time.monotonic() > deadline:
                        raise AssertionError(f"the commit of {table}/r{n} ({request_id}): still UNAVAILABLE after "
                                             f"{timeout} s ({e.details()})") from e
                    await asyncio.sleep(0.2)
            if pace:
                await asyncio.sleep(pace)


async def settle_all(tasks: Sequence[asyncio.Task[Any]]) -> list[Any]:
    return list(await asyncio.gather(*tasks))


async def eventually(check: Callable[[], Awaitable[T | None] | T | None], timeout: float, what: str,
                     interval: float = 0.05) -> T:
    """The first truthy result of `check` (awaited if it is awaitable; errors count as not yet), or fail
    after `timeout` seconds. Every wait in the tests goes through here: none waits without a bound, and
    each says what it waited for."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return cast(T, result)
            last = result
        except Exception as e:
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s (last: {last!r})")
        await asyncio.sleep(interval)


async def while_unavailable(call: Callable[[], Awaitable[T]], timeout: float, what: str) -> T:
    """Call until it is no longer UNAVAILABLE (the API's "safe to retry"), at most `timeout` seconds; any
    other error is raised at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await call()
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: still UNAVAILABLE after {timeout} s ({e.details()})") from e
        await asyncio.sleep(0.1)


async def next_matching(stream: Any, predicate: Callable[[Any], bool], timeout: float, what: str) -> Any:
    """Read a gRPC response stream until a message satisfies `predicate`, at most `timeout` seconds in all."""
    deadline = time.monotonic() + timeout
    seen: list[Any] = []
    while True:
        try:
            message = await asyncio.wait_for(stream.read(), max(deadline - time.monotonic(), 0.001))
        except TimeoutError:
            last = " ".join(str(seen[-1]).split()) if seen else None
            raise AssertionError(f"{what}: not within {timeout} s (read {len(seen)}, last: {last})") from None
        assert message is not grpc.aio.EOF, f"{what}: the stream ended (read {len(seen)})"
        if predicate(message):
            return message
        seen.append(message)


async def stream_error(stream: Any, timeout: float, what: str) -> grpc.aio.AioRpcError:
    """The status a gRPC response stream ends with, reading (and dropping) its messages meanwhile, at most
    `timeout` seconds in all; a stream that ends OK, or is still open then, fails the test."""
    deadline = time.monotonic() + timeout
    read = 0
    while True:
        try:
            message = await asyncio.wait_for(stream.read(), max(deadline - time.monotonic(), 0.001))
        except grpc.aio.AioRpcError as e:
            return e
        except TimeoutError:
            raise AssertionError(f"{what}: the stream still open after {timeout} s (read {read})") from None
        assert message is not grpc.aio.EOF, f"{what}: the stream ended without an error (read {read})"
        read += 1


def online_tables(update: Any) -> set[str]:
    """The tables a WatchPools update shows online."""
    return {t.table_id for t in update.tables if t.online}


async def set_online(client: Client, table: str, online: bool) -> None:
    """Show the table online (or not) as a controller's meter stream would: its presence key in Redis."""
    if online:
        await client.redis.set(keys.online(table), "1")
    else:
        await client.redis.delete(keys.online(table))


class Pulse:
    """Keeps a link's WatchPools streams talking while its ledger is frozen.

    A frozen ledger commits nothing, so a stream has only presence to send, and a stream quiet for 2 s sends a
    heartbeat snapshot that waits for the ledger, silencing the stream until it thaws. The pulse flips a table's
    presence each time its own stream (the witness) shows the last flip; the link's feed, which looks at presence
    about once a second, then sends every stream of the link an update at each look. A test can thus wait for a
    later update (a marker) instead of sleeping. The link's feed offers presence once it has read an entry, so
    commit something on the link after `start`."""

    def __init__(self, client: Client, link: str, table: str) -> None:
        self.client, self.link, self.table = client, link, table
        self.flips = 0  # presence changes made
        self.shown = 0  # of those, how many the witness stream has shown
        self._online = False  # the presence last set
        self._stream: Any = None
        self._task: asyncio.Task[None] | None = None
        self._flipping = asyncio.Lock()

    async def start(self) -> Pulse:
        self._stream = self.client.display.WatchPools(display_pb2.WatchPoolsRequest(link_id=self.link))
        self._task = asyncio.create_task(self._run(), name=f"pulse-{self.table}")
        return self

    async def _run(self) -> None:
        async for update in self._stream:
            shows = self.table in online_tables(update)
            if self.flips == 0:  # the snapshot: the presence as it is
                self._online = shows
            elif shows != self._online:  # sent before the last flip was seen
                continue
            self.shown = self.flips
            async with self._flipping:
                self.flips += 1
                await set_online(self.client, self.table, not self._online)
                self._online = not self._online

    async def beating(self, timeout: float) -> None:
        """Return once the witness has shown a flip this pulse made (the feed offers presence), at most
        `timeout` s."""
        await eventually(lambda: self._alive() and self.shown >= 1, timeout,
                         f"the pulse on {self.table}: a presence flip shown on link {self.link}")

    def _alive(self) -> bool:
        if self._task is not None and self._task.done():
            self._task.result()
            raise AssertionError("the pulse's stream ended")
        return True

    async def stop(self) -> None:
        if self._task is not None:
            async with self._flipping:  # never mid-flip: the presence set is the one recorded
                self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self._stream is not None:
            self._stream.cancel()
