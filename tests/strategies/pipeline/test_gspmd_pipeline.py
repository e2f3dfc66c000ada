"""GSPMD's pipeline on the zoo transformer: the same logits as the plain forward, stages on
their own devices, and the shift between stages a collective-permute around the stage ring."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.strategies import transformer as T
from shardviz.strategies.pipeline.gspmd import pipelined_forward, pipelined_loss, stage_constraint
from shardviz.strategies.pipeline.stages import stack_layers

S, M, LAYERS, BATCH = 4, 8, 4, 16


@pytest.fixture(scope="module")
def setup():
    params = T.init_params(
        jax.random.key(0), vocab=64, d_model=32, heads=4, d_ff=64, layers=LAYERS, seq=16
    )
    batch = T.make_batch(jax.random.key(1), batch=BATCH, seq=16, vocab=64)
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:S]), ("stage",))
    return params, batch["inputs"], mesh


def _pipelined(mesh):
    constrain = stage_constraint(mesh)

    def run(params, inputs):
        return pipelined_forward(
            params, inputs, stages=S, microbatches=M, constrain_stages=constrain
        )

    return run


def test_the_pipeline_computes_the_plain_forward(setup):
    params, inputs, mesh = setup
    want = jax.jit(T.forward)(params, inputs)
    got = jax.jit(_pipelined(mesh))(params, inputs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_the_stage_shift_is_a_collective_permute_around_the_ring(setup):
    params, inputs, mesh = setup
    # The layers kept stacked and split over 'stage', as a pipelined model stores them.
    stacked = stack_layers(params["layers"], S)
    stacked = jax.tree.map(lambda a: jax.device_put(a, NamedSharding(mesh, P("stage"))), stacked)
    placed = {**params, "layers": stacked}
    report = sv.explain(_pipelined(mesh), placed, inputs, run=False)
    permutes = report.collectives_of("collective-permute")
    ring = [c for c in permutes if len(c.pairs) == S]
    assert ring, [(c.kind, c.pairs) for c in report.collectives]
    ids = [d.id for d in mesh.devices.flat]
    # Each stage's devices send to the next stage's; the last wraps to the first.
    assert sorted(ring[0].pairs) == sorted((ids[s], ids[(s + 1) % S]) for s in range(S))
    assert ring[0].axes == ("stage",)
    # It runs once per step of the loop: microbatches + stages - 1 steps.
    assert ring[0].trips == M + S - 1
    # Findings: only that the loop's collective runs M + S - 1 times per step.
    assert report.findings.kinds == ("loop-collective",)
    # The layers are not moved to be stacked: no all-to-all, no gather of weights.
    assert not report.collectives_of("all-to-all")
    # Inside the loop only the shift moves data; the outputs are collected once at the end.
    assert [c for c in report.collectives if c.trips != 1] == [ring[0]]


def test_bad_splits_say_what_to_change(setup):
    params, inputs, mesh = setup
    with pytest.raises(ValueError, match="cannot be split evenly over 3 pipeline stages"):
        stack_layers(params["layers"], 3)
    with pytest.raises(ValueError, match="cannot be split into 5 microbatches"):
        pipelined_forward(params, inputs, stages=2, microbatches=5)


def _stacked_and_placed(params, mesh):
    stacked = stack_layers(params["layers"], S)
    placed = jax.tree.map(lambda a: jax.device_put(a, NamedSharding(mesh, P("stage"))), stacked)
    return {**params, "layers": placed}


def test_loss_and_gradients_equal_the_unpipelined_step(setup):
    params, inputs, mesh = setup
    batch = {"inputs": inputs, "targets": jnp.roll(inputs, -1, axis=1)}
    want_loss, want = jax.jit(jax.value_and_grad(T.loss_fn))(params, batch)
    loss = partial(
        pipelined_loss, stages=S, microbatches=M, constrain_stages=stage_constraint(mesh)
    )
    got_loss, got = jax.jit(jax.value_and_grad(loss))(_stacked_and_placed(params, mesh), batch)
    np.testing.assert_allclose(float(got_loss), float(want_loss), rtol=1e-5)
    # The stacked gradients are the per-layer gradients, stacked the same way.
    want = {**want, "layers": stack_layers(want["layers"], S)}
    for (path, g), w in zip(
        jax.tree_util.tree_leaves_with_path(got), jax.tree.leaves(want), strict=True
    ):
        np.testing.assert_allclose(
            np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5, err_msg=jax.tree_util.keystr(path)
        )


def test_checkpointing_each_stage_lowers_the_temp_bytes(setup):
    params, inputs, mesh = setup
    batch = {"inputs": inputs, "targets": jnp.roll(inputs, -1, axis=1)}
    placed = _stacked_and_placed(params, mesh)

    def temp(checkpoint: bool) -> int:
        loss = partial(
            pipelined_loss, stages=S, microbatches=M, constrain_stages=stage_constraint(mesh),
            checkpoint=checkpoint,
        )  # fmt: skip
        report = sv.explain(jax.grad(loss), placed, batch, run=False, diagnose=False)
        return report.memory.temp_bytes

    assert temp(True) < temp(False)
