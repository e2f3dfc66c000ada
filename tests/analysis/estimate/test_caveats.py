"""An estimate for a TPU or GPU made from a CPU compile says which figures may differ and
offers the deviceless compile of the same program (issue 41: the CPU compile gathered FSDP
weights in f32 where the TPU compile gathered bf16, and kept an all-to-all the TPU compile
replaced); a compile made for the target says none of it."""

from __future__ import annotations

import dataclasses
import importlib.util
import os

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import pytest  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardviz as sv  # noqa: E402
from shardviz.analysis.estimate.caveats import preview_notes  # noqa: E402
from shardviz.capture.topology import topology  # noqa: E402
from shardviz.model.targets import target_for  # noqa: E402
from shardviz.model.units import format_bytes  # noqa: E402
from shardviz.render.report.text import report_text  # noqa: E402

HAS_TPU = importlib.util.find_spec("libtpu") is not None
needs_tpu = pytest.mark.skipif(not HAS_TPU, reason="needs libtpu")


def fsdp_step(w: jax.Array, x: jax.Array) -> jax.Array:
    """A gradient of f32 master weights split over 'fsdp', computed in bf16."""

    def loss(w):
        h = x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16)
        return jnp.sum(h.astype(jnp.float32) ** 2)

    return jax.grad(loss)(w)


def fsdp_report(where: str, target: str | None = None) -> sv.Report:
    devices = jax.devices() if where == "cpu" else topology(where).devices
    mesh = sv.Mesh(devices, (8,), ("fsdp",))
    w = sv.mark_sharding(jax.ShapeDtypeStruct((256, 512), jnp.float32), mesh, ("fsdp", None))
    x = sv.mark_sharding(jax.ShapeDtypeStruct((64, 256), jnp.float32), mesh, ("fsdp", None))
    return sv.explain(fsdp_step, w, x, run=False, diagnose=False, target=target)


_cpu: list[sv.Report] = []


def cpu_v5e() -> sv.Report:
    if not _cpu:
        _cpu.append(fsdp_report("cpu", "v5e"))
    return _cpu[0]


def notes(r: sv.Report) -> tuple[str, ...]:
    assert r.estimate is not None
    return r.estimate.notes


def test_a_cpu_compile_estimated_for_v5e_says_what_may_differ_and_the_faithful_call() -> None:
    r = cpu_v5e()
    wide = [c for c in r.collectives if c.in_dtype == "float32"]
    assert {c.kind for c in wide} == {"all-gather", "all-reduce"}
    got = notes(r)
    assert any(n.startswith("compiled for CPU: collectives, their dtypes") for n in got)
    [dtype] = [n for n in got if "may cast before these collectives" in n]
    for c in wide:  # each kind with its bytes a step, from the ledger
        assert f"1 {c.kind} {format_bytes(c.moved_bytes)}" in dtype
    assert "the program computes in bfloat16" in dtype
    [call] = [n for n in got if "deviceless:" in n]
    assert 'pod = sv.topology("v5e:2x4")' in call
    assert "mesh = sv.Mesh(pod.devices, (8,), ('fsdp',))" in call
    assert "sv.explain(fsdp_step, *args, run=False)" in call
    assert "the TPU compiler's own figures, deviceless" in report_text(r)


def test_no_dtype_note_for_a_program_computing_in_float32() -> None:
    r = cpu_v5e()
    kept = tuple(i for i in r.intermediates if i.dtype == "float32")
    f32 = dataclasses.replace(r, intermediates=kept)
    assert r.target is not None and any("may cast" in n for n in preview_notes(r, r.target))
    assert not any("may cast" in n for n in preview_notes(f32, r.target))


def test_an_all_to_all_on_cpu_is_said_to_maybe_differ_on_tpu() -> None:
    mesh = sv.Mesh(jax.devices(), (8,), ("expert",))

    def dispatch(x):
        def local(t):
            return jax.lax.all_to_all(t, "expert", 0, 0, tiled=True)

        return jax.shard_map(
            local, mesh=mesh.jax_mesh, in_specs=P("expert"), out_specs=P("expert")
        )(x)

    x = sv.mark_sharding(jax.ShapeDtypeStruct((64, 16), jnp.float32), mesh, ("expert", None))
    r = sv.explain(dispatch, x, run=False, diagnose=False, target="v5e")
    [a2a] = [c for c in r.collectives if c.kind == "all-to-all"]
    [note] = [n for n in notes(r) if "all-to-all" in n]
    assert f"keeps 1 all-to-all {format_bytes(a2a.moved_bytes)} a step" in note
    assert "may replace them with all-gather + all-reduce" in note


def test_a_gpu_target_names_the_gpu_compiler_and_its_extra() -> None:
    r = cpu_v5e()
    got = preview_notes(r, target_for("h100", 8))
    assert got[0].endswith("the GPU compiler may choose otherwise")
    assert 'sv.topology("h100:1x8")' in got[-1] and "(needs shardviz[gpu])" in got[-1]


@needs_tpu
def test_the_deviceless_compile_says_none_of_it_and_gathers_bfloat16() -> None:
    cpu, tpu = cpu_v5e(), fsdp_report("v5e:2x4")
    assert tpu.platform == "tpu" and tpu.estimate is not None
    assert not any("CPU" in n or "deviceless:" in n for n in notes(tpu))
    # What the note warned of: the TPU compiler casts first, half the bytes.
    assert {c.in_dtype for c in tpu.collectives} == {"bfloat16"}
    moved = {c.kind: c.moved_bytes for c in cpu.collectives}
    assert {c.kind: 2 * c.moved_bytes for c in tpu.collectives} == moved


@needs_tpu
def test_the_offered_calls_build_the_mesh() -> None:
    [call] = [n for n in notes(cpu_v5e()) if "deviceless:" in n]
    code = call.split("deviceless: ", 1)[1].split("; the arguments", 1)[0]
    space: dict = {"sv": sv}
    exec(code, space)  # noqa: S102 - the note's own code, built from the report
    assert space["mesh"].mesh_shape == (8,)
    assert space["mesh"].axis_names == ("fsdp",)
