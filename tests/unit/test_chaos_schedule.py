"""The chaos harness's seeded schedule (issue 23): the same seed replays the same faults, different seeds differ,
faults never overlap nor run past the phase, and a short run goes through most kinds; and the per-fault summary
measures the longest stall without an acknowledgement."""

from __future__ import annotations

import itertools

from chaos.history import Ack, Call
from chaos.schedule import KINDS, make
from chaos.summary import Window, longest_gap_ms, summarize


def test_the_same_seed_replays_the_same_schedule() -> None:
    """One seed, one schedule; another seed, another."""
    assert make(11, 120) == make(11, 120)
    assert make(11, 120) != make(12, 120)


def test_faults_follow_one_another_inside_the_phase() -> None:
    """Faults start 5 s in, stay 2 s apart and end inside the phase."""
    for seed in range(50):
        faults = make(seed, 600)
        assert faults and faults[0].at >= 5
        for before, after in itertools.pairwise(faults):
            assert after.at >= before.at + before.duration + 1.9  # 2 s apart, each figure rounded to 0.1 s
        assert faults[-1].at + faults[-1].duration <= 600


def test_a_long_run_goes_through_every_kind_and_a_short_one_through_most() -> None:
    """Ten minutes cover every kind; make chaos's two minutes too."""
    assert {f.kind for f in make(101, 600)} == set(KINDS)
    assert {f.kind for f in make(591, 120)} == set(KINDS)  # make chaos's default seed


def test_the_summary_measures_each_links_longest_stall() -> None:
    """The longest stretch without an ack, the window's ends counting as edges."""
    assert longest_gap_ms([1_000, 2_000, 9_000], 0, 10_000) == 7_000
    assert longest_gap_ms([], 0, 10_000) == 10_000
    call = Call("t1", "chaos-1", "t1", "CommitWagers", "r")
    events = [Ack(t, call, 1, n + 1, {}) for n, t in enumerate((1_000, 2_000, 9_000))]
    [line] = summarize(list(events), [Window(0, 10_000, "pause w1")])
    assert line.startswith("pause w1: acks {'chaos-1': 3}, errors none, longest stall s {'chaos-1': 7.0}")
