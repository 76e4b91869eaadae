"""GetMath (issue 24): what jackpot-math needs to certify a running link, read from the ledger as the other
reports read it: the config in its canonical JSON and hash, its version, and every pool's balance now."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from ..domain import hands as h
from ..domain.link import LinkConfig
from ..domain.money import PPM
from ..odds.config_digest import config_json, config_sha256
from ..odds.hand_odds import hand_odds
from ..odds.returns import break_even, return_at
from .ports import LiabilityData


@dataclass(frozen=True, slots=True)
class GameFigures:
    """One game's exact figures for one seat at the given balances: hand counts, expected payout in µ¢ per
    wager (a Fraction, never rounded), its return in ppm (floored) and the break-even balance (None: never)."""

    game: str
    hands: tuple[tuple[str, int, int], ...]  # (hand, count, total)
    method: str
    expected_uc: Fraction
    rtp_ppm: int
    break_even_pool: str
    break_even_cents: int | None


@dataclass(frozen=True, slots=True)
class MathView:
    """A link's configuration and balances as the ledger holds them at `seq`, with each game's figures."""

    link_id: str
    config: LinkConfig
    config_json: str
    config_sha256: str
    config_version: int
    balances_uc: Mapping[str, int]  # every pool of the config (RESERVE included), then any other the ledger holds
    seq: int
    at_ms: int
    games: tuple[GameFigures, ...] = ()


def balances_of(config: LinkConfig, held: Mapping[str, int]) -> dict[str, int]:
    """Every pool of the config in its order (0 when the ledger holds nothing in it), then any other pool the
    ledger still holds a balance in (a pool a restructure removed)."""
    out = {p.name: held.get(p.name, 0) for p in config.pools}
    out.update({name: uc for name, uc in sorted(held.items()) if uc and name not in out})
    return out


def math_view(data: LiabilityData, config: LinkConfig) -> MathView:
    """The view of the ledger's read (the games' figures are added by the caller, off the event loop)."""
    return MathView(data.link_id, config, config_json(config), config_sha256(config), data.config_version,
                    balances_of(config, data.pools), data.seq, data.at_ms)


def game_figures(config: LinkConfig, balances_uc: Mapping[str, int]) -> tuple[GameFigures, ...]:
    """Each game with a paytable on the link, in the engine's order of games: its exact hand counts, one seat's
    expected payout at the config's pools' balances (jackpotd.odds.returns, closed form), and its break-even.
    Pure; exact hand counts are cached after a game's first (combinatorics: milliseconds)."""
    balances = {p.name: balances_uc.get(p.name, 0) for p in config.pools}
    out = []
    for game in (g for g in h.GAMES if g in config.paytables):
        odds = hand_odds(game)
        at = return_at(config, game, balances)
        even = break_even(config, game, balances)
        rtp = at.rtp
        out.append(GameFigures(game, tuple((hand, n, odds.total) for hand, n in odds.counts.items()), odds.method,
                               at.expected_uc, rtp.numerator * PPM // rtp.denominator, even.pool or "",
                               even.balance_cents))
    return tuple(out)
