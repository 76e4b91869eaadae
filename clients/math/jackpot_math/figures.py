"""The certificate's sections from the odds package's figures (parts A, B, C of issue 24), as plain JSON data.

Exact figures (Fractions) are written twice: as exact text ("num/den") and as the text people read, rounded half up
by `jackpotd.odds.exact_text`; money people read is "$10,000.00", and the key names the unit of every integer
(`_cents`, `_uc`, `_ppm`). Long-run and simulated figures are statistics of a stochastic model, not money moved:
their float µ¢ are rounded to whole µ¢ (then floored to the cent for people) only to be shown."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from jackpot_finance.model import hand_name
from jackpot_finance.money import exact as exact_dollars

from jackpotd.domain.link import LinkConfig
from jackpotd.domain.money import PPM, UC_PER_CENT
from jackpotd.odds.exact_text import decimal_text, dollars_text, one_in, percent_text
from jackpotd.odds.hand_odds import hand_odds
from jackpotd.odds.long_run import LongRun
from jackpotd.odds.play import Play
from jackpotd.odds.returns import BreakEven, ReturnAt, hit_times, wager_shares
from jackpotd.odds.simulate import Simulation

HOURS_PER_DAY = 24
DAYS_PER_YEAR = 365
RETAINED = "retained"


def exact(x: Fraction | int) -> str:
    """An exact rational as text: "4/2598960", or "7" when whole."""
    f = Fraction(x)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def floor_ppm(x: Fraction) -> int:
    """A ratio in whole ppm, rounded down (for charts and quick comparison; the exact figure is beside it)."""
    return int(x * PPM // 1)


def uc_text(uc: float | int) -> str:
    """µ¢ (an exact int, or a statistic's float rounded to the µ¢) as whole dollars and cents, floored to the cent."""
    return dollars_text(round(uc) // UC_PER_CENT)


def grouped(text: str) -> str:
    """A decimal's text with thousands separators in its whole part: "123961.8" reads "123,961.8"."""
    whole, dot, frac = text.partition(".")
    sign = "-" if whole.startswith("-") else ""
    return f"{sign}{int(whole.lstrip('-')):,}{dot}{frac}"


def finite(x: float) -> float | None:
    """A statistic as JSON can hold it: None for NaN or infinity (an interval of one path, a pool that grows)."""
    return x if math.isfinite(x) else None


def stat_percent(x: float, places: int = 4) -> str:
    """A statistic's ratio as percent text (from its float: a statistic, not an exact figure); "—" when undefined."""
    return f"{x * 100:.{places}f}%" if math.isfinite(x) else "—"


def play_section(play: Play) -> dict[str, Any]:
    """How the link is played, with the wagers it makes an hour and a year."""
    per_hour = play.total_wagers_per_hour
    return {"tables": {g: play.tables.get(g, 0) for g in play.games}, "seats_filled": play.seats_filled,
            "hands_per_hour": play.hands_per_hour, "wagers_per_hour": per_hour,
            "wagers_per_year": per_hour * HOURS_PER_DAY * DAYS_PER_YEAR,
            "mix": {g: exact(share) for g, share in play.mix().items()}}


def balances_section(config: LinkConfig, balances_uc: Mapping[str, int]) -> dict[str, Any]:
    """The pools' balances the exact figures are taken at: µ¢, whole cents (floored) and dollars."""
    names = [p.name for p in config.pools]
    return {"balances_uc": {p: balances_uc.get(p, 0) for p in names},
            "balances_cents": {p: balances_uc.get(p, 0) // UC_PER_CENT for p in names},
            "balances_text": {p: uc_text(balances_uc.get(p, 0)) for p in names}}


def shares_section(config: LinkConfig) -> dict[str, Any]:
    """Each pool's and the retained share of one wager under the newest rate set: ppm and µ¢."""
    shares = wager_shares(config)
    rows = [{"pool": pool, "ppm": ppm, "per_wager_uc": shares.per_wager_uc(pool),
             "per_wager": exact_dollars(shares.per_wager_uc(pool)), "percent": percent_text(Fraction(ppm, PPM), 2)}
            for pool, ppm in sorted(shares.pools_ppm.items())]
    rows.append({"pool": RETAINED, "ppm": shares.retained_ppm, "per_wager_uc": shares.wager_cents * shares.retained_ppm,
                 "per_wager": exact_dollars(shares.wager_cents * shares.retained_ppm),
                 "percent": percent_text(Fraction(shares.retained_ppm, PPM), 2)})
    return {"wager_cents": shares.wager_cents, "wager": dollars_text(shares.wager_cents),
            "rate_version": shares.rate_version, "rows": rows}


def odds_section(game: str) -> dict[str, Any]:
    """Every hand category of `game` with its exact count among all hands, in the engine's order."""
    odds = hand_odds(game)
    rows = [{"category": cat, "hand": hand_name(cat), "count": n, "total": odds.total,
             "probability": exact(odds.probability(cat)), "probability_percent": percent_text(odds.probability(cat), 6),
             "one_in": one_in(odds.probability(cat)) if n else "never"}
            for cat, n in odds.counts.items()]
    return {"game": game, "total": odds.total, "method": odds.method, "rows": rows}


def return_section(ret: ReturnAt) -> dict[str, Any]:
    """The jackpot wager's exact return for one seat at the given balances, category by category."""
    wager_uc = ret.wager_cents * UC_PER_CENT
    rows = [{"category": c.category, "hand": hand_name(c.category), "pool": c.pool, "count": c.count,
             "total": c.total, "payout_cents": c.payout_cents, "payout": dollars_text(c.payout_cents),
             "funded_cents": c.funded_cents, "funded": dollars_text(c.funded_cents), "rule": c.rule,
             "expected_uc": exact(c.expected_uc), "contribution_percent": percent_text(c.expected_uc / wager_uc),
             "contribution_ppm": floor_ppm(c.expected_uc / wager_uc)}
            for c in ret.categories]
    return {"wager_cents": ret.wager_cents, "categories": rows, "expected_uc": exact(ret.expected_uc),
            "expected": f"${grouped(decimal_text(ret.expected_uc / (100 * UC_PER_CENT), 6))}",
            "rtp": exact(ret.rtp), "rtp_percent": percent_text(ret.rtp),
            "rtp_ppm": floor_ppm(ret.rtp)}


def cross_check_section(ret: ReturnAt, by_pricing_uc: Fraction) -> dict[str, Any]:
    """The return found the second, independent way (every hand through the evaluator, priced by price_round):
    it must equal the closed form exactly, so certainly to the µ¢."""
    return {"closed_form_uc": exact(ret.expected_uc), "by_pricing_uc": exact(by_pricing_uc),
            "agrees": by_pricing_uc == ret.expected_uc}


def break_even_section(be: BreakEven) -> dict[str, Any]:
    """The smallest balance of the game's percentage pool at which the wager returns at least 100%, or never."""
    if be.pool is None:
        text = f"none: no percentage pool, the return is fixed at {percent_text(be.rtp_at_reset)}"
    elif be.balance_cents is None:
        text = "never"
    elif be.balance_cents == 0:
        text = f"{dollars_text(0)}: 100% or more at any balance"
    else:
        text = dollars_text(be.balance_cents)
    return {"pool": be.pool, "balance_cents": be.balance_cents, "balance": text,
            "rtp_at_reset": exact(be.rtp_at_reset), "rtp_at_reset_percent": percent_text(be.rtp_at_reset)}


def curve_section(pool: str | None, points: tuple[tuple[int, Fraction], ...]) -> dict[str, Any]:
    """The return against the percentage pool's balance: exact rtp beside ppm (floored) for the chart."""
    return {"pool": pool, "points": [{"balance_cents": cents, "balance": dollars_text(cents), "rtp": exact(rtp),
                                      "rtp_percent": percent_text(rtp), "rtp_ppm": floor_ppm(rtp)}
                                     for cents, rtp in points]}


def hit_times_section(config: LinkConfig, play: Play) -> list[dict[str, Any]]:
    """Each paying hand's exact hit rate at this play, per game and link-wide (game "*")."""
    rows = []
    for t in hit_times(config, play):
        per_day = t.hits_per_hour * HOURS_PER_DAY
        rows.append({
            "game": t.game, "category": t.category, "hand": hand_name(t.category), "pool": t.pool,
            "probability": exact(t.probability), "one_in": one_in(t.probability) if t.probability else "never",
            "hits_per_hour": exact(t.hits_per_hour),
            "hits_per_hour_text": grouped(decimal_text(t.hits_per_hour, 4)),
            "hits_per_day_text": grouped(decimal_text(per_day, 2)),
            "hits_per_year_text": grouped(decimal_text(per_day * DAYS_PER_YEAR, 1)),
            "hours_between": None if t.hours_between is None else exact(t.hours_between),
            "hours_between_text": "never" if t.hours_between is None
            else grouped(decimal_text(t.hours_between, 2)),
            "days_between_text": "never" if t.hours_between is None
            else grouped(decimal_text(t.hours_between / HOURS_PER_DAY, 2))})
    return rows


def long_run_section(lr: LongRun, play: Play) -> dict[str, Any]:
    """Part B's long-run figures per wager, with the operator's funding a year at this play."""
    per_year = play.total_wagers_per_hour * HOURS_PER_DAY * DAYS_PER_YEAR
    op = lr.operator_per_wager_uc
    ok = math.isfinite(op)
    pools = [{"pool": p.pool, "recurrent": p.recurrent,
              "mean_balance_uc": round(p.mean_balance_uc) if p.recurrent and math.isfinite(p.mean_balance_uc) else None,
              "mean_balance": uc_text(p.mean_balance_uc) if p.recurrent and math.isfinite(p.mean_balance_uc)
              else "grows without bound",
              **{f"{q}_uc": getattr(p, f"{q}_uc") for q in ("p5", "p50", "p95", "p99")},
              **{q: uc_text(getattr(p, f"{q}_uc")) if p.recurrent else "—" for q in ("p5", "p50", "p95", "p99")},
              "at_cap": finite(p.at_cap), "at_cap_percent": stat_percent(p.at_cap, 2),
              **{f"{k}_per_wager_uc": finite(getattr(p, f"{k}_per_wager_uc"))
                 for k in ("paid", "shortfall", "reset", "overflow", "growth")}}
             for p in lr.pools]
    return {"wager_cents": lr.wager_cents, "rtp": finite(lr.rtp), "rtp_percent": stat_percent(lr.rtp),
            "tolerance": finite(lr.tolerance), "method": lr.method, "pools": pools,
            "reserve_in_per_wager_uc": finite(lr.reserve_in_per_wager_uc),
            "reserve_out_per_wager_uc": finite(lr.reserve_out_per_wager_uc),
            "operator_per_wager_uc": finite(lr.operator_per_wager_uc),
            "operator_per_wager": exact_dollars(round(op)) if ok else "—",
            "wagers_per_year": per_year,
            "operator_per_year_uc": round(op * per_year) if ok else None,
            "operator_per_year": uc_text(op * per_year) if ok else "—"}


def _inside(x: float, low: float, high: float) -> bool | None:
    """Whether `x` lies in [low, high]; None when either side is undefined."""
    return None if not (math.isfinite(x) and math.isfinite(low) and math.isfinite(high)) else low <= x <= high


def simulation_section(sim: Simulation, lr: LongRun) -> dict[str, Any]:
    """Part C's seeded simulation: bands per pool and day, largest pools, hits, funding and its return with its 95%
    interval, bare and with the meters (what the period left in share-paying pools counted as returned: the figure
    to hold against the long-run return), and whether the long-run return lies in each interval."""
    low, high = sim.rtp_ci95
    m_low, m_high = sim.rtp_with_meters_ci95
    return {
        "seed": sim.seed, "days": sim.days, "paths": sim.paths, "wagers_per_path": sim.wagers_per_path,
        "bands": {pool: [{"day": b.day, "p5_uc": b.p5_uc, "p50_uc": b.p50_uc, "p95_uc": b.p95_uc} for b in bands]
                  for pool, bands in sim.bands.items()},
        "largest": {pool: {"largest_uc": uc, "largest": uc_text(uc), "p95_uc": sim.largest_p95_uc.get(pool, uc),
                           "p95": uc_text(sim.largest_p95_uc.get(pool, uc))} for pool, uc in sim.largest_uc.items()},
        "hits": [{"game": game, "category": cat, "hand": hand_name(cat), "mean_per_path": n,
                  "mean_per_path_text": f"{n:,.2f}"} for game, by_cat in sim.hits.items() for cat, n in by_cat.items()],
        "simultaneous_rounds": sim.simultaneous_rounds,
        "operator_funding_mean_cents": sim.operator_funding_mean_cents,
        "operator_funding_mean": dollars_text(round(sim.operator_funding_mean_cents)),
        "operator_funding_p95_cents": sim.operator_funding_p95_cents,
        "operator_funding_p95": dollars_text(sim.operator_funding_p95_cents),
        "paid_cents": sim.paid_cents, "wagered_cents": sim.wagered_cents, "paid": dollars_text(sim.paid_cents),
        "wagered": dollars_text(sim.wagered_cents), "rtp": sim.rtp, "rtp_percent": stat_percent(sim.rtp),
        "rtp_ci95": [finite(low), finite(high)], "rtp_ci95_percent": [stat_percent(low), stat_percent(high)],
        "long_run_rtp_in_ci95": _inside(lr.rtp, low, high),
        "rtp_with_meters": finite(sim.rtp_with_meters), "rtp_with_meters_percent": stat_percent(sim.rtp_with_meters),
        "rtp_with_meters_ci95": [finite(m_low), finite(m_high)],
        "rtp_with_meters_ci95_percent": [stat_percent(m_low), stat_percent(m_high)],
        "long_run_rtp_in_meters_ci95": _inside(lr.rtp, m_low, m_high),
        "elapsed_s": sim.elapsed_s, "method": sim.method}
