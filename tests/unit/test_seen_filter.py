"""The pure part of the filter of used ids (domain/seen_filter.py, issue 22 P1): an id added is always found (no
false "never used"), positions are stable and in range, sizes are powers of two within bounds, and ids of different
kinds or different (table, round) pairs do not share a key."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jackpotd.domain import seen_filter as sf

IDS = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-:", min_size=1, max_size=80)


@given(st.lists(IDS, min_size=1, max_size=200), st.sampled_from([8, 64, 1 << 10, sf.MIN_BITS]))
def test_every_id_added_is_found_whatever_the_size(ids: list[str], bits: int) -> None:
    bitmap = bytearray(bits // 8)
    for item in ids:
        sf.set_bits(bitmap, item, bits)
    assert all(sf.has_bits(bitmap, item, bits) for item in ids)


@given(IDS)
def test_positions_are_k_stable_32_bit_words_and_the_wire_form_lists_them(item: str) -> None:
    p = sf.positions(item)
    assert len(p) == sf.K and all(0 <= x < sf.WORD for x in p) and p == sf.positions(item)
    wire = sf.encode([item, item])  # apply.lua reads 8 hex digits a position, 32 an id
    assert len(wire) == 64 == 2 * 8 * sf.K and tuple(int(wire[i:i + 8], 16) for i in range(0, 32, 8)) == p
    assert wire[32:] == wire[:32]


def test_an_empty_filter_finds_nothing_and_bits_are_set_as_redis_numbers_them() -> None:
    bits = 1 << 12
    assert not sf.has_bits(bytes(bits // 8), "qanything", bits)
    one = bytearray(1)
    sf.set_bits(one, "x", 8)  # Redis's bit 0 is the first byte's top bit: SETBIT k p sets byte p//8, bit 7 - p%8
    assert one[0] == sum(0x80 >> (p % 8) for p in set(x % 8 for x in sf.positions("x")))


@given(st.integers(min_value=0, max_value=1 << 40))
def test_sizes_are_powers_of_two_within_bounds_with_room_for_the_ids(ids: int) -> None:
    bits = sf.bits_for(ids)
    assert bits & (bits - 1) == 0 and sf.MIN_BITS <= bits <= sf.MAX_BITS
    assert bits >= min(sf.MAX_BITS, ids * sf.BITS_PER_ID)


def test_a_new_filter_is_rarely_maybe_and_a_full_one_is_made_bigger() -> None:
    bits = sf.bits_for(1_000_000)
    assert sf.maybe_rate(1_000_000, bits) < 0.001  # ~0.1% at 20 bits an id
    assert sf.maybe_rate(2 * 1_000_000, bits) < 0.01  # twice the ids: still below 1%
    assert sf.needs_refill(bits // 3 + 1, bits) and not sf.needs_refill(bits // 4, bits)
    assert 0.01 < sf.maybe_rate(bits // 10, bits) < 0.015  # when it is made bigger: 1.2%
    assert not sf.needs_refill(sf.MAX_BITS, sf.MAX_BITS)  # the largest is kept, and only asks the ledger more


@given(st.tuples(IDS, IDS), st.tuples(IDS, IDS))
def test_round_keys_of_different_pairs_differ_and_never_equal_a_request_key(a: tuple[str, str],
                                                                             b: tuple[str, str]) -> None:
    if a != b and ":" not in a[1] + b[1]:  # a round id holds no ':' (domain/ids.py)
        assert sf.round_key(*a) != sf.round_key(*b)
    assert sf.round_key(*a) != sf.request_key(a[0] + a[1])


def test_every_reason_to_ask_the_ledger_is_a_series_at_0_from_the_start() -> None:
    """A dashboard sees each `why` of jackpotd_ledger_id_questions_total from the start, not only once it happened."""
    from prometheus_client import REGISTRY

    from jackpotd import metrics  # noqa: F401  (registers the series)
    from jackpotd.service.seen import Why

    for why in Why:
        assert REGISTRY.get_sample_value("jackpotd_ledger_id_questions_total", {"why": why.value}) is not None, why
