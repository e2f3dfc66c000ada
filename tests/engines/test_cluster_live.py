"""Cluster.live: training steps run in both engines of the cluster, watched from this kernel
with each host's step times and memory, and the same losses as one process of 8 devices."""

from __future__ import annotations

import time

import jax
import numpy as np
import pytest

import shardviz as sv
from shardviz.errors import ProcessError

#: A linear model trained data-parallel on an 8-device mesh; the same source runs in each
#: engine (where the mesh spans both processes) and here (8 devices of this process).
PROGRAM = """
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
import shardviz as sv

mesh = sv.Mesh(range(8), (8,), ("data",)).jax_mesh

def put(a, spec):
    return jax.make_array_from_callback(a.shape, NamedSharding(mesh, P(*spec)), lambda i: a[i])

rng = np.random.default_rng(0)
w = put(rng.normal(size=(16, 4)).astype(np.float32), (None, None))
batch = {"x": put(rng.normal(size=(64, 16)).astype(np.float32), ("data", None)),
         "y": put(rng.normal(size=(64, 4)).astype(np.float32), ("data", None))}

@jax.jit
def step(w, b):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((b["x"] @ w - b["y"]) ** 2))(w)
    return w - 0.1 * g, loss

def no_loss(w, b):
    return (w,)
"""

STEPS = 12


@pytest.fixture
def program(two):
    two.execute(PROGRAM)
    return two


def _here() -> tuple[list[float], float]:
    """The same steps in this process: the losses and the final weights' sum."""
    names: dict = {}
    exec(PROGRAM, names)
    run = sv.live(names["step"], names["w"], names["batch"], steps=STEPS).wait(120)
    assert run.status == "done", run.error
    return run.losses, float(np.asarray(run.state).sum())


def test_steps_run_in_every_process_and_the_view_shows_each_host(program):
    run = program.live("step", "w", "batch", steps=STEPS).wait(120)
    assert run.status == "done", run.error
    losses, w_sum = _here()
    np.testing.assert_allclose(run.losses, losses, rtol=1e-5)
    # Each process timed every step; a step is the slowest process's.
    hosts = run.host_step_ms
    assert sorted(hosts) == [0, 1] and all(len(ms) == STEPS for ms in hosts.values())
    assert run.step_ms == [max(a, b) for a, b in zip(hosts[0], hosts[1], strict=True)]
    assert [h["process"] for h in run.view.host_step_ms] == [0, 1]
    assert "per process: p0" in run.view.readouts["time"]["note"]
    # The memory panel has every device once, each tagged with the process that holds it.
    owner = program.run(lambda: {d.id: d.process_index for d in jax.devices()})[0]
    assert [(e["device"], e["process"]) for e in run.view.memory] == sorted(owner.items())
    assert run.view.memory_source in ("device", "estimate")
    # The engines' `w` is the trained one (the state stays there, updated at the end).
    program.execute("w_sum = float(jnp.sum(w))")
    assert program.pull("w_sum") == pytest.approx(w_sum, rel=1e-5)
    assert program.pull("w_sum", process=1) == program.pull("w_sum")


def test_the_cluster_is_refused_to_others_while_a_run_goes_and_stop_ends_it(program):
    run = program.live("step", "w", "batch", steps=1_000_000)
    try:
        deadline = time.monotonic() + 120
        while run.status == "compiling" and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(ProcessError, match="a live run is using its processes"):
            program.execute("x = 1")
        with pytest.raises(ProcessError, match="a live run is using"):
            program.live("step", "w", "batch", steps=2)
    finally:
        run.stop().wait(120)
    assert run.status == "stopped" and 0 < len(run.losses) < 1_000_000
    assert len(run.host_step_ms[1]) == len(run.losses)
    program.execute("x = 1")  # free again


def test_a_missing_name_is_refused_at_once_naming_it(program):
    with pytest.raises(ProcessError, match=r"process 0.*no variable 'wieghts' \(the state\)"):
        program.live("step", "wieghts", "batch", steps=2)
    with pytest.raises(ProcessError, match="steps is missing"):
        program.live("step", "w", "batch")


def test_a_failing_step_ends_the_run_with_the_process_named_in_the_view(program):
    run = program.live("no_loss", "w", "batch", steps=3).wait(120)
    assert run.status == "error"
    assert "process 0" in run.error and "not (new_state..., loss)" in run.error
    program.execute("x = 1")  # the cluster goes on


def test_a_dotted_name_reaches_a_module_attribute(program):
    program.execute("import types; lib = types.SimpleNamespace(step=step)")
    run = program.live("lib.step", "w", "batch", steps=2).wait(120)
    assert run.status == "done", run.error
    with pytest.raises(ProcessError, match=r"lib has no attribute 'stpe'"):
        program.live("lib.stpe", "w", "batch", steps=2)
