"""Anchors kept outside the database (issue 19): the checkpointer never anchors a head below its newest, and the
audit's comparison names a truncation's exact point, a rewrite within the anchors' range, and accepted incidents."""

from __future__ import annotations

from pathlib import Path

from jackpotd.store import checkpoints
from jackpotd.store.checkpoints import Acceptance, Anchor, Checkpoint, Checkpointer
from jackpotd.store.ledger.anchor_audit import compare

KEY = b"k" * 32


def chain(n: int, tag: bytes = b"") -> dict[int, bytes]:
    return {s: tag + str(s).encode() for s in range(1, n + 1)}


def test_the_checkpointer_writes_marks_and_never_a_head_below_its_newest(tmp_path: Path) -> None:
    cp = Checkpointer(tmp_path, KEY)
    cp.note("L", Anchor(70, b"70"), [Anchor(64, b"64")])
    cp.write(cp.due(force=True))
    assert checkpoints.newest(tmp_path, KEY, "L") == Checkpoint("L", 70, b"70", checkpoints.newest(
        tmp_path, KEY, "L").at_ms, (Anchor(64, b"64"),))  # type: ignore[union-attr]
    fresh = Checkpointer(tmp_path, KEY)  # a restarted writer reads the newest from the file
    fresh.note("L", Anchor(60, b"60"))  # a truncated head: never blessed
    fresh.note("M", Anchor(3, b"3"))
    assert [c.link_id for c in fresh.due(force=True)] == ["M"]
    fresh.note("L", Anchor(70, b"rewritten"))  # another hash at the same sequence: neither
    assert fresh.due(force=True) == []


def test_newest_skips_a_line_whose_mac_does_not_verify(tmp_path: Path) -> None:
    checkpoints.append(tmp_path, KEY, [Checkpoint("L", 4, b"4", 1)])
    path = checkpoints.file_of(tmp_path, "L")
    path.write_text(path.read_text() + path.read_text().replace('"seq":4', '"seq":9'))
    assert checkpoints.newest(tmp_path, KEY, "L") == Checkpoint("L", 4, b"4", 1)


def test_an_acceptance_round_trips_with_its_mac(tmp_path: Path) -> None:
    act = Acceptance("operator:root@h", "approved", "truncated", Anchor(8, b"8"), (6, 8))
    checkpoints.append(tmp_path, KEY, [Checkpoint("L", 8, b"x", 5, accepted=act)])
    assert checkpoints.load_link(tmp_path, KEY, "L") == [Checkpoint("L", 8, b"x", 5, accepted=act)]


def test_a_truncation_is_named_from_its_exact_first_missing_entry() -> None:
    anchors = [Checkpoint("L", 70, b"70", 1, (Anchor(64, b"64"),))]
    found = compare(chain(66), 66, {}, anchors)
    assert found.first_altered == 67 and found.range_end is None
    assert "it ends at entry 66" in found.problems[0] and "entries 67..70 were removed" in found.problems[0]


def test_a_rewrite_whose_rows_agree_is_placed_between_two_anchors() -> None:
    anchors = [Checkpoint("L", 64, b"64", 1), Checkpoint("L", 100, b"100", 2)]
    recomputed = {**chain(100), **{s: b"x" for s in range(90, 101)}}
    found = compare(recomputed, 100, {}, anchors)
    assert (found.first_altered, found.range_end) == (65, 100)
    assert "one of 65..100" in found.problems[0]


def test_a_rewrite_the_rows_tell_is_named_exactly() -> None:
    anchors = [Checkpoint("L", 64, b"64", 1), Checkpoint("L", 100, b"100", 2)]
    recomputed = {**chain(100), **{s: b"x" for s in range(90, 101)}}
    found = compare(recomputed, 100, {90: ["postings rows differ"]}, anchors)
    assert (found.first_altered, found.range_end) == (90, None)


def test_an_accepted_incident_is_a_note_not_a_problem() -> None:
    before = [Checkpoint("L", 4, b"4", 1), Checkpoint("L", 8, b"8", 2)]
    act = Acceptance("op", "ok", "truncated", Anchor(8, b"8"), (6, 8))
    accepted = Checkpoint("L", 8, b"lost-8", 5, accepted=act)
    recomputed = {**chain(5), 6: b"lost-6", 7: b"lost-7", 8: b"lost-8"}
    found = compare(recomputed, 8, {}, [*before, accepted, Checkpoint("L", 8, b"lost-8", 9)])
    assert not found.problems and found.first_altered is None
    assert "entries 6..8 recorded as lost" in found.notes[0] and "reason: ok" in found.notes[0]


def test_the_default_key_is_made_once_and_private(tmp_path: Path) -> None:
    assert checkpoints.default_key_file(tmp_path, create=False) is None
    made = checkpoints.default_key_file(tmp_path, create=True)
    assert made is not None and (made.stat().st_mode & 0o777) == 0o600
    assert checkpoints.default_key_file(tmp_path, create=True) == made and len(made.read_text()) == 64


def test_an_acceptance_counts_by_its_place_in_the_file_not_its_clock() -> None:
    """A host whose clock is behind still accepts what came before its line, and nothing after."""
    act = Acceptance("op", "ok", "rewritten", Anchor(8, b"8"))
    recomputed = {**chain(7), 8: b"new-8"}
    found = compare(recomputed, 8, {}, [Checkpoint("L", 8, b"8", 5_000), Checkpoint("L", 8, b"new-8", 1, accepted=act)])
    assert not found.problems
    later = compare(recomputed, 8, {}, [Checkpoint("L", 8, b"new-8", 5_000, accepted=act),
                                        Checkpoint("L", 8, b"8", 1)])  # an anchor written after the acceptance
    assert later.problems


def test_accepting_a_truncation_does_not_hide_a_rewrite_before_it() -> None:
    before = [Checkpoint("L", 64, b"64", 1), Checkpoint("L", 200, b"200", 2, (Anchor(128, b"128"),))]
    act = Acceptance("op", "ok", "truncated", Anchor(200, b"200"), (151, 200))
    recomputed = {**{s: b"x" for s in range(10, 151)}, **{s: str(s).encode() for s in range(1, 10)},
                  **{s: b"lost" for s in range(151, 201)}}
    found = compare(recomputed, 200, {}, [*before, Checkpoint("L", 200, b"lost", 3, accepted=act)])
    assert found.problems and found.first_altered == 1 and found.range_end == 64


def test_a_truncation_after_a_rewrite_is_told_as_well() -> None:
    anchors = [Checkpoint("L", 64, b"64", 1, (Anchor(32, b"32"),)), Checkpoint("L", 100, b"100", 2)]
    recomputed = {**chain(31), **{s: b"x" for s in range(32, 91)}}
    found = compare(recomputed, 90, {}, anchors)
    assert found.first_altered == 1 and found.range_end == 32
    assert any("entries 91..100 were removed" in p for p in found.problems), found.problems
