"""Every configuration the project ships is certified in the suite (issue 33): the demo link of `make run`
(jackpotd/demo.py), every file in clients/math/examples (a link, or a what-if change applied to the link it names),
and a link of each game's default paytable, SPLIT and COMBINED. Each is put through the math certificate's own
exact figures, long run and findings (jackpot_math.certificate.build_certificate, no simulation, as
`jackpot-math certify --no-simulation` does), and none may have a critical finding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jackpot_math.certificate import build_certificate
from jackpot_math.findings import CRITICAL
from jackpot_math.link_toml import load_link, play_of_flags
from jackpot_math.toml_shape import read_toml
from jackpot_math.what_if import CHANGE_KEYS, load_change

from jackpotd.demo import demo_config, demo_tables
from jackpotd.domain import hands as h
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.pools import COMBINED, SPLIT
from jackpotd.odds.play import Play, play_of

from .test_default_paytables import default_link

EXAMPLES = Path(__file__).resolve().parents[2] / "clients" / "math" / "examples"
# A what-if change file and the example link it is written against (its header says so).
CHANGES = {"rates-change.toml": "split.toml"}


def _certify(config: LinkConfig, play: Play, balances_uc: dict[str, int] | None = None,
             proposed: LinkConfig | None = None) -> dict[str, Any]:
    return build_certificate(config, {"kind": "test"}, play, balances_uc or {}, days=1, paths=1, seed=1,
                             simulate=False, progress=None, proposed=proposed)


def _critical(certificate: dict[str, Any]) -> list[dict[str, str]]:
    """The critical findings of the configuration and, with a what-if, of the proposal."""
    sides = [certificate, *([certificate["what_if"]["proposed"]] if certificate["what_if"] else [])]
    return [x for side in sides for x in side["findings"] if x["severity"] == CRITICAL]


def _is_change(path: Path) -> bool:
    """A what-if file: only [set_rates] and/or [update_link]."""
    _, doc = read_toml(path)
    return bool(doc) and set(doc) <= set(CHANGE_KEYS)


def test_the_demo_link_has_no_critical_finding() -> None:
    config = demo_config()
    for table in demo_tables():
        config = config.with_table(table)
    certificate = _certify(config, play_of(config))
    assert certificate["play"]["tables"] == {h.CARIBBEAN_STUD: 6}
    assert _critical(certificate) == [], certificate["findings"]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.toml")))
def test_every_example_has_no_critical_finding(name: str) -> None:
    path = EXAMPLES / name
    if _is_change(path):
        assert name in CHANGES, f"{name} is a what-if: name the example link it applies to in CHANGES"
        link = load_link(EXAMPLES / CHANGES[name])
        proposed = load_change(path, link.config, 0)
    else:
        link, proposed = load_link(path), None
    certificate = _certify(link.config, play_of_flags(link.config, link.play), dict(link.balances_uc), proposed)
    assert _critical(certificate) == [], certificate["findings"]


@pytest.mark.parametrize("mode", [SPLIT, COMBINED])
@pytest.mark.parametrize("game", h.GAMES)
def test_a_link_of_each_default_paytable_has_no_critical_finding(game: str, mode: str) -> None:
    """`games = [game]` at the default resets and the DOMAIN rates, 20 tables of 6 seats: nothing critical, and the
    top pool's long-run 95th percentile stays below its break-even (no notice that a player often has the edge)."""
    certificate = _certify(default_link(game, mode), Play({game: 20}, 6, 60))
    assert _critical(certificate) == [], certificate["findings"]
    assert not [x for x in certificate["findings"] if "break-even" in x["text"]], certificate["findings"]
