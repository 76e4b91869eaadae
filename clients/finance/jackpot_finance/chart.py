"""An inline SVG chart of each pool's balance through a period (`Reconciliation.balances`): one step polyline
per pool, since a balance holds until the next entry. Self-contained (no script, no external reference) and
drawn with integer arithmetic from integer µ¢, so it never rounds money through a float.

Each pool's line starts at its opening balance at the period's start and ends at its closing balance at the
period's end or at the time the report was generated, whichever is earlier (nothing is drawn in the future), so a
pool with no or one balance point in the period still draws (flat, or one step)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from .model import Report
from .money import UC_PER_CENT, UC_PER_DOLLAR
from .times import local_iso, zone

WIDTH, PLOT_HEIGHT = 960, 300
LEFT, RIGHT, TOP, BOTTOM = 120, 24, 16, 56  # margins around the plot: tick labels and the axes' titles
LEGEND_ROW, LEGEND_COLUMN, LEGEND_PER_ROW = 22, 220, 4
COLOURS = ("#1f5fa8", "#b8430f", "#2e7d32", "#7b3fa0", "#a07800", "#00838f", "#c2185b", "#5d4037")
TICKS = 4  # intervals on each axis


@dataclass(frozen=True)
class Series:
    """One pool's balances, (ms, µ¢) in order."""

    pool: str
    hidden: bool
    points: list[tuple[int, int]]


def chart_end(report: Report) -> int:
    """Where the lines stop: the period's end, or the time the report was generated when that is earlier."""
    generated = int(report["generated_at_ms"])
    end = int(report["to_ms"])
    return min(end, generated) if generated > 0 else end


def series(report: Report) -> list[Series]:
    """Each pool's line: the reconciled pools in their order (opening, the balance points, closing), then any
    pool that only the balance points name; none drawn past `chart_end`. jackpotd dates a period's last points
    at its end (the closing balance, the quarter hour under way) even while the period runs: such a point is
    drawn at `chart_end` with its balance, which is the balance then (nothing is booked in the future)."""
    start, end = report["from_ms"], chart_end(report)
    by_pool: dict[str, list[tuple[int, int, int]]] = {}
    for b in report["balances"]:
        by_pool.setdefault(b["pool"], []).append((b["sequence"], min(b["at_ms"], end), b["balance_ucents"]))
    out: list[Series] = []
    for p in report["pools"]:
        points = [(at, uc) for _, at, uc in sorted(by_pool.pop(p["pool"], []))]
        out.append(Series(p["pool"], p["hidden"], [(start, p["opening_ucents"]), *points, (end, p["closing_ucents"])]))
    for pool, found in by_pool.items():
        points = [(at, uc) for _, at, uc in sorted(found)]
        out.append(Series(pool, False, [*points, (end, points[-1][1])]))
    return out


def _steps(points: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A balance holds until the next entry changes it: a step after each point."""
    out = points[:1]
    for at, uc in points[1:]:
        out += [(at, out[-1][1]), (at, uc)]
    return out


def tick_step(span_uc: int) -> int:
    """A round step for the balance axis (1, 2 or 5 × a power of ten cents) giving at most TICKS intervals."""
    scale = UC_PER_CENT
    while True:
        for m in (1, 2, 5):
            if m * scale * TICKS >= span_uc:
                return m * scale
        scale *= 10


def tick_label(uc: int, step: int) -> str:
    """$12,000, or $0.05 when the steps are below a dollar (a label of the axis, not an amount)."""
    sign = "-" if uc < 0 else ""
    whole, frac = divmod(abs(uc), UC_PER_DOLLAR)
    return f"{sign}${whole:,}" + ("" if step % UC_PER_DOLLAR == 0 else f".{frac // UC_PER_CENT:02d}")


def dollar_grid(low: int, high: int, step: int, y: Callable[[int], int], left: int, width: int) -> list[str]:
    """The horizontal grid lines and their dollar labels from `low` to `high` µ¢ every `step`, for a plot whose left
    edge is `left` and width `width` (`y` maps µ¢ to the picture's y)."""
    return [f'<line class="grid" x1="{left}" x2="{left + width}" y1="{y(uc)}" y2="{y(uc)}"/>'
            f'<text class="tick" x="{left - 6}" y="{y(uc) + 4}" text-anchor="end">{escape(tick_label(uc, step))}</text>'
            for uc in range(low, high + 1, step)]


def svg(report: Report) -> str:
    """The chart as an inline <svg> element, or a short note when the period has nothing to draw."""
    if chart_end(report) <= report["from_ms"]:
        return '<p class="empty">The period had not begun when this report was generated: nothing to draw yet.</p>'
    lines = series(report)
    if not lines:
        return '<p class="empty">No pool balances in this period.</p>'
    times = [at for s in lines for at, _ in s.points]
    values = [uc for s in lines for _, uc in s.points]
    t0, t1 = min(times), max(times)
    t1 = max(t1, t0 + 1)
    step = tick_step(max(values) - min(0, *values))
    low, high = min(0, *values) // step * step, -(-max(values) // step) * step
    high = max(high, low + step)
    plot_w = WIDTH - LEFT - RIGHT
    legend_rows = -(-len(lines) // LEGEND_PER_ROW)
    height = TOP + PLOT_HEIGHT + BOTTOM + legend_rows * LEGEND_ROW

    def x(at: int) -> int:
        return LEFT + (min(max(at, t0), t1) - t0) * plot_w // (t1 - t0)

    def y(uc: int) -> int:
        return TOP + (high - uc) * PLOT_HEIGHT // (high - low)

    tz = zone(report["time_zone"])
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
             f'aria-labelledby="chart-title"><title id="chart-title">Balance of each pool through the period'
             '</title>',
             f'<rect class="plot" x="{LEFT}" y="{TOP}" width="{plot_w}" height="{PLOT_HEIGHT}"/>']
    parts += dollar_grid(low, high, step, y, LEFT, plot_w)
    for k in range(TICKS + 1):
        at = t0 + (t1 - t0) * k // TICKS
        label = local_iso(at, tz)
        anchor = "start" if k == 0 else "end" if k == TICKS else "middle"  # the ends stay inside the picture
        parts.append(f'<line class="tickmark" x1="{x(at)}" x2="{x(at)}" y1="{TOP + PLOT_HEIGHT}" '
                     f'y2="{TOP + PLOT_HEIGHT + 5}"/><text class="tick" x="{x(at)}" y="{TOP + PLOT_HEIGHT + 18}" '
                     f'text-anchor="{anchor}">{escape(label[5:10] + " " + label[11:16])}</text>')
    parts.append(f'<text class="axis" x="{LEFT + plot_w // 2}" y="{TOP + PLOT_HEIGHT + 38}" text-anchor="middle">'
                 f'time ({escape(report["time_zone"] or "UTC")})</text>'
                 f'<text class="axis" transform="translate(16 {TOP + PLOT_HEIGHT // 2}) rotate(-90)" '
                 'text-anchor="middle">pool balance ($)</text>')
    for i, s in enumerate(lines):
        colour = COLOURS[i % len(COLOURS)]
        dash = ' stroke-dasharray="6 4"' if s.hidden else ""
        coords = " ".join(f"{x(at)},{y(uc)}" for at, uc in _steps(s.points))
        name = s.pool + (" (hidden)" if s.hidden else "")
        parts.append(f'<polyline class="series" data-pool="{escape(s.pool)}" fill="none" stroke="{colour}" '
                     f'stroke-width="2"{dash} points="{coords}"><title>{escape(name)}</title></polyline>')
        lx = LEFT + (i % LEGEND_PER_ROW) * LEGEND_COLUMN
        ly = TOP + PLOT_HEIGHT + BOTTOM + (i // LEGEND_PER_ROW) * LEGEND_ROW
        parts.append(f'<g class="legend"><line x1="{lx}" x2="{lx + 24}" y1="{ly}" y2="{ly}" stroke="{colour}" '
                     f'stroke-width="3"{dash}/><text x="{lx + 30}" y="{ly + 4}">{escape(name)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)
