"""Where the CLIs find jackpotd and how they say a call failed (issue 32): --target, else $JACKPOTD_TARGET, else
127.0.0.1:50051, a malformed address a usage error naming where it came from, and every failure one line; the
link's current gaming day as the reports take it when given no period."""

from __future__ import annotations

import argparse
import time
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from jackpot_finance import cli as finance
from jackpot_finance.today import UnknownZone, link_day

from jackpotd.domain.gaming_day import day_bounds, day_of
from jackpotd.target import (
    DEFAULT_TARGET,
    TARGET_ENV,
    add_target_flag,
    default_target,
    failure_line,
    target_problem,
)

SYDNEY = ZoneInfo("Australia/Sydney")


@pytest.mark.parametrize("text", ["127.0.0.1:50051", "localhost:1", "jackpotd.jackpotd.svc:50051", "[::1]:50052",
                                  "unix:/run/jackpotd.sock", "dns:///jackpotd:50051"])
def test_addresses_that_are_accepted(text: str) -> None:
    assert target_problem(text) is None


@pytest.mark.parametrize("text", ["", " ", "127.0.0.1", "localhost:", ":50051", "127.0.0.1:0", "127.0.0.1:65536",
                                  "127.0.0.1:port", "http://127.0.0.1:50051", "a b:1", "127.0.0.1:50051\n"])
def test_addresses_that_are_refused(text: str) -> None:
    assert target_problem(text) is not None


def _parse(argv: list[str], monkeypatch: pytest.MonkeyPatch, env: str | None) -> argparse.Namespace:
    if env is None:
        monkeypatch.delenv(TARGET_ENV, raising=False)
    else:
        monkeypatch.setenv(TARGET_ENV, env)
    p = argparse.ArgumentParser(prog="cli")
    add_target_flag(p)
    return p.parse_args(argv)


def test_the_flag_then_the_environment_then_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _parse([], monkeypatch, None).target == DEFAULT_TARGET == "127.0.0.1:50051"
    assert _parse([], monkeypatch, "127.0.0.1:50052").target == "127.0.0.1:50052"
    assert _parse(["--target", "10.0.0.1:7"], monkeypatch, "127.0.0.1:50052").target == "10.0.0.1:7"
    assert _parse(["--target", "10.0.0.1:7"], monkeypatch, "junk").target == "10.0.0.1:7"  # the flag wins
    assert default_target({}) == DEFAULT_TARGET and default_target({TARGET_ENV: "h:1"}) == "h:1"


@pytest.mark.parametrize("value", ["", "127.0.0.1", "127.0.0.1:99999"])
def test_a_malformed_environment_is_a_usage_error_naming_it(value: str, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        _parse([], monkeypatch, value)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert f"${TARGET_ENV} is {value!r}" in err, err


def test_a_malformed_flag_is_a_usage_error_naming_the_flag(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        _parse(["--target", "nowhere"], monkeypatch, None)
    assert done.value.code == 2
    assert "--target is 'nowhere'" in capsys.readouterr().err


def test_the_help_says_where_the_default_comes_from(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse(["--help"], monkeypatch, "127.0.0.1:5%0")
    out = " ".join(capsys.readouterr().out.split())
    assert f"${TARGET_ENV} when set; now 127.0.0.1:5%0, else {DEFAULT_TARGET}" in out, out


REFUSED = ("failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: Failed to connect to remote "
           "host: Connection refused")


@pytest.mark.parametrize("code, details, said", [
    ("UNAVAILABLE", REFUSED, "jackpotd at 127.0.0.1:1 is unreachable (UNAVAILABLE): is it running? start it with "
                             "`make run`, or set --target/JACKPOTD_TARGET"),
    ("UNAVAILABLE", "the ledger is fenced", "UNAVAILABLE: the ledger is fenced: jackpotd at 127.0.0.1:1 cannot"),
    ("DEADLINE_EXCEEDED", "Deadline Exceeded", "did not answer in time (DEADLINE_EXCEEDED): is it running?"),
    ("UNAUTHENTICATED", "bad token", "UNAUTHENTICATED: bad token: give a credential"),
    ("FAILED_PRECONDITION", "a hit\nFORGED ROW\x1b[2J", "FAILED_PRECONDITION: a hit\\nFORGED ROW\\x1b[2J"),
])
def test_a_failed_call_is_one_line_saying_what_to_do(code: str, details: str, said: str) -> None:
    line = failure_line("jackpot-x", "127.0.0.1:1", code, details)
    assert line.startswith("jackpot-x: ") and said in line, line
    assert "\n" not in line and "\x1b" not in line


def test_a_day_starts_at_its_local_start() -> None:
    at = datetime(2026, 12, 7, 18, 59, tzinfo=UTC)  # 05:59 AEDT on 8 December: still the 7th's gaming day
    assert day_of(at, "06:00", SYDNEY) == date(2026, 12, 7)
    assert day_of(datetime(2026, 12, 7, 19, tzinfo=UTC), "06:00", SYDNEY) == date(2026, 12, 8)
    assert day_of(datetime(2026, 12, 8, 5, 59, tzinfo=UTC), "06:00", ZoneInfo("UTC")) == date(2026, 12, 7)
    # across a clock change every instant of a day's bounds is in that day, and the next starts at its end
    for day in (date(2026, 4, 5), date(2026, 10, 4)):
        begin, end = day_bounds(day, "02:30", SYDNEY)
        assert day_of(begin, "02:30", SYDNEY) == day and day_of(end, "02:30", SYDNEY) != day


def test_the_link_day_of_an_instant() -> None:
    at_ms = int(datetime(2026, 12, 8, 1, tzinfo=UTC).timestamp()) * 1000  # 12:00 AEDT on the 8th
    day = link_day(at_ms, "Australia/Sydney", "06:00")
    assert day.said() == "2026-12-08 (Australia/Sydney, from 06:00)"
    assert (day.from_ms, day.to_ms) == (int(datetime(2026, 12, 7, 19, tzinfo=UTC).timestamp()) * 1000,
                                        int(datetime(2026, 12, 8, 19, tzinfo=UTC).timestamp()) * 1000)
    with pytest.raises(UnknownZone, match="Mars/Olympus"):
        link_day(at_ms, "Mars/Olympus", "06:00")


@pytest.mark.parametrize("argv, today", [
    (["reconcile", "--link", "demo"], True),
    (["reconcile", "--link", "demo", "--day", "2024-05-01"], False),
    (["reconcile", "--link", "demo", "--from", "2024-05-01T00:00Z", "--to", "2024-05-02T00:00Z"], False),
    (["export", "--link", "demo", "--out", "x.csv"], True),
    (["export", "--link", "demo", "--out", "x.csv", "--from-seq", "1"], False),
    (["export", "--link", "demo", "--out", "x.csv", "--to-seq", "9"], False),
    (["export", "--link", "demo", "--out", "x.csv", "--from", "2024-05-01T00:00Z", "--to", "2024-05-02T00:00Z"],
     False),
])
def test_the_reports_given_no_period_take_the_current_day(argv: list[str], today: bool) -> None:
    assert finance.parse(argv).today is today


async def test_reconcile_and_export_given_no_period_ask_for_the_current_day(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from .test_finance_render import FakeStub, reconciliation

    rec = reconciliation()  # Australia/Sydney from 06:00; jackpotd's clock at 06:01 AEST on 2 May 2024
    assert rec.generated_at_ms == int(datetime(2024, 5, 1, 20, 1, tzinfo=UTC).timestamp()) * 1000
    stub = FakeStub(rec)
    assert await finance.reconcile(finance.parse(["reconcile", "--link", "demo", "--format", "json"]),
                                   stub) == 0  # type: ignore[arg-type]
    probe, asked = stub.requests
    assert probe.to_ms - probe.from_ms == 1 and not probe.gaming_day  # the lightest call carrying zone and clock
    assert (asked.gaming_day, asked.from_ms, asked.to_ms) == ("2024-05-02", 0, 0)
    assert capsys.readouterr().err == ("jackpot-report: no --day given: using the link's current gaming day "
                                       "2024-05-02 (Australia/Sydney, from 06:00)\n")
    stub = FakeStub(rec)
    args = finance.parse(["export", "--link", "demo", "--out", str(tmp_path / "x.csv")])
    assert await finance.export(args, stub) == 0  # type: ignore[arg-type]
    exported = stub.requests[1]
    assert (exported.from_ms, exported.to_ms, exported.from_sequence) == (
        int(datetime(2024, 5, 1, 20, tzinfo=UTC).timestamp()) * 1000,
        int(datetime(2024, 5, 2, 20, tzinfo=UTC).timestamp()) * 1000, 0)
    assert "exporting the link's current gaming day 2024-05-02 (Australia/Sydney" in capsys.readouterr().err


def test_why_tables_do_not_play_in_one_line(tmp_path: Path) -> None:
    from jackpot_table.controller import ControllerConfig, TableController
    from jackpot_table.failures import not_playing

    made: list[TableController] = []

    def table(name: str, *, heard: bool = False, open_: bool = True, error: tuple[str, str] | None = None,
              ) -> TableController:
        c = TableController(ControllerConfig("h:1", name, str(tmp_path / f"{name}.db")))
        c.last_contact, c.enabled_by_service, c.meter_error, c.link_id = (
            time.monotonic() if heard else 0.0), open_, error, "L"
        made.append(c)
        return c

    try:
        playing = table("t0", heard=True)
        one, two = table("t1", heard=True, open_=False), table("t2", heard=True, open_=False)
        assert one.suspended and not playing.suspended and not_playing("h:1", [playing]) == ""
        assert not_playing("h:1", [playing, one, two]) == (
            "jackpot-table: table t1, t2 are suspended: jackpot wagers are off until a supervisor resumes each with "
            "`jackpot-floor resume TABLE --link L --reason TEXT --ref REF`")
        unknown = table("t3", error=("NOT_FOUND", "table_id='t3': no such table"))
        assert unknown.refused and not_playing("h:1", [unknown, one]) == (
            "jackpot-table: NOT_FOUND: table_id='t3': no such table (and 1 more table(s) not playing)")
        dropped = table("t4", error=("UNAVAILABLE", REFUSED))
        assert not dropped.refused and not_playing("h:1", [dropped]).startswith(
            "jackpot-table: jackpotd at h:1 is unreachable (UNAVAILABLE): is it running?")
        assert "has not answered for 10 s" in not_playing("h:1", [table("t5")])
    finally:
        for c in made:
            c.outbox.close()
