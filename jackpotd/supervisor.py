"""Supervision while jackpotd serves: the gRPC worker processes and the embedded servers it started are
restarted when they die, with growing delays after quick deaths, until one keeps dying (`Supervisor`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .backoff import exponential, wait_after
from .clock import wait_set
from .embedded import EmbeddedPostgres, EmbeddedValkey, free_port
from .metrics import RESTARTS, process_dead
from .settings import Settings

if TYPE_CHECKING:
    from .stores import Stores

log = logging.getLogger("jackpotd.supervisor")
Worker = Callable[[dict[str, Any], int], None]  # a worker process's entry point: (settings as a dict, number)


def _fixed_port(listen: str) -> str:
    host, _, port = listen.rpartition(":")
    return f"{host}:{free_port()}" if port == "0" else listen


@dataclass
class Restarts:
    """When a supervised process may be started again: at once after a long life, with growing delays
    after short ones (at most about five restarts a minute), and never after too many in a row."""

    STABLE_SECONDS = 60.0  # a process that lived this long was healthy: its death starts a new series
    MAX_DELAY = 30.0
    WAITS = exponential(2.0, MAX_DELAY)  # after the 2nd, 3rd ... short life in a row: 2, 4, 8 ... 30 s
    GIVE_UP_AFTER = 10  # short-lived runs in a row

    started_at: float = 0.0
    short_runs: int = 0
    next_try: float = 0.0
    dead: bool = False  # its death is recorded and it awaits its restart

    def started(self, now: float) -> None:
        self.started_at, self.dead = now, False

    def died(self, now: float) -> None:
        """Record a death; the next start waits 0, 2, 4, 8, 16, 30, 30 ... seconds."""
        self.short_runs = self.short_runs + 1 if now - self.started_at < self.STABLE_SECONDS else 1
        delay = wait_after(self.WAITS, self.short_runs - 1)  # the first short life is not a series yet
        self.next_try, self.dead = now + delay, True

    def failed(self, now: float) -> None:
        """A start that raised: as if it had died at once."""
        self.started_at = now
        self.died(now)

    @property
    def given_up(self) -> bool:
        return self.short_runs > self.GIVE_UP_AFTER


class Supervisor:
    """Keeps the gRPC workers and the embedded servers alive while jackpotd serves.

    Every INTERVAL seconds: a worker that exited is respawned with the same number and settings; an
    embedded Valkey or PostgreSQL (only those this process started) that exited is started again on the
    same port, so every URL stays valid. A restarted Valkey is empty until the ledger writer rebuilds its
    links from PostgreSQL; health reports NOT_SERVING for what cannot be served meanwhile.
    Everything runs on the event loop's thread: the children die with the thread that started them
    (PR_SET_PDEATHSIG), so never start them from a worker thread.
    """

    INTERVAL = 0.5

    def __init__(self, settings: Settings, stores: Stores, stop: asyncio.Event, worker: Worker) -> None:
        self.settings = settings
        self.worker = worker
        self.stores = stores
        self.stop = stop
        self.listen = _fixed_port(settings.listen)
        self.workers: list[multiprocessing.process.BaseProcess | None] = []
        self.restarts: dict[str, Restarts] = {}
        self.failure: str | None = None  # why the supervisor gave up and stopped
        self._ctx = multiprocessing.get_context("spawn")
        self._worker_settings = settings.model_copy(update={"redis_url": stores.redis_url, "postgres_dsn": stores.dsn,
                                                            "listen": self.listen}).model_dump()
        for kind in self.kinds():  # each at 0 from the start: an alert on restarts sees 0, not nothing
            RESTARTS.labels(kind)

    def kinds(self) -> list[str]:
        """The kinds of process this supervisor restarts (jackpotd_process_restarts_total's `process`)."""
        return (["worker"] if self.settings.workers else []) + (["valkey", "postgres"] if self.stores.embedded else [])

    def start_workers(self) -> None:
        self.workers = [self._spawn(n) for n in range(self.settings.workers)]

    def alive_workers(self) -> list[multiprocessing.process.BaseProcess]:
        return [w for w in self.workers if w is not None]

    def _spawn(self, n: int) -> multiprocessing.process.BaseProcess:
        p = self._ctx.Process(target=self.worker, args=(self._worker_settings, n), name=f"jackpotd-worker-{n}",
                              daemon=True)
        p.start()
        self.restarts.setdefault(f"worker-{n}", Restarts()).started(time.monotonic())
        return p

    async def run(self) -> None:
        """Check every INTERVAL seconds until `stop` is set."""
        while not self.stop.is_set():
            try:
                self.check()
            except Exception:
                log.exception("supervisor check failed")
            await wait_set(self.stop, self.INTERVAL)

    def check(self) -> None:
        """One round: restart whatever died (blocking while an embedded server starts)."""
        if self.stores.embedded is not None:
            pg, valkey = self.stores.embedded
            self._check_server("valkey", valkey)
            self._check_server("postgres", pg)
        for n, w in enumerate(self.workers):
            if w is None or self.stop.is_set():
                continue
            if w.is_alive():
                continue
            track = self.restarts.setdefault(f"worker-{n}", Restarts())
            if not track.dead:
                log.error("gRPC worker %d (pid %s) %s", n, w.pid, _exit_text(w.exitcode))
                if w.pid is not None:
                    process_dead(w.pid)
                track.died(time.monotonic())
                if track.given_up:
                    self.workers[n] = None
                    self._give_up(f"worker-{n}", last=not self.alive_workers())
                    continue
            if time.monotonic() < track.next_try:
                continue
            new = self.workers[n] = self._spawn(n)
            RESTARTS.labels("worker").inc()
            log.warning("gRPC worker %d respawned as pid %s", n, new.pid)

    def _check_server(self, name: str, server: EmbeddedPostgres | EmbeddedValkey) -> None:
        proc = server.proc
        if proc is None or proc.poll() is None or self.stop.is_set():
            return
        track = self.restarts.setdefault(name, Restarts())
        if not track.dead:
            log.error("embedded %s (pid %d, port %d) %s", name, proc.pid, server.port, _exit_text(proc.returncode))
            track.died(time.monotonic())
            if track.given_up:
                server.proc = None
                self._give_up(name, last=True)
                return
        if time.monotonic() < track.next_try:
            return
        try:
            server.start()  # same object, same port: the URLs the stores and workers hold stay valid
        except Exception as e:
            log.error("embedded %s did not start again: %s", name, e)
            track.failed(time.monotonic())
            if track.given_up:
                server.proc = None
                self._give_up(name, last=True)
            return
        track.started(time.monotonic())
        RESTARTS.labels(name).inc()
        log.warning("embedded %s restarted as pid %d on port %d", name, server.proc.pid if server.proc else -1,
                    server.port)

    def _give_up(self, name: str, *, last: bool) -> None:
        log.critical("%s keeps dying soon after it starts (%d deaths in a row); no more restarts", name,
                     self.restarts[name].short_runs)
        if last:
            self.failure = f"{name} keeps dying; jackpotd cannot serve without it"
            log.critical("stopping: %s", self.failure)
            self.stop.set()

    async def stop_workers(self) -> None:
        """SIGTERM every worker (each drains its calls), then wait for them."""
        workers = self.alive_workers()
        for w in workers:
            if w.pid is not None and w.is_alive():
                os.kill(w.pid, signal.SIGTERM)
        for w in workers:
            await asyncio.to_thread(w.join, 15)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def wait_serving(listen: str, workers: list[multiprocessing.process.BaseProcess], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(not w.is_alive() for w in workers):
            raise RuntimeError("a gRPC worker exited during start-up; see the log above")
        with contextlib.suppress(OSError), socket.create_connection(_host_port(listen), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"gRPC workers did not listen on {listen} in {timeout}s")


def _host_port(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)
