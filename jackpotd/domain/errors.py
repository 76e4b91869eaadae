"""Domain errors: each names the field and the value at fault, so the API can say exactly what is wrong."""

from __future__ import annotations


class DomainError(Exception):
    """Base of every rule violation; `field` and `value` name what was wrong."""

    def __init__(self, field: str, value: object, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"{field}={value!r}: {reason}")


class InvalidInput(DomainError):
    """Malformed input: a bad card, seat, amount, rate or id (gRPC INVALID_ARGUMENT)."""


class NotFound(DomainError):
    """An unknown table, link, round or hit (gRPC NOT_FOUND)."""


class FailedPrecondition(DomainError):
    """Valid input that the current state does not allow (gRPC FAILED_PRECONDITION)."""


class Conflict(DomainError):
    """A request id reused with different content (gRPC ALREADY_EXISTS)."""
