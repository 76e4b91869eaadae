"""Table decisions (RULES.md §3 commit, §5 settle, §6 void): from the config, the state read and the
command, the step to apply. Pure: every rule here is unit-tested without servers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import compress, repeat

from ...domain.contributions import SeatContribution, contribute, contribute_alike, reversal
from ...domain.errors import FailedPrecondition, InvalidInput, NotFound
from ...domain.ids import hit_id
from ...domain.link import LinkConfig
from ...domain.money import floor_cents
from ...domain.pools import PoolSpec
from ...domain.postings import POOL_PREFIX, Posting
from ...domain.pricing import price_round
from ...domain.rates import RateSet, rates_in_force
from ...domain.rounds import (
    COMMITTED,
    PENDING,
    SETTLED,
    VOIDED,
    NoHand,
    evaluate_round,
    hand_columns,
    require_every_wagered_seat,
    wager_seats,
)
from ...domain.verification import PAID, approvals_needed, held, status_of
from ..commands import Commit, Settle, Void
from ..entries import CommitDetail, HitEntry, RoundEntry, SettleDetail, VoidDetail
from ..errors import Unavailable
from ..ports import ROUND_ABSENT, LiveRound, Step
from ..replies import Accepted, CommitResult, Payout, Refund, SeatResult, SettleResult, VoidResult
from ..round_record import HeldHit, RoundRecord, StoredSeats, new_round
from ..seat_runs import RUNS_FROM, RunRows, result_runs, seat_ranges
from .steps import step


@dataclass(frozen=True, slots=True)
class TableState:
    """What a table decision reads: the clock, the pools, the round as the live store holds it (empty when
    it does not) and as the ledger does (None when it holds nothing)."""

    now_ms: int
    balances: Mapping[str, int]
    round: LiveRound | None
    ledger_round_state: str | None


SHAPE_SEATS = 64  # commits of up to this many seats share their shape (below): a table's rounds look alike
SHAPES_KEPT = 4096  # distinct shapes a process keeps; all are dropped when full (a few KB each)
_shapes: dict[tuple[object, ...], CommitShape] = {}


@dataclass(frozen=True, slots=True)
class CommitShape:
    """What a commit's wagers come to under one rate set, whatever its request, table or round: each seat's legs,
    the entry's legs, the reply's accepted wagers and the stored round. Immutable, so equal commits share one."""

    seats: tuple[SeatContribution, ...]
    merged: tuple[Posting, ...]
    result: CommitResult
    round_data: str
    overflow: tuple[tuple[str, str, int], ...]


def commit_shape(rates: RateSet, pools: tuple[PoolSpec, ...], game: str, seats: tuple[tuple[int, int], ...],
                 balances: Mapping[str, int]) -> CommitShape:
    """§3: the wagers' contributions against `balances` (caps), as the entry, the reply and the round store them."""
    c = contribute(rates, pools, balances, seats)
    pooled: dict[int, int] = {}  # equal wagers share one tuple of legs: summed once, found by identity
    accepted: list[Accepted] = []
    new = tuple.__new__  # a named tuple built in C: a round may hold 100,000 seats
    for s in c.seats:
        uc = pooled.get(id(s.postings))
        if uc is None:
            uc = pooled[id(s.postings)] = s.to_pools_uc
        accepted.append(new(Accepted, (s.seat, s.wager_cents, uc, s.overflow_uc)))
    return CommitShape(c.seats, c.merged, CommitResult(tuple(accepted)),
                       new_round(game, rates.version, c.seats).encode(), _overflow(c.overflows))


def _overflow(overflows: Mapping[tuple[str, str], int]) -> tuple[tuple[str, str, int], ...]:
    """§10: which pool's cap passed how much to which, for reconciliation."""
    return tuple((src, dst, uc) for (src, dst), uc in sorted(overflows.items()))


def shared_shape(rates: RateSet, pools: tuple[PoolSpec, ...], game: str,
                 seats: tuple[tuple[int, int], ...]) -> CommitShape:
    """commit_shape of a link with no cap (no balance matters), kept per process: equal rounds under one rate set
    are decided once (about half of a 7-seat commit's decision). The key holds every input the shape reads."""
    key = (game, rates.version, rates.retained_ppm, tuple(rates.pools_ppm.items()), pools, seats)
    shape = _shapes.get(key)
    if shape is None:
        if len(_shapes) >= SHAPES_KEPT:
            _shapes.clear()
        shape = _shapes[key] = commit_shape(rates, pools, game, seats, {})
    return shape


def decide_commit(cmd: Commit, config: LinkConfig, version: str, state: TableState) -> Step:
    """§3: at "no more bets", every accepted wager feeds the pools with the rates in force now."""
    table = config.table(cmd.table_id)
    if table.suspended:  # NSW 14.13
        raise FailedPrecondition("table_id", cmd.table_id, "jackpot wagers are suspended at this table")
    seat_list = wager_seats(cmd.wagers, table.seats, config.wager_cents, columns=cmd.columns)
    if state.ledger_round_state is not None:  # API.md: a round id is used once; the ledger keeps them all
        raise FailedPrecondition("round_id", cmd.round_id, f"the round is {state.ledger_round_state}")
    rates = rates_in_force(config.rate_sets, state.now_ms)
    capped = [p.name for p in config.pools if p.cap_cents is not None]
    if len(seat_list) > RUNS_FROM and not set(capped) & set(rates.pool_order):
        # A big round on pools without a cap: every wager is the link's amount, so every seat is alike; the
        # round is priced once and held as runs of consecutive seats, stored byte for byte as seat by seat.
        legs, c = contribute_alike(rates, config.pools, state.balances, config.wager_cents, len(seat_list))
        uc = sum(p.amount_uc for p in legs if p.account.startswith(POOL_PREFIX))
        ranges = seat_ranges(seat_list)
        result = CommitResult(RunRows([[f, t, config.wager_cents, uc, 0] for f, t in ranges], Accepted))
        record = RoundRecord(table.game, rates.version, StoredSeats(
            [[list(p) for p in legs]], runs=[[f, t, 0, config.wager_cents, 0] for f, t in ranges]))
        round_data = record.encode()
        merged, overflow = c.merged, _overflow(c.overflows)
    else:
        seats = tuple(zip(seat_list, repeat(config.wager_cents)))
        if capped or state.balances or len(seats) > SHAPE_SEATS:
            shape = commit_shape(rates, config.pools, table.game, seats, state.balances)
        else:
            shape = shared_shape(rates, config.pools, table.game, seats)
        result, round_data, merged, overflow = shape.result, shape.round_data, shape.merged, shape.overflow
    return step(config.link_id, cmd.request, "commit", version, state.now_ms, postings=merged,
                result=result, detail=CommitDetail(RoundEntry(cmd.table_id, cmd.round_id, COMMITTED, round_data),
                                                   overflow),
                round=(cmd.table_id, cmd.round_id), round_expect=ROUND_ABSENT, round_new_state=COMMITTED,
                round_data=round_data, guards={n: state.balances.get(n, 0) for n in capped})


def decide_settle(cmd: Settle, config: LinkConfig, version: str, state: TableState) -> Step:
    """§5: evaluate every wagered seat and price all hits at once against the pools as they stand. Every seat that
    wagered must be accounted for (its cards, or why it has none); other seats' cards are checked, never paid."""
    table = config.table(cmd.table_id)
    sent, dealt, reasons = hand_columns(cmd.hands)  # the seats sent, in order, as columns (in C)
    evaluated = evaluate_round(table.game, table.seats, sent, cmd.hands,
                               cmd.board_cards, cmd.dealer_cards, columns=cmd.columns)
    rnd = open_round(state, config.link_id, cmd.table_id, cmd.round_id)
    record = RoundRecord.decode(rnd.data)
    active = record.active
    wagered = set(active)
    require_every_wagered_seat(wagered, cmd.hands, columns=cmd.columns)
    hits = [x for x in evaluated if x.seat in wagered]
    stated: dict[int, NoHand | None] = dict(zip(sent, reasons, strict=True))  # in C
    unwagered = sorted(stated.keys() - wagered)
    paytable = config.paytable(record.game)
    qualifying = [x for x in hits if x.category in paytable.entries]
    balances = state.balances if qualifying else {}
    price = price_round(paytable, config.pools, balances, qualifying, table.seats)
    cards = {sent[i]: dealt[i] for i in compress(range(len(sent)), dealt)}  # the few seats with cards
    verify, dual = config.verification_threshold_cents, config.dual_approval_threshold_cents
    statuses = [status_of(p.amount_cents, verify, dual) for p in price.payouts]  # §7
    payouts, hit_rows = [], []
    waiting: dict[int, HeldHit] = {}
    for p, status in zip(price.payouts, statuses, strict=True):
        needed = approvals_needed(p.amount_cents, verify, dual)  # §7, NM 15.1.24.12: 0, 1 or 2
        payout = Payout(p.seat, p.category, p.amount_cents, p.pool, p.funded_by_operator_cents,
                        hit_id(config.link_id, cmd.table_id, cmd.round_id, p.seat), status, p.pool_before_uc, p.rule,
                        needed)
        payouts.append(payout)
        shown = cards.get(p.seat, ())
        hit_rows.append(HitEntry(payout.hit_id, cmd.table_id, cmd.round_id, p.seat, p.category,
                                 (*shown, *cmd.board_cards) if shown else (), p.pool, p.amount_cents,
                                 p.funded_by_operator_cents, p.pool_before_uc, p.rule, status,
                                 floor_cents(p.pool_after_uc), needed))
        if status != PAID:
            waiting[p.seat] = HeldHit(payout.hit_id, p.pool, p.amount_cents, p.funded_by_operator_cents, needed)
    categories = {x.seat: x.category for x in hits}
    seats: Sequence[SeatResult]
    if len(active) > RUNS_FROM:  # a big round's results as runs of seats alike (seat_runs): no row per seat
        seats = RunRows(result_runs(active, categories, stated), SeatResult)
    else:
        new = tuple.__new__  # a named tuple built in C
        seats = tuple(new(SeatResult, (s, categories.get(s, ""), "" if (r := stated.get(s)) is None else r._value_))
                      for s in active)  # _value_: .value is slow
    # hands sent for seats without a jackpot wager (`unwagered`): checked with the deck, never paid
    result = SettleResult(tuple(payouts), price.resets, seats, tuple(unwagered))
    round_data = replace(record, hands={x.seat: x.category for x in hits}, held=waiting or None).encode()
    new_state = PENDING if waiting else SETTLED  # §7: the round stays open until its held hits are decided
    return step(config.link_id, cmd.request, "settle", version, state.now_ms,
                postings=[*price.postings, *held(price.payouts, statuses)], result=result,
                detail=SettleDetail(RoundEntry(cmd.table_id, cmd.round_id, new_state, round_data), tuple(hit_rows),
                                    tuple((r.pool, r.from_reserve_cents, r.from_operator_cents) for r in price.resets)
                                    if len(record.seats) > RUNS_FROM else None),
                round=(cmd.table_id, cmd.round_id), round_expect=COMMITTED, round_rev=rnd.rev,
                round_new_state=new_state, round_data=round_data,
                guards={p.name: balances.get(p.name, 0) for p in config.pools} if qualifying else {})


def decide_void(cmd: Void, config: LinkConfig, version: str, state: TableState) -> Step:
    """§6: refund the round (or the listed seats) and reverse their contributions exactly."""
    rnd = open_round(state, config.link_id, cmd.table_id, cmd.round_id, "; only a supervisor adjustment can change it")
    record = RoundRecord.decode(rnd.data)
    active = record.active
    for i, s in enumerate(cmd.seats):
        if s not in active:  # or this very void was applied already and awaits the ledger: the engine replays it
            raise InvalidInput(f"seats[{i}]", s, "holds no open jackpot wager in this round")
    chosen = sorted(set(cmd.seats)) if cmd.seats else active
    undo = reversal([record.seats[s] for s in chosen], state.balances)
    after = replace(record, voided=tuple(sorted({*record.voided, *chosen})),
                    void_reasons=(*record.void_reasons, {"seats": chosen, "reason": cmd.reason}))
    new_state = VOIDED if set(after.voided) >= set(record.seats) else COMMITTED
    round_data = after.encode()
    result = VoidResult(tuple(Refund(s, record.seats[s].wager_cents) for s in chosen))
    return step(config.link_id, cmd.request, "void", version, state.now_ms, postings=undo, result=result,
                detail=VoidDetail(RoundEntry(cmd.table_id, cmd.round_id, new_state, round_data), cmd.reason),
                round=(cmd.table_id, cmd.round_id), round_expect=COMMITTED, round_rev=rnd.rev,
                round_new_state=new_state, round_data=round_data)


def open_round(state: TableState, link_id: str, table_id: str, round_id: str, moved_on: str = "") -> LiveRound:
    """The round's live record, which must be COMMITTED. A round the live store does not hold was finished and
    let go (the ledger has its state), was never committed, or was lost by the live store."""
    rnd = state.round
    if rnd is None:
        if state.ledger_round_state is None:
            raise NotFound("round_id", round_id, "no wagers were committed")
        if state.ledger_round_state == COMMITTED:  # an open round must be live: the live store lost it
            raise Unavailable(f"link {link_id}: Redis does not hold open round {round_id} of table {table_id}; "
                              "retry with the same request_id")
        raise FailedPrecondition("round_id", round_id, f"the round is {state.ledger_round_state}{moved_on}")
    if rnd.state != COMMITTED:
        raise FailedPrecondition("round_id", round_id, f"the round is {rnd.state}{moved_on}")
    return rnd
