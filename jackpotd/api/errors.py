"""Every error as its gRPC status (API.md, Errors), and request bytes that do not parse as INVALID_ARGUMENT
rather than gRPC's UNKNOWN."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import grpc

from ..auth.errors import PermissionDenied, Unauthenticated
from ..domain.errors import Conflict, FailedPrecondition, InvalidInput, NotFound
from ..service.errors import Unavailable

log = logging.getLogger("jackpotd.api")

_STATUS: list[tuple[type[BaseException], grpc.StatusCode]] = [
    (InvalidInput, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (Conflict, grpc.StatusCode.ALREADY_EXISTS),
    (Unavailable, grpc.StatusCode.UNAVAILABLE),  # adapters raise it for every store failure
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
]


def status_of(error: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status and message for an error; unknown errors are INTERNAL and logged."""
    for kind, code in _STATUS:
        if isinstance(error, kind):
            return code, str(error)[:MESSAGE_MAX]
    log.exception("internal error", exc_info=error)
    return grpc.StatusCode.INTERNAL, f"internal error: {type(error).__name__}"


MESSAGE_MAX = 2000  # a status message travels in a header: far below gRPC's 8 KB metadata limit


class Malformed:
    """Request bytes that do not parse as the method's message (the handler sees this instead)."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def tolerant(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """A deserializer that hands a Malformed to the handler instead of failing (gRPC would say UNKNOWN)."""
    if deserialize is None:
        return None

    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as e:
            return Malformed(e)

    return parse


def require_parsed(request: Any) -> None:
    """INVALID_ARGUMENT for request bytes that did not parse."""
    if isinstance(request, Malformed):
        raise InvalidInput("request", f"<{type(request.error).__name__}>",
                           f"the message bytes do not parse (strings must be valid UTF-8): {request.error}")
