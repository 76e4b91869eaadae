"""`jackpotd version` and `jackpotd verify-install`: print the software identity, and check every installed file
against the distribution's own record, with a seeded HMAC for a field verification terminal's challenge."""

from __future__ import annotations

import argparse
import json
import sys

from .digests import parse_seed, seeded_hmac
from .identity import identity_of, software_identity
from .installed import EDITABLE, Install, Unverifiable, read_install

VERIFY_HELP = """Recompute the SHA-256 of every installed file of jackpotd and its clients and compare it with the
distribution's own record: a regular install's RECORD (PEP 376/627); an editable install's RECORD for its own
files and, for the sources it does not list, the git commit checked out (HEAD). Exit status 0 when every file
matches, 1 naming each file changed, added (a file in an installed package directory that the record does not
name; __pycache__ aside) or removed, 2 when there is nothing to verify against or --seed is not hex.
With --seed HEX, also print HMAC-SHA256 keyed with those bytes over every file of the release (docs/SERVICE.md,
"Software identity and field verification", gives the construction a laboratory recomputes)."""


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    v = sub.add_parser("version", help="the software identity: version, commit, lock and distribution SHA-256",
                       description="The release version, the git commit it was built from, the SHA-256 of the "
                                   "lock file and one SHA-256 over the installed distribution (docs/SERVICE.md, "
                                   "Software identity and field verification).")
    v.add_argument("--json", action="store_true", help="as one JSON object")
    c = sub.add_parser("verify-install", help="check every installed file against the distribution's record",
                       description=VERIFY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--seed", metavar="HEX", help="a verification terminal's challenge: print HMAC-SHA256 under it")


def _where(install: Install) -> str:
    if install.kind == EDITABLE:
        return f"editable install of the checkout {install.where} (sources against HEAD)"
    return f"install in {install.where}"


def version(as_json: bool, path: list[str] | None = None) -> int:
    """Print the identity of the install found on `path` (default sys.path)."""
    try:
        install = read_install(path=path)
        ident = identity_of(install)
        where, files, lock = _where(install), len(install.digests()), install.lock
    except Unverifiable as e:
        ident, where, files, lock = software_identity(), str(e), 0, None
    if as_json:
        print(json.dumps({**ident.as_dict(), "files": files, "where": where,
                          "lock_file": str(lock) if lock else None}, indent=2))
        return 0
    state = {True: "", False: "; files differ from the record: see `jackpotd verify-install`",
             None: ""}[ident.intact]
    print(f"{ident.name} {ident.version}\n"
          f"commit               {ident.commit}\n"
          f"lock sha256          {ident.lock_sha256 or 'none'} ({lock or 'no requirements.txt found'})\n"
          f"distribution sha256  {ident.distribution_sha256} ({files} files{state})\n"
          f"installed as         {where}")
    return 0


def verify_install(seed_hex: str | None, path: list[str] | None = None) -> int:
    """Compare, print each file that differs and a summary; exit status 0, 1 or 2 (VERIFY_HELP)."""
    try:
        seed = parse_seed(seed_hex) if seed_hex is not None else None
    except ValueError as e:
        print(f"jackpotd: {e}", file=sys.stderr)
        return 2
    try:
        install = read_install(path=path)
    except Unverifiable as e:
        print(f"jackpotd: cannot verify: {e}", file=sys.stderr)
        return 2
    result = install.comparison()
    ident = identity_of(install)
    for line in result.problems():
        print(line)
    if seed is not None:
        print(f"hmac-sha256 {seeded_hmac(seed, install.contents())} (seed {seed.hex()}, "
              f"{len(install.digests())} files)")
    print(f"distribution sha256 {ident.distribution_sha256}")
    if result.ok:
        print(f"OK: {ident.name} {ident.version}: all {result.checked} files match the record ({_where(install)})")
        return 0
    counts = f"{len(result.changed)} changed, {len(result.added)} added, {len(result.removed)} removed"
    print(f"FAILED: {ident.name} {ident.version}: {counts} of {result.checked} recorded files ({_where(install)})")
    return 1


def run(args: argparse.Namespace) -> int:
    if args.command == "version":
        return version(args.json)
    return verify_install(args.seed)
