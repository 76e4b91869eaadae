"""Money strings from integer µ¢ (RULES.md §2), for people and for spreadsheets: never a float.

1 cent is 1,000,000 µ¢. People read whole cents ($1,043.35, `display`); the µ¢ a pool keeps beyond them are shown
apart (`subcent`: +0.5¢), so that cents + sub-cent is the exact amount. `exact` writes an amount in dollars with as
many places as it needs and no more ($1,043.355); `dollars` does the same as a plain number for a spreadsheet."""

from __future__ import annotations

from jackpotd.domain.money import UC_PER_CENT

__all__ = ["PLACES", "SUBCENT_NOTE", "UC_PER_CENT", "UC_PER_DOLLAR", "cents_uc", "display", "dollars", "exact",
           "grouped", "subcent"]

UC_PER_DOLLAR = 100 * UC_PER_CENT
PLACES = len(str(UC_PER_DOLLAR)) - 1  # 8: the most decimal places an amount in µ¢ needs in dollars
SUBCENT_NOTE = ("A pool's exact balance is kept in millionths of a cent (µ¢) so that contributions never round; "
                "signs and payouts show whole cents, rounded down, and the remainder (the sub-cent figure) stays in "
                "the pool.")


def _parts(uc: int) -> tuple[str, int, str]:
    """Sign, whole dollars and the decimal places `uc` needs (at least 2, at most 8, trailing zeros dropped)."""
    whole, frac = divmod(abs(uc), UC_PER_DOLLAR)
    places = f"{frac:0{PLACES}d}".rstrip("0").ljust(2, "0")
    return ("-" if uc < 0 else ""), whole, places


def dollars(uc: int) -> str:
    """Exact dollars as a plain decimal a spreadsheet reads as a number: 1043.35, 1043.355, -0.00000001."""
    # inline rather than by _parts: a ledger export formats two amounts per posting, millions of them
    whole, frac = divmod(abs(uc), UC_PER_DOLLAR)
    sign = "-" if uc < 0 else ""
    if frac % UC_PER_CENT:  # a fraction of a cent: every place up to the last that is not 0 (there are 8)
        return f"{sign}{whole}.{frac:08d}".rstrip("0")
    return f"{sign}{whole}.{frac // UC_PER_CENT:02d}"


def exact(uc: int) -> str:
    """Exact dollars for people, with as many places as the amount needs: $1,043.35, $1,043.355, -$0.00000001."""
    sign, whole, places = _parts(uc)
    return f"{sign}${whole:,}.{places}"


def display(uc: int) -> str:
    """Whole dollars and cents, as signs and payouts show them (rounded down; toward zero when negative):
    $1,043.35 for 104,335,500,000 µ¢. `subcent` gives what it leaves out."""
    sign = "-" if uc < 0 else ""
    whole, cents = divmod(abs(uc) // UC_PER_CENT, 100)
    return f"{sign}${whole:,}.{cents:02d}"


def subcent(uc: int) -> str:
    """What `display` leaves out, in cents: +0.5¢, +0.000001¢ (−0.5¢ for a negative amount); empty when none."""
    rest = abs(uc) % UC_PER_CENT
    if not rest:
        return ""
    digits = f"{rest:06d}".rstrip("0")
    return f"{'−' if uc < 0 else '+'}0.{digits}¢"


def cents_uc(cents: int) -> int:
    """Cents (hits, resets) as µ¢, so that they format as every other amount."""
    return cents * UC_PER_CENT


def grouped(n: int) -> str:
    """An integer with thousands separators: 1,000,000 µ¢."""
    return f"{n:,}"
