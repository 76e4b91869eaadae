"""Issue 33, pure: CreateLink, UpdateLink, SetRates and SetPaytable refuse a config in which a game's jackpot wager
returns 100% or more at the reset values (the certificate's "return at reset", exactly), unless an RtpOverride
names its approval; other acts are not checked."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction

import pytest
from jackpot_math.certificate import balances_for

from jackpotd.domain import hands as h
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.link import LinkConfig, TableConfig
from jackpotd.domain.paytable import Paytable, PaytableEntry
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, PoolSpec
from jackpotd.odds.returns import break_even, reset_balances, return_at, return_at_reset
from jackpotd.service.commands import (
    Audit,
    CreateLink,
    RegisterTable,
    Request,
    RtpOverride,
    SetPaytable,
    SetRates,
    UpdateLink,
)
from jackpotd.service.decide.admin import AdminState, decide_config
from jackpotd.service.decide.returns import check_returns, paytable_text, require_returns
from jackpotd.service.entries import entry_form
from jackpotd.service.ports import NEW_LINK

from .test_decide_table import NOW, link

AUDIT = Audit("sup", "why", "APP-9")
STATE = AdminState(NOW)
OVERRIDE = RtpOverride("PROMO-7", "seeded opening week")
# Three card poker, $1 wager: 48 straight flushes and 52 trips in 22,100 hands; $221 each returns exactly 100%.
EVEN = [PaytableEntry(h.STRAIGHT_FLUSH, MINOR, 221_00), PaytableEntry(h.THREE_OF_A_KIND, MINOR, 221_00)]
UNDER = [PaytableEntry(h.STRAIGHT_FLUSH, MINOR, 221_00), PaytableEntry(h.THREE_OF_A_KIND, MINOR, 220_99)]
# Caribbean Stud, royal flush alone at 100% of MAJOR: 4 in 2,598,960 returns exactly 100% at a $649,740 reset.
ROYAL_ONLY = [PaytableEntry(h.ROYAL_FLUSH, MAJOR, 0, 1_000_000)]


def req(rid: str = "r1") -> Request:
    return Request(rid, {"x": rid})


def with_table(game: str, entries: list[PaytableEntry], base: LinkConfig | None = None,
               **changes: object) -> LinkConfig:
    """`link()` with `game`'s paytable `entries` (beside Caribbean Stud's default, unless `game` is it)."""
    config = base or link()
    paytable = Paytable(game, {e.category: e for e in entries})
    return replace(config, paytables={**config.paytables, game: paytable}, **changes)  # type: ignore[arg-type]


def test_exactly_100_percent_is_refused_and_a_cent_less_is_accepted() -> None:
    even = check_returns(with_table(h.THREE_CARD, EVEN), None)
    assert [(o.game, o.rtp) for o in even.over] == [(h.THREE_CARD, Fraction(1))] and not even.accepted
    under = check_returns(with_table(h.THREE_CARD, UNDER), None)
    assert under.over == () and under.accepted
    assert return_at_reset(with_table(h.THREE_CARD, UNDER), h.THREE_CARD).rtp == Fraction(2_209_948, 2_210_000)
    assert check_returns(with_table(h.THREE_CARD, EVEN), OVERRIDE).accepted  # approved on purpose


def test_the_return_is_the_certificates_return_at_reset() -> None:
    """The same function at the same balances: jackpot_math's balances with none given, break_even's rtp_at_reset."""
    for config in (link(), with_table(h.THREE_CARD, EVEN), with_table(h.CARIBBEAN_STUD, ROYAL_ONLY)):
        assert reset_balances(config) == balances_for(config, {})
        for game in config.paytables:
            rtp = return_at_reset(config, game).rtp
            assert rtp == break_even(config, game, balances_for(config, {})).rtp_at_reset
            assert rtp == return_at(config, game, balances_for(config, {})).rtp


def test_the_refusal_names_the_game_the_paytable_and_the_exact_return() -> None:
    config = with_table(h.THREE_CARD, EVEN)
    with pytest.raises(InvalidInput) as refused:
        decide_config(CreateLink(req(), config, AUDIT), config, NEW_LINK, STATE)
    e = refused.value
    assert e.field == "games[three-card]" and e.value == "1"
    text = str(e)
    assert "straight_flush $221.00 from MINOR, three_of_a_kind $221.00 from MINOR" in text
    assert "returns 1 (100.0000%)" in text and "MAJOR $10,000.00, MINOR $1,000.00" in text
    assert "must return less than 100%" in text and "rtp_override with an approval reference" in text
    assert paytable_text(link().paytables[h.CARIBBEAN_STUD]).startswith("royal_flush 100% of MAJOR")


def test_create_link_is_refused_unless_overridden() -> None:
    config = with_table(h.THREE_CARD, EVEN)
    with pytest.raises(InvalidInput, match=r"^games\[three-card\]='1'"):
        decide_config(CreateLink(req(), config, AUDIT), config, NEW_LINK, STATE)
    step = decide_config(CreateLink(req(), config, AUDIT, OVERRIDE), config, NEW_LINK, STATE)
    assert entry_form(step.entry)["kind"] == "create_link"
    fine = with_table(h.THREE_CARD, UNDER)
    decide_config(CreateLink(req(), fine, AUDIT), fine, NEW_LINK, STATE)


def test_set_paytable_is_refused_unless_overridden() -> None:
    cmd = SetPaytable(req(), "L", h.THREE_CARD, EVEN, AUDIT)
    with pytest.raises(InvalidInput, match=r"^games\[three-card\]"):
        decide_config(cmd, link(), "v1", STATE)
    decide_config(replace(cmd, rtp_override=OVERRIDE), link(), "v1", STATE)
    decide_config(replace(cmd, entries=UNDER), link(), "v1", STATE)


def test_update_link_reset_values_and_wager_are_checked() -> None:
    base = with_table(h.CARIBBEAN_STUD, ROYAL_ONLY, pools=(PoolSpec(MAJOR, 649_739_99), PoolSpec(MINOR, 100_000),
                                                           PoolSpec(RESERVE)))
    assert check_returns(base, None).accepted
    at_even = [PoolSpec(MAJOR, 649_740_00), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)]
    with pytest.raises(InvalidInput, match=r"^games\[caribbean-stud\]='1'.*MAJOR \$649,740\.00"):
        decide_config(UpdateLink(req(), "L", 0, at_even, None, AUDIT), base, "v1", STATE)
    decide_config(UpdateLink(req(), "L", 0, at_even, None, AUDIT, None, OVERRIDE), base, "v1", STATE)
    fixed = with_table(h.THREE_CARD, UNDER)  # 99.99765% at a $1 wager: a 99-cent wager pays more than it takes
    with pytest.raises(InvalidInput, match=rf"^games\[three-card\]='{Fraction(2_209_948, 2_187_900)}'"):
        decide_config(UpdateLink(req(), "L", 99, [], None, AUDIT), fixed, "v1", STATE)
    decide_config(UpdateLink(req(), "L", 101, [], None, AUDIT), fixed, "v1", STATE)


def test_set_rates_cannot_move_the_return_at_reset_but_never_leaves_a_link_over_100_percent() -> None:
    rates = {MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}
    decide_config(SetRates(req(), "L", rates, 700_000, 0, AUDIT), link(), "v1", STATE)
    over = with_table(h.THREE_CARD, EVEN)  # created under an override (or before issue 33)
    with pytest.raises(InvalidInput, match=r"^games\[three-card\]"):
        decide_config(SetRates(req(), "L", rates, 700_000, 0, AUDIT), over, "v1", STATE)
    decide_config(SetRates(req(), "L", rates, 700_000, 0, AUDIT, OVERRIDE), over, "v1", STATE)


def test_other_acts_are_not_checked() -> None:
    over = with_table(h.THREE_CARD, EVEN)
    cmd = RegisterTable(req(), "L", TableConfig("T3", h.THREE_CARD, 6), AUDIT)
    assert require_returns(cmd, over) is None
    step = decide_config(cmd, over, "v1", STATE)
    assert LinkConfig.from_dict(json.loads(step.new_config)).tables["T3"].game == h.THREE_CARD


def test_an_override_names_its_approval() -> None:
    with pytest.raises(InvalidInput, match=r"^rtp_override\.approval_ref"):
        RtpOverride("  ", "promotion")
    with pytest.raises(InvalidInput, match=r"^rtp_override\.reason"):
        RtpOverride("PROMO-7", "x" * 10_000)


def test_every_default_game_is_checked_on_the_config_it_would_leave() -> None:
    """Whatever the default paytables are, the check's figure is the exact return at reset of each of them."""
    config = link()
    for game in h.GAMES:
        cfg = with_table(game, list(link().paytables[h.CARIBBEAN_STUD].entries.values())
                         if game == h.CARIBBEAN_STUD else [PaytableEntry(h.STRAIGHT_FLUSH, MINOR, 1_00)], config)
        verdict = check_returns(cfg, None)
        assert all(o.rtp >= 1 for o in verdict.over)
        assert {o.game for o in verdict.over} == {g for g in cfg.paytables if return_at_reset(cfg, g).rtp >= 1}
