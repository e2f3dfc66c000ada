"""A real jax profile read back: each measured op named as the compiled HLO names it, put in a
module beside the prediction (structure only: no timing asserts)."""

from __future__ import annotations

import gzip
import json

import jax
import jax.numpy as jnp
import pytest

import shardviz as sv
from shardviz.capture.trace_file import measured_ops, trace_files
from shardviz.model.op_profile import MODULES


def loss_fn(w, x):
    with jax.named_scope("mlp"):
        h = jax.nn.relu(x @ w["w1"]) @ w["w2"]
    return -jnp.mean(jax.nn.log_softmax(h))


@jax.jit
def step(w, x):
    g = jax.grad(loss_fn)(w, x)
    with jax.named_scope("sgd"):
        return jax.tree.map(lambda p, d: p - 0.1 * d, w, g)


def _profiled(folder) -> tuple[dict, jax.Array]:
    """The step's arguments, after two runs of it profiled by jax into ``folder``."""
    w = {"w1": jnp.ones((16, 32)), "w2": jnp.ones((32, 8))}
    x = jnp.ones((4, 16))
    jax.block_until_ready(step(w, x))
    with jax.profiler.trace(str(folder)):
        for _ in range(2):
            jax.block_until_ready(step(w, x))
    return w, x


def test_a_profiled_step_beside_its_prediction(tmp_path):
    w, x = _profiled(tmp_path)
    report = sv.explain(step, w, x, run=False)
    hlo = step.lower(w, x).compile().as_text()
    p = sv.op_profile(report, trace=tmp_path, target="v5e")
    assert p.measured and p.measured_seconds is not None and p.measured_seconds > 0
    measured = [o for o in p.ops if o.measured_seconds]
    assert measured
    for op in measured:
        assert f"%{op.name} " in hlo or f"{op.name} = " in hlo, op.name  # the HLO's names
        assert op.module in MODULES
    assert {o.name for o in measured if not o.predicted} == set(p.unmatched)
    # the matmuls ran and are the MLP's
    mlp = p.module("mlp")
    assert mlp is not None and mlp.measured_seconds and mlp.flops > 0
    text = str(p)
    assert "measured" in text and "ratio" in text
    assert all(len(line) < 100 for line in text.splitlines())


def test_an_xprof_file_reads_as_its_chrome_trace(tmp_path):
    """XProf's own file (``.xplane.pb``, all a profile captured from a TPU pod may hold) gives
    the same ops, runs and times as the Chrome trace written beside it."""
    _profiled(tmp_path)
    (chrome,) = trace_files(tmp_path)
    (xspace,) = list(tmp_path.glob("**/*.xplane.pb"))
    assert chrome.endswith(".trace.json.gz")  # the Chrome trace first where both are
    names = frozenset(o.name for o in measured_ops(chrome))
    from_json = {o.name: o for o in measured_ops(chrome, names)}
    from_xspace = {o.name: o for o in measured_ops(xspace, names)}
    assert from_json and from_xspace.keys() == from_json.keys()
    for name, op in from_json.items():
        assert from_xspace[name].runs == op.runs
        assert from_xspace[name].seconds == pytest.approx(op.seconds, rel=1e-3, abs=1e-6)
    # A folder with only the XSpace is read from it.
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "host.xplane.pb").write_bytes(xspace.read_bytes())
    assert trace_files(alone) == [str(alone / "host.xplane.pb")]
    assert {o.name for o in measured_ops(alone, names)} == set(from_json)
    bad = alone / "bad.xplane.pb"
    bad.write_bytes(b"\xff\xff not a protobuf")
    with pytest.raises(sv.ShardvizError, match="not a readable XProf profile"):
        measured_ops(bad)


def test_a_trace_file_read_alone(tmp_path):
    events = [
        {"ph": "X", "name": "dot.1", "dur": 30.0,
         "args": {"hlo_op": "dot.1", "hlo_module": "jit_step", "run_id": r, "device_ordinal": d}}
        for r in ("1", "2") for d in ("0", "1")
    ] + [{"ph": "X", "name": "x", "dur": 9.0, "args": {"hlo_op": "x", "hlo_module": "jit_init"}}]  # fmt: skip
    path = tmp_path / "host.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    assert trace_files(tmp_path) == [str(path)]
    (op,) = measured_ops(path, frozenset({"dot.1"}))
    assert (op.name, op.runs) == ("dot.1", 1.0)  # 2 steps x 2 devices, once each
    assert op.seconds == pytest.approx(30e-6)


def test_no_profile_is_an_actionable_error(tmp_path):
    with pytest.raises(sv.ShardvizError, match=r"jax\.profiler\.trace"):
        trace_files(tmp_path)
    with pytest.raises(sv.ShardvizError, match="neither"):
        trace_files(tmp_path / "missing")
    bad = tmp_path / "a.trace.json.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(sv.ShardvizError, match="not a readable"):
        measured_ops(bad)


def test_a_report_profiled_by_explain_is_measured_from_its_own_step():
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    w = {"w1": jnp.ones((16, 32)), "w2": jnp.ones((32, 8))}
    x = jax.device_put(jnp.ones((16, 16)), NamedSharding(mesh, P("data")))
    r = sv.explain(step, w, x, steps=1, profile=True)
    assert r.timeline, r.notes
    p = sv.op_profile(r)
    assert p.measured and p.measured_seconds is not None and p.measured_seconds > 0
    timed = {e.name for e in r.timeline}
    assert {o.name for o in p.ops if o.measured_seconds} <= timed
    assert all(o.module in MODULES for o in p.ops)
    assert str(p).count("measured") >= 2
