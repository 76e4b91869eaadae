"""When a page's live part may be served from the session's cache instead of asking jackpotd again (pure).

Each read of the pending hits is a ListHits, which jackpotd records on its audit trail; the console follows the
link's hits (watch.py) and counts a generation per change, so a refresh reads again only when something changed,
the watch is down, or the cached render is old enough that its ages ("3 min ago") would be wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

CACHE_SECONDS = 30.0  # a cached render older than this is read again, so the ages it shows stay roughly right


@dataclass(frozen=True, slots=True)
class CachedPart:
    """A page's live part as last rendered for a session: the hits generation it was read at, when (monotonic
    seconds), and its HTML."""

    generation: int
    at: float
    html: str


def use_cache(watching: bool, generation: int, cached: CachedPart | None, now: float,
              max_age: float = CACHE_SECONDS) -> bool:
    """Whether a refresh may show `cached` rather than read afresh: only while the watch is up, no hit was
    announced since it was read (same generation), and it is younger than `max_age`."""
    return (watching and cached is not None and cached.generation == generation
            and 0 <= now - cached.at < max_age)
