"""Generate jackpotd/api/gen from proto/ (the one way to make it); --check fails on any difference."""

from __future__ import annotations

import argparse
import filecmp
import importlib.metadata as metadata
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEV_LOCK = ROOT / "requirements-dev.txt"
GENERATORS = ("grpcio-tools", "mypy-protobuf", "protobuf")  # whose versions shape the generated files
PROTO = ROOT / "proto"
OUT = ROOT / "jackpotd" / "api" / "gen"


def generate(into: Path) -> None:
    """Run grpc_tools.protoc over proto/ into `into`, then make imports package-relative."""
    into.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    files = sorted(str(p.relative_to(PROTO)) for p in PROTO.rglob("*.proto"))
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO}", f"--python_out={into}",
                    f"--grpc_python_out={into}", f"--mypy_out={into}", f"--mypy_grpc_out={into}",
                    f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
                    f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}", *files],
                   check=True, stderr=subprocess.DEVNULL)
    for path in into.rglob("*.py*"):
        text = path.read_text()
        text = text.replace("from jackpot.v1 import", "from jackpotd.api.gen.jackpot.v1 import")
        text = text.replace("import jackpot.v1.", "import jackpotd.api.gen.jackpot.v1.")
        path.write_text(text)
    for d in [into, *[p for p in into.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()


def unlocked_generators(lock_text: str, installed: dict[str, str]) -> list[str]:
    """Each generator whose installed version is not the one the lock pins: its output would not be the lock's."""
    out = []
    for name in GENERATORS:
        pinned = re.search(rf"^{re.escape(name)}==(\S+)", lock_text, re.M)
        if pinned is None:
            out.append(f"{name} is not in {DEV_LOCK.name}")
        elif installed.get(name) != pinned.group(1):
            out.append(f"{name} {installed.get(name, 'missing')} is installed, {DEV_LOCK.name} pins {pinned.group(1)}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare with the committed code instead of writing")
    args = parser.parse_args()
    wrong = unlocked_generators(DEV_LOCK.read_text(), {n: _installed(n) for n in GENERATORS})
    if wrong:
        print("the generators are not the locked ones; run `make install`:", *wrong, sep="\n  ")
        return 1
    if not args.check:
        shutil.rmtree(OUT, ignore_errors=True)
        generate(OUT)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "gen"
        generate(fresh)
        diff = filecmp.dircmp(fresh, OUT)
        problems = _differences(diff)
        if problems:
            print("generated protobuf code is stale; run `make proto`:", *problems, sep="\n  ")
            return 1
    print("generated protobuf code is up to date")
    return 0


def _installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"


def _differences(d: filecmp.dircmp[str], prefix: str = "") -> list[str]:
    out = [f"{prefix}{n} (only in fresh)" for n in d.left_only if n != "__pycache__"]
    out += [f"{prefix}{n} (only committed)" for n in d.right_only if n != "__pycache__"]
    _, mismatch, errors = filecmp.cmpfiles(d.left, d.right, d.common_files, shallow=False)
    out += [f"{prefix}{n} differs" for n in mismatch + errors]
    for name, sub in d.subdirs.items():
        if name != "__pycache__":
            out += _differences(sub, f"{prefix}{name}/")
    return out


if __name__ == "__main__":
    sys.exit(main())
