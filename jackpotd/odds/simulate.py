"""A seeded Monte Carlo of a link over a period (issue 24): whole rounds with simultaneous hits, resets from RESERVE,
caps and overflow, all moved by the engine's own contributions and pricing, so the money is the service's money.

Hit rounds are sampled in numpy by the hands' exact probabilities (jackpotd.odds.sampling); a Python loop then moves
the money round by round through `contributions` and `pricing.price_round`. Paths run in a process pool.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np

from ..domain.contributions import contribute, contribute_alike
from ..domain.errors import FailedPrecondition, InvalidInput
from ..domain.link import LinkConfig
from ..domain.money import MAX_SAFE_UC, UC_PER_CENT
from ..domain.paytable import Paytable
from ..domain.pools import RESERVE, PoolSpec
from ..domain.pricing import Hit, price_round
from ..domain.rates import RateSet, newest_rates
from .play import Play
from .sampling import HitRounds, Sampler, draw_hit_rounds, game_draw, sampler
from .sim_stats import Band, PathResult, Simulation, summarise

__all__ = ["Band", "PathSpec", "Simulation", "path_spec", "rounds_of", "run_path", "simulate"]

MAX_DAYS = 36_500
MAX_PATHS = 10_000
HOURS_PER_DAY = 24
# The most work one run may ask for: paying hands expected over all paths (each is priced by the engine, ~10 µs: a
# limit of 100 million is a few hours on one core; the default run of a 20-table year is ~4.6 million), and the
# balances kept for the bands (paths × days × pools, 8 bytes each: 50 million is 400 MB).
MAX_HITS = 100_000_000
MAX_BAND_CELLS = 50_000_000


@dataclass(frozen=True, slots=True)
class PathSpec:
    """Everything one path needs, picklable for a worker process: the link, its play and the samplers."""

    config: LinkConfig
    rates: RateSet
    paytables: tuple[Paytable, ...]  # one per sampler
    samplers: tuple[Sampler, ...]
    seats: int
    rounds_per_day: int  # rounds of the whole link in a day
    days: int
    start: tuple[tuple[str, int], ...]  # (pool, µ¢) in the config's order of pools


def rounds_of(play: Play, days: int) -> int:
    """Rounds one path deals over `days` days (every table of the link): a progress bar's total is paths × this."""
    return sum(play.tables.get(g, 0) for g in play.games) * play.hands_per_hour * HOURS_PER_DAY * days


def path_spec(config: LinkConfig, play: Play, days: int, balances_uc: Mapping[str, int] | None) -> PathSpec:
    """The checked specification of a run; bad input raises InvalidInput naming the field and its value."""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise InvalidInput("days", days, f"must be a whole number of days from 1 to {MAX_DAYS:,}")
    names = [p.name for p in config.pools]
    start = {p.name: 0 if p.name == RESERVE else p.reset_cents * UC_PER_CENT for p in config.pools}
    for name, uc in (balances_uc or {}).items():
        if name not in start:
            raise InvalidInput("balances_uc", name, f"not a pool of link {config.link_id}")
        if isinstance(uc, bool) or not isinstance(uc, int) or uc < 0:
            raise InvalidInput(f"balances_uc[{name}]", uc, "must be a whole number of µ¢, 0 or more")
        start[name] = uc
    paytables = tuple(config.paytable(g) for g in play.games)
    samplers: list[Sampler] = []
    offset = 0
    for table in paytables:
        samplers.append(sampler(game_draw(table), play.tables[table.game], offset, play.seats_filled))
        offset += play.tables[table.game]
    return PathSpec(config, newest_rates(config.rate_sets), paytables, tuple(samplers), play.seats_filled,
                 rounds_of(play, 1), days, tuple((n, start[n]) for n in names))


def _require_size(spec: PathSpec, play: Play, paths: int, days: int) -> None:
    """Refuse a run too big to finish or to hold (MAX_HITS, MAX_BAND_CELLS), naming what makes it so."""
    per_path = sum(float(s.draw.p_pay) * play.tables[s.draw.game] for s in spec.samplers)
    hits = per_path * play.seats_filled * play.hands_per_hour * HOURS_PER_DAY * days * paths
    if hits > MAX_HITS:
        raise InvalidInput("paths × days × tables × seats_filled × hands_per_hour", f"{hits:,.0f} paying hands",
                           f"a run may price at most {MAX_HITS:,} paying hands: fewer paths, days or tables")
    cells = paths * days * len(spec.start)
    if cells > MAX_BAND_CELLS:
        raise InvalidInput("paths × days", f"{paths:,} × {days:,}",
                           f"the bands would hold {cells:,} balances, more than {MAX_BAND_CELLS:,}: fewer paths "
                           "or days")


def simulate(config: LinkConfig, play: Play, *, days: int = 365, paths: int = 20, seed: int = 1,
             balances_uc: Mapping[str, int] | None = None, progress: Callable[[int], None] | None = None,
             workers: int | None = None) -> Simulation:
    """`paths` independent paths of `days` days of `play` on `config` from `balances_uc` (default: each pool at its
    reset value, RESERVE 0). Path i draws from SeedSequence(seed).spawn(paths)[i], so a run replays and a path does
    not depend on how many run. progress(n): n more rounds done (an increment: a tqdm bar's update; the total is
    paths × rounds_of(play, days)). workers: processes (default: one per core, at most one per path; 1 = here)."""
    t0 = time.perf_counter()
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidInput("seed", seed, "must be a whole number, 0 or more")
    if isinstance(paths, bool) or not isinstance(paths, int) or not 1 <= paths <= MAX_PATHS:
        raise InvalidInput("paths", paths, f"must be a whole number of paths from 1 to {MAX_PATHS:,}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InvalidInput("workers", workers, "must be a whole number of processes, 1 or more")
    spec = path_spec(config, play, days, balances_uc)
    _require_size(spec, play, paths, days)
    children = np.random.SeedSequence(seed).spawn(paths)
    n = min(paths, workers or os.cpu_count() or 1, os.cpu_count() or 1)
    if n == 1:
        results = [run_path(spec, child, progress) for child in children]
    else:
        # forkserver: a worker is never a fork of a caller's threads (the server's event loop, gRPC's pollers)
        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(n, mp_context=context) as pool:
            futures = {pool.submit(run_path, spec, child, None): i for i, child in enumerate(children)}
            by_path: dict[int, PathResult] = {}
            try:
                for future in as_completed(futures):
                    by_path[futures[future]] = future.result()
                    if progress is not None:
                        progress(spec.rounds_per_day * days)
            except BaseException:  # a failed path (or an interrupt) stops the paths not yet started
                pool.shutdown(wait=False, cancel_futures=True)
                raise
        results = [by_path[i] for i in range(paths)]
    categories = {s.draw.game: s.draw.categories for s in spec.samplers}
    # A pool a played game pays a share of: what it gains is paid by its next such hit (see Simulation)
    shared = {e.pool for g in play.games for e in config.paytable(g).entries.values() if e.is_share}
    return summarise(results, seed=seed, days=days, play=play, pools=[name for name, _ in spec.start],
                     categories=categories, elapsed_s=time.perf_counter() - t0, method=_method(spec),
                     start_uc=[uc for _, uc in spec.start], shared=[name in shared for name, _ in spec.start])


def run_path(spec: PathSpec, seq: np.random.SeedSequence, progress: Callable[[int], None] | None) -> PathResult:
    """One path: its hit rounds drawn at once, then the money moved round by round by the engine; the pools'
    conservation is checked to the µ¢ (FailedPrecondition if the engine ever broke it)."""
    rng = np.random.default_rng(seq)
    seats, days, per_day = spec.seats, spec.days, spec.rounds_per_day
    link_tables = sum(s.tables for s in spec.samplers)
    drawn = draw_hit_rounds(rng, spec.samplers, days * per_day // link_tables, seats)
    rates, pools, wager = spec.rates, spec.config.pools, spec.config.wager_cents
    capped = any(p.cap_cents is not None and p.name in rates.pools_ppm for p in pools)

    def add(balances: Mapping[str, int], rounds: int) -> Mapping[str, int]:
        """`rounds` rounds of wagers contributed: with a cap, one wager of n × w through the engine (exactly what n
        wagers of w move, cap and overflow included); without, n times the engine's own legs of one wager."""
        if alike is None:
            return contribute(rates, pools, balances, [(0, rounds * seats * wager)]).balances_after
        return alike(balances, rounds * seats)

    alike = None if capped else _alike(rates, pools, wager)

    names = [name for name, _ in spec.start]
    balances: Mapping[str, int] = dict(spec.start)
    highest = dict(spec.start)
    day_rows: list[list[int]] = []
    done = 0  # rounds contributed: 0 .. done - 1
    day_end = per_day - 1  # the link's round number of the day's last round
    paid = funding = payouts = 0
    paytables = spec.paytables
    for at, g, hits in _rounds(spec, drawn):
        while day_end < at:  # the days that end before this round
            if day_end >= done:
                balances = add(balances, day_end + 1 - done)
                done = day_end + 1
            day_rows.append([balances[n] for n in names])
            day_end += per_day
            if progress is not None:
                progress(per_day)
        balances = add(balances, at + 1 - done)
        done = at + 1
        for n in names:
            if balances[n] > highest[n]:
                highest[n] = balances[n]
        price = price_round(paytables[g], pools, balances, hits, seats)
        for p in price.payouts:  # RoundPrice.operator_funding_cents, summed here in one pass
            paid += p.amount_cents
            funding += p.funded_by_operator_cents
        for r in price.resets:
            funding += r.from_operator_cents
        payouts += len(price.payouts)
        balances = price.balances_after
    while len(day_rows) < days:
        if day_end >= done:
            balances = add(balances, day_end + 1 - done)
            done = day_end + 1
        for n in names:
            highest[n] = max(highest[n], balances[n])
        day_rows.append([balances[n] for n in names])
        day_end += per_day
        if progress is not None:
            progress(per_day)
    wagers = done * seats
    _check(spec, balances, wagers, paid, funding, payouts, len(drawn.seats))
    row_game = np.repeat(drawn.game, drawn.count)
    hits_by_game = tuple(tuple(np.bincount(drawn.categories[row_game == g], minlength=len(s.draw.categories))
                               .tolist()) for g, s in enumerate(spec.samplers))
    return PathResult(np.array(day_rows, dtype=np.int64), tuple(highest[n] for n in names), paid, funding,
                      hits_by_game, int((drawn.count >= 2).sum()), len(drawn.count), wagers, wagers * wager)


def _alike(rates: RateSet, pools: tuple[PoolSpec, ...], wager: int) -> Callable[[Mapping[str, int], int],
                                                                           Mapping[str, int]]:
    """n alike wagers on pools without a cap, as `contribute_alike` moves them (its legs of one wager, counted n
    times), without building them again for each hit round: a third of a hit round's cost. Equal to
    contribute_alike for every n and balance (a property test), including its refusal past 2^53 µ¢."""
    one = contribute_alike(rates, pools, {}, wager, 1)[1].balances_after
    # every pool of the rates, those a wager adds nothing to included: the engine checks each one's balance (one
    # already past 2^53 µ¢ is refused though nothing is added to it), in this order, naming the first
    per_wager = tuple((name, one.get(name, 0)) for name in rates.pool_order)

    def add(balances: Mapping[str, int], count: int) -> Mapping[str, int]:
        after = dict(balances)
        for name, uc in per_wager:
            after[name] = total = after.get(name, 0) + count * uc
            if total > MAX_SAFE_UC:
                raise FailedPrecondition(f"pool:{name}", total, "balance would pass the exact range of 2^53 µ¢")
        return after
    return add


def _rounds(spec: PathSpec, drawn: HitRounds) -> Iterator[tuple[int, int, tuple[Hit, ...]]]:
    """Each hit round as (round number, game index, its hits): a lone hit is a tuple built once per seat and hand."""
    width = max(1, *(len(s.draw.categories) for s in spec.samplers))
    seats = spec.seats
    keys = ((np.repeat(drawn.game, drawn.count) * seats + drawn.seats - 1) * width + drawn.categories).tolist()
    cache: dict[int, tuple[Hit, ...]] = {}
    for key in set(keys):
        g, rest = divmod(key, seats * width)
        seat, cat = divmod(rest, width)
        cache[key] = (Hit(seat + 1, spec.samplers[g].draw.categories[cat]),)
    for at, g, first, count in zip(drawn.round_index.tolist(), drawn.game.tolist(), drawn.first.tolist(),
                                   drawn.count.tolist(), strict=True):
        if count == 1:
            yield at, g, cache[keys[first]]
        else:
            yield at, g, tuple(cache[k][0] for k in keys[first:first + count])


def _check(spec: PathSpec, balances: Mapping[str, int], wagers: int, paid: int, funding: int, payouts: int,
           hits: int) -> None:
    """Conservation: what the pools gained is what the wagers put in (w × ppm µ¢ each) plus the operator's funding
    less what was paid, to the µ¢; and every drawn hit was paid."""
    gained = sum(balances[name] for name, _ in spec.start) - sum(uc for _, uc in spec.start)
    put_in = wagers * spec.config.wager_cents * sum(spec.rates.pools_ppm.values())
    if gained != put_in + (funding - paid) * UC_PER_CENT:
        raise FailedPrecondition("simulation.conservation", gained - put_in - (funding - paid) * UC_PER_CENT,
                                 "the pools' balances moved by other than contributions, funding and payouts (µ¢)")
    if payouts != hits:
        raise FailedPrecondition("simulation.payouts", payouts, f"{hits} hits were drawn but not all were paid")


def _method(spec: PathSpec) -> str:
    """How the run was made and what it leaves out, for the certificate."""
    games = ", ".join(f"{s.draw.game} ({s.tables} tables)" for s in spec.samplers)
    return (
        f"Seeded Monte Carlo of {games}, {spec.seats} seats filled, each wager {spec.config.wager_cents} cents at "
        f"rate set version {spec.rates.version} (the newest). Each round is dealt from one deck: no card twice in a "
        "round, and in hold'em every seat's 2 hole cards with one shared 5-card board, so simultaneous hits occur as "
        "they do at a table; hands are categorised by tables built from the engine's evaluator. Only rounds holding "
        "a paying hand are drawn, exactly: a round proposes a hit at chance seats x p_pay (geometric gaps), deals a "
        "uniformly chosen seat a paying hand and the other seats the rest of the deck, and is kept with chance 1/N "
        "(N its paying seats), which leaves exactly the one-deck law of the rounds with a hit; all in numpy for "
        "the whole period, games merged in time order. The money moves through the engine itself: the "
        "wagers since the previous hit round in one contribution call (one wager of n x w when a pool is capped: "
        "exactly n wagers of w), then the round priced by pricing.price_round (payment order, share groups, "
        "shortfall funding, resets from RESERVE); conservation is checked to the micro-cent on every path. "
        "Percentiles are by linear interpolation between paths, in integers. The return's 95% interval is a "
        "between-path Student-t interval (mean of the paths' returns +/- t(0.975, paths - 1) x their standard "
        "deviation / sqrt(paths)). A finite period starts at the given balances and leaves money in the pools at "
        "its end, so its return slightly understates the long-run return: the bias is about "
        "(E[pool] - start) / wagered. "
        "The return with the meters also counts what the period added to each pool that pays a share of itself "
        "(its next such hit pays it to a player): that takes the start and the end out, and it is the figure held "
        "against the long-run return. A pool of fixed prizes only is not counted: its prizes do not grow with it.")
