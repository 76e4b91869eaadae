"""Validating a round's wagers and hands before anything moves (RULES.md §1, §4; ARCHITECTURE.md, write path 1)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from itertools import compress, repeat
from operator import is_, itemgetter
from typing import NamedTuple

from . import hands as h
from .cards import Card, parse_each, require_distinct
from .errors import InvalidInput
from .pricing import Hit
from .seats import require_seat


class RoundState(StrEnum):
    """A round's state, as the live store, the journal and the ledger's rounds table hold it (the value)."""

    COMMITTED = "COMMITTED"
    PENDING = "PENDING"  # §7: settled, with a hit above the verification threshold not yet approved or rejected
    SETTLED = "SETTLED"
    VOIDED = "VOIDED"
    LOST = "LOST"  # in the ledger only: a round whose entries an unfence removed, never open again (store/unfence)


COMMITTED, PENDING, SETTLED, VOIDED = RoundState.COMMITTED, RoundState.PENDING, RoundState.SETTLED, RoundState.VOIDED
OPEN = (COMMITTED, PENDING)  # NZ 11.6A/B: pools are split or combined only when no round is open
FINISHED = (SETTLED, VOIDED)  # a finished round never changes again: the live store lets it expire


class Wager(NamedTuple):
    """A jackpot side wager as a table sends it (a named tuple: a round may hold 100,000, built in C)."""

    seat: int
    amount_cents: int
    ante_placed: bool


@dataclass(frozen=True, slots=True)
class PackedWagers:
    """A commit's wagers as the packed form sends them (API.md Columns): three columns of equal length, checked
    whole without a row per seat; rows are made only to name a fault."""

    seats: list[int]
    amounts: list[int]
    antes: list[bool]

    def rows(self) -> list[Wager]:
        """The wagers as rows (for a refusal's seat-by-seat check)."""
        return list(map(Wager._make, zip(self.seats, self.amounts, self.antes, strict=True)))


class NoHand(Enum):
    """Why a seat that wagered has no hand to evaluate (API.md SettleRound): its jackpot wager is a loss."""

    FOLDED = "FOLDED"
    MUCKED = "MUCKED"
    DEAD = "DEAD"


class SeatHand(NamedTuple):
    """A seat as a table settles it: its cards (for hold'em: the two hole cards), or why it has none."""

    seat: int
    cards: tuple[str, ...]
    no_hand: NoHand | None = None


def named(columns: bool, form: str, i: int, field: str, column: str) -> str:
    """A seat's field as the caller sent it: in rows (`wagers[3].seat`) or in the packed form of a big round
    (`wager_columns.seats[3]`, API.md Columns), so a refusal names what the caller can find."""
    return f"{form}_columns.{column}[{i}]" if columns else f"{form}s[{i}].{field}"


@dataclass(frozen=True, slots=True)
class PackedHands:
    """A settle's hands as the packed form sends them (API.md Columns): seats, each seat's cards (most seats of a
    big round have none) and why it has no hand, of equal length; a row is made only for a seat that needs a look."""

    seats: list[int]
    cards: list[tuple[str, ...]]
    reasons: list[NoHand | None]

    def rows(self) -> list[SeatHand]:
        """Every seat as a row (for a refusal's seat-by-seat check)."""
        return list(map(SeatHand._make, zip(self.seats, self.cards, self.reasons, strict=True)))

    def looked_at(self) -> list[tuple[int, SeatHand]]:
        """The seats with cards or without a reason, with their index: every other seat is a stated loss."""
        count = len(self.seats)
        at = set(compress(range(count), self.cards))
        if None in self.reasons:  # a seat without a reason: with its cards, or refused below
            at.update(compress(range(count), map(is_, self.reasons, repeat(None))))
        return [(i, SeatHand(self.seats[i], self.cards[i], self.reasons[i])) for i in sorted(at)]


def hand_columns(hands: Sequence[SeatHand] | PackedHands) -> tuple[list[int], list[tuple[str, ...]],
                                                                   list[NoHand | None]]:
    """A settle's seats, cards and reasons as columns, whichever form the hands came in (read in C)."""
    if isinstance(hands, PackedHands):
        return hands.seats, hands.cards, hands.reasons
    return list(map(itemgetter(0), hands)), list(map(itemgetter(1), hands)), list(map(itemgetter(2), hands))


def require_every_wagered_seat(wagered: Collection[int], hands: Sequence[SeatHand] | PackedHands, *,
                               columns: bool = False) -> None:
    """Each seat that wagered appears in the settle, with its cards or stated as having no hand: a seat left out
    (a wrong seat number, a forgotten one) must never silently lose a hit. Refused, naming the seats."""
    missing = sorted(set(wagered).difference(hand_columns(hands)[0]) if not isinstance(wagered, set)
                     else wagered.difference(hand_columns(hands)[0]))  # in C, no copy: a round may hold 100,000
    if missing:
        listed = ", ".join(map(str, missing))
        raise InvalidInput("hand_columns.seats" if columns else "hands", missing,
                           f"seat{'s' if len(missing) > 1 else ''} {listed} wagered in this round and must each "
                           "appear once: with the cards, or with no_hand (FOLDED, MUCKED or DEAD)")


def validate_wagers(wagers: Sequence[Wager], seats: int, wager_cents: int, *,
                    columns: bool = False) -> tuple[tuple[int, int], ...]:
    """§1: one wager per seat, of the sign's amount (NSW 11.3), only with an ante (11.1). Returns (seat, cents).
    `columns`: the wagers came in the packed form, and a refusal names its column (`wager_columns.seats[i]`)."""
    return tuple(zip(wager_seats(wagers, seats, wager_cents, columns=columns), repeat(wager_cents)))


def wager_seats(wagers: Sequence[Wager] | PackedWagers, seats: int, wager_cents: int, *,
                columns: bool = False) -> list[int]:
    """validate_wagers' checks, answering the wagered seats in order: every wager is then of `wager_cents`.
    PackedWagers are checked as columns (no row per seat), and a refusal names their column."""
    if isinstance(wagers, PackedWagers):
        seat_list, amounts, antes = wagers.seats, wagers.amounts, wagers.antes
        columns = True
    else:
        seat_list = list(map(itemgetter(0), wagers))
        amounts = list(map(itemgetter(1), wagers))
        antes = list(map(itemgetter(2), wagers))
    if not seat_list:
        raise InvalidInput("wager_columns.seats" if columns else "wagers", [], "a commit needs at least one wager")
    if (set(map(type, seat_list)) == {int} and min(seat_list) >= 1 and max(seat_list) <= seats
            and len(set(seat_list)) == len(seat_list) and amounts.count(wager_cents) == len(amounts)
            and antes.count(True) == len(antes) and set(map(type, antes)) == {bool}):
        return sorted(seat_list)  # the whole round at once; a fault is found below
    seen: set[int] = set()
    for i, w in enumerate(wagers.rows() if isinstance(wagers, PackedWagers) else wagers):
        if type(w.seat) is not int or not 1 <= w.seat <= seats:  # the field's name is built only for a refusal
            require_seat(named(columns, "wager", i, "seat", "seats"), w.seat, seats)
        if w.seat in seen:
            raise InvalidInput(named(columns, "wager", i, "seat", "seats"), w.seat,
                               "duplicate seat: one jackpot wager per seat per round")
        seen.add(w.seat)
        if w.amount_cents != wager_cents:
            raise InvalidInput(named(columns, "wager", i, "amount_cents", "amount_cents"), w.amount_cents,
                               f"must be the link's jackpot wager of {wager_cents} cents")
        if not w.ante_placed:
            raise InvalidInput(named(columns, "wager", i, "ante_placed", "ante_placed"), False,
                               "a jackpot wager needs an ante first (NSW 11.1)")
    return sorted(seen)


def _sent(cards: Sequence[str], columns: bool) -> object:
    """A seat's cards as the caller sent them: a list in rows, one string in the packed form."""
    return " ".join(cards) if columns else list(cards)


def _parse(cards: Sequence[str], field: str) -> list[Card]:
    """A seat's (or the board's) cards, repeats checked later across the round; an error names field[i]."""
    return parse_each(cards, field)


def evaluate_round(game: str, seats: int, wagered: Sequence[int], hands: Sequence[SeatHand] | PackedHands,
                   board: Sequence[str] = (), dealer: Sequence[str] = (), *, columns: bool = False
                   ) -> tuple[Hit, ...]:
    """§4: the service evaluates the cards itself; all cards of the round must be distinct cards of one deck.

    Returns the category of every seat holding a wager and cards; other seats' cards are only checked, and a
    seat stated as having no hand (no cards) is a loss. A seat with neither cards nor a reason is refused.
    """
    if game not in h.CARDS_PER_HAND:
        raise InvalidInput("game", game, f"unknown game; known games: {', '.join(h.GAMES)}")
    per_seat = h.CARDS_PER_HAND[game]
    board_cards = _parse(board, "board_cards")
    if game == h.HOLDEM_BONUS:
        if len(board_cards) != 5:
            raise InvalidInput("board_cards", list(board), "hold'em bonus needs the 5 community cards")
        per_seat = 2
    elif board_cards:
        raise InvalidInput("board_cards", list(board), f"{game} has no community cards")
    all_cards: list[Card] = list(board_cards) + _parse(dealer, "dealer_cards")
    parsed: dict[int, list[Card]] = {}
    stated: set[int] = set()
    seat_list = hand_columns(hands)[0]
    checked = (bool(seat_list) and set(map(type, seat_list)) == {int} and min(seat_list) >= 1
               and max(seat_list) <= seats and len(set(seat_list)) == len(seat_list))  # all at once: a big round
    if isinstance(hands, PackedHands):
        columns = True
        todo: Iterable[tuple[int, SeatHand]] = hands.looked_at() if checked else enumerate(hands.rows())
    else:
        todo = enumerate(hands)
    for i, hand in todo:
        if not checked:  # a fault is named seat by seat
            require_seat(named(columns, "hand", i, "seat", "seats"), hand.seat, seats)
            if hand.seat in stated:
                raise InvalidInput(named(columns, "hand", i, "seat", "seats"), hand.seat,
                                   "duplicate seat: one hand per seat")
            stated.add(hand.seat)
        if hand.no_hand is not None:
            if hand.cards:
                raise InvalidInput(named(columns, "hand", i, "cards", "cards"), _sent(hand.cards, columns),
                                   f"seat {hand.seat} is stated as {hand.no_hand.value}: send its cards or no_hand, "
                                   "not both")
            continue
        if not hand.cards:
            raise InvalidInput(named(columns, "hand", i, "cards", "cards"), _sent((), columns),
                               f"seat {hand.seat} has no cards: send them, or say why it has none with no_hand "
                               "(FOLDED, MUCKED or DEAD)")
        cards = _parse(hand.cards, named(columns, "hand", i, "cards", "cards"))
        if len(cards) != per_seat:
            raise InvalidInput(named(columns, "hand", i, "cards", "cards"), _sent(hand.cards, columns),
                               f"{game} needs exactly {per_seat} cards a seat")
        parsed[hand.seat] = cards
        all_cards += cards
    require_distinct(all_cards, "cards", "the round")
    wagered_set = set(wagered)
    return tuple(Hit(seat, h.categorize(game, cards + board_cards))
                 for seat, cards in sorted(parsed.items()) if seat in wagered_set)
