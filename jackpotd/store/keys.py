"""The Redis key layout, in one place. Every key of a link carries the hash tag {link:<id>}, so one
atomic step touches one Redis Cluster slot. Each caller-chosen component is escaped (domain.ids.escape),
so no two different id tuples can build the same key, whatever the id grammar allows."""

from __future__ import annotations

import functools

from ..domain.ids import escape

LINKS = "jackpot:links"  # every link the ledger writer follows
WRITER_MEMBERS = 64  # writer processes that can run at once (each has a heartbeat key)
HEALTH_BEFORE_SHARDS = "jackpot:health"  # the one writer's heartbeat before writer shards (rolling upgrades)
DURABLE_CHANNEL = "jackpot:durable"  # the writer's announcements: durable entries, rebuilt and fenced links


def health(member: int) -> str:
    """Writer process `member`'s heartbeat: {"at_ms", "shards", "problems": {link: why}}, expiring in 3 s. One
    hash tag for all of them, so a cluster answers one MGET for every writer's."""
    return "{jackpot:health}:" + str(member)


@functools.lru_cache(maxsize=4096)
def tag(link_id: str) -> str:
    """The hash tag shared by every key of a link (made once per link: every step builds nine keys of it)."""
    return "{link:" + escape(link_id) + "}"


def config(link_id: str) -> str:
    return tag(link_id) + ":config"


def balances(link_id: str) -> str:
    return tag(link_id) + ":balances"


def seq(link_id: str) -> str:
    """The link's last sequence number: INCR gives the next one."""
    return tag(link_id) + ":seq"


def last(link_id: str) -> str:
    """The request hash of the link's last entry: each journal entry names the one it follows."""
    return tag(link_id) + ":last"


def journal(link_id: str) -> str:
    return tag(link_id) + ":journal"


def record(link_id: str, request_id: str) -> str:
    """The stored reply of a request (idempotency)."""
    return tag(link_id) + ":req:" + escape(request_id)


def round_(link_id: str, table_id: str, round_id: str) -> str:
    return tag(link_id) + ":round:" + escape(table_id) + ":" + escape(round_id)


def open_rounds(link_id: str) -> str:
    """How many of the link's rounds are open: pools are split or combined only at zero (NZ 11.6A/B)."""
    return tag(link_id) + ":open"


def no_round(link_id: str) -> str:
    """A key of the link's slot that no operation writes: the atomic step's round key when there is no round."""
    return tag(link_id) + ":noround"


def durable(link_id: str) -> str:
    """The last sequence of the link committed in PostgreSQL, set by the ledger writer."""
    return tag(link_id) + ":durable"


def fence(link_id: str) -> str:
    """Why the link is fenced (the ledger refused one of its entries); absent when it is not."""
    return tag(link_id) + ":fence"


def seen(link_id: str) -> str:
    """The filter of the link's used ids (domain/seen_filter.py): {"state": "ok" (complete) or "fill:<token>" (being
    filled from the ledger), "bits": its size}; absent until the ledger writer first fills it."""
    return tag(link_id) + ":seen"


def seen_bits(link_id: str) -> str:
    """The filter's bits (a Redis bitmap of seen(link)["bits"] bits), only ever set by the atomic step and a fill."""
    return tag(link_id) + ":seen:bits"


def seen_fill(link_id: str, token: str) -> str:
    """The bits a fill read from the ledger, on their way into seen_bits (in the link's slot, for BITOP)."""
    return tag(link_id) + ":seen:fill:" + token


def table(table_id: str) -> str:
    """Global index from a table to its link (not tagged: it is read before the link is known)."""
    return "jackpot:table:" + escape(table_id)


def online(table_id: str) -> str:
    """Present while the table's controller holds a meter stream open (it expires when none refreshes it)."""
    return "jackpot:online:" + escape(table_id)


def link_pattern(link_id: str) -> str:
    """A SCAN pattern for every key of the link (escaped ids hold no glob characters)."""
    return tag(link_id) + "*"
