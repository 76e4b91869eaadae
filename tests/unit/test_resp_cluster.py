"""How the cluster pipeline routes: the key of each command the service sends, the address a node is reached
at, and the redirects it follows."""

from __future__ import annotations

from types import SimpleNamespace

import hiredis
import pytest

from jackpotd.embedded import free_port
from jackpotd.store import keys
from jackpotd.store.resp_cluster import ClusterResp, _redirect, key_of, with_address


@pytest.mark.parametrize(("command", "key"), [
    (["EVALSHA", "abc", 3, "{link:a}:config", "{link:a}:seq", "{link:a}:x", "arg"], "{link:a}:config"),
    (["EVALSHA", "abc", 0, "arg"], None),
    (["XREAD", "COUNT", 10, "STREAMS", "{link:a}:journal", "0-5"], "{link:a}:journal"),
    (["xread", "count", 10, "block", 50, "streams", "{link:b}:journal", "0-5"], "{link:b}:journal"),
    (["PUBLISH", keys.DURABLE_CHANNEL, "a d 1 ff"], None),
    (["SET", "{link:a}:durable", 7], "{link:a}:durable"),
    (["PEXPIRE", "{link:a}:req:r1", 60000], "{link:a}:req:r1"),
])
def test_each_command_is_routed_by_its_first_key(command: list[str | int], key: str | None) -> None:
    assert key_of(command) == key


def test_every_key_of_a_link_shares_one_slot() -> None:
    from redis.crc import key_slot

    link = "casino 7/{odd}"
    made = [keys.config(link), keys.balances(link), keys.seq(link), keys.journal(link), keys.record(link, "r"),
            keys.round_(link, "t", "r"), keys.fence(link), keys.durable(link), keys.open_rounds(link)]
    assert len({key_slot(k.encode()) for k in made}) == 1


@pytest.mark.parametrize(("url", "address", "expected"), [
    ("redis://:pw@n1:6379/0?socket_timeout=2", ("10.0.0.7", 7001), "redis://:pw@10.0.0.7:7001/0?socket_timeout=2"),
    ("rediss://user:pw@n1:6379/0", ("n2", 6380), "rediss://user:pw@n2:6380/0"),
    ("redis://n1:6379", ("::1", 7000), "redis://[::1]:7000"),
    ("unix://:pw@/run/valkey.sock?db=0", ("n3", 6379), "redis://:pw@n3:6379?db=0"),
])
def test_a_node_is_reached_with_the_urls_password_and_options(url: str, address: tuple[str, int],
                                                               expected: str) -> None:
    assert with_address(url, *address) == expected


def test_moved_and_ask_name_the_node_other_errors_do_not() -> None:
    assert _redirect(hiredis.ReplyError("MOVED 3999 127.0.0.1:7002")) == ("MOVED", ("127.0.0.1", 7002))
    assert _redirect(hiredis.ReplyError("ASK 3999 [::1]:7003")) == ("ASK", ("::1", 7003))
    assert _redirect(hiredis.ReplyError("TRYAGAIN Multiple keys request during rehashing of slot")) is None
    assert _redirect("MOVED 1 a:1") is None  # a value, not an error


class _OneDeadNode:
    """Just enough of redis-py's cluster client: every key on one node, which refuses connections."""

    def __init__(self, port: int) -> None:
        self.node = SimpleNamespace(host="127.0.0.1", port=port)
        self.nodes_manager = SimpleNamespace(slots_cache={0: [self.node]}, initialize=self._initialize)
        self.initialized = 0

    async def _initialize(self) -> None:
        self.initialized += 1

    def get_node_from_key(self, key: str) -> SimpleNamespace:
        return self.node

    def get_default_node(self) -> SimpleNamespace:
        return self.node

    def get_primaries(self) -> list[SimpleNamespace]:
        return [self.node]


async def test_a_dead_node_fails_its_commands_without_raising() -> None:
    """Callers keep going for links elsewhere: the writer must not stop because one node's links cannot be
    announced (a failure once seen in CI: only the dead node's announcements were left, and they raised)."""
    cluster = _OneDeadNode(free_port())
    resp = ClusterResp(cluster, "redis://:pw@127.0.0.1:1/0")
    replies = await resp.execute([["SET", "{link:a}:durable", 1], ["PUBLISH", "jackpot:durable", "a d 1 ff"]])
    assert all(isinstance(r, OSError) for r in replies)
    assert cluster.initialized == 1  # the map is read again
    # a moment later its commands fail at once: a silent host must not hold every batch for a whole timeout
    again = await resp.execute([["SET", "{link:a}:durable", 2]])
    assert isinstance(again[0], ConnectionError) and "a moment ago" in str(again[0])
    await resp.close()
