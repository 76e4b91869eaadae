"""Bad input raises a domain error that names the field and the value (issue: rules core)."""

from __future__ import annotations

import pytest

from jackpotd.domain import hands as h
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.paytable import PaytableEntry, default_paytable
from jackpotd.domain.pools import COMBINED, JACKPOT, MAJOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.pricing import Hit, price_round
from jackpotd.domain.rates import RateSet, rates_in_force
from jackpotd.domain.rounds import SeatHand, Wager, evaluate_round, validate_wagers


def test_rates_must_sum_to_one_million_ppm() -> None:
    with pytest.raises(InvalidInput, match="exactly 1,000,000") as err:
        RateSet({MAJOR: 200_000, RESERVE: 25_000}, 700_000)
    assert (err.value.field, err.value.value) == ("rates", 925_000)


def test_negative_rates_are_rejected() -> None:
    with pytest.raises(InvalidInput) as err:
        RateSet({MAJOR: -1, RESERVE: 1}, 1_000_000)
    assert err.value.field == "rates[MAJOR]"


@pytest.mark.parametrize("amount", [0, -100])
def test_zero_or_negative_wager_amounts_are_rejected(amount: int) -> None:
    with pytest.raises(InvalidInput) as err:
        validate_wagers([Wager(1, amount, True)], seats=7, wager_cents=100)
    assert (err.value.field, err.value.value) == ("wagers[0].amount_cents", amount)


@pytest.mark.parametrize("amount", [0, -5])
def test_zero_or_negative_link_wager_is_rejected(amount: int) -> None:
    with pytest.raises(InvalidInput) as err:
        LinkConfig("L", COMBINED, amount, (PoolSpec(JACKPOT), PoolSpec(RESERVE)),
                   (RateSet({JACKPOT: 300_000, RESERVE: 0}, 700_000),),
                   {h.CARIBBEAN_STUD: default_paytable(h.CARIBBEAN_STUD, COMBINED)})
    assert err.value.field == "wager_amount_cents"


def test_negative_reset_is_rejected() -> None:
    with pytest.raises(InvalidInput) as err:
        PoolSpec(MAJOR, reset_cents=-1)
    assert err.value.field == "pools[MAJOR].reset_cents"


@pytest.mark.parametrize("seat", [0, 8, -1])
def test_seats_outside_the_table_are_rejected(seat: int) -> None:
    with pytest.raises(InvalidInput) as err:
        validate_wagers([Wager(seat, 100, True)], seats=7, wager_cents=100)
    assert (err.value.field, err.value.value) == ("wagers[0].seat", seat)
    with pytest.raises(InvalidInput) as err2:
        price_round(default_paytable(h.CARIBBEAN_STUD, COMBINED), (PoolSpec(JACKPOT), PoolSpec(RESERVE)),
                    {}, [Hit(seat, h.FLUSH)], seats=7)
    assert err2.value.field == "seat"
    with pytest.raises(InvalidInput) as err3:
        evaluate_round(h.CARIBBEAN_STUD, 7, [1], [SeatHand(seat, ("As", "Ks", "Qs", "Js", "Ts"))])
    assert err3.value.field == "hands[0].seat"


def test_duplicate_seat_and_missing_ante_are_rejected() -> None:
    with pytest.raises(InvalidInput, match="duplicate seat"):
        validate_wagers([Wager(1, 100, True), Wager(1, 100, True)], 7, 100)
    with pytest.raises(InvalidInput, match="ante") as err:
        validate_wagers([Wager(2, 100, False)], 7, 100)
    assert err.value.field == "wagers[0].ante_placed"


def test_a_card_repeated_across_seats_is_rejected() -> None:
    hands = [SeatHand(1, ("As", "Ks", "Qs", "Js", "Ts")), SeatHand(2, ("AS", "2d", "3d", "4d", "5d"))]
    with pytest.raises(InvalidInput, match="As appears more than once"):
        evaluate_round(h.CARIBBEAN_STUD, 7, [1, 2], hands)


def test_unknown_game_is_rejected() -> None:
    with pytest.raises(InvalidInput) as err:
        default_paytable("blackjack", SPLIT)
    assert (err.value.field, err.value.value) == ("game", "blackjack")


def test_a_wagered_seat_without_cards_is_a_loss_and_unwagered_seats_are_ignored() -> None:
    hands = [SeatHand(1, ("As", "Ks", "Qs", "Js", "Ts")), SeatHand(3, ("2c", "2d", "2h", "2s", "5d"))]
    hits = evaluate_round(h.CARIBBEAN_STUD, 7, [3, 5], hands)
    assert hits == (Hit(3, h.FOUR_OF_A_KIND),)


def test_holdem_evaluates_hole_cards_with_the_board() -> None:
    hits = evaluate_round(h.HOLDEM_BONUS, 7, [2], [SeatHand(2, ("As", "Ks"))], board=("Qs", "Js", "Ts", "2c", "3d"))
    assert hits == (Hit(2, h.ROYAL_FLUSH),)


def test_rates_in_force_are_never_retroactive() -> None:
    old = RateSet({JACKPOT: 300_000}, 700_000, version=1, effective_at_ms=0)
    new = RateSet({JACKPOT: 400_000}, 600_000, version=2, effective_at_ms=1_000)
    assert rates_in_force([old, new], 999) is old
    assert rates_in_force([old, new], 1_000) is new


def test_paytable_entry_must_pay_something() -> None:
    with pytest.raises(InvalidInput):
        PaytableEntry(h.FLUSH, JACKPOT, 0, 0)


def test_paytable_pool_must_exist_on_the_link() -> None:
    with pytest.raises(InvalidInput) as err:
        LinkConfig("L", SPLIT, 100, (PoolSpec(MAJOR), PoolSpec("MINOR"), PoolSpec(RESERVE)),
                   (RateSet({MAJOR: 200_000, "MINOR": 75_000, RESERVE: 25_000}, 700_000),),
                   {h.CARIBBEAN_STUD: default_paytable(h.CARIBBEAN_STUD, COMBINED)})
    assert err.value.field.endswith(".pool")
    assert err.value.value == JACKPOT
