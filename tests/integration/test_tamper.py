"""Tamper evidence that survives a database superuser (issue 10, part 3; docs/DECISIONS.md, Hash chain): the
superuser rewrites a hit, a posting and a stored reply, recomputes the whole chain and the link's head, and
`jackpotd audit` with the checkpoints kept outside the database still fails, naming the first altered entry."""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import asyncpg

from jackpotd.store import checkpoints
from jackpotd.store.ledger import chain_hash
from jackpotd.store.ledger.summaries import ms_of

from ..conftest import Isolated, unique
from .conftest import open_private


async def _recompute_chain(conn: asyncpg.Connection, link: str) -> None:
    """What a superuser who knows the code does after rewriting rows: every hash again, and the head."""
    legs: dict[int, list[tuple[str, int, int]]] = {}
    for r in await conn.fetch("SELECT seq, account, amount_uc, balance_after_uc FROM postings WHERE link_id = $1 "
                              "ORDER BY seq, idx", link):
        legs.setdefault(int(r["seq"]), []).append((r["account"], int(r["amount_uc"]), int(r["balance_after_uc"])))
    prev = b""
    for r in await conn.fetch("SELECT seq, entry::text AS entry, reply, chain_version, created_at FROM entries "
                              "WHERE link_id = $1 ORDER BY seq", link):
        seq = int(r["seq"])
        digest = chain_hash(prev, link, seq, r["entry"], legs.get(seq, []),
                            r["reply"] if r["chain_version"] >= 2 else None,
                            ms_of(r["created_at"]) if r["chain_version"] >= 3 else None)
        await conn.execute("UPDATE entries SET prev_hash = $3, hash = $4 WHERE link_id = $1 AND seq = $2",
                           link, seq, prev, digest)
        prev = digest
    await conn.execute("UPDATE links SET last_hash = $2 WHERE link_id = $1", link, prev)


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
            await _recompute_chain(conn, link)
            out = _audit(env, where)
            assert out.returncode != 0, out.stdout
            assert "does not match checkpoint seq 5: entries after checkpoint seq 0 were rewritten" in out.stdout

            # Then a posting and a hit as well: the first altered entry is named.
            await conn.execute("UPDATE postings SET amount_uc = amount_uc - 1000000, "
                               "balance_after_uc = balance_after_uc - 1000000 "
                               "WHERE link_id = $1 AND seq = $2 AND idx = 0", link, fund_seq)
            await conn.execute("UPDATE hits SET amount_cents = amount_cents + 100 WHERE link_id = $1", link)
            await _recompute_chain(conn, link)
            for t in ("entries", "postings", "hits", "links"):
                await conn.execute(f"ALTER TABLE {t} ENABLE TRIGGER ALL")
        finally:
            await conn.close()
        out = _audit(env, where)
        assert out.returncode != 0, out.stdout
        assert f"first altered entry: seq {fund_seq}: postings rows" in out.stdout, out.stdout
        assert f"entry {hit_seq} altered: hits rows" in out.stdout, out.stdout
        assert "does not match checkpoint seq 5" in out.stdout, out.stdout


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
