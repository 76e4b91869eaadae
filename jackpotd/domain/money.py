"""Money units of RULES.md §2: cents on the wire, µ¢ in pools, ppm for rates. Integers only."""

from __future__ import annotations

from .errors import InvalidInput

UC_PER_CENT = 1_000_000  # §2: 1 cent = 1,000,000 µ¢
PPM = 1_000_000  # §2: rates are parts per million; a link's rates sum to exactly this

# §2: Lua numbers are doubles; every balance and intermediate must stay below 2^53 µ¢.
MAX_SAFE_UC = 2**53 - 1


def cents_to_uc(cents: int) -> int:
    """Whole cents as µ¢."""
    return cents * UC_PER_CENT


def floor_cents(uc: int) -> int:
    """§2: a pool shows its balance floored to whole cents; shares are floored too."""
    return uc // UC_PER_CENT


def ceil_cents(uc: int) -> int:
    """Whole cents needed to cover `uc` µ¢ (funding a shortfall or a reset must reach the target)."""
    return -((-uc) // UC_PER_CENT)


def percent_of_cents(balance_uc: int, rate_ppm: int) -> int:
    """§2: a percentage of a pool, floored to the cent; the remainder stays in the pool."""
    return (balance_uc * rate_ppm) // (PPM * UC_PER_CENT)


def require_positive_cents(field: str, value: int) -> int:
    """Reject zero, negative or absurd amounts of cents (an amount must fit the pools' µ¢ range)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, value, "must be a whole number of cents")
    if value <= 0:
        raise InvalidInput(field, value, "must be more than zero cents")
    if value * UC_PER_CENT > MAX_SAFE_UC:
        raise InvalidInput(field, value, f"must be at most {MAX_SAFE_UC // UC_PER_CENT} cents")
    return value


def require_non_negative_cents(field: str, value: int) -> int:
    """Reject negative or absurd amounts where zero is allowed (a reset value of $0, say)."""
    if value == 0 and not isinstance(value, bool):
        return 0
    return require_positive_cents(field, value)


def format_cents(cents: int) -> str:
    """$1,234.56 for logs and CLIs (never used to compute)."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}${whole:,}.{frac:02d}"
