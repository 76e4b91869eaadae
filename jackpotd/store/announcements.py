"""The one codec of the writer's announcements (keys.DURABLE_CHANNEL): entries durable, a link rebuilt, a link
fenced. The text is what every version of jackpotd publishes and reads (a rolling upgrade mixes them):

    "<link> d <first seq> <hash> <hash> ..."   one hash prefix per entry, first..first+len-1
    "<link> rebuilt <seq>"                      Redis was rebuilt from the ledger at that head
    "<link> fenced <seq>[ <reason>]"            the ledger refused entry <seq>; reason may hold spaces
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, assert_never

HASH_PREFIX = 16  # hex digits of a request identity in durability announcements (64 bits)


@dataclass(frozen=True, slots=True)
class Durable:
    """The ledger holds entries seq..seq+len(hashes)-1 of the link, with these request hash prefixes."""

    link: str  # an id (domain/ids.py): never a space
    seq: int
    hashes: tuple[str, ...]  # at least one, none empty, none with a space


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """The link's Redis was rebuilt from the ledger, whose head is `seq`: later entries were lost."""

    link: str
    seq: int


@dataclass(frozen=True, slots=True)
class Fenced:
    """The ledger refused entry `seq` of the link, which is stopped until a person acts; `reason` says why."""

    link: str
    seq: int
    reason: str = ""


Announcement: TypeAlias = Durable | Rebuilt | Fenced


def encode(a: Announcement) -> str:
    """The announcement's text on the channel (a fence's reason without trailing whitespace, as ever)."""
    match a:
        case Durable(link, seq, hashes):
            return f"{link} d {seq} " + " ".join(hashes)
        case Rebuilt(link, seq):
            return f"{link} rebuilt {seq}"
        case Fenced(link, seq, reason):
            return f"{link} fenced {seq} {reason}".rstrip()
        case _:
            assert_never(a)


def parse(text: str) -> Announcement:
    """The announcement a text on the channel carries; ValueError naming the text if it is not one."""
    words = text.split(" ")
    if len(words) < 3 or not words[0] or not words[2].isascii() or not words[2].isdigit():
        raise ValueError(f"malformed announcement {text[:200]!r}")
    link, kind, seq_text, rest = words[0], words[1], words[2], words[3:]
    seq = int(seq_text)
    if kind == "d" and rest and "" not in rest:
        return Durable(link, seq, tuple(rest))
    if kind == "rebuilt" and not rest:
        return Rebuilt(link, seq)
    if kind == "fenced":
        return Fenced(link, seq, " ".join(rest))
    raise ValueError(f"malformed announcement {text[:200]!r}")
