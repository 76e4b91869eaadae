"""The certificate's two charts as inline SVG (no script, no external reference), in the finance report's style and
with its axis helpers (jackpot_finance.chart): the RETURN CURVE (return against the percentage pool's balance, the
100% line and each break-even) and the SIMULATION BANDS (p5-p95 shaded, p50 drawn, per pool over the days).

Money is plotted with integer arithmetic from integer cents/µ¢, and returns from integer ppm: no float anywhere."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from jackpot_finance.chart import COLOURS, dollar_grid, tick_label, tick_step
from jackpot_finance.money import display

from jackpotd.domain.money import PPM, UC_PER_CENT

WIDTH, PLOT_HEIGHT = 960, 300
LEFT, RIGHT, TOP, BOTTOM = 110, 24, 24, 56
LEGEND_ROW = 22
TICKS = 4
HUNDRED = PPM  # 100% in ppm


@dataclass(frozen=True)
class Curve:
    """One configuration's return curve: (balance cents, rtp ppm) points and its break-even balance (cents)."""

    label: str
    points: Sequence[tuple[int, int]]
    break_even_cents: int | None


def ppm_step(span: int) -> int:
    """A round step for the return axis (1, 2 or 5 × a power of ten ppm) giving at most TICKS intervals."""
    scale = 1
    while True:
        for m in (1, 2, 5):
            if m * scale * TICKS >= span:
                return m * scale
        scale *= 10


def percent_label(ppm: int) -> str:
    """An axis label: 95%, 97.5%, 99.25% (ppm as a percentage with the places it needs)."""
    whole, frac = divmod(ppm, PPM // 100)
    return f"{whole}%" if not frac else f"{whole}.{frac:04d}".rstrip("0") + "%"


def _frame(chart_id: str, title: str, height: int) -> list[str]:
    """The <svg> element's opening, its title and the plot's frame."""
    return [f'<svg class="chart" id="{escape(chart_id)}" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
            f'height="{height}" role="img" aria-labelledby="{escape(chart_id)}-title">'
            f'<title id="{escape(chart_id)}-title">{escape(title)}</title>',
            f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{PLOT_HEIGHT}"/>']


def _range(values: Sequence[int], step: int) -> tuple[int, int]:
    """The axis's ends: `values` widened to whole steps, at least one step apart."""
    low, high = min(values) // step * step, -(-max(values) // step) * step
    return low, max(high, low + step)


def return_curve_svg(chart_id: str, pool: str, curves: Sequence[Curve]) -> str:
    """Return (%) against `pool`'s balance ($) for each curve, with the 100% line and each break-even marked."""
    curves = [c for c in curves if c.points]
    if not curves:
        return '<p class="empty">No return curve: the game has no percentage pool.</p>'
    xs = [b * UC_PER_CENT for c in curves for b, _ in c.points]
    ys = [r for c in curves for _, r in c.points] + [HUNDRED]
    x_step = tick_step(max(xs) - min(xs) or UC_PER_CENT)
    x0, x1 = _range(xs, x_step)
    y_step = ppm_step(max(ys) - min(ys) or 1)
    y0, y1 = _range(ys, y_step)
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + PLOT_HEIGHT + BOTTOM + LEGEND_ROW * len(curves)

    def x(cents: int) -> int:
        return LEFT + (min(max(cents * UC_PER_CENT, x0), x1) - x0) * plot_w // (x1 - x0)

    def y(ppm: int) -> int:
        return TOP + (y1 - min(max(ppm, y0), y1)) * PLOT_HEIGHT // (y1 - y0)

    parts = _frame(chart_id, f"Return to player against the {pool} balance", height)
    for v in range(y0, y1 + 1, y_step):
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(v)}" y2="{y(v)}"/>'
                     f'<text class="tick" x="{LEFT - 6}" y="{y(v) + 4}" text-anchor="end">'
                     f"{escape(percent_label(v))}</text>")
    for k, uc in enumerate(range(x0, x1 + 1, x_step)):
        px = LEFT + (uc - x0) * plot_w // (x1 - x0)
        anchor = "start" if k == 0 else "end" if uc + x_step > x1 else "middle"
        parts.append(f'<line class="tickmark" x1="{px}" x2="{px}" y1="{TOP + PLOT_HEIGHT}" '
                     f'y2="{TOP + PLOT_HEIGHT + 5}"/>'
                     f'<text class="tick" x="{px}" y="{TOP + PLOT_HEIGHT + 18}" text-anchor="{anchor}">'
                     f"{escape(tick_label(uc, x_step))}</text>")
    parts.append(f'<line class="hundred" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(HUNDRED)}" y2="{y(HUNDRED)}"/>'
                 f'<text class="hundred-label" x="{LEFT + 6}" y="{y(HUNDRED) - 5}" text-anchor="start">'
                 "100%: the wager returns what it costs</text>"
                 f'<text class="axis" x="{LEFT + plot_w // 2}" y="{TOP + PLOT_HEIGHT + 38}" text-anchor="middle">'
                 f"{escape(pool)} balance ($)</text>"
                 f'<text class="axis" transform="translate(16 {TOP + PLOT_HEIGHT // 2}) rotate(-90)" '
                 'text-anchor="middle">return to player (%)</text>')
    for i, c in enumerate(curves):
        colour = COLOURS[i % len(COLOURS)]
        dash = ' stroke-dasharray="10 6"' if i else ""  # a later curve dashed: one drawn over another still shows
        coords = " ".join(f"{x(b)},{y(r)}" for b, r in c.points)
        parts.append(f'<polyline class="curve" data-config="{escape(c.label)}" fill="none" stroke="{colour}" '
                     f'stroke-width="2.5"{dash} points="{coords}"><title>{escape(c.label)}</title></polyline>')
        be = c.break_even_cents
        note = "never breaks even"
        shared = any(o.break_even_cents == be for o in curves[:i])  # one label for a break-even the curves share
        if be is not None and be * UC_PER_CENT <= x1 and not shared:
            parts.append(f'<g class="break-even" data-config="{escape(c.label)}"><line x1="{x(be)}" x2="{x(be)}" '
                         f'y1="{TOP}" y2="{TOP + PLOT_HEIGHT}" stroke="{colour}" stroke-dasharray="4 4"/>'
                         f'<circle cx="{x(be)}" cy="{y(HUNDRED)}" r="5" fill="{colour}"/>'
                         f'<text x="{x(be) + 6}" y="{TOP + 14 + 16 * i}">break-even '
                         f"{escape(display(be * UC_PER_CENT))}</text></g>")
            note = f"break-even at {display(be * UC_PER_CENT)}"
        elif be is not None and be * UC_PER_CENT <= x1:
            note = f"break-even at {display(be * UC_PER_CENT)}, as above"
        elif be is not None:
            note = f"break-even at {display(be * UC_PER_CENT)} (beyond this chart)"
        ly = TOP + PLOT_HEIGHT + BOTTOM + i * LEGEND_ROW
        parts.append(f'<g class="legend"><line x1="{LEFT}" x2="{LEFT + 24}" y1="{ly}" y2="{ly}" stroke="{colour}" '
                     f'stroke-width="3"{dash}/><text x="{LEFT + 30}" y="{ly + 4}">'
                     f"{escape(c.label)}: {escape(note)}</text></g>")
    parts.append("</svg>")
    return "".join(parts)


def bands_range(band_sets: Sequence[Sequence[Mapping[str, Any]]]) -> tuple[int, int, int]:
    """A common balance axis (low, high, step in µ¢) for bands drawn side by side."""
    values = [int(b[k]) for bands in band_sets for b in bands for k in ("p5_uc", "p50_uc", "p95_uc")] or [0]
    step = tick_step(max(values) - min(values) or UC_PER_CENT)
    low, high = _range(values, step)
    return low, high, step


def bands_svg(chart_id: str, pool: str, label: str, bands: Sequence[Mapping[str, Any]],
              axis: tuple[int, int, int], colour_index: int = 0) -> str:
    """One pool's simulated balance over the days: the p5-p95 band shaded and the p50 line, on `axis`."""
    if not bands:
        return '<p class="empty">No simulated days.</p>'
    low, high, step = axis
    d0, d1 = 0, max(int(b["day"]) for b in bands)
    d1 = max(d1, d0 + 1)
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + PLOT_HEIGHT + BOTTOM

    def x(day: int) -> int:
        return LEFT + (day - d0) * plot_w // (d1 - d0)

    def y(uc: int) -> int:
        return TOP + (high - min(max(uc, low), high)) * PLOT_HEIGHT // (high - low)

    colour = COLOURS[colour_index % len(COLOURS)]
    parts = _frame(chart_id, f"{pool}: simulated balance by day, {label} (p5-p95 shaded, p50 line)", height)
    parts += dollar_grid(low, high, step, y, LEFT, plot_w)
    for k in range(TICKS + 1):
        day = d0 + (d1 - d0) * k // TICKS
        anchor = "start" if k == 0 else "end" if k == TICKS else "middle"
        parts.append(f'<line class="tickmark" x1="{x(day)}" x2="{x(day)}" y1="{TOP + PLOT_HEIGHT}" '
                     f'y2="{TOP + PLOT_HEIGHT + 5}"/><text class="tick" x="{x(day)}" y="{TOP + PLOT_HEIGHT + 18}" '
                     f'text-anchor="{anchor}">{day}</text>')
    upper = " ".join(f"{x(int(b['day']))},{y(int(b['p95_uc']))}" for b in bands)
    lower = " ".join(f"{x(int(b['day']))},{y(int(b['p5_uc']))}" for b in reversed(bands))
    middle = " ".join(f"{x(int(b['day']))},{y(int(b['p50_uc']))}" for b in bands)
    parts.append(f'<polygon class="band" data-pool="{escape(pool)}" fill="{colour}" fill-opacity="0.22" '
                 f'stroke="none" points="{upper} {lower}"><title>{escape(pool)} p5-p95</title></polygon>'
                 f'<polyline class="median" data-pool="{escape(pool)}" fill="none" stroke="{colour}" stroke-width="2" '
                 f'points="{middle}"><title>{escape(pool)} p50</title></polyline>'
                 f'<text class="axis" x="{LEFT + plot_w // 2}" y="{TOP + PLOT_HEIGHT + 38}" text-anchor="middle">'
                 "day</text>"
                 f'<text class="axis" transform="translate(16 {TOP + PLOT_HEIGHT // 2}) rotate(-90)" '
                 f'text-anchor="middle">{escape(pool)} balance ($)</text>'
                 f'<text class="panel" x="{LEFT + 8}" y="{TOP + 16}">{escape(pool)}, {escape(label)}</text></svg>')
    return "".join(parts)
