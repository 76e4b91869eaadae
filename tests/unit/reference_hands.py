"""A deliberately naive, independent classifier used only to cross-check jackpotd.domain.hands."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

ORDER5 = ["royal_flush", "straight_flush", "four_of_a_kind", "full_house", "flush", "straight",
          "three_of_a_kind", "two_pair", "pair", "high_card"]
ORDER3 = ["straight_flush", "three_of_a_kind", "straight", "flush", "pair", "high_card"]
ORDER4 = ["four_of_a_kind", "straight_flush", "three_of_a_kind", "flush", "straight", "two_pair", "pair", "high_card"]


def _straight(values: list[int]) -> bool:
    s = sorted(values)
    n = len(s)
    if len(set(s)) != n:
        return False
    runs = [list(range(lo, lo + n)) for lo in range(2, 15 - n + 1)] + [[*[2, 3, 4, 5][: n - 1], 14]]
    return any(sorted(r) == s for r in runs)


def classify(cards: list[tuple[int, str]]) -> str:
    """cards: (value 2..14, suit) pairs; 3, 4 or 5 of them."""
    values = [v for v, _ in cards]
    flush = len({s for _, s in cards}) == 1
    straight = _straight(values)
    shape = sorted(Counter(values).values(), reverse=True)
    if flush and straight:
        return "royal_flush" if len(cards) == 5 and sorted(values) == [10, 11, 12, 13, 14] else "straight_flush"
    if shape[0] == 4:
        return "four_of_a_kind"
    if shape[:2] == [3, 2]:
        return "full_house"
    if flush:
        return "flush"
    if straight:
        return "straight"
    if shape[0] == 3:
        return "three_of_a_kind"
    if shape[:2] == [2, 2]:
        return "two_pair"
    if shape[0] == 2:
        return "pair"
    return "high_card"


def parse(text: str) -> tuple[int, str]:
    rank, suit = text[:-1].upper(), text[-1].lower()
    value = {"T": 10, "10": 10, "J": 11, "Q": 12, "K": 13, "A": 14}.get(rank) or int(rank)
    return value, suit


def best(cards: list[tuple[int, str]], size: int, order: list[str]) -> str:
    return min((classify(list(c)) for c in combinations(cards, size)), key=order.index)
