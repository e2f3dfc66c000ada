"""GPipe and 1F1B schedules: every rule that holds for all stage and microbatch counts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardviz.model.schedule import Schedule, gpipe, one_f_one_b, schedule

SIZES = st.tuples(st.integers(1, 8), st.integers(1, 16))


def _valid(s: Schedule) -> None:
    S, M = s.stages, s.microbatches
    seen = {(x.stage, x.microbatch, x.phase): x.time for x in s.slots}
    # Every stage runs every microbatch's forward and backward once.
    assert len(seen) == len(s.slots) == 2 * S * M
    # One op per stage per time unit.
    assert len({(x.stage, x.time) for x in s.slots}) == len(s.slots)
    for (stage, m, phase), t in seen.items():
        if phase == "F" and stage > 0:
            assert seen[(stage - 1, m, "F")] < t
        if phase == "B":
            after = (stage + 1, m, "B") if stage < S - 1 else (stage, m, "F")
            assert seen[after] < t


@settings(max_examples=60, deadline=None)
@given(SIZES)
def test_gpipe(sizes):
    S, M = sizes
    s = gpipe(S, M)
    _valid(s)
    assert s.length == 2 * (M + S - 1)
    assert s.schedule_bubble_fraction == pytest.approx(s.theory_bubble_fraction)
    assert all(s.in_flight(stage) == M for stage in range(S))  # it holds every microbatch


@settings(max_examples=60, deadline=None)
@given(SIZES)
def test_one_f_one_b(sizes):
    S, M = sizes
    s = one_f_one_b(S, M)
    _valid(s)
    assert s.length == 2 * (M + S - 1)  # the same bubble as GPipe...
    assert s.schedule_bubble_fraction == pytest.approx(s.theory_bubble_fraction)
    # ... holding at most the microbatches of the stages from it to the last.
    assert [s.in_flight(stage) for stage in range(S)] == [min(S - st_, M) for st_ in range(S)]


def test_theory_by_hand():
    # 4 stages, 8 microbatches: 3 idle units of 11 per stage in each pass.
    assert gpipe(4, 8).theory_bubble_fraction == pytest.approx(3 / 11)
    assert gpipe(1, 5).theory_bubble_fraction == 0.0
    small = gpipe(2, 2)
    assert [(x.stage, x.time, x.microbatch, x.phase) for x in small.slots] == [
        (0, 0, 0, "F"),
        (0, 1, 1, "F"),
        (1, 1, 0, "F"),
        (1, 2, 1, "F"),
        (1, 3, 1, "B"),
        (0, 4, 1, "B"),
        (1, 4, 0, "B"),
        (0, 5, 0, "B"),
    ]


def test_measured_bubble_wins_and_json_round_trip():
    s = Schedule(**{**gpipe(2, 3).__dict__, "measured_bubble": 0.4})
    assert s.bubble_fraction == 0.4
    assert Schedule.from_json(s.to_json()) == s


def test_bad_input():
    with pytest.raises(ValueError, match="at least one stage"):
        gpipe(0, 4)
    with pytest.raises(ValueError, match="unknown pipeline schedule"):
        schedule("interleaved", 2, 2)
