"""The software identity of this program: release version, git commit, lock SHA-256 and distribution SHA-256.
One function makes it, and every document that certifies something (the math certificate, the reconciliation,
the ledger export's sidecar, `jackpotd audit`) names it, so a result can be traced to the exact software."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .digests import distribution_sha256
from .installed import LOCK, NAME, UNKNOWN, Install, Unverifiable, checkout_of, file_sha256, git, read_install


@dataclass(frozen=True)
class SoftwareIdentity:
    """What produced a document. `lock_sha256` is None when no lock was found; `intact` says whether every
    installed file matched the record when the identity was taken (None: nothing to verify against)."""

    name: str
    version: str
    commit: str
    lock_sha256: str | None
    distribution_sha256: str
    install: str  # "wheel", "editable" or "source" (no install found)
    intact: bool | None

    def as_dict(self) -> dict[str, str | bool | None]:
        """The JSON form, every value in full."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SoftwareIdentity:
        """The identity back from its JSON form (a report's "software"), for a renderer of that report."""
        return cls(str(d["name"]), str(d["version"]), str(d["commit"]),
                   None if d.get("lock_sha256") is None else str(d["lock_sha256"]), str(d["distribution_sha256"]),
                   str(d["install"]), None if d.get("intact") is None else bool(d["intact"]))

    def short(self) -> str:
        """One line for a page footer: each digest's first 12 hex digits (the JSON form has them in full)."""
        lock = self.lock_sha256[:12] if self.lock_sha256 else "none"
        state = {True: "", False: ", MODIFIED", None: ", unverified"}[self.intact]
        return (f"{self.name} {self.version} (commit {self.commit[:12]}, lock {lock}, distribution "
                f"{self.distribution_sha256[:12]}, {self.install}{state})")

    def line(self) -> str:
        """One line with every value in full, for a terminal report."""
        state = {True: "", False: "; MODIFIED since installed", None: "; unverified"}[self.intact]
        kind = "not installed: a source checkout" if self.install == "source" else f"{self.install} install"
        return (f"{self.name} {self.version}, commit {self.commit}, lock sha256 {self.lock_sha256 or 'none'}, "
                f"distribution sha256 {self.distribution_sha256} ({kind}{state})")


def identity_of(install: Install) -> SoftwareIdentity:
    """The identity of one install (pure but for reading the lock)."""
    return SoftwareIdentity(NAME, install.version, install.commit,
                            file_sha256(install.lock) if install.lock is not None else None,
                            distribution_sha256(install.digests()), install.kind, install.comparison().ok)


def _source_identity() -> SoftwareIdentity:
    """No installed distribution: the checkout this code runs from, if it is one; else unknown."""
    commit, lock = UNKNOWN, None
    try:
        root = checkout_of(Path(__file__).resolve().parent)
        commit = git(root, "rev-parse", "HEAD").decode().strip()
        lock = file_sha256(root / LOCK) if (root / LOCK).is_file() else None
    except Unverifiable:
        pass
    return SoftwareIdentity(NAME, UNKNOWN, commit, lock, UNKNOWN, "source", None)


@functools.cache
def software_identity() -> SoftwareIdentity:
    """This program's identity, taken once a process (hashing the installed files takes a few tens of ms)."""
    try:
        return identity_of(read_install())
    except Unverifiable:
        return _source_identity()
