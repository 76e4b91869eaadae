"""The certificate's findings (issue 24): what an inspector should look at first, read back from the real figures
of real configurations (no simulation: the exact sections and the long run)."""

from __future__ import annotations

from dataclasses import replace

from jackpot_math.certificate import build_certificate
from jackpot_math.html import render_html
from jackpot_math.text import text_summary

from jackpotd.domain import hands as h
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.paytable import Paytable, default_paytable
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.odds.play import Play


def _split(rates: RateSet, game: str = h.CARIBBEAN_STUD) -> LinkConfig:
    return LinkConfig(link_id="findings", mode=SPLIT, wager_cents=100,
                      pools=(PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)),
                      rate_sets=(rates,), paytables={game: default_paytable(game, SPLIT)})


DOMAIN_RATES = RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000)


def _findings(config: LinkConfig, game: str = h.CARIBBEAN_STUD) -> list[dict[str, str]]:
    cert = build_certificate(config, {"kind": "test"}, Play({game: 20}, 6, 60), {}, days=1, paths=1, seed=1,
                             simulate=False, progress=None)
    found: list[dict[str, str]] = cert["findings"]
    html, text = render_html(cert), text_summary(cert)
    for x in found:  # every finding reaches the page and the terminal
        assert x["text"].split(":")[0] in html.replace("&#x27;", "'")
        assert f"{x['severity'].upper()} {x['subject']}: {x['text']}" in text
    return found


def test_the_domain_link_funds_most_of_what_it_retains() -> None:
    """DOMAIN's fixed Minor prizes cost about 53¢ of a $1 wager and MINOR takes 7.5¢: the operator funds ~45¢ of the
    70¢ it retains. Worth a look, not a loss."""
    found = _findings(_split(DOMAIN_RATES))
    assert [(x["severity"], x["subject"]) for x in found] == [("notice", "operator")], found
    assert "$0.448" in found[0]["text"] and "$0.70" in found[0]["text"]


def test_a_minor_pool_rated_above_its_prizes_keeps_money_for_good() -> None:
    found = _findings(_split(RateSet({MAJOR: 200_000, MINOR: 700_000, RESERVE: 25_000}, 75_000)))
    critical = [x for x in found if x["severity"] == "critical"]
    assert any(x["subject"] == MINOR and "never paid" in x["text"] for x in critical), found


def test_the_stud_paytable_on_holdem_pays_more_than_it_takes() -> None:
    """The Caribbean Stud table on hold'em's best five of seven (the default before issue 33) returns several times
    the wager: the certificate says so first."""
    config = _split(DOMAIN_RATES, h.HOLDEM_BONUS)
    stud = default_paytable(h.CARIBBEAN_STUD, SPLIT)
    config = replace(config, paytables={h.HOLDEM_BONUS: Paytable(h.HOLDEM_BONUS, dict(stud.entries))})
    found = _findings(config, h.HOLDEM_BONUS)
    subjects = [(x["severity"], x["subject"]) for x in found]
    assert ("critical", h.HOLDEM_BONUS) in subjects and ("critical", "long run") in subjects
    assert ("critical", "operator") in subjects
    assert found[0]["severity"] == "critical"


def test_a_pool_past_break_even_is_a_notice() -> None:
    """A MAJOR rated so high that it often passes the break-even balance: the player then has the edge."""
    config = replace(_split(RateSet({MAJOR: 600_000, MINOR: 75_000, RESERVE: 25_000}, 300_000)))
    found = _findings(config)
    assert any(x["subject"] == h.CARIBBEAN_STUD and "break-even" in x["text"] for x in found), found


def test_a_reserve_taking_more_than_resets_draw_keeps_money_for_good() -> None:
    """RESERVE rated above what resets draw from it: the surplus reaches no player unless moved (a notice naming it
    per wager and per year); the page no longer says that no pool keeps money."""
    found = _findings(_split(RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 500_000}, 225_000)))
    reserve = [x for x in found if x["subject"] == RESERVE]
    assert len(reserve) == 1 and "builds up in it" in reserve[0]["text"] and "a year" in reserve[0]["text"], found


def test_a_live_pool_past_break_even_is_a_notice_not_a_fault() -> None:
    """At live balances above break-even the wager returns over 100%: normal for a progressive, so a notice; the
    critical finding is kept for a configuration that pays more than it costs at its reset values."""
    config = _split(DOMAIN_RATES)
    cert = build_certificate(config, {"kind": "test"}, Play({h.CARIBBEAN_STUD: 20}, 6, 60),
                             {MAJOR: 20_000_000 * 1_000_000}, days=1, paths=1, seed=1, simulate=False, progress=None)
    game = [x for x in cert["findings"] if x["subject"] == h.CARIBBEAN_STUD]
    assert [x["severity"] for x in game] == ["notice"] and "past its break-even" in game[0]["text"], cert["findings"]


def test_figures_for_a_rate_set_not_yet_in_force_say_so() -> None:
    config = _split(DOMAIN_RATES)
    later = RateSet({MAJOR: 250_000, MINOR: 50_000, RESERVE: 25_000}, 675_000, 2, 4_102_444_800_000, "APPROVED-2")
    found = _findings(replace(config, rate_sets=(*config.rate_sets, later)))
    rates = [x for x in found if x["subject"] == "rates"]
    assert rates and "version 2" in rates[0]["text"] and "2100-01-01" in rates[0]["text"], found


def test_holdem_tables_carry_the_shared_board_caveat() -> None:
    found = _findings(_split(DOMAIN_RATES, h.HOLDEM_BONUS), h.HOLDEM_BONUS)
    assert any(x["subject"] == h.HOLDEM_BONUS and "shared board is dealt once per round" in x["text"]
               and "estimated" in x["text"] for x in found), found
