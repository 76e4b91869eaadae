"""Whether a request or round id was used before (issue 22, P1): the live store's filter of used ids answers in the
atomic step itself, and the ledger is asked only when the filter cannot rule a use out."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Why(StrEnum):
    """Why the live store could not rule out that an id was used (the value is what metrics say)."""

    MAYBE = "maybe"  # the filter holds every bit of the request's or the new round's id (used, or a false positive)
    UNFILLED = "unfilled"  # the link has no complete filter (new, rebuilt, flushed, or being made bigger)
    REFUSED = "refused"  # a decision refused without the ledger's round state (e.g. a round Redis let go)


@dataclass(frozen=True, slots=True)
class Unsure:
    """The atomic step changed nothing: it cannot rule out that the step's request or round id was used, so the
    caller asks the ledger and applies again without the filter."""

    why: Why
