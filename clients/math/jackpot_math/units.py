"""Figures in the units a reviewer reads without converting (issue 33): a time between hits in minutes, hours,
days or years, whichever makes the number read naturally; an instant as a date and time in the link's zone (or
"from the start" for the epoch a first rate set carries); an absent threshold as "none", never "$0.00"; a
statistic's percentage to two places. Exact inputs (Fractions, integer cents and milliseconds) but the statistics;
the rounding is for display only, half up."""

from __future__ import annotations

from fractions import Fraction

from jackpot_finance.money import cents_uc, display
from jackpot_finance.times import instant, zone

from jackpotd.odds.exact_text import decimal_text

from .figures import grouped

MINUTES_PER_HOUR = 60
HOURS_PER_DAY = 24
HOURS_PER_YEAR = 24 * 365
FROM_THE_START = "from the start"
NONE = "none"


def _amount(x: Fraction, unit: str) -> str:
    """`x` of `unit` with digits that read naturally: one decimal under 10 ("3.8 days"), whole above ("14
    minutes", "1,204 years"); the unit singular at exactly one."""
    text = grouped(decimal_text(x, 1 if x < 10 else 0))
    return f"{text} {unit if text in ('1', '1.0') else unit + 's'}"


def duration_text(hours: Fraction | None) -> str:
    """An expected time between events, from exact hours, in the unit that reads best: seconds under a minute,
    minutes under an hour, hours under two days, days under two years, then years; "never" for None."""
    if hours is None:
        return "never"
    h = Fraction(hours)
    if h * MINUTES_PER_HOUR < 1:
        return _amount(h * MINUTES_PER_HOUR * 60, "second")
    if h < 1:
        return _amount(h * MINUTES_PER_HOUR, "minute")
    if h < 2 * HOURS_PER_DAY:
        return _amount(h, "hour")
    if h < 2 * HOURS_PER_YEAR:
        return _amount(h / HOURS_PER_DAY, "day")
    return _amount(h / HOURS_PER_YEAR, "year")


def when_text(ms: int, time_zone: str) -> str:
    """An instant (Unix ms) as a date and time in the link's zone, "2026-12-02 22:00 Australia/Sydney"; 0, the
    instant a link's first rate set carries, reads "from the start" (in force since the link was created)."""
    if ms <= 0:
        return FROM_THE_START
    name = time_zone or "UTC"
    return f"{instant(ms).astimezone(zone(name)):%Y-%m-%d %H:%M} {name}"


def threshold_text(cents: int | None) -> str:
    """A threshold or limit in whole dollars and cents, or "none" when it is not set (0 or absent: RULES.md §7
    reads a threshold of 0 as none)."""
    return NONE if not cents else display(cents_uc(cents))


def stat_percent_text(x: float | None) -> str:
    """A statistic's ratio (a float of a model or a simulation) as a percentage to two places; "—" when undefined.
    Two places: the model's tolerance and the paths' spread make more digits noise."""
    return "—" if x is None else f"{x * 100:.2f}%"
