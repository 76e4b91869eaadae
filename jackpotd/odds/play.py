"""How a link is played, for the figures that depend on it: tables per game, seats filled, hands an hour."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from ..domain import hands as h
from ..domain.errors import InvalidInput
from ..domain.link import LinkConfig

DEFAULT_HANDS_PER_HOUR = 60  # a Caribbean Stud table deals about 50 to 70 rounds an hour
DEFAULT_SEATS_FILLED = 6
DEFAULT_TABLES = 20
MAX_TABLES = 100_000  # tables of one game on one link


@dataclass(frozen=True, slots=True)
class Play:
    """`tables` per game; every table has `seats_filled` jackpot wagers a round and deals `hands_per_hour` rounds."""

    tables: Mapping[str, int]
    seats_filled: int
    hands_per_hour: int

    def __post_init__(self) -> None:
        if not self.tables or sum(self.tables.values()) < 1:
            raise InvalidInput("tables", dict(self.tables), "the link needs at least one table to play")
        for game, n in self.tables.items():
            if game not in h.GAMES:
                raise InvalidInput("tables.game", game, f"unknown game; known games: {', '.join(h.GAMES)}")
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_TABLES:
                raise InvalidInput(f"tables[{game}]", n, f"must be a whole number of tables from 0 to {MAX_TABLES:,}")
        if isinstance(self.seats_filled, bool) or not 1 <= self.seats_filled <= 100_000:
            raise InvalidInput("seats_filled", self.seats_filled, "must be from 1 to 100,000")
        if isinstance(self.hands_per_hour, bool) or not 1 <= self.hands_per_hour <= 100_000:
            raise InvalidInput("hands_per_hour", self.hands_per_hour, "must be from 1 to 100,000")

    @property
    def games(self) -> tuple[str, ...]:
        """The games played, in the engine's order of games."""
        return tuple(g for g in h.GAMES if self.tables.get(g, 0) > 0)

    def rounds_per_hour(self, game: str) -> int:
        """Rounds of `game` dealt on the link in an hour."""
        return self.tables.get(game, 0) * self.hands_per_hour

    def wagers_per_hour(self, game: str) -> int:
        """Jackpot wagers of `game` on the link in an hour."""
        return self.rounds_per_hour(game) * self.seats_filled

    @property
    def total_wagers_per_hour(self) -> int:
        """Jackpot wagers of every game on the link in an hour."""
        return sum(self.wagers_per_hour(g) for g in self.games)

    def mix(self) -> dict[str, Fraction]:
        """Each game's exact share of the link's wagers (they add up to 1)."""
        total = self.total_wagers_per_hour
        return {g: Fraction(self.wagers_per_hour(g), total) for g in self.games}


def play_of(config: LinkConfig, tables: int | None = None, seats_filled: int | None = None,
            hands_per_hour: int = DEFAULT_HANDS_PER_HOUR) -> Play:
    """The link's play: its registered tables (not suspended) by game, or `tables` tables of the link's one game when
    it has none registered or `tables` is given (a link of several games needs tables per game: refused); seats filled
    default to the smallest such table's seats, at most DEFAULT_SEATS_FILLED."""
    playing = [t for t in config.tables.values() if not t.suspended]
    if tables is None and playing:
        by_game: dict[str, int] = {}
        for t in playing:
            by_game[t.game] = by_game.get(t.game, 0) + 1
        seats = seats_filled or min(min(t.seats for t in playing), DEFAULT_SEATS_FILLED)
        return Play(by_game, seats, hands_per_hour)
    games = sorted({t.game for t in playing} | set(config.paytables), key=h.GAMES.index)
    if tables is not None and len(games) > 1:
        raise InvalidInput("tables", tables, f"link {config.link_id} plays {', '.join(games)}: give the tables of "
                                             "each game (e.g. caribbean-stud=20,holdem-bonus=4)")
    game = games[0] if games else h.CARIBBEAN_STUD
    return Play({game: DEFAULT_TABLES if tables is None else tables}, seats_filled or DEFAULT_SEATS_FILLED,
                hands_per_hour)
