"""The history checker (chaos/check.py) against the real stores: rounds played through jackpotd with a Recorder
pass every invariant, by the function and by `python -m chaos.check`; a wrong balance written into the log, then
the ledger's last entry cut off by a superuser, fail the invariants that name them."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import grpc

from chaos import history as h
from chaos import verdicts as v
from chaos.check import Report, Verdict, check, main
from jackpotd.api.gen.jackpot.v1 import table_pb2

from ..conftest import Isolated, unique
from .conftest import open_private
from .harness import Client
from .tampering import truncate

ROOT = Path(__file__).resolve().parents[2]
NO_HIT = ["2c", "5d", "9h", "Js", "Kd"]


async def _logged(rec: h.Recorder, call: h.Call, send: Callable[[], Any], attempt: int = 1) -> Any:
    """One attempt of `call`, logged as the harness's tables log it."""
    rec.send(call, attempt)
    try:
        response = await send()
    except grpc.aio.AioRpcError as e:
        rec.error(call, attempt, e.code().name, e.details() or "")
        raise
    rec.ack(call, attempt, response.sequence, h.pools_of(response))
    return response


async def _play(c: Client, rec: h.Recorder, link: str, tables: list[str]) -> None:
    """Each table commits, settles and voids rounds; one commit is retried with its id (answered from the stored
    reply), one request is given up before it is sent."""
    for t in tables:
        for n in range(2):
            rnd, rid = f"r{n}", f"{t}-c{n}"
            commit = h.Call(f"client-{t}", link, t, "CommitWagers", rid, rnd)
            await _logged(rec, commit, lambda: c.commit(t, rnd, [1, 2], request_id=rid))  # noqa: B023
            if n == 0:  # the answer "lost": the same id again is the same entry, the same reply
                await _logged(rec, commit, lambda: c.commit(t, rnd, [1, 2], request_id=rid), attempt=2)  # noqa: B023
            settle = h.Call(f"client-{t}", link, t, "SettleRound", f"{t}-s{n}", rnd)
            await _logged(rec, settle, lambda: c.settle(t, rnd, {1: NO_HIT}, request_id=f"{t}-s{n}"))  # noqa: B023
        await _logged(rec, h.Call(f"client-{t}", link, t, "CommitWagers", f"{t}-c9", "r9"),
                      lambda: c.commit(t, "r9", [3], request_id=f"{t}-c9"))  # noqa: B023
        void = h.Call(f"client-{t}", link, t, "VoidRound", f"{t}-v9", "r9")
        await _logged(rec, void, lambda: c.table.VoidRound(table_pb2.VoidRoundRequest(
            request_id=f"{t}-v9", table_id=t, round_id="r9", reason="dealer misdeal")))  # noqa: B023
        gone = h.Call(f"client-{t}", link, t, "CommitWagers", f"{t}-gone", "r10")
        rec.send(gone, 1)
        rec.abandon(gone, 1)


def _by_name(report: Report) -> dict[str, Verdict]:
    return {x.name: x for x in report.verdicts}


async def test_the_checker_passes_a_true_history_and_fails_a_tampered_one(isolated: Isolated, tmp_path: Path) -> None:
    state = tmp_path / "state"
    key_file = state / "secrets" / "checkpoint.key"
    key_file.parent.mkdir(parents=True, mode=0o700)
    key_file.write_text(secrets.token_hex(32))
    key_file.chmod(0o600)
    link, tables = unique("chk"), [unique("t"), unique("t")]
    log = tmp_path / "history.jsonl"
    async with open_private(isolated, tmp_path, state_dir=str(state), checkpoint_key_file=str(key_file)) as p:
        c = p.client
        await c.create_link(link, resets={"MAJOR": 1_000_000})
        for t in tables:
            await c.register(t, link)
        await c.fund(link, "MAJOR", 1_000_000)  # an operator's entry between the tables' entries
        with h.Recorder(log) as rec:
            await _play(c, rec, link, tables)

        report = await check(log, isolated.dsn, p.valkey.url, state_dir=state)
        assert report.ok, report.render()
        verdicts = _by_name(report)
        assert set(verdicts) == {v.WELL_FORMED, v.EXACTLY_ONCE, v.SEQUENCES, v.BALANCES, v.HELD_STATE, v.REAL_TIME,
                                 v.AT_MOST_ONCE, v.REDIS, v.CHAIN}
        assert verdicts[v.EXACTLY_ONCE].detail.startswith("12 acknowledged requests (14 acks)")
        assert "2 requests never acknowledged (2 abandoned), 0 of them in the ledger" in verdicts[v.AT_MOST_ONCE].detail
        assert "1 links at the ledger's head with its balances" in verdicts[v.REDIS].detail

        cli = await asyncio.to_thread(subprocess.run, [
            sys.executable, "-m", "chaos.check", "--history", str(log), "--dsn", isolated.dsn, "--redis",
            p.valkey.url, "--state-dir", str(state)], capture_output=True, text=True, timeout=120, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
        assert cli.returncode == 0, cli.stdout + cli.stderr
        # the same verdicts (the writer may have signed another checkpoint in between)
        assert [line.split(":")[0] for line in cli.stdout.splitlines()] == [
            f"PASS {x.name}" for x in report.verdicts], cli.stdout

        # A reply's balance told wrong in the log: the reply-balances invariant names the request and the pool.
        lines = log.read_text().splitlines()
        at = next(i for i, line in enumerate(lines) if '"event":"ack"' in line and '"SettleRound"' in line)
        acked = h.decode(lines[at])
        assert isinstance(acked, h.Ack)
        lines[at] = h.encode(h.Ack(acked.at_ms, acked.call, acked.attempt, acked.sequence,
                                   {**acked.pools, "MAJOR": acked.pools["MAJOR"] + 1}))
        wrong = tmp_path / "wrong.jsonl"
        wrong.write_text("\n".join(lines) + "\n")
        report = await check(wrong, isolated.dsn, p.valkey.url, state_dir=state)
        failed = {x.name for x in report.verdicts if not x.ok}
        assert v.BALANCES in failed and v.EXACTLY_ONCE not in failed, report.render()
        assert f"SettleRound {acked.call.request_id} " in _by_name(report)[v.BALANCES].detail

        p.stop.set()  # the writer stops after the last entry and writes its final checkpoint
        await p.task

        # The ledger's last entry (the last table's void, acknowledged) cut off by a superuser: the ack is not in
        # the ledger, its sequence is above the head, Redis is ahead, and the anchors name the cut.
        conn = await asyncpg.connect(isolated.dsn)
        try:
            head = int(await conn.fetchval("SELECT last_seq FROM links WHERE link_id = $1", link))
            await truncate(conn, link, head - 1)
        finally:
            await conn.close()
        report = await check(log, isolated.dsn, p.valkey.url, state_dir=state, catch_up_s=0.5)
        failed = {x.name for x in report.verdicts if not x.ok}
        assert {v.EXACTLY_ONCE, v.SEQUENCES, v.REDIS, v.CHAIN} <= failed, report.render()
        assert v.BALANCES not in failed and v.WELL_FORMED not in failed, report.render()
        assert f"VoidRound {tables[-1]}-v9 " in _by_name(report)[v.EXACTLY_ONCE].detail
        assert f"Redis at sequence {head}, ahead of the ledger's head {head - 1}" in report.render()


def test_bad_usage_exits_2(tmp_path: Path, capsys: Any) -> None:
    assert main(["--history", str(tmp_path / "none.jsonl"), "--dsn", "postgresql://x", "--redis", "redis://x"]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "h.jsonl").write_text("")
    assert main(["--history", str(tmp_path / "h.jsonl"), "--dsn", "d", "--redis", "r", "--state-dir",
                 str(tmp_path / "nowhere")]) == 2
