"""Live deviceless compiles for a TPU slice and a GPU cluster, through ``explain``.

``topology("v5e:4x4")`` (libtpu, the ``shardviz[tpu]`` extra) and ``topology("h100:2x8")``
(the CUDA plugin, ``shardviz[gpu]``) give devices to compile for on this CPU-only machine.
Each program compiles once per module (module-scoped fixtures, ~1-2 s each); the figures are
checked against an independent ``jax.jit(fn).lower(*args).compile()`` of the same program and
against hand computation. Skipped only when an extra is not installed (``make test`` installs
both). libtpu prints harmless warnings on stderr.
"""

from __future__ import annotations

import importlib.util
import os
import re

# libtpu takes a machine-wide lock (/tmp/libtpu_lockfile) unless told that several processes
# may load it: another process holding it (a notebook, a parallel test run) would make every
# TPU topology fail. Deviceless topologies use no TPU.
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

from types import SimpleNamespace  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import pytest  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardviz as sv  # noqa: E402
from shardviz.capture import topology as topology_mod  # noqa: E402
from shardviz.capture.hlo.collectives import FUSED_SCATTER_NOTE  # noqa: E402
from shardviz.capture.topology import TopologyError, topology  # noqa: E402
from shardviz.errors import ShardvizError  # noqa: E402
from shardviz.model.program import CPU_PEAK, TPU_PEAK  # noqa: E402

HAS_TPU = importlib.util.find_spec("libtpu") is not None
HAS_GPU = importlib.util.find_spec("jax_plugins.xla_cuda12") is not None
needs_tpu = pytest.mark.skipif(not HAS_TPU, reason="needs the shardviz[tpu] extra (libtpu)")
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs the shardviz[gpu] extra (CUDA plugin)")

B, D, H = 256, 1024, 4096
F32 = 4
#: Per device on a 4x4 ('data', 'model') mesh: w1 [256, 1024] + w2 [1024, 256] + x [64, 1024].
ARGUMENT_BYTES_4X4 = (256 * 1024 + 1024 * 256 + 64 * 1024) * F32  # 2,359,296
#: The same on 8 CPU devices as 2x4: w1 [512, 1024] + w2 [1024, 512] + x [128, 1024].
ARGUMENT_BYTES_2X4 = (512 * 1024 + 1024 * 512 + 128 * 1024) * F32  # 4,718,592


def train_step(w1, w2, x):
    """The issue's example: one SGD step of a two-layer MLP."""

    def loss(w1, w2):
        return jnp.mean((jnp.tanh(x @ w1) @ w2) ** 2)

    g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2)
    return w1 - 0.1 * g1, w2 - 0.1 * g2


def _args(jax_mesh):
    def sds(shape, spec):
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(jax_mesh, spec))

    return (
        sds((D, H), P("data", "model")),
        sds((H, D), P("model", "data")),
        sds((B, D), P("data", None)),
    )


def _compiled(platform: str, mesh: sv.Mesh) -> SimpleNamespace:
    """``explain`` (compile only) and, independently, jax's own compile of the same program."""
    args = _args(mesh.jax_mesh)
    report = sv.explain(train_step, *args, run=False)
    analysis = jax.jit(train_step).lower(*args).compile().memory_analysis()
    return SimpleNamespace(
        platform=platform, mesh=mesh, args=args, report=report, analysis=analysis
    )


@pytest.fixture(scope="module")
def tpu() -> SimpleNamespace:
    if not HAS_TPU:
        pytest.skip("needs the shardviz[tpu] extra (libtpu)")
    topo = topology("v5e:4x4")
    return _compiled("tpu", sv.Mesh(topo.devices, (4, 4), ("data", "model")))


@pytest.fixture(scope="module")
def gpu() -> SimpleNamespace:
    if not HAS_GPU:
        pytest.skip("needs the shardviz[gpu] extra (CUDA plugin)")
    topo = topology("h100:2x8")
    return _compiled("gpu", sv.Mesh(topo.devices, (4, 4), ("data", "model")))


@pytest.fixture(scope="module")
def cpu() -> SimpleNamespace:
    return _compiled("cpu", sv.Mesh(range(8), (2, 4), ("data", "model")))


@pytest.fixture(params=["tpu", "gpu"])
def live(request) -> SimpleNamespace:
    return request.getfixturevalue(request.param)


# --- what was compiled -----------------------------------------------------------------------


def test_report_says_what_it_was_compiled_for(live) -> None:
    r = live.report
    assert r.platform == live.platform
    assert r.deviceless and not r.ran and r.timing is None
    assert r.mesh is not None and r.mesh.axis_names == ("data", "model")
    assert r.mesh.axis_sizes == (4, 4) and r.mesh.size == 16
    assert {d.platform for d in r.mesh.devices} <= {"tpu", "cuda", "gpu"}
    # v5e:4x4 is 16 chips on 4 hosts; h100:2x8 two hosts of 8 GPUs.
    assert r.mesh.num_processes == (4 if live.platform == "tpu" else 2)


def test_peak_per_backend(live) -> None:
    """GPU: the compiler's own peak. TPU: the HBM its buffer assignment allocates (the
    compiler's own peak, kept beside it, also counts on-chip VMEM)."""
    m, ma = live.report.memory, live.analysis
    assert m.compiler_peak_bytes == ma.peak_memory_in_bytes
    if live.platform == "tpu":
        assert m.peak_bytes == dict(m.by_space)["default"] == sum(dict(m.assigned).values())
        assert m.peak_definition == TPU_PEAK
        assert "VMEM" in str(live.report)
    else:
        assert m.peak_bytes == ma.peak_memory_in_bytes
        assert "compiler" in m.peak_definition and m.peak_definition != CPU_PEAK
    assert m.argument_bytes == ma.argument_size_in_bytes == ARGUMENT_BYTES_4X4
    assert m.output_bytes == ma.output_size_in_bytes
    assert m.temp_bytes == ma.temp_size_in_bytes
    # The buffer assignment places the same argument bytes in HBM ("default" space first).
    assert dict(m.assigned)["argument"] == ARGUMENT_BYTES_4X4
    assert m.by_space and m.by_space[0][0] == "default"


def test_tpu_peak_is_not_the_sum(tpu) -> None:
    """TPU reports temp 0 here, so the sum would understate what a chip holds."""
    m = tpu.report.memory
    assert m.temp_bytes == 0
    assert m.peak_bytes > m.argument_bytes + m.output_bytes - m.alias_bytes + m.temp_bytes


def test_cpu_keeps_the_sum_rule(cpu) -> None:
    m, ma = cpu.report.memory, cpu.analysis
    assert cpu.report.platform == "cpu" and not cpu.report.deviceless
    assert m.argument_bytes == ma.argument_size_in_bytes == ARGUMENT_BYTES_2X4
    assert m.peak_bytes == (
        ma.argument_size_in_bytes
        + ma.output_size_in_bytes
        - ma.alias_size_in_bytes
        + ma.temp_size_in_bytes
    )
    assert m.peak_definition == CPU_PEAK
    assert m.compiler_peak_bytes == ma.peak_memory_in_bytes
    assert m.assigned == () and m.by_space == ()


def test_intermediates_are_on_the_user_axes(live) -> None:
    inter = live.report.intermediates
    assert inter
    named = [s for s in inter if s.spec is not None]
    assert named and {a for s in named for e in s.spec for a in e} == {"data", "model"}
    assert any(s.reshard for s in inter)


# --- the ledger ------------------------------------------------------------------------------


def test_every_partitioner_collective_has_a_source(live) -> None:
    cs = live.report.collectives
    assert cs
    for c in cs:
        assert not c.user_written
        if c.source is None:
            assert "source unknown" in c.note, c.name
            continue
        assert c.source.innermost.file == __file__, c.source
        assert c.op_name


def test_ledger_axes_and_groups_follow_the_mesh(live) -> None:
    """Gathers and reduce-scatters over 'data' (4 groups of the mesh's columns), one
    all-reduce over 'model' of the [256, 256] partial sums (rows)."""
    ids = live.mesh.device_ids
    columns = {frozenset(int(i) for i in ids[:, k]) for k in range(4)}
    rows = {frozenset(int(i) for i in ids[j, :]) for j in range(4)}
    by_kind: dict[str, list] = {}
    for c in live.report.collectives:
        by_kind.setdefault(c.kind, []).append(c)
        assert {frozenset(g) for g in c.groups} == (rows if c.axes == ("model",) else columns)
    assert sorted(by_kind) == ["all-gather", "all-reduce", "reduce-scatter"]
    (ar,) = by_kind["all-reduce"]
    assert (ar.axes, ar.in_shape, ar.in_bytes) == (("model",), (256, 256), 256 * 256 * F32)
    assert sorted((c.in_shape, c.out_shape) for c in by_kind["reduce-scatter"]) == [
        ((256, 1024), (64, 1024)),
        ((1024, 1024), (256, 1024)),
    ]
    assert sorted((c.in_shape, c.out_shape) for c in by_kind["all-gather"]) == [
        ((64, 1024), (256, 1024)),
        ((256, 1024), (1024, 1024)),
    ]


def test_tpu_fused_reduce_scatter_and_bf16_gathers(tpu) -> None:
    cs = tpu.report.collectives
    rs = [c for c in cs if c.kind == "reduce-scatter"]
    assert len(rs) == 2
    for c in rs:
        assert c.note.startswith(FUSED_SCATTER_NOTE)
        assert c.moved_bytes == c.in_bytes * 3 // 4
    gathers = [c for c in cs if c.kind == "all-gather"]
    assert gathers and all(c.in_dtype == "bfloat16" for c in gathers)
    assert all("moved as bfloat16" in c.note for c in gathers)
    # bf16: half the bytes of the f32 tile, e.g. w1's [256, 1024] -> [1024, 1024].
    w1 = next(c for c in gathers if c.out_shape == (1024, 1024))
    assert (w1.in_bytes, w1.out_bytes, w1.moved_bytes) == (524_288, 2_097_152, 1_572_864)


def test_gpu_async_collectives_with_sources(gpu) -> None:
    """Async exactly where the compiler printed a start/done pair: jax 0.10.2's GPU compiler
    printed all five so (the synchronous ones too, with ``"is_sync":true``); jax 0.12's prints
    the synchronous ones as plain collectives, leaving one reduce-scatter async."""
    cs = gpu.report.collectives
    text = jax.jit(train_step).lower(*gpu.args).compile().as_text()
    starts = re.findall(r"(?m)^\s*%\S+ = .* [a-z-]+-start\(", text)
    assert len(cs) == 5 and sum(c.is_async for c in cs) == len(starts) >= 1
    assert not any(c.note for c in cs)
    assert all(c.in_dtype == "float32" for c in cs)
    rs = [c for c in cs if c.kind == "reduce-scatter"]
    assert len(rs) == 2 and all(c.source is not None for c in rs)


# --- layouts on topology meshes --------------------------------------------------------------


def test_layout_of_a_struct_on_a_topology_mesh(live) -> None:
    w1 = live.args[0]
    lay = sv.layout(w1)
    assert lay.shape == (D, H) and lay.spec == (("data",), ("model",))
    assert len(lay.tiles) == 16
    assert {t.device_id for t in lay.tiles} == {int(i) for i in live.mesh.device_ids.flat}
    assert all(t.shape == (256, 1024) and t.nbytes == 256 * 1024 * F32 for t in lay.tiles)
    assert len(lay.distinct_tiles) == 16
    if live.platform == "tpu":
        assert all(d.coords is not None for d in lay.mesh.devices)


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("v5e:3x3", marks=needs_tpu),  # libtpu refuses the shape
        pytest.param("v9:2x2", marks=needs_tpu),  # no such TPU
        "h100",  # no shape
        "tpu",  # a platform, not a topology
        5,  # not a string
    ],
)
def test_unknown_topologies_raise_with_a_fix(name) -> None:
    with pytest.raises(TopologyError) as info:
        topology(name)
    assert isinstance(info.value, ShardvizError) and isinstance(info.value, ValueError)
    assert "Fix:" in str(info.value)


def test_non_string_topology_is_quoted_as_given() -> None:
    with pytest.raises(TopologyError) as info:
        topology(5)
    assert str(info.value).startswith("topology(5)")


@pytest.mark.parametrize(
    "name, module, extra",
    [("v5e:4x4", "libtpu", "tpu"), ("h100:8", "jax_plugins.xla_cuda12", "gpu")],
)
def test_missing_extra_names_the_pip_command(monkeypatch, name, module, extra) -> None:
    real = importlib.util.find_spec

    def find_spec(mod, *args, **kwargs):
        return None if mod == module else real(mod, *args, **kwargs)

    monkeypatch.setattr(topology_mod.importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(topology_mod, "_MADE", {})  # made topologies would be returned as they are
    with pytest.raises(TopologyError) as info:
        topology(name)
    message = str(info.value)
    assert f"pip install 'shardviz[{extra}]'" in message
    assert "Fix:" in message


@needs_tpu
def test_tpu_final_module_from_the_dump_reads_as_as_text() -> None:
    """On TPU the final module comes from the compiler's after-codegen dump, not as_text():
    the ledger (sources included) and each collective's trip count are the same from both."""
    from shardviz.capture import hlo
    from shardviz.capture.compile import lower_and_compile

    topo = topology("v5e:4x4")
    args = _args(sv.Mesh(topo.devices, (4, 4), ("data", "model")).jax_mesh)
    comp = lower_and_compile(jax.jit(train_step), args, {}, "train_step")
    printed = comp.compiled.as_text()
    assert comp.hlo_text != printed  # the dump: frames renumbered, async ops generic
    ledger = hlo.collectives(comp.module())
    assert ledger and all(c.source for c in ledger)
    assert ledger == hlo.collectives(printed)
    trips = hlo.collective_trip_counts(comp.module())
    printed_trips = hlo.collective_trip_counts(printed)
    assert {c.name: trips.get(c.name) for c in ledger} == {
        c.name: printed_trips.get(c.name) for c in ledger
    }


def test_the_dumps_read_during_the_compile_give_the_same_report(live) -> None:
    """The partitioned ledger, intermediates, global cost and (TPU) final ledger read on a
    thread while the TPU or GPU compiler runs are those read after it."""
    from shardviz.capture import hlo
    from shardviz.capture.compile import EarlyResults, _stages
    from shardviz.explainer import explain as ex

    comp = ex.compile_program(train_step, live.args, {})
    stages = dict(_stages(comp.lowered, ex._early_reading(comp.lowered, ex.entry_of(train_step))))
    # The TPU's final module comes from its after-codegen dump, parsed as soon as written.
    assert set(stages) == ({"shardings", "final"} if live.platform == "tpu" else {"shardings"})
    assert comp.partitioned_text  # TPU and GPU programs read their partitioned module
    work = ex._early_reading(comp.lowered, ex.entry_of(train_step))
    shardings = work.shardings(comp.propagated_text, comp.partitioned_text)
    assert shardings.partitioned and shardings.intermediates
    final = work.final(hlo.parse_hlo_module(comp.hlo_text))
    assert final.final
    comp.early = EarlyResults(shardings=shardings, final=final)
    read_early = ex.analyse_program(train_step, live.args, comp)
    comp.early = EarlyResults()
    read_after = ex.analyse_program(train_step, live.args, comp)
    assert read_early.collectives == read_after.collectives
    assert read_early.intermediates == read_after.intermediates
    assert read_early.cost == read_after.cost


# --- findings on every backend -----------------------------------------------------------------


def test_full_rematerialization_is_found_and_fixed_on_the_backend(live) -> None:
    """The partitioner's warning is captured from the GPU compile's log, tied to the
    argument, and the fix checked by compiling again for the same devices; the TPU compiler
    makes the same move without replicating, and no finding is made up for it."""
    devices = live.mesh.jax_mesh.devices.reshape(2, 8)  # unequal sizes: no cheap all-to-all
    jm = jax.sharding.Mesh(devices, ("data", "model"), axis_types=live.mesh.jax_mesh.axis_types)
    a = jax.ShapeDtypeStruct((64, 256), jnp.float32, sharding=NamedSharding(jm, P("data", None)))
    fn = jax.jit(lambda a: a * 2, out_shardings=NamedSharding(jm, P(None, "model")))
    report = sv.explain(fn, a, run=False).try_fixes()
    if live.platform == "tpu":  # the TPU compiler gathers over 'data' and slices: no warning
        assert not report.findings.of("involuntary-remat")
        assert [(c.kind, c.axes) for c in report.collectives] == [("all-gather", ("data",))]
        return
    (f,) = report.findings.of("involuntary-remat")
    assert f.where.leaf == "a" and f.fix is not None and f.fix.spec == ((), ("model",))
    assert f.check.helps and f.check.after.remats == 0 < f.check.before.remats


@pytest.mark.parametrize(
    ("target", "kinds"), [("h100:1x8", ()), (None, ("full-reduce",))], ids=["gpu", "cpu"]
)
def test_zero2_gradients_reduce_scatter_on_gpu_but_not_on_cpu(target, kinds) -> None:
    """The same ZeRO-2 step: XLA's GPU compiler reduce-scatters the gradients (no finding);
    the CPU compiler all-reduces and slices (a real full-reduce finding)."""
    if target is not None and not HAS_GPU:
        pytest.skip("needs the shardviz[gpu] extra (CUDA plugin)")
    from shardviz.strategies.rules.named import get_rule_set
    from shardviz.strategies.step import strategy_step
    from shardviz.strategies.zoo import get_model

    devices = topology(target).devices if target else None
    built = strategy_step(get_model("mlp"), get_rule_set("zero2"), devices=devices)
    report = sv.explain(built.step, *built.abstract, run=False)
    assert report.findings.kinds == kinds
    assert any(c.kind == "reduce-scatter" for c in report.collectives) == (target is not None)
