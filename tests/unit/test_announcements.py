"""The announcements codec: the exact text every version publishes, a round trip for every announcement, and a
clear refusal of anything else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jackpotd.store.announcements import Announcement, Durable, Fenced, Rebuilt, encode, parse

LINKS = st.from_regex(r"[A-Za-z0-9._-]{1,64}", fullmatch=True)  # domain/ids.py's grammar
SEQS = st.integers(min_value=0, max_value=2**63 - 1)
HASHES = st.lists(st.text("0123456789abcdef", min_size=1, max_size=16), min_size=1, max_size=20).map(tuple)
REASONS = st.text(max_size=200).map(str.rstrip)  # published without trailing whitespace, as ever
ANNOUNCEMENTS: st.SearchStrategy[Announcement] = st.one_of(
    st.builds(Durable, LINKS, SEQS, HASHES), st.builds(Rebuilt, LINKS, SEQS), st.builds(Fenced, LINKS, SEQS, REASONS))


@pytest.mark.parametrize(("announcement", "text"), [
    (Durable("L1", 7, ("00ff00ff00ff00ff", "0123456789abcdef")), "L1 d 7 00ff00ff00ff00ff 0123456789abcdef"),
    (Durable("L1", 1, ("ab",)), "L1 d 1 ab"),
    (Rebuilt("casino-7", 42), "casino-7 rebuilt 42"),
    (Fenced("L1", 9, "fenced at entry 9: bad  balances"), "L1 fenced 9 fenced at entry 9: bad  balances"),
    (Fenced("L1", 9), "L1 fenced 9"),
    (Fenced("L1", 9, "why \n"), "L1 fenced 9 why"),
])
def test_the_text_is_the_one_every_version_reads(announcement: Announcement, text: str) -> None:
    assert encode(announcement) == text
    assert parse(text) == (announcement if not isinstance(announcement, Fenced)
                           else Fenced(announcement.link, announcement.seq, announcement.reason.rstrip()))


@given(ANNOUNCEMENTS)
def test_every_announcement_round_trips(announcement: Announcement) -> None:
    assert parse(encode(announcement)) == announcement


@pytest.mark.parametrize("text", [
    "", "L1", "L1 d", "L1 d 7", "L1 d 7 ", "L1 d 7 ab  cd", "L1 d x ab", "L1 d -1 ab", "L1 d ٣ ab", " d 7 ab",
    "L1 rebuilt", "L1 rebuilt 4 extra", "L1 rebuilt 4 ", "L1 fenced", "L1 fenced nine why", "L1 moved 3",
])
def test_anything_else_is_refused_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match="malformed announcement") as refused:
        parse(text)
    assert repr(text) in str(refused.value)
