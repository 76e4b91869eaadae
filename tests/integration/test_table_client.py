"""The table controller library and simulator against a real jackpotd (issue: table controller client)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jackpot_table import ControllerConfig, TableController
from jackpot_table.deal import system_rng
from jackpot_table.simulator import Scenario, TableSettings, Tally, play

from jackpotd.api.gen.jackpot.v1 import table_pb2

from ..conftest import unique
from .harness import Client
from .process import ServerProcess


async def tables_on_a_link(client: Client, n: int, game: str = "caribbean-stud") -> tuple[str, list[str]]:
    link = unique("sim")
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000},
                             games=["caribbean-stud", "holdem-bonus", "three-card", "four-card"])
    await client.fund(link, "MAJOR", 1_000_000)
    await client.fund(link, "MINOR", 100_000)
    names = [unique("t") for _ in range(n)]
    for t in names:
        await client.register(t, link, game=game)
    return link, names


async def controllers(target: str, tables: list[str], outbox: Path, silence: float = 10.0) -> list[TableController]:
    return [await TableController(ControllerConfig(target, t, str(outbox / f"{t}.db"), silence_limit=silence)
                                  ).start() for t in tables]


async def ledger_totals(client: Client, link: str) -> dict[str, int]:
    rows = await client.pg.fetch("SELECT account, sum(amount_uc) AS s FROM postings WHERE link_id = $1 "
                                 "GROUP BY account", link)
    return {r["account"]: int(r["s"]) for r in rows}


async def test_service_restart_mid_session_loses_nothing_and_commits_nothing_twice(
        proc_service: tuple[ServerProcess, Client], tmp_path: Path) -> None:
    server, client = proc_service
    link, tables = await tables_on_a_link(client, 4)
    ctrls = await controllers(server.target, tables, tmp_path / "outbox")
    tally = Tally()
    settings = TableSettings(share=0.8, misdeal_rate=0.05, absent_rate=0.05)
    games = asyncio.gather(*(play(c, settings, 60, tally, system_rng()) for c in ctrls))
    while tally.wagers < 150:
        await asyncio.sleep(0.01)
    server.interrupt()
    await asyncio.sleep(1.0)
    await asyncio.to_thread(server.start)
    await games
    for c in ctrls:
        assert await c.resume() == 0  # every saved request got its answer
        await c.close()
    totals = await ledger_totals(client, link)
    assert -totals["wagers"] == tally.wagered_cents * 1_000_000
    assert totals.get("refunds", 0) == tally.refunded_cents * 1_000_000
    assert totals.get("payouts", 0) == tally.paid_cents * 1_000_000
    commits = await client.pg.fetch("SELECT entry->'round'->>'table_id' AS t, entry->'round'->>'round_id' AS r, "
                                    "count(*) AS n FROM entries WHERE link_id = $1 AND kind = 'commit' "
                                    "GROUP BY 1, 2", link)
    assert all(r["n"] == 1 for r in commits)
    assert len(commits) == len(tally.committed)


async def test_a_restarted_controller_resends_its_saved_ids(proc_service: tuple[ServerProcess, Client],
                                                            tmp_path: Path) -> None:
    server, client = proc_service
    link, (table,) = await tables_on_a_link(client, 1)
    outbox = tmp_path / "outbox"
    (first,) = await controllers(server.target, [table], outbox)
    answer = await first.commit("r1", [(1, 100), (2, 100)])
    # The controller saved a settle, then died before it heard the answer.
    settle = table_pb2.SettleRoundRequest(table_id=table, round_id="r1", hands=[
        table_pb2.SeatHand(seat=1, cards=["As", "Ks", "Qs", "Js", "Ts"])])
    first.outbox.request_id("settle", table, "r1", settle.SerializeToString())
    await first.close()
    (second,) = await controllers(server.target, [table], outbox)
    again = await second.commit("r1", [(1, 100), (2, 100)])  # the same operation after the restart
    assert again.sequence == answer.sequence
    assert await second.resume() == 1  # the unanswered settle goes out with its saved id
    settled = await second.settle("r1", {1: ["As", "Ks", "Qs", "Js", "Ts"]})  # and asking again answers the same
    assert [p.hand for p in settled.payouts] == ["royal_flush"]
    await second.close()
    kinds = await client.pg.fetch("SELECT kind, count(*) AS n FROM entries WHERE link_id = $1 "
                                  "AND kind IN ('commit', 'settle') GROUP BY kind", link)
    assert {r["kind"]: r["n"] for r in kinds} == {"commit": 1, "settle": 1}


async def test_silence_turns_jackpot_wagers_off_and_the_service_back_turns_them_on(
        proc_service: tuple[ServerProcess, Client], tmp_path: Path) -> None:
    server, client = proc_service
    _, tables = await tables_on_a_link(client, 3)
    ctrls = await controllers(server.target, tables, tmp_path / "outbox", silence=2.0)
    assert all(c.jackpot_enabled for c in ctrls)
    server.kill9()
    await asyncio.sleep(2.5)  # the silence limit, and a little
    assert not any(c.jackpot_enabled for c in ctrls)
    await asyncio.to_thread(server.start)
    assert all([await c.wait_for_service(10) for c in ctrls])
    for c in ctrls:
        await c.close()


@pytest.mark.parametrize("game", ["holdem-bonus", "three-card", "four-card"])
async def test_other_games_play_on_the_same_link(proc_service: tuple[ServerProcess, Client], tmp_path: Path,
                                                 game: str) -> None:
    server, client = proc_service
    link, tables = await tables_on_a_link(client, 1, game=game)
    ctrls = await controllers(server.target, tables, tmp_path / "outbox")
    tally = Tally()
    forced = {"three-card": ["Ah", "2h", "3h"], "four-card": ["9c", "9d", "9h", "9s", "Kh"],
              "holdem-bonus": ["As", "Ks"]}[game]
    scenario = Scenario({tables[0]: {0: {1: forced}}})
    await play(ctrls[0], TableSettings(game=game, seats=5, share=1.0, misdeal_rate=0, absent_rate=0), 20, tally,
               system_rng(), scenario)
    await ctrls[0].close()
    assert sum(tally.hands.values()) == 20 * 5
    assert tally.hits[{"three-card": "straight_flush", "four-card": "four_of_a_kind",
                       "holdem-bonus": "royal_flush"}[game]] >= (0 if game == "holdem-bonus" else 1)
    totals = await ledger_totals(client, link)
    assert totals.get("payouts", 0) == tally.paid_cents * 1_000_000


# Five-card categories (all 2,598,960 hands); royal, straight flush and four of a kind share a bin so
# that every bin expects well over five hands in 200,000.
FIVE_CARD_BINS = {"royal_flush+straight_flush+four_of_a_kind": 4 + 36 + 624, "full_house": 3_744, "flush": 5_108,
                  "straight": 10_200, "three_of_a_kind": 54_912, "two_pair": 123_552, "pair": 1_098_240,
                  "high_card": 1_302_540}
CHI2_CRITICAL_DF7_P001 = 24.322  # chi-square, 7 degrees of freedom, p = 0.001


@pytest.mark.slow
async def test_two_hundred_thousand_dealt_hands_are_fair(proc_service: tuple[ServerProcess, Client],
                                                         tmp_path: Path) -> None:
    server, client = proc_service
    _, tables = await tables_on_a_link(client, 16)
    ctrls = await controllers(server.target, tables, tmp_path / "outbox")
    tally = Tally()
    settings = TableSettings(share=1.0, misdeal_rate=0.0, absent_rate=0.0)
    rounds = -(-200_000 // (7 * len(tables)))
    await asyncio.gather(*(play(c, settings, rounds, tally, system_rng()) for c in ctrls))
    for c in ctrls:
        await c.close()
    total = sum(tally.hands.values())
    assert total >= 200_000
    observed = {"royal_flush+straight_flush+four_of_a_kind": tally.hands["royal_flush"]
                + tally.hands["straight_flush"] + tally.hands["four_of_a_kind"],
                **{k: tally.hands[k] for k in FIVE_CARD_BINS if "+" not in k}}
    chi2 = sum((observed[k] - total * n / 2_598_960) ** 2 / (total * n / 2_598_960)
               for k, n in FIVE_CARD_BINS.items())
    assert chi2 < CHI2_CRITICAL_DF7_P001, (chi2, observed)


@pytest.mark.parametrize("args", [[], ["simulate"], ["load"]])
def test_jackpot_table_help_explains_itself(args: list[str]) -> None:
    out = subprocess.run([sys.executable, "-m", "jackpot_table.cli", *args, "--help"], capture_output=True,
                         text=True, env={**os.environ, "COLUMNS": "120"})
    assert out.returncode == 0
    assert "usage: jackpot-table" in out.stdout
    assert "--tables" in out.stdout or "simulate" in out.stdout
