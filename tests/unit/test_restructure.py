"""Splitting and combining pools (RULES.md §9; NZ 11.6A/B), pure: every µ¢ moves, the new rates are in force
from the act, and the decision asks the live store for the link between rounds. No servers."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jackpotd.domain.errors import FailedPrecondition, InvalidInput
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, PoolSpec
from jackpotd.domain.rates import RateSet, rates_in_force
from jackpotd.domain.restructure import combine, split
from jackpotd.service.commands import Audit, CombinePools, Request, SplitPools
from jackpotd.service.decide.admin import AdminState, decide_restructure, require_approval
from jackpotd.service.entries import entry_form
from jackpotd.service.replies import stored_form as stored

from .test_decide_table import NOW, UC, link

COMBINED_RATES = RateSet({JACKPOT: 250_000, RESERVE: 50_000}, 700_000)
SPLIT_RATES = RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000)
BALANCES = {MAJOR: 1_234_567_891, MINOR: 98_765_432, RESERVE: 5 * UC}
AUDIT = Audit("admin-1", "NZ 11.6B", "CCA-2026-11")


def combined_link() -> LinkConfig:
    new, _ = combine(link(), BALANCES, PoolSpec(JACKPOT, 1_000_000), COMBINED_RATES, NOW)
    return new


def test_combining_moves_both_balances_into_jackpot_to_the_microcent() -> None:
    new, legs = combine(link(), BALANCES, PoolSpec(JACKPOT, 1_000_000), COMBINED_RATES, NOW)
    assert new.mode == COMBINED and [p.name for p in new.pools] == [JACKPOT, RESERVE]
    assert dict(legs) == {f"pool:{MAJOR}": -BALANCES[MAJOR], f"pool:{MINOR}": -BALANCES[MINOR],
                          f"pool:{JACKPOT}": BALANCES[MAJOR] + BALANCES[MINOR]}
    assert {e.pool for e in new.paytable("caribbean-stud").entries.values()} == {JACKPOT}  # §4 combined profile


def test_the_new_rates_are_in_force_from_the_act_and_not_before() -> None:
    new = combined_link()
    (rates,) = new.rate_sets
    # in force with the config version the act brings (a worker's clock a moment behind still finds it)
    assert (rates.version, rates.effective_at_ms) == (2, 0) and rates.pools_ppm == COMBINED_RATES.pools_ppm
    assert rates_in_force(new.rate_sets, NOW - 5).pools_ppm == COMBINED_RATES.pools_ppm
    assert rates_in_force(link().rate_sets, NOW - 1).pools_ppm == SPLIT_RATES.pools_ppm  # the old link until then


@given(st.integers(0, 10**15), st.integers(0, 10**15))
def test_split_then_combine_keeps_every_microcent(major: int, minor: int) -> None:
    held = major + minor
    new, legs = split(combined_link(), {JACKPOT: held}, [PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000)],
                      {MAJOR: major, MINOR: minor}, SPLIT_RATES, NOW)
    assert sum(a for _, a in legs) == 0 and dict(legs)[f"pool:{MAJOR}"] == major
    back, legs2 = combine(new, {MAJOR: major, MINOR: minor}, PoolSpec(JACKPOT), COMBINED_RATES, NOW)
    assert dict(legs2)[f"pool:{JACKPOT}"] == held and back.mode == COMBINED


def test_a_split_must_allocate_the_whole_balance_exactly() -> None:
    pools = [PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000)]
    with pytest.raises(FailedPrecondition, match=r"^allocation=.*exactly 1000 µ¢"):
        split(combined_link(), {JACKPOT: 1000}, pools, {MAJOR: 900, MINOR: 99}, SPLIT_RATES, NOW)
    with pytest.raises(InvalidInput, match=r"^allocation"):
        split(combined_link(), {JACKPOT: 1000}, pools, {MAJOR: 1000}, SPLIT_RATES, NOW)
    with pytest.raises(InvalidInput, match=r"^allocation\[MINOR\]"):
        split(combined_link(), {JACKPOT: 1000}, pools, {MAJOR: 1001, MINOR: -1}, SPLIT_RATES, NOW)


def test_the_mode_must_be_the_other_one() -> None:
    with pytest.raises(FailedPrecondition, match=r"^mode='COMBINED'"):
        combine(combined_link(), {}, PoolSpec(JACKPOT), COMBINED_RATES, NOW)
    with pytest.raises(FailedPrecondition, match=r"^mode='SPLIT'"):
        split(link(), {}, [PoolSpec(MAJOR), PoolSpec(MINOR)], {MAJOR: 0, MINOR: 0}, SPLIT_RATES, NOW)


def test_a_scheduled_rate_change_is_not_dropped_silently() -> None:
    later = replace(SPLIT_RATES, version=2, effective_at_ms=NOW + 3_600_000)
    config = replace(link(), rate_sets=(*link().rate_sets, later))
    with pytest.raises(FailedPrecondition, match=r"^rates=2"):
        combine(config, BALANCES, PoolSpec(JACKPOT), COMBINED_RATES, NOW)


def restructure(effective_at_ms: int = 0, approval: str = "CCA-1") -> CombinePools:
    return CombinePools(Request("c1", {"x": 1}), "L", PoolSpec(JACKPOT, 1_000_000),
                        replace(COMBINED_RATES, effective_at_ms=effective_at_ms), replace(AUDIT, approval_ref=approval))


def test_the_step_guards_the_moved_pools_and_needs_the_link_between_rounds() -> None:
    step = decide_restructure(restructure(), link(), "v1", AdminState(NOW, balances={**BALANCES, MINOR: 0}))
    # every pool it moves must hold what was read, an empty one included (the new JACKPOT, MINOR here)
    assert step.between_rounds and step.guards == {MAJOR: BALANCES[MAJOR], MINOR: 0, JACKPOT: 0}
    assert entry_form(step.entry)["kind"] == "combine_pools" and entry_form(step.entry)["config"]["mode"] == COMBINED
    assert step.new_config and stored(step.result) == {"link_id": "L", "mode": COMBINED}


@pytest.mark.parametrize("at", [NOW + 3_600_000, NOW - 3_600_000])
def test_the_rates_of_a_restructure_take_effect_with_it(at: int) -> None:
    with pytest.raises(InvalidInput, match=r"^rates.effective_at_ms="):
        decide_restructure(restructure(at), link(), "v1", AdminState(NOW, balances=BALANCES))


def test_a_restructure_needs_an_approval_reference() -> None:
    with pytest.raises(InvalidInput, match=r"^audit.approval_ref"):
        require_approval(restructure(approval=""))
    require_approval(SplitPools(Request("s1", {}), "L", [], {}, SPLIT_RATES, AUDIT))


def test_a_restructure_never_fills_a_pool_past_its_cap() -> None:
    with pytest.raises(FailedPrecondition, match=r"^jackpot\.cap_cents=1000"):
        combine(link(), BALANCES, PoolSpec(JACKPOT, 0, 1000), COMBINED_RATES, NOW)
    pools = [PoolSpec(MAJOR, 0, 5), PoolSpec(MINOR)]
    with pytest.raises(FailedPrecondition, match=r"^pools\[MAJOR\]\.cap_cents=5"):
        split(combined_link(), {JACKPOT: 6 * UC}, pools, {MAJOR: 6 * UC, MINOR: 0}, SPLIT_RATES, NOW)
    split(combined_link(), {JACKPOT: 6 * UC}, pools, {MAJOR: 5 * UC, MINOR: UC}, SPLIT_RATES, NOW)
