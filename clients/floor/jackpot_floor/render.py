"""What `jackpot-floor` prints, as pure functions of the floor's records and the time now: human tables
(dollars and cents, ages, hand names) or JSON for machines. No I/O, so tests call them directly. Free text
(reasons, refs, names) is drawn visibly (`visible`): a line break or an escape sequence in it never makes a row
of its own nor reaches the terminal raw."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from jackpotd.domain.ids import visible, visible_json

from .calls import PAID, PENDING, REJECTED, AuditEntry, Changed, Decision, Hit, Pool, Table

UC_PER_CENT = 1_000_000
SUITS = {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}
RANKS = {"T": "10"}
NONE = "-"


def money(cents: int) -> str:
    """Dollars and cents as people write them: $12,345.67, -$0.05."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}${whole:,}.{frac:02d}"


def sub_cent(balance_ucents: int) -> str:
    """What an exact µ¢ balance holds beyond its whole cents, in cents ("+0.5¢"); empty when nothing."""
    rest = balance_ucents % UC_PER_CENT
    return f"+0.{rest:06d}".rstrip("0") + "¢" if rest else ""


def hand_name(hand: str) -> str:
    """A hand as the floor says it: "royal_flush" reads "Royal flush"."""
    words = hand.replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:] if words else NONE


def card_text(card: str) -> str:
    """A card as printed on it: "Ts" reads "10♠"."""
    if len(card) != 2:
        return card
    return RANKS.get(card[0].upper(), card[0].upper()) + SUITS.get(card[1].lower(), card[1])


def cards_text(cards: Sequence[str]) -> str:
    return " ".join(card_text(c) for c in cards) or NONE


def age(now_ms: int, at_ms: int) -> str:
    """How long ago, briefly: "12 s", "3 min", "2 h 5 min", "4 d"; "-" when unknown (0)."""
    if at_ms <= 0:
        return NONE
    seconds = max(0, now_ms - at_ms) // 1000
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{hours // 24} d"


def instant(at_ms: int) -> str:
    """A time on the trail, in UTC to the second: 2026-12-02 00:13:05Z."""
    if at_ms <= 0:
        return NONE
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def approvals(approved_by: Sequence[str], needed: int) -> str:
    """"1 of 2": the approvals a hit has of those it needs."""
    return f"{len(approved_by)} of {max(needed, 1)}"


def grid(headers: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int] = frozenset()) -> str:
    """A plain text table, columns padded to their widest cell (those in `right` aligned right); one line a row,
    whatever the cells hold."""
    headers = [visible(h) for h in headers]
    rows = [[visible(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)]) + "\n"


def to_json(value: Any, acting_as: str | None = None) -> str:
    """Records as JSON, one document (lists of objects; tuples as arrays); an act's record with `acting_as`, whom
    the credential named. No raw control character (`visible_json`), yet it decodes to the exact text."""
    if isinstance(value, list):
        data: Any = [_plain(v) for v in value]
    else:
        data = _plain(value)
        if acting_as is not None:
            data["acting_as"] = acting_as
    return visible_json(data, indent=2) + "\n"


def _plain(record: Any) -> dict[str, Any]:
    data: dict[str, Any] = asdict(record)
    if isinstance(record, AuditEntry):
        data["who"] = record.who
    return data


def render_hits(hits: Sequence[Hit], now_ms: int, link_id: str, pending_only: bool) -> str:
    """Hits as a table: who and what won, how much, how long ago, and the approvals it has."""
    if not hits:
        return f"no pending hits on link {link_id}\n" if pending_only else f"no hits on link {link_id}\n"
    headers = ["HIT", "TABLE", "SEAT", "HAND", "CARDS", "POOL", "AMOUNT", "AGE", "STATUS", "APPROVALS"]
    rows = [[h.hit_id, h.table_id, str(h.seat), hand_name(h.hand), cards_text(h.cards), h.pool,
             money(h.amount_cents), age(now_ms, h.at_ms), h.status, _hit_approvals(h)] for h in hits]
    return grid(headers, rows, right=frozenset({2, 6, 7}))


def _hit_approvals(h: Hit) -> str:
    if h.status == PENDING:
        have = approvals(h.approved_by, h.approvals_needed)
        return f"{have} ({', '.join(h.approved_by)})" if h.approved_by else have
    if h.status == REJECTED:
        return f"rejected by {h.rejected_by}" if h.rejected_by else NONE
    return ", ".join(h.approved_by) or "not needed"


def acted_as(who: str) -> str:
    """" as supervisor:bob": whom an act was done as (the credential's holder); empty when it cannot be read."""
    return f" as {visible(who)}" if who else ""


def render_decision(d: Decision, who: str = "", act: str = "approved") -> str:
    """What an approval or a rejection did, as whom (`who`, the credential's holder), in a sentence:
    "approved hit H as supervisor:bob (1 of 2 approvals); a second supervisor must approve: $10,000.00 ..."."""
    what = f"{money(d.amount_cents)} {hand_name(d.hand)} from {d.pool or NONE}"
    done = f"{act} hit {d.hit_id}{acted_as(who)}"
    if d.status == PAID:
        by = f", approved by {' and '.join(d.approved_by)}" if d.approved_by else ""
        line = f"{done}: PAID {what}{by}"
    elif d.status == REJECTED:
        back = f"; {money(d.returned_to_pool_ucents // UC_PER_CENT)} back to {d.pool}" if d.pool else ""
        line = f"{done}: REJECTED {what}{back}"
    elif d.status == PENDING:
        by = f": {', '.join(d.approved_by)}" if d.approved_by else ""
        missing = max(d.approvals_needed - len(d.approved_by), 0)
        rest = ("a second supervisor must approve" if missing == 1 else
                f"{missing} more supervisors must approve" if missing else "awaiting payment")
        line = f"{done} ({approvals(d.approved_by, d.approvals_needed)} approvals recorded{by}); {rest}: {what}"
    else:
        line = f"{done}: {d.status} {what}"
    return visible(line) + "\n"


def render_tables(tables: Sequence[Table], now_ms: int, link_id: str) -> str:
    """The link's tables: connected or not, suspended or not, and how long since their last round."""
    if not tables:
        return f"no tables on link {link_id}\n"
    rows = [[t.table_id, "online" if t.online else "offline", "SUSPENDED" if t.suspended else "open",
             age(now_ms, t.last_round_at_ms) if t.last_round_at_ms else "none yet"] for t in tables]
    return grid(["TABLE", "CONNECTION", "JACKPOT WAGERS", "LAST ROUND"], rows, right=frozenset({3}))


def render_pools(pools: Sequence[Pool], link_id: str) -> str:
    """The link's pools in dollars and cents, with any fraction of a cent the exact balance holds beyond them."""
    if not pools:
        return f"no pools on link {link_id}\n"
    rows = [[p.pool, money(p.amount_cents), sub_cent(p.balance_ucents)] for p in pools]
    if not any(r[2] for r in rows):
        return grid(["POOL", "AMOUNT"], [r[:2] for r in rows], right=frozenset({1}))
    return grid(["POOL", "AMOUNT", "SUB-CENT"], rows, right=frozenset({1})) + (
        "SUB-CENT: the exact balance beyond the whole cents shown (and paid); it stays in the pool.\n")


def render_changed(act: str, table_id: str, changed: Changed, who: str = "") -> str:
    """A suspension or resumption, confirmed, with whom it was done as."""
    return visible(f"table {table_id} {act}{acted_as(who)} (link {changed.link_id}, ledger entry "
                   f"{changed.sequence})") + "\n"


def render_audit(entries: Sequence[AuditEntry], link_id: str) -> str:
    """The trail, newest first: when, who (and the console they acted through), what, why, and the outcome."""
    if not entries:
        return f"no administrative acts on link {link_id}\n"
    rows = [[instant(a.at_ms), a.who, a.method, a.table_id or NONE, a.reason or NONE, a.approval_ref or NONE,
             a.outcome if a.outcome == "OK" else f"{a.outcome}: {a.detail}"] for a in entries]
    return grid(["WHEN (UTC)", "WHO", "ACT", "TABLE", "REASON", "REF", "OUTCOME"], rows)
