"""Issue 24's acceptance: the simulation's long-run return falls within its own stated 95% interval of the
deterministic long-run figure, for three configurations.

The configurations pay their percentage prizes on hands common enough (four of a kind, three of a kind, a three
card straight flush) that a few simulated weeks hold about a thousand of them, so the test is cheap and its
interval narrow; the royal-flush links of RULES.md are certified the same way by `jackpot-math certify`.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jackpotd.domain import hands as h
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.paytable import Paytable, PaytableEntry
from jackpotd.domain.pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.odds.long_run import long_run
from jackpotd.odds.play import Play
from jackpotd.odds.simulate import simulate

STUD, THREE = h.CARIBBEAN_STUD, h.THREE_CARD


def _combined_quads() -> LinkConfig:
    """One pool: four of a kind takes all of it (at least $100), a full house pays $50 from it."""
    return LinkConfig(
        link_id="agree-combined", mode=COMBINED, wager_cents=100,
        pools=(PoolSpec(JACKPOT, 20_000), PoolSpec(RESERVE)),
        rate_sets=(RateSet({JACKPOT: 300_000, RESERVE: 20_000}, 680_000),),
        paytables={STUD: Paytable(STUD, {
            h.FOUR_OF_A_KIND: PaytableEntry(h.FOUR_OF_A_KIND, JACKPOT, 10_000, 1_000_000),
            h.FULL_HOUSE: PaytableEntry(h.FULL_HOUSE, JACKPOT, 5_000)})})


def _split_capped() -> LinkConfig:
    """MAJOR (capped, overflow to RESERVE): four of a kind 100%, full house 10% of it; MINOR pays fixed prizes."""
    return LinkConfig(
        link_id="agree-split", mode=SPLIT, wager_cents=200,
        pools=(PoolSpec(MAJOR, 50_000, cap_cents=150_000), PoolSpec(MINOR, 2_000), PoolSpec(RESERVE)),
        rate_sets=(RateSet({MAJOR: 250_000, MINOR: 150_000, RESERVE: 30_000}, 570_000),),
        paytables={STUD: Paytable(STUD, {
            h.FOUR_OF_A_KIND: PaytableEntry(h.FOUR_OF_A_KIND, MAJOR, 20_000, 1_000_000),
            h.FULL_HOUSE: PaytableEntry(h.FULL_HOUSE, MAJOR, 1_000, 100_000),
            h.FLUSH: PaytableEntry(h.FLUSH, MINOR, 1_500)})})


def _two_games() -> LinkConfig:
    """Caribbean Stud and three card tables on one pool: a three card straight flush takes it all."""
    return LinkConfig(
        link_id="agree-games", mode=COMBINED, wager_cents=100,
        pools=(PoolSpec(JACKPOT, 10_000), PoolSpec(RESERVE)),
        rate_sets=(RateSet({JACKPOT: 250_000, RESERVE: 10_000}, 740_000),),
        paytables={
            STUD: Paytable(STUD, {h.FOUR_OF_A_KIND: PaytableEntry(h.FOUR_OF_A_KIND, JACKPOT, 20_000)}),
            THREE: Paytable(THREE, {
                h.STRAIGHT_FLUSH: PaytableEntry(h.STRAIGHT_FLUSH, JACKPOT, 10_000, 1_000_000),
                h.THREE_OF_A_KIND: PaytableEntry(h.THREE_OF_A_KIND, JACKPOT, 5_000)})})


CASES = (
    (_combined_quads, Play({STUD: 10}, 6, 60), 40),
    (_split_capped, Play({STUD: 10}, 6, 60), 40),
    (_two_games, Play({STUD: 4, THREE: 6}, 6, 60), 20),
)


@pytest.mark.parametrize(("make", "play", "days"), CASES, ids=["combined-quads", "split-capped", "two-games"])
def test_simulated_return_holds_the_long_run_figure(make: Callable[[], LinkConfig], play: Play, days: int) -> None:
    """The long-run return (deterministic) lies in the simulation's stated 95% interval of its return with the
    meters (what the period left in the pools that pay a share of themselves counted as returned: it takes the
    period's start and end out), and the interval is narrow enough to mean something."""
    config = make()
    exact = long_run(config, play)
    sim = simulate(config, play, days=days, paths=8, seed=24, workers=1)
    low, high = sim.rtp_with_meters_ci95
    assert low <= exact.rtp <= high, (exact.rtp, sim.rtp_with_meters, sim.rtp_with_meters_ci95)
    assert exact.tolerance < (high - low) / 100
    assert high - low < 0.01  # under a point of return either way
    percentage_hits = sum(sim.hits[g].get(c, 0.0) for g, c in PERCENTAGE[config.link_id]) * sim.paths
    assert percentage_hits > 500, percentage_hits  # the prizes that move with the pool were really exercised


PERCENTAGE = {
    "agree-combined": ((STUD, h.FOUR_OF_A_KIND),),
    "agree-split": ((STUD, h.FOUR_OF_A_KIND), (STUD, h.FULL_HOUSE)),
    "agree-games": ((THREE, h.STRAIGHT_FLUSH),),
}
