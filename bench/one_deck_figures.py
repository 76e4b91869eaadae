"""Issue 33 part 4: how far one deck per round moves the certificate's figures from independent draws per seat.

For the demo link, each file of clients/math/examples, and a split link of each game's default paytable (20 tables
× 6 seats × 60 hands an hour, as tests build them): the long-run return (the one-seat model with every hit alone, as
before, and the one-deck round law), each pool's hits and hit rounds an hour, and the chance that a round holds 2 or
more paying hands (independent draws: 1 − (1 − p)^S − S·p·(1 − p)^(S−1), exact; one deck: a year of the link's
rounds drawn by the simulation's sampler, with its standard error).

Run: `.venv/bin/python bench/one_deck_figures.py` (about a minute; no money moves, nothing is written).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from jackpotd.demo import demo_config, demo_tables
from jackpotd.domain import hands as h
from jackpotd.domain.link import LinkConfig
from jackpotd.domain.paytable import default_paytable
from jackpotd.domain.pools import MAJOR, MINOR, RESERVE, SPLIT, PoolSpec
from jackpotd.domain.rates import RateSet
from jackpotd.odds.long_run import _probabilities, long_run, long_run_of
from jackpotd.odds.play import Play, play_of
from jackpotd.odds.round_law import round_law
from jackpotd.odds.sampling import draw_hit_rounds, game_draw, sampler

ROOT = Path(__file__).resolve().parent.parent
DAYS = 365


def links() -> Iterator[tuple[str, LinkConfig, Play]]:
    """The configurations: the demo (its 6 tables of 7 seats), the examples, one split link per game."""
    demo = demo_config()
    yield "demo", demo, Play({h.CARIBBEAN_STUD: len(demo_tables())}, demo_tables()[0].seats, 60)
    import sys
    sys.path.insert(0, str(ROOT / "clients" / "math"))
    from jackpot_math.link_toml import load_link, play_of_flags
    from jackpot_math.toml_shape import BadInput
    for path in sorted((ROOT / "clients" / "math" / "examples").glob("*.toml")):
        try:
            loaded = load_link(path)
        except BadInput:  # a what-if change (rates-change.toml), not a link: its link is another example's
            print(f"## examples/{path.name}: a what-if change, not a link (skipped)")
            continue
        yield f"examples/{path.name}", loaded.config, play_of_flags(loaded.config, loaded.play)
    for game in h.GAMES:
        config = LinkConfig(
            f"{game}-split", SPLIT, 100, (PoolSpec(MAJOR, 1_000_000), PoolSpec(MINOR, 100_000), PoolSpec(RESERVE)),
            (RateSet({MAJOR: 200_000, MINOR: 75_000, RESERVE: 25_000}, 700_000),),
            {game: default_paytable(game, SPLIT)})
        yield f"{game} (default paytable)", config, play_of(config, tables=20, seats_filled=6)


def two_or_more(config: LinkConfig, play: Play, game: str) -> tuple[float, float, float]:
    """P(a round holds 2+ paying hands): independent draws (exact), one deck (simulated year), its standard error."""
    s = sampler(game_draw(config.paytable(game)), play.tables[game], 0, play.seats_filled)
    p, seats = float(s.draw.p_pay), play.seats_filled
    before = 1 - (1 - p) ** seats - seats * p * (1 - p) ** (seats - 1)
    deals = DAYS * 24 * play.hands_per_hour
    drawn = draw_hit_rounds(np.random.default_rng(33), [s], deals, seats)
    rounds = deals * play.tables[game]
    after = float((drawn.count >= 2).sum()) / rounds
    return before, after, math.sqrt(after * (1 - after) / rounds)


def main() -> None:
    for name, config, play in links():
        before = long_run_of(config, _probabilities(config, play)).rtp
        after = long_run(config, play).rtp
        print(f"## {name}: {dict(play.tables)} tables x {play.seats_filled} seats x {play.hands_per_hour}/h")
        print(f"long-run return: {before:.6%} -> {after:.6%} ({(after - before) * 100:+.6f} points)")
        for game in play.games:
            entries = config.paytable(game).entries
            law = round_law(game, {c: e.pool for c, e in entries.items()}, play.seats_filled)
            probs = game_draw(config.paytable(game))
            rounds_h = play.rounds_per_hour(game)
            for pool in dict.fromkeys(e.pool for e in entries.values()):
                cats = [c for c, e in entries.items() if e.pool == pool]
                p_pool = sum(float(q) for c, q in zip(probs.categories, probs.probabilities, strict=True)
                             if c in cats)
                hits_h = p_pool * play.wagers_per_hour(game)
                was = rounds_h * (1 - (1 - p_pool) ** play.seats_filled)
                now = rounds_h * sum(float(q) for pattern, q in law.patterns.items() if pattern[0] in cats)
                print(f"  {game} {pool}: hits/h {hits_h:.6g} (both ways); rounds with a hit/h {was:.6g} -> "
                      f"{now:.6g} ({(now / was - 1) * 100:+.3f}%)")
            b, a, se = two_or_more(config, play, game)
            print(f"  {game} P(2+ paying hands in a round): {b:.4e} -> {a:.4e} +/- {se:.1e} "
                  f"({(a / b - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
