"""How a link is played (jackpotd/odds/play.py): from its registered tables, or tables given for its one game."""

from __future__ import annotations

import pytest

from jackpotd.domain import hands as h
from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.link import LinkConfig, TableConfig
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import COMBINED, JACKPOT, RESERVE, PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.odds.play import MAX_TABLES, Play, play_of


def _link(*games: str) -> LinkConfig:
    return LinkConfig(link_id="play", mode=COMBINED, wager_cents=100,
                      pools=(PoolSpec(JACKPOT, 1_000_000), PoolSpec(RESERVE)),
                      rate_sets=(RateSet({JACKPOT: 250_000, RESERVE: 20_000}, 730_000),),
                      paytables={g: default_paytable(g, COMBINED) for g in games})


def test_registered_tables_give_the_mix_and_suspended_ones_play_no_part() -> None:
    config = _link(h.CARIBBEAN_STUD, h.THREE_CARD)
    for t in (TableConfig("a", h.CARIBBEAN_STUD, 7), TableConfig("b", h.CARIBBEAN_STUD, 7),
              TableConfig("c", h.THREE_CARD, 6), TableConfig("d", h.THREE_CARD, 2, suspended=True)):
        config = config.with_table(t)
    play = play_of(config)
    assert play.tables == {h.CARIBBEAN_STUD: 2, h.THREE_CARD: 1} and play.seats_filled == 6


def test_tables_as_one_number_are_for_a_link_of_one_game_only() -> None:
    assert play_of(_link(h.CARIBBEAN_STUD), tables=12).tables == {h.CARIBBEAN_STUD: 12}
    with pytest.raises(InvalidInput, match="give the tables of each game") as e:
        play_of(_link(h.CARIBBEAN_STUD, h.HOLDEM_BONUS), tables=20)
    assert e.value.field == "tables"


def test_a_play_names_what_it_refuses() -> None:
    with pytest.raises(InvalidInput, match=r"tables\[caribbean-stud\]"):
        Play({h.CARIBBEAN_STUD: MAX_TABLES + 1}, 6, 60)
    with pytest.raises(InvalidInput, match="seats_filled"):
        Play({h.CARIBBEAN_STUD: 1}, 0, 60)
