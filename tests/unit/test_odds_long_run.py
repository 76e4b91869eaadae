"""Long-run figures of a link (jackpotd/odds/long_run.py): closed forms, a brute-force discrete chain, conservation."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from jackpotd.domain import hands as h
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.money import PPM, UC_PER_CENT
from jackpotd.domain.paytable import Paytable, PaytableEntry, default_paytable
from jackpotd.domain.pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.odds.long_run import (
    LongRun,
    PoolLongRun,
    _probabilities,
    long_run,
    long_run_of,
    pool_long_run,
    round_rates,
)
from jackpotd.odds.play import Play
from jackpotd.odds.stationary import Jump, PoolModel

STUD = h.CARIBBEAN_STUD
# Published counts of the paying hands: the tests do not lean on hand_odds (test_odds_hands.py checks it).
COUNTS: Mapping[str, tuple[int, Mapping[str, int]]] = {
    STUD: (2_598_960, {h.ROYAL_FLUSH: 4, h.STRAIGHT_FLUSH: 36, h.FOUR_OF_A_KIND: 624, h.FULL_HOUSE: 3_744,
                       h.FLUSH: 5_108}),
    h.HOLDEM_BONUS: (133_784_560, {h.ROYAL_FLUSH: 4_324, h.STRAIGHT_FLUSH: 37_260, h.FOUR_OF_A_KIND: 224_848,
                                   h.FULL_HOUSE: 3_473_184, h.FLUSH: 4_047_644}),
    h.THREE_CARD: (22_100, {h.STRAIGHT_FLUSH: 48, h.THREE_OF_A_KIND: 52}),
}
P_ROYAL = Fraction(4, 2_598_960)
C_UC = 20 * UC_PER_CENT  # MAJOR's 20¢ of a $1 wager


def probabilities(config: LinkConfig, play: Play) -> dict[tuple[str, str], Fraction]:
    """Per wager: the game's share of the play times the published probability of each paying hand."""
    out: dict[tuple[str, str], Fraction] = {}
    for game, share in play.mix().items():
        total, counts = COUNTS[game]
        for category in config.paytable(game).entries:
            out[(game, category)] = share * Fraction(counts[category], total)
    return out


def split_link(minor_ppm: int = 75_000, major_cap: int | None = None, games: tuple[str, ...] = (STUD,)) -> LinkConfig:
    """The DOMAIN default split link: $1 wager, MAJOR 20% (reset $10,000), MINOR (reset $1,000), RESERVE 2.5%."""
    rates = RateSet({MAJOR: 200_000, MINOR: minor_ppm, RESERVE: 25_000}, PPM - 225_000 - minor_ppm)
    return LinkConfig("L", SPLIT, 100, (PoolSpec(MAJOR, 1_000_000, major_cap), PoolSpec(MINOR, 100_000),
                                         PoolSpec(RESERVE)),
                      (rates,), {g: default_paytable(g, SPLIT) for g in games})


def combined_link() -> LinkConfig:
    """The DOMAIN default combined link: one JACKPOT (reset $10,000) takes MAJOR's and MINOR's 27.5%."""
    return LinkConfig("C", COMBINED, 100, (PoolSpec(JACKPOT, 1_000_000), PoolSpec(RESERVE)),
                      (RateSet({JACKPOT: 275_000, RESERVE: 25_000}, 700_000),),
                      {STUD: default_paytable(STUD, COMBINED)})


def royal_only(cap_cents: int | None = None) -> LinkConfig:
    """A combined link whose only entry is a 100% royal with a $5,000 minimum below its $10,000 reset."""
    table = Paytable(STUD, {h.ROYAL_FLUSH: PaytableEntry(h.ROYAL_FLUSH, JACKPOT, 500_000, PPM)})
    return LinkConfig("R", COMBINED, 100, (PoolSpec(JACKPOT, 1_000_000, cap_cents), PoolSpec(RESERVE)),
                      (RateSet({JACKPOT: 200_000, RESERVE: 25_000}, 775_000),), {STUD: table})


def stud(config: LinkConfig) -> LongRun:
    return long_run_of(config, probabilities(config, Play({STUD: 20}, 6, 60)))


def pool(run: LongRun, name: str) -> PoolLongRun:
    return next(p for p in run.pools if p.pool == name)


def rel(x: float, y: float) -> float:
    return abs(x - y) / abs(y)


def test_royal_only_pool_is_reset_plus_a_geometric_run_of_contributions() -> None:
    run = stud(royal_only())
    jp = pool(run, JACKPOT)
    p, r = float(P_ROYAL), 1_000_000 * UC_PER_CENT
    assert jp.recurrent and jp.at_cap == 0 and jp.overflow_per_wager_uc == 0
    assert rel(jp.mean_balance_uc, r + C_UC / p) < 1e-4  # E[B] = R + c/p
    for q, got in ((0.05, jp.p5_uc), (0.50, jp.p50_uc), (0.95, jp.p95_uc), (0.99, jp.p99_uc)):
        assert rel(got, r - C_UC / p * math.log(1 - q)) < 1e-4  # P(B > x) = exp(−p(x − R)/c)
    assert rel(jp.paid_per_wager_uc, p * (r + C_UC / p)) < 1e-4
    assert rel(jp.reset_per_wager_uc, p * r) < 1e-4  # every royal empties it
    assert jp.shortfall_per_wager_uc == 0  # the balance never falls below the $5,000 minimum
    assert rel(run.rtp, p * (r + C_UC / p) / (100 * UC_PER_CENT)) < 1e-4
    assert run.tolerance < 1e-6


def test_a_capped_pool_sits_at_its_cap_as_often_as_the_closed_form_says() -> None:
    p, r = float(P_ROYAL), 1_000_000 * UC_PER_CENT
    cap_cents = 1_000_000 + round(2 * C_UC / p / UC_PER_CENT)
    jp = pool(stud(royal_only(cap_cents)), JACKPOT)
    expected = math.exp(-p * (cap_cents * UC_PER_CENT - r) / C_UC)  # P(at cap) = exp(−p(C − R)/c)
    assert rel(jp.at_cap, expected) < 1e-4
    assert rel(jp.overflow_per_wager_uc, C_UC * expected) < 1e-4
    assert jp.p99_uc == cap_cents * UC_PER_CENT  # the atom (13.5%) holds the top percentiles


def brute_force_chain(p_royal: float, p_sf: float, reset: int, sf_min: int, states: int,
                      wagers: int) -> dict[str, float]:
    """The discrete chain itself, 1¢ a wager on a grid of whole cents, power-iterated wager by wager from an empty
    start: royal takes everything; a straight flush pays the greater of `sf_min` and 10% (to the nearest cent);
    both reset to `reset`. Returns per-wager figures in cents."""
    x = np.arange(states)
    sf_pay = np.maximum(sf_min, (x + 5) // 10)
    sf_left = np.maximum(x - sf_pay, 0)
    after_sf = np.minimum(np.maximum(sf_left, reset) + 1, states - 1)  # then the next wager's 1¢
    targets = np.concatenate([np.minimum(x + 1, states - 1), after_sf])
    dist = np.zeros(states, dtype=np.float64)
    dist[reset + 1] = 1.0
    miss = 1 - p_royal - p_sf
    for _ in range(wagers):
        moved = np.bincount(targets, np.concatenate([miss * dist, p_sf * dist]), states)
        moved[reset + 1] += p_royal * dist.sum()
        dist = moved.astype(np.float64)
    assert dist[-100:].sum() < 1e-9  # the grid holds the law
    return {"mean": float(dist @ x), "paid": float(dist @ (p_royal * x + p_sf * sf_pay)),
            "reset": float(dist @ (p_royal * reset + p_sf * np.maximum(reset - sf_left, 0))),
            "p50": float(x[np.searchsorted(np.cumsum(dist), 0.5)])}


def test_royal_and_a_ten_percent_straight_flush_match_a_brute_force_discrete_chain() -> None:
    p_royal, p_sf, reset, sf_min = 1 / 1000, 1 / 250, 1_000, 150
    chain = brute_force_chain(p_royal, p_sf, reset, sf_min, states=16_000, wagers=8_000)
    model = PoolModel(float(UC_PER_CENT), float(reset * UC_PER_CENT), None,
                      (Jump(p_royal, 0.0, 1.0, True), Jump(p_sf, float(sf_min * UC_PER_CENT), 0.1, True)))
    got, residual = pool_long_run("MAJOR", model)
    assert residual < 1e-6
    assert rel(got.mean_balance_uc / UC_PER_CENT, chain["mean"]) < 1e-3
    assert rel(got.paid_per_wager_uc / UC_PER_CENT, chain["paid"]) < 1e-3
    assert rel(got.reset_per_wager_uc / UC_PER_CENT, chain["reset"]) < 1e-3
    assert abs(got.p50_uc / UC_PER_CENT - chain["p50"]) <= 2  # cents: the chain's median is a whole cent


def test_the_default_minor_pool_is_reset_by_almost_every_hit() -> None:
    run = stud(split_link())
    minor = pool(run, MINOR)
    c = 75_000 * 100
    fixed = sum(Fraction(n, 2_598_960) * cents * UC_PER_CENT
                for n, cents in ((624, 50_000), (3_744, 15_000), (5_108, 10_000)))
    assert minor.recurrent and minor.shortfall_per_wager_uc == 0
    assert rel(minor.paid_per_wager_uc, float(fixed)) < 1e-9  # ≈ 53.27¢ a wager: fixed payouts only
    assert c < minor.paid_per_wager_uc
    assert rel(minor.reset_per_wager_uc, minor.paid_per_wager_uc - c) < 1e-6  # resets fund the difference
    assert 100_000 * UC_PER_CENT <= minor.p5_uc < minor.p50_uc < minor.p95_uc < 110_000 * UC_PER_CENT


def test_a_minor_pool_whose_contributions_beat_its_payouts_is_transient() -> None:
    run = stud(split_link(minor_ppm=600_000))
    minor = pool(run, MINOR)
    fixed = float(sum(Fraction(n, 2_598_960) * cents * UC_PER_CENT
                      for n, cents in ((624, 50_000), (3_744, 15_000), (5_108, 10_000))))
    assert not minor.recurrent
    assert (minor.p5_uc, minor.p50_uc, minor.p95_uc, minor.p99_uc, minor.mean_balance_uc) == (-1, -1, -1, -1, -1)
    assert rel(minor.growth_per_wager_uc, 60 * UC_PER_CENT - fixed) < 1e-12
    assert minor.reset_per_wager_uc == 0 and rel(minor.paid_per_wager_uc, fixed) < 1e-12
    assert pool(run, MAJOR).recurrent and pool(run, MAJOR).growth_per_wager_uc == 0
    assert "MINOR: transient, grows" in run.method


@pytest.mark.parametrize("config", [split_link(), combined_link(), split_link(major_cap=5_000_000)],
                         ids=["split", "combined", "split-capped"])
def test_every_pool_conserves_what_goes_in_and_out(config: LinkConfig) -> None:
    run = stud(config)
    rates = config.rate_sets[-1]
    reserve_in = float(100 * rates.pools_ppm[RESERVE])
    draws = shortfalls = 0.0
    for p in run.pools:
        c = 100 * rates.pools_ppm[p.pool]
        balance = c - p.overflow_per_wager_uc + p.reset_per_wager_uc + p.shortfall_per_wager_uc - p.paid_per_wager_uc
        assert abs(balance) < 1e-6 * c, p
        draws += p.reset_per_wager_uc
        shortfalls += p.shortfall_per_wager_uc
        reserve_in += p.overflow_per_wager_uc  # every default cap overflows to RESERVE
    assert run.reserve_in_per_wager_uc == pytest.approx(reserve_in, rel=1e-12)
    assert run.reserve_out_per_wager_uc == pytest.approx(min(draws, reserve_in), rel=1e-12)
    assert run.operator_per_wager_uc == pytest.approx(shortfalls + max(0.0, draws - reserve_in), rel=1e-12)
    assert run.rtp == pytest.approx(sum(p.paid_per_wager_uc for p in run.pools) / (100 * UC_PER_CENT), rel=1e-12)
    assert 0 <= run.tolerance < 1e-6
    assert "conservation residual" in run.method


def test_a_mixed_play_weighs_each_game_by_its_share_of_the_wagers() -> None:
    games = (STUD, h.HOLDEM_BONUS, h.THREE_CARD)
    config = split_link(games=games)
    play = Play({STUD: 2, h.HOLDEM_BONUS: 1, h.THREE_CARD: 1}, 6, 60)
    mixed = long_run_of(config, probabilities(config, play), bins=10_000)
    alone = {g: long_run_of(config, probabilities(config, Play({g: 1}, 6, 60)), bins=10_000) for g in games}
    # MINOR pays fixed amounts only: its payouts per wager mix linearly, 2:1:1
    expected = (2 * pool(alone[STUD], MINOR).paid_per_wager_uc + pool(alone[h.HOLDEM_BONUS], MINOR).paid_per_wager_uc
                + pool(alone[h.THREE_CARD], MINOR).paid_per_wager_uc) / 4
    assert rel(pool(mixed, MINOR).paid_per_wager_uc, expected) < 1e-9
    three_major = pool(alone[h.THREE_CARD], MAJOR)  # three card's straight flush takes 1% of MAJOR, at least $200
    assert three_major.recurrent and three_major.paid_per_wager_uc > 0  # so MAJOR does not grow for good


def test_a_pool_drained_below_its_reset_by_an_entry_that_does_not_reset_it_is_lifted_back() -> None:
    """A 100% entry that empties the pool without resetting it, and a $0.50 entry that resets it to $2: a hit of
    the second below $2 lifts the pool (a jump up). Checked against the discrete chain, 1¢ a wager."""
    p_empty, p_small, reset = 1 / 300, 1 / 150, 200
    x = np.arange(6_000)
    empty_pay, small_pay = np.maximum(100, x), np.full_like(x, 50)
    after_small = np.maximum(np.maximum(x - small_pay, 0), reset)
    targets = np.concatenate([np.minimum(x + 1, x.size - 1), np.ones_like(x), np.minimum(after_small + 1, x.size - 1)])
    dist = np.zeros(x.size, dtype=np.float64)
    dist[reset] = 1.0
    for _ in range(4_000):
        dist = np.bincount(targets, np.concatenate([(1 - p_empty - p_small) * dist, p_empty * dist,
                                                    p_small * dist]), x.size).astype(np.float64)
    model = PoolModel(float(UC_PER_CENT), float(reset * UC_PER_CENT), None,
                      (Jump(p_empty, 100.0 * UC_PER_CENT, 1.0, False), Jump(p_small, 50.0 * UC_PER_CENT, 0.0, True)))
    got, residual = pool_long_run("MINOR", model)
    assert residual < 1e-6
    assert rel(got.mean_balance_uc / UC_PER_CENT, float(dist @ x)) < 2e-3  # the chain's 1¢ steps: O(p) = 1%
    paid = float(dist @ (p_empty * empty_pay + p_small * small_pay))
    assert rel(got.paid_per_wager_uc / UC_PER_CENT, paid) < 2e-3
    lifted = float(dist @ (p_small * np.maximum(reset - np.maximum(x - small_pay, 0), 0)))
    assert rel(got.reset_per_wager_uc / UC_PER_CENT, lifted) < 2e-3
    assert got.p5_uc < reset * UC_PER_CENT  # it spends time below its reset value


def test_a_flush_that_does_not_reset_minor_sinks_it_below_its_reset_until_a_full_house_lifts_it() -> None:
    """MINOR, 1¢ a wager, reset $100: a $10 flush (1 in 509) that leaves it unreset, a $15 full house (1 in 360)
    that resets it. The pool lives far below R (ρ·R/c = 28): the levels below R are swept up, not marched down."""
    p_flush, p_full, reset = 1 / 509, 1 / 360, 10_000
    x = np.arange(14_000)
    after_flush = np.maximum(x - 1_000, 0)
    after_full = np.maximum(np.maximum(x - 1_500, 0), reset)
    targets = np.concatenate([np.minimum(x + 1, x.size - 1), after_flush + 1, np.minimum(after_full + 1, x.size - 1)])
    dist = np.zeros(x.size, dtype=np.float64)
    dist[reset] = 1.0
    for _ in range(6_000):
        dist = np.bincount(targets, np.concatenate([(1 - p_flush - p_full) * dist, p_flush * dist, p_full * dist]),
                           x.size).astype(np.float64)
    flush, full = Jump(p_flush, 1_000.0 * UC_PER_CENT, 0.0, False), Jump(p_full, 1_500.0 * UC_PER_CENT, 0.0, True)
    model = PoolModel(float(UC_PER_CENT), float(reset * UC_PER_CENT), None, (flush, full))
    got, residual = pool_long_run("MINOR", model)
    assert residual < 1e-6
    assert rel(got.mean_balance_uc / UC_PER_CENT, float(dist @ x)) < 1e-4
    shortfall = float(dist @ (p_flush * np.maximum(1_000 - x, 0) + p_full * np.maximum(1_500 - x, 0)))
    assert rel(got.shortfall_per_wager_uc / UC_PER_CENT, shortfall) < 5e-3  # a rare tail (under $15): 1¢ steps tell
    lifted = float(dist @ (p_full * np.maximum(reset - np.maximum(x - 1_500, 0), 0)))
    assert rel(got.reset_per_wager_uc / UC_PER_CENT, lifted) < 1e-4
    median = float(x[np.searchsorted(np.cumsum(dist), 0.5)])
    assert abs(got.p50_uc / UC_PER_CENT - median) <= 2
    assert got.p5_uc < 8_000 * UC_PER_CENT  # a twentieth of the wagers find it $20 or more below R


def test_an_entry_paid_from_reserve_is_refused_by_name() -> None:
    table = Paytable(STUD, {h.ROYAL_FLUSH: PaytableEntry(h.ROYAL_FLUSH, RESERVE, 1_000_000, PPM)})
    with pytest.raises(InvalidInput) as refused:
        stud(replace(split_link(), paytables={STUD: table}))
    assert refused.value.field == "paytable[royal_flush].pool" and refused.value.value == RESERVE


def test_long_run_takes_the_exact_hand_odds_of_the_games_played() -> None:
    config = split_link(games=(STUD, h.THREE_CARD))
    play = Play({STUD: 3, h.THREE_CARD: 1}, 6, 60)
    assert _probabilities(config, play) == probabilities(config, play)
    run = long_run(config, play)
    assert [p.pool for p in run.pools] == [MAJOR, MINOR]
    singles, groups = round_rates(config, play)
    assert run.rtp == pytest.approx(long_run_of(config, singles, bins=10_000, groups=groups).rtp, rel=1e-6)
    # one deck per round moves the one-seat model's return by a few parts in a million here (see DECISIONS.md)
    assert run.rtp == pytest.approx(long_run_of(config, probabilities(config, play), bins=10_000).rtp, rel=2e-5)
    assert "one deck per round" in run.method


def test_one_deck_rounds_keep_each_hands_mean_and_add_the_pairs() -> None:
    """The round rates keep each category's hits per wager exact (a pair counts twice), and pair one pool's hits
    only: stud's MINOR (four of a kind, full house, flush) and MAJOR (royal, straight flush) pairs, none across."""
    config = split_link()
    play = Play({STUD: 20}, 6, 60)
    singles, groups = round_rates(config, play)
    per_wager = probabilities(config, play)
    for (game, category), p in per_wager.items():
        twice = sum(r * cats.count(category) for (g, *cats), r in groups.items() if g == game)
        assert singles[(game, category)] + twice == pytest.approx(float(p), rel=1e-12)
    pools = {c: e.pool for c, e in config.paytable(STUD).entries.items()}
    assert all(len({pools[c] for c in cats}) == 1 and len(cats) == 2 for _, *cats in groups)
    assert (STUD, h.ROYAL_FLUSH, h.ROYAL_FLUSH) in groups and (STUD, h.FLUSH, h.FLUSH) in groups
