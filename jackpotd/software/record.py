"""The distribution's own record (PEP 376/627 RECORD), read and compared with what is on disk: pure functions
and typed results, so the shell (installed.py) only reads files."""

from __future__ import annotations

import base64
import binascii
import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass

# Files an installer writes beside the wheel's own (they name this install, not the release): verified against
# RECORD when it hashes them, but outside the distribution's digest, which a lab recomputes from the wheel.
INSTALL_SPECIFIC = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json"})


class RecordError(ValueError):
    """A RECORD that cannot be read: a row without a path, or a hash that is not sha256=<urlsafe base64>."""


@dataclass(frozen=True)
class RecordEntry:
    """One row of RECORD: the path relative to the site directory, its SHA-256 in hex (None: not hashed)."""

    path: str
    sha256: str | None


@dataclass(frozen=True)
class Comparison:
    """What is on disk against what the record says: the files checked, and each changed, added or removed."""

    checked: int
    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (self.changed or self.added or self.removed)

    def problems(self) -> list[str]:
        """One line a file, "changed: PATH", "added: PATH" or "removed: PATH", in path order."""
        found = ([(p, "changed") for p in self.changed] + [(p, "added") for p in self.added]
                 + [(p, "removed") for p in self.removed])
        return [f"{what}: {path}" for path, what in sorted(found)]


def _hex_of(field: str, row: int) -> str | None:
    """A RECORD hash field ("sha256=<urlsafe base64, no padding>") as hex; None for an empty field."""
    if not field:
        return None
    algorithm, _, value = field.partition("=")
    if algorithm != "sha256" or not value:
        raise RecordError(f"RECORD row {row}: hash {field!r} is not sha256=<base64>")
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        raise RecordError(f"RECORD row {row}: hash {field!r} is not base64") from None
    if len(raw) != 32:
        raise RecordError(f"RECORD row {row}: hash {field!r} is not 32 bytes")
    return raw.hex()


def is_cache(path: str) -> bool:
    """Bytecode Python writes after the install (any __pycache__ directory): never in the comparison."""
    return "__pycache__" in path.split("/")


def parse_record(text: str) -> list[RecordEntry]:
    """RECORD's rows, without RECORD itself and bytecode caches (written after it, so never hashed in it)."""
    out: list[RecordEntry] = []
    for n, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row:
            continue
        path = row[0]
        if not path:
            raise RecordError(f"RECORD row {n}: no path")
        if is_cache(path) or is_dist_info_file(path, "RECORD"):
            continue
        out.append(RecordEntry(path, _hex_of(row[1] if len(row) > 1 else "", n)))
    return out


def is_dist_info_file(path: str, name: str | None = None) -> bool:
    """Whether `path` is a file of a *.dist-info directory (named `name`, when given)."""
    parts = path.split("/")
    return len(parts) == 2 and parts[0].endswith(".dist-info") and (name is None or parts[1] == name)


def is_content(path: str) -> bool:
    """Whether a RECORD path is part of the release itself (what the wheel holds): not a script the installer
    generated outside the site directory (../../../bin/...), nor a file naming this install (INSTALL_SPECIFIC)."""
    if path.startswith(("../", "/")) or is_cache(path):
        return False
    return not (is_dist_info_file(path) and path.split("/")[1] in INSTALL_SPECIFIC)


def package_dirs(entries: list[RecordEntry]) -> list[str]:
    """The top-level directories the distribution installed (jackpotd, jackpot_table...), whose every file is
    expected in RECORD: a file found in one of them and not in RECORD is "added"."""
    return sorted({e.path.split("/")[0] for e in entries
                   if "/" in e.path and is_content(e.path) and not is_dist_info_file(e.path)})


def compare(expected: Mapping[str, str | None], actual: Mapping[str, str]) -> Comparison:
    """`actual` (path -> sha256 of each file found) against `expected` (path -> recorded sha256; None: recorded
    without a hash, so only its presence is checked)."""
    changed = tuple(sorted(p for p, h in expected.items() if h is not None and p in actual and actual[p] != h))
    return Comparison(checked=len(expected), changed=changed,
                      added=tuple(sorted(set(actual) - set(expected))),
                      removed=tuple(sorted(set(expected) - set(actual))))
