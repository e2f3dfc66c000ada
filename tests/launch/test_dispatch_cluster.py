"""Dispatch timing on a real cluster of 2 processes (1 CPU device each), a few steps: every
shape runs, each process counted, the figures in their places (no timing is asserted)."""

from __future__ import annotations

import pytest

from shardviz.launch.dispatch_timing import TINY, measure_dispatch
from shardviz.model.dispatch import SHAPES, StepProgram

pytest.importorskip("ipyparallel")

#: A step that holds each device 1 ms (the host callback path across processes).
WAITS = StepProgram("waits", rows=2, width=4, wait=0.001)


def test_two_processes_every_shape_each_program() -> None:
    from shardviz.engines import Cluster

    clusters: list[Cluster] = []

    def start(n: int) -> Cluster:
        clusters.append(Cluster(n, 1, 120.0))
        return clusters[-1]

    timing = measure_dispatch(start, processes=(2,), programs=(TINY, WAITS), steps=3, repeats=2)
    assert len(clusters) == 1 and not clusters[0].alive  # stopped once measured
    assert [(r.step, r.controller, r.mode) for r in timing.runs] == [
        (p, c, m) for p in ("tiny", "waits") for c, m in SHAPES
    ]
    assert all(r.processes == 2 and r.steps == 3 and len(r.seconds) == 2 for r in timing.runs)
    assert all(s > 0 for r in timing.runs for s in r.seconds)
    # the waiting step holds every device 1 ms a step: no shape runs it faster
    assert all(r.median >= 0.001 for r in timing.runs if r.step == "waits")
    assert timing.process_counts == (2,) and len(timing.claims()) == 4
