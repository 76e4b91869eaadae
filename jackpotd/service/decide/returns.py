"""Issue 33: a configuration never pays more than it takes unless someone approved it. Pure.

CreateLink, UpdateLink, SetRates and SetPaytable are checked on the config they would leave behind: every game
whose jackpot wager returns 100% or more of the wager with the pools at their reset values is refused, unless the
request carries an RtpOverride naming its approval reference. The return is `jackpotd.odds.returns.return_at` at the
reset balances (`return_at_reset`), the exact figure the math certificate states as "return at reset" and marks
critical at 100%. A rate set changes no return at reset (it moves money into pools, not what a hand pays at a given
balance), yet SetRates is checked too, so that no act can leave a link at 100% or more without an override. The
hand counts are constants (`hand_odds`), so the check costs microseconds, never a 7-card count.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ...domain import hands as h
from ...domain.errors import InvalidInput
from ...domain.link import LinkConfig
from ...domain.paytable import Paytable
from ...odds.exact_text import decimal_text, dollars_text, percent_text
from ...odds.returns import return_at_reset
from ..commands import ConfigCommand, CreateLink, RtpOverride, SetPaytable, SetRates, UpdateLink

LIMIT = Fraction(1)  # a configuration must return less than this at reset
CHECKED = (CreateLink, UpdateLink, SetRates, SetPaytable)  # the acts that can change, or set, a return at reset


@dataclass(frozen=True, slots=True)
class Overpaying:
    """A game whose jackpot wager returns `rtp` (>= 1) of the wager at the reset values."""

    game: str
    rtp: Fraction
    paytable: str  # its entries in a line, for the refusal


@dataclass(frozen=True, slots=True)
class ReturnsVerdict:
    """The outcome of the check: the games at 100% or more at reset (none: accepted), and the override, if any,
    under which they stand."""

    over: tuple[Overpaying, ...]
    override: RtpOverride | None

    @property
    def accepted(self) -> bool:
        """No game returns 100% or more at reset, or an override with an approval reference accepts those that do."""
        return not self.over or self.override is not None


def paytable_text(table: Paytable) -> str:
    """A paytable in one line, highest hand first: "royal_flush 100% of MAJOR (min $100.00), flush $75.00"."""
    parts = []
    for category in h.CATEGORIES_BY_GAME[table.game]:
        e = table.entries.get(category)
        if e is None:
            continue
        if e.is_share:
            share = decimal_text(Fraction(e.percent_ppm, 10_000), 4).rstrip("0").rstrip(".")
            low = f" (min {dollars_text(e.min_cents)})" if e.min_cents else ""
            parts.append(f"{category} {share}% of {e.pool}{low}")
        else:
            parts.append(f"{category} {dollars_text(e.min_cents)} from {e.pool}")
    return ", ".join(parts)


def check_returns(config: LinkConfig, override: RtpOverride | None) -> ReturnsVerdict:
    """Every game of `config` priced at its reset values, in the engine's order of games."""
    over = []
    for game in h.GAMES:
        if game not in config.paytables:
            continue
        rtp = return_at_reset(config, game).rtp
        if rtp >= LIMIT:
            over.append(Overpaying(game, rtp, paytable_text(config.paytables[game])))
    return ReturnsVerdict(tuple(over), override)


def refusal(verdict: ReturnsVerdict, config: LinkConfig) -> InvalidInput:
    """The INVALID_ARGUMENT of a refused verdict: its first game as the field, its exact return as the value, and
    every game at 100% or more with its paytable, its return as a fraction and a percentage, and the reset values."""
    first = verdict.over[0]
    resets = ", ".join(f"{p.name} {dollars_text(p.reset_cents)}" for p in config.pools if p.reset_cents)
    games = "; ".join(f"{o.game} (wager {dollars_text(config.wager_cents)}; {o.paytable}) returns {o.rtp} "
                      f"({percent_text(o.rtp)})" for o in verdict.over)
    return InvalidInput(f"games[{first.game}]", str(first.rtp),
                        f"the paytable returns more than it takes at the reset values ({resets or 'all 0'}): "
                        f"{games} of the wager; a configuration must return less than 100% "
                        "(override: rtp_override with an approval reference)")


def require_returns(cmd: ConfigCommand, config: LinkConfig) -> ReturnsVerdict | None:
    """`config`, the config `cmd` would leave, checked when `cmd` is one of the CHECKED acts (None: not checked);
    InvalidInput when refused."""
    if not isinstance(cmd, CHECKED):
        return None
    verdict = check_returns(config, cmd.rtp_override)
    if not verdict.accepted:
        raise refusal(verdict, config)
    return verdict
