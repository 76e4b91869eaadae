"""The controller library: commit, settle and void through a durable outbox, with retries and the meter."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import tenacity

from jackpotd.api.gen.jackpot.v1 import table_pb2, table_pb2_grpc
from jackpotd.auth.client import bearer
from jackpotd.backoff import Backoff, exponential

from .outbox import Outbox
from .packed import COLUMNS_FROM, hand_columns, wager_columns

log = logging.getLogger("jackpot_table")
METER_WAITS = exponential(0.2, 2.0)  # before reopening the meter stream, after failures in a row: 0.2, 0.4 ... 2 s
# CANCELLED reaches a client when the server shuts down mid-call: the outcome is unknown, so ask again with
# the same request id, which answers the first outcome or applies it now, never twice.
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                       grpc.StatusCode.CANCELLED})
# The meter's answers that no wait mends: the table unknown, the credential refused, the request malformed. Any
# other failure (a dropped stream, a restart) may pass, so a controller waits on through it.
REFUSALS = frozenset({"NOT_FOUND", "UNAUTHENTICATED", "PERMISSION_DENIED", "INVALID_ARGUMENT", "FAILED_PRECONDITION",
                      "UNIMPLEMENTED"})
R = TypeVar("R")


def _retryable(error: BaseException) -> bool:
    return isinstance(error, grpc.aio.AioRpcError) and error.code() in RETRYABLE


class JackpotDisabled(RuntimeError):
    """The service has been silent too long (RULES.md §8): take no jackpot wagers."""


@dataclass
class ControllerConfig:
    """Where the service is and how patient to be. `credentials` carries mTLS in production (the table's
    certificate names it); `token` is a bearer token, accepted for tables on a loopback development server."""

    target: str
    table_id: str
    outbox_path: str
    silence_limit: float = 10.0  # §8: stop taking jackpot wagers after this much silence
    call_timeout: float = 5.0
    retry_for: float = 120.0  # then give up and raise; the outbox keeps the id for resume()
    credentials: grpc.ChannelCredentials | None = None  # grpc.ssl_channel_credentials(ca, key, cert)
    token: str | None = None
    options: Sequence[tuple[str, Any]] = field(default_factory=lambda: [
        ("grpc.keepalive_time_ms", 5000), ("grpc.keepalive_timeout_ms", 2000),
        ("grpc.keepalive_permit_without_calls", 1), ("grpc.initial_reconnect_backoff_ms", 200),
        ("grpc.max_reconnect_backoff_ms", 2000)])


class TableController:
    """One table's link to jackpotd."""

    def __init__(self, config: ControllerConfig) -> None:
        self.config = config
        self.outbox = Outbox(config.outbox_path)
        self.channel: grpc.aio.Channel | None = None
        self.stub: table_pb2_grpc.TableServiceAsyncStub | None = None
        self.last_contact = 0.0
        self.enabled_by_service = True
        self.pools: dict[str, int] = {}
        self.link_id = ""
        self.meter_error: tuple[str, str] | None = None  # the meter stream's last failure: (code name, details)
        self._meter: asyncio.Task[None] | None = None

    async def start(self) -> TableController:
        interceptors = bearer(self.config.token) if self.config.token else []
        if self.config.credentials is not None:
            self.channel = grpc.aio.secure_channel(self.config.target, self.config.credentials, self.config.options,
                                                   interceptors=interceptors)
        else:
            self.channel = grpc.aio.insecure_channel(self.config.target, self.config.options,
                                                     interceptors=interceptors)
        self.stub = table_pb2_grpc.TableServiceStub(self.channel)  # typed as the async stub
        self._meter = asyncio.create_task(self._watch_meter(), name=f"meter-{self.config.table_id}")
        await self.wait_for_service(self.config.silence_limit)
        return self

    async def wait_for_service(self, timeout: float) -> bool:
        """Wait until the service has answered, at most `timeout` seconds: jackpot wagers open, the table suspended,
        or the meter refused for good (not retryable: no such table, no credential); whether wagers are open."""
        deadline = time.monotonic() + timeout
        while not (self.jackpot_enabled or self.suspended or self.refused) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return self.jackpot_enabled

    async def close(self) -> None:
        if self._meter:
            self._meter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._meter
        if self.channel:
            await self.channel.close(None)
        self.outbox.close()

    @property
    def jackpot_enabled(self) -> bool:
        """True while the service has been heard within the silence limit and has not suspended the table."""
        return self.enabled_by_service and time.monotonic() - self.last_contact < self.config.silence_limit

    @property
    def suspended(self) -> bool:
        """True when the service's last word is that this table's jackpot wagers are suspended (NSW 14.13)."""
        return self.last_contact > 0 and not self.enabled_by_service

    @property
    def refused(self) -> bool:
        """True when the meter stream's last failure is one a retry does not mend (NOT_FOUND, UNAUTHENTICATED ...)."""
        return self.meter_error is not None and self.meter_error[0] in REFUSALS

    # ---- operations ----------------------------------------------------------------------------

    async def commit(self, round_id: str, wagers: Sequence[tuple[int, int]]) -> table_pb2.CommitWagersResponse:
        """At "no more bets": the round's jackpot wagers as (seat, cents); every seat has an ante. A round of more
        than COLUMNS_FROM seats goes packed, and so does its answer: read it with `packed.accepted_of`."""
        request = table_pb2.CommitWagersRequest(table_id=self.config.table_id, round_id=round_id)
        if len(wagers) > COLUMNS_FROM:
            request.wager_columns.CopyFrom(wager_columns(wagers))
        else:
            request.wagers.extend(table_pb2.Wager(seat=s, amount_cents=c, ante_placed=True) for s, c in wagers)
        if not self.jackpot_enabled and not self._is_saved("commit", round_id):
            raise JackpotDisabled(f"table {self.config.table_id}: no word from the service for "
                                  f"{self.config.silence_limit:g} s; jackpot wagers are off")
        return await self._send("commit", round_id, request, table_pb2.CommitWagersRequest,
                                lambda r: self._stub().CommitWagers(r, timeout=self.config.call_timeout))

    async def settle(self, round_id: str, hands: Mapping[int, Sequence[str]], dealer_cards: Sequence[str] = (),
                     board_cards: Sequence[str] = (),
                     no_hands: Mapping[int, str] | None = None) -> table_pb2.SettleRoundResponse:
        """Settle the round: `hands` the cards of each seat that has them (seats without a jackpot wager may be
        sent: they are checked, never paid); `no_hands` every wagered seat without a hand and why (FOLDED,
        MUCKED or DEAD). The service refuses a settle that leaves out a seat that wagered. A round of more than
        COLUMNS_FROM seats goes packed, and so does its answer: read it with `packed.seats_of`."""
        no_hands = no_hands or {}
        request = table_pb2.SettleRoundRequest(table_id=self.config.table_id, round_id=round_id,
                                               dealer_cards=list(dealer_cards), board_cards=list(board_cards))
        if len(hands) + len(no_hands) > COLUMNS_FROM:
            request.hand_columns.CopyFrom(hand_columns(hands, no_hands))
        else:
            seats = [table_pb2.SeatHand(seat=s, cards=list(c)) for s, c in hands.items()]
            seats += [table_pb2.SeatHand(seat=s, no_hand=table_pb2.NoHand.Value(why)) for s, why in no_hands.items()]
            request.hands.extend(sorted(seats, key=lambda h: h.seat))
        return await self._send("settle", round_id, request, table_pb2.SettleRoundRequest,
                                lambda r: self._stub().SettleRound(r, timeout=self.config.call_timeout))

    async def void(self, round_id: str, reason: str, seats: Sequence[int] = ()) -> table_pb2.VoidRoundResponse:
        """Void the round (misdeal, device failure) or, with seats, those hands only (absent player)."""
        kind = "void" if not seats else "void:" + ",".join(map(str, sorted(seats)))
        request = table_pb2.VoidRoundRequest(table_id=self.config.table_id, round_id=round_id, reason=reason,
                                             seats=list(seats))
        return await self._send(kind, round_id, request, table_pb2.VoidRoundRequest,
                                lambda r: self._stub().VoidRound(r, timeout=self.config.call_timeout))

    async def resume(self) -> int:
        """After a restart: send again every saved request that never got its answer, with its own id."""
        parsers: dict[str, tuple[Any, Callable[[Any], Awaitable[Any]]]] = {
            "commit": (table_pb2.CommitWagersRequest, lambda r: self._stub().CommitWagers(
                r, timeout=self.config.call_timeout)),
            "settle": (table_pb2.SettleRoundRequest, lambda r: self._stub().SettleRound(
                r, timeout=self.config.call_timeout)),
            "void": (table_pb2.VoidRoundRequest, lambda r: self._stub().VoidRound(
                r, timeout=self.config.call_timeout))}
        count = 0
        for p in self.outbox.pending(self.config.table_id):
            message_type, call = parsers[p.kind.split(":")[0]]
            request = message_type.FromString(p.request)
            request.request_id = p.request_id
            response = await self._retry(call, request)
            self.outbox.answered(p.request_id, response.SerializeToString())
            count += 1
        return count

    # ---- plumbing --------------------------------------------------------------------------------

    def _stub(self) -> table_pb2_grpc.TableServiceAsyncStub:
        assert self.stub is not None, "call start() first"
        return self.stub

    def _is_saved(self, kind: str, round_id: str) -> bool:
        row = self.outbox.db.execute("SELECT 1 FROM outbox WHERE kind = ? AND table_id = ? AND round_id = ?",
                                     (kind, self.config.table_id, round_id)).fetchone()
        return row is not None

    async def _send(self, kind: str, round_id: str, request: Any, message_type: Any,
                    call: Callable[[Any], Awaitable[R]]) -> R:
        """Save the id first, then send; a request saved before a restart is sent as it was first meant."""
        request_id, saved = self.outbox.request_id(kind, self.config.table_id, round_id,
                                                   request.SerializeToString(deterministic=True))
        first = message_type.FromString(saved)
        first.request_id = request_id
        response = await self._retry(call, first)
        self.outbox.answered(request_id, response.SerializeToString())  # type: ignore[attr-defined]
        return response

    async def _retry(self, call: Callable[[Any], Awaitable[R]], request: Any) -> R:
        """Retry UNAVAILABLE, DEADLINE_EXCEEDED and CANCELLED with the same request (and id): jittered
        exponential backoff (up to 0.1, 0.2, 0.4 ... s, at most 2 s), no retry that would start after
        `retry_for` seconds; then the last error is raised."""

        def announce(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            code = error.code().name if isinstance(error, grpc.aio.AioRpcError) else repr(error)
            log.info("table %s: %s, retrying %s in %.1fs", self.config.table_id, code, request.request_id,
                     state.upcoming_sleep)

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception(_retryable), reraise=True, before_sleep=announce,
            wait=tenacity.wait_random_exponential(multiplier=0.1, max=2.0, min=0.05),
            stop=tenacity.stop_before_delay(self.config.retry_for))
        async for attempt in retrying:
            with attempt:
                response = await call(request)
        self.last_contact = time.monotonic()
        return response

    async def _watch_meter(self) -> None:
        """The meter stream: pool amounts, jackpot_enabled, and proof that the service is there.

        Not tenacity's retry loop but jackpotd.backoff's: the stream is reconnected forever, also when it ends
        without an error, and its backoff starts again after every update received."""
        backoff = Backoff(METER_WAITS)
        while True:
            try:
                stream = self._stub().WatchMeter(table_pb2.WatchMeterRequest(table_id=self.config.table_id))
                async for update in stream:
                    self.last_contact = time.monotonic()
                    self.meter_error = None
                    self.enabled_by_service = update.jackpot_enabled
                    self.link_id = update.link_id
                    self.pools = {p.pool: p.amount_cents for p in update.pools}
                    backoff.reset()
            except asyncio.CancelledError:
                raise
            except grpc.aio.AioRpcError as e:
                self.meter_error = (e.code().name, e.details() or "")
                log.debug("table %s: meter stream ended (%s); reconnecting", self.config.table_id, e.code().name)
            await backoff.sleep()
