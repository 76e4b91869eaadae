"""CSV that a spreadsheet opens as it is (Excel, LibreOffice): the reconciliation in sections, and the ledger
exported one row per posting.

Files are UTF-8 with a byte-order mark (`ENCODING`): Excel needs the BOM to read a CSV as UTF-8 (without it
µ¢ and ✓ come out garbled); LibreOffice and Python's csv module (encoding "utf-8-sig") are fine either way.
Amounts are plain decimals (no $, no thousands separators) so a spreadsheet takes them as numbers; note that
a spreadsheet keeps about 15 significant digits, so the exact figures are the text of the file.

Text cells are guarded against formula injection (OWASP, CSV injection): ids, rules and hands come from
callers, and a cell starting with = + - @ tab or CR would be run as a formula; it gets a leading apostrophe.
Numeric cells are written by this module from integers and are left alone (a negative amount stays a number)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from jackpotd.api.gen.jackpot.v1 import report_pb2

from .model import LINK_AMOUNTS, MOVEMENTS, Report
from .money import dollars
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
    return "✓" if holds else "✗"


def reconciliation_rows(report: Report) -> list[list[Any]]:
    """The reconciliation as rows: a header section, one row per pool, the link's row, the identities and the
    hits, each section with its own header row and a blank row between them."""
    rows: list[list[Any]] = [
        ["report", "link", "gaming day", "gaming day start", "time zone", "from (local)", "to (local)",
         "from (UTC)", "to (UTC)", "first sequence", "last sequence", "entries", "generated at (UTC)", "verdict"],
        ["reconciliation", text(report["link_id"]), text(report["gaming_day"]), text(report["gaming_day_start"]),
         text(report["time_zone"]), text(report["from_local"]), text(report["to_local"]), text(report["from_utc"]),
         text(report["to_utc"]), report["first_sequence"], report["last_sequence"], report["entries"],
         text(report["generated_at_utc"]), "all identities hold" if report["verdict_holds"] else "IDENTITY FAILS"],
        [],
        ["pool", "hidden"] + [f"{m.label} ($)" for m in MOVEMENTS] + [f"{m.label} (µ¢)" for m in MOVEMENTS]
        + ["difference (µ¢)", "identity"],
    ]
    for p in report["pools"]:
        rows.append([text(p["pool"]), "yes" if p["hidden"] else "no"]
                    + [p[f"{m.key}_dollars"] for m in MOVEMENTS] + [p[f"{m.key}_ucents"] for m in MOVEMENTS]
                    + [p["difference_ucents"], mark(p["identity_holds"] and p["checked"])])
    link = report["link"]
    rows += [[], ["link", "wagers", "refunds"] + [f"{label} ($)" for _, label in LINK_AMOUNTS]
             + [f"{label} (µ¢)" for _, label in LINK_AMOUNTS] + ["identity"],
             [text(report["link_id"]), link["wagers"], link["refunds"]]
             + [link[f"{k}_dollars"] for k, _ in LINK_AMOUNTS] + [link[f"{k}_ucents"] for k, _ in LINK_AMOUNTS]
             + [mark(link["identity_holds"] and link["checked"])]]
    rows += [[], ["identity", "rule", "expression", "holds"]]
    rows += [[text(i["name"]), text(i["rule"]), text(i["expression"]), mark(i["holds"])] for i in report["identities"]]
    rows += [[], ["hit", "round", "table", "seat", "hand", "cards", "pool", "amount ($)", "amount (cents)",
                  "funded by operator ($)", "pool before ($)", "pool before (µ¢)", "rule", "status", "sequence",
                  "time (UTC)", "time (local)"]]
    rows += [[text(h["hit_id"]), text(h["round_id"]), text(h["table_id"]), h["seat"], text(h["hand"]),
              text(" ".join(h["cards"])), text(h["pool"]), h["amount_dollars"], h["amount_cents"],
              h["funded_by_operator_dollars"], h["pool_before_dollars"], h["pool_before_ucents"], text(h["rule"]),
              text(h["status"]), h["sequence"], text(h["at_utc"]), text(h["at_local"])] for h in report["hits"]]
    return rows


def reconciliation_csv(report: Report) -> str:
    return to_csv(reconciliation_rows(report))


# ---- the ledger, exported ----------------------------------------------------------------------------------

EXPORT_COLUMNS = ("link_id", "sequence", "time_utc", "kind", "request_id", "table_id", "round_id",
                  "posting_index", "account", "amount_ucents", "amount_dollars", "balance_after_ucents",
                  "balance_after_dollars", "hash_hex", "prev_hash_hex")


def export_rows(entry: report_pb2.LedgerEntry) -> list[list[Any]]:
    """An entry's rows: one per posting with the entry's columns repeated; an entry without postings gets one
    row whose posting columns are empty."""
    head = [text(entry.link_id), entry.sequence, text(utc_iso(entry.at_ms)), text(entry.kind),
            text(entry.request_id), text(entry.table_id), text(entry.round_id)]
    tail = [text(entry.hash_hex), text(entry.prev_hash_hex)]
    if not entry.postings:
        return [[*head, "", "", "", "", "", "", *tail]]
    return [[*head, i, text(p.account), p.amount_ucents, dollars(p.amount_ucents), p.balance_after_ucents,
             dollars(p.balance_after_ucents), *tail] for i, p in enumerate(entry.postings)]
