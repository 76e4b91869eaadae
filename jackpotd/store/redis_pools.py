"""Redis adapter: the live pools, each link's sequence and journal, idempotency records, round states,
the durability announcements, and rebuilding a link from the ledger. The key layout (keys.py), the scripts
and their verdicts (redis_scripts.py) and pub/sub are known here only; every Redis failure leaves this
module as the service's Unavailable.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import hiredis
import orjson
import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.cluster import RedisCluster

from ..canonical import canonical_json
from ..service.errors import Unavailable
from ..service.ports import (
    Applied,
    IdReused,
    LinkExists,
    LinkRead,
    LiveRound,
    Moved,
    Outcome,
    Reply,
    RoundNotOpen,
    RoundsOpen,
    Step,
)
from . import keys
from .ledger import LinkSnapshot
from .redis_errors import DOWN, WrongTopology, refusal, translated, unavailable
from .redis_scripts import ScriptBatcher, Verdict, reply_error
from .replies import pairs, parse_reply
from .resp import RespPipeline
from .resp_cluster import ClusterResp, with_address
from .shards import ALL
from .throttle import Throttled

log = logging.getLogger("jackpotd.redis")
SAFETY_TTL_SECONDS = 24 * 3600  # until the writer shortens it to the retention once the entry is durable
HASH_PREFIX = 16  # hex digits of a request identity in durability announcements (64 bits)
HEALTH_TTL_MS = 3000
PROBE = ("return {redis.call('EXISTS', KEYS[1], KEYS[4]) == 2 and 1 or 0, "
         "redis.call('GET', KEYS[2]) or '', redis.call('GET', KEYS[3]) or ''}")

_RETRY = {Verdict.STALE_CONFIG: False, Verdict.ROUND_MOVED: False, Verdict.MOVED: True, Verdict.NEGATIVE: True}


@dataclass(frozen=True, slots=True)
class Probe:
    """What Redis holds of a link, read atomically: whether its config is there (with its open-round count),
    its sequence and last entry."""

    has_config: bool
    seq: int | None
    last: str


@dataclass(frozen=True, slots=True)
class Durable:
    """Entries the ledger has just committed for a link: sequences first..first+len(identities)-1, and what
    may now leave Redis after the retention (the requests' records, the rounds they finished)."""

    first: int
    identities: Sequence[str]
    request_ids: Sequence[str] = ()
    finished_rounds: Sequence[tuple[str, str]] = ()


Journal = list[tuple[str, list[tuple[int, dict[str, str]]]]]  # [(link, [(seq, fields)])]


class RedisPools:
    """The live store of every link (service.ports.LiveStore), and what the ledger writer needs of Redis."""

    FOLLOW_EVERY = 1.0  # seconds between questions to the Sentinels
    POLL_MS = (1, 16)  # a cluster's journals are polled: the first and the longest wait between empty reads

    def __init__(self, url: str, *, cluster: bool = False) -> None:
        self.url = url
        self.cluster = cluster  # a Valkey/Redis Cluster: every command goes to its key's shard
        self._poll_ms = self.POLL_MS[0]  # a cluster's next wait between empty journal reads
        self._subscriptions = 0  # on a cluster, which primary the next subscription asks
        self._connect(url)
        self._sentinels: list[tuple[str, int]] = []
        self._master = ""
        self._sentinel_password: str | None = None
        self._sentinel_error = ""  # why the last Sentinel asked did not answer: said when none does
        self._following: asyncio.Task[None] | None = None
        self._complain = Throttled(log).warn  # for what is tried several times a second

    def _connect(self, url: str) -> None:
        # decode_responses=True: every reply is str; typed Any because the stubs cannot express that
        self._resp: RespPipeline | ClusterResp
        self._journal_reader: RespPipeline | ClusterResp  # its own connections: XREAD may block on them
        if self.cluster:
            self.client: Any = RedisCluster.from_url(url, decode_responses=True, max_connections=256)
            self._resp, self._journal_reader = ClusterResp(self.client, url), ClusterResp(self.client, url)
        else:
            self.client = aioredis.Redis.from_url(url, decode_responses=True, max_connections=256)
            self._resp, self._journal_reader = RespPipeline(url), RespPipeline(url)
        self._scripts = ScriptBatcher(self._resp.execute, self._load_everywhere if self.cluster
                                      else self.client.script_load)

    async def _load_everywhere(self, script: str) -> None:
        """A script onto every primary that answers (a restarted node is one of them; a dead one refuses its
        steps anyway, and is given the script when it answers NOSCRIPT)."""
        for node in self.client.get_primaries():
            try:
                await self.client.execute_command("SCRIPT LOAD", script, target_nodes=node)
            except (*DOWN, redis.exceptions.RedisError) as e:
                self._complain(f"loading the scripts on {node.host}:{node.port} failed: {e}")

    @classmethod
    async def open(cls, url: str, sentinels: str = "", master: str = "", *, cluster: bool = False,
                   sentinel_password: str | None = None) -> RedisPools:
        """The live store at `url`; with `sentinels` ("host:port,..."), at whatever address they give for
        `master`, followed as they fail it over (the URL keeps its password, database and options; the Sentinels
        are asked with `sentinel_password`, their own); with `cluster`, the Valkey/Redis Cluster that `url` is a
        node of."""
        pools = cls(url, cluster=cluster)
        if sentinels:
            pools._sentinels = [(h, int(p)) for h, _, p in (s.strip().rpartition(":") for s in sentinels.split(","))]
            pools._master = master
            pools._sentinel_password = sentinel_password
            await pools._follow_once()
            pools._following = asyncio.create_task(pools._follow(), name="sentinel-follower")
        try:
            await (pools._cluster_map() if cluster else pools._not_a_cluster())
        except BaseException:
            await pools.close()
            raise
        return pools

    async def _cluster_map(self) -> None:
        """Read the cluster's slot map (before pub/sub or a pipeline needs it); WrongTopology when the server is
        no cluster's node."""
        try:
            await self.client.initialize()
        except redis.exceptions.RedisClusterException as e:
            if "not enabled" in str(e):
                raise WrongTopology(f"redis_cluster is set but the Redis at {self._address()} is not a cluster "
                                    "node (cluster mode is not enabled): unset redis_cluster, or point redis_url "
                                    "at a node of the cluster") from None
            raise unavailable(e) from e

    async def _not_a_cluster(self) -> None:
        """WrongTopology when the server is a cluster's node but redis_cluster is not set: without it, steps of
        links on other shards would all be refused. A Redis that does not answer now is found by the first call."""
        try:
            info = await self.client.info("cluster")
        except (*DOWN, redis.exceptions.RedisError):
            return
        if info.get("cluster_enabled"):
            raise WrongTopology(f"the Redis at {self._address()} is a cluster node: set redis_cluster "
                                "(JACKPOTD_REDIS_CLUSTER=true, or --redis-cluster)")

    def _address(self) -> str:
        """Where redis_url points, without its password."""
        parts = urlsplit(self.url)
        return parts.path if parts.scheme == "unix" else f"{parts.hostname}:{parts.port or 6379}"

    async def _master_address(self) -> tuple[str, int] | None:
        """The master's address as the first Sentinel that answers gives it."""
        for host, port in self._sentinels:
            sentinel: Any = aioredis.Redis(host=host, port=port, password=self._sentinel_password,
                                           decode_responses=True, socket_timeout=2, socket_connect_timeout=2)
            try:
                found: Any = await sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self._master)
                if found:
                    return str(found[0]), int(found[1])
                self._sentinel_error = f"{host}:{port} does not know it"
            except (OSError, redis.exceptions.RedisError) as e:
                self._sentinel_error = f"{host}:{port}: {e}"
                continue
            finally:
                await sentinel.aclose()
        return None

    async def _follow_once(self) -> None:
        found = await self._master_address()
        if found is None:
            self._complain(f"no Sentinel of {self._sentinels} answers for master {self._master!r} (last: "
                           f"{self._sentinel_error})")
            return
        parts = urlsplit(self.url)
        if parts.scheme != "unix" and (parts.hostname, parts.port) == found:
            return
        url = with_address(self.url, *found)
        log.warning("Redis primary %r is now %s:%d (Sentinel); reconnecting", self._master, *found)
        old = (self.client, self._resp, self._journal_reader)
        self.url = url
        self._connect(url)  # calls in flight on the old primary fail as Unavailable and are retried here
        await self._close(*old)

    async def _follow(self) -> None:
        while True:
            await asyncio.sleep(self.FOLLOW_EVERY)
            try:
                await self._follow_once()
            except Exception as e:  # the next question may get an answer
                log.warning("asking the Sentinels failed: %s", e)

    @staticmethod
    async def _close(client: Any, resp: RespPipeline | ClusterResp, reader: RespPipeline | ClusterResp) -> None:
        for closing in (reader.close(), resp.close(), client.aclose()):
            with contextlib.suppress(Exception):
                await closing

    async def close(self) -> None:
        if self._following is not None:
            self._following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._following
        await self._close(self.client, self._resp, self._journal_reader)

    def _skipped(self, reply: Any, what: str) -> bool:
        """Whether a link's reply failed: on one Redis that raises; on a cluster, one node's failure is noted (at
        most once a minute) and the link left for the next try while the others go on."""
        if not isinstance(reply, Exception):
            return False
        if not self.cluster:
            raise raised(reply)
        self._complain(f"{what} failed: {reply}")
        return True

    # ---- the service's port ----------------------------------------------------------------------

    @translated
    async def apply(self, step: Step, floor: int) -> Outcome:
        """Run the atomic step; nothing changes unless every check passes. `floor` is the ledger's durable
        sequence as the caller knows it: a Redis behind it has gone back and is refused."""
        link = step.link_id
        rkey = keys.round_(link, *step.round) if step.round else keys.no_round(link)
        args: list[str | int] = [
            step.request_hash, step.config_version, step.round_expect, step.round_rev, step.round_new_state,
            step.round_data, step.new_config, canonical_json(step.entry),
            canonical_json(step.result), SAFETY_TTL_SECONDS, step.canonical_content, floor,
            step.identity, "1" if step.between_rounds else "", len(step.guards)]
        for pool, bal in sorted(step.guards.items()):
            args += [pool, str(bal)]
        args.append(len(step.deltas))
        for pool, delta in step.deltas:
            args += [pool, str(delta)]
        status, payload, *fresh = await self._scripts.run(self._scripts.apply_sha, [
            keys.config(link), keys.balances(link), keys.seq(link), keys.journal(link),
            keys.record(link, step.request_id), rkey, keys.last(link), keys.fence(link), keys.open_rounds(link)], args)
        verdict = Verdict(status)
        if verdict is Verdict.OK:  # the stored reply is what we sent plus the sequence and balances
            seq, balances = fresh
            return Applied(Reply(int(seq), step.result, pairs(orjson.loads(balances)), step.content,
                                 step.request_hash), first=True)
        if verdict is Verdict.DUP:
            return Applied(parse_reply(payload), first=False)
        if verdict is Verdict.CONFLICT:
            return IdReused(parse_reply(payload))
        if verdict is Verdict.ROUND_STATE:
            return RoundNotOpen(payload)
        if verdict is Verdict.ROUNDS_OPEN:
            return RoundsOpen(int(payload))
        if verdict is Verdict.EXISTS:
            return LinkExists()
        if verdict in _RETRY:
            return Moved(contended=_RETRY[verdict])
        error = refusal(link, verdict, payload)
        assert error is not None
        raise error

    @translated
    async def read(self, link_id: str, floor: int, round_: tuple[str, str] | None = None) -> LinkRead:
        """The link's sequence, balances and one round, read atomically; LinkLost or LinkFenced when the
        link's Redis state is not fit to answer from."""
        rkey = keys.round_(link_id, *round_) if round_ else keys.no_round(link_id)
        status, *rest = await self._scripts.run(self._scripts.read_sha, [
            keys.config(link_id), keys.seq(link_id), keys.balances(link_id), rkey, keys.fence(link_id)], [floor])
        error = refusal(link_id, Verdict(status), rest[0] if rest else "")
        if error is not None:
            raise error
        seq, balances, rnd = rest
        flat = orjson.loads(rnd)
        fields = dict(zip(flat[::2], flat[1::2], strict=True)) if flat else {}
        live = LiveRound(fields["state"], fields.get("rev", ""), fields.get("data", "")) if fields else None
        return LinkRead(int(seq), pairs(orjson.loads(balances)), live)

    @translated
    async def record(self, link_id: str, request_id: str) -> Reply | None:
        """The stored reply of a request id, while Redis keeps it."""
        raw: str | None = await self.client.get(keys.record(link_id, request_id))
        return None if raw is None else parse_reply(raw)

    @translated
    async def mark_online(self, table_id: str, ttl_ms: int) -> None:
        """The table's controller holds a meter stream open (not money: Redis alone keeps it)."""
        await self.client.set(keys.online(table_id), "1", px=ttl_ms)

    @translated
    async def online(self, table_ids: Sequence[str]) -> set[str]:
        """Those of the tables with a meter stream open somewhere."""
        if not table_ids:
            return set()
        pipe = self.client.pipeline(transaction=False)
        for table_id in table_ids:
            pipe.exists(keys.online(table_id))
        found = await pipe.execute()
        return {t for t, n in zip(table_ids, found, strict=True) if n}

    @translated
    async def config(self, link_id: str) -> tuple[str, dict[str, Any]] | None:
        """(version, config) of a link, or None if Redis does not hold it."""
        version, raw = await self.client.hmget(keys.config(link_id), ["version", "config"])
        if version is None or raw is None:
            return None
        return version, json.loads(raw)

    @translated
    async def link_of_table(self, table_id: str) -> str | None:
        v: str | None = await self.client.get(keys.table(table_id))
        return v

    @translated
    async def set_table_link(self, table_id: str, link_id: str) -> None:
        await self.client.set(keys.table(table_id), link_id)
        await self.client.sadd(keys.LINKS, link_id)

    @translated
    async def add_link(self, link_id: str) -> None:
        await self.client.sadd(keys.LINKS, link_id)

    # ---- for audits, recovery, health and the ledger writer --------------------------------------

    @translated
    async def ping(self) -> None:
        """Whether Redis answers. On a cluster, the primary of the list of links: a dead primary that holds
        no such key stops only its own links, which the writer's heartbeat names."""
        if self.cluster:
            await self.client.ping(target_nodes=self.client.get_node_from_key(keys.LINKS))
        else:
            await self.client.ping()

    @translated
    async def links(self) -> list[str]:
        return sorted(await self.client.smembers(keys.LINKS))

    @translated
    async def balances(self, link_id: str) -> dict[str, int]:
        """The pools as Redis holds them, unchecked: for audits that compare Redis with the ledger."""
        return {k: int(v) for k, v in (await self.client.hgetall(keys.balances(link_id))).items()}

    @translated
    async def seq(self, link_id: str) -> int:
        """The link's sequence as Redis holds it, unchecked: for audits and recovery."""
        return int(await self.client.get(keys.seq(link_id)) or 0)

    @translated
    async def read_journals(self, after: Mapping[str, int], count: int, block_ms: int | None = None) -> Journal:
        """Journal entries of each link after the given sequence, oldest first: [(link, [(seq, fields)])];
        with `block_ms`, waiting up to that long for the first."""
        if self.cluster:
            return await self._poll_journals(after, count, block_ms)
        names = {keys.journal(link): link for link in after}
        command: list[str | int] = ["XREAD", "COUNT", count]
        if block_ms is not None:
            command += ["BLOCK", block_ms]
        command += ["STREAMS", *names, *(f"0-{seq}" for seq in after.values())]
        (reply,) = await self._journal_reader.execute([command])
        return self._journal_rows(names, [reply])

    async def _poll_journals(self, after: Mapping[str, int], count: int, block_ms: int | None) -> Journal:
        """A cluster refuses one XREAD across slots and cannot block on several: read each link's journal on
        its shard, all in one round trip per shard, and poll while they are empty (a wait that doubles from
        POLL_MS[0] to POLL_MS[1] ms, so a quiet cluster costs little and a lone entry waits at most that)."""
        names = {keys.journal(link): link for link in after}
        each = max(100, count // max(1, len(names)))  # a batch stays near `count` entries, however many links
        commands: list[list[str | int]] = [["XREAD", "COUNT", each, "STREAMS", name, f"0-{seq}"]
                                           for name, seq in zip(names, after.values(), strict=True)]
        deadline = time.monotonic() + (block_ms or 0) / 1000
        while True:
            rows = self._journal_rows(names, await self._journal_reader.execute(commands))
            if rows:
                self._poll_ms = self.POLL_MS[0]  # busy: the next empty read waits little
            if rows or block_ms is None or time.monotonic() >= deadline:
                return rows
            await asyncio.sleep(self._poll_ms / 1000)
            self._poll_ms = min(self._poll_ms * 2, self.POLL_MS[1])  # kept across calls: quiet stays cheap

    def _journal_rows(self, names: Mapping[str, str], replies: Sequence[Any]) -> Journal:
        """XREAD replies as [(link, [(seq, fields)])], the links that had entries only. On a cluster, a link whose
        node failed is read next time (its calls are refused meanwhile); the others go on."""
        rows: Journal = []
        for name, reply in zip(names, replies, strict=False):
            if self._skipped(reply, f"reading the journal of link {names[name]}"):
                continue
            rows += [(names[stream], [(int(entry_id.split("-")[1]), dict(zip(flat[::2], flat[1::2], strict=True)))
                                      for entry_id, flat in entries]) for stream, entries in reply or ()]
        return rows

    @translated
    async def journal_after(self, link_id: str, seq: int, count: int = 1000) -> list[tuple[int, dict[str, str]]]:
        """One link's journal entries with a sequence above `seq`, oldest first."""
        rows = await self.client.xrange(keys.journal(link_id), min=f"0-{seq + 1}", max="+", count=count)
        return [(int(i.split("-")[1]), f) for i, f in rows]

    @translated
    async def trim_journal(self, link_id: str, upto_seq: int) -> None:
        """Drop journal entries that PostgreSQL holds (up to and including `upto_seq`)."""
        await self.client.xtrim(keys.journal(link_id), minid=f"0-{upto_seq + 1}", approximate=False)

    @translated
    async def announce_durable(self, written: Mapping[str, Durable], retention_seconds: int) -> set[str]:
        """Record and publish what the ledger now holds, and let answered records and finished rounds
        leave Redis after the retention: all in one round trip. Returns the links whose announcement failed
        (on a cluster, those of a node that failed; on one Redis, a failure raises)."""
        commands: list[list[str | int]] = []
        ttl_ms = retention_seconds * 1000
        for link, d in written.items():
            head = d.first + len(d.identities) - 1
            commands += [["SET", keys.durable(link), head],
                         ["PUBLISH", keys.DURABLE_CHANNEL,
                          f"{link} d {d.first} " + " ".join(i[:HASH_PREFIX] for i in d.identities)]]
            commands += [["PEXPIRE", keys.record(link, r), ttl_ms] for r in d.request_ids]
            commands += [["PEXPIRE", keys.round_(link, *r), ttl_ms] for r in d.finished_rounds]
        owners = [link for link, d in written.items() for _ in range(2 + len(d.request_ids) + len(d.finished_rounds))]
        failed: set[str] = set()
        for link, reply in zip(owners, await self._journal_reader.execute(commands), strict=True):
            if isinstance(reply, Exception):
                failed.add(link)
                error = reply
        if failed and not self.cluster:
            raise raised(error)
        return failed  # a cluster node that failed keeps its links' announcements back, not the others'

    @translated
    async def announce(self, link_id: str, kind: str, seq: int, detail: str = "") -> None:
        """Publish a link event to the durability watchers: `fenced` at the entry the ledger refused. From the
        link's own node, in order with its other announcements."""
        (reply,) = await self._resp.execute_on(keys.config(link_id), [
            ["PUBLISH", keys.DURABLE_CHANNEL, f"{link_id} {kind} {seq} {detail}".rstrip()]])
        if isinstance(reply, Exception):
            raise raised(reply)

    @contextlib.asynccontextmanager
    async def announcements(self) -> AsyncIterator[AsyncIterator[str]]:
        """The writer's announcements ("<link> d <first> <hash>...", "<link> rebuilt <seq>", "<link> fenced
        <seq> <why>"), subscribed on entry; the iterator resubscribes by itself after a dropped connection
        (the watcher's poller covers what was missed)."""
        subscribed = [await self._subscribed()]

        async def messages() -> AsyncIterator[str]:
            failures = 0
            while True:
                try:
                    async for msg in subscribed[0].listen():
                        failures = 0
                        if msg["type"] == "message":
                            yield msg["data"]
                    raise ConnectionError("the subscription ended")
                except Exception as e:  # a dropped connection, a protocol error: the poller covers the gap
                    if failures % 30 == 0:  # a Redis that stays down is said once a minute, not at every try
                        log.warning("durability announcements: resubscribing after %s: %s", type(e).__name__, e)
                    await asyncio.sleep(min(0.1 * 2 ** failures, 2.0))  # a cluster's map is read at each try
                    failures += 1
                    with contextlib.suppress(Exception):
                        await subscribed[0].aclose()
                    # afresh: a cluster's subscription is tied to one node, which may be gone (the channel reaches
                    # every node of a cluster, so any other will do)
                    with contextlib.suppress(Exception):  # still down: the next turn tries again
                        subscribed[0] = await self._subscribed()

        try:
            yield messages()
        finally:
            with contextlib.suppress(Exception):
                await subscribed[0].aclose()

    @translated
    async def _subscribed(self) -> Any:
        """A pub/sub connection subscribed to the writer's announcements."""
        if self.cluster:  # any primary will do (a cluster forwards PUBLISH to every node): the next one each try
            await self.client.nodes_manager.initialize()
            primaries = self.client.get_primaries()
            self._subscriptions += 1
            pubsub = self.client.pubsub(node=primaries[self._subscriptions % len(primaries)])
            await pubsub.subscribe(keys.DURABLE_CHANNEL)
            return pubsub
        pubsub = self.client.pubsub()
        await pubsub.subscribe(keys.DURABLE_CHANNEL)
        return pubsub

    @translated
    async def probe(self, link_ids: Sequence[str]) -> dict[str, Probe]:
        """Each link's config presence (with its open-round count: without one, the link is not whole),
        sequence and last request identity, each link read atomically. On a cluster, a link whose node fails
        now is left out (its calls are refused meanwhile); on one Redis, a failure raises."""
        replies = await self._journal_reader.execute([
            ["EVAL", PROBE, 4, keys.config(link), keys.seq(link), keys.last(link), keys.open_rounds(link)]
            for link in link_ids])
        out = {}
        for link, reply in zip(link_ids, replies, strict=True):
            if self._skipped(reply, f"probing link {link}"):
                continue
            has_config, seq, last = reply
            out[link] = Probe(bool(has_config), int(seq) if seq else None, last)
        return out

    @translated
    async def set_health(self, member: int, report: Mapping[str, Any], *, every_link: bool = False) -> None:
        """Writer process `member`'s heartbeat (see writer_health); it lapses after 3 s without that writer. From
        a writer of `every_link`, also under the single key that API processes of versions before writer shards
        read (a rolling upgrade): a report of some shards would speak there for all."""
        await self.client.set(keys.health(member), json.dumps(report), px=HEALTH_TTL_MS)
        if every_link:
            with contextlib.suppress(*DOWN, redis.exceptions.RedisError):  # (on a cluster, maybe another node)
                await self.client.set(keys.HEALTH_BEFORE_SHARDS, json.dumps(report), px=HEALTH_TTL_MS)

    @translated
    async def writer_health(self) -> dict[str, Any] | None:
        """The live writers' heartbeats as one: the shards written by writers that append, the shards of those
        that have been failing to (`stalled_shards`: why), every problem by link, and `stalled` when none
        appends; None when no writer has reported in the last 3 s. A writer of a version before shards writes
        every link: its heartbeat counts for all of them."""
        raws = await self.client.mget([keys.health(m) for m in range(keys.WRITER_MEMBERS)])
        reports: list[dict[str, Any]] = [json.loads(raw) for raw in raws if raw is not None]
        if not reports:
            older = await self.client.get(keys.HEALTH_BEFORE_SHARDS)
            if older is None:
                return None
            reports = [{"shards": sorted(ALL), **json.loads(older)}]
        appending = [r for r in reports if not r.get("stalled")]
        merged: dict[str, Any] = {
            "at_ms": max(r["at_ms"] for r in reports),
            "shards": sorted({s for r in appending for s in r.get("shards", ())}),
            "stalled_shards": {s: r["stalled"] for r in reports if r.get("stalled") for s in r.get("shards", ())},
            "problems": {link: why for r in reports for link, why in (r.get("problems") or {}).items()}}
        if not appending:
            merged["stalled"] = reports[0]["stalled"]
        return merged

    @translated
    async def set_fence(self, link_id: str, why: str | None) -> None:
        """Fence the link (every step and read refused with `why`), or lift the fence with None."""
        if why is None:
            await self.client.delete(keys.fence(link_id))
        else:
            await self.client.set(keys.fence(link_id), why)

    @translated
    async def replace_link(self, snap: LinkSnapshot) -> None:
        """Replace the link's keys with the state the ledger holds (recovery.rebuild).

        The config key goes first, so every step and read on the link is refused while the rest is replaced
        in one transaction: nothing applied on the old state can survive into the new one.
        """
        link = snap.link_id
        indexes: list[list[str | int]] = [["SET", keys.table(t), link] for t in snap.tables]
        indexes.append(["SADD", keys.LINKS, link])
        if self.cluster:  # outside the link's slot, so outside its transaction, and before the config goes: a
            for command in indexes:  # node of an index that is down must not keep the link itself unserved
                try:
                    await self.client.execute_command(*command)
                except (*DOWN, redis.exceptions.RedisError) as e:
                    self._complain(f"rebuilding link {link}: writing its index failed ({e}); the link goes on")
        await self.client.delete(keys.config(link))
        where = {"target_nodes": self.client.get_node_from_key(keys.config(link))} if self.cluster else {}
        stale = [k async for k in self.client.scan_iter(match=keys.link_pattern(link), count=1000, **where)]
        tx: list[list[str | int]] = [["MULTI"], *([] if self.cluster else indexes)]
        if stale:
            tx.append(["DEL", *stale])
        if snap.pool_balances:
            tx.append(["HSET", keys.balances(link), *_flat({k: str(v) for k, v in snap.pool_balances.items()})])
        tx.append(["SET", keys.seq(link), snap.last_seq])
        if snap.last_identity:
            tx.append(["SET", keys.last(link), snap.last_identity])
        tx += [["SET", keys.durable(link), snap.last_seq],
               ["XADD", keys.journal(link), f"0-{snap.last_seq}", "entry", "{}", "balances", "[]", "reply", ""],
               ["XTRIM", keys.journal(link), "MINID", f"0-{snap.last_seq + 1}"]]  # empty; its last id is the head
        for table_id, round_id, state, rev, data in snap.open_rounds:
            tx.append(["HSET", keys.round_(link, table_id, round_id), "state", state, "rev", str(rev), "data", data])
        tx.append(["SET", keys.open_rounds(link), len(snap.open_rounds)])
        if snap.fence is not None:
            tx.append(["SET", keys.fence(link), snap.fence])
        # Announced inside the transaction, before the config lets steps in again: a waiter of an entry this
        # rebuild erased learns it at once, and one of a later step is rarely mistaken for it.
        tx += [["PUBLISH", keys.DURABLE_CHANNEL, f"{link} rebuilt {snap.last_seq}"],
               ["HSET", keys.config(link), "version", str(snap.config_version), "config", snap.config],
               ["EXEC"]]
        replies = await self._resp.execute_on(keys.config(link), tx)
        executed = replies[-1]
        # a command refused while queued aborts the whole transaction (EXECABORT, nothing applied): the first
        # refusal says why (READONLY after a failover, MOVED while a slot moves...), as any Redis error would
        for reply in [*replies[:-1], *(executed if isinstance(executed, list) else [executed])]:
            if isinstance(reply, Exception):
                raise reply_error(str(reply))
        if executed is None:
            raise Unavailable(f"rebuilding link {link}: Redis aborted the transaction; it is retried")


def raised(reply: Exception) -> Exception:
    """What a failed reply raises: a Redis error reply as reply_error makes it (Unavailable when it will pass),
    a failed connection as itself (translated makes it Unavailable)."""
    return reply_error(str(reply)) if isinstance(reply, hiredis.ReplyError) else reply


def _flat(mapping: Mapping[str, str]) -> list[str]:
    """A mapping as HSET's field value field value ... arguments."""
    return [item for pair in mapping.items() for item in pair]
