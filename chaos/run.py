"""`python -m chaos.run --seed N --minutes M --out DIR` (as root; `make chaos`): build the namespaces, start the
stores, their proxies, two writers, two API replicas and the tables, play the seeded schedule, clear every fault,
check liveness and the history, print the seed, the schedule and PASS/FAIL per invariant, and exit 1 on a FAIL.

Everything it made (namespaces, the tmpfs, processes) is removed on exit, Ctrl-C and failure included, and at
start whatever a killed run left. The run's directory is kept: logs/ (every process), history.jsonl,
schedule.txt, actions.log, liveness.json, verdict.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg

from . import net
from .check import check
from .cluster import API_PORT, CLOCK_ROLES, LINKS, Cluster, Proc, sweep_mounts
from .history import Ack, Send, load
from .net import ADDRESSES, Network
from .report import Report, Verdict
from .schedule import LEADER, VALKEY_PRIMARY, VALKEY_REPLICA, Fault, make
from .summary import Window, summarize_file


class Runner:
    """Plays a schedule on a cluster, logging each action with its time."""

    def __init__(self, cluster: Cluster, network: Network, log: Path) -> None:
        """A runner of `cluster` on `network`, logging to `log` (and stdout)."""
        self.cluster, self.network = cluster, network
        self.log = open(log, "a")  # noqa: SIM115 - kept for the whole run
        self.t0 = time.monotonic()
        self.windows: list[Window] = []

    def say(self, text: str) -> None:
        """Print and log one timed line."""
        line = f"[{time.monotonic() - self.t0:7.1f}s] {text}"
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def resolve(self, target: str) -> str:
        """A role for `leader-writer` or `valkey-primary` (asked now), else the target itself."""
        if target == LEADER:
            return self.cluster.leading_writer()
        if target == VALKEY_PRIMARY:
            return self.cluster.valkey_primary()
        if target == VALKEY_REPLICA:
            return "vk2" if self.cluster.valkey_primary() == "vk1" else "vk1"
        return target

    async def apply(self, fault: Fault) -> Callable[[], Awaitable[object]]:
        """Start a fault; returns what ends it."""
        c = self.cluster
        if fault.kind == "pause":
            role = self.resolve(fault.target)
            c.procs[role].signal(signal.SIGSTOP)
            self.say(f"SIGSTOP {role} (pid {c.procs[role].target_pid()})")
            return _now(lambda: c.procs[role].signal(signal.SIGCONT), lambda: self.say(f"SIGCONT {role}"))
        if fault.kind == "kill":
            role = self.resolve(fault.target)
            pid = c.procs[role].target_pid()
            await asyncio.to_thread(c.kill9, role)
            self.say(f"kill -9 {role} (pid {pid})")
            return lambda: asyncio.to_thread(self._restart, role)
        if fault.kind == "partition-role":
            role = self.resolve(fault.target)
            self.network.partition(role)
            self.say(f"partition: {role} ({ADDRESSES[role]}) cut off")
            return _now(lambda: self.network.heal(role), lambda: self.say(f"healed {role}"))
        if fault.kind in ("partition-route", "partition-replica") or fault.kind.startswith("latency-"):
            store_name, _, peer_name = fault.target.partition(">")
            store, peer = self.resolve(store_name), self.resolve(peer_name)
            address = "*" if peer == "*" else ADDRESSES[peer]
            if fault.kind.startswith("latency-"):
                half = int(fault.kind.split("-")[1]) // 2
                await c.proxies[store].set(store, address, latency_up_ms=half, latency_down_ms=half,
                                           jitter_ms=half // 5)
                self.say(f"latency {2 * half} ms round trip: {store} for {peer}")
            else:
                await c.proxies[store].set(store, address, blackhole=fault.detail)
                self.say(f"blackhole {fault.detail}: {store} for {peer}")

            async def clear() -> None:
                """Clear the route's fault for that peer."""
                await c.proxies[store].clear(store, address)
                self.say(f"cleared {store} for {peer}")

            return clear
        if fault.kind == "disk-full":
            taken = c.fill_disk()
            self.say(f"disk full under PostgreSQL ({taken // 1_000_000} MB filler, topped up while it lasts)")

            async def keep_full() -> None:
                """Top the disk up every 0.1 s while the fault lasts."""
                while True:
                    await asyncio.sleep(0.1)
                    c.fill_disk()

            filling = asyncio.create_task(keep_full())

            async def free() -> None:
                """Stop topping up and free the disk."""
                filling.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await filling
                c.free_disk()
                self.say("disk freed")

            return free
        if fault.kind == "clock-jump":
            c.jump_clock(fault.target, int(fault.detail))
            self.say(f"clock of {fault.target} jumped {fault.detail} s")
            return _now(lambda: c.jump_clock(fault.target, 0), lambda: self.say(f"clock of {fault.target} back"))
        raise ValueError(f"unknown fault kind {fault.kind!r}")

    def _restart(self, role: str) -> None:
        """Restart a killed role, logging a failure instead of raising it."""
        try:
            self.cluster.restart(role)
            self.say(f"restarted {role}")
        except RuntimeError as e:
            self.say(f"restart of {role} FAILED: {e}")

    async def play(self, schedule: list[Fault]) -> None:
        """Apply each fault at its offset and end it after its duration, recording its window."""
        start = time.monotonic()
        for fault in schedule:
            await asyncio.sleep(max(0.0, start + fault.at - time.monotonic()))
            self.say(f"fault: {fault.describe()}")
            began = time.time_ns() // 1_000_000
            try:
                undo = await self.apply(fault)
            except Exception as e:  # a fault that could not be applied is logged
                self.say(f"could not apply {fault.kind} on {fault.target}: {e}")
                continue
            await asyncio.sleep(max(0.0, start + fault.at + fault.duration - time.monotonic()))
            await undo()
            self.windows.append(Window(began, time.time_ns() // 1_000_000, fault.describe().strip()))

    async def quiet(self) -> None:
        """Every fault cleared: routes, partitions, pauses, the disk and the clock; dead roles started again."""
        c = self.cluster
        for role in net.ADDRESSES:
            self.network.heal(role)
        for store, control in c.proxies.items():
            with contextlib.suppress(Exception):
                await control.clear()
            del store
        for proc in c.procs.values():
            proc.signal(signal.SIGCONT)
        c.free_disk()
        for role in CLOCK_ROLES:
            c.jump_clock(role, 0)
        for name, proc in c.procs.items():
            if not proc.alive() or (proc.pidfile is not None and not _running(proc)):
                self.say(f"quiet: {name} was not running: restarting it")
                await asyncio.to_thread(self._restart, name)
        self.say("quiet: every fault cleared")


def _now(*actions: Callable[[], object]) -> Callable[[], Awaitable[object]]:
    """Quick, blocking undo steps as the one awaitable `play` expects."""

    async def done() -> object:
        """Run the steps."""
        for action in actions:
            action()
        return None

    return done


def _running(proc: Proc) -> bool:
    """Whether a store's server (its pid file's process) still exists."""
    pid = proc.target_pid()
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _check(run: Path, cluster: Cluster) -> list[Verdict]:
    """The history checker's verdicts (chaos/check.py) on the tables' links, against the ledger (owner's DSN)
    and the Valkey the Sentinel names primary now, the chain against the run's signed checkpoints."""
    primary = cluster.valkey_primary()
    report = await check(run / "history.jsonl", cluster.dsn, cluster.redis_url(ADDRESSES[primary]),
                         state_dir=run / "state", links=LINKS)
    return report.verdicts


async def _dated(cluster: Cluster, history: Path) -> Verdict:
    """Every acknowledged call's entry dated between its first send and its acknowledgement (2 s of slack each
    side; every namespace shares the host's true clock), whatever clock jump a writer or replica saw: an entry
    dated off would land in the wrong quarter hour or gaming day."""
    events, _ = load(history)
    first: dict[str, int] = {}
    acked: dict[str, int] = {}
    for e in events:
        if isinstance(e, Send):
            first.setdefault(e.call.request_id, e.at_ms)
        elif isinstance(e, Ack):
            acked[e.call.request_id] = e.at_ms
    conn = await asyncpg.connect(cluster.dsn)
    try:
        rows = await conn.fetch("SELECT request_id, (extract(epoch FROM created_at) * 1000)::bigint AS ms "
                                "FROM entries WHERE link_id = ANY($1)", list(LINKS))
    finally:
        await conn.close()
    dated = {str(r["request_id"]).rsplit(":", 1)[-1]: int(r["ms"]) for r in rows}
    slack = 2_000
    off = [(dated[rid] - first[rid] if dated[rid] < first[rid] else dated[rid] - acked[rid], rid)
           for rid in acked if rid in dated and not first[rid] - slack <= dated[rid] <= acked[rid] + slack]
    far = max(off, key=lambda o: abs(o[0]), default=None)
    worst = f"; worst {far[0] / 1000:+.1f} s ({far[1]})" if far else ""
    return Verdict("entries-dated-within-their-call", not off and bool(acked),
                   f"{len(off)} of {len(acked)} acknowledged calls' entries dated outside their call's send..ack "
                   f"window (2 s slack){worst}")


def _liveness(run: Path, tables: Proc) -> list[Verdict]:
    """The liveness verdicts from the tables' liveness.json."""
    path = run / "liveness.json"
    if not path.exists():
        code = tables.proc.poll() if tables.proc else None
        return [Verdict("liveness", False, f"the tables wrote no liveness.json (exit {code})")]
    live = json.loads(path.read_text())
    after, rounds = live["serving_after_s"], live["rounds_after_quiet"]
    return [Verdict("health SERVING within 30 s after the faults", 0 <= after <= 30,
                    f"both replicas SERVING {after} s after the quiet mark" if after >= 0 else "not within 30 s"),
            Verdict("every table plays a round after the faults", bool(rounds) and all(rounds.values()),
                    f"{sum(rounds.values())} of {len(rounds)} tables played a whole new round within 60 s")]


async def main_async(a: argparse.Namespace) -> int:
    """One whole run: network, processes, schedule, quiet phase, verdicts; the exit status."""
    left = net.sweep() + sweep_mounts()  # first: an earlier run's tmpfs may be mounted in its directory
    if left:
        print(f"removed what an earlier run left: {', '.join(left)}", flush=True)
    run = Path(a.out).resolve()
    if (run / "schedule.txt").exists():  # an earlier run's directory (make chaos reuses one per seed): start afresh
        shutil.rmtree(run)
    elif run.exists() and any(run.iterdir()):
        print(f"chaos.run: --out {run} is not empty and holds no earlier run: choose another", file=sys.stderr)
        return 2
    run.mkdir(parents=True, exist_ok=True)
    seconds = a.minutes * 60
    schedule = make(a.seed, seconds)
    text = "\n".join([f"seed {a.seed}, chaos phase {seconds:.0f} s, {len(schedule)} faults:",
                      *(f.describe() for f in schedule)])
    print(text, flush=True)
    (run / "schedule.txt").write_text(text + "\n")
    network = Network()
    cluster = Cluster(run)
    runner = Runner(cluster, network, run / "actions.log")
    verdicts: list[Verdict] = []
    try:
        network.build()
        cluster.prepare()
        await asyncio.to_thread(cluster.start_stores)
        await asyncio.to_thread(cluster.start_jackpotd)
        runner.say("stores, writers and API replicas up")
        apis = [f"{ADDRESSES[r]}:{API_PORT}" for r in ("a1", "a2")]
        tables = cluster.procs["tables"] = Proc("tables", "cli", [
            sys.executable, "-m", "chaos.tables", "--apis", *apis, "--creds", str(cluster.creds), "--history",
            str(run / "history.jsonl"), "--out", str(run), "--seed", str(a.seed)], cluster.logs / "tables.log")
        tables.start()
        deadline = time.monotonic() + 120
        while not (run / "tables-ready").exists():
            if not tables.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the tables did not start; {tables.log}:\n{tables.log.read_text()[-3000:]}")
            await asyncio.sleep(0.2)
        runner.say("tables playing; the schedule starts")
        await runner.play(schedule)
        await asyncio.sleep(max(0.0, seconds - (time.monotonic() - runner.t0)) if a.full else 0)
        await runner.quiet()
        (run / "quiet").write_text(f"{time.time()}\n")
        while tables.alive():
            await asyncio.sleep(0.5)
        runner.say("tables done")
        verdicts += _liveness(run, tables)
        crashed = [n for n, p in cluster.procs.items() if n != "tables" and not p.alive()]
        verdicts.append(Verdict("no role exited by itself", not crashed, ", ".join(crashed) or "every role running"))
        verdicts += await _check(run, cluster)
        verdicts.append(await _dated(cluster, run / "history.jsonl"))
    except Exception as e:  # a harness failure: a FAIL, with its reason
        runner.say(f"harness error: {type(e).__name__}: {e}")
        verdicts.append(Verdict("harness ran the schedule", False, f"{type(e).__name__}: {e}"))
    finally:
        await asyncio.to_thread(cluster.stop_all)
        network.destroy()
    report = Report(verdicts)
    lines = [f"seed {a.seed}", text, report.render(), f"run directory: {run}"]
    with contextlib.suppress(OSError):
        lines += ["what each fault did:", *summarize_file(run / "history.jsonl", runner.windows)]
    (run / "verdict.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[2:]), flush=True)
    return 0 if verdicts and report.ok else 1


def main() -> None:
    """The command line: root only; Ctrl-C or SIGTERM still removes everything the run made."""
    p = argparse.ArgumentParser(prog="python -m chaos.run", description=__doc__)
    p.add_argument("--seed", type=int, default=23)
    p.add_argument("--minutes", type=float, default=2.0, help="length of the chaos phase (default 2)")
    p.add_argument("--out", help="the run's directory (default /tmp/jackpotd-chaos/seed-N-TIME)")
    p.add_argument("--full", action="store_true", help="keep the tables playing to the end of --minutes even when "
                                                       "the schedule ends earlier")
    a = p.parse_args()
    if os.geteuid() != 0:
        print("chaos.run needs root (network namespaces, a tmpfs mount)", file=sys.stderr)
        raise SystemExit(2)
    a.out = a.out or f"/tmp/jackpotd-chaos/seed-{a.seed}-{time.strftime('%Y%m%dT%H%M%S')}"
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        code = asyncio.run(main_async(a))
    except KeyboardInterrupt:
        net.sweep()
        sweep_mounts()
        code = 130
    raise SystemExit(code)


if __name__ == "__main__":
    main()
