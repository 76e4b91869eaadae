"""Redis failures as the service's errors, in one place: a Redis that cannot be reached or cannot take a
command now is Unavailable (a link whose state Redis forgot, took back or had fenced is refused by the scripts:
lua_codec.refusal)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import redis.exceptions

from ...service.deadlines import bounded
from ...service.errors import Unavailable
from .scripts import reply_error

P = ParamSpec("P")
R = TypeVar("R")

# What a Redis that cannot be reached, or cannot take writes now, raises through redis-py or our pipeline.
# A cluster adds its own: no primary for a slot (failing over), a slot map that moved, a slot nobody serves.
DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, redis.exceptions.ReadOnlyError,
        redis.exceptions.BusyLoadingError, redis.exceptions.ClusterError, redis.exceptions.AskError,
        redis.exceptions.TryAgainError, redis.exceptions.RedisClusterException, OSError, ConnectionError,
        TimeoutError)


class WrongTopology(Exception):
    """The Redis is not what the settings say: a cluster node without redis_cluster, or redis_cluster set for a
    server that is no cluster's. A configuration error: the service must not start."""


def unavailable(error: BaseException) -> Unavailable:
    """The Unavailable a Redis failure is reported as: safe to retry with the same id."""
    return Unavailable(f"Redis is unavailable: {error}; retry with the same request_id")


def translated(method: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Redis's own failures, raised as the service's Unavailable (the one place they are translated); a wait cut
    short by the caller's deadline is answered as Redis's (service/deadlines.py)."""

    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await bounded(method(*args, **kwargs), "Redis")
        except Unavailable:
            raise
        except DOWN as e:
            raise unavailable(e) from e
        except redis.exceptions.ResponseError as e:  # BUSY, MASTERDOWN, TRYAGAIN...: will pass
            raise passing(e) from e

    return call


def passing(error: redis.exceptions.ResponseError) -> Exception:
    """A reply error as Unavailable when Redis will take the command later, else unchanged (a bug)."""
    as_reply = reply_error(str(error))
    return as_reply if isinstance(as_reply, Unavailable) else error

