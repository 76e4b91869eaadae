"""Domain errors: each names the field and the value at fault, so the API can say exactly what is wrong."""

from __future__ import annotations

QUOTE_MAX = 100  # a message quotes at most this much of a caller's value: a 10 KB id must not make a 10 KB status


def shown(value: object) -> str:
    """A value as an error message quotes it: its repr, cut to QUOTE_MAX characters with its full length said."""
    text = repr(value)
    if len(text) <= QUOTE_MAX:
        return text
    size = f"{len(value)} characters" if isinstance(value, str | bytes | list | tuple) else "cut"
    return f"{text[:QUOTE_MAX]}...({size})"


class DomainError(Exception):
    """Base of every rule violation; `field` and `value` name what was wrong."""

    def __init__(self, field: str, value: object, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        name = field if len(field) <= QUOTE_MAX else f"{field[:QUOTE_MAX]}..."
        super().__init__(f"{name}={shown(value)}: {reason}")


class InvalidInput(DomainError):
    """Malformed input: a bad card, seat, amount, rate or id (gRPC INVALID_ARGUMENT)."""


class NotFound(DomainError):
    """An unknown table, link, round or hit (gRPC NOT_FOUND)."""


class FailedPrecondition(DomainError):
    """Valid input that the current state does not allow (gRPC FAILED_PRECONDITION)."""


class Conflict(DomainError):
    """A request id reused with different content (gRPC ALREADY_EXISTS)."""
