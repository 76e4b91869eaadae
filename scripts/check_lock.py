"""Check that the locks match pyproject.toml before anything is installed from them (what `uv sync --locked` does).

Two locks, both made by `make lock` (pip-compile, every package pinned with `==` and its hashes):
- requirements.txt: what jackpotd needs to run (and to build: setuptools), installed by the Dockerfile;
- requirements-dev.txt: that set plus the tools of `make test`, installed by `make install`.

A lock is stale when pyproject.toml's requirements changed since it was made (the inputs' SHA-256 recorded in the
lock differs), when a requirement is missing or pinned outside its range, when an entry has no `==` pin or no hash,
or when the two locks pin a package differently. Exit 1 naming each finding; `make lock` makes new locks.
Runs with the interpreter of a bare venv: standard library, and pip's own copy of `packaging`.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a bare venv has pip, which carries its own copy
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_LOCK = "requirements.txt"
DEV_LOCK = "requirements-dev.txt"
INPUTS_LINE = "# pyproject-inputs-sha256: "
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


@dataclass(frozen=True)
class Pin:
    """One locked package: its canonical name, exact version and how many hashes it carries."""

    name: str
    version: str
    hashes: int


def inputs_digest(pyproject: dict[str, object], extras: Iterable[str]) -> str:
    """SHA-256 over what a lock is made from: the build requirements, the dependencies and the named extras."""
    project = pyproject["project"]
    build = pyproject["build-system"]
    assert isinstance(project, dict) and isinstance(build, dict)
    optional = project.get("optional-dependencies", {})
    inputs = {"build-system.requires": sorted(build.get("requires", [])),
              "project.dependencies": sorted(project.get("dependencies", [])),
              "project.optional-dependencies": {e: sorted(optional.get(e, [])) for e in sorted(extras)}}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def parse_lock(text: str) -> tuple[dict[str, Pin], str | None, list[str]]:
    """The pins of a pip-compile lock, the inputs digest it records, and the lines that are not pinned entries."""
    pins: dict[str, Pin] = {}
    recorded: str | None = None
    problems: list[str] = []
    entries: list[list[str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if raw.startswith(INPUTS_LINE):
            recorded = raw[len(INPUTS_LINE):].strip()
        elif not line or line.startswith("#"):
            continue
        elif raw[0].isspace() and entries:
            entries[-1].append(line)
        else:
            entries.append([line])
    for entry in entries:
        head = entry[0]
        match = _PIN.match(head)
        if match is None:
            problems.append(f"{head!r} is not pinned with ==")
            continue
        hashes = sum(part.count("--hash=sha256:") for part in entry)
        pin = Pin(str(canonicalize_name(match.group(1))), match.group(2), hashes)
        if hashes == 0:
            problems.append(f"{pin.name}=={pin.version} has no hash")
        pins[pin.name] = pin
    return pins, recorded, problems


def findings(pyproject: dict[str, object], locks: dict[str, tuple[str, tuple[str, ...]]]) -> list[str]:
    """Every way the locks (name -> (text, extras locked)) disagree with pyproject.toml or with each other."""
    out: list[str] = []
    parsed: dict[str, dict[str, Pin]] = {}
    project = pyproject["project"]
    build = pyproject["build-system"]
    assert isinstance(project, dict) and isinstance(build, dict)
    for name, (text, extras) in locks.items():
        pins, recorded, problems = parse_lock(text)
        parsed[name] = pins
        out += [f"{name}: {p}" for p in problems]
        want = inputs_digest(pyproject, extras)
        if recorded != want:
            out.append(f"{name}: made from other requirements than pyproject.toml's now (inputs sha256 "
                       f"{recorded or 'missing'}, pyproject.toml's {want}): run `make lock`")
        requirements = [*build.get("requires", []), *project.get("dependencies", [])]
        for extra in extras:
            requirements += project.get("optional-dependencies", {}).get(extra, [])
        for spec in requirements:
            req = Requirement(spec)
            key = str(canonicalize_name(req.name))
            pin = pins.get(key)
            if pin is None:
                out.append(f"{name}: {req.name} (pyproject.toml: {spec!r}) is not in the lock: run `make lock`")
            elif not req.specifier.contains(pin.version, prereleases=True):
                out.append(f"{name}: {req.name}=={pin.version} is outside pyproject.toml's {spec!r}: run `make lock`")
    names = list(parsed)
    for a, b in itertools.pairwise(names):
        for key in sorted(parsed[a].keys() & parsed[b].keys()):
            if parsed[a][key].version != parsed[b][key].version:
                out.append(f"{a} pins {key}=={parsed[a][key].version} but {b} pins {parsed[b][key].version}: "
                           "run `make lock`")
    return out


def stamp(lock: Path, digest: str) -> None:
    """Record the inputs digest in a lock just made (`make lock`), after pip-compile's header."""
    lines = [line for line in lock.read_text().splitlines() if not line.startswith(INPUTS_LINE)]
    lock.write_text("\n".join([lines[0], f"{INPUTS_LINE}{digest}", *lines[1:]]) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    parser.add_argument("--stamp", action="store_true", help="record pyproject.toml's inputs in both locks "
                        "(make lock does, right after pip-compile)")
    args = parser.parse_args(argv)
    pyproject = tomllib.loads((args.root / "pyproject.toml").read_text())
    extras = {RUNTIME_LOCK: (), DEV_LOCK: ("dev",)}
    if args.stamp:
        for name, extra in extras.items():
            stamp(args.root / name, inputs_digest(pyproject, extra))
    missing = [name for name in extras if not (args.root / name).is_file()]
    if missing:
        print(f"check_lock: {', '.join(missing)} missing: run `make lock`", file=sys.stderr)
        return 1
    found = findings(pyproject, {name: ((args.root / name).read_text(), extra) for name, extra in extras.items()})
    for line in found:
        print(f"check_lock: {line}", file=sys.stderr)
    if found:
        print("check_lock: the locks do not match pyproject.toml: nothing installed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
