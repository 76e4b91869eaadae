"""The harness's tables, run in their own namespace: each plays rounds (CommitWagers, then SettleRound from a seeded
deck with an occasional forced flush, or now and then VoidRound) against both API replicas, retrying a failed call
with the same request id until it is answered, and logging every send, ack, error and abandon (chaos/history.py).

Once the harness writes the quiet file (the faults are over), the liveness check: both replicas' health SERVING
within 30 s of it, and every table plays a whole new round within 60 s of it; the result goes to liveness.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from jackpot_table.deal import deal

from jackpotd.api.gen.jackpot.v1 import admin_pb2, admin_pb2_grpc, table_pb2, table_pb2_grpc
from jackpotd.auth.client import open_channel

from .history import Call, Op, Recorder, pools_of

RETRIED = {"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED", "INTERNAL", "UNKNOWN", "CANCELLED"}
GIVE_UP_S = 120.0  # a call still failing after this long is abandoned (its id may be in the ledger, at most once)
CALL_DEADLINE_S = 3.0
FLUSH = ["AS", "JS", "8S", "5S", "2S"]


@dataclass
class Liveness:
    """What the quiet phase saw."""

    serving_after_s: float = -1.0
    rounds_after_quiet: dict[str, bool] = field(default_factory=dict)


class Table:
    """One table: its channel, its deck's seed, and its log."""

    def __init__(self, name: str, link: str, channel: grpc.aio.Channel, recorder: Recorder, seed: int) -> None:
        """A table playing on `link` through `channel`, its deck seeded with `seed`."""
        self.name, self.link = name, link
        self.stub = table_pb2_grpc.TableServiceStub(channel)
        self.recorder = recorder
        self.rng = random.Random(seed)
        self.round = 0
        self.last_round_done = 0.0  # wall clock of the last whole round

    async def call(self, op: Op, round_id: str, send: Callable[[str, float], Awaitable[Any]]) -> Any | None:
        """One request, retried with the same id until answered; None when refused for good or abandoned."""
        request_id = str(uuid.uuid4())
        call = Call(self.name, self.link, self.name, op, request_id, round_id)
        started, attempt, pause = time.monotonic(), 0, 0.1
        while True:
            attempt += 1
            self.recorder.send(call, attempt)
            try:
                response = await send(request_id, CALL_DEADLINE_S)
            except grpc.aio.AioRpcError as e:
                code = e.code().name
                self.recorder.error(call, attempt, code, e.details() or "")
                if code not in RETRIED or time.monotonic() - started > GIVE_UP_S:
                    self.recorder.abandon(call, attempt)
                    return None
                await asyncio.sleep(pause * (0.5 + self.rng.random()))
                pause = min(pause * 2, 2.0)
                continue
            self.recorder.ack(call, attempt, int(response.sequence), pools_of(response))
            return response

    async def play_round(self) -> bool:
        """Commit three seats, then settle (a flush now and then) or void; True when the round was answered whole."""
        self.round += 1
        round_id = f"r{self.round}-{uuid.uuid4().hex[:8]}"
        seats = [1, 2, 3]
        wagers = [table_pb2.Wager(seat=s, amount_cents=100, ante_placed=True) for s in seats]
        committed = await self.call("CommitWagers", round_id, lambda rid, t: self.stub.CommitWagers(
            table_pb2.CommitWagersRequest(request_id=rid, table_id=self.name, round_id=round_id, wagers=wagers),
            timeout=t))
        if committed is None:
            return False
        if self.rng.random() < 0.1:
            voided = await self.call("VoidRound", round_id, lambda rid, t: self.stub.VoidRound(
                table_pb2.VoidRoundRequest(request_id=rid, table_id=self.name, round_id=round_id,
                                           reason="chaos: dealer misdeal"), timeout=t))
            return voided is not None
        forced = {1: FLUSH} if self.rng.random() < 0.1 else {}
        dealt = deal("caribbean-stud", seats, self.rng, forced)
        hands = [table_pb2.SeatHand(seat=s, cards=c) for s, c in dealt.hands.items()]
        settled = await self.call("SettleRound", round_id, lambda rid, t: self.stub.SettleRound(
            table_pb2.SettleRoundRequest(request_id=rid, table_id=self.name, round_id=round_id, hands=hands,
                                         dealer_cards=dealt.dealer), timeout=t))
        if settled is not None:
            self.last_round_done = time.time()
        return settled is not None

    async def play(self, until: Callable[[], bool], pace: float) -> None:
        """Play rounds until `until()` says stop."""
        while not until():
            await self.play_round()
            await asyncio.sleep(pace)


async def _retry(what: str, call: Callable[[], Any], timeout: float = 120) -> None:
    """An admin call retried until done (ALREADY_EXISTS: done before) or `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            await call()
            return
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.ALREADY_EXISTS:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: {e.code().name} {e.details()}") from None
            await asyncio.sleep(0.5)


async def set_up(admin: admin_pb2_grpc.AdminServiceStub, links: dict[str, list[str]]) -> None:
    """The links (SPLIT, the README's rates) and their tables, each with a fixed request id so a retry is one act."""
    audit = admin_pb2.Audit(actor="chaos", reason="chaos harness set-up", approval_ref="CHAOS")
    for link, tables in links.items():
        request = admin_pb2.CreateLinkRequest(
            request_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"chaos:{link}")), link_id=link, mode="SPLIT",
            wager_amount_cents=100,
            pools=[admin_pb2.PoolConfig(pool=p, reset_cents=r) for p, r in
                   (("MAJOR", 100_000), ("MINOR", 5_000), ("RESERVE", 0))],
            rates=admin_pb2.Rates(pools=[admin_pb2.PoolRate(pool=k, ppm=v) for k, v in
                                         (("MAJOR", 200_000), ("MINOR", 75_000), ("RESERVE", 25_000))],
                                  retained_ppm=700_000), audit=audit)
        await _retry(f"CreateLink {link}", partial(admin.CreateLink, request, timeout=10))
        for table in tables:
            reg = admin_pb2.RegisterTableRequest(
                request_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"chaos:{table}")), table_id=table, link_id=link,
                game="caribbean-stud", seats=7, audit=audit)
            await _retry(f"RegisterTable {table}", partial(admin.RegisterTable, reg, timeout=10))


async def serving(channel: grpc.aio.Channel) -> bool:
    """Whether a replica's health for "" is SERVING."""
    stub = health_pb2_grpc.HealthStub(channel)
    try:
        reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
    except grpc.aio.AioRpcError:
        return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


async def run(a: argparse.Namespace) -> None:
    """Set the links up, play every table until the quiet mark, then check liveness."""
    creds = Path(a.creds)
    ca = (creds / "ca.pem").read_bytes()
    override = [("grpc.ssl_target_name_override", a.apis[0].rsplit(":", 1)[0]),
                ("grpc.lb_policy_name", "round_robin"), ("grpc.max_reconnect_backoff_ms", 1000)]
    target = "ipv4:" + ",".join(a.apis)

    def channel(who: str, *, one: str | None = None) -> grpc.aio.Channel:
        """A TLS channel presenting `who`'s certificate, to both replicas (or `one`)."""
        pem = creds / ("tables" if who.startswith("t") else "roles") / who
        return open_channel(one or target, ca=ca, cert=pem.with_suffix(".pem").read_bytes(),
                            key=pem.with_suffix(".key").read_bytes(), options=override)

    names = [f"t{n}" for n in range(1, a.tables + 1)]
    links = {f"chaos-{n}": names[n - 1::a.links] for n in range(1, a.links + 1)}
    admin = channel("admin-chaos")
    await set_up(admin_pb2_grpc.AdminServiceStub(admin), links)
    recorder = Recorder(a.history)
    tables = [Table(t, link, channel(t), recorder, a.seed * 1000 + int(t[1:])) for link, ts in links.items()
              for t in ts]
    (Path(a.out) / "tables-ready").write_text("ready\n")
    quiet_file = Path(a.out) / "quiet"
    playing = [asyncio.create_task(t.play(quiet_file.exists, a.pace)) for t in tables]
    while not quiet_file.exists():
        await asyncio.sleep(0.2)
    quiet_at, quiet_mono = time.time(), time.monotonic()
    live = Liveness()
    replicas = [channel("admin-chaos", one=api) for api in a.apis]

    async def health() -> None:  # from the quiet mark, while the rounds in progress finish
        """Poll both replicas' health until SERVING, for 30 s from the quiet mark."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all([await serving(c) for c in replicas]):
                live.serving_after_s = round(time.time() - quiet_at, 1)
                return
            await asyncio.sleep(0.2)

    watching = asyncio.create_task(health())
    await asyncio.wait(playing, timeout=GIVE_UP_S + 30)  # a round in progress finishes or is abandoned
    await watching
    ends = quiet_mono + 60  # a whole new round by then, the rounds in progress at the quiet mark finished first

    async def one_round(t: Table) -> bool:
        """Play rounds until one is answered whole, or the liveness deadline."""
        while time.monotonic() < ends:
            if await asyncio.wait_for(t.play_round(), max(1.0, ends - time.monotonic())):
                return True
        return False

    done = await asyncio.gather(*(one_round(t) for t in tables), return_exceptions=True)
    live.rounds_after_quiet = {t.name: r is True for t, r in zip(tables, done, strict=True)}
    (Path(a.out) / "liveness.json").write_text(json.dumps(live.__dict__, indent=1) + "\n")
    recorder.close()
    for c in [admin, *replicas]:
        await c.close(None)


def main() -> None:
    """The command line: `python -m chaos.tables`."""
    p = argparse.ArgumentParser(prog="python -m chaos.tables", description=__doc__)
    p.add_argument("--apis", nargs="+", required=True, help="the API replicas' host:port")
    p.add_argument("--creds", required=True, help="the credentials directory (jackpotd certs)")
    p.add_argument("--history", required=True, help="the clients' log (history.jsonl)")
    p.add_argument("--out", required=True, help="the run's directory (quiet, tables-ready, liveness.json)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tables", type=int, default=6)
    p.add_argument("--links", type=int, default=2)
    p.add_argument("--pace", type=float, default=0.05, help="seconds between a table's rounds")
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
