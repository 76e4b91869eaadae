"""The jackpot wager's exact return (issue 24): closed form against every hand priced through price_round, to the
µ¢ (equal Fractions); break-even, the return curve, wager shares and hit times; bad input named."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jackpotd.domain import hands as h
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.money import UC_PER_CENT
from jackpotd.domain.paytable import Paytable, PaytableEntry, default_paytable
from jackpotd.domain.pools import COMBINED, JACKPOT, MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.pricing import Hit, price_round
from jackpotd.domain.rates import RateSet
from jackpotd.odds.hand_odds import hand_odds
from jackpotd.odds.play import Play
from jackpotd.odds.returns import (
    LINK_WIDE,
    RETAINED,
    break_even,
    hit_times,
    return_at,
    return_by_pricing,
    return_curve,
    wager_shares,
)

UC = UC_PER_CENT
FIVE_TOTAL = 2_598_960


def link(mode: str, games: tuple[str, ...] = h.GAMES, wager_cents: int = 100,
         paytables: dict[str, Paytable] | None = None) -> LinkConfig:
    """The DOMAIN example link: split MAJOR $10,000 / MINOR $1,000 reset, or combined JACKPOT $10,000."""
    pools: tuple[PoolSpec, ...]
    if mode == SPLIT:
        pools = (PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE))
        rates = RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000)
    else:
        pools = (PoolSpec(JACKPOT, 1_000_000), PoolSpec(RESERVE))
        rates = RateSet({JACKPOT: 250_000, RESERVE: 50_000}, 700_000)
    return LinkConfig("L1", mode, wager_cents, pools, (rates,),
                      paytables or {g: default_paytable(g, mode) for g in games})


def dollars(d: int, cents: int = 0, uc: int = 0) -> int:
    """µ¢ of $d.cc plus uc µ¢."""
    return (d * 100 + cents) * UC + uc


# Balances of the top pool (MAJOR or JACKPOT) and MINOR: below the royal's $10,000 (shortfall), at the thresholds
# where 10% floors ($10,000.00, $10,000.09, $10,000.10), 1 µ¢ short of $10,000, and well above.
TOPS = [0, dollars(8_200), dollars(10_000), dollars(10_000, 9), dollars(10_000, 10), dollars(10_000) - 1,
        dollars(23_456, 78), dollars(1_234_567, 89, 123_456)]
MINORS = [dollars(120), dollars(1_000, 0, 999_999)]


@pytest.mark.parametrize("game", h.GAMES)
@pytest.mark.parametrize("mode", [SPLIT, COMBINED])
def test_closed_form_equals_every_hand_priced_by_the_engine(game: str, mode: str) -> None:
    config = link(mode)
    top = MAJOR if mode == SPLIT else JACKPOT
    for i, balance in enumerate(TOPS):
        balances = {top: balance, RESERVE: dollars(3_000)}
        if mode == SPLIT:
            balances[MINOR] = MINORS[i % len(MINORS)]
        closed = return_at(config, game, balances)
        assert closed.expected_uc == return_by_pricing(config, game, balances), (game, mode, balance)
        assert closed.expected_uc == sum(r.expected_uc for r in closed.categories)


def test_shortfall_and_thresholds_by_category() -> None:
    config = link(SPLIT)
    short = {r.category: r for r in return_at(config, h.CARIBBEAN_STUD,
                                              {MAJOR: dollars(8_200), MINOR: dollars(120)}).categories}
    assert (short[h.ROYAL_FLUSH].payout_cents, short[h.ROYAL_FLUSH].funded_cents) == (1_000_000, 180_000)
    assert short[h.ROYAL_FLUSH].rule == "NSW 12.1"
    assert (short[h.STRAIGHT_FLUSH].payout_cents, short[h.STRAIGHT_FLUSH].funded_cents) == (100_000, 0)
    assert (short[h.FOUR_OF_A_KIND].payout_cents, short[h.FOUR_OF_A_KIND].funded_cents) == (50_000, 38_000)
    assert short[h.FOUR_OF_A_KIND].rule == "NSW 12.1 fixed payout"
    assert [r.category for r in short.values()] == list(h.FIVE_CARD_ORDER[:5])
    assert short[h.ROYAL_FLUSH].count == 4 and short[h.ROYAL_FLUSH].total == FIVE_TOTAL
    one_uc_short = return_at(config, h.CARIBBEAN_STUD, {MAJOR: dollars(10_000) - 1}).categories[0]
    assert (one_uc_short.payout_cents, one_uc_short.funded_cents) == (1_000_000, 1)  # 1 µ¢ needs a whole cent

    def straight_flush(balance: int) -> int:
        return return_at(config, h.CARIBBEAN_STUD, {MAJOR: balance}).categories[1].payout_cents

    assert straight_flush(dollars(10_000)) == straight_flush(dollars(10_000, 9)) == 100_000
    assert straight_flush(dollars(10_000, 10)) == 100_001
    assert straight_flush(dollars(23_456, 78)) == 234_567  # DOMAIN §5 example 2


PAYING = list(h.FIVE_CARD_ORDER)


@st.composite
def custom_links(draw: st.DrawFn) -> tuple[LinkConfig, dict[str, int]]:
    """A split Caribbean Stud link with a random paytable and random balances."""
    entries = {}
    for category in draw(st.lists(st.sampled_from(PAYING), min_size=1, max_size=6, unique=True)):
        ppm = draw(st.sampled_from([0, 0, 1, 99_999, 100_000, 333_333, 1_000_000]) | st.integers(0, 1_000_000))
        min_cents = draw(st.integers(0 if ppm else 1, 5_000_000))
        entries[category] = PaytableEntry(category, draw(st.sampled_from([MAJOR, MINOR])), min_cents, ppm,
                                          draw(st.booleans()))
    config = link(SPLIT, wager_cents=draw(st.integers(1, 10_000)),
                  paytables={h.CARIBBEAN_STUD: Paytable(h.CARIBBEAN_STUD, entries)})
    balances = {p: draw(st.integers(0, dollars(2_000_000))) for p in (MAJOR, MINOR, RESERVE)}
    return config, balances


@settings(max_examples=60)
@given(custom_links())
def test_closed_form_equals_pricing_for_any_paytable(case: tuple[LinkConfig, dict[str, int]]) -> None:
    config, balances = case
    closed = return_at(config, h.CARIBBEAN_STUD, balances)
    assert closed.expected_uc == return_by_pricing(config, h.CARIBBEAN_STUD, balances)
    assert closed.rtp == closed.expected_uc / (config.wager_cents * UC)
    table = config.paytable(h.CARIBBEAN_STUD)
    for row in closed.categories:  # each row as the engine prices that lone hit: payout, shortfall and rule
        (paid,) = price_round(table, config.pools, balances, [Hit(1, row.category)], seats=1).payouts
        assert (paid.amount_cents, paid.funded_by_operator_cents, paid.rule, paid.pool) == \
            (row.payout_cents, row.funded_cents, row.rule, row.pool)


def test_break_even_of_the_default_split_link_worked_by_hand() -> None:
    # 4 royals take the whole MAJOR, 36 straight flushes max($1,000, 10%), the rest fixed; per 2,598,960 hands the
    # payouts must reach 2,598,960 × 100¢. Above $10,000 the straight flush's floor(B/10) is the larger.
    fixed = 624 * 50_000 + 3_744 * 15_000 + 5_108 * 10_000
    need = FIVE_TOTAL * 100 - fixed
    by_hand = next(b for b in range(15_900_000, 16_100_000) if 4 * b + 36 * max(100_000, b // 10) >= need)
    assert by_hand == 15_981_055
    config = link(SPLIT)
    minor = {MINOR: dollars(1_000)}
    even = break_even(config, h.CARIBBEAN_STUD, minor)
    assert (even.game, even.pool, even.balance_cents) == (h.CARIBBEAN_STUD, MAJOR, by_hand)
    assert return_at(config, h.CARIBBEAN_STUD, {**minor, MAJOR: (by_hand - 1) * UC}).rtp < 1
    assert return_at(config, h.CARIBBEAN_STUD, {**minor, MAJOR: by_hand * UC}).rtp >= 1
    at_reset = Fraction(4 * 1_000_000 + 36 * 100_000 + fixed, FIVE_TOTAL * 100)
    assert even.rtp_at_reset == at_reset == return_at(config, h.CARIBBEAN_STUD, {MAJOR: dollars(10_000)}).rtp
    combined = break_even(link(COMBINED), h.CARIBBEAN_STUD, {})
    assert combined.pool == JACKPOT and combined.balance_cents == by_hand  # same paytable, one pool


def fixed_three_card() -> dict[str, Paytable]:
    """A three card paytable of fixed amounts only (the default's straight flush takes 1% of MAJOR)."""
    return {h.THREE_CARD: Paytable(h.THREE_CARD, {h.STRAIGHT_FLUSH: PaytableEntry(h.STRAIGHT_FLUSH, MINOR, 20_000),
                                                  h.THREE_OF_A_KIND: PaytableEntry(h.THREE_OF_A_KIND, MINOR, 10_000)})}


def test_break_even_without_a_percentage_pool_or_beyond_reach() -> None:
    three = break_even(link(SPLIT, paytables=fixed_three_card()), h.THREE_CARD, {})
    assert (three.pool, three.balance_cents) == (None, None)
    assert three.rtp_at_reset == Fraction(48 * 20_000 + 52 * 10_000, 22_100 * 100)
    tiny = {h.CARIBBEAN_STUD: Paytable(h.CARIBBEAN_STUD, {
        h.ROYAL_FLUSH: PaytableEntry(h.ROYAL_FLUSH, MAJOR, 1_000_000, 1)})}
    never = break_even(link(SPLIT, paytables=tiny), h.CARIBBEAN_STUD, {})
    assert (never.pool, never.balance_cents) == (MAJOR, None)  # 1 ppm of the royal: beyond any pool's range


def test_return_curve_runs_from_the_reset_past_break_even() -> None:
    config = link(SPLIT)
    curve = return_curve(config, h.CARIBBEAN_STUD, {MINOR: dollars(1_000)})
    assert len(curve) == 41 and curve[0][0] == 1_000_000
    assert curve[-1][0] >= 15_981_055 * 5 // 4
    assert [rtp for _, rtp in curve] == sorted(rtp for _, rtp in curve)
    assert curve[0][1] < 1 <= curve[-1][1]
    for cents, rtp in curve[::10]:
        assert rtp == return_at(config, h.CARIBBEAN_STUD, {MINOR: dollars(1_000), MAJOR: cents * UC}).rtp
    short = return_curve(config, h.CARIBBEAN_STUD, {}, points=3, up_to_cents=3_000_000)
    assert [c for c, _ in short] == [1_000_000, 2_000_000, 3_000_000]
    fixed = link(SPLIT, paytables=fixed_three_card())
    assert return_curve(fixed, h.THREE_CARD, {}) == ((0, break_even(fixed, h.THREE_CARD, {}).rtp_at_reset),)
    with pytest.raises(InvalidInput) as bad:
        return_curve(config, h.CARIBBEAN_STUD, {}, up_to_cents=5)
    assert bad.value.field == "up_to_cents" and bad.value.value == 5
    with pytest.raises(InvalidInput) as bad:
        return_curve(config, h.CARIBBEAN_STUD, {}, points=1)
    assert bad.value.field == "points"


def test_wager_shares_of_the_domain_example() -> None:
    config = link(SPLIT)
    shares = wager_shares(config)
    assert shares.per_wager_uc(MAJOR) == 20_000_000  # 20¢ of a $1 wager
    assert shares.per_wager_uc(MINOR) == 7_500_000
    assert shares.per_wager_uc(RESERVE) == 2_500_000
    assert shares.per_wager_uc(RETAINED) == 70_000_000
    assert shares.per_wager_uc(JACKPOT) == 0
    assert shares.rate_version == 1 and shares.wager_cents == 100
    later = RateSet({MAJOR: 300_000, MINOR: 75_000, RESERVE: 25_000}, 600_000, version=2, effective_at_ms=5_000)
    changed = LinkConfig("L1", SPLIT, 100, config.pools, (*config.rate_sets, later), config.paytables)
    assert wager_shares(changed).rate_version == 2
    assert wager_shares(changed, at_ms=4_999).per_wager_uc(MAJOR) == 20_000_000
    assert wager_shares(changed, at_ms=5_000).per_wager_uc(MAJOR) == 30_000_000
    with pytest.raises(InvalidInput) as bad:
        wager_shares(LinkConfig("L1", SPLIT, 100, config.pools, (later,), config.paytables), at_ms=0)
    assert bad.value.field == "rates"


def test_hit_times_per_game_and_link_wide() -> None:
    config = link(SPLIT)
    play = Play({h.CARIBBEAN_STUD: 20, h.THREE_CARD: 4, h.FOUR_CARD: 2}, 6, 60)
    rows = hit_times(config, play)
    stud = {r.category: r for r in rows if r.game == h.CARIBBEAN_STUD}
    royal = stud[h.ROYAL_FLUSH]
    assert royal.probability == Fraction(4, FIVE_TOTAL)
    assert royal.hits_per_hour == Fraction(4 * 20 * 6 * 60, FIVE_TOTAL)
    assert royal.hours_between == Fraction(FIVE_TOTAL, 4 * 7_200) and royal.pool == MAJOR
    assert [r.game for r in rows[:5]] == [h.CARIBBEAN_STUD] * 5
    linked = {r.category: r for r in rows if r.game == LINK_WIDE}
    three_sf = hand_odds(h.THREE_CARD).probability(h.STRAIGHT_FLUSH) * 4 * 6 * 60
    four_sf = hand_odds(h.FOUR_CARD).probability(h.STRAIGHT_FLUSH) * 2 * 6 * 60
    assert linked[h.STRAIGHT_FLUSH].hits_per_hour == stud[h.STRAIGHT_FLUSH].hits_per_hour + three_sf + four_sf
    assert linked[h.STRAIGHT_FLUSH].pool == "MAJOR/MINOR"  # stud's and three card's from MAJOR, four card's MINOR
    assert linked[h.STRAIGHT_FLUSH].probability == linked[h.STRAIGHT_FLUSH].hits_per_hour / (26 * 6 * 60)
    assert linked[h.ROYAL_FLUSH].hits_per_hour == royal.hits_per_hour
    assert set(linked) == {h.ROYAL_FLUSH, h.STRAIGHT_FLUSH, h.FOUR_OF_A_KIND, h.FULL_HOUSE, h.FLUSH,
                           h.THREE_OF_A_KIND}
    idle = hit_times(config, Play({h.CARIBBEAN_STUD: 1, h.FOUR_CARD: 0}, 1, 1))
    assert {r.game for r in idle} == {h.CARIBBEAN_STUD, LINK_WIDE}


def test_bad_input_is_named_and_changes_nothing() -> None:
    config = link(SPLIT, games=(h.CARIBBEAN_STUD,))
    cases: list[tuple[str, object, dict[str, int]]] = [
        ("game", "baccarat", {}), ("game", h.THREE_CARD, {}),
        ("balances_uc", "BOGUS", {"BOGUS": 1}), ("balances_uc[MAJOR]", -1, {MAJOR: -1}),
        ("balances_uc[MAJOR]", 2**53, {MAJOR: 2**53}),
    ]
    for field, value, balances in cases:
        game = value if field == "game" else h.CARIBBEAN_STUD
        for call in (return_at, return_by_pricing, break_even):
            with pytest.raises(InvalidInput) as bad:
                call(config, str(game), balances)
            assert (bad.value.field, bad.value.value) == (field, value), call
    with pytest.raises(InvalidInput) as bad:
        hit_times(config, Play({h.FOUR_CARD: 1}, 1, 1))
    assert (bad.value.field, bad.value.value) == ("game", h.FOUR_CARD)
