"""jackpot-math's one codec of link configs from TOML (issue 24): the examples load; a file makes the very config
CreateLink makes of the same request (the servicer's own function); every bad key or value is named with its
value and exits 2; a what-if applies SetRates and UpdateLink as jackpotd decides them."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import ParseDict
from jackpot_math import cli
from jackpot_math.link_toml import PlayFlags, link_of, load_link, play_of_flags
from jackpot_math.served import Refused, served_link
from jackpot_math.toml_shape import BadInput
from jackpot_math.what_if import load_change, proposed

from jackpotd.api.gen.jackpot.v1 import admin_pb2, report_pb2
from jackpotd.api.link_requests import link_config_of
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.odds.config_digest import config_json, config_sha256
from jackpotd.service.math_inputs import game_figures

EXAMPLES = Path(__file__).resolve().parents[2] / "clients" / "math" / "examples"
NOW = 1_780_000_000_000
UC = 1_000_000


def split_doc() -> dict[str, Any]:
    with (EXAMPLES / "split.toml").open("rb") as f:
        return tomllib.load(f)


def test_the_split_example_is_the_domain_default_split_link() -> None:
    link = load_link(EXAMPLES / "split.toml")
    expected = LinkConfig(
        link_id="split-example", mode="SPLIT", wager_cents=100,
        pools=(PoolSpec("MAJOR", 1_000_000), PoolSpec("MINOR", 100_000), PoolSpec("RESERVE")),
        rate_sets=(RateSet({"MAJOR": 200_000, "MINOR": 75_000, "RESERVE": 25_000}, 700_000),),
        paytables={"caribbean-stud": default_paytable("caribbean-stud", "SPLIT")})
    assert link.config == expected
    assert config_sha256(link.config) == config_sha256(expected)
    assert link.balances_uc == {"MAJOR": 1_000_000 * UC, "MINOR": 100_000 * UC, "RESERVE": 0}
    assert link.play == PlayFlags(20, 6, 60)
    assert link.source["kind"] == "file" and len(link.source["sha256"]) == 64
    play = play_of_flags(link.config, link.play)
    assert (dict(play.tables), play.seats_filled, play.hands_per_hour) == ({"caribbean-stud": 20}, 6, 60)


def test_the_combined_example_has_its_paytable_and_tables() -> None:
    link = load_link(EXAMPLES / "combined.toml")
    config = link.config
    assert config.mode == "COMBINED" and [p.name for p in config.pools] == ["JACKPOT", "RESERVE"]
    assert config.pool_spec("JACKPOT").cap_cents == 25_000_000
    assert config.paytables["caribbean-stud"] == default_paytable("caribbean-stud", "COMBINED")
    assert sorted(config.tables) == ["t1", "t2"] and config.tables["t1"].seats == 7
    assert link.balances_uc == {"JACKPOT": 1_000_000 * UC, "RESERVE": 0}  # a pool not named starts at its reset
    play = play_of_flags(config, link.play)  # no [play] tables: the registered tables play
    assert (dict(play.tables), play.seats_filled) == ({"caribbean-stud": 2}, 6)


def test_a_file_makes_the_config_create_link_makes_of_the_same_request() -> None:
    doc = split_doc()
    fields = {k: v for k, v in doc.items() if k not in ("play", "balances")}
    fields["audit"] = {"approval_ref": "REG-2026-7", "reason": "new link", "actor": "admin:ann"}
    request = ParseDict(fields, admin_pb2.CreateLinkRequest())
    config, _, _ = link_of(fields)
    assert config == link_config_of(request)
    assert config.rate_sets[0].approval_ref == "REG-2026-7"  # the servicer takes it from the audit
    assert config_json(config) == config_json(link_config_of(request))


def _set(path: str, value: Any) -> Any:
    """A change of the split example: `path` (dotted, [i] for lists) set to `value`."""
    def change(doc: dict[str, Any]) -> None:
        keys = path.replace("[", ".").replace("]", "").split(".")
        node: Any = doc
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
        node[int(keys[-1]) if isinstance(node, list) else keys[-1]] = value
    return change


@pytest.mark.parametrize(("change", "message"), [
    (_set("rates.pools[0].ppm", -5), "rates.pools[0].ppm=-5: must be a whole number of ppm"),
    (_set("rates.retained_ppm", 600_000), "rates=900000: pool rates and the retained portion must add up"),
    (_set("rates.pools[1].ppm", "75000"), "rates.pools[1].ppm='75000': must be a whole number"),
    (_set("wager_amount_cents", 1.5), "wager_amount_cents=1.5: must be a whole number"),
    (_set("wager_amount_cents", 0), "wager_amount_cents=0:"),
    (_set("pools[1].cap_cents", 5), "pools[1].cap_cents=5: a cap below the reset value"),
    (_set("pools[0].reset_cents", -1), "pools[0].reset_cents=-1:"),
    (_set("pools[0].colour", "red"), "pools[0].colour='red': unknown key"),
    (_set("ratez", 1), "ratez=1: unknown key"),
    (_set("mode", "BOTH"), "mode='BOTH': must be SPLIT or COMBINED"),
    (_set("link_id", "no spaces here"), "link_id='no spaces here'"),
    (_set("games", "caribbean-stud"), "games='caribbean-stud': must be a list"),
    (_set("games", ["baccarat"]), "game='baccarat': unknown game"),
    (_set("play.tables", "x"), "play.tables='x': must be a whole number"),
    (_set("play.speed", 3), "play.speed=3: unknown key"),
    (_set("balances.JACKPOT", 5), "balances.JACKPOT=5: not a pool of the link"),
    (_set("balances.MAJOR", -1), "balances.MAJOR=-1: must be a whole number of cents"),
    (_set("tables", [{"table_id": "t1", "seats": 0}]), "tables[0].seats=0: must be from 1"),
    (_set("tables", [{"table_id": "t1", "seatz": 7}]), "tables[0].seatz=7: unknown key"),
    (_set("paytables", [{"game": "caribbean-stud", "entries": [{"hand": "royal", "pool": "MAJOR", "min_cents": 1}]}]),
     "paytables[0]: paytable.category='royal': not a hand of caribbean-stud"),
    (_set("paytables", [{"game": "caribbean-stud", "entries": [{"hand": "flush", "pool": "MINOR",
                                                                 "min_cents": 100.5}]}]),
     "paytables[0].entries[0].min_cents=100.5: must be a whole number"),
])
def test_a_bad_key_or_value_is_named_with_its_value(change: Any, message: str) -> None:
    doc = split_doc()
    change(doc)
    with pytest.raises(BadInput) as e:
        config, flags, _ = link_of(doc)
        play_of_flags(config, flags)
    assert message in str(e.value)


@pytest.mark.parametrize(("flags", "message"), [
    (PlayFlags(seats_filled=0), "play.seats_filled=0"),
    (PlayFlags(hands_per_hour=0), "play.hands_per_hour=0"),
    (PlayFlags(tables=0), "play.tables="),
    (PlayFlags(tables={"baccarat": 3}), "play.tables.game='baccarat'"),
])
def test_a_play_that_cannot_be_is_named(flags: PlayFlags, message: str) -> None:
    config, _, _ = link_of(split_doc())
    with pytest.raises(BadInput) as e:
        play_of_flags(config, flags)
    assert message in str(e.value)


def test_the_command_line_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text((EXAMPLES / "split.toml").read_text().replace("ppm = 200_000", "ppm = -5"))
    assert cli.main(["certify", "--config", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: rates.pools[0].ppm=-5: must be a whole number of ppm" in err
    assert not (tmp_path / "out").exists()
    for argv, said in ((["certify", "--config", str(tmp_path / "missing.toml")], "cannot read it"),
                       (["certify", "--config", str(EXAMPLES / "split.toml"), "--days", "0"], "--days=0"),
                       (["certify", "--link", "bad link"], "--link='bad link'")):
        assert cli.main(argv) == 2
        assert said in capsys.readouterr().err
    notoml = tmp_path / "x.toml"
    notoml.write_text("rates = [")
    assert cli.main(["certify", "--config", str(notoml)]) == 2
    assert "not TOML" in capsys.readouterr().err


def test_what_if_set_rates_is_a_new_version_in_force_from_now() -> None:
    config, _, _ = link_of(split_doc())
    change = {"set_rates": {"retained_ppm": 680_000, "pools": [{"pool": "MAJOR", "ppm": 250_000},
                                                               {"pool": "MINOR", "ppm": 50_000},
                                                               {"pool": "RESERVE", "ppm": 20_000}]}}
    new = proposed(config, change, NOW)
    assert len(new.rate_sets) == 2 and new.rate_sets[0] == config.rate_sets[0]
    rates = new.rate_sets[1]
    assert (rates.version, rates.effective_at_ms, dict(rates.pools_ppm), rates.retained_ppm) == (
        2, NOW, {"MAJOR": 250_000, "MINOR": 50_000, "RESERVE": 20_000}, 680_000)
    later = copy.deepcopy(change)
    later["set_rates"]["effective_at_ms"] = NOW + 86_400_000
    assert proposed(config, later, NOW).rate_sets[1].effective_at_ms == NOW + 86_400_000
    earlier = copy.deepcopy(change)
    earlier["set_rates"]["effective_at_ms"] = NOW - 86_400_000
    with pytest.raises(BadInput, match=r"rates\.effective_at_ms=.*cannot be retroactive"):
        proposed(config, earlier, NOW)


def test_what_if_update_link_changes_what_it_names_only() -> None:
    config, _, _ = link_of(split_doc())
    new = proposed(config, {"update_link": {"wager_amount_cents": 200}}, NOW)
    assert new.wager_cents == 200 and new.pools == config.pools and new.rate_sets == config.rate_sets
    pools = [{"pool": "MAJOR", "reset_cents": 2_000_000}, {"pool": "MINOR", "reset_cents": 100_000,
                                                          "cap_cents": 500_000}, {"pool": "RESERVE"}]
    both = proposed(config, {"update_link": {"pools": pools, "verification_threshold_cents": 500_000},
                             "set_rates": {"retained_ppm": 700_000,
                                           "pools": [{"pool": "MAJOR", "ppm": 225_000},
                                                     {"pool": "MINOR", "ppm": 50_000},
                                                     {"pool": "RESERVE", "ppm": 25_000}]}}, NOW)
    assert both.pool_spec("MAJOR").reset_cents == 2_000_000 and both.pool_spec("MINOR").cap_cents == 500_000
    assert both.verification_threshold_cents == 500_000 and both.wager_cents == 100
    assert both.rate_sets[-1].pools_ppm["MAJOR"] == 225_000


@pytest.mark.parametrize(("change", "message"), [
    ({}, "the change is empty"),
    ({"set_ratez": {}}, "set_ratez={}: unknown key"),
    ({"set_rates": 5}, "set_rates=5: must be a table"),
    ({"set_rates": {"retained_ppm": 700_000, "pools": [{"pool": "MAJOR", "ppm": -1}]}},
     "set_rates.pools[0].ppm=-1"),
    ({"set_rates": {"retained_ppm": 700_000, "pools": [{"pool": "JACKPOT", "ppm": 300_000}]}},
     "set_rates.pools[0].ppm=300000: not a pool of this link"),
    ({"update_link": {"wager_amount_cents": -100}}, "update_link.wager_amount_cents=-100"),
    ({"update_link": {"pools": [{"pool": "MAJOR", "reset_cents": 5}]}}, "update_link.pools="),
    ({"update_link": {"wager": 200}}, "update_link.wager=200: unknown key"),
])
def test_a_bad_change_is_named(change: dict[str, Any], message: str) -> None:
    config, _, _ = link_of(split_doc())
    with pytest.raises(BadInput) as e:
        proposed(config, change, NOW)
    assert message in str(e.value)


def test_the_rates_change_example_applies_to_the_split_example() -> None:
    config = load_link(EXAMPLES / "split.toml").config
    new = load_change(EXAMPLES / "rates-change.toml", config, NOW)
    assert new.rate_sets[-1].version == 2 and new.rate_sets[-1].pools_ppm["MAJOR"] == 250_000
    assert new.pool_spec("MAJOR").reset_cents == 2_000_000 and new.wager_cents == config.wager_cents


def test_odds_prints_the_exact_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["odds", "--game", "caribbean-stud", "--game", "holdem-bonus"]) == 0
    out = capsys.readouterr().out
    assert "caribbean-stud: 2,598,960 equally likely hands" in out
    assert "holdem-bonus: 133,784,560 equally likely hands" in out
    rows = {tuple(line.split()[:2]) for line in out.splitlines() if line.startswith("  ")}
    for hand, count in (("royal_flush", "4"), ("straight_flush", "36"), ("four_of_a_kind", "624"),
                        ("full_house", "3,744"), ("flush", "5,108"), ("royal_flush", "4,324")):
        assert (hand, count) in rows
    assert "1 in 649,740" in out


def _served(config: LinkConfig, balances: dict[str, int]) -> report_pb2.MathInputs:
    """A GetMath answer as jackpotd makes it (the service's own view of the config and balances)."""
    inputs = report_pb2.MathInputs(link_id=config.link_id, config_json=config_json(config),
                                   config_sha256=config_sha256(config), config_version=3,
                                   balances=[report_pb2.MathBalance(pool=p, ucents=uc) for p, uc in balances.items()])
    for g in game_figures(config, balances):
        inputs.games.add(game=g.game, hands=[report_pb2.HandCount(hand=a, count=n, total=t) for a, n, t in g.hands],
                         expected_ucents_numerator=str(g.expected_uc.numerator),
                         expected_ucents_denominator=str(g.expected_uc.denominator), rtp_ppm=g.rtp_ppm,
                         break_even_pool=g.break_even_pool, break_even_cents=g.break_even_cents)
    return inputs


def test_a_served_link_is_checked_against_its_hash_and_the_tools_own_figures() -> None:
    link = load_link(EXAMPLES / "split.toml")
    inputs = _served(link.config, dict(link.balances_uc))
    served = served_link(inputs, "db:50051")
    assert served.config == link.config and served.balances_uc == link.balances_uc
    assert served.source["server_figures"] == "agree" and served.source["config_version"] == "3"
    inputs.games[0].rtp_ppm += 1  # a server whose engine computes otherwise
    assert served_link(inputs, "db:50051").source["server_figures"].startswith("differ: caribbean-stud rtp_ppm")
    inputs.config_json = inputs.config_json.replace('"wager_cents":100', '"wager_cents":200')
    with pytest.raises(Refused, match="hashes to"):
        served_link(inputs, "db:50051")


def test_certify_a_file_with_a_what_if_writes_the_json_only(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cert"
    assert cli.main(["certify", "--config", str(EXAMPLES / "split.toml"), "--what-if",
                     str(EXAMPLES / "rates-change.toml"), "--no-simulation", "--json-only", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["certificate.json"]  # no HTML, no partial file left
    certificate = json.loads((out / "certificate.json").read_text())
    link = load_link(EXAMPLES / "split.toml")
    assert certificate["config_sha256"] == config_sha256(link.config)
    assert certificate["source"] == dict(link.source) and certificate["simulation"] is None
    changed_fields = {c["field"] for c in certificate["what_if"]["changes"]}
    assert any(f.startswith("rate_sets") for f in changed_fields) and any(f.startswith("pools") for f in changed_fields)
    assert "written:" in capsys.readouterr().out
