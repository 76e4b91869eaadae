"""Seats of a table (RULES.md §1): numbered 1..N, seat 1 at the dealer's left, seat N at the right."""

from __future__ import annotations

from .errors import InvalidInput


def require_seat(field: str, seat: int, seats: int) -> None:
    """A seat number of a table with `seats` seats."""
    if isinstance(seat, bool) or not isinstance(seat, int) or not 1 <= seat <= seats:
        raise InvalidInput(field, seat, f"must be a seat from 1 to {seats}")
