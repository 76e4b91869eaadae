"""The naive twin's gRPC front: jackpotd's TableService protos, its interceptor and guard (bearer tokens), and its
pure domain, over naive/store.py's one-transaction-per-call storage. Started in its own process by bench_naive.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg
import grpc

from jackpotd.api.gen.jackpot.v1 import common_pb2, table_pb2, table_pb2_grpc
from jackpotd.api.interceptor import CallInterceptor
from jackpotd.api.servicers import caller_key, no_hand_of
from jackpotd.app import run_loop
from jackpotd.auth.guard import Guard
from jackpotd.domain.contributions import Contribution
from jackpotd.domain.errors import NotFound
from jackpotd.domain.ids import require_id
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.money import floor_cents
from jackpotd.domain.pricing import Hit, RoundPrice
from jackpotd.domain.rounds import SeatHand, Wager

from . import store

Ctx = grpc.aio.ServicerContext[Any, Any]


def call_of(request: Any) -> store.Call:
    """The caller, the request id, and the digest of the rest of the request (a retry must say the same)."""
    rest = type(request)()
    rest.CopyFrom(request)
    rest.request_id = ""
    return store.Call(caller_key(), require_id("request_id", request.request_id),
                      rest.SerializeToString(deterministic=True))


def pools_of(link: LinkConfig, balances: Mapping[str, int]) -> list[common_pb2.PoolAmount]:
    """The visible pools as signs show them: floored cents, reset value, exact µ¢."""
    return [common_pb2.PoolAmount(pool=p.name, amount_cents=floor_cents(balances[p.name]), reset_cents=p.reset_cents,
                                  balance_ucents=balances[p.name]) for p in link.pools if p.visible]


class NaiveTableServicer(table_pb2_grpc.TableServiceServicer):
    """CommitWagers and SettleRound, each one PostgreSQL transaction on a connection of the pool (VoidRound and
    WatchMeter: UNIMPLEMENTED, the base class's answer)."""

    def __init__(self, pg: asyncpg.Pool, links: Mapping[str, LinkConfig]) -> None:
        self.pg = pg
        self.links = links

    def _link(self, table_id: str) -> LinkConfig:
        link = self.links.get(table_id)
        if link is None:
            raise NotFound("table_id", table_id, "no such table")
        return link

    async def CommitWagers(self, request: table_pb2.CommitWagersRequest,  # noqa: N802 - gRPC's method name
                           context: Ctx) -> table_pb2.CommitWagersResponse:
        link = self._link(request.table_id)
        wagers = [Wager(w.seat, w.amount_cents, w.ante_placed) for w in request.wagers]

        def reply_of(c: Contribution, moved: store.Moved) -> bytes:
            response = table_pb2.CommitWagersResponse(sequence=moved.seq, link_id=moved.link_id,
                                                      pools=pools_of(link, moved.balances))
            for s in c.seats:
                response.accepted.add(seat=s.seat, amount_cents=s.wager_cents, contributed_ucents=s.to_pools_uc,
                                      overflow_ucents=s.overflow_uc)
            return response.SerializeToString()

        async with self.pg.acquire() as conn:
            data = await store.commit(conn, link, call_of(request), request.table_id, request.round_id, wagers,
                                      reply_of)
        return table_pb2.CommitWagersResponse.FromString(data)

    async def SettleRound(self, request: table_pb2.SettleRoundRequest,  # noqa: N802 - gRPC's method name
                          context: Ctx) -> table_pb2.SettleRoundResponse:
        link = self._link(request.table_id)
        hands = [SeatHand(x.seat, tuple(x.cards), no_hand_of(i, x.no_hand)) for i, x in enumerate(request.hands)]

        def reply_of(price: RoundPrice, hits: Sequence[Hit], wagered: Sequence[int], moved: store.Moved) -> bytes:
            categories = {h.seat: h.category for h in hits}
            return table_pb2.SettleRoundResponse(
                payouts=[table_pb2.Payout(seat=p.seat, hand=p.category, amount_cents=p.amount_cents, pool=p.pool,
                                          funded_by_operator_cents=p.funded_by_operator_cents,
                                          hit_id=f"{moved.link_id}:{moved.seq}:{p.seat}", status="PAID",
                                          pool_before_ucents=p.pool_before_uc, rule=p.rule) for p in price.payouts],
                resets=[table_pb2.PoolReset(pool=r.pool, from_reserve_cents=r.from_reserve_cents,
                                            from_operator_cents=r.from_operator_cents) for r in price.resets],
                seats=[table_pb2.SeatResult(seat=s, hand=categories.get(s, "")) for s in sorted(wagered)],
                pools=pools_of(link, moved.balances), sequence=moved.seq).SerializeToString()

        async with self.pg.acquire() as conn:
            data = await store.settle(conn, link, call_of(request), request.table_id, request.round_id, hands,
                                      list(request.dealer_cards), list(request.board_cards), reply_of)
        return table_pb2.SettleRoundResponse.FromString(data)


async def start(port: int, dsn: str, auth_key: bytes, connections: int) -> tuple[grpc.aio.Server, asyncpg.Pool]:
    """TableService started on 127.0.0.1:`port`, tables proving themselves with bearer tokens of `auth_key`."""
    pg = await asyncpg.create_pool(dsn, min_size=connections, max_size=connections)
    async with pg.acquire() as conn:
        links = await store.load_links(conn)
    server = grpc.aio.server(interceptors=[CallInterceptor(Guard(auth_key, tables_by_token=True))],
                             options=[("grpc.max_concurrent_streams", 1000)])
    table_pb2_grpc.add_TableServiceServicer_to_server(NaiveTableServicer(pg, links), server)  # type: ignore[abstract]
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, pg


async def serve_async(port: int, dsn: str, auth_key: bytes, connections: int) -> None:
    """Serve until the process is stopped."""
    server, _ = await start(port, dsn, auth_key, connections)
    await server.wait_for_termination()


def serve(port: int, dsn: str, auth_key: bytes, connections: int) -> None:
    """The process's entry point: jackpotd's own event loop (uvloop where jackpotd uses it), for a fair twin."""
    run_loop(serve_async(port, dsn, auth_key, connections))


async def setup(dsn: str, config: LinkConfig) -> None:
    """The naive schema and the bench's link, on a database of its own."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(store.SCHEMA)
        await store.create_link(conn, config)
    finally:
        await conn.close()
