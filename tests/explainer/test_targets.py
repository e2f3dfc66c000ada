"""Estimates on a target and planning for systems that are not here (issue 10, parts 2-3, 5).

explain/compare/Explorer with ``target=`` on fake CPU devices, and on deviceless topologies
(libtpu, the CUDA plugin): what is estimated, what is compiled for, what refuses to run.
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import replace

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.model.program import TPU_PEAK
from shardviz.model.targets import target_for
from shardviz.strategies import mlp

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
needs_tpu = pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None, reason="the shardviz[tpu] extra is not installed"
)
needs_gpu = pytest.mark.skipif(
    importlib.util.find_spec("jax_plugins.xla_cuda12") is None,
    reason="the shardviz[gpu] extra is not installed",
)

TP = {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()}
D, H, B = 64, 256, 32


@pytest.fixture(scope="module")
def placed():
    mesh = sv.Mesh(range(8), (2, 4), ("data", "model"))
    params = mlp.init_params(jax.random.key(0), D, H)
    batch = mlp.make_batch(jax.random.key(1), B, D)
    params = {k: sv.mark_sharding(v, mesh, TP[k], name=k) for k, v in params.items()}
    batch = {k: sv.mark_sharding(v, mesh, ("data", None), name=k) for k, v in batch.items()}
    return params, batch


def structs(mesh):
    """The MLP step's arguments as ShapeDtypeStructs on ``mesh`` (placed by mark_sharding)."""
    ps = jax.eval_shape(lambda k: mlp.init_params(k, D, H), jax.random.key(0))
    bs = jax.eval_shape(lambda k: mlp.make_batch(k, B, D), jax.random.key(1))
    params = {k: sv.mark_sharding(v, mesh, TP[k], name=k) for k, v in ps.items()}
    batch = {k: sv.mark_sharding(v, mesh, ("data", None), name=k) for k, v in bs.items()}
    return params, batch


# --- a target for a program run here -----------------------------------------------------------


def test_no_target_on_cpu_means_no_estimate(placed) -> None:
    r = sv.explain(mlp.train_step, *placed, steps=1)
    assert r.target is None and r.estimate is None
    assert all(c.estimated_seconds is None for c in r.collectives)


def test_target_on_cpu_estimates_the_same_mesh_on_that_hardware(placed) -> None:
    r = sv.explain(mlp.train_step, *placed, steps=1, target="v5e")
    assert r.ran and r.platform == "cpu" and not r.deviceless
    assert r.target.label == "TPU v5e 2x4 (8 chips, 2 hosts)"
    assert r.target.placement  # how the fake devices were put on chips is said
    est = r.estimate
    assert all(c.estimated_seconds is not None and c.estimated_seconds > 0 for c in r.collectives)
    # No loop in this step: the collectives' time is the ledger's times added up.
    assert est.collective_seconds == pytest.approx(sum(c.estimated_seconds for c in r.collectives))
    assert est.step_seconds == max(
        x for x in (est.compute_seconds, est.memory_seconds, est.collective_seconds) if x
    )
    assert est.peak_bytes == r.memory.peak_bytes
    assert est.hbm_headroom_bytes == sv.hardware("v5e").hbm_bytes - r.memory.peak_bytes
    text = str(r)
    assert "estimated as if this mesh were TPU v5e 2x4" in text and "lower bound" in text


def test_the_estimate_follows_the_target_not_the_cache(placed) -> None:
    """The compiled program is cached; each call's target gives its own estimate."""
    a = sv.explain(mlp.train_step, *placed, run=False, target="v5e")
    b = sv.explain(mlp.train_step, *placed, run=False, target="h100")
    c = sv.explain(mlp.train_step, *placed, run=False)
    assert a.target.hardware.preset == "v5e" and b.target.hardware.preset == "h100"
    assert c.estimate is None
    assert a.estimate.compute_seconds != b.estimate.compute_seconds


def test_unknown_target_is_an_error_naming_the_fix(placed) -> None:
    with pytest.raises(sv.ShardvizError, match="Fix:.*v5e"):
        sv.explain(mlp.train_step, *placed, run=False, target="v9")


# --- compiled for a topology that is not here ----------------------------------------------------


@needs_tpu
def test_explain_on_a_topology_compiles_for_it_and_never_runs() -> None:
    topo = sv.topology("v5e:2x4")
    mesh = sv.Mesh(topo.devices, (2, 4), ("data", "model"))
    r = sv.explain(mlp.train_step, *structs(mesh))  # run=True: nothing to run, no crash
    assert r.deviceless and not r.ran and r.platform == "tpu"
    assert r.target.label == topo.label == "TPU v5e 2x4 (8 chips, 2 hosts)"
    assert "compiled for TPU v5e 2x4 (8 chips, 2 hosts), not run" in str(r)
    assert r.memory.peak_definition == TPU_PEAK
    assert r.estimate is not None and r.estimate.peak_bytes == r.memory.peak_bytes
    assert "compiled for TPU v5e 2x4" in r._repr_html_()


@needs_tpu
def test_a_mesh_shape_that_does_not_fit_the_topology_says_so() -> None:
    topo = sv.topology("v5e:2x4")
    with pytest.raises(sv.MeshError, match="Fix:"):
        sv.Mesh(topo.devices, (3, 3), ("data", "model"))


@needs_tpu
@needs_gpu
def test_compare_on_several_targets_side_by_side() -> None:
    c = sv.compare("mlp", ["dp", "fsdp"], target=["v5e", "v5e:2x4", "h100:8"], d_model=D)
    assert [(r.strategy, r.report.platform) for r in c.results] == [
        ("dp", "cpu"), ("zero3", "cpu"), ("dp", "tpu"), ("zero3", "tpu"),
        ("dp", "gpu"), ("zero3", "gpu"),
    ]  # fmt: skip
    here, tpu, gpu = c.results[:2], c.results[2:4], c.results[4:]
    for r in here:  # run here, estimated as if on v5e
        assert r.loss is not None and r.loss_matches and not r.report.deviceless
        assert r.report.target.hardware.preset == "v5e"
    for r in tpu + gpu:  # compiled by the real compilers, not run
        assert r.report.deviceless and r.loss is None and r.step_seconds is None
        assert r.report.estimate is not None
    assert {r.report.target.label for r in tpu} == {"TPU v5e 2x4 (8 chips, 2 hosts)"}
    assert {r.report.memory.peak_definition for r in tpu} == {TPU_PEAK}
    assert {r.report.target.hardware.preset for r in gpu} == {"h100"}
    # The same strategy compiles to the same argument bytes on every backend (f32 leaves).
    assert here[0].memory.arguments_from_leaves == gpu[0].memory.arguments_from_leaves


def test_compare_refuses_a_bad_target_before_compiling() -> None:
    with pytest.raises(sv.ShardvizError, match="Fix:"):
        sv.compare("mlp", ["dp"], target="v9")
    with pytest.raises(sv.ShardvizError, match="Fix:"):
        sv.compare("mlp", ["dp"], target="tpu:nope")


@needs_tpu
def test_explorer_on_a_topology_recompiles_there_and_does_not_train() -> None:
    topo = sv.topology("v5e:2x4")
    mesh = sv.Mesh(topo.devices, (2, 4), ("data", "model"))
    ex = sv.Explorer(mlp.train_step, *structs(mesh))
    assert ex.report.deviceless
    assert json.loads(ex.payload)["status_line"].startswith("compiled for TPU v5e 2x4")
    assert ex.controls.config.specs["params/w1"] == (None, "model")
    # Another mesh shape is compiled on the same topology's devices.
    r = ex.session.run(replace(ex.controls.config, mesh_shape=(4, 2)))
    assert r.deviceless and r.platform == "tpu" and r.mesh.axis_sizes == (4, 2)
    assert {d.id for d in r.mesh.devices} == {d.id for d in topo.devices}
    with pytest.raises(sv.CompileError, match="compiled for TPU v5e 2x4"):
        ex.train(2)


def test_mark_sharding_places_a_shape_dtype_struct_without_allocating() -> None:
    mesh = sv.Mesh(range(8), (2, 4), ("data", "model"))
    x = sv.mark_sharding(jax.ShapeDtypeStruct((16, 8), jnp.float32), mesh, ("data", "model"))
    assert isinstance(x, jax.ShapeDtypeStruct)
    assert x.sharding == NamedSharding(mesh.jax_mesh, P("data", "model"))
    with pytest.raises(sv.SpecError, match="Fix:"):
        sv.mark_sharding(jax.ShapeDtypeStruct((15, 8), jnp.float32), mesh, ("model", None))


@needs_tpu
def test_a_program_that_does_not_fit_a_tpu_says_so() -> None:
    """The TPU compiler refuses what will not fit its HBM: the error says so, not 'check
    the shardings'."""
    topo = sv.topology("v5e:2x2")
    mesh = sv.Mesh(topo.devices, (4,), ("data",))
    w = sv.mark_sharding(jax.ShapeDtypeStruct((65536, 65536), jnp.float32), mesh, (None, None))
    x = sv.mark_sharding(jax.ShapeDtypeStruct((1024, 65536), jnp.float32), mesh, ("data", None))
    with pytest.raises(sv.CompileError, match="does not fit on a device.*HBM.*Fix: split"):
        sv.explain(lambda w, x: jnp.tanh(x @ w) @ w.T, w, x, run=False)


@needs_tpu
@needs_gpu
def test_compare_uses_a_topology_mesh_for_its_topology_and_defaults_for_others() -> None:
    v5e = sv.topology("v5e:2x4")
    mesh = sv.Mesh(v5e.devices, (4, 2), ("data", "model"))
    c = sv.compare("mlp", ["tp"], mesh=mesh, target=["v5e:2x4", "h100:8"], d_model=D)
    assert [r.mesh.axis_sizes for r in c.results] == [(4, 2), (2, 4)]
    assert [r.report.platform for r in c.results] == ["tpu", "gpu"]


def test_slices_joined_by_dcn_are_named_with_their_count() -> None:
    """``2xv6e:16x16`` (MaxText's num_slices=2): two pods' worth of chips, DCN between them;
    a GPU cluster is hosts x GPUs, not slices."""
    t = target_for("2xv6e:16x16")
    assert (t.num_slices, t.shape, t.chips, t.name) == (2, (16, 16), 512, "2xv6e:16x16")
    assert "DCN between slices" in t.label
    assert target_for("v6e:16x16").num_slices == 1
    with pytest.raises(sv.ShardvizError, match="hosts x GPUs"):
        target_for("2xh100:2x8")
    with pytest.raises(sv.ShardvizError, match="2xv6e:16x16"):
        target_for("v6e:32x16")  # beyond one pod: the fix names the slices


@needs_tpu
def test_a_multi_slice_topology_compiles_and_its_exchanges_go_over_dcn() -> None:
    """Two v6e 2x2 slices against one 2x4 slice, the same FSDP step: the compiler splits each
    collective into its part inside a slice and an exchange between slices (megascale
    send/recv); those are in the ledger, timed on the data-centre network, and make the
    step's communication slower than on one slice's ICI."""
    topo = sv.topology("2xv6e:2x2")
    assert len(topo.devices) == 8 and topo.num_hosts == 2 and topo.shape == (2, 2)
    assert sorted({d.slice_index for d in topo.devices}) == [0, 1]
    assert topo.target.num_slices == 2
    dims = dict(batch_per_device=1, seq=128, layers=1, d_model=1024, heads=8, kv_heads=8,
                head_dim=128, ffn=4096, vocab=256, progress=False)  # fmt: skip
    two = sv.compare("llama3.1-8b", ["fsdp"], target="2xv6e:2x2", **dims).results[0].report
    one = sv.compare("llama3.1-8b", ["fsdp"], target="v6e:2x4", **dims).results[0].report
    assert two.target.num_slices == 2 and two.estimate is not None and one.estimate is not None
    across = [c for c in two.collectives if "data-centre network" in c.note]
    assert across and all("DCN" in c.estimate_formula for c in across)
    assert all(c.group_size == 2 for c in across)
    assert not any("data-centre network" in c.note for c in one.collectives)
    assert two.estimate.collective_seconds > 1.5 * one.estimate.collective_seconds
    with pytest.raises(sv.ShardvizError, match="not slices"):
        sv.topology("2xh100:2x8")
