"""The jackpot wager's exact return for one seat (issue 24): at given pool balances, by closed form and by pricing
every hand through the engine, its break-even pool, its curve against pool size, and the share of each wager.

Everything here is exact: ints of cents and µ¢, and Fractions; no float ever touches money.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from ..domain import hands as h
from ..domain.errors import InvalidInput
from ..domain.link import LinkConfig
from ..domain.money import MAX_SAFE_UC, UC_PER_CENT, ceil_cents, percent_of_cents
from ..domain.paytable import Paytable, PaytableEntry
from ..domain.pools import RESERVE
from ..domain.pricing import Hit, price_round
from ..domain.rates import newest_rates, rates_in_force
from .hand_odds import enumerated_counts, hand_odds, require_game
from .play import Play

RETAINED = "retained"  # WagerShares.per_wager_uc's name for the operator's retained portion
LINK_WIDE = "*"  # HitTime.game of a row that sums a category over the link's games
_MAX_CENTS = MAX_SAFE_UC // UC_PER_CENT  # §2: no pool may hold more; a break-even beyond it is "never"


@dataclass(frozen=True, slots=True)
class CategoryReturn:
    """What one paying category pays one seat at given balances, and the operator's shortfall in it (§5.7)."""

    category: str
    pool: str
    count: int
    total: int
    payout_cents: int
    funded_cents: int
    rule: str

    @property
    def expected_uc(self) -> Fraction:
        """This category's exact part of the expected payout per wager, in µ¢."""
        return Fraction(self.count * self.payout_cents * UC_PER_CENT, self.total)


@dataclass(frozen=True, slots=True)
class ReturnAt:
    """The jackpot wager's exact expected payout per wager (µ¢) for one seat, at `balances_uc`, by category."""

    game: str
    wager_cents: int
    balances_uc: Mapping[str, int]
    categories: tuple[CategoryReturn, ...]
    expected_uc: Fraction

    @property
    def rtp(self) -> Fraction:
        """Return to player: expected payout over the wager (1 is break-even)."""
        return self.expected_uc / (self.wager_cents * UC_PER_CENT)


@dataclass(frozen=True, slots=True)
class BreakEven:
    """The least whole-cent balance of the game's percentage pool at which the wager returns 100% or more."""

    game: str
    pool: str | None  # None: the game has no percentage entry, so its return never moves
    balance_cents: int | None  # None: never (no percentage pool, or beyond the largest balance a pool may hold)
    rtp_at_reset: Fraction  # the return with that pool at its reset value (at balances_uc when there is none)


@dataclass(frozen=True, slots=True)
class WagerShares:
    """Where each wager goes under one rate set (§3): ppm per pool and retained, exact µ¢ of one wager."""

    wager_cents: int
    pools_ppm: Mapping[str, int]
    retained_ppm: int
    rate_version: int

    def per_wager_uc(self, pool: str) -> int:
        """µ¢ of one wager that go to `pool` (0 for a pool the rates leave out); `RETAINED` for the operator.
        A ppm of a cent is a µ¢ (§2), so this is wager_cents × rate_ppm, exact."""
        ppm = self.retained_ppm if pool == RETAINED else self.pools_ppm.get(pool, 0)
        return self.wager_cents * ppm


@dataclass(frozen=True, slots=True)
class HitTime:
    """How often a category hits at a given play: exact probability per wager, hits an hour, hours between hits."""

    game: str  # LINK_WIDE ("*") for the sum over the link's games
    category: str
    pool: str  # pools joined by "/" on a link-wide row whose games pay it from different pools
    probability: Fraction  # per wager (link-wide: per wager of any game)
    hits_per_hour: Fraction
    hours_between: Fraction | None  # None: it never hits at this play


def require_balances(config: LinkConfig, balances_uc: Mapping[str, int]) -> dict[str, int]:
    """Every pool's balance in µ¢ (0 when not given), refusing an unknown pool or a negative or absurd balance."""
    names = tuple(p.name for p in config.pools)
    for name, value in balances_uc.items():
        if name not in names:
            raise InvalidInput("balances_uc", name, f"not a pool of link {config.link_id}")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SAFE_UC:
            raise InvalidInput(f"balances_uc[{name}]", value, f"must be a whole number of µ¢ from 0 to {MAX_SAFE_UC}")
    return {name: balances_uc.get(name, 0) for name in names}


def _paytable(config: LinkConfig, game: str) -> Paytable:
    """The link's paytable of a known game."""
    return config.paytable(require_game(game))


def _paying(table: Paytable) -> list[PaytableEntry]:
    """The paytable's entries in the game's category order (highest hand first)."""
    return [table.entries[c] for c in h.CATEGORIES_BY_GAME[table.game] if c in table.entries]


def _price_one(entry: PaytableEntry, balance_uc: int) -> tuple[int, int, str]:
    """Closed form of §5 for a lone hit (NSW 12.1): (payout ¢, operator shortfall ¢, rule); not price_round."""
    payout = max(entry.min_cents, percent_of_cents(balance_uc, entry.percent_ppm)) if entry.is_share \
        else entry.min_cents
    need = payout * UC_PER_CENT
    funded = ceil_cents(need - balance_uc) if need > balance_uc else 0
    return payout, funded, "NSW 12.1" if entry.is_share else "NSW 12.1 fixed payout"


def return_at(config: LinkConfig, game: str, balances_uc: Mapping[str, int]) -> ReturnAt:
    """The exact return of one seat's wager at `balances_uc` (µ¢ per pool; absent pools hold 0), by closed form."""
    table = _paytable(config, game)
    balances = require_balances(config, balances_uc)
    odds = hand_odds(game)
    rows = []
    for entry in _paying(table):
        payout, funded, rule = _price_one(entry, balances[entry.pool])
        rows.append(CategoryReturn(entry.category, entry.pool, odds.counts[entry.category], odds.total,
                                   payout, funded, rule))
    expected = Fraction(sum(r.count * r.payout_cents for r in rows) * UC_PER_CENT, odds.total)
    return ReturnAt(game, config.wager_cents, balances, tuple(rows), expected)


def reset_balances(config: LinkConfig) -> dict[str, int]:
    """Every pool at its reset value and RESERVE empty (µ¢): the balances of a link as created, at which the math
    certificate states its "return at reset" (jackpot_math.certificate.balances_for with no balances given)."""
    return {p.name: 0 if p.name == RESERVE else p.reset_cents * UC_PER_CENT for p in config.pools}


def return_at_reset(config: LinkConfig, game: str) -> ReturnAt:
    """`return_at` with every pool at its reset value: the return the service refuses at 100% (issue 33)."""
    return return_at(config, game, reset_balances(config))


def return_by_pricing(config: LinkConfig, game: str, balances_uc: Mapping[str, int]) -> Fraction:
    """The expected payout per wager (µ¢) the independent way: every hand of the game through the engine's evaluator
    (`enumerated_counts`), each category priced by `pricing.price_round` as one seat's lone hit."""
    table = _paytable(config, game)
    balances = require_balances(config, balances_uc)
    tally = enumerated_counts(game)
    paid_uc = 0
    for category, count in tally.items():  # the price of a lone hit depends only on its category: once each
        priced = price_round(table, config.pools, balances, [Hit(1, category)], seats=1)
        paid_uc += count * sum(p.amount_cents for p in priced.payouts) * UC_PER_CENT
    return Fraction(paid_uc, sum(tally.values()))


def percentage_pool(config: LinkConfig, game: str) -> str | None:
    """The pool the game's return grows with: that of its highest percentage entry (None: it has none)."""
    return next((e.pool for e in _paying(_paytable(config, game)) if e.is_share), None)


def _with(balances: Mapping[str, int], pool: str, cents: int) -> dict[str, int]:
    """`balances` with `pool` at a whole number of cents."""
    return {**balances, pool: cents * UC_PER_CENT}


def break_even(config: LinkConfig, game: str, balances_uc: Mapping[str, int]) -> BreakEven:
    """The least whole-cent balance B of the percentage pool (other pools at `balances_uc`) at which the expected
    payout reaches the wager, exactly: the return never falls as that pool grows, so a binary search over cents."""
    balances = require_balances(config, balances_uc)
    pool = percentage_pool(config, game)
    if pool is None:
        return BreakEven(game, None, None, return_at(config, game, balances).rtp)
    at_reset = return_at(config, game, _with(balances, pool, config.pool_spec(pool).reset_cents)).rtp

    def pays(cents: int) -> bool:
        """The wager returns 100% or more with the pool at `cents`."""
        return return_at(config, game, _with(balances, pool, cents)).rtp >= 1

    if not pays(_MAX_CENTS):
        return BreakEven(game, pool, None, at_reset)
    low, high = -1, _MAX_CENTS  # pays(high), not pays(low)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if pays(mid) else (mid, high)
    return BreakEven(game, pool, high, at_reset)


def return_curve(config: LinkConfig, game: str, balances_uc: Mapping[str, int], *, points: int = 41,
                 up_to_cents: int | None = None) -> tuple[tuple[int, Fraction], ...]:
    """`points` evenly spaced whole-cent balances of the percentage pool, from its reset value to `up_to_cents`
    (default: the larger of twice the reset and 5/4 of the break-even), each with its exact rtp. A game without a
    percentage pool has one point (0, its fixed rtp)."""
    if isinstance(points, bool) or not 2 <= points <= 10_000:
        raise InvalidInput("points", points, "must be from 2 to 10,000")
    balances = require_balances(config, balances_uc)
    pool = percentage_pool(config, game)
    if pool is None:
        return ((0, return_at(config, game, balances).rtp),)
    start = config.pool_spec(pool).reset_cents
    if up_to_cents is None:
        even = break_even(config, game, balances).balance_cents
        up_to_cents = min(_MAX_CENTS, max(2 * start, 100_00, -(-5 * (even or start) // 4)))
    if isinstance(up_to_cents, bool) or not start < up_to_cents <= _MAX_CENTS:
        raise InvalidInput("up_to_cents", up_to_cents,
                           f"must be above the {pool} reset value ({start} cents) and at most {_MAX_CENTS}")
    steps = points - 1
    cents = [start + (up_to_cents - start) * i // steps for i in range(points)]
    return tuple((c, return_at(config, game, _with(balances, pool, c)).rtp) for c in cents)


def wager_shares(config: LinkConfig, at_ms: int | None = None) -> WagerShares:
    """Where one wager goes under the rate set in force at `at_ms` (§3), or the newest rate set when None."""
    rates = newest_rates(config.rate_sets) if at_ms is None else rates_in_force(config.rate_sets, at_ms)
    return WagerShares(config.wager_cents, dict(rates.pools_ppm), rates.retained_ppm, rates.version)


def hit_times(config: LinkConfig, play: Play) -> tuple[HitTime, ...]:
    """Each paying (game, category) of the games played, then link-wide rows (game "*") per category, with exact
    hits an hour (probability × wagers an hour) and hours between hits."""
    rows: list[HitTime] = []
    for game in play.games:
        odds = hand_odds(game)
        for entry in _paying(_paytable(config, game)):
            p = odds.probability(entry.category)
            rows.append(_hit_time(game, entry.category, entry.pool, p, p * play.wagers_per_hour(game)))
    linked: dict[str, list[HitTime]] = {}
    for row in rows:
        linked.setdefault(row.category, []).append(row)
    wagers = play.total_wagers_per_hour
    for category, per_game in linked.items():
        per_hour = sum((r.hits_per_hour for r in per_game), Fraction(0))
        pools = "/".join(dict.fromkeys(r.pool for r in per_game))
        rows.append(_hit_time(LINK_WIDE, category, pools, per_hour / wagers, per_hour))
    return tuple(rows)


def _hit_time(game: str, category: str, pool: str, probability: Fraction, per_hour: Fraction) -> HitTime:
    """One row of hit_times."""
    return HitTime(game, category, pool, probability, per_hour, 1 / per_hour if per_hour else None)

