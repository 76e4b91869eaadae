"""The math certificate of a link configuration (issue 24) as one JSON document: the configuration and its hash,
exact odds and return per game, hit times, long-run figures, a seeded simulation and, for a proposed SetRates or
UpdateLink, the same for the proposal beside a list of what changes. The HTML page and the terminal summary show
this document and nothing else."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from jackpotd.domain import hands as h
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.money import UC_PER_CENT
from jackpotd.domain.pools import RESERVE
from jackpotd.domain.rates import newest_rates
from jackpotd.odds.config_digest import config_sha256
from jackpotd.odds.long_run import long_run
from jackpotd.odds.play import Play
from jackpotd.odds.returns import break_even, return_at, return_by_pricing, return_curve
from jackpotd.odds.simulate import simulate
from jackpotd.software.identity import software_identity

from . import figures as f
from .findings import NOTICE, findings
from .key_figures import key_figures

SCHEMA = "jackpot-math/1"
CURVE_POINTS = 41


def games_of(config: LinkConfig) -> tuple[str, ...]:
    """The games the link has a paytable for, in the engine's order of games."""
    return tuple(g for g in h.GAMES if g in config.paytables)


def balances_for(config: LinkConfig, balances_uc: Mapping[str, int]) -> dict[str, int]:
    """Every pool of `config` at its given balance; a pool not given (a proposal's new pool) at its reset value."""
    return {p.name: balances_uc.get(p.name, 0 if p.name == RESERVE else p.reset_cents * UC_PER_CENT)
            for p in config.pools}


def _curve_top(configs: list[LinkConfig], balances: list[dict[str, int]]) -> int | None:
    """A common right end for the return curves (cents): past every config's break-even and default curve, so the
    current and proposed curves share their balance axis; None when no game has a percentage pool."""
    top = 0
    for config, bal in zip(configs, balances, strict=True):
        for game in games_of(config):
            points = return_curve(config, game, bal, points=CURVE_POINTS)
            if points:
                top = max(top, points[-1][0])
            be = break_even(config, game, bal).balance_cents
            if be is not None:
                top = max(top, be * 5 // 4)
    return top or None


def exact_sections(config: LinkConfig, play: Play, balances_uc: Mapping[str, int],
                   curve_top: int | None) -> dict[str, Any]:
    """The figures that depend on `config` and are exact: shares, per-game return, break-even, curve, hit times."""
    games: dict[str, Any] = {}
    for game in games_of(config):
        be = break_even(config, game, balances_uc)
        ret = return_at(config, game, balances_uc)
        games[game] = {
            "hand_odds": f.odds_section(game),
            "return": f.return_section(ret),
            "cross_check": f.cross_check_section(ret, return_by_pricing(config, game, balances_uc)),
            "break_even": f.break_even_section(be),
            "return_curve": f.curve_section(be.pool, return_curve(config, game, balances_uc, points=CURVE_POINTS,
                                                                  up_to_cents=curve_top)),
        }
    return {"config": config.to_dict(), "config_sha256": config_sha256(config),
            **f.balances_section(config, balances_uc), "wager_shares": f.shares_section(config), "games": games,
            "hit_times": f.hit_times_section(config, play)}


def _sections(config: LinkConfig, play: Play, balances_uc: Mapping[str, int], curve_top: int | None, *, days: int,
              paths: int, seed: int, sim: bool, progress: Callable[[int], None] | None, now_ms: int) -> dict[str, Any]:
    """Every section of one configuration: the exact ones, the long run, (when asked) the simulation, the findings
    and the key figures read from them."""
    out = exact_sections(config, play, balances_uc, curve_top)
    lr = long_run(config, play)
    out["long_run"] = f.long_run_section(lr, play)
    out["simulation"] = (f.simulation_section(simulate(config, play, days=days, paths=paths, seed=seed,
                                                       balances_uc=balances_uc, progress=progress), lr)
                         if sim else None)
    out["findings"] = findings(out, _caveats(config, play, now_ms))
    out["key_figures"] = key_figures(out)  # what the page and the summary open with, for a machine too
    return out


def _caveats(config: LinkConfig, play: Play, now_ms: int) -> list[dict[str, str]]:
    """Findings about what the figures rest on: a rate set not yet in force (the figures use the newest), and
    hold'em's per-round hit law, which the long run estimates from seeded deals where the other games count it."""
    out: list[dict[str, str]] = []
    newest = newest_rates(config.rate_sets)
    if newest.effective_at_ms > now_ms:
        out.append({"severity": NOTICE, "subject": "rates",
                    "text": f"the figures use rate set version {newest.version}, approved to take effect at "
                            f"{datetime.fromtimestamp(newest.effective_at_ms / 1000, UTC):%Y-%m-%d %H:%M} UTC; "
                            "an earlier version is in force until then"})
    if play.tables.get(h.HOLDEM_BONUS, 0) > 0:
        out.append({"severity": NOTICE, "subject": h.HOLDEM_BONUS,
                    "text": "hold'em's shared board is dealt once per round in the simulation and the long run "
                            "(a royal on the board is every seat's, each owed its minimum); the long run's law of "
                            "simultaneous hits is estimated from 40,000 seeded rounds per pool rather than counted "
                            "exactly, so its hold'em figures carry that sampling error (the simulation's interval "
                            "holds them)"})
    return out


def changes(current: Any, proposed: Any, at: str = "") -> list[dict[str, Any]]:
    """What differs between two configs' plain-dict forms, leaf by leaf: field path, current and proposed value
    (None where one side has no such field)."""
    if isinstance(current, dict) and isinstance(proposed, dict):
        out: list[dict[str, Any]] = []
        for key in [*current, *(k for k in proposed if k not in current)]:
            out += changes(current.get(key), proposed.get(key), f"{at}.{key}" if at else str(key))
        return out
    if isinstance(current, list) and isinstance(proposed, list):
        out = []
        for i in range(max(len(current), len(proposed))):
            out += changes(current[i] if i < len(current) else None, proposed[i] if i < len(proposed) else None,
                           f"{at}[{i}]")
        return out
    return [] if current == proposed else [{"field": at, "current": current, "proposed": proposed}]


def methods(current: dict[str, Any], play: Play) -> dict[str, str]:
    """A paragraph per figure: how it was found, and its limits."""
    odds = "; ".join(f"{g}: {s['hand_odds']['method']}" for g, s in current["games"].items())
    lr = current["long_run"]
    sim = current["simulation"]
    tolerance = "not stated" if lr["tolerance"] is None else f"{lr['tolerance']:.2e}"
    agree = "; ".join(f"{g}: {'yes' if s['cross_check']['agrees'] else 'NO'}" for g, s in current["games"].items())
    return {
        "hand_odds": "Exact: every hand of each game counted by enumeration or exact combinatorics with the engine's "
                     f"own hand evaluator, never sampled ({odds}).",
        "return": "Exact, for one seat, at the balances shown: for each paying hand, its count over all hands times "
                  "its payout (the greater of the fixed amount and the percentage of the pool, floored to the cent; "
                  "a pool holding less pays all it holds and the operator funds the rest), summed as a fraction of "
                  "µ¢. It is found a second, independent way for this certificate: every hand of the game "
                  "through the engine's evaluator, each category priced by the engine's pricing code "
                  f"(jackpotd.domain.pricing.price_round); the two agree exactly: {agree}.",
        "break_even": "Exact: the smallest whole-cent balance of the game's percentage pool (the other pools held at "
                      "the balances shown) at which the expected payout reaches the wager; never when no entry pays a "
                      "percentage.",
        "hit_times": f"Exact at this play ({play.seats_filled} seats filled, {play.hands_per_hour} hands an hour, "
                     f"tables {', '.join(f'{g} × {n}' for g, n in play.tables.items() if n)}): hits an hour are the "
                     "hand's probability times the wagers of its game an hour; link-wide rows add the games.",
        "long_run": f"{lr['method']} Numerical tolerance on the return: {tolerance}. These are statistics "
                    "of a model (one wager at a time), shown rounded; not money moved.",
        "simulation": ("Not run (no simulation was asked for)." if sim is None else
                       f"{sim['method']} Seed {sim['seed']}, {sim['paths']} paths of {sim['days']} days. The "
                       "intervals are statistics of the paths. The long-run return is held against the return with "
                       "the meters (what the period left in share-paying pools counted as returned), which takes "
                       "out the finite period's start and end; the bare return and its interval are shown too."),
        "money": "Money is integers: cents on the wire, millionths of a cent (µ¢) in pools, parts per million "
                 "(ppm) for rates; amounts for people are whole dollars and cents, rounded down. Exact ratios are "
                 "written as num/den; percentages are rounded half up to 4 places.",
    }


def build_certificate(config: LinkConfig, source: Mapping[str, str], play: Play, balances_uc: Mapping[str, int],
                      *, days: int, paths: int, seed: int, simulate: bool, progress: Callable[[int], None] | None,
                      proposed: LinkConfig | None = None) -> dict[str, Any]:
    """The certificate of `config` played as `play` from `balances_uc`; with `proposed`, the proposal's too (same
    play, balances and seed) and the list of changes. JSON-ready: only dicts, lists, str, int, float, bool, None."""
    current_bal = balances_for(config, balances_uc)
    proposed_bal = balances_for(proposed, balances_uc) if proposed is not None else None
    top = _curve_top([config, *([proposed] if proposed is not None else [])],
                     [current_bal, *([proposed_bal] if proposed_bal is not None else [])])
    now = datetime.now(UTC)
    knobs: dict[str, Any] = {"days": days, "paths": paths, "seed": seed, "sim": simulate, "progress": progress,
                             "now_ms": int(now.timestamp() * 1000)}
    current = _sections(config, play, current_bal, top, **knobs)
    what_if = None
    if proposed is not None and proposed_bal is not None:
        what_if = {"proposed": _sections(proposed, play, proposed_bal, top, **knobs),
                   "changes": changes(config.to_dict(), proposed.to_dict())}
    return {
        "schema": SCHEMA,
        "generated_at": now.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "source": dict(source),
        "link_id": config.link_id,
        "play": f.play_section(play),
        **current,
        "what_if": what_if,
        "methods": methods(current, play),
        "software": software_identity().as_dict(),  # the program that produced the certificate
    }
