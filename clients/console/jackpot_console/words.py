"""How the console says things to a person: dollars and cents, hands and cards in words, ages, status codes."""

from __future__ import annotations

import time

SUITS = {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}
RANKS = {"T": "10"}

# gRPC status codes as a supervisor reads them (the code itself is shown beside, for the technicians)
CODES = {
    "FAILED_PRECONDITION": "Refused",
    "PERMISSION_DENIED": "Not allowed",
    "INVALID_ARGUMENT": "Not accepted",
    "NOT_FOUND": "Not found",
    "ALREADY_EXISTS": "Already done",
    "UNAVAILABLE": "jackpotd cannot be reached; try again",
    "DEADLINE_EXCEEDED": "jackpotd did not answer in time; check before trying again",
    "UNAUTHENTICATED": "jackpotd refused the console's credential",
    "RESOURCE_EXHAUSTED": "jackpotd is busy; try again",
}


def dollars(cents: int) -> str:
    """$12,345.67 (cents on the wire are whole: never a float)."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}${cents // 100:,}.{cents % 100:02d}"


def hand(name: str) -> str:
    """"royal_flush" as "Royal flush"."""
    return name.replace("_", " ").capitalize() if name else ""


def card(code: str) -> str:
    """"As" as "A♠", "Th" as "10♥" (anything else as it is)."""
    if len(code) != 2 or code[1] not in SUITS:
        return code
    return RANKS.get(code[0], code[0]) + SUITS[code[1]]


def cards(codes: tuple[str, ...] | list[str]) -> str:
    """Cards in words: "A♠ K♠ Q♠ J♠ 10♠"."""
    return " ".join(card(c) for c in codes)


def age(at_ms: int, now_ms: int | None = None) -> str:
    """How long ago: "12 s", "3 min", "2 h 5 min", "3 d"; "" when the time is not known."""
    if at_ms <= 0:
        return ""
    seconds = max(0, ((now_ms if now_ms is not None else int(time.time() * 1000)) - at_ms) // 1000)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d"


def when(at_ms: int) -> str:
    """A moment in UTC to the second, as the audit trail shows it."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at_ms / 1000)) if at_ms > 0 else ""


def refusal(code: str, message: str) -> str:
    """A gRPC error in words, its code beside: "Refused (FAILED_PRECONDITION): hit_id=…: dual control …"."""
    return f"{CODES.get(code, 'Failed')} ({code}): {message}"


def approvals(approved_by: tuple[str, ...], needed: int) -> str:
    """"1 of 2" (who, in order, after), or "0 of 1"."""
    text = f"{len(approved_by)} of {max(needed, 1)}"
    return f"{text}: {', '.join(approved_by)}" if approved_by else text
