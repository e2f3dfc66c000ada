"""A scanned model's per-layer collectives are one loop-collective finding, with the loop's
trips, not one finding per weight."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import shardviz as sv
from tests.explainer.diagnose import planted

LAYERS = 6


def _scanned_fsdp():
    m = planted.mesh((8,), ("data",))
    params = {
        "w1": planted.put(m, jnp.ones((LAYERS, 256, 512)), None, "data", None),
        "w2": planted.put(m, jnp.ones((LAYERS, 512, 256)), None, "data", None),
        "b": planted.put(m, jnp.ones((LAYERS, 512)), None, "data"),
    }
    x = planted.put(m, jnp.ones((64, 256)), "data", None)

    def forward(params, x):
        def layer(h, p):
            h = jnp.tanh(h @ p["w1"] + p["b"])
            return jnp.tanh(h @ p["w2"]), None

        return jax.lax.scan(layer, x, params)[0]

    return forward, params, x


def test_one_finding_per_loop_with_its_trips():
    forward, params, x = _scanned_fsdp()
    report = sv.explain(forward, params, x, run=False)
    in_loop = [c for c in report.collectives if c.trips == LAYERS]
    assert len(in_loop) >= 3  # a gather per weight, at least
    found = report.findings.of("loop-collective")
    assert len(found) == 1
    (f,) = found
    assert f"{len(in_loop)} collectives run {LAYERS} times per step inside the loop" in f.title
    assert set(f.where.collectives) == {report.collectives.index(c) + 1 for c in in_loop}
    assert f.cost.bytes == sum(c.moved_bytes * LAYERS for c in in_loop)
    assert "all-gather over data" in f.why
