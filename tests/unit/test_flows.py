"""Reconciliation's pure parts (RULES.md §10): every leg of an entry classified exactly once, contributions
before the cap, the identities, and gaming-day bounds across daylight-saving changes."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from jackpotd.domain import flows as f
from jackpotd.domain.contributions import contribute, reversal
from jackpotd.domain.gaming_day import day_bounds
from jackpotd.domain.pools import PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.domain.reconciliation import reconcile

SYDNEY = ZoneInfo("Australia/Sydney")
RATES = RateSet({"MAJOR": 200_000, "MINOR": 75_000, "RESERVE": 25_000}, 700_000, 1, 0, "TEST")


def per_account(legs: list[tuple[str, int]] | list[f.Flow]) -> dict[str, int]:
    out: dict[str, int] = {}
    for leg in legs:
        account, uc = (leg.account, leg.amount_uc) if isinstance(leg, f.Flow) else leg
        out[account] = out.get(account, 0) + uc
    return {a: v for a, v in out.items() if v}


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60_000), st.integers(1, 20), st.integers(0, 2_000_000_000))
def test_a_capped_commit_is_classified_before_the_cap(cap: int, wagers: int, minor_uc: int) -> None:
    pools = (PoolSpec("MAJOR"), PoolSpec("MINOR", cap_cents=cap), PoolSpec("RESERVE"))
    c = contribute(RATES, pools, {"MINOR": min(minor_uc, cap * 1_000_000)}, [(s, 100) for s in range(1, wagers + 1)])
    legs = [(p.account, p.amount_uc) for p in c.merged]
    got = f.flows_of(f.EntryFacts("commit", legs, wagers=wagers,
                                  overflow=[(a, b, uc) for (a, b), uc in c.overflows.items()]))
    assert per_account(got) == per_account(legs)  # every µ¢ classified, once
    totals = f.totals(got)
    for pool, ppm in RATES.pools_ppm.items():  # §3: w × rate, before any cap
        assert totals.get((f"pool:{pool}", f.CONTRIBUTION, ""), (0, 0))[0] == wagers * 100 * ppm
    overflow = sum(s.overflow_uc for s in c.seats)
    assert -totals.get(("pool:MINOR", f.OVERFLOW_OUT, ""), (0, 0))[0] == overflow
    assert totals.get(("pool:RESERVE", f.OVERFLOW_IN, ""), (0, 0))[0] == overflow
    assert totals[("wagers", f.WAGER, "")] == (-wagers * 100 * 1_000_000, wagers)
    assert not any(flow == f.UNEXPLAINED for _, flow, _ in totals)


def test_a_void_with_a_shortfall_is_a_refund_and_funding() -> None:
    pools = (PoolSpec("MAJOR"), PoolSpec("MINOR"), PoolSpec("RESERVE"))
    c = contribute(RATES, pools, {}, [(1, 100), (2, 100)])
    undo = reversal(list(c.seats[:1]), {"MAJOR": 0, "MINOR": 10, "RESERVE": 0})  # the pools paid out since
    reversed_ = per_account([(p.account, p.amount_uc) for p in c.seats[0].postings])
    got = f.flows_of(f.EntryFacts("void", [(p.account, p.amount_uc) for p in undo], wagers=1, reversed=reversed_))
    assert per_account(got) == per_account([(p.account, p.amount_uc) for p in undo])
    totals = f.totals(got)
    assert totals[("pool:MAJOR", f.REFUND, "")][0] == -20_000_000
    assert totals[("pool:MAJOR", f.FUNDING, f.VOID_SHORTFALL)][0] == 20_000_000  # ceil to the cent (§5.7)
    assert totals[("refunds", f.REFUND, "")] == (100_000_000, 1)


def test_an_unknown_kind_is_unexplained_and_fails_its_identity() -> None:
    got = f.flows_of(f.EntryFacts("mystery", [("pool:MAJOR", 5), ("operator_funding", -5)]))
    assert {x.flow for x in got} == {f.UNEXPLAINED}
    r = reconcile({"MAJOR": (0, 5)}, f.totals(got))
    assert not r.all_hold and not r.pools[0].holds


def test_the_pool_identity_states_its_numbers() -> None:
    legs = [("wagers", -100_000_000), ("pool:MAJOR", 20_000_000), ("retained", 80_000_000)]
    r = reconcile({"MAJOR": (7, 20_000_007)}, f.totals(f.flows_of(f.EntryFacts("commit", legs, wagers=1))))
    assert r.all_hold
    assert r.identities[0].expression.startswith("7 + 20000000 − 0")
    wrong = reconcile({"MAJOR": (7, 20_000_008)}, f.totals(f.flows_of(f.EntryFacts("commit", legs, wagers=1))))
    assert not wrong.all_hold and wrong.pools[0].difference_uc == 1


def test_sydney_gaming_days_are_25_and_23_hours_long() -> None:
    autumn = day_bounds(date(2026, 4, 4), "06:00", SYDNEY)
    assert autumn == (datetime(2026, 4, 3, 19, tzinfo=UTC), datetime(2026, 4, 4, 20, tzinfo=UTC))
    spring = day_bounds(date(2026, 10, 3), "06:00", SYDNEY)
    assert spring == (datetime(2026, 10, 2, 20, tzinfo=UTC), datetime(2026, 10, 3, 19, tzinfo=UTC))
    assert day_bounds(date(2026, 4, 5), "06:00", SYDNEY)[0] == autumn[1]  # one day ends where the next begins


def test_a_start_in_the_repeated_or_skipped_hour() -> None:
    # 02:30 happens twice on 5 April (clocks back at 03:00 AEDT): the first time, 02:30 AEDT = 15:30Z
    assert day_bounds(date(2026, 4, 5), "02:30", SYDNEY)[0] == datetime(2026, 4, 4, 15, 30, tzinfo=UTC)
    # 02:30 never happens on 4 October (02:00 AEST becomes 03:00 AEDT): the day starts when the gap ends
    assert day_bounds(date(2026, 10, 4), "02:30", SYDNEY)[0] == datetime(2026, 10, 3, 16, tzinfo=UTC)


def test_unexplained_legs_that_cancel_out_still_fail() -> None:
    legs = f.flows_of(f.EntryFacts("mystery", [("pool:MAJOR", 5), ("operator_funding", -5)]))
    legs += f.flows_of(f.EntryFacts("mystery", [("pool:MAJOR", -5), ("operator_funding", 5)]))
    r = reconcile({"MAJOR": (0, 0)}, f.totals(legs))
    assert r.pools[0].difference_uc == 0 and r.pools[0].unexplained_uc == 0
    assert not r.pools[0].holds and not r.link.holds and not r.all_hold


def test_a_void_whose_pool_gains_is_not_operator_funding() -> None:
    got = f.flows_of(f.EntryFacts("void", [("pool:MAJOR", -7), ("operator_funding", 7)], wagers=0, reversed={}))
    assert {x.flow for x in got} == {f.UNEXPLAINED}


def test_contributions_are_checked_against_the_rate_set_each_commit_used() -> None:
    pools = (PoolSpec("MAJOR"), PoolSpec("MINOR"), PoolSpec("RESERVE"))
    later = RateSet({"MAJOR": 250_000, "MINOR": 50_000, "RESERVE": 20_000}, 680_000, 2, 0, "TEST-2")
    legs: list[f.Flow] = []
    for rates, n in ((RATES, 3), (later, 2)):
        c = contribute(rates, pools, {}, [(s, 100) for s in range(1, n + 1)])
        legs += f.flows_of(f.EntryFacts("commit", [(p.account, p.amount_uc) for p in c.merged], wagers=n,
                                        rates_version=rates.version))
    ok = reconcile({"MAJOR": (0, 0)}, f.totals(legs), {1: RATES, 2: later})
    approved = [i for i in ok.identities if "approved rates" in i.name]
    assert len(approved) == 4 and all(i.holds for i in approved)
    assert "300¢ × 200000 ppm (rates 1) + 200¢ × 250000 ppm (rates 2)" in approved[0].expression
    # the retained portion checked here is before voids (the link's "retained" is net of them): it says so
    assert approved[-1].name == "retained at the approved rates"
    assert approved[-1].expression.startswith("retained before voids ")
    # the same wagers said to be at the first rates only: MAJOR got more than those rates give
    wrong = reconcile({"MAJOR": (0, 0)}, f.totals(legs), {1: RATES, 2: RATES})
    assert not all(i.holds for i in wrong.identities if "approved rates" in i.name)
    unknown = reconcile({"MAJOR": (0, 0)}, f.totals(legs), {1: RATES})
    assert not any(i.holds for i in unknown.identities if "approved rates" in i.name)
