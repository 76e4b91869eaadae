"""The installed distribution as it is on disk: a regular (wheel) install against its RECORD; an editable install
against the git tree it runs from (HEAD's blobs), since its RECORD does not list the sources. The only module of
this package that reads files, asks importlib.metadata or runs git."""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import importlib.util
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .digests import FileDigest
from .record import Comparison, RecordEntry, compare, is_cache, is_content, package_dirs, parse_record

NAME = "jackpotd"
WHEEL, EDITABLE = "wheel", "editable"
LOCK = "requirements.txt"  # the hashed lock: at the checkout's root, or shipped in the jackpotd package
BUILD_COMMIT = "BUILD_COMMIT"  # the commit a wheel was built from, written into the jackpotd package at build
COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
UNKNOWN = "unknown"


class Unverifiable(Exception):
    """No record to verify against: no installed distribution, or an editable install outside a git checkout."""


@dataclass(frozen=True)
class Install:
    """One install of the distribution: what its record expects and what is there now (path -> sha256 hex)."""

    kind: str  # WHEEL or EDITABLE
    version: str
    where: Path  # the site directory (wheel) or the checkout (editable)
    expected: dict[str, str | None]
    actual: dict[str, str]
    content: frozenset[str]  # the paths the distribution digest and the seeded HMAC cover
    files: dict[str, Path]  # every path of `actual`, where it is read
    commit: str
    lock: Path | None

    def digests(self) -> list[FileDigest]:
        """The release's files as found (changed ones with their new digest, added ones included)."""
        return [FileDigest(p, self.actual[p]) for p in sorted(self.content) if p in self.actual]

    def comparison(self) -> Comparison:
        return compare(self.expected, self.actual)

    def contents(self) -> Iterator[tuple[str, bytes]]:
        """Each file of `digests`, with its bytes as they are now (for the seeded HMAC)."""
        for d in self.digests():
            yield d.path, self.files[d.path].read_bytes()


def file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _scan(base: Path, paths: list[str], dirs: list[str]) -> tuple[dict[str, str], dict[str, Path]]:
    """The sha256 of each of `paths` that exists under `base`, and of every other file under `dirs` (bytecode
    caches aside): path -> digest, path -> file."""
    found = {p: base / p for p in paths if (base / p).is_file()}
    for top in dirs:
        for parent, subdirs, names in os.walk(base / top):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for n in names:
                rel = (Path(parent) / n).relative_to(base).as_posix()
                if not is_cache(rel):
                    found.setdefault(rel, Path(parent) / n)
    return {p: file_sha256(f) for p, f in found.items()}, found


def distribution(name: str = NAME, path: list[str] | None = None) -> metadata.Distribution:
    """The installed distribution that has a RECORD (an installer's), not a stray *.egg-info of a checkout."""
    for d in metadata.distributions(name=name, path=path) if path is not None else metadata.distributions(name=name):
        if d.read_text("RECORD") is not None:
            return d
    raise Unverifiable(f"no installed distribution of {name} (with a RECORD) was found: running from a source "
                       "tree without an install has no record to verify against")


def read_install(name: str = NAME, path: list[str] | None = None) -> Install:
    """The install of `name` found on `path` (default sys.path): a test passes a synthetic site directory."""
    dist = distribution(name, path)
    site = Path(str(dist.locate_file(""))).resolve()
    entries = parse_record(dist.read_text("RECORD") or "")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct.get("dir_info", {}).get("editable"):
        return _editable(dist, site, entries)
    expected = {e.path: e.sha256 for e in entries}
    actual, files = _scan(site, list(expected), package_dirs(entries))
    content = frozenset(p for p in {*expected, *actual} if is_content(p))
    commit = direct.get("vcs_info", {}).get("commit_id") or _commit_file(site / name / BUILD_COMMIT)
    lock = site / name / LOCK
    return Install(WHEEL, dist.version, site, expected, actual, content, files, commit,
                   lock if lock.is_file() else None)


def _commit_file(path: Path) -> str:
    """The commit recorded at build time in the package, when it was and it is a commit id."""
    try:
        text = path.read_text().strip()
    except OSError:
        return UNKNOWN
    return text if COMMIT.fullmatch(text) else UNKNOWN


def git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """git's output in `root`; Unverifiable naming git's complaint when it fails."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True, check=False,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unverifiable(f"git could not be run in {root}: {e}") from None
    if done.returncode:
        raise Unverifiable(f"git {args[0]} in {root}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def checkout_of(directory: Path) -> Path:
    """The root of the git checkout holding `directory`."""
    return Path(git(directory, "rev-parse", "--show-toplevel").decode().strip())


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise Unverifiable(f"package {name} of the editable install cannot be found")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def head_blobs(root: Path, dirs: list[str]) -> dict[str, str]:
    """HEAD's files under `dirs` (paths relative to `root`) and the SHA-256 of each one's committed bytes."""
    listing = git(root, "ls-tree", "-r", "-z", "--full-tree", "HEAD", "--", *dirs).split(b"\0")
    blobs: list[tuple[str, str]] = []
    for item in filter(None, listing):
        meta, _, name = item.partition(b"\t")
        _mode, kind, oid = meta.decode().split()
        if kind == "blob":
            blobs.append((name.decode(), oid))
    out = git(root, "cat-file", "--batch", stdin="".join(f"{oid}\n" for _, oid in blobs).encode())
    digests: dict[str, str] = {}
    at = 0
    for rel, _oid in blobs:
        end = out.index(b"\n", at)
        size = int(out[at:end].split()[2])
        digests[rel] = hashlib.sha256(out[end + 1:end + 1 + size]).hexdigest()
        at = end + 1 + size + 1
    return digests


def _editable(dist: metadata.Distribution, site: Path, entries: list[RecordEntry]) -> Install:
    """An editable install: its RECORD's own files (scripts, .pth, finder) against RECORD, and the packages'
    sources against the commit checked out (HEAD), since RECORD does not list them."""
    names = (dist.read_text("top_level.txt") or "").split()
    packages = [_package_dir(n) for n in names]
    root = checkout_of(packages[0]) if packages else None
    if root is None:
        raise Unverifiable("the editable install names no package (top_level.txt)")
    dirs = sorted(p.relative_to(root).as_posix() for p in packages)
    tree = head_blobs(root, dirs)
    actual, files = _scan(root, list(tree), dirs)
    recorded = {e.path: e.sha256 for e in entries if e.sha256 is not None}
    own, own_files = _scan(site, list(recorded), [])
    lock = root / LOCK
    return Install(EDITABLE, dist.version, root, {**recorded, **tree}, {**own, **actual}, frozenset(actual),
                   {**own_files, **files}, git(root, "rev-parse", "HEAD").decode().strip(),
                   lock if lock.is_file() else None)
