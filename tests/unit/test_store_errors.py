"""Store failures reach the service as its own errors: Redis replies that will pass and PostgreSQL restarts
are Unavailable, a Redis bug stays what it is. No servers: the translating wrappers are called directly."""

from __future__ import annotations

import asyncpg
import pytest
import redis.exceptions

from jackpotd.service.errors import Unavailable
from jackpotd.store.ledger import DRIVER_ERRORS
from jackpotd.store.redis.errors import translated


@pytest.mark.parametrize("error", [
    redis.exceptions.ConnectionError("refused"), redis.exceptions.TimeoutError("slow"),
    redis.exceptions.ReadOnlyError("READONLY You can't write against a read only replica."),
    redis.exceptions.ResponseError("MASTERDOWN Link with MASTER is down"),
    redis.exceptions.ResponseError("BUSY Redis is busy running a script"),
    redis.exceptions.ResponseError("TRYAGAIN Multiple keys request during rehashing of slot"),
    OSError("broken pipe")])
async def test_redis_failures_that_will_pass_are_unavailable(error: Exception) -> None:
    @translated
    async def call() -> None:
        raise error

    with pytest.raises(Unavailable, match="retry"):
        await call()


async def test_a_redis_reply_error_that_is_a_bug_stays_one() -> None:
    @translated
    async def call() -> None:
        raise redis.exceptions.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value")

    with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
        await call()


@pytest.mark.parametrize("kind", [asyncpg.exceptions.AdminShutdownError, asyncpg.exceptions.CannotConnectNowError,
                                  asyncpg.exceptions.QueryCanceledError, asyncpg.exceptions.TooManyConnectionsError,
                                  asyncpg.exceptions.ConnectionDoesNotExistError,
                                  asyncpg.exceptions.InternalClientError])  # a connection lost mid-operation
def test_postgresql_restarts_and_timeouts_are_driver_failures(kind: type[Exception]) -> None:
    assert issubclass(kind, DRIVER_ERRORS)


def test_a_refused_statement_is_not_a_driver_failure() -> None:
    assert not issubclass(asyncpg.exceptions.UniqueViolationError, DRIVER_ERRORS)
