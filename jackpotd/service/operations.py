"""The service layer: each mutating call validated by the domain, applied in one atomic step, made durable.

Servicers hand in plain values and get plain results; this module knows neither gRPC nor Lua nor SQL.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

import asyncpg

from ..canonical import canonical_json, request_identity
from ..domain.contributions import SeatContribution, contribute, reversal
from ..domain.errors import Conflict, FailedPrecondition, InvalidInput, NotFound
from ..domain.ids import hit_id, require_id, require_text
from ..domain.link import LinkConfig, TableConfig
from ..domain.money import floor_cents, require_positive_cents
from ..domain.paytable import Paytable, PaytableEntry
from ..domain.pools import PoolSpec
from ..domain.postings import OPERATOR_FUNDING, Posting, merge, pool_account
from ..domain.pricing import price_round
from ..domain.rates import RateSet, rates_in_force
from ..domain.rounds import COMMITTED, SETTLED, VOIDED, SeatHand, Wager, evaluate_round, validate_wagers
from ..metrics import CAS_RETRIES, HITS
from ..store import ledger
from .errors import LinkLost, Unavailable
from ..store.redis_pools import LinkRead, RedisPools, Reply, Step, lost, refusal
from ..store.writer import DurabilityWatcher

log = logging.getLogger("jackpotd.service")
MAX_ATTEMPTS = 200


__all__ = ["Audit", "Done", "JackpotService", "LinkUpdate", "Request", "Unavailable"]


@dataclass(frozen=True, slots=True)
class Request:
    """A mutating request: the client's id and the content the id stands for, in canonical JSON and hashed."""

    request_id: str
    content: Mapping[str, Any]
    canonical: str = field(init=False)
    hash: str = field(init=False)  # of the content: the same id with other content is refused
    identity: str = field(init=False)  # of the id and the content: what the ledger must hold to answer

    def __post_init__(self) -> None:
        canonical = canonical_json(self.content)
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        object.__setattr__(self, "canonical", canonical)  # frozen: computed once, here
        object.__setattr__(self, "hash", digest)
        object.__setattr__(self, "identity", request_identity(self.request_id, digest))


@dataclass(frozen=True, slots=True)
class Audit:
    """Who, why and under which approval (DOMAIN.md §9)."""

    actor: str = ""
    reason: str = ""
    approval_ref: str = ""

    def __post_init__(self) -> None:
        for name in ("actor", "reason", "approval_ref"):
            require_text(f"audit.{name}", getattr(self, name))

    def as_dict(self) -> dict[str, str]:
        return {"actor": self.actor, "reason": self.reason, "approval_ref": self.approval_ref}


@dataclass(frozen=True, slots=True)
class LinkUpdate:
    """What meters and signs are sent: the link's sequence, its pools, and a hit when one is announced."""

    seq: int
    pools: list[dict[str, int | str]]
    hit: dict[str, Any] | None = None


METER_INTERVAL = 0.1  # ARCHITECTURE.md, Reads: at most ten updates a second per link
HEARTBEAT = 2.0  # seconds between updates on a quiet link, well inside a table's 10 s silence limit


@dataclass(frozen=True, slots=True)
class Done:
    """An applied (or replayed) operation: the stored reply and the link config it was read against."""

    reply: Reply
    config: LinkConfig


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _difference(stored: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    keys = sorted(k for k in set(stored) | set(new) if stored.get(k) != new.get(k))
    return ", ".join(keys) or "content"


def _encode_seats(seats: Sequence[SeatContribution]) -> dict[str, Any]:
    """Each seat's contribution, with identical leg sets stored once (they usually all are)."""
    legs: list[list[Any]] = []
    index: dict[int, int] = {}  # by identity: contribute() hands equal seats the very same tuple
    by_seat: dict[str, list[int]] = {}
    for c in seats:
        key = id(c.postings)
        if key not in index:
            index[key] = len(legs)
            legs.append([[p.account, p.amount_uc] for p in c.postings])
        by_seat[str(c.seat)] = [index[key], c.wager_cents, c.overflow_uc]
    return {"seats": by_seat, "legs": legs}


def _decode_seat(data: Mapping[str, Any], seat: int) -> SeatContribution:
    leg_set, wager_cents, overflow_uc = data["seats"][str(seat)]
    return SeatContribution(seat, wager_cents, tuple(Posting(a, v) for a, v in data["legs"][leg_set]), overflow_uc)


def _pool_deltas(legs: Sequence[Posting]) -> list[tuple[str, int]]:
    """The pool legs of merged postings, as the atomic step applies them."""
    return [(p.account[5:], p.amount_uc) for p in legs if p.account.startswith("pool:")]


class JackpotService:
    """Table, display and admin operations over the live pools and the ledger."""

    def __init__(self, redis: RedisPools, pg: asyncpg.Pool, durability: DurabilityWatcher,
                 clock: Callable[[], int] = now_ms) -> None:
        self.redis = redis
        self.pg = pg
        self.durability = durability
        self.clock = clock
        self._configs: dict[str, tuple[str, LinkConfig]] = {}
        self._table_links: dict[str, str] = {}  # a table never moves to another link (register_table refuses)
        self.lookups = ledger.Lookups(pg)

    # ---- reading -------------------------------------------------------------------------------

    async def config(self, link_id: str, *, fresh: bool = False) -> tuple[str, LinkConfig]:
        """The link's config (cached; `fresh` re-reads it)."""
        if not fresh and link_id in self._configs:
            return self._configs[link_id]
        require_id("link_id", link_id)
        found = await self.redis.config(link_id)
        if found is None:
            if await ledger.link_known(self.pg, link_id):  # Redis forgot it: never answer NOT_FOUND for it
                raise lost(link_id)
            raise NotFound("link_id", link_id, "no such link")
        version, raw = found
        cached = (version, LinkConfig.from_dict(raw))
        self._configs[link_id] = cached
        return cached

    async def link_of_table(self, table_id: str) -> str:
        """The link a table belongs to."""
        link = self._table_links.get(table_id)
        if link is not None:
            return link
        require_id("table_id", table_id)
        link = await self.redis.link_of_table(table_id)
        if link is None:
            known = await ledger.table_link(self.pg, table_id)
            if known is not None:  # Redis forgot the table's link
                raise lost(known)
            raise NotFound("table_id", table_id, "no such table")
        self._table_links[table_id] = link
        return link

    async def read(self, link_id: str, round_: tuple[str, str] | None = None) -> LinkRead:
        """The link's sequence, balances and a round, refused (UNAVAILABLE) when Redis forgot the link,
        went back behind the ledger, or the link is fenced."""
        try:
            return await self.redis.read(link_id, self.durability.floor(link_id), round_)
        except LinkLost:
            self._forget(link_id)
            raise

    async def snapshot(self, link_id: str) -> tuple[int, list[dict[str, int | str]]]:
        """The link's sequence and pools as the ledger holds them: a checked read, answered once the ledger
        has every entry it includes."""
        await self.config(link_id)
        state = await self.read(link_id)
        await self._durable(link_id, state.seq, None)
        return state.seq, await self.pools(link_id, state.balances)

    def _forget(self, link_id: str) -> None:
        """Drop what this process cached of a link whose Redis state was lost."""
        self._configs.pop(link_id, None)
        for table in [t for t, link in self._table_links.items() if link == link_id]:
            del self._table_links[table]

    async def pools(self, link_id: str, balances: Mapping[str, int],
                    include_hidden: bool = False) -> list[dict[str, int | str]]:
        """Pools as signs show them: floored cents, reset values, exact µ¢."""
        _, config = await self.config(link_id)
        out: list[dict[str, int | str]] = []
        for spec in config.pools:
            if spec.visible or include_hidden:
                bal = balances.get(spec.name, 0)
                out.append({"pool": spec.name, "amount_cents": floor_cents(bal), "reset_cents": spec.reset_cents,
                            "balance_ucents": bal})
        return out

    async def watch(self, link_id: str) -> AsyncIterator[LinkUpdate]:
        """A snapshot, then pool updates coalesced to ten a second, every hit announced (§8), and a
        heartbeat every HEARTBEAT seconds so a table can tell a quiet link from a lost service."""
        await self.config(link_id)
        loop = asyncio.get_running_loop()
        async with self.redis.subscribe(link_id) as next_reply:
            yield LinkUpdate(*await self.snapshot(link_id))
            last_sent = loop.time()
            latest: Reply | None = None
            while True:
                reply = await next_reply(METER_INTERVAL)
                if reply is not None:
                    pools = await self.pools(link_id, reply.balances)
                    for p in reply.result.get("payouts", ()):
                        yield LinkUpdate(reply.seq, pools, {
                            "table_id": reply.content.get("table_id", ""), "seat": p["seat"], "hand": p["hand"],
                            "amount_cents": p["amount_cents"], "pool": p["pool"], "hit_id": p["hit_id"],
                            "sequence": reply.seq,
                            "pool_amount_after_cents": floor_cents(reply.balances.get(p["pool"], 0))})
                        last_sent = loop.time()
                    latest = reply
                    continue
                if latest is not None:
                    yield LinkUpdate(latest.seq, await self.pools(link_id, latest.balances))
                    latest = None
                    last_sent = loop.time()
                    await asyncio.sleep(METER_INTERVAL)
                elif loop.time() - last_sent >= HEARTBEAT:
                    yield LinkUpdate(*await self.snapshot(link_id))
                    last_sent = loop.time()

    async def last_hit(self, link_id: str) -> dict[str, Any] | None:
        row = await self.pg.fetchrow("SELECT hit_id, table_id, seat, hand, amount_cents, pool, seq FROM hits "
                                     "WHERE link_id = $1 ORDER BY seq DESC, hit_id DESC LIMIT 1", link_id)
        return dict(row) if row else None

    # ---- the one write path ----------------------------------------------------------------------

    async def _execute(self, link_id: str, req: Request, build: Callable[[str, LinkConfig], Awaitable[Step]],
                       *, create: LinkConfig | None = None, ledger_first: bool = False) -> Done:
        require_id("request_id", req.request_id)
        if ledger_first:  # calls with no round to catch a late retry: the ledger answers it
            await self._answered(link_id, req)
        config: LinkConfig
        for attempt in range(MAX_ATTEMPTS):
            if create is not None:
                version, config = "new", create
            else:
                version, config = await self.config(link_id, fresh=attempt > 0)
            try:
                step = await build(version, config)
            except (InvalidInput, FailedPrecondition, NotFound) as e:
                # A retry of a request applied earlier may not pass today's checks (its table suspended
                # since, a new wager amount): its record answers it. Anything else gets the error.
                await self._replay_or(link_id, req, e)
            outcome = await self.redis.apply(step, self.durability.floor(link_id))
            refused = refusal(link_id, outcome.status, outcome.detail)
            if refused is not None:
                if isinstance(refused, LinkLost):
                    self._forget(link_id)
                raise refused
            if outcome.status in ("ok", "dup"):
                assert outcome.reply is not None
                await self._durable(link_id, outcome.reply.seq, req.identity)
                if outcome.status == "ok" and step.new_config:
                    self._configs.pop(link_id, None)
                if create is None and outcome.status == "dup":
                    _, config = await self.config(link_id)
                return Done(outcome.reply, config)
            if outcome.status == "conflict":
                assert outcome.reply is not None
                raise Conflict("request_id", req.request_id, "already used for a different request; differs in: "
                               + _difference(outcome.reply.content, req.content))
            if outcome.status == "exists":
                raise FailedPrecondition("link_id", link_id, "a link with this id already exists")
            if outcome.status == "round_state":
                await self._replay_or(link_id, req, FailedPrecondition(
                    "round_id", step.round[1] if step.round else "", f"the round is {outcome.detail}"))
            if outcome.status in ("moved", "negative"):
                CAS_RETRIES.labels(link_id).inc()
            # stale_config, moved, round_moved, negative (a pool paid out since we read it):
            # read again and re-price against the pools as they now stand
        raise Unavailable(f"link {link_id} is too busy to apply request {req.request_id}; retry with the same id")

    async def _durable(self, link_id: str, seq: int, identity: str | None) -> None:
        """Wait until the ledger holds entry `seq` (as this request, when its identity is given)."""
        try:
            await self.durability.wait_durable(link_id, seq, identity)
        except (TimeoutError, ConnectionError) as e:
            raise Unavailable(f"the ledger has not committed entry {seq} of link {link_id} yet: {e}; "
                              "retry with the same request_id") from e

    async def _answered(self, link_id: str, req: Request) -> None:
        """A request the ledger already answered gets that answer again; its id with other content is refused."""
        raw = await ledger.stored_reply(self.pg, link_id, req.request_id)
        if raw is None:
            return
        reply = Reply.parse(raw)
        if reply.hash != req.hash:
            raise Conflict("request_id", req.request_id, "already used for a different request; differs in: "
                           + _difference(reply.content, req.content))
        raise _Replay(reply)

    async def _replay_or(self, link_id: str, req: Request, error: Exception) -> NoReturn:
        """A request whose round has moved on may be a retry: answer it from its record, else raise."""
        raw = await self.redis.record(link_id, req.request_id)
        if raw is None:
            raw = await ledger.stored_reply(self.pg, link_id, req.request_id)
        if raw is None:
            raise error
        reply = Reply.parse(raw)
        if reply.hash != req.hash:
            raise Conflict("request_id", req.request_id, "already used for a different request; differs in: "
                           + _difference(reply.content, req.content))
        raise _Replay(reply)

    async def execute(self, link_id: str, req: Request, build: Callable[[str, LinkConfig], Awaitable[Step]],
                      *, create: LinkConfig | None = None, ledger_first: bool = False) -> Done:
        """Run the write path; a retry of a finished request gets the first answer."""
        try:
            return await self._execute(link_id, req, build, create=create, ledger_first=ledger_first)
        except _Replay as r:
            await self._durable(link_id, r.reply.seq, req.identity)  # the replayed hash is req.hash
            _, config = await self.config(link_id)
            return Done(r.reply, config)

    def _step(self, link_id: str, req: Request, kind: str, version: str, *, postings: Sequence[Posting] = (),
              extra: Mapping[str, Any] | None = None, result: Mapping[str, Any] | None = None, **kw: Any) -> Step:
        legs = merge(postings)
        entry = {"kind": kind, "ts_ms": self.clock(), "request_id": req.request_id, "request_hash": req.hash,
                 "postings": [[p.account, p.amount_uc] for p in legs], **(extra or {})}
        return Step(link_id=link_id, request_id=req.request_id, request_hash=req.hash, identity=req.identity,
                    content=req.content,
                    canonical_content=req.canonical,
                    config_version=version, entry=entry, result=result or {}, deltas=_pool_deltas(legs), **kw)

    # ---- table operations ------------------------------------------------------------------------

    async def commit_wagers(self, req: Request, table_id: str, round_id: str, wagers: Sequence[Wager]) -> Done:
        """§3: at "no more bets", every accepted wager feeds the pools with the rates in force."""
        link_id = await self.link_of_table(table_id)
        require_id("round_id", round_id)

        async def build(version: str, config: LinkConfig) -> Step:
            table = config.table(table_id)
            if table.suspended:
                raise FailedPrecondition("table_id", table_id, "jackpot wagers are suspended at this table")
            seats = validate_wagers(wagers, table.seats, config.wager_cents)
            # A request id and a round id are used once (API.md): Redis lets them go, the ledger keeps them all.
            seen = await self._seen(link_id, table_id, round_id, req)
            if seen.round_state is not None:
                await self._replay_or(link_id, req, FailedPrecondition("round_id", round_id,
                                                                       f"the round is {seen.round_state}"))
            rates = rates_in_force(config.rate_sets, self.clock())  # §3: the rates in force now
            capped = {p.name for p in config.pools if p.cap_cents is not None}
            balances = (await self.read(link_id)).balances if capped else {}
            c = contribute(rates, config.pools, balances, seats)
            data = {"game": table.game, "rates_version": rates.version,
                    **_encode_seats(c.seats), "voided": []}
            pooled: dict[int, int] = {}  # seats with equal wagers share one tuple of legs
            for s in c.seats:
                if id(s.postings) not in pooled:
                    pooled[id(s.postings)] = sum(p.amount_uc for p in s.postings if p.account.startswith("pool:"))
            result = {"accepted": [{"seat": s.seat, "amount_cents": s.wager_cents,
                                    "contributed_uc": pooled[id(s.postings)], "overflow_uc": s.overflow_uc}
                                   for s in c.seats]}
            round_data = canonical_json(data)
            return self._step(link_id, req, "commit", version, postings=c.merged, result=result,
                              extra={"round": {"table_id": table_id, "round_id": round_id, "state": COMMITTED,
                                               "data": round_data}},
                              round=(table_id, round_id), round_expect="absent", round_new_state=COMMITTED,
                              round_data=round_data, guards={n: balances.get(n, 0) for n in capped})

        return await self.execute(link_id, req, build)

    async def settle_round(self, req: Request, table_id: str, round_id: str, hands: Sequence[SeatHand],
                           dealer_cards: Sequence[str], board_cards: Sequence[str]) -> Done:
        """§5: evaluate every wagered seat, price all hits at once against the pools as they stand."""
        link_id = await self.link_of_table(table_id)
        require_id("round_id", round_id)

        async def build(version: str, config: LinkConfig) -> Step:
            table = config.table(table_id)
            all_seats = [hand.seat for hand in hands]
            evaluated = evaluate_round(table.game, table.seats, all_seats, hands, board_cards, dealer_cards)
            seen = await self._seen(link_id, table_id, round_id, req)
            state = await self.read(link_id, (table_id, round_id))
            rnd = state.round or await self._finished_round(link_id, req, table_id, round_id, seen.round_state)
            if rnd.get("state") != COMMITTED:
                await self._replay_or(link_id, req, FailedPrecondition("round_id", round_id,
                                                                       f"the round is {rnd.get('state')}"))
            data = json.loads(rnd["data"])
            wagered = {int(s) for s in data["seats"]} - set(data["voided"])
            hits = [x for x in evaluated if x.seat in wagered]
            paytable = config.paytable(data["game"])
            qualifying = [x for x in hits if x.category in paytable.entries]
            balances = state.balances if qualifying else {}
            price = price_round(paytable, config.pools, balances, qualifying, table.seats)
            cards = {hand.seat: [c for c in hand.cards] + list(board_cards) for hand in hands}
            threshold = config.verification_threshold_cents
            payouts = []
            hit_rows = []
            for p in price.payouts:
                status = "PENDING" if threshold and p.amount_cents > threshold else "PAID"  # §7
                hit = hit_id(link_id, table_id, round_id, p.seat)
                payouts.append({"seat": p.seat, "hand": p.category, "amount_cents": p.amount_cents, "pool": p.pool,
                                "funded_by_operator_cents": p.funded_by_operator_cents, "hit_id": hit,
                                "status": status, "pool_before_uc": p.pool_before_uc, "rule": p.rule})
                hit_rows.append({"hit_id": hit, "table_id": table_id, "round_id": round_id, "seat": p.seat,
                                 "hand": p.category, "cards": cards.get(p.seat, []), "pool": p.pool,
                                 "amount_cents": p.amount_cents, "funded_by_operator_cents": p.funded_by_operator_cents,
                                 "pool_before_uc": p.pool_before_uc, "rule": p.rule, "status": status,
                                 "pool_after_cents": floor_cents(p.pool_after_uc)})
            result = {"payouts": payouts,
                      "resets": [{"pool": r.pool, "from_reserve_cents": r.from_reserve_cents,
                                  "from_operator_cents": r.from_operator_cents} for r in price.resets],
                      "seats": [{"seat": x.seat, "hand": x.category} for x in hits]
                      + [{"seat": s, "hand": ""} for s in sorted(wagered - {x.seat for x in hits})]}
            data["hands"] = {str(x.seat): x.category for x in hits}
            round_data = canonical_json(data)
            return self._step(link_id, req, "settle", version, postings=price.postings, result=result,
                              extra={"round": {"table_id": table_id, "round_id": round_id, "state": SETTLED,
                                               "data": round_data}, "hits": hit_rows},
                              round=(table_id, round_id), round_expect=COMMITTED, round_rev=rnd["rev"],
                              round_new_state=SETTLED, round_data=round_data,
                              guards={p.name: balances.get(p.name, 0) for p in config.pools} if qualifying else {})

        done = await self.execute(link_id, req, build)
        for p in done.reply.result["payouts"]:
            HITS.labels(link_id, p["hand"], p["pool"]).inc()
        return done

    async def void_round(self, req: Request, table_id: str, round_id: str, reason: str, seats: Sequence[int]) -> Done:
        """§6: refund the round (or the listed seats) and reverse their contributions exactly."""
        link_id = await self.link_of_table(table_id)
        require_id("round_id", round_id)
        require_text("reason", reason, required=True)  # a void needs a reason (misdeal, device failure, ...)

        async def build(version: str, config: LinkConfig) -> Step:
            state = await self.read(link_id, (table_id, round_id))
            rnd = state.round or await self._finished_round(
                link_id, req, table_id, round_id, await ledger.round_state(self.pg, link_id, table_id, round_id))
            if rnd.get("state") != COMMITTED:
                await self._replay_or(link_id, req, FailedPrecondition(
                    "round_id", round_id,
                    f"the round is {rnd.get('state')}; only a supervisor adjustment can change it"))
            data = json.loads(rnd["data"])
            active = sorted({int(s) for s in data["seats"]} - set(data["voided"]))
            chosen = sorted(set(seats)) if seats else active
            for i, s in enumerate(seats):
                if s not in active:  # or this very void was applied already and awaits the ledger
                    await self._replay_or(link_id, req, InvalidInput(f"seats[{i}]", s,
                                                                     "holds no open jackpot wager in this round"))
            undo = reversal([_decode_seat(data, s) for s in chosen], state.balances)
            data["voided"] = sorted(set(data["voided"]) | set(chosen))
            data.setdefault("void_reasons", []).append({"seats": chosen, "reason": reason})
            new_state = VOIDED if set(data["voided"]) >= {int(s) for s in data["seats"]} else COMMITTED
            round_data = canonical_json(data)
            result = {"refunds": [{"seat": s, "amount_cents": data["seats"][str(s)][1]} for s in chosen]}
            return self._step(link_id, req, "void", version, postings=undo, result=result,
                              extra={"round": {"table_id": table_id, "round_id": round_id, "state": new_state,
                                               "data": round_data}, "reason": reason},
                              round=(table_id, round_id), round_expect=COMMITTED, round_rev=rnd["rev"],
                              round_new_state=new_state, round_data=round_data)

        # A partial void leaves its round open, so only the ledger can tell a late retry from a new void.
        return await self.execute(link_id, req, build, ledger_first=True)

    async def _seen(self, link_id: str, table_id: str, round_id: str, req: Request) -> ledger.Seen:
        """What the ledger holds of this call's request id and round; a request id it holds is answered from
        there (or refused, for other content) whatever Redis still remembers."""
        seen = await self.lookups.get(link_id, table_id, round_id, req.request_id)
        if seen.request_hash is not None:
            await self._answered(link_id, req)
        return seen

    async def _finished_round(self, link_id: str, req: Request, table_id: str, round_id: str,
                              state: str | None) -> dict[str, str]:
        """A round Redis does not hold: finished and let go (`state`, from the ledger), or never committed."""
        if state is None:
            await self._replay_or(link_id, req, NotFound("round_id", round_id, "no wagers were committed"))
        if state == COMMITTED:  # an open round must be in Redis: it lost it
            raise Unavailable(f"link {link_id}: Redis does not hold open round {round_id} of table {table_id}; "
                              "retry with the same request_id")
        return {"state": str(state)}

    # ---- administration ----------------------------------------------------------------------------

    async def fund_pool(self, req: Request, link_id: str, pool: str, amount_cents: int, audit: Audit) -> Done:
        """NZ 11.6(b): operator funding, the seed and any top-up."""
        require_positive_cents("amount_cents", amount_cents)

        async def build(version: str, config: LinkConfig) -> Step:
            config.pool_spec(pool)
            legs = [Posting(OPERATOR_FUNDING, -amount_cents * 1_000_000), Posting(pool_account(pool),
                                                                                    amount_cents * 1_000_000)]
            return self._step(link_id, req, "fund", version, postings=legs, extra={"audit": audit.as_dict()})

        require_id("link_id", link_id)
        return await self.execute(link_id, req, build, ledger_first=True)

    async def change_config(self, req: Request, link_id: str, kind: str, audit: Audit,
                            change: Callable[[LinkConfig], LinkConfig], *, create: LinkConfig | None = None,
                            table: str | None = None) -> Done:
        """Every configuration change is a journaled entry with who, why and the approval reference."""

        async def build(version: str, config: LinkConfig) -> Step:
            if create is not None and await ledger.link_known(self.pg, link_id):  # whatever Redis says
                raise FailedPrecondition("link_id", link_id, "a link with this id already exists")
            new = change(config)
            raw = canonical_json(new.to_dict())
            return self._step(link_id, req, kind, version, new_config=raw,
                              extra={"config": new.to_dict(), "audit": audit.as_dict(), "table": table},
                              result={"link_id": link_id})

        require_id("link_id", link_id)
        if create is not None:
            await self.redis.add_link(link_id)  # before the step, so the ledger writer reads its journal
        done = await self.execute(link_id, req, build, create=create, ledger_first=True)
        if table is not None:
            await self.redis.set_table_link(table, link_id)
        return done

    async def create_link(self, req: Request, config: LinkConfig, audit: Audit) -> Done:
        return await self.change_config(req, config.link_id, "create_link", audit, lambda c: c, create=config)

    async def register_table(self, req: Request, table: TableConfig, link_id: str, audit: Audit) -> Done:
        current = await self.redis.link_of_table(table.table_id) or await ledger.table_link(self.pg, table.table_id)
        if current is not None and current != link_id:
            raise FailedPrecondition("table_id", table.table_id, f"already registered on link {current}")
        return await self.change_config(req, link_id, "register_table", audit, lambda c: c.with_table(table),
                                        table=table.table_id)

    async def set_table_suspended(self, req: Request, table_id: str, suspended: bool, audit: Audit) -> Done:
        """NSW 14.13: suspend a table's jackpot wagers; resuming cites the inspector's approval."""
        if not suspended and not audit.approval_ref:
            raise InvalidInput("audit.approval_ref", "", "resuming a table needs the inspector's approval reference")
        link_id = await self.link_of_table(table_id)

        def change(c: LinkConfig) -> LinkConfig:
            return c.with_table(replace(c.table(table_id), suspended=suspended))

        return await self.change_config(req, link_id, "suspend_table" if suspended else "resume_table", audit, change)

    async def set_rates(self, req: Request, link_id: str, pools_ppm: Mapping[str, int], retained_ppm: int,
                        effective_at_ms: int, audit: Audit) -> Done:
        """§3: a new versioned rate set, effective from a time, never retroactive."""
        if not audit.approval_ref:
            raise InvalidInput("audit.approval_ref", "", "a rate change needs the regulator's approval reference")
        at = effective_at_ms or self.clock()

        def change(c: LinkConfig) -> LinkConfig:
            if at < self.clock() - 1000:
                raise InvalidInput("rates.effective_at_ms", at, "a rate change cannot be retroactive")
            version = max(r.version for r in c.rate_sets) + 1
            return replace(c, rate_sets=(*c.rate_sets, RateSet(pools_ppm, retained_ppm, version, at,
                                                               audit.approval_ref)))

        return await self.change_config(req, link_id, "set_rates", audit, change)

    async def set_paytable(self, req: Request, link_id: str, game: str, entries: Sequence[PaytableEntry],
                           audit: Audit) -> Done:
        table = Paytable(game, {e.category: e for e in entries})

        def change(c: LinkConfig) -> LinkConfig:
            return replace(c, paytables={**c.paytables, game: table})

        return await self.change_config(req, link_id, "set_paytable", audit, change)

    async def update_link(self, req: Request, link_id: str, wager_cents: int, pools: Sequence[PoolSpec],
                          verification_threshold_cents: int | None, audit: Audit) -> Done:
        def change(c: LinkConfig) -> LinkConfig:
            new_pools = tuple(pools) if pools else c.pools
            return replace(c, wager_cents=wager_cents or c.wager_cents, pools=new_pools,
                           verification_threshold_cents=(c.verification_threshold_cents
                                                         if verification_threshold_cents is None
                                                         else verification_threshold_cents))

        return await self.change_config(req, link_id, "update_link", audit, change)


class _Replay(Exception):
    def __init__(self, reply: Reply) -> None:
        self.reply = reply

