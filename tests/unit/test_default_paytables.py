"""The default paytables a regulator would approve (issue 33): each game's default returns from 50% to under 90% of
the wager at the default reset values, on a SPLIT and a COMBINED link, pinned as exact Fractions and worked by hand
from the hand counts; its break-even is well above the reset; no entry names a hand the game cannot make; and a
higher hand never pays less than a lower one (RULES.md §4; DECISIONS.md, Default paytables)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from jackpotd.domain import hands as h
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.money import PPM, UC_PER_CENT
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.odds.hand_odds import counted_odds, hand_odds
from jackpotd.odds.returns import break_even, return_at

RESET_CENTS = 1_000_000  # MAJOR (split) or JACKPOT (combined): $10,000
MINOR_RESET_CENTS = 100_000  # $1,000

# game: (return per $1 wagered with the pools at their reset values, least break-even balance of the top pool in ¢)
PINNED: dict[str, tuple[Fraction, int]] = {
    h.CARIBBEAN_STUD: (Fraction(6_085, 10_829), 15_981_055),  # NSW 12.1, unchanged: 56.19%, $159,810.55
    h.HOLDEM_BONUS: (Fraction(45_845, 72_709), 1_798_934),  # 63.05%, $17,989.34
    h.THREE_CARD: (Fraction(148, 221), 3_520_900),  # 66.97%, $35,209.00
    h.FOUR_CARD: (Fraction(20_750, 32_487), 2_504_750),  # 63.87%, $25,047.50
}


def default_link(game: str, mode: str) -> LinkConfig:
    """A link created with `games = [game]` at the default reset values and the DOMAIN rates, $1 wager."""
    pools: tuple[PoolSpec, ...]
    if mode == SPLIT:
        pools = (PoolSpec(MAJOR, RESET_CENTS), PoolSpec(MINOR, MINOR_RESET_CENTS), PoolSpec(RESERVE))
        rates = RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000)
    else:
        pools = (PoolSpec(JACKPOT, RESET_CENTS), PoolSpec(RESERVE))
        rates = RateSet({JACKPOT: 275_000, RESERVE: 25_000}, 700_000)
    return LinkConfig("defaults", mode, 100, pools, (rates,), {game: default_paytable(game, mode)})


def at_reset(config: LinkConfig) -> dict[str, int]:
    """Every pool at its reset value, RESERVE empty (µ¢): the link as created."""
    return {p.name: 0 if p.name == RESERVE else p.reset_cents * UC_PER_CENT for p in config.pools}


@pytest.mark.parametrize("mode", [SPLIT, COMBINED])
@pytest.mark.parametrize("game", h.GAMES)
def test_each_default_returns_its_pinned_fraction_at_reset(game: str, mode: str) -> None:
    config = default_link(game, mode)
    rtp, even_cents = PINNED[game]
    got = return_at(config, game, at_reset(config)).rtp
    assert got == rtp, (game, mode, got)
    assert Fraction(1, 2) <= got < Fraction(9, 10)
    even = break_even(config, game, at_reset(config))
    assert (even.pool, even.balance_cents, even.rtp_at_reset) == (MAJOR if mode == SPLIT else JACKPOT, even_cents, rtp)
    assert even_cents * 2 > 3 * RESET_CENTS  # the edge stays the house's until the top pool is 1.5× its reset


def test_the_returns_worked_by_hand_from_the_hand_counts() -> None:
    """Σ count × payout over all hands × 100¢, and the break-even B where the percentage award's floor(B × ppm)
    passes its minimum: the pinned figures are no artefact of return_at."""

    def holdem(b: int) -> int:  # royal max($10,000, 100%), straight flush max($500, 5%), four of a kind $100
        return 4_324 * max(1_000_000, b) + 37_260 * max(50_000, b // 20) + 224_848 * 10_000

    def three(b: int) -> int:  # straight flush max($200, 1%), three of a kind $100
        return 48 * max(20_000, b // 100) + 52 * 10_000

    def four(b: int) -> int:  # four of a kind max($1,000, 10%), straight flush $500
        return 624 * max(100_000, b // 10) + 2_072 * 50_000

    for game, paid, hands in ((h.HOLDEM_BONUS, holdem, 133_784_560), (h.THREE_CARD, three, 22_100),
                              (h.FOUR_CARD, four, 2_598_960)):
        rtp, even = PINNED[game]
        assert Fraction(paid(RESET_CENTS), hands * 100) == rtp, game
        assert paid(even) >= hands * 100 > paid(even - 1), game


@pytest.mark.parametrize("game", h.GAMES)
def test_no_default_pays_a_hand_its_game_cannot_make(game: str) -> None:
    """Every category of every default is a hand of the game that occurs (counted, not only shipped, odds)."""
    for mode in (SPLIT, COMBINED):
        for category in default_paytable(game, mode).entries:
            assert category in h.CATEGORIES_BY_GAME[game]
            assert hand_odds(game).counts[category] > 0 and counted_odds(game).counts[category] > 0, category


@pytest.mark.parametrize("game", h.GAMES)
def test_the_top_hand_takes_a_share_of_the_top_pool_and_no_lower_hand_pays_more(game: str) -> None:
    """The shape a floor expects: the game's highest paying hand draws a percentage of MAJOR (JACKPOT), at least
    its share of the reset value; the smaller hands fixed amounts from MINOR; awards fall with the ranking."""
    split, combined = default_paytable(game, SPLIT), default_paytable(game, COMBINED)
    order = [c for c in h.CATEGORIES_BY_GAME[game] if c in split.entries]
    top = split.entries[order[0]]
    assert top.is_share and top.pool == MAJOR and top.min_cents * PPM >= top.percent_ppm * RESET_CENTS
    assert all(split.entries[c].pool == MINOR for c in order if not split.entries[c].is_share)
    assert all(e.pool == JACKPOT for e in combined.entries.values())
    assert [(e.category, e.min_cents, e.percent_ppm) for e in combined.entries.values()] == \
        [(e.category, e.min_cents, e.percent_ppm) for e in split.entries.values()]
    paid = [split.entries[c].min_cents for c in order]
    assert paid == sorted(paid, reverse=True), paid
