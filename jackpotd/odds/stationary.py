"""The stationary balance of one pool under the one-seat model (issue 24), by cut balance marched down from the top.

The pool is a drift of c µ¢ per wager and jumps: entry k, with probability p_k per wager, pays
payout_k(x) = max(min_k, pct_k × x) of a balance x (the operator makes up a shortfall, §5.7) and, if it resets
its pool, brings it up to the reset value R (§5.8). The stationary law (a density on [L, C) and an atom m_C at a
cap C) satisfies, at every level b, c·f(b) = Σ_k p_k·[F(b) − F(U_k(b))], F(x) the mass above x and
U_k(b) = sup{x : x − payout_k(x) ≤ b}. It is marched DOWNWARD from the top (the cap, or a level with < 1e-12 of
the mass above) with a trapezoid rule per cell: runs of cells whose F(U_k) are all known are solved at once, with
positive terms only (no cancellation); shorter runs level by level. Where an entry does not reset its pool, the
pool can fall below R and a resetting hit lifts it (a jump up): the mass below R is then swept UP from the floor
(`_below_reset`). Figures are statistics of a model (floats), never money moved.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
TAIL = 1e-12  # an uncapped pool's grid stops where the mass above it is below this
BINS = 100_000  # the finer grid; the coarser (for the error estimate) has half as many
MAX_BINS = 1_000_000  # a grid finer than c/p (needed for a positive step) stops here
_MAX_LOG_GROWTH = 500.0  # a block's product of growth factors stays far below the float range
_SHORT = 16  # blocks shorter than this are marched level by level
_MAX_SWEEPS = 2_000  # sweeps up the levels below R (see `_below_reset`)


@dataclass(frozen=True, slots=True)
class Jump:
    """A paytable entry as seen by its pool: `rate` per wager; pays max(min_uc, percent × balance)."""

    rate: float
    min_uc: float
    percent: float  # 0..1
    resets: bool

    def payout(self, x: Floats) -> Floats:
        """What the entry pays at balances `x` (µ¢; the ¢ floor is left out: at most 1¢ a hit)."""
        return np.maximum(self.min_uc, self.percent * x)


@dataclass(frozen=True, slots=True)
class PoolModel:
    """One visible pool: contribution `drift_uc` per wager, reset value, optional cap, and its jumps."""

    drift_uc: float
    reset_uc: float
    cap_uc: float | None
    jumps: tuple[Jump, ...]

    @property
    def hit_rate(self) -> float:
        """Probability per wager that the pool pays."""
        return sum(j.rate for j in self.jumps)

    @property
    def floor_uc(self) -> float:
        """The lowest balance the pool can hold in the long run: R if every entry resets it, else 0."""
        return self.reset_uc if self.jumps and all(j.resets for j in self.jumps) else 0.0

    def transient(self) -> bool:
        """Uncapped, every entry fixed, and contributions at least the expected payouts: the pool grows for ever."""
        if self.cap_uc is not None:
            return False
        return all(j.percent == 0 for j in self.jumps) and self.drift_uc >= sum(j.rate * j.min_uc for j in self.jumps)


@dataclass(frozen=True, slots=True)
class Law:
    """A stationary law on a grid: `levels` (µ¢), `above[j]` = mass at or above levels[j] (above[0] = 1); the mass
    at the last level is the cap's atom (or an uncapped grid's truncated tail)."""

    levels: Floats
    above: Floats
    capped: bool

    @property
    def top_mass(self) -> float:
        """The atom at the cap (capped), or the mass left above the grid (uncapped, < TAIL)."""
        return float(self.above[-1])

    def expect(self, values: Floats, at_top: Floats) -> float:
        """E[φ(X)]: `values` = φ at each cell's midpoint, `at_top` = φ at the last level (one value)."""
        cells = self.above[:-1] - self.above[1:]
        return float(cells @ values) + self.top_mass * float(at_top[0])

    def midpoints(self) -> Floats:
        """Each cell's middle level."""
        return (self.levels[:-1] + self.levels[1:]) / 2

    def percentile(self, q: float) -> float:
        """The level x with P(X ≤ x) = q (linear between grid levels; the cap when its atom covers q)."""
        below = 1.0 - self.above  # P(X < level), increasing
        if q >= below[-1]:
            return float(self.levels[-1])
        return float(np.interp(q, below, self.levels))


def _upper(jump: Jump, b: Floats, reset_at: float) -> tuple[Floats, npt.NDArray[np.bool_]]:
    """U(b) = sup{x : x − payout(x) ≤ b} and whether the jump can land at or below b at all (a resetting entry
    lands at R or above: from `reset_at`, R less a quarter step so that the level at R counts)."""
    active = b >= (reset_at if jump.resets else 0.0)
    if jump.percent >= 1.0:
        return np.full_like(b, np.inf), active
    if jump.percent == 0:
        return b + jump.min_uc, active
    knee = jump.min_uc * (1 - jump.percent) / jump.percent
    return np.where(b < knee, b + jump.min_uc, b / (1 - jump.percent)), active


def _theta(model: PoolModel, x_ref: float) -> float:
    """The decay rate θ of the tail above x_ref: c·θ = Σ p_k (1 − e^(−θ a_k)), a_k the least jump above x_ref."""
    c = model.drift_uc
    sizes = [(j.rate, math.inf if j.percent >= 1 else max(j.min_uc, j.percent * x_ref)) for j in model.jumps]
    if sum(p * a for p, a in sizes) <= c:
        return 0.0
    lo, hi = 0.0, model.hit_rate / c
    for _ in range(200):
        mid = (lo + hi) / 2
        g = sum(p * (1 - (math.exp(-mid * a) if a != math.inf else 0.0)) for p, a in sizes) - c * mid
        lo, hi = (mid, hi) if g > 0 else (lo, mid)
    return lo


def top_of(model: PoolModel) -> float:
    """The grid's top: a level above which less than TAIL of the mass lies, or the cap if it is lower."""
    cap = math.inf if model.cap_uc is None else model.cap_uc
    if model.hit_rate == 0 or model.drift_uc <= 0:
        return cap
    base = max(model.floor_uc, model.reset_uc)
    scale = model.drift_uc / model.hit_rate
    best = cap
    for k in range(40):  # a higher reference level makes percentage jumps bigger: take the best bound
        x_ref = base + scale * (2.0**k - 1)
        theta = _theta(model, x_ref)
        if theta > 0:
            best = min(best, x_ref + math.log(1 / TAIL) / theta)
    if best == math.inf:
        raise ValueError("an uncapped pool without a bounded tail is transient")
    return best


@dataclass(frozen=True, slots=True)
class _Grid:
    """The march's fixed data: each jump's rate, its F(U) grid position and activity per level, the rate of
    resets that lift a pool from below R (`lift`), c/h, and the correction that makes the cap atom's share of a
    cell exact where U_k crosses the cap inside it."""

    rates: Floats
    pos: Floats  # (jumps, levels): (U_k(b_j) − L)/h, or n + 1 at or above the top (F there is 0)
    act: Floats  # (jumps, levels): 1 where the jump can land at or below the level
    lift: Floats  # (levels,): below R, the rate of resetting entries, whose hits lift the pool to R
    atom_fix: Floats  # (jumps, cells)
    ch: float


def solve(model: PoolModel, bins: int = BINS, top: float | None = None) -> Law:
    """The stationary law of a recurrent pool with c > 0 on `bins` cells (more if the step must be finer)."""
    c = model.drift_uc
    low = model.floor_uc
    high = top_of(model) if top is None else top
    capped = model.cap_uc is not None and high >= model.cap_uc
    p = model.hit_rate
    n = min(MAX_BINS, max(bins, math.ceil((high - low) * p / c) + 1)) if p > 0 else bins
    switch = model.reset_uc  # resetting entries act from R up: R falls (nearly) on a level, not inside a cell
    if low < switch < high:
        counts = np.arange(n, max(n + 1, min(2 * n, MAX_BINS)))
        where = (switch - low) / (high - low) * counts
        n = int(counts[np.argmin(np.abs(where - np.round(where)))])
    h = (high - low) / n
    levels = low + h * np.arange(n + 1, dtype=np.float64)
    if p == 0 or high <= low:  # nothing pays, or a cap at the reset value: all mass at the top
        return Law(levels, np.ones(n + 1), capped)
    pos = np.empty((len(model.jumps), n + 1))
    act = np.empty((len(model.jumps), n + 1))
    fix = np.zeros((len(model.jumps), n))
    for k, jump in enumerate(model.jumps):
        u, a = _upper(jump, levels, switch - h / 4)
        pos[k] = np.where(a & (u < high), (np.minimum(u, high) - low) / h, n + 1.0)
        act[k] = a
        if capped:  # the atom lands at or below b exactly for b ≥ C − payout(C)
            cross = high - float(jump.payout(np.array([high]))[0])
            below_cap = np.clip((cross - levels[:-1]) / h, 0.0, 1.0)  # the cell's share where U_k < C
            seen = (pos[k, :-1] > n).astype(np.float64) + (pos[k, 1:] > n)
            fix[k] = np.where(act[k, :-1] > 0, (1.0 - below_cap) - seen / 2, 0.0)
    resetting = sum(j.rate for j in model.jumps if j.resets)
    lift = np.where(levels < switch - h / 4, resetting, 0.0) if low < switch else np.zeros(n + 1)
    grid = _Grid(np.array([j.rate for j in model.jumps]), pos, act, lift, fix, c / h)
    first = np.where(act > 0, np.floor(pos), np.inf).min(axis=0)  # lowest grid index each level's F(U) needs
    if not lift.any():
        above = _march(grid, first, 0)
    else:  # down from the top to R (no lift acts there), then up from the floor to R (see _below_reset)
        at_reset = round((switch - low) / h)
        above = _below_reset(grid, _march(grid, first, at_reset), at_reset)
    law = Law(levels, above[: n + 1] / above[0], capped)
    if not np.all(np.isfinite(law.above)) or np.any(np.diff(law.above) > 1e-9):
        raise ValueError("the stationary law came out unstable (the mass above a level rose with the level): "
                         "its long run is not computed")
    return law


def _march(grid: _Grid, first: Floats, until: int) -> Floats:
    """F (unnormalised, 1 at the top level) from the top down to level `until`, which no lift acts on."""
    n = grid.pos.shape[1] - 1
    above = np.zeros(n + 2)  # index n+1: nothing above the top
    above[n] = 1.0  # the cap's atom, or the tail at the top
    j1 = n
    while j1 > until:
        j0 = max(until, _block_start(first, j1))
        if j1 - j0 < _SHORT:  # a short block is cheaper level by level
            lowest = min(j0, j1 - 1)
            for j in range(j1 - 1, lowest - 1, -1):
                _step(above, j, grid)
            j1 = lowest
        else:
            j1 = _block(above, j0, j1, grid)
    return above


def _below_reset(grid: _Grid, upper: Floats, k: int) -> Floats:
    """F on the whole grid when entries that do not reset the pool can leave it below R (level k), where a
    resetting hit lifts it back (rate ρ). Above R, F is known up to scale s (`upper`). Below R, G = mass below b
    obeys c·g(b) = Σ_k p_k [G(U_k(b)) − G(b)] − ρ·G(b) (non-resetting entries only): marched UP from G(L) = 0,
    stable, with G(U_k) from the previous sweep (converging as (p/(p + ρ))^sweeps). G is affine in the total Z
    and in s; G(R) = Z − s·F̂(R) and Z = 1 fix both."""
    n = grid.pos.shape[1] - 1
    shape = upper / upper[k]
    rates, act = grid.rates, grid.act[:, :k]
    loss = rates @ act + grid.lift[:k]  # per cell: what leaves the levels below by a hit
    den = grid.ch + loss / 2
    alpha = 1.0 - loss / den
    full = np.zeros((2, n + 2))  # G as a function of the level, for Z = 1, s = 0 and for Z = 0, s = 1
    full[0, k:] = 1.0
    full[1, k:] = -shape[k:]
    below = np.zeros((2, k + 1))
    for _ in range(_MAX_SWEEPS):
        full[:, :k] = below[:, :k]
        gained = np.stack([(rates @ (act * (_f_at(row, grid.pos[:, :k]) + _f_at(row, grid.pos[:, 1:k + 1])))) / 2
                           for row in full])
        new = _rise(alpha, gained / den)
        change = float(np.max(np.abs(new - below)))
        below = new
        if change <= 1e-13 * max(1.0, float(np.max(np.abs(below)))):
            break
    else:
        raise ValueError("entries that do not reset the pool keep it below its reset value so long that the "
                         f"sweeps did not converge in {_MAX_SWEEPS}: its long run is not computed")
    scale = (1.0 - below[0, k]) / (1.0 + below[1, k])
    out = np.zeros(n + 2)
    out[: k + 1] = 1.0 - below[0] - scale * below[1]
    out[k:n + 1] = scale * shape[k:n + 1]
    return out


def _rise(alpha: Floats, beta: Floats) -> Floats:
    """Rows of G_0 = 0, G_(j+1) = α_j·G_j + β_j (0 < α < 1), as G_(j+1) = P_j·Σ_(i≤j) β_i/P_i with P the running
    product of α, in chunks that keep P above e^-600."""
    rows, cells = beta.shape
    out = np.zeros((rows, cells + 1))
    logs = np.log(alpha)
    start = 0
    while start < cells:
        cum = np.cumsum(logs[start:])
        end = start + max(1, int(np.searchsorted(-cum, 600.0)))
        prod = np.exp(cum[: end - start])
        out[:, start + 1:end + 1] = prod * (out[:, start:start + 1] + np.cumsum(beta[:, start:end] / prod, axis=1))
        start = end
    return out


def _block_start(first: Floats, j1: int) -> int:
    """The lowest j0 ≤ j1 such that every level in [j0, j1) needs F only at indices ≥ j1."""
    width = 64
    while True:
        lo = max(0, j1 - width)
        bad = np.nonzero(first[lo:j1] < j1)[0]
        if bad.size:
            return lo + int(bad[-1]) + 1
        if lo == 0:
            return 0
        width *= 4


def _f_at(above: Floats, pos: Floats) -> Floats:
    """F at fractional grid positions, linear between grid levels (0 beyond the top)."""
    i = np.floor(pos).astype(np.int64)
    t = pos - i
    return above[i] + t * (above[np.minimum(i + 1, above.size - 1)] - above[i])


def _block(above: Floats, j0: int, j1: int, grid: _Grid) -> int:
    """Fill above[j0:j1] (or a top part of it, returned as the new j1) from known values: with S the mass added
    inside the block, S_j = (1 + A_j)·S_(j+1) + g_j, solved as S_j = Q_j·Σ_(i≥j) g_i/Q_i (positive terms only)."""
    js = np.arange(j0, j1)
    top = above[j1]
    rates, pos, act = grid.rates, grid.pos, grid.act
    act_j = act[:, j0:j1]  # a cell takes its lower level's activity: R is a level, not inside a cell
    a_j = rates @ act_j
    gap_j = top - _f_at(above, pos[:, js])  # F(b_j1) − F(U_k(b_j)) ≥ 0
    gap_n = top - _f_at(above, pos[:, js + 1])
    denom = grid.ch - a_j / 2
    grow = a_j / denom
    atom = above[-2] * (rates @ grid.atom_fix[:, j0:j1])  # above[-2]: the top level's mass (the cap's atom)
    g = (rates @ (act_j * (gap_j + gap_n)) / 2 + atom) / denom
    logq = np.cumsum(np.log1p(grow)[::-1])[::-1]  # log Q_j = Σ_(l ≥ j) log(1 + A_l)
    cut = int(np.searchsorted(-logq, -_MAX_LOG_GROWTH))  # keep Q within the float range
    if cut > 0:
        js, g, logq = js[cut:], g[cut:], logq[cut:]
    q = np.exp(logq)
    s = q * np.cumsum((g / q)[::-1])[::-1]
    above[js] = top + s
    return int(js[0])


def _step(above: Floats, j: int, grid: _Grid) -> None:
    """One level on its own; where its own F(U) falls inside its cell, F there is interpolated with the unknown
    F_j (an implicit step)."""
    nxt = float(above[j + 1])
    rhs = float(above[-2]) * float(grid.rates @ grid.atom_fix[:, j])
    lhs = grid.ch - float(grid.rates @ grid.act[:, j]) / 2
    for rate, here, there, on in zip(grid.rates.tolist(), grid.pos[:, j].tolist(), grid.pos[:, j + 1].tolist(),
                                     grid.act[:, j].tolist(), strict=True):
        if not on:
            continue
        if here < j + 1:
            lhs += rate * (j + 1 - here) / 2
        else:
            rhs += rate * (nxt - _f_one(above, here)) / 2
        rhs += rate * (nxt - _f_one(above, there)) / 2
    above[j] = nxt + rhs / lhs


def _f_one(above: Floats, pos: float) -> float:
    """F at one fractional grid position."""
    i = int(pos)
    if i + 1 >= above.size:
        return float(above[-1])
    return float(above[i] + (pos - i) * (above[i + 1] - above[i]))
