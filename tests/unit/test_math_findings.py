"""The certificate's findings (issue 24): what an inspector should look at first, read back from the real figures
of real configurations (no simulation: the exact sections and the long run)."""

from __future__ import annotations

from dataclasses import replace

from jackpot_math.certificate import build_certificate
from jackpot_math.html_page import render_html
from jackpot_math.text import text_summary

from jackpotd.domain import hands as h
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.paytable import default_paytable
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


def test_the_default_holdem_paytable_pays_more_than_it_takes() -> None:
    """The default hold'em bonus paytable (the stud table on the best five of seven) returns several times the
    wager: the certificate says so first."""
    found = _findings(_split(DOMAIN_RATES, h.HOLDEM_BONUS), h.HOLDEM_BONUS)
    subjects = [(x["severity"], x["subject"]) for x in found]
    assert ("critical", h.HOLDEM_BONUS) in subjects and ("critical", "long run") in subjects
    assert ("critical", "operator") in subjects
    assert found[0]["severity"] == "critical"


def test_a_pool_past_break_even_is_a_notice() -> None:
    """A MAJOR rated so high that it often passes the break-even balance: the player then has the edge."""
    config = replace(_split(RateSet({MAJOR: 600_000, MINOR: 75_000, RESERVE: 25_000}, 300_000)))
    found = _findings(config)
    assert any(x["subject"] == h.CARIBBEAN_STUD and "break-even" in x["text"] for x in found), found
