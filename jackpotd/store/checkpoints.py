"""Anchors of the ledger's hash chain kept outside the database (docs/DECISIONS.md, Hash chain; issue 19).

The ledger writer appends to `<dir>/<link>.jsonl`, for each link whose head moved, at most once every INTERVAL
seconds, when it stops and when it fences a link, a line `{"at_ms", "hash", "link", "mac", "seq"}` naming the
head it left, plus `marks`: the hash of every MARK_EVERY-th entry it appended since its last line, so the audit
can place an alteration within MARK_EVERY entries. `mac` is the HMAC-SHA256, under a key the database never
sees, of the line's canonical JSON without `mac`. A superuser who rewrites history and recomputes the chain
cannot recompute these. `jackpotd unfence --accept` appends a line with `accepted`: an operator's signed act
accepting the ledger as it then is, after tampering (store/unfence.py).

Embedded setups get a key generated under the state directory's secrets (`default_key_file`); production keeps
the key and the directory on another host, append-only (OPERATIONS.md).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import orjson

from ..canonical import canonical_json

log = logging.getLogger("jackpotd.checkpoints")

MARK_EVERY = 64  # an anchor every this many entries: the audit names an alteration within this many
KEY_FILE = "checkpoint.key"  # the default key's name in the state directory's secrets
_TAIL = 64 * 1024  # bytes of a file's end read for its newest checkpoint


@dataclass(frozen=True, slots=True)
class Anchor:
    """A point of a link's hash chain: an entry's sequence and its hash (seq 0, b"": a link without entries)."""

    seq: int
    hash: bytes


@dataclass(frozen=True, slots=True)
class Acceptance:
    """An operator's act (`jackpotd unfence --accept`) accepting a link's ledger as it now is after tampering:
    who, why, what was found, and the entries recorded as lost (first, last) when the ledger was truncated."""

    by: str
    reason: str
    found: str  # what the writer found: truncated, rewritten
    replaced: Anchor  # the head the anchors held before: the ledger no longer matches it
    lost: tuple[int, int] | None = None

    def fields(self) -> dict[str, object]:
        return {"by": self.by, "reason": self.reason, "found": self.found,
                "replaced": [self.replaced.seq, self.replaced.hash.hex()],
                "lost": None if self.lost is None else list(self.lost)}


@dataclass(frozen=True, slots=True)
class Lift:
    """An operator's act lifting a link's fence (`jackpotd unfence`): who and why."""

    by: str
    reason: str


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A link's chain head at one time (its sequence and that entry's hash), with the marks written since the
    previous checkpoint, and what happened to the link then: the writer fenced it (`fenced`: the fence's kind), an
    operator lifted the fence (`lifted`) or accepted the ledger as it was (`accepted`). A writer lifts a fence only
    when the link's newest line is an operator's act: deleting the fence's row in the database is not one."""

    link_id: str
    seq: int
    hash: bytes
    at_ms: int
    marks: tuple[Anchor, ...] = ()
    accepted: Acceptance | None = None
    fenced: str = ""
    lifted: Lift | None = None

    @property
    def lifts(self) -> bool:
        """Whether the line is an operator's act that lifts the link's fence."""
        return self.lifted is not None or self.accepted is not None

    @property
    def head(self) -> Anchor:
        return Anchor(self.seq, self.hash)

    def points(self) -> list[Anchor]:
        """Every (seq, hash) this line anchors: its marks and its head."""
        return [*self.marks, self.head]


def read_key(path: str | Path) -> bytes:
    """The HMAC key in `path` (its bytes, surrounding whitespace dropped); refused when empty."""
    key = Path(path).read_bytes().strip()
    if not key:
        raise ValueError(f"the checkpoint key file {path} is empty")
    return key


def default_key_file(state_dir: str | Path, *, create: bool) -> Path | None:
    """The embedded setups' key: `<state>/secrets/checkpoint.key` (0600 in a 0700 directory), made on first use
    when `create`; None when it is not there and may not be made."""
    directory = Path(state_dir).resolve() / "secrets"
    path = directory / KEY_FILE
    if path.exists() or not create:
        return path if path.exists() else None
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = directory / f".{KEY_FILE}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # two starts at once agree on one key
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path


def _mac(key: bytes, fields: Mapping[str, object]) -> str:
    return hmac.new(key, canonical_json(dict(fields)).encode(), hashlib.sha256).hexdigest()


def line_of(key: bytes, cp: Checkpoint) -> str:
    """The checkpoint as one JSON line carrying its MAC (lines without marks or acceptance read as they always
    did)."""
    fields: dict[str, object] = {"link": cp.link_id, "seq": cp.seq, "hash": cp.hash.hex(), "at_ms": cp.at_ms}
    if cp.marks:
        fields["marks"] = [[m.seq, m.hash.hex()] for m in cp.marks]
    if cp.accepted is not None:
        fields["accepted"] = cp.accepted.fields()
    if cp.fenced:
        fields["fenced"] = cp.fenced
    if cp.lifted is not None:
        fields["lifted"] = {"by": cp.lifted.by, "reason": cp.lifted.reason}
    return canonical_json({**fields, "mac": _mac(key, fields)})


def parse_line(key: bytes, text: str) -> Checkpoint:
    """A line as a checkpoint; ValueError when it is not one or its MAC does not verify."""
    try:
        fields = orjson.loads(text)
        mac = fields.pop("mac")
        marks = tuple(Anchor(int(s), bytes.fromhex(h)) for s, h in fields.get("marks", ()))
        accepted = _acceptance(fields["accepted"]) if "accepted" in fields else None
        lifted = (Lift(str(fields["lifted"]["by"]), str(fields["lifted"]["reason"])) if "lifted" in fields
                  else None)
        cp = Checkpoint(str(fields["link"]), int(fields["seq"]), bytes.fromhex(fields["hash"]), int(fields["at_ms"]),
                        marks, accepted, str(fields.get("fenced", "")), lifted)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"not a checkpoint ({type(e).__name__}: {e})") from None
    if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(key, fields)):
        raise ValueError("the checkpoint's MAC does not verify (forged, altered or another key)")
    return cp


def _acceptance(raw: Any) -> Acceptance:
    seq, digest = raw["replaced"]
    lost = raw.get("lost")
    return Acceptance(str(raw["by"]), str(raw["reason"]), str(raw["found"]), Anchor(int(seq), bytes.fromhex(digest)),
                      None if lost is None else (int(lost[0]), int(lost[1])))


def file_of(directory: str | Path, link_id: str) -> Path:
    """`<dir>/<link>.jsonl`, the link id quoted so any id is one file name."""
    return Path(directory) / f"{quote(link_id, safe='')}.jsonl"


def append(directory: str | Path, key: bytes, checkpoints: Sequence[Checkpoint]) -> None:
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
                cp = parse_line(key, text)
            except ValueError as e:
                problems.append(f"{path}:{n}: {e}")
                continue
            out.setdefault(cp.link_id, []).append(cp)
    return out, problems


def newest(directory: str | Path, key: bytes, link_id: str) -> Checkpoint | None:
    """The link's last checkpoint whose MAC verifies (read from the file's end), or None."""
    path = file_of(directory, link_id)
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            start = max(0, size - _TAIL)
            f.seek(start)
            data = f.read()
            lines = data.splitlines()[1 if start else 0:]  # the first may be cut
            found = _last_valid(key, lines, link_id)
            if found is None and start:  # a tail of lines that do not verify: look at the whole file
                f.seek(0)
                found = _last_valid(key, f.read().splitlines(), link_id)
            return found
    except FileNotFoundError:
        return None


def _last_valid(key: bytes, lines: list[bytes], link_id: str) -> Checkpoint | None:
    for raw in reversed(lines):
        try:
            cp = parse_line(key, raw.decode())
        except (ValueError, UnicodeDecodeError):
            continue
        if cp.link_id == link_id:  # a line copied from another link's file names another link
            return cp
    return None


def anchored_links(directory: str | Path) -> list[str]:
    """The links that have a file of anchors (a link whose every row was deleted from the database still does)."""
    return sorted(unquote(path.name.removesuffix(".jsonl")) for path in Path(directory).glob("*.jsonl"))


@dataclass
class _Pending:
    head: Anchor
    marks: list[Anchor] = field(default_factory=list)


class Checkpointer:
    """What the ledger writer tells of every head it leaves (`note`), written out at most once every INTERVAL
    seconds per link, always when forced. Never a head below the link's newest checkpoint, nor another hash at
    its sequence: that would bless a truncated or rewritten ledger."""

    INTERVAL = 1.0

    def __init__(self, directory: str | Path, key: bytes) -> None:
        self.directory = Path(directory)
        self.key = key
        self._newest: dict[str, Anchor | None] = {}  # each link's newest checkpoint, read from its file once
        self._pending: dict[str, _Pending] = {}
        self._written_at: dict[str, float] = {}  # monotonic time of each link's last line

    def newest(self, link_id: str) -> Anchor | None:
        """The newest anchor of the link this process knows (its file's last line when first asked)."""
        if link_id not in self._newest:
            cp = newest(self.directory, self.key, link_id)
            self._newest[link_id] = None if cp is None else cp.head
        return self._newest[link_id]

    def last_line(self, link_id: str) -> Checkpoint | None:
        """The link's newest line, read afresh: its anchor, and the act it records if any."""
        cp = newest(self.directory, self.key, link_id)
        self._newest[link_id] = None if cp is None else cp.head
        return cp

    def links(self) -> list[str]:
        """The links with anchors in the directory."""
        return anchored_links(self.directory)

    def record(self, link_id: str, head: Anchor, *, fenced: str = "", lifted: Lift | None = None,
               accepted: Acceptance | None = None) -> None:
        """Append a line of what happened to the link now (a fence, its lifting, an acceptance), at `head`, with
        the marks pending for it; fsynced before it returns."""
        pending = self._pending.pop(link_id, None)
        marks = tuple(pending.marks) if pending is not None else ()
        before = self.newest(link_id)
        keep = tuple(m for m in marks if before is None or m.seq > before.seq)
        self.write([Checkpoint(link_id, head.seq, head.hash, int(time.time() * 1000), keep, accepted, fenced,
                               lifted)])
        self._written_at[link_id] = time.monotonic()

    def note(self, link_id: str, head: Anchor, marks: Sequence[Anchor] = ()) -> None:
        """The writer left this head (and appended these marks on the way)."""
        pending = self._pending.setdefault(link_id, _Pending(head))
        pending.head = head
        pending.marks += marks

    def due(self, force: bool = False) -> list[Checkpoint]:
        """The checkpoints to write now, taken off the pending ones."""
        now, at_ms = time.monotonic(), int(time.time() * 1000)
        out = []
        for link, pending in sorted(self._pending.items()):
            if not force and now - self._written_at.get(link, -1e9) < self.INTERVAL:
                continue
            del self._pending[link]
            before = self.newest(link)
            head = pending.head
            if before is not None and (head.seq < before.seq or (head.seq == before.seq and head != before)):
                log.error("link %s: not anchoring head %d (%s): the newest checkpoint is %d (%s); a head is never "
                          "anchored below it", link, head.seq, head.hash.hex()[:16], before.seq, before.hash.hex()[:16])
                continue
            if before == head and not pending.marks:
                continue
            out.append(Checkpoint(link, head.seq, head.hash, at_ms, tuple(m for m in pending.marks
                                                                        if before is None or m.seq > before.seq)))
            self._written_at[link] = now
        return out

    def write(self, checkpoints: Sequence[Checkpoint]) -> None:
        """Append them (fsynced); they are then each link's newest."""
        if checkpoints:
            append(self.directory, self.key, checkpoints)
            for cp in checkpoints:
                self._newest[cp.link_id] = cp.head

    def forget(self, checkpoints: Sequence[Checkpoint]) -> None:
        """Those were not written after all: they are due again."""
        for cp in checkpoints:
            self.note(cp.link_id, cp.head, cp.marks)
            self._written_at.pop(cp.link_id, None)


def checkpointer_of(key_file: str, directory: str) -> Checkpointer | None:
    """The service's checkpointer when a key file is configured: files under `directory`."""
    if not key_file:
        return None
    return Checkpointer(directory, read_key(key_file))


def load_link(directory: str | Path, key: bytes, link_id: str) -> list[Checkpoint]:
    """The link's checkpoints whose MAC verifies, in the order they were written."""
    try:
        text = file_of(directory, link_id).read_text()
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(parse_line(key, line))
        except ValueError:
            continue
    return [cp for cp in out if cp.link_id == link_id]


def anchors_of(key_file: str, directory: str) -> Callable[[str], list[Checkpoint]]:
    """A link's checkpoints as they are on disk now, MAC-verified (VerifyLedger checks the chain against them);
    none when no key is configured."""
    def of(link_id: str) -> list[Checkpoint]:
        if not key_file:
            return []
        return load_link(directory, read_key(key_file), link_id)

    return of
