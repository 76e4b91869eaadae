"""Tamper evidence that survives a database superuser (issue 10, part 3; docs/DECISIONS.md, Hash chain): the
superuser rewrites a hit, a posting and a stored reply, recomputes the whole chain and the link's head, and
`jackpotd audit` with the checkpoints kept outside the database still fails, naming the first altered entry."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg

from jackpotd.api.gen.jackpot.v1 import table_pb2, table_pb2_grpc
from jackpotd.embedded import free_port
from jackpotd.store import checkpoints

from ..conftest import Isolated, unique
from .conftest import open_private
from .harness import authorized_channel, eventually
from .process import ServerProcess
from .tampering import recompute_chain, rewrite_reply


def _audit(env: dict[str, str], where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jackpotd.cli", "audit", "--checkpoints", str(where)],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=120)


async def test_a_superuser_rewrite_is_named_by_the_audit(isolated: Isolated, tmp_path: Path) -> None:
    key_file = tmp_path / "checkpoint.key"
    key_file.write_text(secrets.token_hex(32))
    key_file.chmod(0o600)
    where = tmp_path / "state" / "checkpoints"

    link, table = unique("tamper"), unique("t")
    async with open_private(isolated, tmp_path, state_dir=str(tmp_path / "state"),
                            checkpoint_key_file=str(key_file)) as p:
        c = p.client
        await c.create_link(link, resets={"MAJOR": 1_000_000})
        await c.register(table, link)
        await c.fund(link, "MAJOR", 1_000_000)
        await c.commit(table, "r1", [1, 2, 3])
        paid = await c.settle(table, "r1", {2: ["As", "Ks", "Qs", "Js", "Ts"]})
        assert [x.hand for x in paid.payouts] == ["royal_flush"]
        p.stop.set()  # the writer stops after the last entry and writes its final checkpoint
        await p.task

        assert stat.S_IMODE(where.stat().st_mode) == 0o700
        files = list(where.glob("*.jsonl"))
        assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
        found, bad = checkpoints.load(where, key_file.read_bytes().strip())
        assert not bad and found[link][-1].seq == 5, (found, bad)

        env = {"JACKPOTD_REDIS_URL": p.valkey.url, "JACKPOTD_POSTGRES_DSN": isolated.dsn,
               "JACKPOTD_CHECKPOINT_KEY_FILE": str(key_file)}
        out = _audit(env, where)
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"{link}: OK" in out.stdout and "verified, 0 refused" in out.stdout

        conn = await asyncpg.connect(isolated.dsn)  # the superuser
        try:
            kinds = {r["kind"]: int(r["seq"]) for r in await conn.fetch(
                "SELECT kind, seq FROM entries WHERE link_id = $1", link)}
            hit_seq = await conn.fetchval("SELECT seq FROM hits WHERE link_id = $1", link)
            commit_seq = next(s for k, s in kinds.items() if "commit" in k.lower())
            fund_seq = next(s for k, s in kinds.items() if "fund" in k.lower())
            assert fund_seq < commit_seq < hit_seq, kinds
            for t in ("entries", "postings", "hits", "links"):
                await conn.execute(f"ALTER TABLE {t} DISABLE TRIGGER ALL")

            # A reply alone, the chain recomputed: nothing inside the database disagrees, the checkpoint does.
            await conn.execute("UPDATE entries SET reply = reply || ' ' WHERE link_id = $1 AND seq = $2",
                               link, commit_seq)
            await recompute_chain(conn, link)
            out = _audit(env, where)
            assert out.returncode != 0, out.stdout
            _placed(out.stdout, commit_seq)  # by the anchors written while it ran (one a second at most) and at 5

            # Then a posting and a hit as well: the first altered entry is named.
            await conn.execute("UPDATE postings SET amount_uc = amount_uc - 1000000, "
                               "balance_after_uc = balance_after_uc - 1000000 "
                               "WHERE link_id = $1 AND seq = $2 AND idx = 0", link, fund_seq)
            await conn.execute("UPDATE hits SET amount_cents = amount_cents + 100 WHERE link_id = $1", link)
            await recompute_chain(conn, link)
            for t in ("entries", "postings", "hits", "links"):
                await conn.execute(f"ALTER TABLE {t} ENABLE TRIGGER ALL")
        finally:
            await conn.close()
        out = _audit(env, where)
        assert out.returncode != 0, out.stdout
        assert f"first altered entry: seq {fund_seq}: postings rows" in out.stdout, out.stdout
        assert f"entry {hit_seq} altered: hits rows" in out.stdout, out.stdout
        assert re.search(r"does not match its anchor at entry \d+", out.stdout), out.stdout


def _placed(out: str, seq: int) -> int:
    """The end of the range the audit places the first altered entry in, which must hold `seq`: from the entry
    after the last anchor that matches to the first that does not (or that very entry, when anchors bound it)."""
    found = re.search(r"the first altered entry is one of (\d+)\.\.(\d+)", out)
    exact = re.search(r"entry (\d+) was rewritten", out)
    assert found or exact, out
    first, last = (int(found[1]), int(found[2])) if found else (int(exact[1]), int(exact[1])) if exact else (0, 0)
    assert first <= seq <= last and last - first < 64, out
    assert f"does not match its anchor at entry {last}" in out, out
    return last


def test_a_forged_or_altered_checkpoint_is_refused(tmp_path: Path) -> None:
    key = b"k" * 32
    cp = checkpoints.Checkpoint("l/1", 7, bytes(32), 1)
    checkpoints.append(tmp_path, key, [cp])
    path = checkpoints.file_of(tmp_path, "l/1")
    assert path.parent == tmp_path
    good = path.read_text()
    path.write_text(good + good.replace('"seq":7', '"seq":8') + checkpoints.line_of(b"other", cp) + "\n")
    found, bad = checkpoints.load(tmp_path, key)
    assert found == {"l/1": [cp]}
    assert len(bad) == 2 and all("MAC does not verify" in b for b in bad), bad


async def test_make_run_keeps_anchors_and_the_audit_places_a_rewrite_within_64_entries(tmp_path: Path) -> None:
    """The default setup (`jackpotd serve` on embedded stores, no key configured) generates a checkpoint key under
    the state directory's secrets and anchors every 64th entry: a consistent rewrite by the superuser is named by
    `jackpotd audit` to a range of at most 64 entries, with no setting given."""
    state = tmp_path / "state"
    server = ServerProcess(free_port(), tmp_path / "serve.log", state_dir=str(state), demo=True)
    await asyncio.to_thread(server.start, 120)
    try:
        key_file = state / "secrets" / "checkpoint.key"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        async with authorized_channel(server.target) as channel:
            stub = table_pb2_grpc.TableServiceStub(channel)
            await eventually(lambda: stub.CommitWagers(_commit("seeded"), timeout=5), 30, "the demo tables registered")
            for n in range(69):
                await stub.CommitWagers(_commit(f"r{n}"), timeout=10)
        head = 9 + 70  # the demo's create, six registers and two fundings, then 70 commits
        key = key_file.read_bytes().strip()
        await eventually(lambda: (checkpoints.newest(state / "checkpoints", key, "demo") or _NONE).seq == head, 10,
                         "the head anchored")
        anchored = checkpoints.load_link(state / "checkpoints", key, "demo")
        assert 64 in {m.seq for cp in anchored for m in cp.marks}, anchored
        endpoints = json.loads((state / "endpoints.json").read_text())
        password = (state / "secrets" / "postgres-owner.password").read_text().strip()
        conn = await asyncpg.connect(host="127.0.0.1", port=endpoints["postgres_port"], user="postgres",
                                     password=password, database="postgres")
        try:
            await rewrite_reply(conn, "demo", 70)
        finally:
            await conn.close()
        out = subprocess.run([sys.executable, "-m", "jackpotd.cli", "audit", "--state-dir", str(state)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 1, out.stdout + out.stderr
        _placed(out.stdout, 70)  # 65..79 when no anchor but the mark at 64 and the head's came between
    finally:
        await asyncio.to_thread(server.interrupt)


_NONE = checkpoints.Checkpoint("", 0, b"", 0)


def _commit(round_id: str) -> table_pb2.CommitWagersRequest:
    return table_pb2.CommitWagersRequest(request_id=str(uuid.uuid4()), table_id="demo-table-1", round_id=round_id,
                                         wagers=[table_pb2.Wager(seat=1, amount_cents=100, ante_placed=True)])
