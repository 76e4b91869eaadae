"""The table controller library and simulator against a real jackpotd (issue: table controller client)."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from jackpot_table import ControllerConfig, TableController
from jackpot_table.deal import system_rng
from jackpot_table.packed import COLUMNS_FROM, accepted_of, seats_of
from jackpot_table.simulator import Scenario, TableSettings, Tally, play

from jackpotd.api.gen.jackpot.v1 import table_pb2
from jackpotd.auth.identity import Role
from jackpotd.domain import evaluate_hand
from jackpotd.domain.paytable import PaytableEntry, default_paytable

from ..conftest import unique
from .harness import Client, eventually, token
from .load import counting_retries
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
    return [await TableController(ControllerConfig(target, t, str(outbox / f"{t}.db"), silence_limit=silence,
                                                   token=token(Role.TABLE, t))).start() for t in tables]


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
    retried: Counter[str] = Counter()
    with counting_retries(lambda table: retried.update([table])):
        games = asyncio.gather(*(play(c, settings, 60, tally, system_rng()) for c in ctrls))
        await eventually(lambda: tally.wagers >= 150 or games.done(), 60, "150 wagers before the restart")
        if games.done():  # mid-session, not after it
            games.result()
            raise AssertionError("the session was over before the restart")
        await asyncio.to_thread(server.interrupt)
        # down until every table has met it: each retries a call the stopped service did not answer
        await eventually(lambda: set(retried) >= set(tables) or games.done(), 60,
                         f"every table retrying while the service is down (retried: {retried})")
        if games.done():
            games.result()
            raise AssertionError("the session was over before every table met the outage")
        await asyncio.to_thread(server.start)
        await asyncio.wait_for(games, 180)
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
        table_pb2.SeatHand(seat=1, cards=["As", "Ks", "Qs", "Js", "Ts"]),
        table_pb2.SeatHand(seat=2, no_hand=table_pb2.MUCKED)])
    first.outbox.request_id("settle", table, "r1", settle.SerializeToString())
    await first.close()
    (second,) = await controllers(server.target, [table], outbox)
    again = await second.commit("r1", [(1, 100), (2, 100)])  # the same operation after the restart
    assert again.sequence == answer.sequence
    assert await second.resume() == 1  # the unanswered settle goes out with its saved id
    settled = await second.settle("r1", {1: ["As", "Ks", "Qs", "Js", "Ts"]}, no_hands={2: "MUCKED"})  # the same
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
    await eventually(lambda: not any(c.jackpot_enabled for c in ctrls), 10,
                     "jackpot wagers off at every table once silent for the 2 s limit")
    await asyncio.to_thread(server.start)
    assert all([await c.wait_for_service(10) for c in ctrls])
    for c in ctrls:
        await c.close()


class RecordingController(TableController):
    """A controller that keeps every settlement it sent (hands and board) with the service's answer."""

    def __init__(self, config: ControllerConfig) -> None:
        super().__init__(config)
        self.settled: dict[str, tuple[dict[int, list[str]], list[str], table_pb2.SettleRoundResponse]] = {}

    async def settle(self, round_id: str, hands: Mapping[int, Sequence[str]], dealer_cards: Sequence[str] = (),
                     board_cards: Sequence[str] = (),
                     no_hands: Mapping[int, str] | None = None) -> table_pb2.SettleRoundResponse:
        answer = await super().settle(round_id, hands, dealer_cards, board_cards, no_hands)
        self.settled[round_id] = ({s: list(c) for s, c in hands.items()}, list(board_cards), answer)
        return answer


def priced(entry: PaytableEntry, pool_before_uc: int) -> int:
    """What one hit of `entry` pays (the only percentage hit of its round): the greater of its minimum
    and its percentage of the pool, floored to the cent (RULES.md §4, §5.7)."""
    return max(entry.min_cents, pool_before_uc * entry.percent_ppm // 1_000_000 // 1_000_000)


# Forced on seat 1 of round 0; the rest is dealt from a seeded RNG, so every card is known in advance.
OTHER_GAMES = {"three-card": (["Ah", "2h", "3h"], "straight_flush"),  # A-2-3 counts the ace low (QLD sch 16)
               "four-card": (["9c", "9d", "9h", "9s", "Kh"], "four_of_a_kind"),
               "holdem-bonus": (["As", "Ks"], None)}  # hole cards: the hand depends on the board
# The default paytables (issue 33) pay hold'em only four of a kind and better: this seed's deal gives each game a
# hit beside the forced one (hold'em four of a kind, three card three of a kind), and no round two share hits.
SEED = 20240612


@pytest.mark.parametrize("game", sorted(OTHER_GAMES))
async def test_other_games_play_on_the_same_link(client: Client, target: str, tmp_path: Path, game: str) -> None:
    link, (table,) = await tables_on_a_link(client, 1, game=game)
    ctrl = await RecordingController(ControllerConfig(target, table, str(tmp_path / "outbox.db"),
                                                      token=token(Role.TABLE, table))).start()
    tally = Tally()
    forced, forced_hand = OTHER_GAMES[game]
    await play(ctrl, TableSettings(game=game, seats=5, share=1.0, misdeal_rate=0, absent_rate=0,
                                         fold_rate=0), 20, tally,
               random.Random(SEED), Scenario({table: {0: {1: forced}}}))
    await ctrl.close()
    assert sum(tally.hands.values()) == 20 * 5 and len(ctrl.settled) == 20
    paytable = default_paytable(game, "SPLIT").entries
    expected_hits: Counter[str] = Counter()
    expected_paid = 0
    for round_id, (hands, board, answer) in ctrl.settled.items():
        assert sorted(hands) == [1, 2, 3, 4, 5] and len(board) == (5 if game == "holdem-bonus" else 0)
        # every seat's hand as the rules make it of the cards dealt (hold'em: the best five of hole cards
        # and board), and the hits exactly the hands of the paytable, each priced by its entry
        categories = {seat: evaluate_hand(game, cards + board) for seat, cards in hands.items()}
        assert {s.seat: s.hand for s in answer.seats} == categories, round_id
        want = sorted((seat, hand, paytable[hand].pool) for seat, hand in categories.items() if hand in paytable)
        assert sorted((p.seat, p.hand, p.pool) for p in answer.payouts) == want, round_id
        assert sum(paytable[p.hand].is_share for p in answer.payouts) <= 1, round_id  # priced() covers one
        for p in answer.payouts:
            assert p.status == "PAID"
            assert p.amount_cents == priced(paytable[p.hand], p.pool_before_ucents), (round_id, p)
            expected_paid += p.amount_cents
        expected_hits.update(hand for _, hand, _ in want)
    first_hands, _, first_answer = ctrl.settled["r0"]
    assert first_hands[1] == forced
    if forced_hand is not None:
        assert [(p.seat, p.hand) for p in first_answer.payouts if p.seat == 1] == [(1, forced_hand)]
    assert expected_hits, "the seeded deal should give this game at least one hit"
    assert tally.hits == expected_hits
    assert tally.paid_cents == expected_paid
    totals = await ledger_totals(client, link)
    assert totals.get("payouts", 0) == expected_paid * 1_000_000


@pytest.mark.parametrize("args", [[], ["simulate"], ["load"]])
def test_jackpot_table_help_explains_itself(args: list[str]) -> None:
    out = subprocess.run([sys.executable, "-m", "jackpot_table.cli", *args, "--help"], capture_output=True,
                         text=True, env={**os.environ, "COLUMNS": "120"})
    assert out.returncode == 0
    assert "usage: jackpot-table" in out.stdout
    assert "--tables" in out.stdout or "simulate" in out.stdout


async def test_jackpot_table_round_plays_the_named_cards_once(client: Client, target: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from jackpot_table.cli import parser, run

    link, (table,) = await tables_on_a_link(client, 1)
    argv = ["round", "--target", target, "--table", table, "--round-id", "r1", "--outbox-dir", str(tmp_path),
            "--hand", "1=As,Ks,Qs,Js,Ts", "--hand", "2=2c,7d,9s,Jh,Kd"]
    assert await run(parser().parse_args(argv)) == 0
    first = capsys.readouterr().out
    assert "2 wager(s) accepted" in first and "seat 1: royal flush wins" in first and "from MAJOR" in first
    assert await run(parser().parse_args(argv)) == 0  # the same round again: answered from the outbox, once
    assert capsys.readouterr().out == first
    rows = await client.pg.fetch("SELECT seq FROM entries WHERE link_id = $1 AND kind = 'settle'", link)
    assert len(rows) == 1


def test_jackpot_table_round_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    from jackpot_table.cli import parser

    with pytest.raises(SystemExit) as done:
        parser().parse_args(["round", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--hand SEAT=CARDS" in out and "jackpot-table round --table demo-table-1" in out


async def test_a_controller_sends_a_big_round_packed_and_reads_the_packed_answer(client: Client, target: str,
                                                                                 tmp_path: Path) -> None:
    """An online table of more than COLUMNS_FROM seats: the round goes as columns (API.md Columns) and comes back
    as columns, read by `packed.accepted_of` / `packed.seats_of`; its hit paid as for any table."""
    link = unique("online")
    await client.create_link(link, resets={"MAJOR": 1_000_000, "MINOR": 100_000})
    await client.fund(link, "MAJOR", 1_000_000)
    table = unique("online")
    await client.register(table, link, seats=COLUMNS_FROM * 3)
    ctrl = await TableController(ControllerConfig(target, table, str(tmp_path / "outbox.db"),
                                                  token=token(Role.TABLE, table))).start()
    try:
        seats = range(1, COLUMNS_FROM * 3 + 1)
        committed = await ctrl.commit("r1", [(s, 100) for s in seats])
        assert committed.HasField("accepted_columns") and not committed.accepted
        assert [(a.seat, a.amount_cents) for a in accepted_of(committed)] == [(s, 100) for s in seats]
        hands = {7: ["As", "Ks", "Qs", "Js", "Ts"], 100: ["2h", "2d", "5c", "8s", "Jd"]}
        settled = await ctrl.settle("r1", hands, ["3c", "4d", "9h", "Tc", "Qd"],
                                    no_hands={s: "FOLDED" for s in seats if s not in hands})
    finally:
        await ctrl.close()
    assert settled.HasField("seat_columns") and not settled.seats
    rows = seats_of(settled)
    assert len(rows) == len(seats) and rows[6] == (7, "royal_flush", "") and rows[99] == (100, "pair", "")
    assert rows[0] == (1, "", "FOLDED")
    assert [(p.seat, p.hand, p.pool) for p in settled.payouts] == [(7, "royal_flush", "MAJOR")]
