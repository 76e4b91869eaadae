"""Properties of contributions and pricing over random links and rounds (RULES.md §2-5)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from jackpotd.domain import hands as h
from jackpotd.domain.contributions import contribute, reversal
from jackpotd.domain.money import PPM, UC_PER_CENT
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.postings import (
    OPERATOR_FUNDING,
    PAYOUTS,
    REFUNDS,
    RETAINED,
    WAGERS,
    pool_account,
    require_balanced,
)
from jackpotd.domain.pricing import Hit, price_round
from jackpotd.domain.rates import RateSet

from .postings_model import apply_postings

CATEGORIES = list(h.FIVE_CARD_ORDER)
MAX_POOL_CENTS = 50_000_000_00


@st.composite
def links(draw: st.DrawFn) -> tuple[str, tuple[PoolSpec, ...], RateSet, dict[str, int]]:
    mode = draw(st.sampled_from([SPLIT, COMBINED]))
    visible = [MAJOR, MINOR] if mode == SPLIT else [JACKPOT]
    specs = []
    for name in visible:
        reset = draw(st.integers(0, 2_000_000))
        cap = draw(st.one_of(st.none(), st.integers(reset, reset + 5_000_000)))
        specs.append(PoolSpec(name, reset, cap))
    specs.append(PoolSpec(RESERVE))
    cuts = sorted(draw(st.lists(st.integers(0, PPM), min_size=len(specs), max_size=len(specs))))
    bounds = [0, *cuts, PPM]
    shares = [bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)]
    rates = RateSet({s.name: shares[i] for i, s in enumerate(specs)}, shares[-1])
    balances = {s.name: draw(st.integers(0, MAX_POOL_CENTS * UC_PER_CENT)) for s in specs}
    for s in specs:
        if s.cap_cents is not None:
            balances[s.name] = min(balances[s.name], s.cap_cents * UC_PER_CENT)
    return mode, tuple(specs), rates, balances


rounds = st.lists(st.tuples(st.integers(1, 7), st.sampled_from(CATEGORIES)), max_size=7,
                  unique_by=lambda x: x[0])


def _pool_total(balances: dict[str, int]) -> int:
    return sum(v for k, v in balances.items() if k.startswith("pool:"))


@settings(max_examples=300)
@given(links(), st.lists(st.integers(1, 7), min_size=1, max_size=7, unique=True), st.integers(1, 10_000), rounds)
def test_no_microcent_is_created_or_lost(link, seats, wager, hand_list) -> None:  # type: ignore[no-untyped-def]
    mode, specs, rates, balances = link
    paytable = default_paytable(h.CARIBBEAN_STUD, mode)
    ledger = {pool_account(k): v for k, v in balances.items()}
    before = _pool_total(ledger)

    contribution = contribute(rates, specs, balances, [(s, wager) for s in sorted(seats)])
    require_balanced(contribution.postings)
    ledger = apply_postings(ledger, contribution.postings)
    assert ledger[WAGERS] == -len(seats) * wager * UC_PER_CENT
    pooled = sum(p.amount_uc for p in contribution.postings if p.account.startswith("pool:"))

    hits = [Hit(seat, cat) for seat, cat in hand_list]
    price = price_round(paytable, specs, contribution.balances_after, hits, seats=7)
    require_balanced(price.postings)
    ledger = apply_postings(ledger, price.postings)  # raises if any pool goes negative

    funding = -ledger.get(OPERATOR_FUNDING, 0)
    payouts = ledger.get(PAYOUTS, 0)
    assert before + pooled + funding == _pool_total(ledger) + payouts
    assert {k: ledger[pool_account(k)] for k in price.balances_after} == dict(price.balances_after)
    assert all(v >= 0 for v in price.balances_after.values())
    assert pooled + ledger.get(RETAINED, 0) == len(seats) * wager * UC_PER_CENT
    assert price.operator_funding_cents * UC_PER_CENT == funding
    for payout in price.payouts:
        entry = paytable.entries[payout.category]
        assert payout.amount_cents >= entry.min_cents
        assert isinstance(payout.amount_cents, int)
    for spec in specs:  # §5.8: a pool that paid is back to at least its reset value
        if any(p.pool == spec.name for p in price.payouts):
            assert price.balances_after[spec.name] >= spec.reset_cents * UC_PER_CENT
        if spec.cap_cents is not None:
            assert contribution.balances_after[spec.name] <= spec.cap_cents * UC_PER_CENT


@settings(max_examples=200)
@given(links(), rounds, st.randoms(use_true_random=False))
def test_price_does_not_depend_on_the_order_hands_are_given(link, hand_list, rnd: random.Random) -> None:  # type: ignore[no-untyped-def]
    mode, specs, _, balances = link
    paytable = default_paytable(h.CARIBBEAN_STUD, mode)
    hits = [Hit(seat, cat) for seat, cat in hand_list]
    shuffled = list(hits)
    rnd.shuffle(shuffled)
    assert price_round(paytable, specs, balances, hits, 7) == price_round(paytable, specs, balances, shuffled, 7)


@settings(max_examples=200)
@given(links(), st.lists(st.integers(1, 7), min_size=1, max_size=7, unique=True), st.integers(1, 10_000))
def test_a_void_reverses_a_commit_exactly(link, seats, wager) -> None:  # type: ignore[no-untyped-def]
    _, specs, rates, balances = link
    ledger = {pool_account(k): v for k, v in balances.items()}
    contribution = contribute(rates, specs, balances, [(s, wager) for s in sorted(seats)])
    undo = reversal(contribution.seats, contribution.balances_after)
    require_balanced(undo)
    assert not any(p.account == OPERATOR_FUNDING for p in undo)  # nothing paid out in between
    after = apply_postings(apply_postings(ledger, contribution.postings), undo)
    assert {k: v for k, v in after.items() if k.startswith("pool:")} == ledger
    assert after.get(RETAINED, 0) == 0
    assert after[REFUNDS] == -after[WAGERS] == len(seats) * wager * UC_PER_CENT


@settings(max_examples=200)
@given(links(), st.lists(st.integers(1, 7), min_size=1, max_size=7, unique=True), st.integers(1, 10_000),
       st.data())
def test_a_void_after_pools_paid_out_is_made_whole_by_the_operator(link, seats, wager, data) -> None:  # type: ignore[no-untyped-def]
    _, specs, rates, balances = link
    contribution = contribute(rates, specs, balances, [(s, wager) for s in sorted(seats)])
    # between the commit and the void, other tables' hits drained the pools to anything at all
    drained = {k: data.draw(st.integers(0, v)) for k, v in contribution.balances_after.items()}
    undo = reversal(contribution.seats, drained)
    require_balanced(undo)
    after = apply_postings({pool_account(k): v for k, v in drained.items()}, undo)  # raises if a pool goes negative
    funded = -after.get(OPERATOR_FUNDING, 0)
    assert funded % UC_PER_CENT == 0
    owed: dict[str, int] = {}
    for p in undo:
        if p.account.startswith("pool:") and p.amount_uc < 0:
            owed[p.account] = owed.get(p.account, 0) - p.amount_uc
    for account, amount in owed.items():
        topped_up = sum(p.amount_uc for p in undo if p.account == account and p.amount_uc > 0)
        short = max(0, amount - drained.get(account[5:], 0))
        assert topped_up - short in range(UC_PER_CENT)  # exactly the shortfall, rounded up to a whole cent
