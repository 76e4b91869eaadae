"""The certificate page's tables, one configuration's side at a time. With a what-if, each table is drawn for the
current and the proposed configuration, and a cell whose text differs from the other side's (same row, same
column) is marked `diff`. Every text is escaped: ids, pool names and rules come from the document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from html import escape
from typing import Any

from jackpot_finance.model import hand_name
from jackpot_finance.money import cents_uc, display

from jackpotd.canonical import canonical_json

from ..units import NONE, duration_text, threshold_text, when_text

Cell = tuple[str, bool]  # text, numeric (right-aligned)
Row = list[Cell]
Side = Mapping[str, Any]
INSIDE = {True: "yes", False: "NO", None: "— (one path)"}


def money(cents: int | None) -> str:
    """Whole dollars and cents of a config amount, or "none"."""
    return "none" if cents is None else display(cents_uc(cents))


def ppm_text(ppm: int) -> str:
    """A rate in ppm with its percentage: 200,000 ppm (20%)."""
    whole, frac = divmod(ppm, 10_000)
    pct = f"{whole}" if not frac else f"{whole}.{frac:04d}".rstrip("0")
    return f"{ppm:,} ppm ({pct}%)"


def stat(x: float | None, fmt: str) -> str:
    """A statistic formatted, or "—" when the document has none (undefined)."""
    return "—" if x is None else format(x, fmt)


def table(cls: str, headers: Sequence[str], rows: Sequence[Row], other: Sequence[Row] | None = None,
          numeric_head: Sequence[bool] | None = None) -> str:
    """A table; with `other` (the other side's rows), a cell differing from the cell of the other side's row with
    the same first cell (or no such row) is marked `diff`."""
    by_key = {r[0][0]: r for r in other} if other is not None else None
    nums = numeric_head or [False] * len(headers)
    head = "".join(f'<th scope="col"{" class=num" if n else ""}>{escape(h)}</th>' for h, n in zip(headers, nums,
                                                                                                 strict=False))
    body = []
    for r in rows:
        twin = by_key.get(r[0][0]) if by_key is not None else None
        cells = []
        for i, (text, num) in enumerate(r):
            classes = ["num"] if num else []
            if by_key is not None and (twin is None or i >= len(twin) or twin[i][0] != text):
                classes.append("diff")
            cls_attr = f' class="{" ".join(classes)}"' if classes else ""
            tag = "th" if i == 0 else "td"
            scope = ' scope="row"' if i == 0 else ""
            cells.append(f"<{tag}{scope}{cls_attr}>{escape(text)}</{tag}>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (f'<table class="{escape(cls)}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
            if rows else '<p class="empty">Nothing to list.</p>')


def config_rows(side: Side) -> list[Row]:
    """The link's settings as (setting, value) rows."""
    c = side["config"]
    return [
        [("link", False), (str(c["link_id"]), False)], [("mode", False), (str(c["mode"]), False)],
        [("jackpot wager", False), (money(c["wager_cents"]), False)],
        [("verification threshold", False), (threshold_text(c["verification_threshold_cents"]), False)],
        [("dual approval threshold", False), (threshold_text(c.get("dual_approval_threshold_cents")), False)],
        [("gaming day starts", False), (f"{c['gaming_day_start']} {c['time_zone']}", False)],
        [("tables registered", False), (f"{len(c['tables']):,}", False)],
        [("config SHA-256", False), (str(side["config_sha256"]), False)],
    ]


def pools_rows(side: Side) -> list[Row]:
    """Each pool's reset, cap, overflow and the balance the exact figures use."""
    bal = side["balances_uc"]
    return [[(p["name"], False), (NONE if p["name"] == "RESERVE" else money(p["reset_cents"]), True),
             (money(p["cap_cents"]), True),
             (p["overflow_to"] if p["cap_cents"] is not None else "—", False),
             (display(int(bal.get(p["name"], 0))), True)] for p in side["config"]["pools"]]


def rates_rows(side: Side) -> list[Row]:
    """Every rate set: version, when in force, its approval and each share."""
    out: list[Row] = []
    for r in side["config"]["rate_sets"]:
        shares = ", ".join(f"{p} {ppm_text(v)}" for p, v in sorted(r["pools_ppm"].items()))
        out.append([(f"v{r['version']}", False), (when_text(r["effective_at_ms"], side["config"]["time_zone"]), True),
                    (str(r["approval_ref"]) or "—", False), (shares, False), (ppm_text(r["retained_ppm"]), True)])
    return out


def paytable_rows(side: Side, game: str) -> list[Row]:
    """The game's paytable: hand, pool, fixed amount, percentage, whether it resets its pool."""
    return [[(hand_name(e["category"]), False), (e["pool"], False), (money(e["min_cents"]), True),
             (ppm_text(e["percent_ppm"]) if e["percent_ppm"] else "—", True), ("yes" if e["resets_pool"] else "no",
                                                                               False)]
            for e in side["config"]["paytables"].get(game, [])]


def shares_rows(side: Side) -> list[Row]:
    """Where each wager goes: each pool's and the retained share."""
    return [[(r["pool"], False), (ppm_text(r["ppm"]), True), (f"{r['per_wager_uc']:,} µ¢", True),
             (r["per_wager"], True)] for r in side["wager_shares"]["rows"]]


def odds_rows(odds: Mapping[str, Any]) -> list[Row]:
    """Every category of a game with its exact count, probability and 1 in N."""
    return [[(r["hand"], False), (f"{r['count']:,}", True), (f"{r['total']:,}", True), (r["probability"], True),
             (r["probability_percent"], True), (r["one_in"], True)] for r in odds["rows"]]


def return_rows(ret: Mapping[str, Any]) -> list[Row]:
    """The return at the balances shown, category by category, with the total."""
    rows: list[Row] = [[(r["hand"], False), (r["pool"], False), (r["payout"], True), (r["funded"], True),
                        (r["rule"], False), (r["contribution_percent"], True)] for r in ret["categories"]]
    rows.append([("total", False), ("", False), (f"expected {ret['expected']}", True), ("", True),
                 (f"exact: {ret['expected_uc']} µ¢ per wager", False), (ret["rtp_percent"], True)])
    return rows


def hit_rows(side: Side) -> list[Row]:
    """Each paying hand's rate at this play: per game, then link-wide when the link plays more than one game."""
    games = {t["game"] for t in side["hit_times"]} - {"*"}
    return [[(t["hand"] if len(games) == 1 else f"{'link' if t['game'] == '*' else t['game']}: {t['hand']}", False),
             (t["pool"] or "—", False),
             (t["one_in"], True), (t["hits_per_hour_text"], True), (t["hits_per_day_text"], True),
             (t["hits_per_year_text"], True), (duration_text(_hours(t["hours_between"])), True)]
            for t in side["hit_times"] if len(games) > 1 or t["game"] != "*"]


def _hours(exact: str | None) -> Fraction | None:
    """A document's exact hours ("num/den") as a Fraction, None for never."""
    return None if exact is None else Fraction(exact)


def tables_rows(side: Side) -> list[Row]:
    """The tables registered on the link: id, game, seats and whether suspended."""
    return [[(tid, False), (str(tc["game"]), False), (f"{tc['seats']:,}", True), ("yes" if tc["suspended"] else "no",
                                                                               False)]
            for tid, tc in side["config"]["tables"].items()]


def long_run_rows(side: Side) -> list[Row]:
    """Each visible pool's long-run balance figures."""
    return [[(p["pool"] if p["recurrent"] else f"{p['pool']} (grows)", False), (p["mean_balance"], True),
             (p["p5"], True), (p["p50"], True), (p["p95"], True), (p["p99"], True), (p["at_cap_percent"], True)]
            for p in side["long_run"]["pools"]]


def long_run_summary(side: Side) -> list[Row]:
    """The long run's return and money flows per wager and per year."""
    lr = side["long_run"]
    return [[("long-run return to player", False), (lr["rtp_percent"], True)],
            [("numerical tolerance", False), (stat(lr["tolerance"], ".2e"), True)],
            [("RESERVE in, per wager", False), (stat(lr["reserve_in_per_wager_uc"], ",.0f") + " µ¢", True)],
            [("RESERVE out (resets), per wager", False), (stat(lr["reserve_out_per_wager_uc"], ",.0f") + " µ¢", True)],
            [("operator funding, per wager", False), (lr["operator_per_wager"], True)],
            [(f"operator funding, a year ({lr['wagers_per_year']:,} wagers)", False), (lr["operator_per_year"], True)]]


def simulation_summary(side: Side) -> list[Row]:
    """The simulation's headline figures: return and interval, funding, largest pools."""
    s = side["simulation"]
    low, high = s["rtp_ci95_percent"]
    rows: list[Row] = [
        [("seed, paths × days", False), (f"{s['seed']}, {s['paths']} × {s['days']}", True)],
        [("wagers per path", False), (f"{s['wagers_per_path']:,}", True)],
        [("simulated return to player (paid over the period)", False), (s["rtp_percent"], True)],
        [("95% interval (the period's start and end left in)", False), (f"{low} – {high}", True)],
        [("simulated return with the meters", False), (s["rtp_with_meters_percent"], True)],
        [("its 95% interval", False), (" – ".join(s["rtp_with_meters_ci95_percent"]), True)],
        [("long-run return inside it", False), (INSIDE[s["long_run_rtp_in_meters_ci95"]], True)],
        [("operator funding over the period, mean", False), (s["operator_funding_mean"], True)],
        [("operator funding over the period, p95", False), (s["operator_funding_p95"], True)],
        [("rounds with 2 or more hits, per path", False), (f"{s['simultaneous_rounds']:,.2f}", True)],
        [("elapsed", False), (f"{s['elapsed_s']:.1f} s", True)],
    ]
    rows += [[(f"largest {pool} (p95 of paths / max)", False), (f"{v['p95']} / {v['largest']}", True)]
             for pool, v in s["largest"].items()]
    return rows


def sim_hit_rows(side: Side) -> list[Row]:
    """Mean hits per path by game and hand."""
    return [[(f"{h['game']}: {h['hand']}", False), (h["mean_per_path_text"], True)] for h in side["simulation"]["hits"]]


def changes_rows(changes: Sequence[Mapping[str, Any]], zone: str = "UTC") -> list[Row]:
    """What the proposal changes, field by field (a value that one side lacks shows as —)."""
    return [[(c["field"], False), (_value(c["field"], c["current"], zone), False),
             (_value(c["field"], c["proposed"], zone), False)] for c in changes]


def _label(key: str) -> str:
    """A configuration key as words, its unit left to the value: "effective_at_ms" reads "effective at"."""
    for unit in ("_cents", "_ppm", "_ms", "_uc"):
        key = key.removesuffix(unit)
    return key.replace("_", " ")


def _value(key: str, v: Any, zone: str) -> str:
    """A configuration value as a person reads it, by the unit its key names: cents as dollars (a threshold of 0
    as none), ppm with its percentage, an instant as a date in the link's zone; a rate set, pool or entry as its
    fields in those units ("pools_ppm: MAJOR 250,000 ppm (25%); …"); — for none."""
    leaf = key.rsplit(".", 1)[-1].split("[", 1)[0]
    if leaf.endswith("threshold_cents") and not v:
        return NONE  # a threshold not set (absent, or 0)
    if v is None:
        return "—"
    if isinstance(v, dict):
        if leaf.endswith(("_ppm", "_cents", "_ms")):  # pools to amounts: each in the map's unit
            return ", ".join(f"{k} {_value(leaf, x, zone)}" for k, x in v.items())
        return "; ".join(f"{_label(k)}: {_value(k, x, zone)}" for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(_value(leaf, x, zone) for x in v)
    if isinstance(v, bool) or not isinstance(v, int):
        return (v or "—") if isinstance(v, str) else canonical_json(v)
    if leaf.endswith("threshold_cents"):
        return threshold_text(v)
    if leaf.endswith("_cents"):
        return money(v)
    if leaf.endswith("_ppm"):
        return ppm_text(v)
    if leaf.endswith("_ms"):
        return when_text(v, zone)
    return f"{v:,}" if leaf != "version" else f"v{v}"
