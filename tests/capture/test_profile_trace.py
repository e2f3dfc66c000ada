"""The profiled step's timeline, captured from a real trace on the fake CPU devices."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.capture.run import _last_run, _plane_device
from shardviz.model.timeline import timeline_of


def test_explain_profile_has_one_lane_per_device_of_one_step():
    mesh = jax.make_mesh((8,), ("data",))
    x = jax.device_put(jnp.arange(64.0 * 16).reshape(64, 16), NamedSharding(mesh, P("data")))
    r = sv.explain(lambda x: jnp.tanh(x).sum(), x, steps=1, profile=True)
    assert r.timeline, r.notes
    assert r.profile is not None
    assert {e.name for e in r.timeline} <= {o.name for o in r.profile}
    t = timeline_of(r)
    assert t is not None and [lane.device for lane in t.lanes] == list(range(8))
    assert t.illustrative and "all-reduce" in t.kinds
    # one step: every device ran each op once
    per_device = {lane.device: sorted(b.name for b in lane.bars) for lane in t.lanes}
    assert len({tuple(v) for v in per_device.values()}) == 1
    assert min(e.start for e in r.timeline) == 0.0
    assert sv.Report.from_json(r.to_json()).timeline == r.timeline


def test_last_run_keeps_the_latest_run_timed_from_its_first_op():
    raw = [(1, 0, "a", 100.0, 5.0), (2, 0, "a", 900.0, 5.0), (2, 1, "b", 1000.0, 7.0)]
    events = _last_run(raw)
    assert [(e.device, e.name) for e in events] == [(0, "a"), (1, "b")]
    assert [round(e.start * 1e9, 6) for e in events] == [0.0, 100.0]
    assert [round(e.seconds * 1e9, 6) for e in events] == [5.0, 7.0]
    assert _last_run([]) == ()


def test_plane_device_reads_accelerator_planes_only():
    assert _plane_device("/device:GPU:3") == 3
    assert _plane_device("/device:TPU:0") == 0
    assert _plane_device("/host:CPU") is None
