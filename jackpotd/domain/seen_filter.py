"""The filter of the ids a link has used (issue 22, P1): a Bloom filter of every request id and round id the
ledger holds, kept in the live store, so a call asks the ledger only when the filter says "maybe".

A Bloom filter never forgets (no false "absent"), so "absent" is exact while the filter is complete; a "maybe" is
only a question to the ledger. This module is the pure part: which bits an id sets, how big a filter is made for
how many ids, and how likely a "maybe" is for an id never used. The live store holds the bits (store/apply.lua).
"""

from __future__ import annotations

import math
import struct
from hashlib import blake2b

K = 4  # bits per id: few, as the atomic step sets each; 0.1% "maybe" at 20 bits an id, 1.2% at 10 (REFILL_AT)
BITS_PER_ID = 20  # a new filter has this many bits per id it holds (~0.02% "maybe"), so it can take as many again
MIN_BITS = 1 << 20  # 128 KiB: a new or small link
MAX_BITS = 1 << 32  # 512 MiB, the largest Redis string
REFILL_AT = 1 / 3  # a filter with a third of its bits set (10 bits an id) says "maybe" for 1.2% of new ids
WORD = 1 << 32  # each position is 32 bits; the store takes it modulo the filter's size (a power of two)
_WORDS = struct.Struct(f">{K}I").unpack


def request_key(key: str) -> str:
    """The filter's id of a request (its scoped key, `<caller>:<request_id>`, or a bare id the ledger holds)."""
    return "q" + key


def round_key(table_id: str, round_id: str) -> str:
    """The filter's id of a round: a table's round id is used once. Ids hold no ':' in the round id's grammar, and
    the table id's length comes first, so no two (table, round) pairs share a key (a shared key would only be a
    "maybe" anyway)."""
    return f"r{len(table_id)}:{table_id}:{round_id}"


def positions(item: str) -> tuple[int, ...]:
    """The K bit positions of an id (each below 2^32), from one BLAKE2b digest: independent and uniform."""
    return _WORDS(blake2b(item.encode(), digest_size=4 * K).digest())


def encode(items: list[str]) -> str:
    """The wire form the atomic step reads: each id's digest in hex, 8 digits a position (big-endian), K a digest."""
    return "".join([blake2b(item.encode(), digest_size=4 * K).hexdigest() for item in items])


def bits_for(ids: int) -> int:
    """The size of a new filter for a link whose ledger holds `ids` ids: a power of two (so positions are taken
    modulo it without bias), BITS_PER_ID an id, within MIN_BITS and MAX_BITS."""
    want = max(MIN_BITS, ids * BITS_PER_ID)
    return min(MAX_BITS, 1 << (want - 1).bit_length())


def maybe_rate(ids: int, bits: int) -> float:
    """The chance that an id never used is answered "maybe" by a filter of `bits` holding `ids` (for reports)."""
    return float((1.0 - math.exp(-K * ids / bits)) ** K)


def needs_refill(bits_set: int, bits: int) -> bool:
    """Whether a filter is full enough that a bigger one is worth making (its "maybe"s cost ledger questions)."""
    return bits_set >= bits * REFILL_AT and bits < MAX_BITS


def set_bits(bitmap: bytearray, item: str, bits: int) -> None:
    """Set an id's bits in a filter held as bytes the way Redis holds a bitmap (bit 0 is the first byte's top bit)."""
    for p in positions(item):
        p %= bits
        bitmap[p >> 3] |= 0x80 >> (p & 7)


def has_bits(bitmap: bytes, item: str, bits: int) -> bool:
    """Whether every bit of an id is set: "maybe used" (False: certainly never added)."""
    for p in positions(item):
        p %= bits
        if not bitmap[p >> 3] & (0x80 >> (p & 7)):
            return False
    return True
