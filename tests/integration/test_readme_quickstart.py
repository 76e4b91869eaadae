"""The README's quick start, run as a newcomer pastes it: `make run`, then every command of its blocks, parsed from
README.md itself so that the two cannot drift, on the default ports and on moved ones (JACKPOTD_TARGET)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from jackpotd.embedded.ports import is_free

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```sh\n(.*?)```", re.S)
# what `make run` brings up in the checkout: the files it reads, beside the venv it installed
CHECKOUT = ("Makefile", "pyproject.toml", "requirements.txt", "requirements-dev.txt", "scripts", ".venv")
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def quick_start() -> tuple[list[str], list[list[str]]]:
    """The `make run` line of the quick start's first block, and the command lines of the blocks after it (comments
    and continuation lines joined; grpcurl's block is left to those who have grpcurl)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in BLOCK.findall(section) if not b.startswith("grpcurl")]
    first, *rest = [list(_lines(b)) for b in blocks]
    return first, rest


def _lines(block: str) -> Iterator[str]:
    """Each command of a shell block: a trailing comment (` # ...`) dropped, a backslash continuation joined."""
    pending = ""
    for raw in block.splitlines():
        line = re.sub(r"\s+#\s.*$", "", raw.strip())
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""


@dataclass
class Session:
    """One terminal: the checkout it stands in, its variables so far, and what it ran."""

    cwd: Path
    env: dict[str, str]
    prelude: list[str] = field(default_factory=list)

    def run(self, line: str, stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess[str]:
        script = "\n".join([*self.prelude, line])
        done = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env, input=stdin, capture_output=True,
                              text=True, timeout=timeout)
        assert "Traceback" not in done.stderr, f"{line}\n{done.stderr}"
        assert done.returncode == 0, f"`{line}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            return int(r.status)
    except OSError:
        return 0


def _wait(what: str, ok: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(ok) and ok():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {seconds:.0f} s: {what}")


def _checkout(tmp: Path) -> Path:
    """A checkout as a newcomer has it after `make install`: the repository's files and venv, a state of its own."""
    root = tmp / "checkout"
    root.mkdir()
    for name in CHECKOUT:
        (root / name).symlink_to(ROOT / name)
    return root


def _hit_id(session: Session) -> str:
    out = session.run("""S=state/credentials/tokens
.venv/bin/jackpot-floor hits --json --token-file $S/supervisor-floor.token""").stdout
    hits = json.loads(out)
    rows = hits["hits"] if isinstance(hits, dict) else hits
    pending = [h for h in rows if str(h.get("status", "PENDING")).upper() == "PENDING"]
    assert pending, out
    return str(pending[0]["hit_id"])


def _run_block(session: Session, block: list[str]) -> None:
    hit = ""
    for line in block:
        if re.fullmatch(r"(export )?[A-Z_]+=(\S*|\$\(.*\))", line):
            session.prelude.append(line)
            continue
        if "HIT_ID" in line:
            hit = hit or _hit_id(session)
            line = line.replace("HIT_ID", hit)
        if "jackpot-console serve" in line:
            _console(session, line)
        elif "users add" in line:
            session.run(line, stdin="correct horse battery staple\ncorrect horse battery staple\n")
        elif "/psql " in line:
            assert "1 row" in session.run(line, stdin="SELECT 1;\n\\q\n").stdout
        elif "/valkey-cli " in line:
            assert "PONG" in session.run(line, stdin="PING\n").stdout
        else:
            session.run(line)


def _console(session: Session, line: str) -> None:
    """The console serves until Ctrl-C: started, its login page answered, then stopped."""
    proc = subprocess.Popen(["bash", "-c", "\n".join([*session.prelude, "exec " + line])], cwd=session.cwd,
                            env=session.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait("the console's login page", lambda: _get("http://127.0.0.1:8090/login") == 200, 30)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err


def _quick_start(tmp_path: Path, ports: dict[str, int]) -> None:
    """`make run` with `ports` (none: the defaults), then each block in a second terminal, then Ctrl-C."""
    first, blocks = quick_start()
    make_run = next(line for line in first if line.startswith("make run"))
    moved = " ".join(f"{k}={v}" for k, v in ports.items())
    root = _checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JACKPOTD_", "MAKE", "MFLAGS"))}
    log = (tmp_path / "make-run.log").open("w")
    serve = subprocess.Popen(shlex.split(f"{make_run} {moved}"), cwd=root, env=env, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True)
    grpc_port = ports.get("GRPC_PORT", 50051)
    sign_port = ports.get("SIGN_PORT", 8080)
    try:
        pools = f"{root}/.venv/bin/jackpotd pools --link demo --target 127.0.0.1:{grpc_port}"
        _wait(f"make run serving the demo link ({tmp_path / 'make-run.log'})",
              lambda: subprocess.run(shlex.split(pools), cwd=root, env=env, capture_output=True).returncode == 0, 180)
        _wait("the demo link's sign", lambda: _get(f"http://127.0.0.1:{sign_port}/links/demo") == 200, 30)
        session = Session(root, env)
        if ports:  # what make run printed for a moved port, pasted as it says
            said = (tmp_path / "make-run.log").read_text()
            export = re.search(r"^\s*(export JACKPOTD_TARGET=\S+)$", said, re.M)
            assert export, said
            session.prelude.append(export.group(1))
        for block in blocks:
            _run_block(session, block)
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()
        log.close()
    assert serve.returncode in (0, 130, -signal.SIGINT), (tmp_path / "make-run.log").read_text()[-3000:]


def moved_ports() -> dict[str, int]:
    """The ports of the quick start's "Ports taken?" line: `make run SIGN_PORT=... GRPC_PORT=... METRICS_PORT=...`."""
    section = (ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    line = re.search(r"`make run ((?:[A-Z_]+=\d+ ?)+)`", section)
    assert line, "the quick start names no moved ports"
    return {k: int(v) for k, v in (word.split("=") for word in line.group(1).split())}


def test_the_quick_start_as_pasted_on_moved_ports(tmp_path: Path) -> None:
    ports = moved_ports()
    assert set(ports) == {"SIGN_PORT", "GRPC_PORT", "METRICS_PORT"}
    if not all(is_free(p) for p in (*ports.values(), 8090)):
        pytest.skip(f"one of the moved ports {sorted(ports.values())} or 8090 is taken on this machine")
    _quick_start(tmp_path, ports)


def test_the_quick_start_as_pasted_on_the_default_ports(tmp_path: Path) -> None:
    if not all(is_free(p) for p in (50051, 8080, 9464, 8090)):
        pytest.skip("a default port (50051, 8080, 9464, 8090) is taken: a `make run` of the developer's is up")
    _quick_start(tmp_path, {})
