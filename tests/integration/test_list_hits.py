"""ListHits: the ledger's hits with what traces each payout (RULES.md §7, §10), PENDING above the link's
verification threshold, filtered by table and status; finance, supervisors and administrators read it."""

from __future__ import annotations

import grpc
import pytest

from jackpotd.api.gen.jackpot.v1 import admin_pb2
from jackpotd.auth.identity import Role

from ..conftest import unique
from .harness import Client, token

ROYAL = ["As", "Ks", "Qs", "Js", "Ts"]
FLUSH = ["2c", "5c", "9c", "Jc", "Kc"]


async def test_hits_trace_to_round_seat_cards_pool_and_rule(client: Client) -> None:
    link, table, other = unique("hits"), unique("t"), unique("t")
    await client.create_link(link, resets={"MAJOR": 1_000_000}, threshold=500_000)
    await client.register(table, link)
    await client.register(other, link)
    await client.fund(link, "MAJOR", 1_000_000)
    await client.commit(table, "r1", [1, 2])
    await client.settle(table, "r1", {1: ROYAL, 2: FLUSH})
    await client.commit(other, "r1", [3])
    await client.settle(other, "r1", {3: FLUSH})

    everything = (await client.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link))).hits
    assert [(h.table_id, h.seat, h.hand, h.status) for h in everything] == [
        (other, 3, "flush", "PAID"), (table, 1, "royal_flush", "PENDING"), (table, 2, "flush", "PAID")]
    royal = everything[1]
    assert royal.round_id == "r1" and list(royal.cards) == ROYAL and royal.pool == "MAJOR"
    assert royal.amount_cents >= 1_000_000 and royal.pool_before_ucents >= 1_000_000 * 1_000_000 and royal.rule
    pending = (await client.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link, status="PENDING"))).hits
    assert [h.hit_id for h in pending] == [royal.hit_id]
    one_table = (await client.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link, table_id=other))).hits
    assert [h.table_id for h in one_table] == [other]
    assert len((await client.admin.ListHits(admin_pb2.ListHitsRequest(link_id=link, limit=1))).hits) == 1


@pytest.mark.parametrize(("field", "value"), [("status", "WON"), ("limit", 5000), ("link_id", "")])
async def test_a_bad_filter_names_its_field(client: Client, field: str, value: object) -> None:
    request = admin_pb2.ListHitsRequest(link_id="x")
    setattr(request, field, value)
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.admin.ListHits(request)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and e.value.details().startswith(field)


async def test_a_sign_may_not_list_hits(client: Client) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await client.admin.ListHits(admin_pb2.ListHitsRequest(link_id="x"),
                                    metadata=(("authorization", f"Bearer {token(Role.DISPLAY, 'sign')}"),))
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
