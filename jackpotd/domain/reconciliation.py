"""A period's reconciliation (RULES.md §10): each pool's movements between its opening and closing balances,
the link's wagers against contributions and retained, and whether each identity holds. Pure: the balances come
from the ledger's postings, the movements from the entries' classified flows (flows.py), two sources that must
agree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from . import flows as f
from .money import UC_PER_CENT
from .pools import VISIBLE
from .postings import OPERATOR_FUNDING, PAYOUTS, PENDING_PAYOUTS, POOL_PREFIX, REFUNDS, RETAINED, WAGERS
from .rates import RateSet

Totals = Mapping[tuple[str, str, str], tuple[int, int]]  # (account, flow, detail) -> (µ¢, items)


@dataclass(frozen=True, slots=True)
class HandPayouts:
    """A pool's payouts of one hand in the period: hits paid (or held), and rejected hits given back."""

    hand: str
    hits: int = 0
    paid_uc: int = 0
    rejected_hits: int = 0
    returned_uc: int = 0


@dataclass(frozen=True, slots=True)
class PoolMovements:
    """§10 for one pool: opening + contributions − overflow out + overflow in − refunds + funding + transfers in
    − payouts − transfers out = closing. Every amount is positive in the direction its name says."""

    pool: str
    opening_uc: int
    contributions_uc: int
    overflow_out_uc: int
    overflow_in_uc: int
    refunds_uc: int
    funding_uc: int
    transfers_in_uc: int
    transfers_out_uc: int
    payouts_uc: int  # net of rejected hits given back
    closing_uc: int
    by_hand: tuple[HandPayouts, ...] = ()
    unexplained_uc: int = 0  # legs no rule accounts for: they make the identity fail
    unexplained_legs: int = 0  # counted apart: legs that cancel out must fail it too

    @property
    def hidden(self) -> bool:
        return self.pool not in VISIBLE

    @property
    def expected_closing_uc(self) -> int:
        return (self.opening_uc + self.contributions_uc - self.overflow_out_uc + self.overflow_in_uc
                - self.refunds_uc + self.funding_uc + self.transfers_in_uc - self.payouts_uc - self.transfers_out_uc)

    @property
    def difference_uc(self) -> int:
        return self.closing_uc - self.expected_closing_uc

    @property
    def holds(self) -> bool:
        return self.difference_uc == 0 and self.unexplained_uc == 0 and self.unexplained_legs == 0


@dataclass(frozen=True, slots=True)
class LinkMovements:
    """§10 for the link: wagers accepted − wagers refunded = contributions to all pools + retained."""

    wagers: int
    wagers_accepted_uc: int
    refunds: int
    wagers_refunded_uc: int
    contributions_uc: int  # to all pools, net of the voids' reversals
    retained_uc: int  # net of the voids' reversals
    operator_funding_uc: int  # net of what rejections gave back
    paid_uc: int
    held_uc: int
    unexplained_legs: int = 0  # legs no rule accounts for (counted, not summed: legs that cancel out still count)

    @property
    def holds(self) -> bool:
        return (self.wagers_accepted_uc - self.wagers_refunded_uc == self.contributions_uc + self.retained_uc
                and self.unexplained_legs == 0)


@dataclass(frozen=True, slots=True)
class Identity:
    name: str
    rule: str
    expression: str
    holds: bool


@dataclass(frozen=True, slots=True)
class Reconciliation:
    pools: tuple[PoolMovements, ...]
    link: LinkMovements
    identities: tuple[Identity, ...] = field(default_factory=tuple)

    @property
    def all_hold(self) -> bool:
        return all(i.holds for i in self.identities)


def _sum(totals: Totals, account: str, *flows: str) -> tuple[int, int]:
    uc = items = 0
    for (a, flow, _), (amount, count) in totals.items():
        if a == account and flow in flows:
            uc, items = uc + amount, items + count
    return uc, items


def pool_movements(pool: str, opening_uc: int, closing_uc: int, totals: Totals) -> PoolMovements:
    """One pool's movements in the period, from its flows; signs turned to the direction each column names."""
    account = POOL_PREFIX + pool

    def uc(*flows: str) -> int:
        return _sum(totals, account, *flows)[0]

    hands: dict[str, HandPayouts] = {}
    for (a, flow, detail), (amount, items) in totals.items():
        if a != account or flow not in (f.PAYOUT, f.REJECTED):
            continue
        h = hands.get(detail, HandPayouts(detail))
        if flow == f.PAYOUT:
            h = HandPayouts(detail, h.hits + items, h.paid_uc - amount, h.rejected_hits, h.returned_uc)
        else:
            h = HandPayouts(detail, h.hits, h.paid_uc, h.rejected_hits + items, h.returned_uc + amount)
        hands[detail] = h
    return PoolMovements(
        pool, opening_uc, contributions_uc=uc(f.CONTRIBUTION), overflow_out_uc=-uc(f.OVERFLOW_OUT),
        overflow_in_uc=uc(f.OVERFLOW_IN), refunds_uc=-uc(f.REFUND), funding_uc=uc(f.FUNDING),
        transfers_in_uc=uc(f.TRANSFER_IN), transfers_out_uc=-uc(f.TRANSFER_OUT),
        payouts_uc=-uc(f.PAYOUT, f.REJECTED), closing_uc=closing_uc,
        by_hand=tuple(hands[k] for k in sorted(hands)), unexplained_uc=uc(f.UNEXPLAINED),
        unexplained_legs=_sum(totals, account, f.UNEXPLAINED)[1])


def link_movements(totals: Totals) -> LinkMovements:
    """The link's wagers, refunds, contributions and retained portion in the period, from its flows."""
    accepted, wagers = _sum(totals, WAGERS, f.WAGER)
    refunded, refunds = _sum(totals, REFUNDS, f.REFUND)
    pools = sum(amount for (a, flow, _), (amount, _) in totals.items()
                if a.startswith(POOL_PREFIX) and flow in (f.CONTRIBUTION, f.OVERFLOW_OUT, f.OVERFLOW_IN, f.REFUND))
    unexplained = sum(items for (_, flow, _), (_, items) in totals.items() if flow == f.UNEXPLAINED)
    return LinkMovements(
        wagers=wagers, wagers_accepted_uc=-accepted, refunds=refunds, wagers_refunded_uc=refunded,
        contributions_uc=pools, retained_uc=_sum(totals, RETAINED, f.CONTRIBUTION, f.REFUND)[0],
        operator_funding_uc=-_sum(totals, OPERATOR_FUNDING, f.FUNDING, f.REJECTED)[0],
        paid_uc=_sum(totals, PAYOUTS, f.PAYOUT, f.HELD, f.APPROVED)[0],
        held_uc=_sum(totals, PENDING_PAYOUTS, f.HELD, f.APPROVED, f.REJECTED)[0], unexplained_legs=unexplained)


def at_approved_rates(totals: Totals, rates: Mapping[int, RateSet]) -> list[Identity]:
    """§3: what each pool (and the retained account) received from the period's commits is exactly their wagers ×
    the rates of the rate set each commit used. None when a commit did not record its rate set (written before
    wagers named theirs): then it cannot be checked."""
    cents: dict[int, int] = {}
    for (account, flow, detail), (uc, _) in totals.items():
        if account == WAGERS and flow == f.WAGER:
            version = f.rates_version_of(detail)
            if version is None:
                return []
            cents[version] = cents.get(version, 0) - uc // UC_PER_CENT
    unknown = sorted(set(cents) - set(rates))
    names = sorted({n for v in cents if v in rates for n in rates[v].pools_ppm})
    out = []
    for name, account in [*((n, POOL_PREFIX + n) for n in names), ("retained", RETAINED)]:
        want = sum(c * (rates[v].retained_ppm if name == "retained" else rates[v].pools_ppm.get(name, 0))
                   for v, c in cents.items() if v in rates)
        got = sum(uc for (a, flow, _), (uc, _) in totals.items() if a == account and flow == f.CONTRIBUTION)
        terms = " + ".join(f"{c}¢ × {rates[v].retained_ppm if name == 'retained' else rates[v].pools_ppm.get(name, 0)}"
                           f" ppm (rates {v})" for v, c in sorted(cents.items()) if v in rates) or "0"
        holds = got == want and not unknown
        out.append(Identity(
            f"{name} at the approved rates", "RULES.md §3, §10",
            f"{'retained before voids' if name == 'retained' else 'contributions'} {got} "
            f"{'=' if got == want else '≠'} {terms} = {want} µ¢"
            + (f"; rate sets {unknown} are not in the link's history" if unknown else ""), holds))
    return out


def reconcile(pools: Mapping[str, tuple[int, int]], totals: Totals,
              rates: Mapping[int, RateSet] | None = None) -> Reconciliation:
    """§10 for a period: `pools` maps each pool to its (opening, closing) balance in µ¢ (from the postings);
    `totals` are the period's flows; `rates` every rate set the link ever had, by version (§3: contributions are
    checked against them). Each identity is stated with the period's numbers."""
    moved = tuple(pool_movements(name, opening, closing, totals)
                  for name, (opening, closing) in sorted(pools.items(), key=lambda kv: (kv[0] not in VISIBLE,
                                                                                        kv[0])))
    link = link_movements(totals)
    identities = [Identity(
        f"pool {p.pool}", "RULES.md §10",
        f"{p.opening_uc} + {p.contributions_uc} − {p.overflow_out_uc} + {p.overflow_in_uc} − {p.refunds_uc} "
        f"+ {p.funding_uc} + {p.transfers_in_uc} − {p.payouts_uc} − {p.transfers_out_uc} = {p.expected_closing_uc}"
        f" {'=' if p.difference_uc == 0 else '≠'} closing {p.closing_uc} µ¢"
        + (f"; {p.unexplained_legs} legs ({p.unexplained_uc} µ¢) no rule accounts for" if p.unexplained_legs else ""),
        p.holds) for p in moved]
    identities.append(Identity(
        "link", "RULES.md §10",
        f"wagers {link.wagers_accepted_uc} − refunded {link.wagers_refunded_uc} = "
        f"{link.wagers_accepted_uc - link.wagers_refunded_uc} {'=' if link.holds else '≠'} contributions "
        f"{link.contributions_uc} + retained {link.retained_uc} = {link.contributions_uc + link.retained_uc} µ¢"
        + (f"; {link.unexplained_legs} legs of the period no rule accounts for" if link.unexplained_legs else ""),
        link.holds))
    if rates is not None:
        identities += at_approved_rates(totals, rates)
    return Reconciliation(moved, link, tuple(identities))
