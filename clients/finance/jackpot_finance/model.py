"""The one conversion of each ReportService reply into a plain, JSON-ready dict: integer µ¢ (or cents) and
the exact dollars beside them, times in UTC and in the link's zone, hands by their names. Every format renders
from these dicts, so text, CSV, JSON and HTML carry the same numbers.

The client also redoes each identity of RULES.md §10 from the figures it was sent (`checked`): a report
whose numbers do not add up is not passed as holding just because the server says so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jackpotd.api.gen.jackpot.v1 import report_pb2
from jackpotd.software.identity import software_identity

from .money import cents_uc, dollars, exact
from .times import local_iso, utc_iso, zone

Report = dict[str, Any]


@dataclass(frozen=True)
class Movement:
    """A line of a pool's reconciliation (RULES.md §10): `sign` +1 or -1 for a movement, 0 for the opening
    and closing balances."""

    key: str
    label: str
    sign: int


# RULES.md §10: opening + contributions − overflow out + overflow in − refunds + funding + transfers in
#   − payouts − transfers out = closing. The order is the identity's.
MOVEMENTS = (
    Movement("opening", "opening", 0),
    Movement("contributions", "contributions", +1),
    Movement("overflow_out", "overflow out", -1),
    Movement("overflow_in", "overflow in", +1),
    Movement("refunds", "refunds", -1),
    Movement("funding", "operator funding", +1),
    Movement("transfers_in", "transfers in", +1),
    Movement("payouts", "payouts", -1),
    Movement("transfers_out", "transfers out", -1),
    Movement("closing", "closing", 0),
)

LINK_AMOUNTS = (
    ("wagers_accepted", "wagers accepted"),
    ("wagers_refunded", "wagers refunded (voids)"),
    ("contributions", "contributions to all pools, net of voids"),
    ("retained", "retained by the operator, net of voids"),
    ("operator_funding", "operator funding"),
    ("paid", "prizes paid"),
    ("held", "prizes held for verification"),
)
# The two "retained" figures a reconciliation shows, told apart (DECISIONS.md, issue 21).
RETAINED_NOTE = ("Retained is the operator's share of each wager at the approved retained rate: {gross} on the wagers "
                 "accepted (the figure the approved-rate check uses), less {voided} given back with the voided "
                 "wagers, leaves {net} retained net of voids.")
NO_ACTIVITY = "No activity in this period"


def hand_name(hand: str) -> str:
    """A hand as people write it: royal_flush and ROYAL_FLUSH are "Royal flush"."""
    return hand.replace("_", " ").strip().capitalize()


def money(name: str, uc: int) -> dict[str, Any]:
    """`<name>_ucents` and `<name>_dollars` of an amount."""
    return {f"{name}_ucents": uc, f"{name}_dollars": dollars(uc)}


def cents(name: str, amount_cents: int) -> dict[str, Any]:
    """`<name>_cents` and `<name>_dollars` of an amount the API gives in cents."""
    return {f"{name}_cents": amount_cents, f"{name}_dollars": dollars(cents_uc(amount_cents))}


def when(name: str, ms: int, tz_name: str) -> dict[str, Any]:
    """`<name>_ms`, `<name>_utc` and `<name>_local` of an instant."""
    return {f"{name}_ms": ms, f"{name}_utc": utc_iso(ms), f"{name}_local": local_iso(ms, zone(tz_name))}


def expected_closing(pool: report_pb2.PoolReconciliation) -> int:
    """The closing balance the identity predicts from the opening and the movements."""
    return sum(m.sign * int(getattr(pool, f"{m.key}_ucents")) for m in MOVEMENTS[1:-1]) + pool.opening_ucents


def pool_dict(p: report_pb2.PoolReconciliation) -> Report:
    """A pool's movements (`MOVEMENTS`), its payouts by hand, and whether the client's arithmetic agrees."""
    d: Report = {"pool": p.pool, "hidden": p.hidden, "identity_holds": p.identity_holds}
    for m in MOVEMENTS:
        d |= money(m.key, int(getattr(p, f"{m.key}_ucents")))
    d |= money("difference", p.difference_ucents)
    predicted = expected_closing(p)
    d |= money("client_difference", p.closing_ucents - predicted)
    d["checked"] = predicted == p.closing_ucents and p.difference_ucents == p.closing_ucents - predicted
    d["payouts_by_hand"] = [
        {"hand": h.hand, "hand_name": hand_name(h.hand), "hits": h.hits, "rejected_hits": h.rejected_hits}
        | money("paid", h.paid_ucents) | money("returned", h.returned_ucents)
        for h in p.payouts_by_hand]
    return d


def link_dict(t: report_pb2.LinkTotals, pool_refunds_uc: int) -> Report:
    """The link's totals; `pool_refunds_uc` (what voids took back from the pools) splits "retained" into what the
    wagers accepted gave (`retained_gross`) and what the voids gave back (`retained_voided`)."""
    d: Report = {"wagers": t.wagers, "refunds": t.refunds, "identity_holds": t.identity_holds}
    for key, _ in LINK_AMOUNTS:
        d |= money(key, int(getattr(t, f"{key}_ucents")))
    voided = t.wagers_refunded_ucents - pool_refunds_uc
    d |= money("retained_voided", voided) | money("retained_gross", t.retained_ucents + voided)
    d["retained_note"] = RETAINED_NOTE.format(gross=exact(t.retained_ucents + voided), voided=exact(voided),
                                              net=exact(t.retained_ucents))
    # RULES.md §10: wagers accepted − wagers refunded = contributions to all pools + retained.
    d["checked"] = (t.wagers_accepted_ucents - t.wagers_refunded_ucents
                    == t.contributions_ucents + t.retained_ucents)
    return d


def hit_dict(h: report_pb2.ReportHit, tz_name: str) -> Report:
    """A hit with its hand's name, its approvers (two under dual control) and who rejected it."""
    return ({"hit_id": h.hit_id, "table_id": h.table_id, "round_id": h.round_id, "seat": h.seat, "hand": h.hand,
             "hand_name": hand_name(h.hand), "cards": list(h.cards), "pool": h.pool, "rule": h.rule,
             "status": h.status, "sequence": h.sequence, "approved_by": list(h.approved_by),
             "rejected_by": h.rejected_by}
            | cents("amount", h.amount_cents) | cents("funded_by_operator", h.funded_by_operator_cents)
            | money("pool_before", h.pool_before_ucents) | when("at", h.at_ms, tz_name))


def report_dict(rec: report_pb2.Reconciliation) -> Report:
    """A reconciliation as a plain dict, JSON-ready: every amount as integer µ¢ (`*_ucents`, or `*_cents` where
    the API has cents) and exact dollars (`*_dollars`), every time in ms, UTC and local."""
    tz = rec.time_zone
    pools = [pool_dict(p) for p in rec.pools]
    link = link_dict(rec.link, sum(p.refunds_ucents for p in rec.pools))
    d: Report = {
        "link_id": rec.link_id, "gaming_day": rec.gaming_day, "gaming_day_start": rec.gaming_day_start,
        "time_zone": tz, "first_sequence": rec.first_sequence, "last_sequence": rec.last_sequence,
        "entries": rec.entries, "all_hold": rec.all_hold, "no_activity": rec.entries == 0,
        "pools": pools, "link": link,
        "identities": [{"name": i.name, "rule": i.rule, "expression": i.expression, "holds": i.holds,
                        "in_dollars": in_dollars(i, pools, link)} for i in rec.identities],
        "hits": [hit_dict(h, tz) for h in rec.hits],
        "hits_total": max(rec.hits_total, len(rec.hits)),
        "balances": [{"pool": b.pool, "sequence": b.sequence} | when("at", b.at_ms, tz)
                     | money("balance", b.balance_ucents) for b in rec.balances],
    }
    d |= when("from", rec.from_ms, tz) | when("to", rec.to_ms, tz) | when("generated_at", rec.generated_at_ms, tz)
    d["client_checked"] = link["checked"] and all(p["checked"] for p in pools)
    d["verdict_holds"] = verdict(d)
    # the program that produced the report (docs/SERVICE.md, Software identity and field verification)
    d["software"] = software_identity().as_dict()
    return d


def in_dollars(i: report_pb2.Identity, pools: list[Report], link: Report) -> str:
    """An identity the client can restate from the figures, in exact dollars, only the movements that moved; the
    server's own words (exact µ¢, `expression`) for any other or one that fails."""
    by_name = {f"pool {p['pool']}": p for p in pools}
    if i.name in by_name and i.holds:
        p = by_name[i.name]
        terms = [f"{'+' if m.sign > 0 else '−'} {m.label} {exact(p[f'{m.key}_ucents'])}"
                 for m in MOVEMENTS[1:-1] if p[f"{m.key}_ucents"]]
        return " ".join([f"opening {exact(p['opening_ucents'])}", *terms, f"= closing {exact(p['closing_ucents'])}"])
    if i.name == "link" and i.holds:
        return (f"wagers accepted {exact(link['wagers_accepted_ucents'])} − refunded "
                f"{exact(link['wagers_refunded_ucents'])} = contributions {exact(link['contributions_ucents'])} + "
                f"retained {exact(link['retained_ucents'])} (net of voids)")
    name = i.name.removesuffix(" at the approved rates")
    if name != i.name and i.holds:
        pool = next((p for p in pools if p["pool"] == name), None)
        if pool is not None:
            return f"contributions {exact(pool['contributions_ucents'])} = wagers accepted × {name}'s approved rate"
        if name == "retained":
            return (f"retained {exact(link['retained_gross_ucents'])} (before voids) = wagers accepted × the "
                    "approved retained rate")
    return i.expression


def verdict(report: Report) -> bool:
    """Whether the period reconciles: the server says every identity holds, each identity it lists holds,
    and the client's own arithmetic agrees."""
    return bool(report["all_hold"] and report["client_checked"]
                and all(i["holds"] for i in report["identities"]))


def liability_dict(liab: report_pb2.Liability) -> Report:
    """What the pools owe players now, as a plain dict (amounts as in `report_dict`)."""
    return ({"link_id": liab.link_id, "sequence": liab.sequence,
             "pools": [{"pool": p.pool, "hidden": p.hidden} | money("balance", p.balance_ucents)
                       | cents("reset", p.reset_cents) for p in liab.pools],
             "pending_hits": [hit_dict(h, "UTC") for h in liab.pending_hits]}
            | when("at", liab.at_ms, "UTC") | money("pools", liab.pools_ucents) | money("reserve", liab.reserve_ucents)
            | money("pending", liab.pending_ucents) | cents("reset_values", liab.reset_values_cents)
            | cents("reset_owed_by_operator", liab.reset_owed_by_operator_cents)
            | cents("minimum_shortfall", liab.minimum_shortfall_cents)
            | money("owed_to_players", liab.owed_to_players_ucents))


def verify_dict(resp: report_pb2.VerifyLedgerResponse) -> Report:
    """The ledger's verification as a plain dict."""
    return {"link_id": resp.link_id, "ok": resp.ok, "entries": resp.entries, "chain_ok": resp.chain_ok,
            "balanced": resp.balanced, "summaries_ok": resp.summaries_ok, "checkpoints": resp.checkpoints,
            "first_altered_sequence": resp.first_altered_sequence, "problems": list(resp.problems),
            "redis_sequence": resp.redis_sequence,
            "pools": [{"pool": p.pool, "agrees": p.agrees} | money("ledger", p.ledger_ucents)
                      | money("redis", p.redis_ucents) for p in resp.pools]}
