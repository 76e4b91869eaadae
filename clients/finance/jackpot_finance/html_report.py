"""The reconciliation as ONE self-contained HTML file for the finance office: inline CSS and an inline SVG
chart, no script, no external reference (a Content-Security-Policy forbids both), print-friendly.

Every text value is escaped with html.escape: ids, hands, rules and expressions come from callers and are
treated as hostile. Amounts are shown in dollars and cents, with a pool's sub-cent remainder beside them and a
footnote saying what it is; each keeps its exact µ¢ in `data-ucents` and its exact dollars in a tooltip."""

from __future__ import annotations

from html import escape

from jackpotd.software.identity import SoftwareIdentity

from . import chart
from .model import LINK_AMOUNTS, MOVEMENTS, NO_ACTIVITY, Report
from .money import SUBCENT_NOTE, cents_uc, display, exact, grouped, subcent
from .text import has_subcents

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
SIGNS = {0: "", 1: "+ ", -1: "− "}

CSS = """
:root { color-scheme: light; --ok: #1b7a2e; --fail: #b3261e; --line: #c9ced6; }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1c1f24;
       margin: 24px auto; max-width: 1400px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 17px; margin: 28px 0 8px; }
dl.period { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dt { color: #5a6270; } dd { margin: 0; }
.verdict { font-weight: 700; font-size: 16px; padding: 8px 12px; border-radius: 4px; margin: 12px 0 0; }
.verdict.ok { background: #e3f4e6; color: var(--ok); } .verdict.fail { background: #fbe4e2; color: var(--fail); }
table { border-collapse: collapse; width: auto; min-width: 50%; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f2f4f7; font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; }
tr.total td { border-top: 2px solid #1c1f24; font-weight: 600; }
tr.byhand td, tr.byhand th { color: #5a6270; font-size: 12px; font-weight: 400; }
tr.byhand th { padding-left: 28px; }
table.hits { font-size: 12px; width: 100%; } table.hits td.nowrap { white-space: nowrap; }
section { overflow-x: auto; }
.mark { font-weight: 700; text-align: center; width: 2em; }
.holds .mark, .mark.holds { color: var(--ok); } .fails .mark, .mark.fails { color: var(--fail); }
tr.fails td { background: #fdf1f0; }
code { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
svg.chart { width: 100%; height: auto; max-width: 960px; display: block; }
svg .plot { fill: #fafbfc; stroke: var(--line); } svg .grid { stroke: #e3e6ea; } svg .tickmark { stroke: #5a6270; }
svg text { font-size: 12px; fill: #1c1f24; } svg .tick { fill: #5a6270; } svg .axis { font-weight: 600; }
.empty { color: #5a6270; font-style: italic; }
.note { color: #5a6270; margin: 4px 0 8px; }
.sub { color: #5a6270; font-size: 11px; margin-left: 4px; }
.quiet { font-weight: 700; font-size: 16px; padding: 8px 12px; border-radius: 4px; background: #eef1f5; }
footer { margin-top: 32px; color: #5a6270; font-size: 12px; }
@media print {
  @page { size: A4 landscape; margin: 12mm; }
  body { margin: 0; max-width: none; font-size: 10pt; }
  section, tr, svg { break-inside: avoid; }
  thead { display: table-header-group; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""


def _money(uc: int, cls: str = "num") -> str:
    """An amount's cell: dollars and cents, its sub-cent remainder beside them, its exact figure as a tooltip."""
    rest = subcent(uc)
    sub = f'<span class="sub">{escape(rest)}</span>' if rest else ""
    return (f'<td class="{cls}" data-ucents="{uc}" title="{escape(exact(uc))} = {escape(grouped(uc))} µ¢">'
            f"{escape(display(uc))}{sub}</td>")


def _mark(holds: bool) -> str:
    return f'<td class="mark {"holds" if holds else "fails"}">{"✓" if holds else "✗"}</td>'


def _header(report: Report) -> str:
    day = report["gaming_day"]
    title = f"gaming day {day}" if day else "period"
    rows = [
        ("link", report["link_id"]),
        ("gaming day", f"{day} (starts {report['gaming_day_start']} local)" if day else "— (a period by times)"),
        ("from", f"{report['from_local']}   ({report['from_utc']})"),
        ("to (exclusive)", f"{report['to_local']}   ({report['to_utc']})"),
        ("time zone", report["time_zone"] or "UTC"),
        ("entries", f"{report['entries']}" + (f" (sequences {report['first_sequence']}–{report['last_sequence']})"
                                              if report["entries"] else "")),
        ("generated at", f"{report['generated_at_local']}   ({report['generated_at_utc']})"),
    ]
    ok = report["verdict_holds"]
    quiet = (f'<p class="quiet" id="no-activity">{NO_ACTIVITY}: no wagers, voids, hits, funding or transfers; '
             "each pool closes at its opening balance.</p>" if report["no_activity"] else "")
    verdict = ("Reconciled: every identity holds" if ok else
               "NOT RECONCILED: an identity fails" + ("" if report["client_checked"] else
                                                      " (the figures do not add up as sent)"))
    return (f"<header><h1>Reconciliation of link {escape(report['link_id'])}, {escape(title)}</h1>"
            '<dl class="period">' + "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in rows)
            + f'</dl>{quiet}<p class="verdict {"ok" if ok else "fail"}" id="verdict">{escape(verdict)}</p></header>')


def _pools(report: Report) -> str:
    pools = report["pools"]
    if not pools:
        return '<p class="empty">No pools.</p>'
    head = "".join(f'<th class="num" scope="col">{escape(p["pool"])}{" (hidden)" if p["hidden"] else ""}</th>'
                   for p in pools)
    if quiet(report):
        return (f'<table class="pools"><thead><tr><th scope="col"></th>{head}</tr></thead><tbody>'
                '<tr data-row="closing"><th scope="row">balance throughout (no movements)</th>'
                + "".join(_money(p["closing_ucents"]) for p in pools) + "</tr></tbody></table>")
    body = []
    for m in MOVEMENTS:
        cls = ' class="total"' if m.key == "closing" else ""
        label = "= closing" if m.key == "closing" else SIGNS[m.sign] + m.label
        body.append(f'<tr{cls} data-row="{m.key}"><th scope="row">{escape(label)}</th>'
                    + "".join(_money(p[f"{m.key}_ucents"]) for p in pools) + "</tr>")
        if m.key == "payouts":
            hands = sorted({h["hand"] for p in pools for h in p["payouts_by_hand"]})
            for hand in hands:
                cells = []
                for p in pools:
                    found = [h for h in p["payouts_by_hand"] if h["hand"] == hand]
                    cells.append(
                        "".join(f'<td class="num" data-ucents="{h["paid_ucents"]}">{h["hits"]} hit(s): '
                                f'{escape(exact(h["paid_ucents"]))}'
                                + (f'<br>{h["rejected_hits"]} rejected, {escape(exact(h["returned_ucents"]))} back'
                                   if h["rejected_hits"] else "") + "</td>" for h in found)
                        or '<td class="num"></td>')
                name = next(h["hand_name"] for p in pools for h in p["payouts_by_hand"] if h["hand"] == hand)
                body.append(f'<tr class="byhand"><th scope="row">{escape(name)}</th>{"".join(cells)}</tr>')
    body.append('<tr data-row="difference"><th scope="row">difference</th>'
                + "".join(_money(p["difference_ucents"]) for p in pools) + "</tr>")
    body.append('<tr data-row="identity"><th scope="row">identity</th>'
                + "".join(_mark(p["identity_holds"] and p["checked"]) for p in pools) + "</tr>")
    return (f'<table class="pools"><thead><tr><th scope="col">movement</th>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def quiet(report: Report) -> bool:
    """A period without activity whose identities hold: its zeros are not listed."""
    return bool(report["no_activity"] and report["verdict_holds"])


def _link(report: Report) -> str:
    link = report["link"]
    if quiet(report):
        return '<p class="empty">No wagers, voids, funding or prizes in this period.</p>'
    rows = [f'<tr><th scope="row">wagers accepted (count)</th><td class="num">{link["wagers"]:,}</td></tr>',
            f'<tr><th scope="row">wagers refunded (count)</th><td class="num">{link["refunds"]:,}</td></tr>']
    rows += [f'<tr data-row="{key}"><th scope="row">{escape(label)}</th>{_money(link[f"{key}_ucents"])}</tr>'
             for key, label in LINK_AMOUNTS]
    holds = link["identity_holds"] and link["checked"]
    rows.append(f'<tr class="{"holds" if holds else "fails"}"><th scope="row">wagers accepted − refunded = '
                f'contributions + retained</th>{_mark(holds)}</tr>')
    return (f'<table class="link"><tbody>{"".join(rows)}</tbody></table>'
            f'<p class="note" id="retained-note">{escape(link["retained_note"])}</p>')


def _identities(report: Report) -> str:
    rows = "".join(
        f'<tr class="identity {"holds" if i["holds"] else "fails"}">{_mark(i["holds"])}<td>{escape(i["name"])}</td>'
        f'<td>{escape(i["rule"])}</td><td title="{escape(i["expression"])}">{escape(i["in_dollars"])}</td></tr>'
        for i in report["identities"])
    if not rows:
        return '<p class="empty">The server listed no identities.</p>'
    return ('<table class="identities"><thead><tr><th class="mark" scope="col"></th><th scope="col">identity</th>'
            f'<th scope="col">rule</th><th scope="col">with this period\'s numbers</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


HIT_COLUMNS = ("round", "table", "seat", "hand", "cards", "pool", "amount", "funded by operator", "pool before",
               "rule", "status", "approved by", "rejected by", "sequence", "time (local)")


def _omitted(report: Report) -> str:
    """A long period lists its first hits only: say so, with where the rest are."""
    shown, total = len(report["hits"]), report["hits_total"]
    if total <= shown:
        return ""
    return (f'<p class="note">The first {shown:,} of {total:,} hits; the rest are in ListHits, the report_hits view '
            "and the ledger export.</p>")


def _hits(report: Report) -> str:
    if not report["hits"]:
        return '<p class="empty">No hits in this period.</p>'
    money_columns = ("amount", "funded by operator", "pool before")
    head = "".join(f'<th scope="col" class="{"num" if c in money_columns else ""}">{escape(c)}</th>'
                   for c in HIT_COLUMNS)
    rows = "".join(
        f'<tr class="hit" data-hit="{escape(h["hit_id"])}"><td>{escape(h["round_id"])}</td>'
        f'<td>{escape(h["table_id"])}</td><td class="num">{h["seat"]}</td><td>{escape(h["hand_name"])}</td>'
        f'<td class="nowrap">{escape(" ".join(h["cards"]))}</td><td>{escape(h["pool"])}</td>'
        f'{_money(cents_uc(h["amount_cents"]))}{_money(cents_uc(h["funded_by_operator_cents"]))}'
        f'{_money(h["pool_before_ucents"])}<td>{escape(h["rule"])}</td><td>{escape(h["status"])}</td>'
        f'<td>{"<br>".join(escape(a) for a in h["approved_by"])}</td><td>{escape(h["rejected_by"])}</td>'
        f'<td class="num">{h["sequence"]}</td><td class="nowrap" title="{escape(h["at_local"])} = '
        f'{escape(h["at_utc"])}">{escape(h["at_local"][:19].replace("T", " "))}</td>'
        "</tr>"
        for h in report["hits"])
    return f'<table class="hits"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _software(report: Report) -> str:
    """The program that produced the page, in short (every value in full in the JSON form and in the tooltip)."""
    if "software" not in report:
        return ""
    ident = SoftwareIdentity.from_dict(report["software"])
    return f' Produced by <code id="software" title="{escape(ident.line())}">{escape(ident.short())}</code>.'


def reconciliation_html(report: Report) -> str:
    """The whole page (see the module's docstring)."""
    title = f"Reconciliation {report['link_id']} {report['gaming_day'] or report['from_utc']}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"{_header(report)}"
        f'<section id="chart"><h2>Pool balances</h2>{chart.svg(report)}</section>'
        f'<section id="pools"><h2>Pools</h2>{_pools(report)}</section>'
        f'<section id="link"><h2>Link totals</h2>{_link(report)}</section>'
        f'<section id="identities"><h2>Identities (RULES.md §10)</h2>{_identities(report)}</section>'
        f'<section id="hits"><h2>Hits</h2>{_omitted(report)}{_hits(report)}</section>'
        + (f'<p class="note" id="subcent-note">Sub-cent (+0.5¢ beside an amount): {escape(SUBCENT_NOTE)}</p>'
           if has_subcents(report) else "")
        + "<footer>Amounts are in dollars and cents; hover one for its exact figure in dollars and µ¢ (1 cent = "
        "1,000,000 µ¢), and for an identity's exact terms. Generated by jackpot-report from jackpotd's ledger."
        + _software(report) + "</footer>"
        "</body></html>\n")
