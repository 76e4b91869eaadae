"""The box of key figures the certificate page opens with (issue 33), before any other section: what the wager
returns, when it breaks even, how often each pool hits, side by side in three columns, so a reviewer reads the
answers in one screen. With a what-if, each figure shows the current and the proposed value, a differing proposed
value marked. The figures are key_figures.py's; every text is escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..key_figures import LINK, Line, balances_differ, break_even_lines, hit_lines, key_figures, play_text, return_lines

Side = Mapping[str, Any]


def _hands_note(k: Mapping[str, Any]) -> str:
    """Which hands hit each pool (link-wide): the rows of the third column say "every …" of any of them."""
    return "; ".join(f"{p['pool']}: {', '.join(h.lower() for h in p['hands'])}" for p in k["pools"]
                     if p["game"] == LINK)


def _table(cls: str, sides: Sequence[list[Line]]) -> str:
    """One question's figures: a row a label, a column a configuration (current, then proposed), each cell the
    answer in bold with its detail below; a proposed answer that differs is marked `diff`."""
    labels = list(dict.fromkeys(label for lines in sides for label, _, _ in lines))
    values = [{label: (answer, detail) for label, answer, detail in lines} for lines in sides]
    head = ("" if len(sides) == 1 else '<thead><tr><th scope="col"></th><th scope="col" class="num">current</th>'
            '<th scope="col" class="num">proposed</th></tr></thead>')
    body = []
    for label in labels:
        cells = [v.get(label, ("—", "")) for v in values]
        tds = "".join(f'<td class="num{" diff" if i and c != cells[0] else ""}"><span class="answer">'
                      f'{escape(c[0])}</span>' + (f'<span class="detail">{escape(c[1])}</span>' if c[1] else "")
                      + "</td>" for i, c in enumerate(cells))
        body.append(f'<tr><th scope="row">{escape(label)}</th>{tds}</tr>')
    return f'<table class="{cls}">{head}<tbody>{"".join(body)}</tbody></table>'


def glance(cert: Mapping[str, Any]) -> str:
    """The key-figures box: three questions in three columns, the play they hold at, and the one sentence saying
    what the simulation's interval is, beside the long-run figure it is held against."""
    what_if = cert.get("what_if")
    figures = [key_figures(cert)] + ([key_figures(what_if["proposed"])] if what_if else [])
    explained = figures[0]["long_run"]["explanation"]
    if len(figures) == 2 and figures[1]["long_run"]["explanation"] != explained:
        explained += " Proposed: " + figures[1]["long_run"]["explanation"]
    hands = _hands_note(figures[0])
    now = balances_differ(figures)
    columns = [
        ("What it returns", "returns", [return_lines(k, now) for k in figures],
         "Return to player per $1 wagered, one seat, exact at reset. " + explained),
        ("When it breaks even", "breaks-even", [break_even_lines(k) for k in figures],
         "The balance of the game's percentage pool (the others at the balances used) from which the wager returns "
         "100% or more: a player then has the edge until it is won."),
        ("How often it hits", "hits", [hit_lines(k) for k in figures],
         f"Expected time between hits of each pool at the stated play ({hands})."),
    ]
    blocks = "".join(f'<div><h3>{escape(title)}</h3>{_table(f"glance-{cls}", sides)}'
                     f'<p class="note">{escape(note)}</p></div>' for title, cls, sides, note in columns)
    return ('<section id="key-figures" class="glance"><h2>Key figures</h2>'
            f'<p class="play">at {escape(play_text(cert["play"]))}</p><div class="q3">{blocks}</div></section>')
