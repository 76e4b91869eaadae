"""`jackpotd version` and `verify-install` (issue 32): the canonical digests, RECORD parsing and the comparison,
against a synthetic installed distribution in a temporary site directory; then the CLI on the current install."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jackpotd.software.commands import verify_install, version
from jackpotd.software.digests import FileDigest, distribution_sha256, manifest, parse_seed, seeded_hmac
from jackpotd.software.identity import SoftwareIdentity, identity_of
from jackpotd.software.installed import read_install
from jackpotd.software.record import RecordEntry, RecordError, compare, is_content, package_dirs, parse_record

COMMIT = "0123456789abcdef0123456789abcdef01234567"
FILES = {
    "jackpotd/__init__.py": b'"""jackpotd."""\n',
    "jackpotd/cli.py": b"def main() -> int:\n    return 0\n",
    "jackpotd/store/redis/apply.lua": b"return 1\n",
    "jackpotd/store/migrations/001_ledger.sql": b"CREATE TABLE t (x int);\n",
    "jackpotd/BUILD_COMMIT": COMMIT.encode() + b"\n",
    "jackpotd/requirements.txt": b"grpcio==1.0 --hash=sha256:00\n",
    "jackpot_table/__init__.py": b"",
    "jackpot_signage/static/sign.js": b"'use strict';\n",
    "jackpotd-0.1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: jackpotd\nVersion: 0.1.0\n",
    "jackpotd-0.1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\n",
    "jackpotd-0.1.0.dist-info/top_level.txt": b"jackpot_signage\njackpot_table\njackpotd\n",
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_site(root: Path, installer: bytes = b"pip\n", shebang: bytes = b"#!/venv/bin/python\n") -> Path:
    """A site directory as an installer leaves it: the wheel's files, a script outside it, RECORD."""
    site = root / "lib" / "site-packages"
    files = {**FILES, "jackpotd-0.1.0.dist-info/INSTALLER": installer, "../../bin/jackpotd": shebang + b"main()\n"}
    rows = []
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
        rows.append(f"{rel},sha256={_b64(data)},{len(data)}")
    (site / "jackpotd" / "__pycache__").mkdir()
    (site / "jackpotd" / "__pycache__" / "cli.cpython-311.pyc").write_bytes(b"\x00bytecode")
    rows += ["jackpotd/__pycache__/cli.cpython-311.pyc,,", "jackpotd-0.1.0.dist-info/RECORD,,"]
    (site / "jackpotd-0.1.0.dist-info" / "RECORD").write_text("\n".join(rows) + "\n")
    return site


def _run(site: Path, capsys: pytest.CaptureFixture[str], seed: str | None = None) -> tuple[int, str]:
    code = verify_install(seed, path=[str(site)])
    return code, capsys.readouterr().out


def _hmac_line(out: str) -> str:
    found = re.search(r"^hmac-sha256 ([0-9a-f]{64}) ", out, re.MULTILINE)
    assert found, out
    return found.group(1)


# ---- pure parts ------------------------------------------------------------------------------------------------

def test_the_distribution_digest_is_sha256sum_sorted_by_path() -> None:
    files = [FileDigest("b/x.py", "22" * 32), FileDigest("a.py", "11" * 32)]
    assert manifest(files) == f"{'11' * 32}  a.py\n{'22' * 32}  b/x.py\n".encode()
    assert distribution_sha256(files) == hashlib.sha256(manifest(files)).hexdigest()
    assert distribution_sha256(files) == distribution_sha256(reversed(files))
    assert distribution_sha256(files) != distribution_sha256([files[0], FileDigest("a.py", "12" * 32)])


def test_the_seeded_hmac_follows_its_documented_construction() -> None:
    contents = [("b.py", b"two"), ("a.py", b"one")]
    independent = hmac.new(b"\x01\x02", b"a.py\n3\none" + b"b.py\n3\ntwo", hashlib.sha256).hexdigest()
    assert seeded_hmac(b"\x01\x02", contents) == independent
    assert seeded_hmac(b"\x01\x02", contents) != seeded_hmac(b"\x01\x03", contents)
    assert seeded_hmac(b"\x01\x02", [("a.py", b"one"), ("b.py", b"twO")]) != independent


@pytest.mark.parametrize("bad", ["zz", "abc", "", "0x00"])
def test_a_seed_must_be_hex(bad: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        parse_seed(bad)
    assert parse_seed("00ff 1a") == b"\x00\xff\x1a"


def test_record_rows_are_read_with_their_hashes_and_without_caches() -> None:
    data = b"x = 1\n"
    text = (f"jackpotd/a.py,sha256={_b64(data)},{len(data)}\njackpotd/__pycache__/a.cpython-311.pyc,,\n"
            'jackpotd-0.1.0.dist-info/RECORD,,\n"jackpotd/with,comma.py",,\n')
    assert parse_record(text) == [RecordEntry("jackpotd/a.py", hashlib.sha256(data).hexdigest()),
                                  RecordEntry("jackpotd/with,comma.py", None)]
    with pytest.raises(RecordError, match="row 1"):
        parse_record("jackpotd/a.py,md5=abc,3\n")


def test_what_the_distribution_digest_covers() -> None:
    assert is_content("jackpotd/cli.py") and is_content("jackpotd-0.1.0.dist-info/METADATA")
    for install_specific in ("../../../bin/jackpotd", "jackpotd-0.1.0.dist-info/INSTALLER",
                             "jackpotd-0.1.0.dist-info/direct_url.json", "jackpotd/__pycache__/cli.pyc"):
        assert not is_content(install_specific)
    entries = [RecordEntry(p, None) for p in ("jackpotd/a.py", "jackpot_table/b.py", "top.py", "x.dist-info/WHEEL")]
    assert package_dirs(entries) == ["jackpot_table", "jackpotd"]


def test_the_comparison_names_each_file_changed_added_or_removed() -> None:
    result = compare({"a": "1", "b": "2", "c": "3", "d": None}, {"a": "1", "b": "9", "d": "4", "e": "5"})
    assert (result.changed, result.added, result.removed, result.ok) == (("b",), ("e",), ("c",), False)
    assert result.problems() == ["changed: b", "removed: c", "added: e"]
    assert compare({"a": "1"}, {"a": "1"}).ok


# ---- a synthetic install ---------------------------------------------------------------------------------------

def test_an_intact_install_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = make_site(tmp_path)
    code, out = _run(site, capsys)
    assert code == 0, out
    assert out.splitlines()[-1].startswith("OK: jackpotd 0.1.0: all 13 files match the record")


def test_one_byte_changed_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = make_site(tmp_path)
    before = identity_of(read_install(path=[str(site)]))
    module = site / "jackpotd" / "cli.py"
    module.write_bytes(module.read_bytes().replace(b"0", b"1"))
    code, out = _run(site, capsys)
    assert code == 1 and "changed: jackpotd/cli.py" in out.splitlines(), out
    assert "FAILED: jackpotd 0.1.0: 1 changed, 0 added, 0 removed" in out
    after = identity_of(read_install(path=[str(site)]))
    assert after.distribution_sha256 != before.distribution_sha256 and after.intact is False and before.intact


def test_a_removed_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = make_site(tmp_path)
    (site / "jackpotd" / "store" / "redis" / "apply.lua").unlink()
    code, out = _run(site, capsys)
    assert code == 1 and "removed: jackpotd/store/redis/apply.lua" in out.splitlines(), out


def test_an_added_file_is_named_but_not_bytecode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = make_site(tmp_path)
    (site / "jackpot_table" / "backdoor.py").write_text("import os\n")
    (site / "jackpot_table" / "__pycache__").mkdir()
    (site / "jackpot_table" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\x00")
    code, out = _run(site, capsys)
    assert code == 1 and [x for x in out.splitlines() if ":" in x and not x.startswith(("hmac", "FAILED", "dist"))] \
        == ["added: jackpot_table/backdoor.py"], out


def test_seeded_digests_are_stable_per_seed_and_differ_between_seeds(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    site = make_site(tmp_path)
    first = _hmac_line(_run(site, capsys, "00ff")[1])
    assert _hmac_line(_run(site, capsys, "00ff")[1]) == first
    assert _hmac_line(_run(site, capsys, "00fe")[1]) != first
    # what a laboratory computes from the wheel's files on its own (README): the release's files, RECORD aside
    contents = [(p, d) for p, d in FILES.items()]
    assert first == seeded_hmac(b"\x00\xff", contents)
    (site / "jackpotd" / "cli.py").write_bytes(b"def main() -> int:\n    return 1\n")
    assert _hmac_line(_run(site, capsys, "00ff")[1]) != first


def test_a_bad_seed_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert verify_install("0g", path=[str(make_site(tmp_path))]) == 2
    assert "'0g'" in capsys.readouterr().err


def test_no_install_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert verify_install(None, path=[str(tmp_path)]) == 2
    assert "no installed distribution" in capsys.readouterr().err


def test_the_identity_of_an_install(tmp_path: Path) -> None:
    """Version, the commit recorded at build, the shipped lock's digest; installs differing only in what the
    installer wrote (a script's shebang, INSTALLER) have one distribution digest, that of the wheel's files."""
    ident = identity_of(read_install(path=[str(make_site(tmp_path / "a"))]))
    assert (ident.version, ident.commit, ident.install, ident.intact) == ("0.1.0", COMMIT, "wheel", True)
    assert ident.lock_sha256 == hashlib.sha256(FILES["jackpotd/requirements.txt"]).hexdigest()
    wheel = [FileDigest(p, hashlib.sha256(d).hexdigest()) for p, d in FILES.items()]
    assert ident.distribution_sha256 == distribution_sha256(wheel)
    other = identity_of(read_install(path=[str(make_site(tmp_path / "b", b"uv\n", b"#!/opt/py\n"))]))
    assert other.distribution_sha256 == ident.distribution_sha256
    assert SoftwareIdentity.from_dict(json.loads(json.dumps(ident.as_dict()))) == ident
    assert COMMIT in ident.line() and ident.short().startswith("jackpotd 0.1.0 (commit 0123456789ab")


def test_version_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert version(True, path=[str(make_site(tmp_path))]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["commit"] == COMMIT and shown["files"] == len(FILES)
    assert shown["lock_file"].endswith("requirements.txt")


def test_the_export_sidecar_names_the_software_and_the_csv(tmp_path: Path) -> None:
    from jackpot_finance.provenance import write_provenance

    from jackpotd.software.identity import software_identity

    written = tmp_path / "ledger.csv.partial"
    written.write_bytes(b"\xef\xbb\xbfa,b\r\n")
    sidecar = write_provenance(written, tmp_path / "ledger.csv", "demo", 1, 2)
    doc = json.loads(sidecar.read_text())
    assert sidecar.name == "ledger.csv.provenance.json" and doc["file"] == "ledger.csv"
    assert doc["sha256"] == hashlib.sha256(b"\xef\xbb\xbfa,b\r\n").hexdigest()
    assert doc["software"] == software_identity().as_dict()


def test_the_reconciliation_names_the_software_in_every_format() -> None:
    from jackpot_finance.render import render_reconciliation

    from jackpotd.api.gen.jackpot.v1 import report_pb2
    from jackpotd.software.identity import software_identity

    ident = software_identity()
    rec = report_pb2.Reconciliation(link_id="demo", time_zone="UTC", gaming_day="2024-05-01", to_ms=86_400_000)
    assert json.loads(render_reconciliation(rec, "json"))["software"] == ident.as_dict()
    assert f"produced by {ident.line()}" in render_reconciliation(rec, "text")
    assert f"produced by,jackpotd,{ident.version},{ident.commit}," in render_reconciliation(rec, "csv")
    html = render_reconciliation(rec, "html")
    assert 'id="software"' in html and ident.distribution_sha256[:12] in html


# ---- the CLI on the current install, whatever it is ------------------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jackpotd.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])


def test_jackpotd_version_and_verify_install_on_this_install() -> None:
    shown = _cli("version")
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"^commit +\S+", shown.stdout, re.MULTILINE) and "lock sha256" in shown.stdout
    ident = json.loads(_cli("version", "--json").stdout)
    if ident["install"] == "source":  # a checkout with no install of it: nothing to verify against
        assert ident["distribution_sha256"] == "unknown" and _cli("verify-install").returncode == 2
        return
    assert re.search(r"^distribution sha256  [0-9a-f]{64} ", shown.stdout, re.MULTILINE), shown.stdout
    from importlib.metadata import version as dist_version
    assert ident["version"] == dist_version("jackpotd") and ident["install"] in ("wheel", "editable")

    runs = [_cli("verify-install", "--seed", seed) for seed in ("a1b2", "a1b2", "c3d4")]
    for run in runs:
        assert run.returncode in (0, 1), run.stderr
        assert all(re.fullmatch(r"(changed|added|removed): \S.*|hmac-sha256 .*|distribution sha256 .*|"
                                r"(OK|FAILED): .*", line) for line in run.stdout.splitlines()), run.stdout
    if ident["install"] == "wheel":  # a fresh regular install (CI, the image) is intact
        assert runs[0].returncode == 0, runs[0].stdout
    dist = [re.findall(r"^distribution sha256 (\w+)", r.stdout, re.MULTILINE) for r in runs]
    if dist[0] == dist[1] == dist[2]:  # no file changed between the runs (others may be editing a checkout)
        same, again, other = (_hmac_line(r.stdout) for r in runs)
        assert same == again != other
    assert _cli("verify-install", "--seed", "xyz").returncode == 2
