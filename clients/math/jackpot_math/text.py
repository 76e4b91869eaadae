"""The certificate for the terminal: what a person checks before opening the HTML page. It opens as the page does
(issue 33): the title and hash, then the key figures answering what the wager returns, when it breaks even and how
often each pool hits at the stated play, then the findings (critical first), then the details (shares, odds of
the top hand, every hand's time between hits, funding, the simulation's spread). With a what-if, each figure shows
current → proposed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from jackpotd.domain.ids import visible
from jackpotd.software.identity import SoftwareIdentity

from .key_figures import Line, balances_differ, break_even_lines, hit_lines, key_figures, play_text, return_lines
from .units import duration_text

Side = Mapping[str, Any]
INDENT = "  "


def _details(side: Side) -> list[tuple[str, str]]:
    """(label, value) of one configuration's other figures, in reading order."""
    shares = side["wager_shares"]
    out = [("wager", shares["wager"]), ("rate set in force", f"v{shares['rate_version']}")]
    out += [(f"  to {r['pool']}", f"{r['ppm']:,} ppm = {r['per_wager']}") for r in shares["rows"]]
    for game, g in side["games"].items():
        royal = next((r for r in g["hand_odds"]["rows"] if r["category"] in ("royal_flush", "four_of_a_kind")),
                     None)
        if royal is not None:
            out.append((f"{game}: {royal['hand'].lower()}", royal["one_in"]))
    for t in side["hit_times"]:
        if t["game"] == "*":
            hours = None if t["hours_between"] is None else Fraction(t["hours_between"])
            out.append((f"link: {t['hand'].lower()} every", duration_text(hours)))
    lr = side["long_run"]
    tolerance = "" if lr["tolerance"] is None else f" (± {lr['tolerance']:.1e})"
    out.append(("long-run return (4 places)", f"{lr['rtp_percent']}{tolerance}"))
    out.append(("operator funding a year", lr["operator_per_year"]))
    s = side.get("simulation")
    if s:
        low, high = s["rtp_ci95_percent"]
        out.append(("simulated return, bare", f"{s['rtp_percent']} [{low}, {high}]"))
        out.append(("operator funding, period p95", s["operator_funding_p95"]))
        out += [(f"largest {pool} (p95)", v["p95"]) for pool, v in s["largest"].items() if pool != "RESERVE"]
    return out


def _joined(lines: Sequence[Line]) -> list[tuple[str, str]]:
    """Key figures as (label, value): the answer with its detail in brackets."""
    return [(label, f"{answer} ({detail})" if detail else answer) for label, answer, detail in lines]


def _aligned(current: Sequence[tuple[str, str]], proposed: Sequence[tuple[str, str]] | None,
             indent: str = "") -> list[str]:
    """Label and value in two columns; with a proposal, " → proposed" after a value it changes."""
    if not current:
        return []
    mine, other = dict(current), dict(proposed) if proposed is not None else None
    labels = list(dict.fromkeys([k for k, _ in current] + [k for k, _ in proposed or ()]))
    width = max(len(k) for k in labels)
    out = []
    for k in labels:
        v = mine.get(k, "—")
        p = other.get(k, "—") if other is not None else v
        out.append(f"{indent}{k:<{width}}  {v}" + ("" if p == v else f"  →  {p}"))
    return out


def key_lines(certificate: Mapping[str, Any]) -> list[str]:
    """The three answers, as the page's first box: what it returns (with the sentence on the simulation's
    interval), when it breaks even, how often each pool hits at the stated play."""
    cert = certificate
    what_if = cert.get("what_if")
    mine = key_figures(cert)
    theirs = key_figures(what_if["proposed"]) if what_if else None
    lines = [f"KEY FIGURES at {play_text(cert['play'])}"]
    now = balances_differ([mine] + ([theirs] if theirs is not None else []))
    blocks: list[tuple[str, Callable[[Mapping[str, Any]], list[Line]]]] = [
        ("WHAT IT RETURNS (per $1 wagered, one seat)", lambda k: return_lines(k, now)),
        ("WHEN IT BREAKS EVEN", break_even_lines), ("HOW OFTEN IT HITS", hit_lines)]
    for title, draw in blocks:
        lines.append(title)
        lines += _aligned(_joined(draw(mine)), _joined(draw(theirs)) if theirs is not None else None, INDENT)
        if title.startswith("WHAT"):
            lines.append(INDENT + mine["long_run"]["explanation"])
    return lines


def text_summary(certificate: Mapping[str, Any]) -> str:
    """The certificate as aligned lines of text, key figures first, ending with a newline."""
    cert = certificate
    what_if = cert.get("what_if")
    lines = [f"Math certificate: link {cert['link_id']}", f"config sha256 {cert['config_sha256']}"]
    if what_if:
        lines.append(f"proposed sha256 {what_if['proposed']['config_sha256']} "
                     f"({len(what_if['changes'])} field(s) change)")
    lines += key_lines(cert)
    for label, side in (("", cert), ("proposed: ", what_if["proposed"] if what_if else None)):
        if side is not None:
            lines += [f"{label}{x['severity'].upper()} {x['subject']}: {x['text']}" for x in side["findings"]]
    lines.append("DETAILS")
    lines += _aligned(_details(cert), _details(what_if["proposed"]) if what_if else None, INDENT)
    if cert.get("software"):
        lines.append(f"produced by {SoftwareIdentity.from_dict(cert['software']).line()}")
    return "\n".join(visible(line) for line in lines) + "\n"  # a link's names from a file or the wire: one line each
