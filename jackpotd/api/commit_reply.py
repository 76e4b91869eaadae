"""CommitWagers' response, with the accepted wagers of equal commits made once: a commit's accepted tuple is
shared by every commit of its shape (service/decide/table.py, shared_shape), so its messages are built and
serialized by protobuf once, and each call parses them back (one C call) and adds its own pools and sequence."""

from __future__ import annotations

from collections.abc import Sequence

from ..service import results
from ..service.replies import Accepted
from .gen.jackpot.v1 import table_pb2

KEPT = 4096  # accepted tuples remembered per process; all are dropped when full
SMALL = 64  # commits of up to this many seats (a bigger round is not shared)
_seen: dict[int, tuple[Sequence[Accepted], bytes | None]] = {}  # id -> (the tuple, held; its messages once made)


def add_accepted(response: table_pb2.CommitWagersResponse, accepted: Sequence[Accepted]) -> None:
    """The wagers as AcceptedWager messages, in place (a round may hold 100,000): an overflow only when some."""
    add = response.accepted.add  # add() in place costs half of building each message and copying it in
    for seat, amount, contributed, overflow in accepted:
        if overflow:
            add(seat=seat, amount_cents=amount, contributed_ucents=contributed, overflow_ucents=overflow)
        else:
            add(seat=seat, amount_cents=amount, contributed_ucents=contributed)


def _accepted_bytes(accepted: Sequence[Accepted]) -> bytes | None:
    """The serialized accepted wagers of a tuple seen before (kept from its second sight: a tuple seen once, as
    a capped link's are, costs only its entry), else None."""
    known = _seen.get(id(accepted))
    if known is not None and known[0] is accepted:  # the tuple is held, so its id is still its own
        if known[1] is None:
            made = table_pb2.CommitWagersResponse()
            add_accepted(made, accepted)
            known = _seen[id(accepted)] = (accepted, made.SerializeToString())
        return known[1]
    if len(accepted) <= SMALL:
        if len(_seen) >= KEPT:
            _seen.clear()
        _seen[id(accepted)] = (accepted, None)
    return None


def commit_response(done: results.Committed) -> table_pb2.CommitWagersResponse:
    """The response to a CommitWagers: its wagers, the link's pools, its sequence."""
    made = _accepted_bytes(done.accepted)
    if made is None:
        response = table_pb2.CommitWagersResponse(sequence=done.seq, link_id=done.link_id)
        add_accepted(response, done.accepted)
    else:
        response = table_pb2.CommitWagersResponse.FromString(made)
        response.sequence = done.seq
        response.link_id = done.link_id
    add = response.pools.add
    for p in done.pools:
        add(pool=p.pool, amount_cents=p.amount_cents, reset_cents=p.reset_cents, balance_ucents=p.balance_ucents)
    return response
