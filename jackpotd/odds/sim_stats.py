"""The simulation's results (issue 24): one path's tallies, and the statistics across paths that the certificate shows.

Money tallied per path is exact integers (cents, µ¢) from the engine. Figures across paths are statistics of a
stochastic model: percentiles of balances are ints of µ¢ by exact integer interpolation, while means, the return
and its interval are floats (they describe the model; no money moves by them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..domain.money import UC_PER_CENT
from .play import Play

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Band:
    """A pool's balance at the end of day `day` (1 = the first day) across paths: 5th, 50th, 95th percentile (µ¢)."""

    day: int
    p5_uc: int
    p50_uc: int
    p95_uc: int


@dataclass(frozen=True, slots=True)
class Simulation:
    """A seeded Monte Carlo of the link over `days` days, `paths` independent paths (see `method`).

    bands, largest_uc, largest_p95_uc: per pool (RESERVE included), µ¢. hits: mean per path by game and category.
    simultaneous_rounds: mean rounds per path with two hits or more. Funding: cents over the whole period, per path.
    paid_cents, wagered_cents: totals over all paths; rtp = paid / wagered; rtp_ci95: a between-path Student-t 95%
    interval of the paths' returns (NaN when paths < 2)."""

    seed: int
    days: int
    paths: int
    play: Play
    wagers_per_path: int
    bands: Mapping[str, tuple[Band, ...]]
    largest_uc: Mapping[str, int]
    largest_p95_uc: Mapping[str, int]
    hits: Mapping[str, Mapping[str, float]]
    simultaneous_rounds: float
    operator_funding_mean_cents: float
    operator_funding_p95_cents: int
    paid_cents: int
    wagered_cents: int
    rtp: float
    rtp_ci95: tuple[float, float]
    elapsed_s: float
    method: str
    # The return counting what the period left in each pool that pays a share of itself (its end less its start)
    # as returned: the pool's next percentage hit pays it to a player. It takes out the finite period's start and
    # end (the pools start at the given balances and end with money in them), so it is the figure to hold against
    # the long-run return. A pool of fixed prizes only is left out: its prizes do not grow with it, and what it
    # gains for good is never paid. Its interval is the same between-path interval.
    rtp_with_meters: float = math.nan
    rtp_with_meters_ci95: tuple[float, float] = (math.nan, math.nan)


@dataclass(frozen=True, slots=True)
class PathResult:
    """One path's exact tallies: each pool's balance at each day's end (days × pools, µ¢) and highest balance,
    cents paid and funded by the operator, hits by game and paying category, rounds with ≥ 2 hits, hit rounds."""

    day_balances: Ints
    max_uc: tuple[int, ...]
    paid_cents: int
    funding_cents: int
    hits: tuple[tuple[int, ...], ...]
    simultaneous: int
    hit_rounds: int
    wagers: int
    wagered_cents: int


def percentile(sorted_values: Ints, pct: int) -> Ints:
    """The `pct`th percentile along axis 0 of sorted int64 values by linear interpolation between order statistics
    (numpy's default, Hyndman-Fan type 7), in integer arithmetic floored to the µ¢: no float touches a balance."""
    n = sorted_values.shape[0]
    lo = (n - 1) * pct // 100
    rest = (n - 1) * pct - lo * 100  # the interpolation weight × 100, from 0 to 99
    hi = min(lo + 1, n - 1)
    low = sorted_values[lo]
    result: Ints = low + (rest * (sorted_values[hi] - low)) // 100  # < 100 × 2^53: exact in int64
    return result


# Student's t, two-sided 95%, by degrees of freedom (a few paths give a wider interval than the normal's 1.96)
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
        29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980, 1000: 1.962}


def t95(df: int) -> float:
    """The two-sided 95% quantile of Student's t with `df` degrees of freedom; between tabled values the next lower
    df's (a little wider: on the safe side); beyond 10,000 degrees, the normal's 1.96."""
    if df > 10_000:
        return 1.96
    return _T95[max(d for d in _T95 if d <= df)]


def _interval(values: Sequence[float]) -> tuple[float, float]:
    """A between-path 95% interval of the mean of `values`: mean ± t95(n − 1) × s / √n (NaN for fewer than two)."""
    n = len(values)
    if n < 2:
        return (math.nan, math.nan)
    mean = sum(values) / n
    half = t95(n - 1) * math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1) / n)
    return (mean - half, mean + half)


def summarise(results: Sequence[PathResult], *, seed: int, days: int, play: Play, pools: Sequence[str],
              categories: Mapping[str, Sequence[str]], elapsed_s: float, method: str,
              start_uc: Sequence[int] = (), shared: Sequence[bool] = ()) -> Simulation:
    """The statistics across `results` (one per path, in path order) that `Simulation` holds; `start_uc` and
    `shared` (per pool, in `pools` order: a played game pays a share of it) give the return with the meters."""
    paths = len(results)
    stacked = np.sort(np.stack([r.day_balances for r in results]), axis=0)  # paths × days × pools
    p5, p50, p95 = (percentile(stacked, pct).tolist() for pct in (5, 50, 95))
    bands = {name: tuple(Band(d + 1, p5[d][i], p50[d][i], p95[d][i]) for d in range(days))
             for i, name in enumerate(pools)}
    maxima = np.sort(np.array([r.max_uc for r in results], dtype=np.int64), axis=0)  # paths × pools
    largest_p95 = percentile(maxima, 95).tolist()
    hits = {game: {cat: sum(r.hits[g][c] for r in results) / paths for c, cat in enumerate(cats)}
            for g, (game, cats) in enumerate(categories.items())}
    funding = np.sort(np.array([r.funding_cents for r in results], dtype=np.int64))
    paid = sum(r.paid_cents for r in results)
    wagered = sum(r.wagered_cents for r in results)
    returns = [r.paid_cents / r.wagered_cents for r in results]
    growth = [sum(int(r.day_balances[-1][i]) - start_uc[i] for i in range(len(pools)) if shared[i])
              for r in results] if start_uc else [0] * paths
    with_meters = [(r.paid_cents * UC_PER_CENT + g) / (r.wagered_cents * UC_PER_CENT)
                   for r, g in zip(results, growth, strict=True)]
    return Simulation(
        seed=seed, days=days, paths=paths, play=play, wagers_per_path=results[0].wagers, bands=bands,
        largest_uc={name: int(maxima[-1][i]) for i, name in enumerate(pools)},
        largest_p95_uc={name: int(largest_p95[i]) for i, name in enumerate(pools)},
        hits=hits, simultaneous_rounds=sum(r.simultaneous for r in results) / paths,
        operator_funding_mean_cents=sum(r.funding_cents for r in results) / paths,
        operator_funding_p95_cents=int(percentile(funding, 95)), paid_cents=paid, wagered_cents=wagered,
        rtp=paid / wagered, rtp_ci95=_interval(returns), elapsed_s=elapsed_s, method=method,
        rtp_with_meters=(paid * UC_PER_CENT + sum(growth)) / (wagered * UC_PER_CENT) if start_uc else math.nan,
        rtp_with_meters_ci95=_interval(with_meters) if start_uc else (math.nan, math.nan))
