"""Checkpoints of the ledger's hash chain kept outside the database (docs/DECISIONS.md, Hash chain).

The ledger writer appends, for each link whose head moved, at most once every INTERVAL seconds and when it
stops, a line `{"at_ms", "hash", "link", "mac", "seq"}` to `<dir>/<link>.jsonl`, where `mac` is the
HMAC-SHA256 under a key the database never sees of the line's canonical JSON without `mac`. A superuser who
rewrites history and recomputes the chain cannot recompute these: `jackpotd audit` checks them.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import orjson

from ..canonical import canonical_json


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A link's chain head at one time: its sequence and that entry's hash."""

    link_id: str
    seq: int
    hash: bytes
    at_ms: int


def read_key(path: str | Path) -> bytes:
    """The HMAC key in `path` (its bytes, surrounding whitespace dropped); refused when empty."""
    key = Path(path).read_bytes().strip()
    if not key:
        raise ValueError(f"the checkpoint key file {path} is empty")
    return key


def _mac(key: bytes, fields: Mapping[str, object]) -> str:
    return hmac.new(key, canonical_json(dict(fields)).encode(), hashlib.sha256).hexdigest()


def line_of(key: bytes, cp: Checkpoint) -> str:
    """The checkpoint as one JSON line carrying its MAC."""
    fields: dict[str, object] = {"link": cp.link_id, "seq": cp.seq, "hash": cp.hash.hex(), "at_ms": cp.at_ms}
    return canonical_json({**fields, "mac": _mac(key, fields)})


def file_of(directory: str | Path, link_id: str) -> Path:
    """`<dir>/<link>.jsonl`, the link id quoted so any id is one file name."""
    return Path(directory) / f"{quote(link_id, safe='')}.jsonl"


def append(directory: str | Path, key: bytes, checkpoints: list[Checkpoint]) -> None:
    """Append each checkpoint to its link's file (0600, in a 0700 directory) and fsync."""
    root = Path(directory)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    if root.stat().st_uid == os.geteuid():  # ours: keep it private; a mounted volume's root may not be ours to
        os.chmod(root, 0o700)              # chmod, and its files are 0600 whatever the directory allows
    for cp in checkpoints:
        fd = os.open(file_of(root, cp.link_id), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, (line_of(key, cp) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    dfd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(dfd)  # a new file's name is durable too
    finally:
        os.close(dfd)


def load(directory: str | Path, key: bytes) -> tuple[dict[str, list[Checkpoint]], list[str]]:
    """Every checkpoint under `directory` whose MAC verifies, by link, and what is wrong with the others."""
    out: dict[str, list[Checkpoint]] = {}
    problems: list[str] = []
    for path in sorted(Path(directory).glob("*.jsonl")):
        for n, text in enumerate(path.read_text().splitlines(), 1):
            if not text.strip():
                continue
            try:
                fields = orjson.loads(text)
                mac = fields.pop("mac")
                cp = Checkpoint(str(fields["link"]), int(fields["seq"]), bytes.fromhex(fields["hash"]),
                                int(fields["at_ms"]))
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                problems.append(f"{path}:{n}: not a checkpoint ({type(e).__name__}: {e})")
                continue
            if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(key, fields)):
                problems.append(f"{path}:{n}: the checkpoint's MAC does not verify (forged, altered or another key)")
                continue
            out.setdefault(cp.link_id, []).append(cp)
    return out, problems


class Checkpointer:
    """What the ledger writer calls after each append and at stop: writes the heads that moved, at most once
    every INTERVAL seconds per link (always when forced)."""

    INTERVAL = 10.0

    def __init__(self, directory: str | Path, key: bytes) -> None:
        self.directory = Path(directory)
        self.key = key
        self._written: dict[str, tuple[int, float]] = {}  # link -> (seq, monotonic time) last checkpointed

    def due(self, heads: Mapping[str, tuple[int, bytes]], force: bool = False) -> list[Checkpoint]:
        """The checkpoints to write now for these heads ((seq, hash) by link), marked as written."""
        now, at_ms = time.monotonic(), int(time.time() * 1000)
        out = []
        for link, (seq, digest) in sorted(heads.items()):
            last = self._written.get(link)
            if seq <= 0 or (last is not None and (last[0] == seq or (not force and now - last[1] < self.INTERVAL))):
                continue
            out.append(Checkpoint(link, seq, digest, at_ms))
            self._written[link] = (seq, now)
        return out

    def forget(self, checkpoints: list[Checkpoint]) -> None:
        """Those were not written after all: they are due again."""
        for cp in checkpoints:
            self._written.pop(cp.link_id, None)

    def write(self, checkpoints: list[Checkpoint]) -> None:
        if checkpoints:
            append(self.directory, self.key, checkpoints)


def checkpointer_of(key_file: str, state_dir: str) -> Checkpointer | None:
    """The service's checkpointer when a key file is configured: files under `<state_dir>/checkpoints`."""
    if not key_file:
        return None
    return Checkpointer(Path(state_dir) / "checkpoints", read_key(key_file))


def anchors_of(key_file: str, state_dir: str) -> Callable[[str], list[Checkpoint]]:
    """A link's checkpoints as they are on disk now, MAC-verified (VerifyLedger checks the chain against them);
    none when no key is configured."""
    def of(link_id: str) -> list[Checkpoint]:
        if not key_file or not (Path(state_dir) / "checkpoints").exists():
            return []
        found, _ = load(Path(state_dir) / "checkpoints", read_key(key_file))
        return found.get(link_id, [])

    return of
