"""What each leg of a ledger entry is, for reconciliation (RULES.md §10): contributions before any cap,
overflow out and in, refunds, operator funding, transfers, payouts by hand. Pure.

Every µ¢ an entry posts is classified exactly once: the flows of an entry sum, per account, to its postings.
What a kind of entry cannot explain is an UNEXPLAINED flow, which fails the period's identity rather than
vanishing from it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .money import cents_to_uc
from .pools import RESERVE
from .postings import OPERATOR_FUNDING, PAYOUTS, PENDING_PAYOUTS, POOL_PREFIX, REFUNDS, RETAINED, WAGERS

# Flows (the second column of a summary row).
WAGER = "wager"  # wagers accepted (the wagers account)
CONTRIBUTION = "contribution"  # §3: w × rate into a pool, before any cap; the retained portion
OVERFLOW_OUT = "overflow_out"  # §3: what a capped pool passed on
OVERFLOW_IN = "overflow_in"  # §3: what a pool received from another's cap
REFUND = "refund"  # §6: a void's exact reversal, and the wager returned
FUNDING = "funding"  # NZ 11.6(b): top-ups, shortfalls (§5.7), resets beyond RESERVE (§5.8)
TRANSFER_IN = "transfer_in"  # §5.8 resets from RESERVE; §9 restructuring
TRANSFER_OUT = "transfer_out"
PAYOUT = "payout"  # §5: a prize out of its pool (detail: the hand)
HELD = "held"  # §7: a prize above the threshold held in pending_payouts
APPROVED = "approved"  # §7: a held prize paid
REJECTED = "rejected"  # §7: a held prize returned to its pool and the operator (detail: the hand)
UNEXPLAINED = "unexplained"  # a leg no rule accounts for: the identity of its period fails

# Details of funding flows: where the operator's money went.
TOP_UP = "top-up"
SHORTFALL = "shortfall"
RESET = "reset"
VOID_SHORTFALL = "void shortfall"


@dataclass(frozen=True, slots=True)
class Flow:
    """µ¢ moved on one account for one reason; `items` counts what it stands for (wagers, refunds, hits)."""

    account: str
    flow: str
    detail: str
    amount_uc: int
    items: int = 0


@dataclass(frozen=True, slots=True)
class HitPaid:
    """A hit as its settle entry records it (§5)."""

    pool: str
    hand: str
    amount_cents: int
    funded_by_operator_cents: int
    pending: bool


@dataclass(frozen=True, slots=True)
class ResetPaid:
    """A reset as the settle priced it (§5.8)."""

    pool: str
    from_reserve_cents: int
    from_operator_cents: int


@dataclass(frozen=True, slots=True)
class EntryFacts:
    """What an entry says beyond its merged postings, as the ledger adapter reads it from the entry."""

    kind: str
    postings: Sequence[tuple[str, int]]
    wagers: int = 0  # commit: wagers accepted; void: wagers refunded
    overflow: Sequence[tuple[str, str, int]] = ()  # commit: (from pool, to pool, µ¢), §3
    reversed: Mapping[str, int] | None = None  # void: per account, what the voided wagers had put there
    hits: Sequence[HitPaid] = ()
    resets: Sequence[ResetPaid] | None = None  # settle: None when the entry's reply could not say
    hand: str = ""  # a hit decision: the hand decided
    rates_version: int = 0  # commit: the rate set its wagers were contributed at (0: not recorded)


def _pool(name: str) -> str:
    return POOL_PREFIX + name


def _known(facts: EntryFacts) -> list[Flow]:
    """The flows an entry's facts name; the rest of its legs are its residual."""
    out: list[Flow] = []
    if facts.kind == "commit":
        for src, dst, uc in facts.overflow:  # §3: the cap's excess, out of one pool into its target
            out += [Flow(_pool(src), OVERFLOW_OUT, "", -uc), Flow(_pool(dst), OVERFLOW_IN, "", uc)]
    elif facts.kind == "void" and facts.reversed is not None:
        for account, uc in facts.reversed.items():  # §6: exactly what the voided wagers put there
            if account == WAGERS:
                out.append(Flow(REFUNDS, REFUND, "", -uc, facts.wagers))
            else:
                out.append(Flow(account, REFUND, "", -uc))
    elif facts.kind == "settle":
        for hit in facts.hits:
            need, funded = cents_to_uc(hit.amount_cents), cents_to_uc(hit.funded_by_operator_cents)
            if funded:  # §5.7: the operator makes up the difference before the pool pays
                out += [Flow(OPERATOR_FUNDING, FUNDING, SHORTFALL, -funded), Flow(_pool(hit.pool), FUNDING, SHORTFALL,
                                                                                  funded)]
            out += [Flow(_pool(hit.pool), PAYOUT, hit.hand, -need, 1), Flow(PAYOUTS, PAYOUT, hit.hand, need, 1)]
            if hit.pending:  # §7: held instead of paid
                out += [Flow(PAYOUTS, HELD, hit.hand, -need, 1), Flow(PENDING_PAYOUTS, HELD, hit.hand, need, 1)]
        for r in facts.resets or ():  # §5.8: RESERVE first, then the operator
            if r.from_reserve_cents:
                uc = cents_to_uc(r.from_reserve_cents)
                out += [Flow(_pool(RESERVE), TRANSFER_OUT, RESET, -uc), Flow(_pool(r.pool), TRANSFER_IN, RESET, uc)]
            if r.from_operator_cents:
                uc = cents_to_uc(r.from_operator_cents)
                out += [Flow(OPERATOR_FUNDING, FUNDING, RESET, -uc), Flow(_pool(r.pool), FUNDING, RESET, uc)]
    return out


def _residual_flow(kind: str, account: str, amount_uc: int) -> tuple[str, str]:
    """(flow, detail) of what an entry of `kind` posts to `account` beyond its named flows."""
    pool = account.startswith(POOL_PREFIX)
    if kind == "commit":
        if pool or account == RETAINED:
            return CONTRIBUTION, ""  # §3: before the cap (the overflow is named)
        if account == WAGERS:
            return WAGER, ""  # the caller names the rate set
    elif kind == "void" and ((pool and amount_uc > 0) or (account == OPERATOR_FUNDING and amount_uc < 0)):
        return FUNDING, VOID_SHORTFALL  # §5.7 for voids: what a pool that paid since could not give back
    elif kind == "fund" and (pool or account == OPERATOR_FUNDING):
        return FUNDING, TOP_UP
    elif kind == "approve_hit" and account in (PENDING_PAYOUTS, PAYOUTS):
        return APPROVED, ""
    elif kind == "reject_hit" and (pool or account in (PENDING_PAYOUTS, OPERATOR_FUNDING)):
        return REJECTED, ""
    elif kind in ("combine_pools", "split_pools") and pool:  # §9: every µ¢ moves between pools
        return (TRANSFER_IN if amount_uc > 0 else TRANSFER_OUT), "restructure"
    return UNEXPLAINED, kind


def flows_of(facts: EntryFacts) -> list[Flow]:
    """§10: every leg of one entry classified; per account the flows sum to exactly what it posts."""
    known = _known(facts)
    residual: dict[str, int] = {}
    for account, uc in facts.postings:
        residual[account] = residual.get(account, 0) + uc
    for f in known:
        residual[f.account] = residual.get(f.account, 0) - f.amount_uc
    out = [f for f in known if f.amount_uc]
    for account, uc in residual.items():
        if not uc:
            continue
        flow, detail = _residual_flow(facts.kind, account, uc)
        if flow in (APPROVED, REJECTED):
            detail = facts.hand
        if flow == WAGER and facts.rates_version:
            detail = rates_detail(facts.rates_version)  # §3: contributions are checked against the approved rates
        # an unexplained leg counts as an item, so two that cancel out still fail their period
        items = facts.wagers if flow == WAGER else 1 if flow in (APPROVED, REJECTED, UNEXPLAINED) else 0
        out.append(Flow(account, flow, detail, uc, items))
    return out


def rates_detail(version: int) -> str:
    """The detail of a commit's wagers: the rate set they were contributed at."""
    return f"rates {version}"


def rates_version_of(detail: str) -> int | None:
    """The rate set a wager flow names (None: a commit written before wagers named theirs)."""
    head, _, number = detail.partition(" ")
    return int(number) if head == "rates" and number.isdigit() else None


def totals(flows: Iterable[Flow]) -> dict[tuple[str, str, str], tuple[int, int]]:
    """Flows summed per (account, flow, detail): (µ¢, items)."""
    out: dict[tuple[str, str, str], tuple[int, int]] = {}
    for f in flows:
        key = (f.account, f.flow, f.detail)
        uc, items = out.get(key, (0, 0))
        out[key] = (uc + f.amount_uc, items + f.items)
    return out
