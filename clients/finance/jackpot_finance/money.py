"""Exact money strings from integer µ¢ (RULES.md §2): never a float, nothing rounded.

1 cent is 1,000,000 µ¢, so a dollar is 100,000,000 µ¢ and an exact dollar amount needs 8 decimal places: a
$1 wager at 0.0001% (1 ppm) adds 100 µ¢, $0.00000100."""

from __future__ import annotations

from jackpotd.domain.money import UC_PER_CENT

__all__ = ["PLACES", "UC_PER_CENT", "UC_PER_DOLLAR", "cents_uc", "display", "dollars", "grouped"]

UC_PER_DOLLAR = 100 * UC_PER_CENT
PLACES = len(str(UC_PER_DOLLAR)) - 1  # 8: the decimal places that make every µ¢ amount exact in dollars


def dollars(uc: int) -> str:
    """Exact dollars of `uc` µ¢ as a plain decimal a spreadsheet reads as a number: -12.34567800."""
    sign = "-" if uc < 0 else ""
    whole, frac = divmod(abs(uc), UC_PER_DOLLAR)
    return f"{sign}{whole}.{frac:0{PLACES}d}"


def display(uc: int) -> str:
    """The same for people: $1,234.56789000, -$12.34567800."""
    sign = "-" if uc < 0 else ""
    whole, frac = divmod(abs(uc), UC_PER_DOLLAR)
    return f"{sign}${whole:,}.{frac:0{PLACES}d}"


def cents_uc(cents: int) -> int:
    """Cents (hits, resets) as µ¢, so that they format as every other amount."""
    return cents * UC_PER_CENT


def grouped(n: int) -> str:
    """An integer with thousands separators: 1,000,000 µ¢."""
    return f"{n:,}"
