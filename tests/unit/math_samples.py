"""Links and certificate documents for the certificate's tests: the DOMAIN split link, a proposed rate change as
SetRates makes it, and a certificate built by hand in the document's shape (to test the page and the summary
apart from the figures)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jackpotd.domain import hands as h
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.rates import RateSet

HOSTILE = '<script>alert("x")</script>&'


def split_config(link_id: str = "demo-split") -> LinkConfig:
    """The DOMAIN default split link: $1 wager, MAJOR reset $10,000, MINOR $1,000, rates 200,000 / 75,000 /
    25,000 ppm and 700,000 retained."""
    return LinkConfig(link_id, SPLIT, 100, (PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)),
                      (RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000, 1, 0, "approval-1"),),
                      {h.CARIBBEAN_STUD: default_paytable(h.CARIBBEAN_STUD, SPLIT)})


def rate_change(config: LinkConfig) -> LinkConfig:
    """A proposed SetRates as the service applies it (decide.admin.changed): a new version, MAJOR 250,000 ppm."""
    version = max(r.version for r in config.rate_sets) + 1
    rates = RateSet({MAJOR: 250_000, MINOR: 75_000, RESERVE: 25_000}, 650_000, version, 1, "approval-2")
    return replace(config, rate_sets=(*config.rate_sets, rates))


def _side(config: LinkConfig, major_ppm: int, rtp_ppm: int, be: str) -> dict[str, Any]:
    """One configuration's sections with plausible figures (not computed: the page only lays them out)."""
    bands = [{"day": d, "p5_uc": 10**12 + d * 10**9, "p50_uc": 10**12 + d * 3 * 10**9,
              "p95_uc": 10**12 + d * 6 * 10**9} for d in range(1, 31)]
    minor = [{"day": d, "p5_uc": 10**11, "p50_uc": 10**11 + 5 * 10**10, "p95_uc": 2 * 10**11} for d in range(1, 31)]
    return {
        "config": config.to_dict(), "config_sha256": f"{major_ppm:064x}",
        "balances_uc": {MAJOR: 10**12, MINOR: 10**11, RESERVE: 0},
        "balances_cents": {MAJOR: 10**6, MINOR: 10**5, RESERVE: 0},
        "balances_text": {MAJOR: "$10,000.00", MINOR: "$1,000.00", RESERVE: "$0.00"},
        "wager_shares": {"wager_cents": 100, "wager": "$1.00", "rate_version": 1, "rows": [
            {"pool": MAJOR, "ppm": major_ppm, "per_wager_uc": major_ppm * 100, "per_wager": "$0.20", "percent": "20%"},
            {"pool": "retained", "ppm": 700_000, "per_wager_uc": 70_000_000, "per_wager": "$0.70", "percent": "70%"}]},
        "games": {h.CARIBBEAN_STUD: {
            "hand_odds": {"game": h.CARIBBEAN_STUD, "total": 2_598_960, "method": "enumeration",
                          "rows": [{"category": "royal_flush", "hand": "Royal flush", "count": 4, "total": 2_598_960,
                                    "probability": "1/649740", "probability_percent": "0.000154%",
                                    "one_in": "1 in 649,740"}]},
            "return": {"wager_cents": 100, "expected_uc": "123/4", "expected": "$0.30", "rtp": "3/10",
                       "rtp_percent": f"{rtp_ppm / 10_000:.4f}%", "rtp_ppm": rtp_ppm,
                       "categories": [{"category": "royal_flush", "hand": "Royal flush", "pool": MAJOR, "count": 4,
                                       "total": 2_598_960, "payout_cents": 10**6, "payout": "$10,000.00",
                                       "funded_cents": 0, "funded": "$0.00", "rule": "NSW 12.1",
                                       "expected_uc": "1/2", "contribution_percent": "1.5391%",
                                       "contribution_ppm": 15391}]},
            "cross_check": {"closed_form_uc": "123/4", "by_pricing_uc": "123/4", "agrees": True},
            "break_even": {"pool": MAJOR, "balance_cents": int(be), "balance": f"${int(be) // 100:,}.00",
                           "rtp_at_reset": "1/3", "rtp_at_reset_percent": "33.3333%"},
            "return_curve": {"pool": MAJOR, "points": [
                {"balance_cents": c, "balance": "", "rtp": "", "rtp_percent": "",
                 "rtp_ppm": rtp_ppm + (c - 10**6) * 2 // 10} for c in range(10**6, 5 * 10**6 + 1, 10**5)]}}},
        "hit_times": [{"game": game, "category": "royal_flush", "hand": "Royal flush", "pool": MAJOR,
                       "probability": "1/649740", "one_in": "1 in 649,740", "hits_per_hour": "72/649740",
                       "hits_per_hour_text": "0.0001", "hits_per_day_text": "0.27", "hits_per_year_text": "97.1",
                       "hours_between": "10829/120", "hours_between_text": "90.24", "days_between_text": "3.76"}
                      for game in (h.CARIBBEAN_STUD, "*")],
        "long_run": {"wager_cents": 100, "rtp": rtp_ppm / 1e6, "rtp_percent": f"{rtp_ppm / 10_000:.4f}%",
                     "tolerance": 1e-7, "method": "cut balance", "reserve_in_per_wager_uc": 2.5e6,
                     "reserve_out_per_wager_uc": 4.6e7, "operator_per_wager_uc": 4.3e7, "operator_per_wager": "43¢",
                     "wagers_per_year": 63_072_000, "operator_per_year_uc": 10**15,
                     "operator_per_year": "$27,000,000.00",
                     "pools": [{"pool": MAJOR, "recurrent": True, "mean_balance": "$40,000.00", "p5": "$11,000.00",
                                "p50": "$30,000.00", "p95": "$100,000.00", "p99": "$150,000.00",
                                "at_cap_percent": "0.00%"}]},
        "simulation": {"seed": 1, "days": 30, "paths": 4, "wagers_per_path": 5_184_000,
                       "bands": {MAJOR: bands, MINOR: minor, RESERVE: bands},
                       "largest": {MAJOR: {"largest_uc": 2 * 10**13, "largest": "$200,000.00", "p95_uc": 10**13,
                                           "p95": "$100,000.00"}},
                       "hits": [{"game": h.CARIBBEAN_STUD, "category": "royal_flush", "hand": "Royal flush",
                                 "mean_per_path": 8.0, "mean_per_path_text": "8.00"}],
                       "simultaneous_rounds": 1.5, "operator_funding_mean_cents": 10**8,
                       "operator_funding_mean": "$1,000,000.00", "operator_funding_p95_cents": 2 * 10**8,
                       "operator_funding_p95": "$2,000,000.00", "paid_cents": 1, "wagered_cents": 1, "paid": "",
                       "wagered": "", "rtp": rtp_ppm / 1e6, "rtp_percent": "", "rtp_ci95": [0.2, 0.4],
                       "rtp_ci95_percent": ["20.0000%", "40.0000%"], "long_run_rtp_in_ci95": True,
                       "rtp_with_meters": 0.3, "rtp_with_meters_percent": "30.0000%",
                       "rtp_with_meters_ci95": [0.2, 0.4], "rtp_with_meters_ci95_percent": ["20.0000%", "40.0000%"],
                       "long_run_rtp_in_meters_ci95": True,
                       "elapsed_s": 1.0, "method": "sampled by exact probabilities"},
        "findings": [{"severity": "notice", "subject": HOSTILE, "text": "the operator funds 43¢ a wager"}]
        if major_ppm == 200_000 else [],
    }


def certificate(link_id: str = "demo-split", *, what_if: bool = True) -> dict[str, Any]:
    """A certificate document built by hand, with a proposed rate change when `what_if`."""
    config = split_config()
    current = _side(config, 200_000, 300_000, "4000000")
    proposed = _side(rate_change(config), 250_000, 320_000, "3500000")
    return {
        "schema": "jackpot-math/1", "generated_at": "2026-12-02T11:00:00Z",
        "source": {"kind": "file", "path": "split.toml", "sha256": "ab" * 32}, "link_id": link_id,
        "play": {"tables": {h.CARIBBEAN_STUD: 20}, "seats_filled": 6, "hands_per_hour": 60, "wagers_per_hour": 7200,
                 "wagers_per_year": 63_072_000, "mix": {h.CARIBBEAN_STUD: "1"}},
        **current,
        "config": {**current["config"], "link_id": link_id},
        "what_if": {"proposed": proposed, "changes": [
            {"field": "rate_sets[1]", "current": None, "proposed": proposed["config"]["rate_sets"][1]}]}
        if what_if else None,
        "methods": {"hand_odds": "exact", "return": "closed form", "simulation": f"seeded {HOSTILE}"},
    }
