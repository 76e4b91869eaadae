"""The writer's head guard (issue 19), pure: a ledger head judged against the head left or the newest anchor."""

from __future__ import annotations

import pytest

from jackpotd.store.checkpoints import Anchor
from jackpotd.store.ledger.head_guard import NONE, Backed, Found, Tamper, Tampered, held_to, judge

H5, H8 = Anchor(5, b"five"), Anchor(8, b"eight")


def found(head: Anchor, at_anchor: bytes | None, last: Anchor | None = None) -> Found:
    return Found(head, head if last is None else last, at_anchor)


def test_the_head_left_is_backed() -> None:
    assert judge(H8, found(H8, b"eight")) == Backed(H8)


def test_a_head_another_writer_moved_on_from_the_anchor_is_backed() -> None:
    assert judge(H5, found(H8, b"five")) == Backed(H8)


def test_nothing_to_hold_a_head_to_backs_any_consistent_head() -> None:
    assert judge(None, found(H8, None)) == Backed(H8)
    assert judge(NONE, found(NONE, None)) == Backed(NONE)


def test_a_head_behind_the_anchor_is_a_truncation_from_the_first_missing_entry() -> None:
    verdict = judge(H8, found(H5, None))
    assert isinstance(verdict, Tampered) and verdict.kind is Tamper.TRUNCATED and verdict.first_seq == 6
    assert "entries 6..8 were removed" in verdict.reason


def test_every_entry_gone_is_a_truncation_too() -> None:
    verdict = judge(H8, found(NONE, None))
    assert isinstance(verdict, Tampered) and verdict.kind is Tamper.TRUNCATED and verdict.first_seq == 1


@pytest.mark.parametrize("head", [Anchor(8, b"other"), Anchor(12, b"later")])
def test_the_anchored_entry_with_another_hash_is_a_rewrite(head: Anchor) -> None:
    verdict = judge(H8, found(head, b"other"))
    assert isinstance(verdict, Tampered) and verdict.kind is Tamper.REWRITTEN and verdict.first_seq == 8


def test_a_head_row_that_is_not_the_last_entry_is_an_edit_whatever_the_anchor() -> None:
    verdict = judge(None, Found(H8, H5, None))
    assert isinstance(verdict, Tampered) and verdict.kind is Tamper.HEAD_EDITED and verdict.first_seq == 6


def test_a_head_moved_past_the_one_this_writer_left_is_an_extension() -> None:
    verdict = held_to(H5, judge(H5, found(H8, b"five")))  # backed by the anchor, but not the head left
    assert isinstance(verdict, Tampered) and verdict.kind is Tamper.EXTENDED and verdict.first_seq == 6
    assert "entries 6..8 were appended" in verdict.reason
    assert held_to(H8, judge(H8, found(H8, b"eight"))) == Backed(H8)
    truncated = judge(H8, found(H5, None))
    assert held_to(H8, truncated) == truncated  # a tampered verdict stays what it was
