"""A first hour that never breaks (issue 32), the CLIs run as a person runs them, as processes, against the session's
jackpotd on a port of its own: they find it through $JACKPOTD_TARGET alone, a malformed one is a usage error naming
it; the reports given no period take the link's current gaming day and say which; and a jackpotd unreachable, a
table suspended or a call refused is one line on standard error, exit 1, within 15 s, never a traceback."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from jackpotd.embedded import free_port

from ..conftest import AUTH_KEY_FILE, unique
from .harness import Client
from .test_reports_days import _create_sydney_link

DEADLINE = 15.0  # issue 32: every failure told within the call's deadline, at most this
ROYAL = "1=As,Ks,Qs,Js,Ts"
NO_HIT = "1=2c,7d,9s,Jh,Kd"


@dataclass(frozen=True)
class Ran:
    """A finished CLI: its exit status, standard output and error, and how long it took."""

    code: int
    out: str
    err: str
    seconds: float


async def run(module: str, *argv: str, target: str | None, timeout: float = 60,
              environ: dict[str, str] | None = None) -> Ran:
    """`python -m MODULE ARGV` with $JACKPOTD_TARGET set to `target` (unset when None) and `environ` added, without
    blocking the loop that serves the session's jackpotd."""
    env = {k: v for k, v in os.environ.items() if k != "JACKPOTD_TARGET"} | (environ or {})
    if target is not None:
        env["JACKPOTD_TARGET"] = target
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", module, *argv, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"{module} {' '.join(argv)}: still running after {timeout} s") from None
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode(), time.monotonic() - started)


def one_failure_line(ran: Ran, prog: str, *said: str) -> None:
    """Exit 1 within DEADLINE, one line on standard error naming `prog` and saying each of `said`."""
    assert ran.code == 1, ran
    assert "Traceback" not in ran.err and ran.err.count("\n") == 1 and ran.err.startswith(f"{prog}: "), ran.err
    assert all(s in ran.err for s in said), ran.err
    assert ran.seconds < DEADLINE, ran


async def test_an_unreachable_jackpotd_is_one_line_from_every_cli(tmp_path: Path) -> None:
    closed = f"127.0.0.1:{free_port()}"  # nothing listens there
    outbox = str(tmp_path / "outbox")
    runs = {
        "jackpot-table": run("jackpot_table.cli", "round", "--table", "demo-table-1", "--hand", NO_HIT,
                             "--outbox-dir", outbox, target=closed),
        "jackpot-table simulate": run("jackpot_table.cli", "simulate", "--rounds", "5", "--tables", "2",
                                      "--outbox-dir", outbox, target=closed),
        "jackpot-floor": run("jackpot_floor.cli", "hits", target=closed),
        "jackpot-report": run("jackpot_finance.cli", "reconcile", "--link", "demo", target=closed),
        "jackpot-report liability": run("jackpot_finance.cli", "liability", "--link", "demo", target=closed),
        "jackpot-math": run("jackpot_math.cli", "certify", "--link", "demo", "--no-simulation", "--out",
                            str(tmp_path / "math"), target=closed),
        "jackpotd": run("jackpotd.cli", "pools", "--link", "demo", target=closed),
        "jackpotd fund": run("jackpotd.cli", "fund", "--pool", "MAJOR", "--cents", "100", "--reason", "r",
                             "--ref", "R-1", target=closed),
    }
    done = dict(zip(runs, await asyncio.gather(*runs.values()), strict=True))
    for name, ran in done.items():
        one_failure_line(ran, name.split()[0], f"jackpotd at {closed} is unreachable (UNAVAILABLE)",
                         "set --target/JACKPOTD_TARGET")
    assert "wagers" not in done["jackpot-table simulate"].out  # it said why instead of a summary of nothing
    assert not (tmp_path / "math").exists()


async def test_a_suspended_table_is_one_line_naming_how_to_resume_it(client: Client, target: str,
                                                                    tmp_path: Path) -> None:
    link, prefix = unique("first"), unique("t")
    table = f"{prefix}1"
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
    await client.register(table, link)
    outbox = str(tmp_path / "outbox")
    # every command below finds jackpotd through $JACKPOTD_TARGET alone (the session's port is not the default)
    assert not target.endswith(":50051")
    suspended = await run("jackpot_floor.cli", "suspend", table, "--link", link, "--reason", "shuffler jammed",
                          target=target)
    assert suspended.code == 0, suspended
    rnd = await run("jackpot_table.cli", "round", "--table", table, "--hand", ROYAL, "--outbox-dir", outbox,
                    target=target)
    one_failure_line(rnd, "jackpot-table", f"table {table} is suspended",
                     f"`jackpot-floor resume {table} --link {link} --reason TEXT --ref REF`")
    sim = await run("jackpot_table.cli", "simulate", "--rounds", "3", "--tables", "1", "--table-prefix", prefix,
                    "--outbox-dir", outbox, target=target)
    one_failure_line(sim, "jackpot-table", f"table {table} is suspended")
    resumed = await run("jackpot_floor.cli", "resume", table, "--link", link, "--reason", "fixed", "--ref",
                        "INSP-1", target=target)
    assert resumed.code == 0, resumed
    played = await run("jackpot_table.cli", "round", "--table", table, "--hand", NO_HIT, "--outbox-dir", outbox,
                       target=target)
    assert played.code == 0 and "1 wager(s) accepted" in played.out, played
    again = await run("jackpot_table.cli", "round", "--table", table, "--hand", NO_HIT, "--outbox-dir", outbox,
                      "--round-id", "r-x", "--wager-cents", "7", target=target)
    one_failure_line(again, "jackpot-table", "INVALID_ARGUMENT", "(round r-x)")  # a refused call: one line too


@pytest.mark.parametrize("value", ["", "localhost"])
async def test_a_malformed_jackpotd_target_is_a_usage_error_naming_it(value: str) -> None:
    runs = [run("jackpot_table.cli", "round", "--table", "t", "--hand", NO_HIT, target=value),
            run("jackpot_finance.cli", "reconcile", "--link", "demo", target=value),
            run("jackpot_floor.cli", "hits", target=value),
            run("jackpotd.cli", "pools", target=value),
            run("jackpot_math.cli", "certify", "--link", "demo", "--out", "x", target=value),
            run("jackpot_signage.cli", "--link", "demo", target=value),
            run("jackpot_console.cli", "serve", target=value)]
    for ran in await asyncio.gather(*runs):
        assert ran.code == 2, ran
        assert f"$JACKPOTD_TARGET is {value!r}" in ran.err and "Traceback" not in ran.err, ran.err


async def test_reconcile_given_no_period_takes_the_links_current_gaming_day(client: Client, target: str,
                                                                           tmp_path: Path) -> None:
    link, table = unique("today"), unique("t")
    await _create_sydney_link(client, link, table)
    await client.commit(table, "r1", [1, 2])

    def today() -> str:  # Sydney's gaming day starts at 06:00 local: the date six hours ago there
        return (datetime.now(ZoneInfo("Australia/Sydney")) - timedelta(hours=6)).date().isoformat()

    before = today()
    html = tmp_path / "today.html"  # the README's quick start line, as pasted but for the link
    ran = await run("jackpot_finance.cli", "reconcile", "--link", link, "--format", "html", "--out", str(html),
                    target=target)
    days = {before, today()}
    assert ran.code == 0, ran
    assert any(ran.err == f"jackpot-report: no --day given: using the link's current gaming day {d} "
                          "(Australia/Sydney, from 06:00)\n" for d in days), ran.err
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    as_json = await run("jackpot_finance.cli", "reconcile", "--link", link, "--format", "json", target=target)
    report = json.loads(as_json.out)
    assert report["gaming_day"] in days and report["link"]["wagers"] == 2, report


async def test_no_cli_picks_a_person_among_several_and_each_act_names_whom(client: Client, target: str,
                                                                          tmp_path: Path) -> None:
    """Two supervisors' tokens, signed with the session's key: none chosen is exit 2 listing both, nothing done;
    $JACKPOTD_TOKEN_FILE chooses, the act says as whom, and the audit trail records that person."""
    link, table = unique("who"), unique("t")
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
    await client.register(table, link)
    creds = tmp_path / "credentials"
    creds.mkdir(mode=0o700)
    shutil.copy(AUTH_KEY_FILE, creds / "auth.key")
    issued = await run("jackpotd.cli", "certs", "--out", str(creds), "--roles", "supervisor:alice,supervisor:bob",
                       target=None)
    assert issued.code == 0, issued
    refused = await run("jackpot_floor.cli", "suspend", table, "--link", link, "--reason", "check",
                        "--credentials", str(creds), target=target)
    assert refused.code == 2 and "Traceback" not in refused.err, refused
    for name in ("supervisor-alice.token", "supervisor-bob.token"):
        assert str(creds / "tokens" / name) in refused.err, refused.err
    assert "JACKPOTD_TOKEN_FILE" in refused.err
    bob = {"JACKPOTD_TOKEN_FILE": str(creds / "tokens" / "supervisor-bob.token")}
    trail = await run("jackpot_floor.cli", "audit", "--link", link, "--json", target=target, environ=bob)
    assert trail.code == 0 and not [e for e in json.loads(trail.out) if e["method"] == "SuspendTable"], trail
    done = await run("jackpot_floor.cli", "suspend", table, "--link", link, "--reason", "check", target=target,
                     environ=bob)
    assert done.code == 0 and "as supervisor:bob" in done.out, done
    trail = await run("jackpot_floor.cli", "audit", "--link", link, "--json", target=target, environ=bob)
    acts = [e for e in json.loads(trail.out) if e["method"] == "SuspendTable"]
    assert [e["actor"] for e in acts] == ["bob"], acts
