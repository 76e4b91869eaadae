"""Exact figures as text for people (issue 24): decimals, percentages, "1 in N" and dollars from Fractions and ints.

Integer arithmetic only, never a float; every rounding is half up (half away from zero for a negative value).
"""

from __future__ import annotations

from fractions import Fraction

from ..domain.errors import InvalidInput
from ..domain.money import format_cents


def _rounded(x: Fraction, places: int) -> int:
    """x × 10^places rounded half up (half away from zero), as an int."""
    if isinstance(places, bool) or not isinstance(places, int) or not 0 <= places <= 50:
        raise InvalidInput("places", places, "must be a whole number from 0 to 50")
    scale: int = 10**places
    scaled = abs(x) * scale
    n = (2 * scaled.numerator + scaled.denominator) // (2 * scaled.denominator)
    return -n if x < 0 else n


def decimal_text(x: Fraction, places: int) -> str:
    """x with exactly `places` decimals, rounded half up: decimal_text(Fraction(2, 3), 4) == "0.6667"."""
    n = _rounded(x, places)
    sign = "-" if n < 0 else ""
    scale: int = 10**places
    whole, frac = divmod(abs(n), scale)
    return f"{sign}{whole}.{frac:0{places}d}" if places else f"{sign}{whole}"


def percent_text(x: Fraction, places: int = 4) -> str:
    """x as a percentage with `places` decimals, rounded half up: percent_text(Fraction(1, 3)) == "33.3333%"."""
    return decimal_text(x * 100, places) + "%"


def one_in(p: Fraction) -> str:
    """A probability as "1 in N", N = 1/p rounded half up to an integer, with thousands separators; "never" for 0.
    The royal flush in five cards: one_in(Fraction(4, 2598960)) == "1 in 649,740"."""
    if not 0 <= p <= 1:
        raise InvalidInput("probability", str(p), "must be from 0 to 1")
    if p == 0:
        return "never"
    return f"1 in {_rounded(1 / p, 0):,}"


def dollars_text(cents: int) -> str:
    """Whole cents as dollars with separators: dollars_text(1_000_000) == "$10,000.00" (the house's one format)."""
    if isinstance(cents, bool) or not isinstance(cents, int):
        raise InvalidInput("cents", cents, "must be a whole number of cents")
    return format_cents(cents)
