"""`jackpot-math odds`: the exact hand table of each game, as text (jackpotd.odds.hand_odds: counted by
enumeration or exact combinatorics, never sampled)."""

from __future__ import annotations

from collections.abc import Sequence

from jackpotd.odds.exact_text import one_in, percent_text
from jackpotd.odds.hand_odds import hand_odds


def odds_text(games: Sequence[str]) -> str:
    """A table per game: hand, count of `total`, exact probability (percent, 6 places) and 1 in N."""
    out: list[str] = []
    for game in games:
        odds = hand_odds(game)
        out.append(f"{game}: {odds.total:,} equally likely hands")
        out.append(f"  counted by {odds.method}")
        width = max(len(c) for c in odds.counts)
        out.append(f"  {'hand':<{width}}  {'count':>13}  {'probability':>13}  odds")
        for category, count in odds.counts.items():
            p = odds.probability(category)
            out.append(f"  {category:<{width}}  {count:>13,}  {percent_text(p, 6):>13}  "
                       f"{one_in(p) if count else 'never'}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
