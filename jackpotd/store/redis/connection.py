"""The Redis adapter's connections (store/redis/pools.py puts the adapter together): one server, the primary the
Sentinels name, followed as they fail it over, or a Valkey/Redis Cluster checked to be one; the pipelines of the hot
path and of the ledger writer; the scripts, loaded on every primary; and what a failed reply raises. Every Redis
failure leaves the adapter as the service's Unavailable (errors.translated)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Self
from urllib.parse import urlsplit

import hiredis
import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.cluster import RedisCluster

from ..resp import RespPipeline
from ..resp_cluster import ClusterResp, with_address
from ..throttle import Throttled
from .errors import DOWN, WrongTopology, unavailable
from .scripts import ScriptBatcher, reply_error

log = logging.getLogger("jackpotd.redis")


class RedisConnection:
    """Where the adapter's commands go, and how they are sent (the base of each of the adapter's parts)."""

    FOLLOW_EVERY = 1.0  # seconds between questions to the Sentinels

    def __init__(self, url: str, *, cluster: bool = False) -> None:
        self.url = url
        self.cluster = cluster  # a Valkey/Redis Cluster: every command goes to its key's shard
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
                   sentinel_password: str | None = None) -> Self:
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


def raised(reply: Exception) -> Exception:
    """What a failed reply raises: a Redis error reply as reply_error makes it (Unavailable when it will pass),
    a failed connection as itself (translated makes it Unavailable)."""
    return reply_error(str(reply)) if isinstance(reply, hiredis.ReplyError) else reply
