"""Ids: one grammar; keys and hit ids that no two different id tuples can share, whatever the grammar allows."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jackpotd.domain.errors import InvalidInput
from jackpotd.domain.ids import escape, hit_id, require_id, require_text
from jackpotd.store import keys

anything = st.text(max_size=12)  # any Unicode, NUL, ':', '{', '}' and '%' included
ids = st.text(alphabet=st.sampled_from("ab:{}%-._\x00"), max_size=6)  # dense in the characters that collided


@given(st.tuples(ids, ids, ids, st.integers(1, 9)), st.tuples(ids, ids, ids, st.integers(1, 9)))
def test_hit_ids_of_different_tuples_differ(a: tuple[str, str, str, int], b: tuple[str, str, str, int]) -> None:
    assert (hit_id(*a) == hit_id(*b)) == (a == b)


@given(st.tuples(ids, ids, ids), st.tuples(ids, ids, ids))
def test_round_keys_of_different_tuples_differ(a: tuple[str, str, str], b: tuple[str, str, str]) -> None:
    assert (keys.round_(*a) == keys.round_(*b)) == (a == b)


@given(anything, anything)
def test_escape_is_one_to_one_and_never_yields_a_delimiter(a: str, b: str) -> None:
    assert (escape(a) == escape(b)) == (a == b)
    assert not set(escape(a)) & set(":{}\x00*?[]")


@given(st.text(alphabet=st.sampled_from("aZ09._-:~%/ {}\x00é"), max_size=80))
def test_escape_is_percent_encoding(value: str) -> None:
    """Its fast paths (ids, ids joined by ':') give what percent-encoding gives: keys written before are found."""
    assert escape(value) == quote(value, safe="")


def test_valid_ids_are_their_own_key_components() -> None:
    for value in ("demo", "demo-table-1", "01J9ZK3V8Q4X6R2N5M7B0C1D2E", "3f2b6c1e-8a4d-4e2f-9b7a-1c2d3e4f5a6b",
                  "a.b_c"):
        assert require_id("x", value) == value == escape(value)


@pytest.mark.parametrize("value", ["", "a:b", "a b", "{x}", "x\x00", "é", "a" * 65, "a/b", "%41"])
def test_the_grammar_refuses_the_rest(value: str) -> None:
    with pytest.raises(InvalidInput, match=r"^x=.*1-64 characters"):
        require_id("x", value)


def test_messages_quote_at_most_about_a_hundred_characters() -> None:
    with pytest.raises(InvalidInput) as err:
        require_id("round_id", "r" * 10_000)
    assert len(str(err.value)) < 250 and "10000 characters" in str(err.value)


def test_free_text_keeps_anything_short_enough() -> None:
    assert require_text("reason", "mis\x00deal ☠") == "mis\x00deal ☠"
    with pytest.raises(InvalidInput, match="reason"):
        require_text("reason", "x" * 1001)
    with pytest.raises(InvalidInput, match="must not be empty"):
        require_text("reason", "  ", required=True)
