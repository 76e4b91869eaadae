"""`make bench`'s table (bench/bench_all.py) shows what each bench recorded through bench/summary.py, and a bench
run outside `make bench` writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import bench_all, summary


def test_a_figure_is_recorded_only_when_bench_summary_names_a_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    figure = summary.Figure("P4 domain", "evaluate_hand", "1.2 M hands/s", "0.8 us/hand", "", "at least 1 M", True)
    monkeypatch.delenv(summary.ENV, raising=False)
    summary.record(figure)
    assert list(tmp_path.iterdir()) == []
    out = tmp_path / "summary.jsonl"
    monkeypatch.setenv(summary.ENV, str(out))
    summary.record(figure)
    summary.record(summary.Figure("P1 service", "CommitWagers / echo", "31%"))
    assert summary.load(out) == [figure, summary.Figure("P1 service", "CommitWagers / echo", "31%")]


def test_the_table_has_one_row_per_figure_and_each_bench_status(tmp_path: Path) -> None:
    figures = [summary.Figure("P4 domain", "evaluate_hand", "1.2 M hands/s", goal="at least 1 M", met=True),
               summary.Figure("Export", "ExportLedger", "2,250 entries/s", goal="100,000/s", met=False),
               summary.Figure("P2 naive twin", "jackpotd", "105 calls/s")]
    text = bench_all.table(figures, {"P4 domain": (0, 12.0, tmp_path / "a.log"),
                                     "Export": (3, 40.0, tmp_path / "b.log")})
    lines = text.splitlines()
    assert lines[0].split() == ["bench", "figure", "result", "CPU", "baseline", "(same", "run)", "goal", "met"]
    assert lines[2].rstrip().endswith("yes") and lines[3].rstrip().endswith("NO") and lines[4].rstrip().endswith("-")
    assert "exit 3" in text and "ok" in lines[-2]
