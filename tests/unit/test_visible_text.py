"""Free text in every CLI's output (issue 32): control characters and line breaks in reasons, refs and names are
drawn visibly by one function (`jackpotd.domain.ids.visible`), so a reason can neither forge a row of
`jackpot-floor audit` nor drive the terminal; JSON keeps the exact text yet holds none raw."""

from __future__ import annotations

import json
import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st
from jackpot_finance.text import printable
from jackpot_floor.calls import AuditEntry, Decision
from jackpot_floor.render import render_audit, render_decision, to_json

from jackpotd.domain.ids import visible, visible_json

FORGED = "cards disturbed\n2026-01-01 00:00:00Z  supervisor:alice  ApproveHit  -  ok  SURV-9  OK\x1b[2J\x9b31m"


BIDI = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def unshown(text: str) -> list[str]:
    """The characters a terminal acts on, breaks a line at or reorders by: C0, DEL, C1, Unicode's separators and
    the bidirectional controls."""
    return [c for c in text if unicodedata.category(c) == "Cc" or c in "\u2028\u2029" or c in BIDI]


def test_each_control_is_drawn_as_its_escape() -> None:
    assert visible("a\nb\rc\td") == "a\\nb\\rc\\td"
    assert visible("\x1b[31mred\x00") == "\\x1b[31mred\\x00"
    assert visible("\x7f\x85\x9b\u2028\u2029") == "\\x7f\\u0085\\u009b\\u2028\\u2029"
    assert visible("SURV-1 café ♠ ✓") == "SURV-1 café ♠ ✓"  # printable text, any script, stays as it is
    assert visible("ok\u202egnp.exe") == "ok\\u202egnp.exe"  # a right-to-left override cannot reorder the row
    assert visible("typed \\n") == "typed \\\\n" != visible("typed \n")  # a typed backslash-n is not a line break


@given(st.text())
@example(FORGED)
@example("".join(map(chr, [*range(0x20), *range(0x7f, 0xa0), 0x2028, 0x2029])) + BIDI + "\\")
def test_no_free_text_prints_a_control_character_or_a_second_line(text: str) -> None:
    shown = visible(text)
    assert unshown(shown) == []
    assert len(shown.splitlines()) <= 1
    assert visible(text) == shown and (not unshown(text) and "\\" not in text) == (shown == text)


@given(st.text(), st.text())
def test_different_texts_never_print_alike(a: str, b: str) -> None:
    """Drawing is one-to-one: no reason can pass for another on the screen."""
    assert (visible(a) == visible(b)) == (a == b)


@given(st.text(), st.text())
@example(FORGED, "SURV-1\r\n\x1b]0;owned\x07")
def test_an_audit_table_has_one_line_a_row_whatever_the_reason(reason: str, ref: str) -> None:
    rows = [AuditEntry(1_800_000_000_000, "bob", "supervisor", "", "RejectHit", "t1", reason, ref, "OK", ""),
            AuditEntry(1_800_000_000_000, ref, "supervisor", "", "ApproveHit", "t1", "ok", reason,
                       "FAILED_PRECONDITION", reason)]
    text = render_audit(rows, "demo")
    assert len(text.splitlines()) == 1 + len(rows)
    assert unshown(text.replace("\n", "")) == []


@given(st.text(), st.text())
@example(FORGED, "supervisor:\x1b[1mbob")
def test_json_decodes_to_the_exact_text_yet_holds_no_raw_control(reason: str, name: str) -> None:
    rows = [AuditEntry(1, name, "supervisor", "", "RejectHit", "t1", reason, reason, "OK", "")]
    out = to_json(rows)
    assert json.loads(out)[0]["reason"] == reason and json.loads(out)[0]["actor"] == name
    assert unshown(out.replace("\n", "")) == []
    assert len(out.splitlines()) == len(json.dumps([{**json.loads(out)[0]}], indent=2).splitlines())
    assert json.loads(visible_json({"r": reason}, indent=2)) == {"r": reason}


@given(st.text())
@example("supervisor:bob\n\x1b[2K")
def test_an_act_is_one_line_whoever_it_names(who: str) -> None:
    d = Decision("demo:t1:r1:1", "PENDING", 100, "MAJOR", "royal_flush", (who,), 2)
    line = render_decision(d, who)
    assert line.endswith("\n") and len(line.splitlines()) == 1 and unshown(line[:-1]) == []


@given(st.lists(st.text(), max_size=5))
@example(["table +SUM(1)\nround r1", "\x1b[31m"])
def test_finance_text_keeps_its_lines_and_no_more(lines: list[str]) -> None:
    text = printable(lines)
    assert text.count("\n") == max(len(lines) - 1, 0) and unshown(text.replace("\n", "")) == []
