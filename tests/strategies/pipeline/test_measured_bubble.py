"""A profiled pipeline's slots and bubble, measured from its timeline.

The mapping is checked on hand-made timelines with known answers (no jax); then on real
profiled runs on the fake CPU devices, where only the structure is checked (CPU timings are
noisy and illustrative, so no assert compares the measured bubble with the theory).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

import shardviz as sv
from shardviz.model import Device, MeshLayout, OpEvent
from shardviz.model.pipeline_timing import (
    loop_ticks,
    measured_schedule,
    shard_map_ticks,
    stage_devices,
)
from shardviz.model.schedule import Schedule, gpipe
from shardviz.strategies.zoo import get_model

TICK = 10.0  # each tick of the hand-made timelines lasts this long
FWD, BWD, IDLE = 2.0, 4.0, 0.5  # a forward's, a backward's and an idle branch's work


def _mesh(names: tuple[str, ...], sizes: tuple[int, ...]) -> MeshLayout:
    n = 1
    for k in sizes:
        n *= k
    return MeshLayout(names, sizes, tuple(Device(i) for i in range(n)))


def _shard_map_events(schedule: Schedule, devices: list[int]) -> list[OpEvent]:
    """What a profiled ``shard_map`` pipeline shows, by hand: per tick, a table lookup, the
    forward's conditional (an event shorter than its branch, as the CPU runtime reports it)
    and its branch, the backward's conditional and branch, then a permute; a forward branch
    has two overlapping ops and a nested conditional whose event must not count as work."""
    work = {(s.stage, s.time): s.phase for s in schedule.slots}
    events = []
    for stage, d in enumerate(devices):
        events.append(OpEvent(d, "before_loop", 0.0, 1.0))
        for k in range(schedule.length):
            t = 1.0 + k * TICK
            phase = work.get((stage, k))
            events += [
                OpEvent(d, "lookup_fusion", t, 0.1),
                OpEvent(d, "conditional.9", t + 0.2, 0.01),  # the forward's: it starts first
                OpEvent(d, "conditional.7", t + 3.0, 0.01),
                OpEvent(d, "ppermute.1", t + 8.0, 1.9),
            ]
            if phase == "F":
                events += [
                    OpEvent(d, "dot.1", t + 0.3, FWD),
                    OpEvent(d, "fusion.2", t + 0.3, FWD / 2),
                    OpEvent(d, "conditional.3", t + 0.3, 5 * FWD),
                ]
            else:
                events.append(OpEvent(d, "broadcast.4", t + 0.3, IDLE))
            name, seconds = ("dot.5", BWD) if phase == "B" else ("broadcast.6", IDLE)
            events.append(OpEvent(d, name, t + 3.1, seconds))
        events.append(OpEvent(d, "after_loop", 1.0 + schedule.length * TICK, 3.0))
    return events


def _keys(items) -> Counter:
    return Counter((x.stage, x.microbatch, x.phase) for x in items)


def test_stage_devices_are_each_stages_first_data_row():
    assert stage_devices(_mesh(("stage", "data"), (4, 2)), "stage") == (0, 2, 4, 6)
    assert stage_devices(_mesh(("data", "stage"), (2, 4)), "stage") == (0, 1, 2, 3)
    assert stage_devices(_mesh(("stage",), (3,)), "stage") == (0, 1, 2)
    with pytest.raises(ValueError, match="no 'stage' axis"):
        stage_devices(_mesh(("data",), (2,)), "stage")


def test_shard_map_slots_and_bubble_from_a_hand_made_timeline():
    sched = replace(gpipe(2, 2), form="shard_map")  # 6 ticks
    mesh = _mesh(("stage", "data"), (2, 2))  # stage devices 0 and 2; 1 and 3 not timed
    events = _shard_map_events(sched, [0, 2])
    events += [OpEvent(1, "dot.1", 0.0, 1e6)]  # a second data row's device: left out
    got, note = measured_schedule(sched, events, mesh, "stage", "cpu")
    assert note is None
    assert got.measured_platform == "cpu"
    assert _keys(got.measured) == _keys(sched.slots)
    by_key = {(m.stage, m.microbatch, m.phase): m for m in got.measured}
    for s in sched.slots:
        m = by_key[(s.stage, s.microbatch, s.phase)]
        tick = 1.0 + s.time * TICK
        if s.phase == "F":  # two overlapping ops cover FWD; the nested conditional is not work
            assert (m.start, m.seconds) == pytest.approx((tick + 0.3, FWD))
        else:  # the branch ran after its conditional's (short) event ended
            assert (m.start, m.seconds) == pytest.approx((tick + 3.1, BWD))
    # Span: first tick's forward conditional (1.2) to the last tick's permute end (60.9);
    # busy: per stage two forwards and two backwards.
    span = (1.0 + 5 * TICK + 9.9) - 1.2
    busy = 2 * (2 * FWD + 2 * BWD)
    assert got.measured_bubble == pytest.approx(1 - busy / (2 * span))
    assert got.bubble_fraction == got.measured_bubble
    assert got.theory_bubble_fraction == sched.theory_bubble_fraction


def test_a_timeline_that_does_not_fit_leaves_the_schedule_unmeasured():
    sched = replace(gpipe(2, 2), form="shard_map")
    mesh = _mesh(("stage",), (2,))
    events = [e for e in _shard_map_events(sched, [0, 1]) if e.name != "conditional.7"]
    got, note = measured_schedule(sched, events, mesh, "stage", "cpu")
    assert got is sched and got.measured == () and got.measured_bubble is None
    assert "no measured bubble" in note and "1 conditionals ran once per tick" in note
    got, note = measured_schedule(sched, events, _mesh(("data",), (2,)), "stage", "cpu")
    assert got is sched and "no 'stage' axis" in note
    # Without the forward conditional first in each tick, ticks cannot be told apart.
    swapped = [
        replace(e, start=e.start + 3.0) if e.name == "conditional.9" and e.start > 20 else e
        for e in _shard_map_events(sched, [0, 1])
    ]
    _, note = measured_schedule(sched, swapped, mesh, "stage", "cpu")
    assert note is not None and "do not alternate" in note
    with pytest.raises(ValueError, match=r"0 conditionals ran once per tick \(7 times\)"):
        shard_map_ticks(_shard_map_events(sched, [0]), ticks=7)


def _gspmd_events(stages: int, microbatches: int) -> list[OpEvent]:
    """GSPMD's two loops of M + S - 1 iterations each on every stage's device: the forward
    loop's body a permute then a compute op, the backward's a compute op, an all-reduce and
    a permute; a nested loop's op (run twice per iteration) counts as its iteration's work."""
    n = microbatches + stages - 1
    events = []
    for d in range(stages):
        events.append(OpEvent(d, "embed_fusion", 0.0, 1.0))
        for k in range(n):
            t = 1.0 + k * TICK
            events += [
                OpEvent(d, "while.3", t, 0.01),  # a nested loop's event: control, not work
                OpEvent(d, "collective-permute.1", t, 3.0),
                OpEvent(d, "inner_fusion.9", t + 3.0, FWD / 4),
                OpEvent(d, "inner_fusion.9", t + 3.0 + FWD / 4, FWD / 4),
                OpEvent(d, "fusion.2", t + 3.0 + FWD / 2, FWD / 2),
            ]
        for k in range(n):
            t = 1.0 + (n + k) * TICK
            events += [
                OpEvent(d, "fusion.4", t, BWD),
                OpEvent(d, "all-reduce.5", t + BWD, 1.0),
                OpEvent(d, "collective-permute.6", t + BWD + 1.0, 2.0),
            ]
        events.append(OpEvent(d, "adam_fusion", 1.0 + 2 * n * TICK, 5.0))
    return events


def test_gspmd_slots_and_bubble_from_a_hand_made_timeline():
    S, M = 2, 3
    n = M + S - 1
    sched = gpipe(S, M)  # form "gspmd": the forward loop is times 0..n-1, the backward n..2n-1
    got, note = measured_schedule(
        sched, _gspmd_events(S, M), _mesh(("stage",), (S,)), "stage", "cpu"
    )
    assert note is None
    assert _keys(got.measured) == _keys(sched.slots)
    by_key = {(m.stage, m.microbatch, m.phase): m for m in got.measured}
    for s in sched.slots:
        m = by_key[(s.stage, s.microbatch, s.phase)]
        tick = 1.0 + s.time * TICK
        if s.phase == "F":  # after the permute: its op and the nested loop's
            assert (m.start, m.seconds) == pytest.approx((tick + 3.0, FWD))
        else:  # the compute before the all-reduce and the permute
            assert (m.start, m.seconds) == pytest.approx((tick, BWD))
    # Span: the first iteration's start to the last one's permute end; busy: M forwards and
    # M backwards per stage (the bubble's iterations compute too, but on nothing).
    span = (1.0 + (2 * n - 1) * TICK + BWD + 3.0) - 1.0
    assert got.measured_bubble == pytest.approx(1 - S * M * (FWD + BWD) / (S * span))


def test_loops_that_are_not_gspmds_two_are_not_measured():
    events = [e for e in _gspmd_events(2, 3) if e.name not in ("fusion.4", "all-reduce.5")]
    events = [e for e in events if e.name != "collective-permute.6"]
    with pytest.raises(ValueError, match="form 1 loops"):
        loop_ticks([e for e in events if e.device == 0], 4)
    with pytest.raises(ValueError, match="one iteration"):
        loop_ticks(events, 1)


# --- profiled runs on the fake CPU devices -------------------------------------------------


@pytest.fixture(scope="module")
def model():
    return get_model("transformer", layers=4, batch=16)


def _check_measured(s: Schedule) -> None:
    """Every slot of the schedule measured once, on its stage, in the schedule's order."""
    assert s.measured_platform == "cpu"
    assert s.measured_bubble is not None and 0 <= s.measured_bubble < 1
    assert s.bubble_fraction == s.measured_bubble
    keys = _keys(s.measured)
    assert set(keys.values()) == {1} and keys == _keys(s.slots)
    by_key = {(m.stage, m.microbatch, m.phase): m for m in s.measured}
    for stage in range(s.stages):
        ordered = sorted((x for x in s.slots if x.stage == stage), key=lambda x: x.time)
        starts = [by_key[(stage, x.microbatch, x.phase)].start for x in ordered]
        assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert all(m.seconds > 0 and m.start >= 0 for m in s.measured)
    assert Schedule.from_json(s.to_json()) == s  # the measured slots survive a JSON trip


@pytest.mark.parametrize(
    ("kind", "microbatches", "strategies"),
    [("gpipe", 4, ["pp", "pp+dp", "dp"]), ("1f1b", 8, ["pp"]), (None, 4, ["pp"])],
)
def test_profiled_compare_measures_every_slot(model, kind, microbatches, strategies):
    c = sv.compare(
        model, strategies, stages=4, microbatches=microbatches, schedule=kind, steps=1,
        profile=True,
    )  # fmt: skip
    for r in c.results:
        assert r.report.profile and r.report.timeline  # every strategy profiled, as explain
        assert r.loss_matches
        if r.schedule is None:
            continue
        assert (r.schedule.form == "gspmd") == (kind is None)
        assert (r.schedule.kind, r.schedule.microbatches) == (kind or "gpipe", microbatches)
        assert not any("no measured bubble" in n for n in r.report.notes)
        _check_measured(r.schedule)


def test_without_profile_nothing_is_traced_or_measured():
    c = sv.compare("transformer", ["pp"], stages=2, microbatches=2, schedule="gpipe", steps=1,
                   layers=2, batch=8)  # fmt: skip
    (r,) = c.results
    assert r.report.profile is None and r.report.timeline is None
    s = r.schedule
    assert s.measured == () and s.measured_bubble is None and s.measured_platform == ""
    assert s.bubble_fraction == s.schedule_bubble_fraction
