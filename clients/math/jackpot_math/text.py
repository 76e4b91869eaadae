"""The certificate's key figures for the terminal: what a person checks before opening the HTML page. With a
what-if, each figure shows current → proposed."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from jackpotd.domain.ids import visible
from jackpotd.odds.exact_text import decimal_text
from jackpotd.software.identity import SoftwareIdentity

Side = Mapping[str, Any]


def _between(hit: Mapping[str, Any]) -> str:
    """The expected time between hits in the unit that reads best: days, hours or minutes."""
    if hit["hours_between"] is None:
        return "never"
    hours = Fraction(hit["hours_between"])
    if hours >= 24:
        return f"{hit['days_between_text']} days"
    return f"{hit['hours_between_text']} hours" if hours >= 1 else f"{decimal_text(hours * 60, 1)} minutes"


def _figures(side: Side) -> list[tuple[str, str]]:
    """(label, value) of one configuration's key figures, in reading order."""
    shares = side["wager_shares"]
    out = [("wager", shares["wager"]), ("rate set in force", f"v{shares['rate_version']}")]
    out += [(f"  to {r['pool']}", f"{r['ppm']:,} ppm = {r['per_wager']}") for r in shares["rows"]]
    for game, g in side["games"].items():
        royal = next((r for r in g["hand_odds"]["rows"] if r["category"] in ("royal_flush", "four_of_a_kind")),
                     None)
        out.append((f"{game}: return now", f"{g['return']['rtp_percent']} (exact {g['return']['rtp']})"))
        be = g["break_even"]
        out.append((f"{game}: break-even {be['pool'] or ''}".rstrip(), be["balance"]))
        if royal is not None:
            out.append((f"{game}: {royal['hand'].lower()}", royal["one_in"]))
    for t in side["hit_times"]:
        if t["game"] == "*":
            out.append((f"link: {t['hand'].lower()} every", _between(t)))
    lr = side["long_run"]
    tolerance = "" if lr["tolerance"] is None else f" (± {lr['tolerance']:.1e})"
    out.append(("long-run return", f"{lr['rtp_percent']}{tolerance}"))
    out.append(("operator funding a year", lr["operator_per_year"]))
    s = side.get("simulation")
    if s:
        low, high = s["rtp_ci95_percent"]
        m_low, m_high = s["rtp_with_meters_ci95_percent"]
        inside = {True: "inside", False: "OUTSIDE", None: "not comparable"}[s["long_run_rtp_in_meters_ci95"]]
        out.append(("simulated return", f"{s['rtp_percent']} [{low}, {high}]"))
        out.append(("  with the meters", f"{s['rtp_with_meters_percent']} [{m_low}, {m_high}]: long run {inside}"))
        out.append(("operator funding, period p95", s["operator_funding_p95"]))
        out += [(f"largest {pool} (p95)", v["p95"]) for pool, v in s["largest"].items() if pool != "RESERVE"]
    return out


def text_summary(certificate: Mapping[str, Any]) -> str:
    """The key figures as aligned lines of text, ending with a newline."""
    cert = certificate
    play = cert["play"]
    tables = ", ".join(f"{g} × {n}" for g, n in play["tables"].items())
    lines = [f"Math certificate: link {cert['link_id']}", f"config sha256 {cert['config_sha256']}",
             f"play: {tables}, {play['seats_filled']} seats, {play['hands_per_hour']} hands/h "
             f"({play['wagers_per_year']:,} wagers a year)"]
    current = _figures(cert)
    what_if = cert.get("what_if")
    if what_if:
        proposed = dict(_figures(what_if["proposed"]))
        lines.append(f"proposed sha256 {what_if['proposed']['config_sha256']} "
                     f"({len(what_if['changes'])} field(s) change)")
        width = max(len(k) for k, _ in current)
        for k, v in current:
            p = proposed.get(k, "—")
            lines.append(f"{k:<{width}}  {v}" + ("" if p == v else f"  →  {p}"))
    else:
        width = max(len(k) for k, _ in current)
        lines += [f"{k:<{width}}  {v}" for k, v in current]
    for label, side in (("", cert), ("proposed: ", what_if["proposed"] if what_if else None)):
        if side is not None:
            lines += [f"{label}{x['severity'].upper()} {x['subject']}: {x['text']}" for x in side["findings"]]
    if cert.get("software"):
        lines.append(f"produced by {SoftwareIdentity.from_dict(cert['software']).line()}")
    return "\n".join(visible(line) for line in lines) + "\n"  # a link's names from a file or the wire: one line each
