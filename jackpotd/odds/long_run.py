"""A link's long-run figures per wager (issue 24), computed deterministically (no sampling); one deck per round (33).

Wagers arrive one at a time at the newest rate set: each puts c_P = wager_cents × rate_ppm µ¢ into each pool P (a
cap passes the excess to its overflow target), then its hand is drawn from the exact category probabilities of its
game (the game drawn by the play's mix); a paying hand is priced against its pool as RULES.md §5 prices one seat:
max(min, pct × B), the operator making up a shortfall (§5.7), then a reset to R from RESERVE first (§5.8). Each
visible pool is then a one-dimensional Markov process in its balance (one seat hits at most one pool): a drift c
per wager and downward jumps. Its stationary law is found by the cut balance c·f(b) = Σ_k p_k [F(b) − F(U_k(b))],
marched down from the top (`stationary.py`); a pool whose fixed payouts are beaten by its contributions and has no
cap is transient (it grows for ever: `recurrent` False, percentiles -1). RESERVE only receives (its rate,
overflows) and pays resets: in the long run the operator pays max(0, reset draws − RESERVE inflow) per wager for
resets, plus every shortfall. Every figure here is a statistic of that model (a float), never money moved.

One deck per round (issue 33): the seats of a round are dealt from one deck (hold'em: one shared board), so a pool's
hits come per round, one or several at a time (`round_law`: exact to two hits a round, or hold'em's estimate). A
round's several hits of one pool are one jump of the summed minimum and the compounded percentage, 1 − Π(1 − pct)
(a share group as §5.4 prices it, to the cent; a straight flush and a royal together, approximately where a
minimum binds); its rate per wager is its chance per round over the seats.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import prod

import numpy as np

from ..domain.errors import InvalidInput
from ..domain.link import LinkConfig
from ..domain.money import PPM, UC_PER_CENT
from ..domain.pools import RESERVE
from ..domain.rates import newest_rates
from .hand_odds import hand_odds
from .play import Play
from .round_law import round_law
from .stationary import BINS, Jump, Law, PoolModel, solve, top_of

PERCENTILES = (0.05, 0.50, 0.95, 0.99)
CONSERVATION = 1e-6  # |c − overflow + reset + shortfall − paid| / c of a recurrent pool must stay below this


@dataclass(frozen=True, slots=True)
class PoolLongRun:
    """One visible pool in the long run, per wager of the link (µ¢; floats are model statistics). A transient pool
    (`recurrent` False) grows by `growth_per_wager_uc` for ever: its balance figures are -1 (not defined)."""

    pool: str
    recurrent: bool
    mean_balance_uc: float
    p5_uc: int
    p50_uc: int
    p95_uc: int
    p99_uc: int
    at_cap: float  # the share of wagers that find the pool at its cap
    paid_per_wager_uc: float
    shortfall_per_wager_uc: float  # §5.7: the operator's part of the payouts
    reset_per_wager_uc: float  # §5.8: what resets put in (RESERVE first, then the operator)
    overflow_per_wager_uc: float  # §3: what the cap passed on
    growth_per_wager_uc: float  # 0 for a recurrent pool


@dataclass(frozen=True, slots=True)
class LongRun:
    """The link in the long run per wager: its pools, RESERVE's flows, the operator's funding and the return to
    player; `tolerance` is the numerical error of `rtp` (the grid halved), `method` says how it was computed."""

    wager_cents: int
    pools: tuple[PoolLongRun, ...]
    reserve_in_per_wager_uc: float
    reserve_out_per_wager_uc: float
    operator_per_wager_uc: float
    rtp: float
    tolerance: float
    method: str


def long_run(config: LinkConfig, play: Play) -> LongRun:
    """The long-run figures of `config` at its newest rate set, its games mixed as `play` plays them, each round
    of a table dealt from one deck."""
    singles, groups = round_rates(config, play)
    return long_run_of(config, singles, groups=groups)


def round_rates(config: LinkConfig, play: Play) -> tuple[dict[tuple[str, str], float],
                                                         dict[tuple[str, ...], float]]:
    """Per wager of the link: the rate of each (game, category) hit alone in its pool's round, and of each group
    (game, category, category, ...) of one pool's hits in one round: the game's share of the play × its chance a
    round (`round_law`) / seats."""
    singles: dict[tuple[str, str], float] = {}
    groups: dict[tuple[str, ...], float] = {}
    seats = play.seats_filled
    for game, share in play.mix().items():
        entries = config.paytable(game).entries
        law = round_law(game, {c: e.pool for c, e in entries.items()}, seats)
        for pattern, q in law.patterns.items():
            if len(pattern) == 1:
                singles[(game, pattern[0])] = float(share * q / seats)
            else:
                groups[(game, *pattern)] = float(share * q / seats)
    return singles, groups


def _probabilities(config: LinkConfig, play: Play) -> dict[tuple[str, str], Fraction]:
    """Per wager of the link, the exact probability of each (game, paying category): the game's share of the play
    times the hand's exact probability (`hand_odds`, counted from the paying engine's evaluators)."""
    out: dict[tuple[str, str], Fraction] = {}
    for game, share in play.mix().items():
        odds = hand_odds(game)
        for category in config.paytable(game).entries:
            out[(game, category)] = share * odds.probability(category)
    return out


def pool_models(config: LinkConfig, probabilities: Mapping[tuple[str, str], Fraction | float],
                groups: Mapping[tuple[str, ...], float] | None = None) -> dict[str, PoolModel]:
    """Each visible pool's drift, reset, cap and jumps (before overflow from other pools is added): one jump per
    (game, category) at its rate per wager, and one per group (game, categories...) of one pool's hits in a round
    (the module doc: the summed minimum and the compounded percentage)."""
    rates = newest_rates(config.rate_sets)
    # entries alike (the same minimum, percentage and reset) are one jump: hold'em and stud share their rows
    alike: dict[str, dict[tuple[float, float, bool], float]] = {}

    def add(pool: str, key: tuple[float, float, bool], rate: float) -> None:
        jumps = alike.setdefault(pool, {})
        jumps[key] = jumps.get(key, 0.0) + rate

    for (game, category), prob in probabilities.items():
        entry = config.paytable(game).entries[category]
        if not config.pool_spec(entry.pool).visible:
            raise InvalidInput(f"paytable[{category}].pool", entry.pool,
                               f"{game}: the long-run model prices hits from the visible pools only")
        add(entry.pool, (float(entry.min_cents * UC_PER_CENT), entry.percent_ppm / PPM, entry.resets_pool),
            float(prob))
    for (game, *cats), rate in (groups or {}).items():
        members = [config.paytable(game).entries[c] for c in cats]
        kept = prod(1 - e.percent_ppm / PPM for e in members)
        add(members[0].pool, (float(sum(e.min_cents for e in members) * UC_PER_CENT), 1 - kept,
                              any(e.resets_pool for e in members)), rate)
    return {p.name: PoolModel(float(config.wager_cents * rates.pools_ppm.get(p.name, 0)),
                              float(p.reset_cents * UC_PER_CENT),
                              None if p.cap_cents is None else float(p.cap_cents * UC_PER_CENT),
                              tuple(Jump(prob, min_uc, pct, resets)
                                    for (min_uc, pct, resets), prob in alike.get(p.name, {}).items() if prob))
            for p in config.pools if p.visible}


def long_run_of(config: LinkConfig, probabilities: Mapping[tuple[str, str], Fraction | float],
                bins: int = BINS, groups: Mapping[tuple[str, ...], float] | None = None) -> LongRun:
    """The long-run figures from given per-wager rates of (game, category) hits and of groups of one pool's hits
    in a round (`long_run` takes them from the one-deck round law; without `groups`, every hit stands alone: the
    one-seat model); `bins` cells per pool's grid, and half as many for the error estimate."""
    models = pool_models(config, probabilities, groups)
    specs = {p.name: p for p in config.pools}
    inflow: dict[str, float] = {name: 0.0 for name in specs}
    figures: dict[str, PoolLongRun] = {}
    tolerance = 0.0
    notes: list[str] = []
    # capped pools first: their overflow (its long-run mean) joins the drift of the uncapped target
    for name in sorted(models, key=lambda n: models[n].cap_uc is None):
        model = models[name]
        model = PoolModel(model.drift_uc + inflow[name], model.reset_uc, model.cap_uc, model.jumps)
        try:
            fine, residual = pool_long_run(name, model, bins)
            coarse, _ = pool_long_run(name, model, bins // 2)
        except ValueError as e:  # a law the march cannot give (stationary.solve says why)
            raise InvalidInput(f"pools[{name}]", name, str(e)) from e
        tolerance += abs(fine.paid_per_wager_uc - coarse.paid_per_wager_uc)
        figures[name] = fine
        inflow[specs[name].overflow_to] += fine.overflow_per_wager_uc
        notes.append(f"{name}: recurrent, conservation residual {residual:.1e} of c" if fine.recurrent else
                     f"{name}: transient, grows {fine.growth_per_wager_uc:,.0f} µ¢ a wager")
    rates = newest_rates(config.rate_sets)
    reserve_in = float(config.wager_cents * rates.pools_ppm.get(RESERVE, 0)) + inflow.get(RESERVE, 0.0)
    draws = sum(f.reset_per_wager_uc for f in figures.values())
    shortfalls = sum(f.shortfall_per_wager_uc for f in figures.values())
    wager_uc = config.wager_cents * UC_PER_CENT
    paid = sum(f.paid_per_wager_uc for f in figures.values())
    deck = ("one deck per round: a pool's hits of a round are one jump (minima summed, percentages compounded), "
            "by the exact pair law of two seats' hands to two hits a round (hold'em, its board shared: every "
            "pattern by a seeded Monte Carlo of one-deck rounds); " if groups is not None else
            "one-seat model (every hit alone); ")
    method = (deck + "newest rate set; each visible pool's stationary balance by cut balance "
              f"c·f(b) = Σ p_k [F(b) − F(U_k(b))] marched down a {bins:,}-cell grid (trapezoid), tolerance = |rtp "
              f"on {bins:,} − rtp on {bins // 2:,} cells|; overflow into a visible pool joins its drift as a mean; "
              "payouts unfloored (≤ 1¢ a hit); " + "; ".join(notes))
    ordered = tuple(figures[p.name] for p in config.pools if p.name in figures)
    return LongRun(config.wager_cents, ordered, reserve_in, min(draws, reserve_in),
                   shortfalls + max(0.0, draws - reserve_in), paid / wager_uc, tolerance / wager_uc, method)


def pool_long_run(name: str, model: PoolModel, bins: int = BINS) -> tuple[PoolLongRun, float]:
    """One pool's long-run figures and its conservation residual |c − overflow + reset + shortfall − paid| / c
    (0 for a transient pool)."""
    c = model.drift_uc
    if model.transient():
        paid = sum(j.rate * j.min_uc for j in model.jumps)
        return PoolLongRun(name, False, -1.0, -1, -1, -1, -1, 0.0, paid, 0.0, 0.0, 0.0, c - paid), 0.0
    if c <= 0 or model.hit_rate == 0:  # no drift: the pool stays at its floor; nothing pays: it stays at its cap
        level = model.floor_uc if c <= 0 or model.cap_uc is None else model.cap_uc
        law = Law(np.array([level, level]), np.array([1.0, 1.0]), model.cap_uc is not None and c > 0)
    else:
        law = solve(model, bins, top_of(model))
    mid, top = law.midpoints(), law.levels[-1:]

    paid = shortfall = reset = 0.0
    for jump in model.jumps:
        pay_mid, pay_top = jump.payout(mid), jump.payout(top)
        paid += jump.rate * law.expect(pay_mid, pay_top)
        shortfall += jump.rate * law.expect(np.maximum(pay_mid - mid, 0.0), np.maximum(pay_top - top, 0.0))
        if jump.resets:  # §5.8: what it takes to bring the pool back up to R after paying
            reset += jump.rate * law.expect(np.maximum(model.reset_uc - np.maximum(mid - pay_mid, 0.0), 0.0),
                                            np.maximum(model.reset_uc - np.maximum(top - pay_top, 0.0), 0.0))
    at_cap = law.top_mass if law.capped else 0.0
    overflow = c * at_cap
    residual = abs(c - overflow + reset + shortfall - paid) / c if c > 0 else 0.0
    p5, p50, p95, p99 = (round(law.percentile(q)) for q in PERCENTILES)
    return PoolLongRun(name, True, law.expect(mid, top), p5, p50, p95, p99, at_cap, paid, shortfall, reset,
                       overflow, 0.0), residual
