"""RULES.md §5 worked examples 1-8, each reproduced to the cent."""

from __future__ import annotations

from jackpotd.domain import hands as h
from jackpotd.domain.contributions import contribute
from jackpotd.domain.money import UC_PER_CENT, floor_cents
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.postings import OPERATOR_FUNDING, RETAINED, require_balanced
from jackpotd.domain.pricing import Hit, price_round
from jackpotd.domain.rates import RateSet

from .postings_model import apply_postings


def uc(cents: int) -> int:
    return cents * UC_PER_CENT


SPLIT_POOLS = (PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE))
STUD_SPLIT = default_paytable(h.CARIBBEAN_STUD, SPLIT)
STUD_COMBINED = default_paytable(h.CARIBBEAN_STUD, COMBINED)


def combined_pools(reset_cents: int) -> tuple[PoolSpec, ...]:
    return (PoolSpec(JACKPOT, reset_cents), PoolSpec(RESERVE))


def test_example_1_contribution() -> None:
    rates = RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000)
    first = contribute(rates, SPLIT_POOLS, {}, [(1, 100)])
    assert first.balances_after == {MAJOR: 20 * UC_PER_CENT, MINOR: 7_500_000, RESERVE: 2_500_000}
    assert floor_cents(first.balances_after[MINOR]) == 7  # shown as 7¢
    retained = [p.amount_uc for p in first.postings if p.account == RETAINED]
    assert retained == [70 * UC_PER_CENT]
    require_balanced(first.postings)
    second = contribute(rates, SPLIT_POOLS, first.balances_after, [(2, 100)])
    assert second.balances_after[MINOR] == uc(15)


def test_example_2_one_straight_flush() -> None:
    price = price_round(STUD_COMBINED, combined_pools(1_000_000), {JACKPOT: uc(2_345_678)},
                        [Hit(4, h.STRAIGHT_FLUSH)], seats=7)
    assert [(p.seat, p.amount_cents) for p in price.payouts] == [(4, 234_567)]
    assert floor_cents(price.balances_after[JACKPOT]) == 2_111_111
    assert price.resets == ()


def test_example_3_two_straight_flushes_and_a_royal() -> None:
    price = price_round(STUD_SPLIT, SPLIT_POOLS, {MAJOR: uc(5_000_000), MINOR: 0, RESERVE: uc(300_000)},
                        [Hit(6, h.STRAIGHT_FLUSH), Hit(2, h.STRAIGHT_FLUSH), Hit(4, h.ROYAL_FLUSH)], seats=7)
    assert [(p.seat, p.category, p.amount_cents) for p in price.payouts] == [
        (6, h.STRAIGHT_FLUSH, 475_000), (2, h.STRAIGHT_FLUSH, 475_000), (4, h.ROYAL_FLUSH, 4_050_000)]
    assert [(r.pool, r.from_reserve_cents, r.from_operator_cents) for r in price.resets] == [(MAJOR, 300_000, 700_000)]
    assert price.balances_after[MAJOR] == uc(1_000_000)
    assert price.balances_after[RESERVE] == 0
    assert price.balances_after[MINOR] == 0


def test_example_4_royal_below_its_minimum() -> None:
    price = price_round(STUD_SPLIT, SPLIT_POOLS, {MAJOR: uc(820_000), MINOR: 0, RESERVE: 0},
                        [Hit(1, h.ROYAL_FLUSH)], seats=7)
    (payout,) = price.payouts
    assert (payout.amount_cents, payout.funded_by_operator_cents) == (1_000_000, 180_000)
    assert [(r.from_reserve_cents, r.from_operator_cents) for r in price.resets] == [(0, 1_000_000)]
    assert price.operator_funding_cents == 1_180_000
    assert price.balances_after[MAJOR] == uc(1_000_000)


def test_example_5_three_royals() -> None:
    price = price_round(STUD_SPLIT, SPLIT_POOLS, {MAJOR: uc(10_000_000), MINOR: 0, RESERVE: uc(5_000_000)},
                        [Hit(1, h.ROYAL_FLUSH), Hit(3, h.ROYAL_FLUSH), Hit(7, h.ROYAL_FLUSH)], seats=7)
    assert [(p.seat, p.amount_cents) for p in price.payouts] == [(7, 3_333_333), (3, 3_333_333), (1, 3_333_333)]
    assert price.payouts[-1].pool_after_uc == uc(1)  # 1¢ stays in MAJOR
    assert [(r.from_reserve_cents, r.from_operator_cents) for r in price.resets] == [(999_999, 0)]
    assert price.balances_after[RESERVE] == uc(4_000_001)
    assert price.balances_after[MAJOR] == uc(1_000_000)
    assert price.operator_funding_cents == 0


def test_example_6_mixed_round_one_pool() -> None:
    price = price_round(STUD_COMBINED, combined_pools(1_000_000), {JACKPOT: uc(6_000_000), RESERVE: 0},
                        [Hit(7, h.FLUSH), Hit(5, h.ROYAL_FLUSH), Hit(3, h.STRAIGHT_FLUSH), Hit(2, h.FULL_HOUSE)],
                        seats=7)
    assert [(p.seat, p.amount_cents, floor_cents(p.pool_after_uc)) for p in price.payouts] == [
        (7, 10_000, 5_990_000), (3, 599_000, 5_391_000), (2, 15_000, 5_376_000), (5, 5_376_000, 0)]
    assert [(r.from_reserve_cents, r.from_operator_cents) for r in price.resets] == [(0, 1_000_000)]


def test_example_7_two_straight_flushes_on_a_small_pool() -> None:
    price = price_round(STUD_COMBINED, combined_pools(200_000), {JACKPOT: uc(500_000), RESERVE: 0},
                        [Hit(5, h.STRAIGHT_FLUSH), Hit(2, h.STRAIGHT_FLUSH)], seats=7)
    assert [(p.seat, p.amount_cents, p.funded_by_operator_cents) for p in price.payouts] == [
        (5, 100_000, 0), (2, 100_000, 0)]
    assert price.balances_after[JACKPOT] == uc(300_000)
    assert price.resets == ()


def test_example_8_minor_pool_short() -> None:
    before = {MAJOR: uc(2_000_000), MINOR: uc(12_000), RESERVE: 0}
    price = price_round(STUD_SPLIT, SPLIT_POOLS, before, [Hit(6, h.FLUSH), Hit(3, h.FOUR_OF_A_KIND)], seats=7)
    assert [(p.seat, p.amount_cents, p.funded_by_operator_cents, floor_cents(p.pool_after_uc))
            for p in price.payouts] == [(6, 10_000, 0, 2_000), (3, 50_000, 48_000, 0)]
    assert [(r.pool, r.from_reserve_cents, r.from_operator_cents) for r in price.resets] == [(MINOR, 0, 100_000)]
    assert price.operator_funding_cents == 148_000
    assert price.balances_after[MAJOR] == before[MAJOR]  # MAJOR untouched


def test_every_example_balances_in_the_ledger() -> None:
    price = price_round(STUD_SPLIT, SPLIT_POOLS, {MAJOR: uc(820_000), MINOR: 0, RESERVE: 0},
                        [Hit(1, h.ROYAL_FLUSH)], seats=7)
    require_balanced(price.postings)
    after = apply_postings({"pool:MAJOR": uc(820_000)}, price.postings)
    assert after["pool:MAJOR"] == uc(1_000_000)
    assert after[OPERATOR_FUNDING] == -uc(1_180_000)
