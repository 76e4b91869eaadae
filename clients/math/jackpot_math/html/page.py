"""The math certificate as ONE self-contained HTML page, fit to attach to a submission to a regulator: inline CSS
and inline SVG charts, no script and no reference to another host (a Content-Security-Policy forbids both),
printable on A4. It shows the certificate document (certificate.py) and nothing else; with a what-if, the current
and proposed configurations side by side, their differences marked. Every text is escaped."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from html import escape
from typing import Any

from jackpot_finance.html_report import CSP

from jackpotd.software.identity import SoftwareIdentity

from .. import charts
from . import tables as t
from .glance import glance
from .style import CSS

Side = Mapping[str, Any]
SideHtml = Callable[[Side, Side | None], str]


def _columns(cert: Mapping[str, Any], draw: SideHtml) -> str:
    """One side's HTML, or the current and proposed sides in two columns, each marked against the other."""
    what_if = cert.get("what_if")
    if not what_if:
        return draw(cert, None)
    proposed = what_if["proposed"]
    alone = draw(cert, None)
    if alone == draw(proposed, None):
        return '<p class="side same">the same for the current and the proposed configuration</p>' + alone
    return ('<div class="cols"><div><p class="side current">current</p>' + draw(cert, proposed)
            + '</div><div><p class="side proposed">proposed</p>' + draw(proposed, cert) + "</div></div>")


def _header(cert: Mapping[str, Any]) -> str:
    """The title with the link, the configuration hash and when it was made: two lines, so the key figures below
    are on the first screen. The rest of what the figures were taken from is the Source table."""
    proposed = (f'; proposed <code>{escape(cert["what_if"]["proposed"]["config_sha256"])}</code>'
                if cert.get("what_if") else "")
    return (f'<header><h1>Math certificate: link {escape(cert["link_id"])}</h1>'
            f'<p class="note">configuration SHA-256 <code>{escape(cert["config_sha256"])}</code>{proposed}; '
            f'generated {escape(cert["generated_at"])}</p></header>')


def _source(cert: Mapping[str, Any]) -> str:
    """What the certificate was made from, as a table: the source (a file and its hash, or a running link), the
    play, the balances used, the document's schema and the producing software."""
    play = cert["play"]
    rows: list[t.Row] = [[(f"source: {k}", False), (str(v), False)] for k, v in cert["source"].items()]
    rows += [[(f"tables playing {g}", False), (f"{n:,}", False)] for g, n in play["tables"].items()]
    rows += [[("seats filled", False), (f"{play['seats_filled']:,} a table", False)],
             [("hands an hour", False), (f"{play['hands_per_hour']:,} a table", False)],
             [("wagers", False), (f"{play['wagers_per_hour']:,} an hour, {play['wagers_per_year']:,} a year", False)]]
    rows += [[(f"balance used: {p}", False), (v, False)] for p, v in cert["balances_text"].items()]
    rows += [[("generated (UTC)", False), (cert["generated_at"], False)], [("schema", False), (cert["schema"], False)]]
    if cert.get("software"):
        rows.append([("produced by", False), (SoftwareIdentity.from_dict(cert["software"]).short(), False)])
    return "<h3>Source and play</h3>" + t.table("source", ("item", "value"), rows)


def _key_rows(side: Side) -> list[t.Row]:
    """One configuration's key figures as rows, for the what-if's comparison."""
    rows: list[t.Row] = [[("jackpot wager", False), (side["wager_shares"]["wager"], True)],
                         [("rate set in force", False), (f"v{side['wager_shares']['rate_version']}", True)]]
    rows += [[(f"to {r['pool']}", False), (t.ppm_text(r["ppm"]), True)] for r in side["wager_shares"]["rows"]]
    for game, g in side["games"].items():
        rows.append([(f"{game}: return at the balances used", False), (g["return"]["rtp_percent"], True)])
        be = g["break_even"]
        rows.append([(f"{game}: break-even {be['pool'] or ''} balance", False), (be["balance"], True)])
    rows.append([("long-run return", False), (side["long_run"]["rtp_percent"], True)])
    rows.append([("operator funding a year (long run)", False), (side["long_run"]["operator_per_year"], True)])
    if side.get("simulation"):
        s = side["simulation"]
        low, high = s["rtp_with_meters_ci95_percent"]
        rows.append([("simulated return with the meters (95% interval)", False),
                     (f"{s['rtp_with_meters_percent']} ({low} – {high})", True)])
        rows.append([("operator funding over the period, p95", False), (s["operator_funding_p95"], True)])
    return rows


def _what_if(cert: Mapping[str, Any]) -> str:
    """The proposed change: the fields it changes, and the key figures current against proposed."""
    what_if = cert.get("what_if")
    if not what_if:
        return ""
    proposed = what_if["proposed"]
    keys = {r[0][0]: r for r in _key_rows(proposed)}
    rows = [[r[0], r[1], keys[r[0][0]][1] if r[0][0] in keys else ("—", True)] for r in _key_rows(cert)]
    return ('<section id="what-if"><h2>Proposed change</h2>'
            '<p class="note">A proposed SetRates or UpdateLink, applied to the current configuration as the service '
            "would apply it; marked cells differ.</p>"
            + t.table("changes", ("field", "current", "proposed"),
                      t.changes_rows(what_if["changes"], cert["config"]["time_zone"]))
            + "<h3>Figures, current against proposed</h3>" + _key_table(rows) + "</section>")


def _key_table(rows: list[list[t.Cell]]) -> str:
    """Key figures in three columns, a row whose two values differ marked."""
    body = "".join(
        f'<tr><th scope="row">{escape(r[0][0])}</th>'
        + "".join(f'<td class="num{" diff" if r[1][0] != r[2][0] else ""}">{escape(c[0])}</td>' for c in r[1:])
        + "</tr>" for r in rows)
    return ('<table class="key"><thead><tr><th scope="col">figure</th><th scope="col" class="num">current</th>'
            f'<th scope="col" class="num">proposed</th></tr></thead><tbody>{body}</tbody></table>')


def _config(side: Side, other: Side | None) -> str:
    """One configuration's settings, pools, rate sets, shares of a wager and paytables."""
    def rows(f: Callable[[Side], list[t.Row]]) -> list[t.Row] | None:
        return f(other) if other is not None else None
    out = (t.table("settings", ("setting", "value"), t.config_rows(side), rows(t.config_rows))
           + "<h4>Pools</h4>" + t.table("pools", ("pool", "reset", "cap", "overflow to", "balance used"),
                                         t.pools_rows(side), rows(t.pools_rows), (False, True, True, False, True))
           + "<h4>Rate sets</h4>" + t.table("rates", ("version", "in force from", "approval", "pools", "retained"),
                                            t.rates_rows(side), rows(t.rates_rows))
           + "<h4>Tables registered</h4>" + t.table("tables", ("table", "game", "seats", "suspended"),
                                                    t.tables_rows(side), rows(t.tables_rows), (False, False, True))
           + "<h4>Share of each wager (rates in force)</h4>"
           + t.table("shares", ("to", "rate", "per wager", "per wager $"), t.shares_rows(side), rows(t.shares_rows),
                     (False, True, True, True)))
    for game in side["config"]["paytables"]:
        out += f"<h4>Paytable: {escape(game)}</h4>" + t.table(
            "paytable", ("hand", "pool", "fixed", "percentage", "resets pool"), t.paytable_rows(side, game),
            t.paytable_rows(other, game) if other is not None else None, (False, False, True, True, False))
    return out


def _odds(cert: Mapping[str, Any]) -> str:
    """Every game's exact hand table (the same for any configuration: drawn once)."""
    out = ""
    for game, g in cert["games"].items():
        o = g["hand_odds"]
        out += (f'<h3>{escape(game)}</h3><p class="note">{o["total"]:,} hands; {escape(o["method"])}</p>'
                + t.table(f"odds odds-{game}", ("hand", "count", "of", "probability (exact)", "probability", "1 in"),
                          t.odds_rows(o), None, (False, True, True, True, True, True)))
    return out


def _returns(side: Side, other: Side | None) -> str:
    """Each game's exact return at the balances used, its cross-check and break-even."""
    out = ""
    for game, g in side["games"].items():
        twin = other["games"].get(game) if other is not None else None
        be = g["break_even"]
        out += (f"<h3>{escape(game)}: {escape(g['return']['rtp_percent'])}</h3>"
                + t.table("return", ("hand", "pool", "payout", "operator funds", "rule", "return"),
                          t.return_rows(g["return"]), t.return_rows(twin["return"]) if twin else None,
                          (False, False, True, True, False, True))
                + _cross_check(g.get("cross_check"))
                + f'<p class="note">Exact return: {escape(g["return"]["rtp"])} of the wager. Break-even '
                f'{escape(be["pool"] or "")} balance: <b>{escape(be["balance"])}</b>; at the reset values the '
                f'return is {escape(be["rtp_at_reset_percent"])}.</p>')
    return out


def _cross_check(check: Mapping[str, Any] | None) -> str:
    """The return found the second way (every hand priced by the engine's pricing code) beside the closed form."""
    if not check:
        return ""
    ok = bool(check["agrees"])
    return (f'<p class="verdict {"ok" if ok else "fail"}">closed form {escape(check["closed_form_uc"])} µ¢ '
            f'{"=" if ok else "≠"} by the pricing code {escape(check["by_pricing_uc"])} µ¢: '
            f'{"the two ways agree exactly" if ok else "THE TWO WAYS DISAGREE"}</p>')


def _curves(cert: Mapping[str, Any]) -> str:
    """Each game's return curve, the current and proposed configurations on one chart."""
    sides = [("current", cert)] + ([("proposed", cert["what_if"]["proposed"])] if cert.get("what_if") else [])
    out = ""
    for game, g in cert["games"].items():
        pool = g["return_curve"]["pool"]
        if pool is None:
            out += (f'<h3>{escape(game)}</h3><p class="empty">No curve: no entry of this game pays a percentage of a '
                    f'pool, so its return does not depend on a balance ({escape(g["return"]["rtp_percent"])}).</p>')
            continue
        curves = []
        for label, side in sides:
            gg = side["games"].get(game)
            if gg is None:
                continue
            pts = [(int(p["balance_cents"]), int(p["rtp_ppm"])) for p in gg["return_curve"]["points"]]
            curves.append(charts.Curve(label, pts, gg["break_even"]["balance_cents"]))
        out += (f"<h3>{escape(game)}</h3>"
                + charts.return_curve_svg(f"curve-{game}", pool or "percentage pool", curves))
    return out


def _long_run(side: Side, other: Side | None) -> str:
    """One configuration's long-run figures: return, flows per wager and a year, each pool's law."""
    return (t.table("long-run", ("figure", "value"), t.long_run_summary(side),
                    t.long_run_summary(other) if other is not None else None, (False, True))
            + t.table("long-run-pools", ("pool", "mean", "p5", "p50", "p95", "p99", "at cap"),
                      t.long_run_rows(side), t.long_run_rows(other) if other is not None else None,
                      (False, True, True, True, True, True, True)))


def _hits(side: Side, other: Side | None) -> str:
    """One configuration's expected time to each hit at this play."""
    return t.table("hit-times", ("hand", "pool", "odds a wager", "an hour", "a day", "a year", "time between"),
                   t.hit_rows(side), t.hit_rows(other) if other is not None else None,
                   (False, False, True, True, True, True, True))


def _simulation(cert: Mapping[str, Any]) -> str:
    """The bands of each visible pool (side by side with a what-if) and each side's figures."""
    sides = [("current", cert)] + ([("proposed", cert["what_if"]["proposed"])] if cert.get("what_if") else [])
    if not cert.get("simulation"):
        return '<p class="empty">No simulation was run for this certificate.</p>'
    visible = [p["name"] for p in cert["config"]["pools"] if p["name"] != "RESERVE"]
    out = ""
    for i, pool in enumerate(visible):
        drawn = [(label, s["simulation"]["bands"].get(pool, [])) for label, s in sides if s.get("simulation")]
        axis = charts.bands_range([b for _, b in drawn])
        svgs = [charts.bands_svg(f"bands-{pool}-{label}", pool, label, b, axis, i) for label, b in drawn]
        out += f"<h3>{escape(pool)}</h3>" + (svgs[0] if len(svgs) == 1 else
                                             '<div class="cols">' + "".join(f"<div>{s}</div>" for s in svgs)
                                             + "</div>")

    def figures(side: Side, other: Side | None) -> str:
        if not side.get("simulation"):
            return '<p class="empty">Not simulated.</p>'
        ok = side["simulation"]["long_run_rtp_in_meters_ci95"]
        verdict = {True: "the long-run return lies inside the 95% interval of the simulated return with the meters",
                   False: "the long-run return lies OUTSIDE the 95% interval of the simulated return with the meters",
                   None: "no interval to compare the long-run return with (one path, or a pool that grows)"}[ok]
        both = other is not None and other.get("simulation")
        style = {True: "ok", False: "fail", None: "none"}[ok]
        return (f'<p class="verdict {style}">{escape(verdict)}</p>'
                + t.table("simulation", ("figure", "value"), t.simulation_summary(side),
                          t.simulation_summary(other) if both and other else None, (False, True))
                + "<h4>Hits by hand (mean per path)</h4>"
                + t.table("sim-hits", ("hand", "hits"), t.sim_hit_rows(side),
                          t.sim_hit_rows(other) if both and other else None, (False, True)))
    return out + _columns(cert, figures)


def _findings(side: Side, other: Side | None) -> str:
    """What an inspector should look at first: each finding with its severity, or a line saying there is none."""
    found = side["findings"]
    if not found:
        return '<p class="ok">No findings: the wager returns less than it costs at these balances and in the long ' \
               "run, the operator retains more than it funds, and no pool keeps money for good.</p>"
    return "<ul class=\"findings\">" + "".join(
        f'<li class="{escape(x["severity"])}"><strong>{escape(x["severity"])}</strong> '
        f'{escape(x["subject"])}: {escape(x["text"])}</li>' for x in found) + "</ul>"


def _methods(cert: Mapping[str, Any]) -> str:
    """A paragraph per figure: how it was found, and its limits."""
    names = {"hand_odds": "Hand odds", "return": "Return to player", "break_even": "Break-even",
             "hit_times": "Hit times", "long_run": "Long run", "simulation": "Simulation", "money": "Money"}
    return "".join(f"<h3>{escape(names.get(k, k))}</h3><p>{escape(v)}</p>" for k, v in cert["methods"].items())


def _software(cert: Mapping[str, Any]) -> str:
    """Every value of the producing software's identity, in full: what a laboratory checks the page against."""
    if not cert.get("software"):
        return ""
    return f' Produced by <code id="software">{escape(SoftwareIdentity.from_dict(cert["software"]).line())}</code>.'


def render_html(certificate: Mapping[str, Any]) -> str:
    """The certificate document as one HTML page: nothing loaded from anywhere, nothing scripted."""
    cert = certificate
    title = f"Math certificate {cert['link_id']} {cert['config_sha256'][:12]}"
    sections = [
        glance(cert),  # first: the three answers (return, break-even, hits) before anything else
        '<section id="findings"><h2>Findings</h2>' + _columns(cert, _findings) + "</section>",
        _what_if(cert),
        '<section id="configuration"><h2>Configuration</h2>' + _source(cert) + _columns(cert, _config)
        + "</section>",
        '<section id="odds"><h2>Exact hand odds</h2>' + _odds(cert) + "</section>",
        '<section id="return"><h2>Return to player at the balances used (one seat, exact)</h2>'
        + _columns(cert, _returns) + "</section>",
        '<section id="curve"><h2>Return curve</h2><p class="note">The exact return against the balance of the '
        "game's percentage pool, the other pools at the balances used.</p>" + _curves(cert) + "</section>",
        '<section id="hit-times"><h2>Time to each hit</h2>' + _columns(cert, _hits) + "</section>",
        '<section id="long-run"><h2>Long run and funding</h2>' + _columns(cert, _long_run) + "</section>",
        '<section id="simulation"><h2>Simulation</h2>' + _simulation(cert) + "</section>",
        '<section class="methods" id="methods"><h2>Methods and limits</h2>' + _methods(cert) + "</section>",
    ]
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
            + _header(cert) + "".join(sections)
            + f'<footer>jackpot-math, schema {escape(cert["schema"])}; configuration SHA-256 '
            f'<code>{escape(cert["config_sha256"])}</code>. The same document is in certificate.json.'
            + _software(cert) + "</footer>"
            "</body></html>")
