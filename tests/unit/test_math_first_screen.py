"""A certificate a reviewer reads in one screen (issue 33): the page and the terminal summary open with the key
figures (what the wager returns, when it breaks even, how often each pool hits), and every figure is in human
units: "none" for a threshold not set, a date for an instant, minutes, hours, days or years for a time between
hits. On a real document of a link of two games (a 2-day simulation of 2 paths) and on the hand-built one."""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest
from jackpot_math.html import render_html
from jackpot_math.key_figures import key_figures
from jackpot_math.text import text_summary
from jackpot_math.units import duration_text, threshold_text, when_text

from jackpotd.domain import hands as h
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import SPLIT
from jackpotd.domain.rates import RateSet
from jackpotd.odds.exact_text import percent_text
from jackpotd.odds.play import Play

from .math_samples import certificate, rate_change, split_config

DAYS_UNDER_ONE = re.compile(r"\b0(\.\d+)? days?\b")
MS = re.compile(r"\b\d[\d,]* ms\b")
GAMES = (h.CARIBBEAN_STUD, h.THREE_CARD)
DEC_2026_UTC_MS = 1_796_169_600_000  # 2026-12-02 00:00 UTC: 11:00 in Sydney (daylight time)


def _two_games(*, what_if: bool) -> dict[str, Any]:
    """The split link with a three card table too, a new rate set from 2026-12-02 and a dual-approval threshold
    not set; a tiny simulation. With `what_if`, a proposed rate change beside it."""
    from jackpot_math.certificate import balances_for, build_certificate

    base = split_config()
    later = RateSet({"MAJOR": 200_000, "MINOR": 75_000, "RESERVE": 25_000}, 700_000, 2, DEC_2026_UTC_MS, "appr-2")
    config = replace(base, time_zone="Australia/Sydney", rate_sets=(*base.rate_sets, later),
                     paytables={**base.paytables, h.THREE_CARD: default_paytable(h.THREE_CARD, SPLIT)})
    return build_certificate(config, {"kind": "file", "path": "two.toml"}, Play({g: 2 for g in GAMES}, 6, 60),
                             balances_for(config, {}), days=2, paths=2, seed=3, simulate=True, progress=None,
                             proposed=rate_change(config) if what_if else None)


@pytest.fixture(scope="module")
def two() -> dict[str, Any]:
    return _two_games(what_if=True)


def _first_section(page: str) -> str:
    """The page's first section, whole: the block a reviewer sees first."""
    start = page.index("<section")
    return page[start:page.index("</section>", start)]


def _answers(side: dict[str, Any]) -> list[str]:
    """What the first screen must hold for every game: the return at reset (two places), the break-even balance
    and each pool's time between hits."""
    out = []
    for g in side["games"].values():
        out.append(percent_text(Fraction(g["break_even"]["rtp_at_reset"]), 2))
        if g["break_even"]["balance_cents"]:
            out.append(g["break_even"]["balance"])
    out += [f"every {p['every']}" for p in key_figures(side)["pools"]]
    return out


def test_the_first_block_of_the_page_answers_the_three_questions_for_every_game(two: dict[str, Any]) -> None:
    page = render_html(two)
    first = _first_section(page)
    assert 'id="key-figures"' in first
    assert page.index('id="key-figures"') < page.index('id="findings"') < page.index('id="configuration"')
    for title in ("What it returns", "When it breaks even", "How often it hits"):
        assert title in first
    assert set(GAMES) <= set(two["games"])
    for side in (two, two["what_if"]["proposed"]):
        for answer in _answers(side):
            assert answer in first, answer
        for game in side["games"]:
            assert f"{game} at reset" in first
    # the long run with the simulated interval beside it, and one sentence saying what that interval is
    low, high = (f"{x * 100:.2f}%" for x in two["simulation"]["rtp_with_meters_ci95"])
    assert f"{two['long_run']['rtp'] * 100:.2f}%" in first and f"95% interval {low} – {high}" in first
    assert "95% confidence interval for the mean return over 2 paths × 2 days" in first
    assert "the long-run figure should fall inside it" in first


def test_the_summary_opens_with_the_same_answers(two: dict[str, Any]) -> None:
    lines = text_summary(two).splitlines()
    first = lines[:lines.index("DETAILS")]
    head = "\n".join(first)
    assert first[3].startswith("KEY FIGURES at 2 caribbean-stud tables + 2 three-card tables")
    for side in (two, two["what_if"]["proposed"]):
        for answer in _answers(side):
            assert answer in head, answer
    # the key figures come before the findings (the hand-built document has one), the findings before the details
    sample = text_summary(certificate()).splitlines()
    finding = next(i for i, line in enumerate(sample) if line.startswith("NOTICE"))
    assert sample.index("HOW OFTEN IT HITS") < finding < sample.index("DETAILS")


def test_no_zero_dollars_for_a_threshold_not_set(two: dict[str, Any]) -> None:
    page = render_html(two)
    thresholds = re.findall(r"threshold</th><td[^>]*>([^<]*)</td>", page)
    assert thresholds and set(thresholds) == {"none"}
    assert threshold_text(0) == threshold_text(None) == "none" and threshold_text(250_000) == "$2,500.00"
    set_one = render_html({**certificate(what_if=False), "config": {**certificate()["config"],
                                                                    "dual_approval_threshold_cents": 1_000_000,
                                                                    "verification_threshold_cents": 500_000}})
    assert re.findall(r"threshold</th><td[^>]*>([^<]*)</td>", set_one) == ["$5,000.00", "$10,000.00"]


def test_instants_are_dates_in_the_links_zone_never_ms(two: dict[str, Any]) -> None:
    page = render_html(two)
    assert MS.search(page) is None, MS.search(page)
    assert MS.search(text_summary(two)) is None
    assert "from the start" in page and "2026-12-02 11:00 Australia/Sydney" in page  # v1 from 0, v2 from a date
    assert when_text(0, "UTC") == "from the start" and when_text(DEC_2026_UTC_MS, "") == "2026-12-02 00:00 UTC"
    # the what-if's new rate set is drawn field by field in the same units, not as JSON
    changes = page[page.index('id="what-if"'):page.index("</section>", page.index('id="what-if"'))]
    assert "{" not in changes and "pools: MAJOR 250,000 ppm (25%)" in changes


def test_no_day_figure_under_one_is_printed_as_days(two: dict[str, Any]) -> None:
    for text in (render_html(two), text_summary(two), render_html(certificate()), text_summary(certificate())):
        assert DAYS_UNDER_ONE.search(text) is None, DAYS_UNDER_ONE.search(text)
    assert "days between" not in render_html(two)


@pytest.mark.parametrize(("hours", "text"), [
    (Fraction(1, 7200), "0.5 seconds"), (Fraction(1, 3600), "1.0 second"), (Fraction(1, 60), "1.0 minute"),
    (Fraction(23, 600), "2.3 minutes"), (Fraction(7, 12), "35 minutes"), (Fraction(9), "9.0 hours"),
    (Fraction(47), "47 hours"), (Fraction(10829, 120), "3.8 days"), (Fraction(24 * 400), "400 days"),
    (Fraction(24 * 365 * 3), "3.0 years"), (Fraction(24 * 365 * 1204), "1,204 years"), (None, "never")])
def test_a_time_between_hits_reads_in_its_natural_unit(hours: Fraction | None, text: str) -> None:
    assert duration_text(hours) == text


def test_the_document_carries_the_key_figures(two: dict[str, Any]) -> None:
    """certificate.json holds the same key figures the page draws (added fields; nothing renamed)."""
    for side in (two, two["what_if"]["proposed"]):
        assert side["key_figures"] == key_figures(side)
        pools = {p["pool"] for p in side["key_figures"]["pools"] if p["game"] == "link"}
        assert pools == {t["pool"] for t in side["hit_times"] if t["game"] != "*"}
        per_game = {(p["game"], p["pool"]) for p in side["key_figures"]["pools"] if p["game"] != "link"}
        assert {g for g, _ in per_game} == set(GAMES)  # two games: each pool per game too


def test_a_certificate_without_a_what_if_or_simulation_opens_the_same_way() -> None:
    from jackpot_math.certificate import balances_for, build_certificate

    config = split_config()
    cert = build_certificate(config, {"kind": "file", "path": "split.toml"}, Play({h.CARIBBEAN_STUD: 20}, 6, 60),
                             balances_for(config, {}), days=1, paths=1, seed=1, simulate=False, progress=None)
    first = _first_section(render_html(cert))
    for answer in _answers(cert):
        assert answer in first
    assert "56.19%" in first and "exact 6085/10829" in first and "MAJOR at $159,810.55" in first
    assert "royal flush every 3.8 days" in first and "no simulation was run" in first
    assert "current" not in first  # one configuration: no columns to compare
    summary = text_summary(cert).splitlines()
    assert summary[3:6] == ["WHAT IT RETURNS (per $1 wagered, one seat)",
                            "  at reset  56.19% (exact 6085/10829)", "  long run  74.81% (solved, not sampled)"]
