"""The math certificate (issue 24, part D2): the JSON document from the odds package's figures, and the HTML page
and terminal summary that show it. The page is tested on a document built by hand (its layout alone) and on the
real document of the DOMAIN split link with a proposed rate change (a tiny simulation: 3 days, 2 paths)."""

from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from jackpot_math.html import render_html
from jackpot_math.text import text_summary

from jackpotd.canonical import canonical_json
from jackpotd.domain import hands as h
from jackpotd.odds.play import Play

from .math_samples import HOSTILE, certificate, rate_change, split_config

CSP_META = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
            'img-src data:">')
SECTIONS = ("schema", "generated_at", "source", "link_id", "config", "config_sha256", "play", "balances_cents",
            "balances_uc", "wager_shares", "games", "hit_times", "long_run", "simulation", "what_if", "methods")
SIDE = ("config", "config_sha256", "balances_cents", "wager_shares", "games", "hit_times", "long_run", "simulation")
GAME = ("hand_odds", "return", "cross_check", "break_even", "return_curve")


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parsed(page: str) -> _Tags:
    """The page's start tags and text."""
    p = _Tags()
    p.feed(page)
    return p


def _self_contained(page: str) -> None:
    """The CSP meta is there, and nothing is loaded: no script, no src/href to another host or any URL at all."""
    assert CSP_META in page
    tags = _parsed(page).tags
    assert not [t for t, _ in tags if t in ("script", "link", "img", "iframe", "object", "embed")]
    refs = [v for _, a in tags for k, v in a.items() if k in ("src", "href", "xlink:href", "action") and v]
    assert refs == []
    assert re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE) is None
    assert "url(" not in page and "@import" not in page


# -- the page and the summary, on a document built by hand --------------------------------------------------------

def test_the_page_is_self_contained_with_both_charts() -> None:
    page = render_html(certificate())
    _self_contained(page)
    svgs = [a for t, a in _parsed(page).tags if t == "svg"]
    ids = [str(a.get("id")) for a in svgs]
    assert any(i.startswith("curve-") for i in ids) and any(i.startswith("bands-") for i in ids), ids
    # the curve draws both configurations with a legend; the bands are side by side per visible pool
    assert page.count('class="curve"') == 2 and page.count('class="legend"') == 2
    assert sorted(i for i in ids if i.startswith("bands-")) == ["bands-MAJOR-current", "bands-MAJOR-proposed",
                                                              "bands-MINOR-current", "bands-MINOR-proposed"]
    assert page.count('class="band"') == 4 and page.count('class="median"') == 4
    assert 'class="break-even"' in page and "100%" in page


def test_a_hostile_link_id_is_text_not_markup() -> None:
    page = render_html(certificate(HOSTILE))
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in page
    text = "".join(_parsed(page).text)
    assert f"link {HOSTILE}" in text  # read back as the very id
    _self_contained(page)


def test_the_what_if_marks_what_differs() -> None:
    page = render_html(certificate())
    assert 'id="what-if"' in page and "rate_sets[1]" in page
    marked = re.findall(r'<td class="num diff">([^<]*)</td>', page)
    assert "250,000 ppm (25%)" in marked and "$35,000.00" in marked  # the proposed MAJOR rate and break-even
    assert "$1.00" not in marked  # the wager did not change: not marked
    assert 'class="side proposed"' in page
    alone = render_html(certificate(what_if=False))
    assert 'id="what-if"' not in alone and "diff" not in re.sub(r"<style>.*</style>", "", alone, flags=re.S)


def test_the_summary_shows_current_and_proposed() -> None:
    summary = text_summary(certificate())
    assert "caribbean-stud  MAJOR at $40,000.00 (4.0× its $10,000.00 reset)  →  MAJOR at $35,000.00" in summary
    assert "1 field(s) change" in summary
    assert "→" not in text_summary(certificate(what_if=False))


# -- the real document ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real() -> dict[str, Any]:
    """The split link's certificate with a proposed rate change, 2 tables, a 3-day simulation of 2 paths."""
    from jackpot_math.certificate import balances_for, build_certificate

    config = split_config()
    seen: list[int] = []
    cert = build_certificate(config, {"kind": "file", "path": "split.toml", "sha256": "00" * 32},
                             Play({h.CARIBBEAN_STUD: 2}, 6, 60), balances_for(config, {}), days=3, paths=2, seed=7,
                             simulate=True, progress=seen.append, proposed=rate_change(config))
    assert seen, "the simulation reported no progress"
    return cert


def test_the_document_is_json_and_has_every_section(real: dict[str, Any]) -> None:
    assert json.loads(json.dumps(real)) == real
    assert set(SECTIONS) <= set(real)
    assert real["schema"] == "jackpot-math/1" and real["generated_at"].endswith("Z")
    for side in (real, real["what_if"]["proposed"]):
        assert set(SIDE) <= set(side)
        assert list(side["games"]) == [h.CARIBBEAN_STUD]
        assert set(GAME) <= set(side["games"][h.CARIBBEAN_STUD])
        assert side["simulation"]["days"] == 3 and side["simulation"]["paths"] == 2
    assert set(real["methods"]) >= {"hand_odds", "return", "break_even", "hit_times", "long_run", "simulation"}


def test_the_certificate_names_the_software_that_produced_it(real: dict[str, Any]) -> None:
    from jackpot_math.html import render_html
    from jackpot_math.text import text_summary

    from jackpotd.software.identity import SoftwareIdentity, software_identity

    assert real["software"] == software_identity().as_dict()
    full = SoftwareIdentity.from_dict(real["software"]).line()
    assert full in render_html(real) and full in text_summary(real)


def test_the_hash_is_of_the_canonical_bytes(real: dict[str, Any]) -> None:
    config = split_config()
    assert real["config"] == config.to_dict()
    assert real["config_sha256"] == hashlib.sha256(canonical_json(config.to_dict()).encode()).hexdigest()
    proposed = real["what_if"]["proposed"]
    assert proposed["config_sha256"] == hashlib.sha256(canonical_json(proposed["config"]).encode()).hexdigest()
    assert proposed["config_sha256"] != real["config_sha256"]


def test_the_exact_figures_are_exact(real: dict[str, Any]) -> None:
    g = real["games"][h.CARIBBEAN_STUD]
    odds = {r["category"]: r for r in g["hand_odds"]["rows"]}
    assert odds["royal_flush"]["count"] == 4 and odds["royal_flush"]["probability"] == "1/649740"
    assert odds["royal_flush"]["one_in"] == "1 in 649,740"
    assert sum(r["count"] for r in odds.values()) == 2_598_960
    # at the reset values: $10,000 royal, $1,000 straight flush, $500/$150/$100, as exact µ¢ of one wager
    expected = (4 * 1_000_000 + 36 * 100_000 + 624 * 50_000 + 3_744 * 15_000 + 5_108 * 10_000) * 10**6
    num, _, den = g["return"]["expected_uc"].partition("/")
    assert int(num) * 2_598_960 == expected * int(den or 1)
    assert g["cross_check"]["agrees"] and g["cross_check"]["by_pricing_uc"] == g["return"]["expected_uc"]
    shares = {r["pool"]: r for r in real["wager_shares"]["rows"]}
    assert shares["MAJOR"]["per_wager_uc"] == 20_000_000 and shares["retained"]["ppm"] == 700_000
    be = g["break_even"]
    assert be["pool"] == "MAJOR" and be["balance_cents"] > 1_000_000
    assert be["balance"] == f"${be['balance_cents'] // 100:,}.{be['balance_cents'] % 100:02d}"
    ppm = [p["rtp_ppm"] for p in g["return_curve"]["points"]]
    assert ppm == sorted(ppm) and ppm[-1] >= 1_000_000  # the curve reaches 100%: past the break-even


def test_the_simulation_is_held_against_the_long_run(real: dict[str, Any]) -> None:
    s, lr = real["simulation"], real["long_run"]
    for key, inside in (("rtp_ci95", "long_run_rtp_in_ci95"), ("rtp_with_meters_ci95", "long_run_rtp_in_meters_ci95")):
        low, high = s[key]
        assert low < high and s[inside] is (low <= lr["rtp"] <= high)
    assert s["rtp_with_meters_ci95"][0] <= s["rtp_with_meters"] <= s["rtp_with_meters_ci95"][1]
    assert s["bands"]["MAJOR"][0]["day"] == 1 and len(s["bands"]["MAJOR"]) == 3


def test_the_what_if_lists_the_changes(real: dict[str, Any]) -> None:
    changes = real["what_if"]["changes"]
    assert [c["field"] for c in changes] == ["rate_sets[1]"]
    assert changes[0]["current"] is None and changes[0]["proposed"]["pools_ppm"]["MAJOR"] == 250_000
    proposed = real["what_if"]["proposed"]
    assert proposed["wager_shares"]["rate_version"] == 2
    assert {r["pool"]: r["per_wager_uc"] for r in proposed["wager_shares"]["rows"]}["MAJOR"] == 25_000_000
    # the same balance axis for both curves, so the chart compares them
    axis = [[p["balance_cents"] for p in s["games"][h.CARIBBEAN_STUD]["return_curve"]["points"]]
            for s in (real, proposed)]
    assert axis[0][-1] == axis[1][-1]


def test_the_real_page_and_summary(real: dict[str, Any]) -> None:
    page = render_html(real)
    _self_contained(page)
    assert page.count("<svg") >= 1 + 2 * 2  # the curve; MAJOR's and MINOR's bands, current and proposed
    assert real["config_sha256"] in page
    summary = text_summary(real)
    assert real["config_sha256"] in summary and "→" in summary


def test_no_simulation_no_section() -> None:
    from jackpot_math.certificate import balances_for, build_certificate

    config = split_config()
    cert = build_certificate(config, {"kind": "file", "path": "split.toml"}, Play({h.CARIBBEAN_STUD: 1}, 6, 60),
                             balances_for(config, {}), days=1, paths=1, seed=1, simulate=False, progress=None)
    assert cert["simulation"] is None and cert["what_if"] is None
    page = render_html(cert)
    _self_contained(page)
    assert "No simulation was run" in page
    json.dumps(cert)
