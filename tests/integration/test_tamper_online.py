"""Issue 19: a ledger the writer did not write is fenced, while the service runs. A superuser truncates the last
entries of a link (fixing the head and the balances), or rewrites one and recomputes every later hash and the head:
within 5 s the link is fenced (UNAVAILABLE, health, metric), nothing is appended at a reused sequence or onto the
rewritten chain, and after a restart it is still fenced. Deleting the fence row does not lift it; only `jackpotd
unfence`, with a reason, once the anchors back the ledger again (restored, or accepted with its losses recorded)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import grpc
import pytest
from prometheus_client import REGISTRY

from jackpotd.api.gen.jackpot.v1 import report_pb2
from jackpotd.store import checkpoints
from jackpotd.store.redis.pools import RedisPools

from ..conftest import Isolated, unique
from .conftest import Private, open_private, start_private
from .harness import Client, eventually, rid, while_unavailable
from .tampering import append_forged, rewrite_reply, truncate
from .test_redis_loss import REFUSE

S = grpc.StatusCode
ROUNDS = 5  # entries: 1 create, 2 register, 3 fund, 4..8 the rounds' commits


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "checkpoint.key"
    path.write_text(secrets.token_hex(32))
    path.chmod(0o600)
    return path


async def _played(c: Client) -> tuple[str, str]:
    link, table = unique("tamp"), unique("t")
    await c.create_link(link, resets={"MAJOR": 1_000_000})
    await c.register(table, link)
    await c.fund(link, "MAJOR", 1_000_000)
    for n in range(ROUNDS):
        await c.commit(table, f"r{n}", [1, 2])
    return link, table


async def _fenced_for(c: Client, link: str, word: str) -> str | None:
    try:
        await c.pools(link)
    except grpc.aio.AioRpcError as e:
        if e.code() == S.UNAVAILABLE and "fenced" in (e.details() or "") and word in (e.details() or ""):
            return e.details()
    return None


async def _health_names(p: Private, link: str) -> bool:
    report = await RedisPools(p.valkey.url).writer_health()
    return report is not None and link in report.problems


async def _last_seq(c: Client, link: str) -> int:
    return int(await c.pg.fetchval("SELECT max(seq) FROM entries WHERE link_id = $1", link))


def _cli(p: Private, isolated: Isolated, key_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JACKPOTD_REDIS_URL": p.valkey.url, "JACKPOTD_POSTGRES_DSN": isolated.dsn,
           "JACKPOTD_CHECKPOINT_KEY_FILE": str(key_file), "JACKPOTD_STATE_DIR": p.settings.state_dir}
    return subprocess.run([sys.executable, "-m", "jackpotd.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
async def served(isolated: Isolated, tmp_path: Path, key_file: Path) -> AsyncIterator[Private]:
    async with open_private(isolated, tmp_path, state_dir=str(tmp_path / "state"),
                            checkpoint_key_file=str(key_file)) as p:
        yield p


async def _superuser(isolated: Isolated) -> asyncpg.Connection:
    return await asyncpg.connect(isolated.dsn)


async def _refused_commit(c: Client, table: str, round_id: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await c.commit(table, round_id, [1])
    assert err.value.code() == S.UNAVAILABLE and "fenced" in (err.value.details() or ""), err.value.details()


async def test_a_truncation_is_fenced_online_and_after_a_restart_then_restored_from_the_journal(
        served: Private, isolated: Isolated, key_file: Path) -> None:
    p, c = served, served.client
    link, table = await _played(c)
    conn = await _superuser(isolated)
    try:
        await truncate(conn, link, 5)  # entries 6..8 gone, the head and the balances made to agree
        why = await eventually(lambda: _fenced_for(c, link, "truncated"), 5, "the truncated link fenced")
        assert "entries 6..8 were removed" in why, why
        assert REGISTRY.get_sample_value("jackpotd_link_fenced", {"link": link}) == 1
        await eventually(lambda: _health_names(p, link), 5, "health naming the fenced link")
        await _refused_commit(c, table, "after")
        assert await _last_seq(c, link) == 5  # nothing appended at a reused sequence
        row = await conn.fetchrow("SELECT kind, seq FROM link_fences WHERE link_id = $1", link)
        assert row is not None and (row["kind"], row["seq"]) == ("truncated", 6), row
        newest = checkpoints.newest(Path(p.settings.state_dir) / "checkpoints", key_file.read_bytes().strip(), link)
        assert newest is not None and newest.seq == 8  # the head the writer left is anchored outside the database

        p.stop.set()  # a restart: the anchors, not the database's fence row, keep it fenced
        await p.task
        await conn.execute("DELETE FROM link_fences WHERE link_id = $1", link)
        p.task, p.stop = await start_private(p.settings)
        await eventually(lambda: _fenced_for(c, link, "truncated"), 5, "still fenced after the restart")
        await _refused_commit(c, table, "after-restart")
        assert await _last_seq(c, link) == 5

        await conn.execute("DELETE FROM link_fences WHERE link_id = $1", link)  # a fence row deleted while it runs
        await eventually(lambda: conn.fetchval("SELECT kind FROM link_fences WHERE link_id = $1", link), 5,
                         "the fence put back by the writer")
        assert await _fenced_for(c, link, "truncated")

        audit = _cli(p, isolated, key_file, "audit")  # the anchors name the exact point of the truncation
        assert audit.returncode == 1, audit.stdout + audit.stderr
        assert "the ledger was truncated: it ends at entry 5" in audit.stdout, audit.stdout
        assert "entries 6..8 were removed" in audit.stdout, audit.stdout
        verified = await c.report.VerifyLedger(report_pb2.VerifyLedgerRequest(link_id=link))
        assert not verified.ok and verified.first_altered_sequence == 6, verified
        assert verified.altered_range_end_sequence == 0  # exact
        listed = _cli(p, isolated, key_file, "fenced")
        assert listed.returncode == 1 and "(truncated)" in listed.stdout and "--restore" in listed.stdout, listed
        refused = _cli(p, isolated, key_file, "unfence", link, "--reason", "looked at it")
        assert refused.returncode == 1 and "stays fenced" in refused.stderr, refused
        assert await _fenced_for(c, link, "truncated")
        restored = _cli(p, isolated, key_file, "unfence", link, "--restore", "--reason", "DBA's deletion undone")
        assert restored.returncode == 0 and "put back from Redis's journal" in restored.stdout, restored
    finally:
        await conn.close()
    retried = rid()  # a retry of one operation: the same request id
    again = await while_unavailable(lambda: c.commit(table, "after-restore", [1], request_id=retried), 10,
                                    "a commit once restored")
    assert again.sequence == 9
    audit = _cli(p, isolated, key_file, "audit")
    assert audit.returncode == 0 and f"{link}: OK" in audit.stdout, audit.stdout + audit.stderr
    acts = await c.pg.fetch("SELECT outcome, reason FROM admin_audit WHERE method = 'Unfence' AND link_id = $1 "
                            "ORDER BY id", link)
    assert [(a["outcome"], a["reason"]) for a in acts] == [("FAILED_PRECONDITION", "looked at it"),
                                                           ("OK", "DBA's deletion undone")]


async def test_a_consistent_rewrite_is_fenced_never_extended_and_can_only_be_accepted_by_an_operator(
        served: Private, isolated: Isolated, key_file: Path) -> None:
    p, c = served, served.client
    link, table = await _played(c)
    conn = await _superuser(isolated)
    try:
        before = bytes(await conn.fetchval("SELECT last_hash FROM links WHERE link_id = $1", link))
        await rewrite_reply(conn, link, 4)  # entry 4's reply, every later hash and the head recomputed
        assert bytes(await conn.fetchval("SELECT last_hash FROM links WHERE link_id = $1", link)) != before
        why = await eventually(lambda: _fenced_for(c, link, "rewritten"), 5, "the rewritten link fenced")
        assert "entry 8" in why, why
        await _refused_commit(c, table, "after")
        assert await _last_seq(c, link) == 8  # nothing appended onto the rewritten chain
        p.stop.set()
        await p.task
        p.task, p.stop = await start_private(p.settings)
        await eventually(lambda: _fenced_for(c, link, "rewritten"), 5, "still fenced after the restart")
        audit = _cli(p, isolated, key_file, "audit")
        assert audit.returncode == 1 and "does not match its anchor at entry" in audit.stdout, audit.stdout
        accepted = _cli(p, isolated, key_file, "unfence", link, "--accept", "--reason", "regulator approved, ref 7")
        assert accepted.returncode == 0 and "accepted as it is" in accepted.stdout, accepted
    finally:
        await conn.close()
    retried = rid()  # a retry of one operation: the same request id
    again = await while_unavailable(lambda: c.commit(table, "after-accept", [1], request_id=retried), 10,
                                    "a commit once accepted")
    assert again.sequence == 9
    audit = _cli(p, isolated, key_file, "audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "accepted the ledger as it was after it was found rewritten" in audit.stdout, audit.stdout
    assert "regulator approved, ref 7" in audit.stdout


async def test_an_accepted_truncation_never_reuses_a_sequence_and_its_rounds_stay_used(
        served: Private, isolated: Isolated, key_file: Path) -> None:
    p, c = served, served.client
    link, table = await _played(c)
    conn = await _superuser(isolated)
    try:
        await truncate(conn, link, 6)  # the commits of r3 and r4 (entries 7, 8) gone
        await eventually(lambda: _fenced_for(c, link, "truncated"), 5, "the truncated link fenced")
        accepted = _cli(p, isolated, key_file, "unfence", link, "--accept", "--reason", "backup lost, approved")
        assert accepted.returncode == 0 and "entries 7..8 recorded as lost" in accepted.stdout, accepted
        lost = await conn.fetch("SELECT seq, kind FROM entries WHERE link_id = $1 AND seq > 6 ORDER BY seq", link)
        assert [(r["seq"], r["kind"]) for r in lost] == [(7, "lost"), (8, "lost")]
    finally:
        await conn.close()
    retried = rid()  # a retry of one operation: the same request id
    again = await while_unavailable(lambda: c.commit(table, "next", [1], request_id=retried), 10,
                                    "a commit once accepted")
    assert again.sequence == 9  # never a sequence number the removed entries had
    with pytest.raises(grpc.aio.AioRpcError) as err:  # a round whose commit was removed is not open, nor reusable
        await c.commit(table, "r4", [1])
    assert err.value.code() == S.FAILED_PRECONDITION and "LOST" in (err.value.details() or ""), err.value.details()
    audit = _cli(p, isolated, key_file, "audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "entries 7..8 recorded as lost" in audit.stdout


async def test_an_entry_appended_behind_the_writers_back_is_fenced_not_followed(
        served: Private, isolated: Isolated, key_file: Path) -> None:
    """A superuser appends an entry of its own after the head the writer left, chained and with the head moved on:
    while the writer holds the link's lease nobody else may write it, so the link is fenced, never written onto."""
    p, c = served, served.client
    link, table = await _played(c)
    conn = await _superuser(isolated)
    try:
        forged = await append_forged(conn, link)
        assert forged == 9
        why = await eventually(lambda: _fenced_for(c, link, "appended"), 5, "the extended link fenced")
        assert "entries 9..9 were appended" in why, why
        await _refused_commit(c, table, "after")
        assert await _last_seq(c, link) == 9  # nothing chained onto the forged entry
        listed = _cli(p, isolated, key_file, "fenced")
        assert listed.returncode == 1 and "(extended)" in listed.stdout, listed
        refused = _cli(p, isolated, key_file, "unfence", link, "--reason", "looks fine to me")
        assert refused.returncode == 1 and "stays fenced" in refused.stderr, refused
    finally:
        await conn.close()


async def test_a_refused_entrys_fence_row_deleted_by_a_dba_is_put_back(
        served: Private, isolated: Isolated, key_file: Path) -> None:
    """Only `jackpotd unfence` lifts a fence: the writer puts a fence's row back when a DBA deletes it, while it runs
    and at its next start."""
    p, c = served, served.client
    link, table = await _played(c)
    conn = await _superuser(isolated)
    try:
        await conn.execute(REFUSE.format(link=link))
        with pytest.raises(grpc.aio.AioRpcError):
            await c.fund(link, "MAJOR", 700)
        await eventually(lambda: _fenced_for(c, link, "refused"), 5, "the link fenced for its refused entry")
        await conn.execute("DROP TRIGGER test_refuse ON entries")
        await conn.execute("DELETE FROM link_fences WHERE link_id = $1", link)
        await eventually(lambda: conn.fetchval("SELECT kind FROM link_fences WHERE link_id = $1", link), 5,
                         "the fence's row put back")
        assert await _fenced_for(c, link, "fenced")
        p.stop.set()
        await p.task
        await conn.execute("DELETE FROM link_fences WHERE link_id = $1", link)  # and while nothing runs
        p.task, p.stop = await start_private(p.settings)
        await eventually(lambda: _fenced_for(c, link, "without `jackpotd unfence`"), 5, "fenced again at start")
        lifted = _cli(p, isolated, key_file, "unfence", link, "--reason", "the trigger was dropped")
        assert lifted.returncode == 0, lifted
    finally:
        await conn.close()
    retried = rid()
    await while_unavailable(lambda: c.commit(table, "after-unfence", [1], request_id=retried), 10,
                            "a commit once unfenced")
