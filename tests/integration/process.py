"""jackpotd as a separate process, to kill -9 it or stop it like an operator would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

# A channel polling a server that is starting: gRPC's reconnect backoff (1 s, then 1.6 s ...) would otherwise
# answer the polls with the last failure for seconds after the server came up.
STARTING = [("grpc.initial_reconnect_backoff_ms", 50), ("grpc.min_reconnect_backoff_ms", 50),
            ("grpc.max_reconnect_backoff_ms", 200)]


class ServerProcess:
    """`jackpotd serve` (or `grpc`, or `writer`: `command`) on given stores (or embedded ones under a state dir)."""

    def __init__(self, port: int, log: Path, *, redis_url: str = "", dsn: str = "", state_dir: str = "",
                 demo: bool = False, workers: int | None = None, metrics_port: int = 0,
                 command: str = "serve", env: dict[str, str] | None = None) -> None:
        self.port = port
        self.log = log
        self.metrics_port = metrics_port
        self.command = command
        self.args = [sys.executable, "-m", "jackpotd.cli", command, "--metrics-port", str(metrics_port)]
        if command != "writer":
            self.args += ["--listen", f"127.0.0.1:{port}"]
        # the stores through the environment: their URLs carry passwords, which the CLI refuses in flags
        self.env = {"JACKPOTD_REDIS_URL": redis_url, "JACKPOTD_POSTGRES_DSN": dsn} if redis_url else {}
        self.env.update(env or {})  # more settings (JACKPOTD_<NAME>)
        if state_dir:
            self.args += ["--state-dir", state_dir]
        if demo:
            self.args.append("--demo")
        if workers is not None:
            self.args += ["--workers", str(workers)]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def metrics(self) -> str:
        """The text of /metrics (needs a metrics_port)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            text: str = r.read().decode()
        return text

    def health_channel(self) -> grpc.Channel:
        """How `start` asks whether it serves: plain text (a TLS server needs its own)."""
        return grpc.insecure_channel(self.target, options=STARTING)

    def start(self, timeout: float = 90) -> ServerProcess:
        out = open(self.log, "ab")  # noqa: SIM115 - the child writes to it
        self.proc = subprocess.Popen(self.args, stdout=out, stderr=out,
                                     env={**os.environ, **self.env, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        if self.command == "writer":  # no gRPC: serving is its metrics answering
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"jackpotd exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
                try:
                    self.metrics()
                    return self
                except OSError:
                    time.sleep(0.1)
            raise RuntimeError(f"jackpotd writer not up after {timeout}s:\n{self.log.read_text()[-3000:]}")
        with self.health_channel() as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"jackpotd exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
                try:
                    if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                        return self
                except grpc.RpcError:
                    pass
                time.sleep(0.1)
        raise RuntimeError(f"jackpotd not serving after {timeout}s:\n{self.log.read_text()[-3000:]}")

    def leading(self) -> bool:
        """Whether this process holds the ledger writer's lease (its jackpotd_writer_leader gauge)."""
        return any(line.startswith("jackpotd_writer_leader ") and float(line.split()[-1]) == 1
                   for line in self.metrics().splitlines())

    def shards(self) -> set[int]:
        """The writer shards this process holds the leases of (its jackpotd_writer_shard gauges)."""
        return {int(line.split('shard="')[1].split('"')[0]) for line in self.metrics().splitlines()
                if line.startswith("jackpotd_writer_shard{") and float(line.split()[-1]) == 1}

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def interrupt(self, timeout: float = 60) -> int:
        """Ctrl-C, as a person would; returns the exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout)
