"""The key figures a certificate opens with (issue 33): the three questions a math reviewer asks first, answered
from the certificate's own sections for one configuration (the current one, or a what-if's proposed one):

- what does it return: per game, the exact return at the reset values (and at the balances used when they
  differ), and the link's long-run return with the simulation's interval beside it and a sentence saying what
  that interval is;
- when does it break even: per game, the balance of its percentage pool at which the wager returns 100%;
- how often does it hit: each pool, link-wide (and per game when the link plays several), the expected time
  between its hits at the stated play, in minutes, hours, days or years.

A pure function of the document, so the HTML page and the terminal draw the same figures from a certificate.json
(also one made before these figures were added to it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from jackpotd.odds.exact_text import decimal_text, dollars_text, percent_text

from .figures import grouped
from .units import duration_text, stat_percent_text

Side = Mapping[str, Any]
LINK = "link"
Line = tuple[str, str, str]  # label, answer, detail: one figure as the page and the terminal draw it


def play_text(play: Mapping[str, Any]) -> str:
    """The stated play in one phrase: "20 caribbean-stud tables × 6 seats filled × 60 hands an hour"."""
    tables = " + ".join(f"{n:,} {g} table{'s' if n != 1 else ''}" for g, n in play["tables"].items() if n)
    return (f"{tables or 'no tables'} × {play['seats_filled']} seats filled × {play['hands_per_hour']} hands an "
            f"hour ({play['wagers_per_hour']:,} wagers an hour)")


def _break_even(be: Mapping[str, Any], resets: Mapping[str, int]) -> tuple[str, str]:
    """The break-even balance as a reviewer reads it, (answer, detail): the pool and balance with how many times
    its reset value that is; "never"; or why there is none."""
    pool, cents = be["pool"], be["balance_cents"]
    if pool is None:
        return "none", f"no entry pays a percentage: the return stays at {be['rtp_at_reset_percent']}"
    if cents is None:
        return "never", f"{pool} pays less than the wager at any balance"
    if cents == 0:
        return "at any balance", f"{pool} returns 100% or more even empty"
    reset = resets.get(pool, 0)
    times = f"{grouped(decimal_text(Fraction(cents, reset), 1))}× its {dollars_text(reset)} reset" if reset else ""
    return f"{pool} at {be['balance']}", times


def _games(side: Side) -> list[dict[str, Any]]:
    """Per game: the return at reset and at the balances used (exact), and the break-even balance."""
    resets = {p["name"]: p["reset_cents"] for p in side["config"]["pools"]}
    out = []
    for game, g in side["games"].items():
        be, ret = g["break_even"], g["return"]
        answer, detail = _break_even(be, resets)
        out.append({"game": game, "return_at_reset": be["rtp_at_reset"],
                    "return_at_reset_percent": percent_text(Fraction(be["rtp_at_reset"]), 2),
                    "return_now": ret["rtp"], "return_now_percent": percent_text(Fraction(ret["rtp"]), 2),
                    "break_even_pool": be["pool"], "break_even_cents": be["balance_cents"],
                    "break_even_text": answer, "break_even_detail": detail})
    return out


def _long_run(side: Side) -> dict[str, Any]:
    """The long-run return, the simulated return and interval held against it, and one sentence on the interval."""
    lr, sim = side["long_run"], side.get("simulation")
    out: dict[str, Any] = {"rtp": lr["rtp"], "text": stat_percent_text(lr["rtp"]), "simulated_text": None,
                           "interval_text": None, "inside": None}
    if not sim:
        out["explanation"] = ("The long run is solved from the pools' balance distributions (a model, not a "
                              "sample); no simulation was run to hold it against.")
        return out
    low, high = sim["rtp_with_meters_ci95"]
    inside = sim["long_run_rtp_in_meters_ci95"]
    out.update(simulated_text=stat_percent_text(sim["rtp_with_meters"]), inside=inside,
               interval_text=None if low is None or high is None
               else f"{stat_percent_text(low)} – {stat_percent_text(high)}")
    verdict = {True: "it does", False: "it does NOT (1 run in 20 misses by chance; more paths settle it)",
               None: "with one path there is no interval"}[inside]
    out["explanation"] = (f"The interval is the simulation's 95% confidence interval for the mean return over "
                          f"{sim['paths']:,} paths × {sim['days']:,} days (seed {sim['seed']}), counting what each "
                          f"path left in the percentage pools as returned; the long-run figure should fall inside "
                          f"it: {verdict}.")
    return out


def _hits(side: Side) -> list[dict[str, Any]]:
    """Each pool's expected time between hits at the stated play, link-wide, then per game when several play."""
    rows = [t for t in side["hit_times"] if t["game"] != "*"]
    games = list(dict.fromkeys(t["game"] for t in rows))
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for t in rows:
        groups.setdefault((LINK, t["pool"]), []).append(t)
    if len(games) > 1:
        for t in rows:
            groups.setdefault((t["game"], t["pool"]), []).append(t)
    out = []
    for (where, pool), hits in groups.items():
        per_hour = sum((Fraction(t["hits_per_hour"]) for t in hits), Fraction(0))
        hours = 1 / per_hour if per_hour else None
        top = min(hits, key=lambda t: Fraction(t["probability"]))  # its rarest hand: the top prize
        top_per_hour = sum((Fraction(t["hits_per_hour"]) for t in hits if t["hand"] == top["hand"]), Fraction(0))
        out.append({"game": where, "pool": pool, "hands": list(dict.fromkeys(t["hand"] for t in hits)),
                    "hits_per_hour": str(per_hour), "hours_between": None if hours is None else str(hours),
                    "every": duration_text(hours), "top_hand": top["hand"],
                    "top_every": duration_text(1 / top_per_hour if top_per_hour else None)})
    return out


def key_figures(side: Side) -> dict[str, Any]:
    """The key figures of one configuration's sections, JSON-ready (exact ratios as "num/den" text)."""
    return {"games": _games(side), "long_run": _long_run(side), "pools": _hits(side)}


def _exact(ratio: str) -> str:
    """The exact fraction beside a rounded percentage, when it is not a whole number."""
    return "" if "/" not in ratio else f"exact {ratio}"


def balances_differ(figures: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any game of any configuration returns another figure at the balances used than at reset (a running
    link's live balances, or a proposal's new reset values): then both figures are shown, for every side."""
    return any(g["return_now"] != g["return_at_reset"] for k in figures for g in k["games"])


def return_lines(k: Mapping[str, Any], now: bool = False) -> list[Line]:
    """Per game the return at reset (and, with `now`, at the balances used), exact beside; the long run and the
    simulation's return with its interval. A link of one game names no game."""
    out: list[Line] = []
    one = len(k["games"]) < 2
    for g in k["games"]:
        out.append(("at reset" if one else f"{g['game']} at reset", g["return_at_reset_percent"],
                    _exact(g["return_at_reset"])))
        if now:
            out.append(("at the balances used" if one else f"{g['game']} at the balances used",
                        g["return_now_percent"], _exact(g["return_now"])))
    lr = k["long_run"]
    out.append(("long run" if len(k["games"]) < 2 else "long run, all games", lr["text"], "solved, not sampled"))
    if lr["simulated_text"] is not None:
        out.append(("simulated", lr["simulated_text"],
                    f"95% interval {lr['interval_text']}" if lr["interval_text"] else "one path: no interval"))
    return out


def break_even_lines(k: Mapping[str, Any]) -> list[Line]:
    """Per game the balance of its percentage pool at which the wager returns 100%."""
    return [(g["game"], g["break_even_text"], g["break_even_detail"]) for g in k["games"]]


def hit_lines(k: Mapping[str, Any]) -> list[Line]:
    """Each pool's time between hits of any of its hands, link-wide and (several games) per game, with its top
    (rarest) hand's when several hands hit it ("every 9.0 hours", "royal flush every 3.8 days")."""
    return [(p["pool"] + ("" if p["game"] == LINK else f" ({p['game']})"),
             "never" if p["every"] == "never" else f"every {p['every']}",
             f"{p['top_hand'].lower()} every {p['top_every']}" if len(p["hands"]) > 1 else p["hands"][0].lower())
            for p in k["pools"]]
