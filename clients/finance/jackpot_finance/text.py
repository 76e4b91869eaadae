"""Plain-text reports for a terminal or an e-mail: the reconciliation (dollars and cents, each sub-cent remainder
beside its amount), the liability (exact), the verification (exact)."""

from __future__ import annotations

from collections.abc import Sequence

from jackpotd.domain.ids import visible, visible_json
from jackpotd.software.identity import SoftwareIdentity

from .model import LINK_AMOUNTS, MOVEMENTS, NO_ACTIVITY, Report
from .money import SUBCENT_NOTE, UC_PER_CENT, cents_uc, display, exact, grouped, subcent

SIGNS = {0: " ", 1: "+", -1: "−"}


def as_json(report: Report) -> str:
    """Any report dict as JSON: sorted keys, integers exact, UTF-8 text kept as is but for control characters
    (escaped: `visible_json`)."""
    return visible_json(report, sort_keys=True, indent=2) + "\n"


def printable(lines: Sequence[str]) -> str:
    """The report's lines, one a line: control characters and line breaks within a line (callers' ids and names)
    drawn visibly (`visible`), so they can neither drive the terminal nor start a line of their own."""
    return "\n".join(visible(line) for line in lines)


def tick(holds: bool) -> str:
    return "✓" if holds else "✗"


AMOUNT_WIDTH = 18


def _amount_line(label: str, uc: int, sign: str = " ") -> str:
    """A movement in dollars and cents, with its sub-cent remainder (if any) beside it."""
    return f"  {sign} {label:<42} {display(uc):>{AMOUNT_WIDTH}} {subcent(uc)}".rstrip()


def _exact_line(label: str, uc: int, sign: str = " ") -> str:
    """An amount exactly, in dollars (as many places as it needs) and in µ¢."""
    return f"  {sign} {label:<26} {exact(uc):>24} {grouped(uc):>26} µ¢"


def has_subcents(report: Report) -> bool:
    """Whether any amount of the reconciliation has a fraction of a cent that its dollars and cents leave out."""
    pools = any(p[f"{m.key}_ucents"] % UC_PER_CENT for p in report["pools"] for m in MOVEMENTS)
    link = any(report["link"][f"{key}_ucents"] % UC_PER_CENT for key, _ in LINK_AMOUNTS)
    return pools or link or any(h["pool_before_ucents"] % UC_PER_CENT for h in report["hits"])


def who_decided(hit: Report) -> str:
    """", approved by supervisor:alice and supervisor:bob" (or rejected by): empty when nobody has yet."""
    approved = f", approved by {' and '.join(hit['approved_by'])}" if hit["approved_by"] else ""
    return approved + (f", rejected by {hit['rejected_by']}" if hit["rejected_by"] else "")


def _period(report: Report) -> list[str]:
    day = f"gaming day {report['gaming_day']} (starting {report['gaming_day_start']} local)" \
        if report["gaming_day"] else "period"
    return [
        f"Reconciliation of link {report['link_id']}, {day}",
        f"  from  {report['from_local']}  ({report['from_utc']})",
        f"  to    {report['to_local']}  ({report['to_utc']}), exclusive",
        f"  time zone {report['time_zone'] or 'UTC'}; {report['entries']} entries"
        + (f", sequences {report['first_sequence']}..{report['last_sequence']}" if report["entries"] else ""),
        f"  generated at {report['generated_at_local']} ({report['generated_at_utc']})",
        *([f"  produced by {SoftwareIdentity.from_dict(report['software']).line()}"] if "software" in report
          else []),
        "",
    ]


def _quiet(report: Report) -> str:
    """A period without a single ledger entry whose identities hold: the note and each pool's balance."""
    lines = [*_period(report), f"{NO_ACTIVITY}: no wagers, voids, hits, funding or transfers. Each pool's "
             "balance was the same throughout:"]
    lines += [_amount_line(p["pool"] + (" (hidden)" if p["hidden"] else ""), p["closing_ucents"])
              for p in report["pools"]]
    if has_subcents(report):
        lines += ["", f"Sub-cent: {SUBCENT_NOTE}"]
    lines += ["", f"ALL IDENTITIES HOLD ({NO_ACTIVITY.lower()})", ""]
    return printable(lines)


def reconciliation_text(report: Report) -> str:
    """The reconciliation: the period, a table per pool, the link's totals, the identities and the hits; a
    period without activity says so instead of listing zeros."""
    if report["no_activity"] and report["verdict_holds"]:
        return _quiet(report)
    lines = [*_period(report), f"  {'':<44} {'dollars':>{AMOUNT_WIDTH}} sub-cent", ""]
    for p in report["pools"]:
        lines.append(f"Pool {p['pool']}" + (" (hidden)" if p["hidden"] else ""))
        for m in MOVEMENTS:
            if m.key == "closing":
                lines.append("  " + "-" * 64)
            lines.append(_amount_line(m.label, p[f"{m.key}_ucents"], "=" if m.key == "closing" else SIGNS[m.sign]))
            if m.key == "payouts":
                for h in p["payouts_by_hand"]:
                    rejected = f", {h['rejected_hits']} rejected returning {exact(h['returned_ucents'])}" \
                        if h["rejected_hits"] else ""
                    lines.append(f"      {h['hand_name']}: {h['hits']} hit(s), {exact(h['paid_ucents'])}{rejected}")
        holds = p["identity_holds"] and p["checked"]
        detail = "" if holds else (f" (server: difference {exact(p['difference_ucents'])}; client: "
                                   f"{exact(p['client_difference_ucents'])})")
        lines += [f"  identity {tick(holds)}{detail}", ""]
    link = report["link"]
    lines.append(f"Link {report['link_id']}: {link['wagers']:,} wager(s) accepted, {link['refunds']:,} refunded")
    lines += [_amount_line(label, link[f"{key}_ucents"]) for key, label in LINK_AMOUNTS]
    lines += [f"  identity {tick(link['identity_holds'] and link['checked'])} (accepted − refunded = "
              "contributions + retained)", f"  {link['retained_note']}", "", "Identities"]
    lines += [f"  {tick(i['holds'])} {i['name']} ({i['rule']}): {i['in_dollars']}" for i in report["identities"]]
    if not report["client_checked"]:
        lines.append("  ✗ the client's own arithmetic does not agree with the figures (see the pools marked ✗)")
    lines.append("")
    lines.append(f"Hits ({len(report['hits'])})" if report["hits"] else "Hits: none in this period")
    for h in report["hits"]:
        funded = f", operator funded {display(cents_uc(h['funded_by_operator_cents']))}" \
            if h["funded_by_operator_cents"] else ""
        before = f"{display(h['pool_before_ucents'])} {subcent(h['pool_before_ucents'])}".rstrip()
        lines.append(f"  #{h['sequence']} {h['at_local']} table {h['table_id']} round {h['round_id']} seat "
                     f"{h['seat']}: {h['hand_name']} [{' '.join(h['cards'])}] {display(cents_uc(h['amount_cents']))} "
                     f"from {h['pool']} (pool before {before}){funded}; {h['rule']}; {h['status']}{who_decided(h)}")
    if has_subcents(report):
        lines += ["", f"Sub-cent: {SUBCENT_NOTE}"]
    lines += ["", "ALL IDENTITIES HOLD" if report["verdict_holds"] else "NOT RECONCILED: AN IDENTITY FAILS", ""]
    return printable(lines)


def liability_text(report: Report) -> str:
    """What the pools owe players now, exactly: every amount in dollars with all the places it needs, and in µ¢."""
    lines = [f"Liability of link {report['link_id']} as of entry {report['sequence']} ({report['at_utc']}), exact"]
    for p in report["pools"]:
        name = p["pool"] + (" (hidden)" if p["hidden"] else "")
        lines.append(f"  {name:<18} {exact(p['balance_ucents']):>24}   "
                     f"resets to {exact(cents_uc(p['reset_cents']))}")
    lines += [
        _exact_line("visible pools", report["pools_ucents"]),
        _exact_line("RESERVE", report["reserve_ucents"]),
        _exact_line("pending hits", report["pending_ucents"]),
        _exact_line("owed to players", report["owed_to_players_ucents"], "="),
        f"  reset values {exact(cents_uc(report['reset_values_cents']))}, owed by the operator beyond RESERVE "
        f"{exact(cents_uc(report['reset_owed_by_operator_cents']))}",
        f"  guaranteed minimums beyond the pools (the operator adds them if won now, §5.7): "
        f"{exact(cents_uc(report['minimum_shortfall_cents']))}",
        f"Pending hits ({len(report['pending_hits'])})",
    ]
    lines += [f"  {h['hit_id']}: table {h['table_id']} round {h['round_id']} seat {h['seat']} {h['hand_name']} "
              f"{exact(cents_uc(h['amount_cents']))} from {h['pool']} ({h['at_utc']}){who_decided(h)}"
              for h in report["pending_hits"]]
    lines.append("Amounts are exact: a pool's balance is kept in millionths of a cent (µ¢) and shown here with every "
                 "place it has; signs and payouts show it in whole cents, rounded down.")
    return printable([*lines, ""])


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
    lines += [f"      {tick(p['agrees'])} {p['pool']:<10} ledger {exact(p['ledger_ucents']):>24}  "
              f"Redis {exact(p['redis_ucents']):>24}" for p in report["pools"]]
    if altered:
        lines.append(f"  first altered entry: sequence {altered}")
    if report["problems"]:
        lines.append("Problems")
        lines += [f"  - {problem}" for problem in report["problems"]]
    lines.append("LEDGER OK" if report["ok"] else "LEDGER NOT OK")
    return printable([*lines, ""])
