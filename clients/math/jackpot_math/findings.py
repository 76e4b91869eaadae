"""What an inspector should look at first (issue 24): the certificate's own figures read back as findings, each
"critical" (the configuration loses money for the operator on every wager, pays more than it takes, keeps money no
prize will ever pay, or the figures disagree with themselves) or "notice" (worth a look before approving)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from jackpot_finance.money import exact as exact_dollars

from jackpotd.domain.money import UC_PER_CENT

from .figures import uc_text

CRITICAL = "critical"
NOTICE = "notice"


def _finding(severity: str, subject: str, text: str) -> dict[str, str]:
    return {"severity": severity, "subject": subject, "text": text}


def findings(side: Mapping[str, Any], more: Sequence[dict[str, str]] = ()) -> list[dict[str, str]]:
    """The findings of one configuration's sections (the current one, or a what-if's proposed one) and `more` found
    by the caller, critical first."""
    out: list[dict[str, str]] = list(more)
    for game, g in side["games"].items():
        if not g["cross_check"]["agrees"]:
            out.append(_finding(CRITICAL, game, "the closed-form return and the return through the pricing code "
                                                "differ: the figures of this certificate cannot be relied on"))
        ret, be = g["return"], g["break_even"]
        if Fraction(be["rtp_at_reset"]) >= 1:
            out.append(_finding(CRITICAL, game, f"the jackpot wager returns {be['rtp_at_reset_percent']} with its "
                                                "pools at their reset values: more than it costs the player, before "
                                                "the pools grow at all"))
        elif ret["rtp_ppm"] >= 1_000_000:
            out.append(_finding(NOTICE, game, f"the jackpot wager returns {ret['rtp_percent']} at the balances "
                                              f"used: {be['pool']} is past its break-even balance {be['balance']}, "
                                              "so a player has the edge until it is won"))
    out += _long_run(side)
    sim = side.get("simulation")
    if sim and sim["long_run_rtp_in_meters_ci95"] is False:
        out.append(_finding(NOTICE, "simulation", "the long-run return lies outside the simulation's 95% interval "
                                                  "(1 run in 20 does by chance; a run with more paths settles it)"))
    return sorted(out, key=lambda x: x["severity"] != CRITICAL)


def _long_run(side: Mapping[str, Any]) -> list[dict[str, str]]:
    """Findings of the long run: the return, what the operator funds against what it retains, pools that keep money
    for good (a visible pool growing without bound, RESERVE taking in more than resets draw), break-even passed."""
    out: list[dict[str, str]] = []
    lr = side["long_run"]
    retained_uc = next((r["per_wager_uc"] for r in side["wager_shares"]["rows"] if r["pool"] == "retained"), None)
    if lr["rtp"] is not None and lr["rtp"] >= 1:
        out.append(_finding(CRITICAL, "long run", f"in the long run the wager returns {lr['rtp_percent']}: the "
                                                  "operator funds more than the link takes in"))
    op = lr["operator_per_wager_uc"]
    if op is not None and retained_uc is not None and op > retained_uc:
        out.append(_finding(CRITICAL, "operator",
                            f"the operator funds {exact_dollars(round(op))} a wager in the long run, more than "
                            f"the {exact_dollars(retained_uc)} it retains: it loses on every wager"))
    elif op is not None and retained_uc and op > retained_uc // 2:
        out.append(_finding(NOTICE, "operator",
                            f"the operator funds {exact_dollars(round(op))} a wager in the long run, over half "
                            f"of the {exact_dollars(retained_uc)} it retains"))
    for pool in lr["pools"]:
        if not pool["recurrent"]:
            growth = pool["growth_per_wager_uc"] or 0
            out.append(_finding(CRITICAL, pool["pool"],
                                f"grows without bound: its contributions beat its prizes, so "
                                f"{exact_dollars(round(growth))} of every wager stays in it for good and is never "
                                "paid (cap it, or change its rate or paytable)"))
    surplus = (lr["reserve_in_per_wager_uc"] or 0) - (lr["reserve_out_per_wager_uc"] or 0)
    if surplus > 0.5:  # µ¢ a wager: the solver's tolerance is far below this
        out.append(_finding(NOTICE, "RESERVE",
                            f"takes in {exact_dollars(round(lr['reserve_in_per_wager_uc']))} a wager and pays "
                            f"{exact_dollars(round(lr['reserve_out_per_wager_uc']))} into resets in the long run: "
                            f"{exact_dollars(round(surplus))} a wager ({uc_text(surplus * lr['wagers_per_year'])} a "
                            "year at this play) builds up in it and reaches no player unless it is moved to a "
                            "visible pool"))
    for game, g in side["games"].items():
        be = g["break_even"]
        pool = next((p for p in lr["pools"] if p["pool"] == be["pool"] and p["recurrent"]), None)
        if pool is not None and be["balance_cents"] and pool["p95_uc"] >= be["balance_cents"] * UC_PER_CENT:
            out.append(_finding(NOTICE, game, f"{be['pool']} passes the break-even balance {be['balance']} more "
                                              f"than 5% of the time in the long run (its p95 is {pool['p95']}): "
                                              "a player then has the edge"))
    return out
