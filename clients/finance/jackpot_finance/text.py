"""Plain-text reports for a terminal or an e-mail: the reconciliation, the liability, the verification."""

from __future__ import annotations

import json
import unicodedata

from .model import LINK_AMOUNTS, MOVEMENTS, Report
from .money import cents_uc, display, grouped

SIGNS = {0: " ", 1: "+", -1: "−"}


def as_json(report: Report) -> str:
    """Any report dict as JSON: sorted keys, integers exact, UTF-8 text kept as is."""
    return json.dumps(report, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def printable(text: str) -> str:
    """Control characters (but the line ends) shown as \\xNN: callers' ids cannot drive the terminal with
    escape sequences."""
    return "".join(c if c == "\n" or unicodedata.category(c) != "Cc" else f"\\x{ord(c):02x}" for c in text)


def tick(holds: bool) -> str:
    return "✓" if holds else "✗"


def _amount_line(label: str, uc: int, sign: str = " ") -> str:
    return f"  {sign} {label:<26} {display(uc):>28} {grouped(uc):>30} µ¢"


def reconciliation_text(report: Report) -> str:
    """The reconciliation: the period, a table per pool, the link's totals, the identities and the hits."""
    day = f"gaming day {report['gaming_day']} (starting {report['gaming_day_start']} local)" \
        if report["gaming_day"] else "period"
    lines = [
        f"Reconciliation of link {report['link_id']}, {day}",
        f"  from  {report['from_local']}  ({report['from_utc']})",
        f"  to    {report['to_local']}  ({report['to_utc']}), exclusive",
        f"  time zone {report['time_zone'] or 'UTC'}; {report['entries']} entries"
        + (f", sequences {report['first_sequence']}..{report['last_sequence']}" if report["entries"] else ""),
        f"  generated at {report['generated_at_local']} ({report['generated_at_utc']})",
        "",
    ]
    for p in report["pools"]:
        lines.append(f"Pool {p['pool']}" + (" (hidden)" if p["hidden"] else ""))
        for m in MOVEMENTS:
            if m.key == "closing":
                lines.append("  " + "-" * 92)
            lines.append(_amount_line(m.label, p[f"{m.key}_ucents"], "=" if m.key == "closing" else SIGNS[m.sign]))
            if m.key == "payouts":
                for h in p["payouts_by_hand"]:
                    rejected = f", {h['rejected_hits']} rejected returning {display(h['returned_ucents'])}" \
                        if h["rejected_hits"] else ""
                    lines.append(f"      {h['hand']}: {h['hits']} hit(s), {display(h['paid_ucents'])}{rejected}")
        holds = p["identity_holds"] and p["checked"]
        detail = "" if holds else (f" (server: difference {grouped(p['difference_ucents'])} µ¢; client: "
                                   f"{grouped(p['client_difference_ucents'])} µ¢)")
        lines += [f"  identity {tick(holds)}{detail}", ""]
    link = report["link"]
    lines.append(f"Link {report['link_id']}: {link['wagers']} wager(s) accepted, {link['refunds']} refunded")
    lines += [_amount_line(label, link[f"{key}_ucents"]) for key, label in LINK_AMOUNTS]
    lines += [f"  identity {tick(link['identity_holds'] and link['checked'])} (accepted − refunded = "
              "contributions + retained)", "", "Identities"]
    lines += [f"  {tick(i['holds'])} {i['name']} ({i['rule']}): {i['expression']}" for i in report["identities"]]
    if not report["client_checked"]:
        lines.append("  ✗ the client's own arithmetic does not agree with the figures (see the pools marked ✗)")
    lines.append("")
    lines.append(f"Hits ({len(report['hits'])})")
    for h in report["hits"]:
        funded = f", operator funded {display(cents_uc(h['funded_by_operator_cents']))}" \
            if h["funded_by_operator_cents"] else ""
        lines.append(f"  #{h['sequence']} {h['at_local']} table {h['table_id']} round {h['round_id']} seat "
                     f"{h['seat']}: {h['hand']} [{' '.join(h['cards'])}] {display(cents_uc(h['amount_cents']))} "
                     f"from {h['pool']} (before {display(h['pool_before_ucents'])}){funded}; {h['rule']}; "
                     f"{h['status']}")
    lines += ["", "ALL IDENTITIES HOLD" if report["verdict_holds"] else "NOT RECONCILED: AN IDENTITY FAILS", ""]
    return printable("\n".join(lines))


def liability_text(report: Report) -> str:
    """What the pools owe players now."""
    lines = [f"Liability of link {report['link_id']} as of entry {report['sequence']} ({report['at_utc']})"]
    for p in report["pools"]:
        name = p["pool"] + (" (hidden)" if p["hidden"] else "")
        lines.append(f"  {name:<18} {display(p['balance_ucents']):>28}   "
                     f"resets to {display(cents_uc(p['reset_cents']))}")
    lines += [
        _amount_line("visible pools", report["pools_ucents"]),
        _amount_line("RESERVE", report["reserve_ucents"]),
        _amount_line("pending hits", report["pending_ucents"]),
        _amount_line("owed to players", report["owed_to_players_ucents"], "="),
        f"  reset values {display(cents_uc(report['reset_values_cents']))}, owed by the operator beyond RESERVE "
        f"{display(cents_uc(report['reset_owed_by_operator_cents']))}",
        f"  guaranteed minimums beyond the pools (the operator adds them if won now, §5.7): "
        f"{display(cents_uc(report['minimum_shortfall_cents']))}",
        f"Pending hits ({len(report['pending_hits'])})",
    ]
    lines += [f"  {h['hit_id']}: table {h['table_id']} round {h['round_id']} seat {h['seat']} {h['hand']} "
              f"{display(cents_uc(h['amount_cents']))} from {h['pool']} ({h['at_utc']})"
              for h in report["pending_hits"]]
    return printable("\n".join(lines) + "\n")


def verify_text(report: Report) -> str:
    """The ledger's verification: each check, the problems, the first altered entry."""
    altered = report["first_altered_sequence"]
    lines = [
        f"Ledger of link {report['link_id']}: {report['entries']} entries",
        f"  {tick(report['chain_ok'])} hash chain ({report['checkpoints']} checkpoint(s) outside the database)",
        f"  {tick(report['balanced'])} every entry balances",
        f"  {tick(report['summaries_ok'])} summaries equal what the entries make them",
        f"  {tick(all(p['agrees'] for p in report['pools']))} Redis agrees with the ledger "
        f"(Redis at entry {report['redis_sequence']})",
    ]
    lines += [f"      {tick(p['agrees'])} {p['pool']:<10} ledger {display(p['ledger_ucents']):>24}  "
              f"Redis {display(p['redis_ucents']):>24}" for p in report["pools"]]
    if altered:
        lines.append(f"  first altered entry: sequence {altered}")
    if report["problems"]:
        lines.append("Problems")
        lines += [f"  - {problem}" for problem in report["problems"]]
    lines.append("LEDGER OK" if report["ok"] else "LEDGER NOT OK")
    return printable("\n".join(lines) + "\n")
