"""The durability watcher's memory of recent announcements (store/durable_window.py): a remembered entry is always
the announced one, an entry it cannot vouch for is None (the ledger is asked then), and memory stays bounded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jackpotd.store.durable_window import DurableWindow


def test_an_announced_entry_is_found_by_its_sequence() -> None:
    w = DurableWindow(size=10)
    w.add("L", 5, ("a5", "a6", "a7"))
    w.add("L", 8, ("a8",))
    w.add("M", 5, ("m5",))
    assert [w.prefix("L", s) for s in range(4, 10)] == [None, "a5", "a6", "a7", "a8", None]
    assert w.prefix("M", 5) == "m5" and w.prefix("M", 6) is None and w.prefix("N", 5) is None


def test_old_entries_are_let_go_but_never_fewer_than_the_window() -> None:
    w = DurableWindow(size=4)
    for first in range(1, 20, 2):
        w.add("L", first, (f"h{first}", f"h{first + 1}"))
    assert [w.prefix("L", s) for s in range(17, 21)] == ["h17", "h18", "h19", "h20"]  # the last 4 at least
    assert w.prefix("L", 12) is None and w.prefix("L", 1) is None  # more than a window back
    w.forget("L")
    assert w.prefix("L", 20) is None


@given(st.lists(st.tuples(st.integers(1, 60), st.integers(1, 6)), max_size=40), st.integers(1, 12))
def test_it_answers_only_what_an_announcement_said(batches: list[tuple[int, int]], size: int) -> None:
    """Announcements in any order, overlapping or not (a writer that failed over announces again): an answer is
    always the hash of the latest announcement covering that entry, or None."""
    w = DurableWindow(size=size)
    said: dict[int, str] = {}
    for n, (first, count) in enumerate(batches):
        hashes = tuple(f"{n}:{s}" for s in range(first, first + count))
        w.add("L", first, hashes)
        said.update({s: h for s, h in zip(range(first, first + count), hashes, strict=True)})
    for seq in range(0, 70):
        found = w.prefix("L", seq)
        assert found is None or found == said[seq]
    if batches:  # the last announcement is always remembered
        first, count = batches[-1]
        assert all(w.prefix("L", s) == said[s] for s in range(first, first + count))
