"""The one write path (ARCHITECTURE.md, write path): idempotency, the atomic step, deciding again when what a
step was decided on has moved, and waiting until the ledger holds the entry before answering."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from ..canonical import canonical_json, request_identity
from ..domain.errors import Conflict, FailedPrecondition, InvalidInput, NotFound
from ..domain.ids import require_id
from ..domain.link import LinkConfig
from ..metrics import CAS_RETRIES, LEDGER_QUESTIONS
from .commands import Request
from .errors import LinkLost, Unavailable
from .links import Links
from .ports import (
    NEW_LINK,
    Applied,
    Durability,
    IdReused,
    Ledger,
    LinkExists,
    LiveStore,
    Reply,
    RoundNotOpen,
    RoundsOpen,
    Seen,
    Stale,
    Step,
)
from .seen import Unsure, Why

MAX_ATTEMPTS = 200
UNASKED = Seen(None, None)  # what a decision is given before the ledger is asked: the atomic step's filter checks

S = TypeVar("S")
Gather = Callable[[LinkConfig, Seen], Awaitable[S]]  # reads the state a decision needs (I/O)
Decide = Callable[[LinkConfig, str, S], Step]  # the pure decision: (config, version, state) -> step


@dataclass(frozen=True, slots=True)
class Done:
    """An applied operation: the stored reply, the config it was decided on (or is current, for a replay),
    and whether this call applied it (`first`) or an earlier one did."""

    reply: Reply
    config: LinkConfig
    first: bool


def id_reused(req: Request, reply: Reply) -> Conflict:
    """A request id used before for different content (API.md: ALREADY_EXISTS), naming what differs."""
    # compared as canonical text: a big settle's `hands` may be held as its JSON text (api/columns.py)
    keys = sorted(k for k in set(reply.content) | set(req.content)
                  if canonical_json(reply.content.get(k)) != canonical_json(req.content.get(k)))
    return Conflict("request_id", req.request_id, "already used for a different request; differs in: "
                    + (", ".join(keys) or "content"))


class WritePath:
    """Runs every mutating operation: decide → apply (the ledger asked for ids the live store cannot rule out) →
    wait durable."""

    def __init__(self, live: LiveStore, ledger: Ledger, durability: Durability, links: Links) -> None:
        self.live = live  # the atomic step, and a request's record while the live store keeps it
        self.ledger = ledger  # whether a request or round id was ever used, and the replies it holds
        self.durability = durability  # the ledger's durable mark, waited for before answering
        self.links = links  # the configs this process caches, dropped when a step changes or loses them

    async def execute(self, link_id: str, req: Request, gather: Gather[S], decide: Decide[S], *,
                      round_: tuple[str, str] = ("", ""), create: LinkConfig | None = None) -> Done:
        require_id("request_id", req.request_id)
        # A request id and a round id are used once (API.md): the live store lets them go after the retention,
        # the ledger keeps them all. The atomic step asks the live store's filter of every id the ledger holds
        # (service/seen.py); the ledger is asked only when it cannot rule a use out, or a decision refused.
        seen: Seen | None = None  # what the ledger said, once asked
        for attempt in range(MAX_ATTEMPTS):
            if create is not None:
                version, config = NEW_LINK, create
            else:
                version, config = await self.links.config(link_id, fresh=attempt > 0)
            try:
                step = decide(config, version, await gather(config, UNASKED if seen is None else seen))
            except (InvalidInput, FailedPrecondition, NotFound) as e:
                if seen is None:  # decided without the ledger's round state: ask it, then decide again
                    seen = await self._ask(link_id, req, round_, Why.REFUSED)
                    if seen.request_hash is not None:
                        return await self._replay_seen(link_id, req, seen)
                    continue
                # A retry of a request applied earlier may not pass today's checks (its table suspended
                # since, a new wager amount, its round settled): its record answers it.
                return await self._replay_or(link_id, req, e)
            try:
                outcome = await self.live.apply(step, self.durability.floor(link_id),
                                                req.legacy_id if seen is None else None)
            except LinkLost:
                self.links.forget(link_id)
                raise
            match outcome:
                case Applied(reply=reply, first=first):
                    await self._durable(link_id, reply.seq, req.identity)
                    if first and step.new_config:
                        self.links.changed(link_id)
                    if not first and create is None:  # applied earlier, perhaps on another config
                        _, config = await self.links.config(link_id)
                    return Done(reply, config, first)
                case Unsure(why=why):  # the filter cannot rule out a use: the ledger can
                    seen = await self._ask(link_id, req, round_, why)
                    if seen.request_hash is not None:
                        return await self._replay_seen(link_id, req, seen)
                case IdReused(reply=reply):
                    raise id_reused(req, reply)
                case LinkExists():
                    raise FailedPrecondition("link_id", link_id, "a link with this id already exists")
                case RoundNotOpen(state=state):
                    field, value = step.refusal_field or ("round_id", step.round[1] if step.round else "")
                    return await self._replay_or(link_id, req, FailedPrecondition(field, value,
                                                                                  f"the round is {state}"))
                case RoundsOpen(count=count):  # NZ 11.6A/B
                    return await self._replay_or(link_id, req, FailedPrecondition(
                        "link_id", link_id, f"{count} round(s) are open (committed, or with a hit awaiting "
                        "verification); pools change only between rounds"))
                case Stale(contended=contended):  # decide again against the config and pools as they now stand
                    if contended:
                        CAS_RETRIES.labels(link_id).inc()
        raise Unavailable(f"link {link_id} is too busy to apply request {req.request_id}; retry with the same id")

    async def _ask(self, link_id: str, req: Request, round_: tuple[str, str], why: Why) -> Seen:
        """What the ledger holds of the request and the round (counted by why it was asked)."""
        LEDGER_QUESTIONS.labels(why.value).inc()
        return await self.ledger.seen(link_id, *round_, req.key, req.legacy_id, req.hash)

    async def _replay_seen(self, link_id: str, req: Request, seen: Seen) -> Done:
        """The answer to a request the ledger holds (`seen`): its stored reply, once durable."""
        if seen.legacy:  # written before ids were scoped: under its bare id, with this very content
            reply = await self.ledger.stored_reply(link_id, req.legacy_id)
            return await self._replay(link_id, req, reply, request_identity(req.legacy_id, req.hash))
        return await self._replay(link_id, req, await self.ledger.stored_reply(link_id, req.key))

    async def _replay_or(self, link_id: str, req: Request, error: Exception) -> Done:
        """A request refused now may have been applied before: answer it from its record, else raise `error`."""
        reply = await self.live.record(link_id, req.key)
        if reply is None:
            reply = await self.ledger.stored_reply(link_id, req.key)
        if reply is None:
            raise error
        return await self._replay(link_id, req, reply)

    async def _replay(self, link_id: str, req: Request, reply: Reply | None, identity: str = "") -> Done:
        """The first answer to a request id again, once the ledger holds it (as `identity`: by default the request's
        own); its id with other content is refused."""
        if reply is None:  # the ledger said it holds the id, then did not return it: ask again later
            raise Unavailable(f"the ledger did not return the reply of request {req.request_id}; retry")
        if reply.hash != req.hash:
            raise id_reused(req, reply)
        await self._durable(link_id, reply.seq, identity or req.identity)
        _, config = await self.links.config(link_id)
        return Done(reply, config, first=False)

    async def _durable(self, link_id: str, seq: int, identity: str | None) -> None:
        """Wait until the ledger holds entry `seq` (as this request, when its identity is given)."""
        await self.durability.wait_durable(link_id, seq, identity)
