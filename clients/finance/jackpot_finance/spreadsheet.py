"""CSV that a spreadsheet opens as it is (Excel, LibreOffice): the reconciliation in sections, and the ledger
exported one row per posting, with a row per hit beside its entry's postings.

Files are UTF-8 with a byte-order mark (`ENCODING`): Excel needs the BOM to read a CSV as UTF-8 (without it
µ¢ and ✓ come out garbled); LibreOffice and Python's csv module (encoding "utf-8-sig") are fine either way.
Amounts are plain exact decimals (no $, no thousands separators; 1043.35, or 1043.355 when a pool's balance has
a fraction of a cent) so a spreadsheet takes them as numbers; note that a spreadsheet keeps about 15 significant
digits, so the exact figures are the text of the file, and the µ¢ columns beside them.

Text cells are guarded against formula injection (OWASP, CSV injection): ids, rules and hands come from
callers, and a cell starting with = + - @ tab or CR would be run as a formula; it gets a leading apostrophe.
Numeric cells are written by this module from integers and are left alone (a negative amount stays a number)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from jackpotd.api.gen.jackpot.v1 import report_pb2

from .model import LINK_AMOUNTS, MOVEMENTS, Report, hand_name
from .money import cents_uc, dollars
from .times import utc_iso

ENCODING = "utf-8-sig"  # UTF-8 with a BOM, for Excel
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def text(value: object) -> str:
    """A text cell, made inert: a leading apostrophe when it would start a formula."""
    s = str(value)
    return "'" + s if s.startswith(FORMULA_STARTS) else s


def to_csv(rows: Iterable[Sequence[object]]) -> str:
    """Rows as CSV text (CRLF line ends, as RFC 4180 and Excel have them)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


def mark(holds: bool) -> str:
    """✓ or ✗."""
    return "✓" if holds else "✗"


RETAINED_COLUMNS = (("retained_gross", "retained from wagers accepted, before voids"),
                    ("retained_voided", "retained given back with voided wagers"))


def _verdict(report: Report) -> str:
    if not report["verdict_holds"]:
        return "IDENTITY FAILS"
    return "no activity in this period; all identities hold" if report["no_activity"] else "all identities hold"


def reconciliation_rows(report: Report) -> list[list[Any]]:
    """The reconciliation as rows: a header section, one row per pool, the link's row, the identities and the
    hits, each section with its own header row and a blank row between them."""
    rows: list[list[Any]] = [
        ["report", "link", "gaming day", "gaming day start", "time zone", "from (local)", "to (local)",
         "from (UTC)", "to (UTC)", "first sequence", "last sequence", "entries", "generated at (UTC)", "verdict"],
        ["reconciliation", text(report["link_id"]), text(report["gaming_day"]), text(report["gaming_day_start"]),
         text(report["time_zone"]), text(report["from_local"]), text(report["to_local"]), text(report["from_utc"]),
         text(report["to_utc"]), report["first_sequence"], report["last_sequence"], report["entries"],
         text(report["generated_at_utc"]), _verdict(report)],
        [],
        ["pool", "hidden"] + [f"{m.label} ($)" for m in MOVEMENTS] + [f"{m.label} (µ¢)" for m in MOVEMENTS]
        + ["difference (µ¢)", "identity"],
    ]
    for p in report["pools"]:
        rows.append([text(p["pool"]), "yes" if p["hidden"] else "no"]
                    + [p[f"{m.key}_dollars"] for m in MOVEMENTS] + [p[f"{m.key}_ucents"] for m in MOVEMENTS]
                    + [p["difference_ucents"], mark(p["identity_holds"] and p["checked"])])
    link = report["link"]
    amounts = (*LINK_AMOUNTS, *RETAINED_COLUMNS)
    rows += [[], ["link", "wagers", "refunds"] + [f"{label} ($)" for _, label in amounts]
             + [f"{label} (µ¢)" for _, label in amounts] + ["identity", "note"],
             [text(report["link_id"]), link["wagers"], link["refunds"]]
             + [link[f"{k}_dollars"] for k, _ in amounts] + [link[f"{k}_ucents"] for k, _ in amounts]
             + [mark(link["identity_holds"] and link["checked"]), text(link["retained_note"])]]
    rows += [[], ["identity", "rule", "in dollars", "expression (µ¢)", "holds"]]
    rows += [[text(i["name"]), text(i["rule"]), text(i["in_dollars"]), text(i["expression"]), mark(i["holds"])]
             for i in report["identities"]]
    rows += [[], ["hit", "round", "table", "seat", "hand", "cards", "pool", "amount ($)", "amount (cents)",
                  "funded by operator ($)", "pool before ($)", "pool before (µ¢)", "rule", "status", "approved by",
                  "rejected by", "sequence", "time (UTC)", "time (local)"]]
    rows += [[text(h["hit_id"]), text(h["round_id"]), text(h["table_id"]), h["seat"], text(h["hand_name"]),
              text(" ".join(h["cards"])), text(h["pool"]), h["amount_dollars"], h["amount_cents"],
              h["funded_by_operator_dollars"], h["pool_before_dollars"], h["pool_before_ucents"], text(h["rule"]),
              text(h["status"]), text("; ".join(h["approved_by"])), text(h["rejected_by"]), h["sequence"],
              text(h["at_utc"]), text(h["at_local"])] for h in report["hits"]]
    if "software" in report:  # the program that produced the report
        software = report["software"]
        values = ["" if v is None else str(v) for v in software.values()]
        rows += [[], ["software", *map(text, software)], ["produced by", *map(text, values)]]
    return rows


def reconciliation_csv(report: Report) -> str:
    return to_csv(reconciliation_rows(report))


# ---- the ledger, exported ----------------------------------------------------------------------------------

# Each entry's postings, one row each (`row` "posting"), then one row per hit its entry settled or decided (`row`
# "hit"), whose posting columns are empty: a royal flush reads as its hand, seat and cards, not only as the netted
# postings of its round. An entry with neither has one row (`row` "entry").
ENTRY_COLUMNS = ("link_id", "sequence", "time_utc", "kind", "request_id", "table_id", "round_id")
POSTING_COLUMNS = ("posting_index", "account", "amount_ucents", "amount_dollars", "balance_after_ucents",
                   "balance_after_dollars")
HIT_COLUMNS = ("hit_id", "seat", "hand", "cards", "hit_pool", "hit_amount_dollars", "pool_before_dollars",
               "pool_before_ucents", "rule", "status", "approved_by", "rejected_by")
EXPORT_COLUMNS = (*ENTRY_COLUMNS, "row", *POSTING_COLUMNS, *HIT_COLUMNS, "hash_hex", "prev_hash_hex")
Hits = dict[str, dict[str, Any]]


def _who(audit: dict[str, Any]) -> str:
    """Who made a decision, as the audit names them: "supervisor:alice" or "console:floor-1 for supervisor:alice"."""
    actor, agent = str(audit.get("actor", "")), str(audit.get("agent", ""))
    return f"{agent} for {actor}" if agent and actor else actor


def entry_hits(entry: report_pb2.LedgerEntry, seen: Hits) -> list[dict[str, Any]]:
    """The hits an entry settled (as its settle recorded them: PAID or PENDING) or decided (PAID or REJECTED, with
    who), read from the entry as chained (`entry_json`). `seen` keeps the hits met earlier in the export, so that a
    decision row has its hit's hand and cards too."""
    return json_hits(entry.entry_json, seen)


def json_hits(entry_json: str, seen: Hits) -> list[dict[str, Any]]:
    """`entry_hits` of an entry's text (`entry_json`)."""
    if '"hits"' not in entry_json and '"decision"' not in entry_json:
        return []  # most entries (commits, voids) settle no hit: not worth parsing
    try:
        body = json.loads(entry_json)
    except ValueError:
        return []
    if not isinstance(body, dict):
        return []
    out = []
    for h in body.get("hits") or []:
        hit = {**h, "approved_by": "", "rejected_by": ""}
        seen[str(h.get("hit_id", ""))] = hit
        out.append(hit)
    decision = body.get("decision")
    if isinstance(decision, dict):
        who = _who(body.get("audit") or {})
        status = str(decision.get("status", ""))
        hit = {**seen.get(str(decision.get("hit_id", "")), {}), **decision, "status": status,
               "approved_by": "" if status == "REJECTED" else who, "rejected_by": who if status == "REJECTED" else ""}
        out.append(hit)
    return out


def _hit_cells(h: dict[str, Any]) -> list[Any]:
    before = h.get("pool_before_uc")
    amount = h.get("amount_cents")
    return [text(h.get("hit_id", "")), h.get("seat", ""), text(hand_name(str(h.get("hand", "")))),
            text(" ".join(h.get("cards") or [])), text(h.get("pool", "")),
            "" if amount is None else dollars(cents_uc(int(amount))), "" if before is None else dollars(int(before)),
            "" if before is None else int(before), text(h.get("rule", "")), text(h.get("status", "")),
            text(h["approved_by"]), text(h["rejected_by"])]


@lru_cache(maxsize=4096)
def _cell(value: str) -> str:
    """`text` of a value an export repeats on most of its rows (accounts, kinds): made once."""
    return text(value)


NO_HIT = ("",) * len(HIT_COLUMNS)
NO_POSTING = ("",) * len(POSTING_COLUMNS)


def export_rows(entry: report_pb2.LedgerEntry, seen: Hits | None = None) -> list[list[Any]]:
    """An entry's rows (`EXPORT_COLUMNS`): one per posting with the entry's columns repeated, then one per hit it
    settled or decided; an entry with neither gets one row. Pass the same `seen` for a whole export."""
    head = [text(entry.link_id), entry.sequence, text(utc_iso(entry.at_ms)), _cell(entry.kind),
            text(entry.request_id), text(entry.table_id), text(entry.round_id)]
    tail = [text(entry.hash_hex), text(entry.prev_hash_hex)]
    after = [*NO_HIT, *tail]
    rows = [[*head, "posting", i, _cell(p.account), p.amount_ucents, dollars(p.amount_ucents),
             p.balance_after_ucents, dollars(p.balance_after_ucents), *after] for i, p in enumerate(entry.postings)]
    rows += hit_rows(head, tail, entry_hits(entry, {} if seen is None else seen))
    return rows or [[*head, "entry", *NO_POSTING, *NO_HIT, *tail]]


def hit_rows(head: list[Any], tail: list[Any], hits: list[dict[str, Any]]) -> list[list[Any]]:
    """An entry's hit rows: its cells `head` (ENTRY_COLUMNS) and `tail` (the hashes) around each hit's."""
    return [[*head, "hit", *NO_POSTING, *_hit_cells(h), *tail] for h in hits]
