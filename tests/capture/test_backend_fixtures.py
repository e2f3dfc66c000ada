"""The ledger, memory and intermediates of real TPU and GPU programs, from saved files (no jax).

The fixtures in ``tests/fixtures/backends`` were compiled deviceless by ``make_fixtures.py``
(jax 0.10.2, libtpu 0.0.42, jax-cuda12-plugin 0.10.2) from the programs in ``programs.py``.
Every expected figure below is computed by hand from the program's shapes and specs:

    x [B, D] = [256, 1024], w1 [D, H] = [1024, 4096], w2 [H, D] = [4096, 1024], f32 (4 bytes);
    train_step: h = tanh(x @ w1), out = h @ w2, loss = mean(out**2); SGD on w1 and w2.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from shardviz.capture.hlo import (
    collectives_of_hlo,
    intermediates_of_hlo,
    moved_bytes,
    with_partitioned,
)
from shardviz.capture.hlo.collectives import FUSED_SCATTER_NOTE
from shardviz.capture.hlo.memory import assigned_bytes, space_bytes
from shardviz.capture.memory import peak_bytes, peak_rule
from shardviz.model import Collective, Device, MeshLayout
from shardviz.model.program import CPU_PEAK, TPU_PEAK
from tests.capture import marker_line_in

BACKENDS = Path(__file__).resolve().parent.parent / "fixtures" / "backends"
PROGRAMS = BACKENDS / "programs.py"

B, D, H = 256, 1024, 4096
F32, BF16 = 4, 2
#: The shard_map program's input [R, C].
R, C = 256, 512

FIXTURES = (
    "v5e_mlp_2d",
    "v5e_fsdp",
    "v5e_shard_map",
    "v5p_megatron",
    "h100_mlp_2d",
    "h100_megatron",
    "h100_shard_map",
    "a100_fsdp",
)
TPU = tuple(f for f in FIXTURES if f.startswith(("v5e", "v5p")))
GPU = tuple(f for f in FIXTURES if f.startswith(("h100", "a100")))
MLP = tuple(f for f in FIXTURES if not f.endswith("shard_map"))

MOVED_AS_BF16 = "moved as bfloat16"
SOURCE_UNKNOWN = "source unknown"

#: Known exceptions to "every partitioner collective has a source": the GPU's all-reduce
#: combiner concatenates Megatron's two gradient all-reduces (two f32[1024,1024] over 'data')
#: into one flat f32[2097152] without metadata (see test_gpu_concatenated_all_reduce_...).
#: Collectives whose source cannot be recovered (none left: the GPU's combined all-reduce
#: takes the sources of the all-reduces it combines).
NO_SOURCE: set[tuple[str, str]] = set()


# --- reading the fixtures --------------------------------------------------------------------


@cache
def text(name: str, suffix: str = "") -> str:
    return (BACKENDS / f"{name}{suffix}.txt").read_text(encoding="utf-8")


@cache
def facts(name: str) -> dict:
    return json.loads((BACKENDS / f"{name}.json").read_text(encoding="utf-8"))


@cache
def mesh(name: str) -> MeshLayout:
    """The user's mesh as the fixture's json saved it (devices in mesh order)."""
    m = facts(name)["mesh"]
    devices = tuple(
        Device(
            id=d["id"],
            process_index=d["process_index"],
            platform=d["platform"],
            kind=d["kind"],
            coords=tuple(d["coords"]) if d["coords"] is not None else None,
            core_on_chip=d["core_on_chip"],
        )
        for d in m["devices"]
    )
    return MeshLayout(tuple(m["axis_names"]), tuple(m["axis_sizes"]), devices)


def device_ids(name: str) -> tuple[int, ...]:
    return tuple(facts(name)["device_ids"])


@cache
def raw_ledger(name: str) -> tuple[Collective, ...]:
    """The compiled program's collectives, as the compiler left them."""
    return collectives_of_hlo(text(name), mesh(name), device_ids(name))


@cache
def partitioned_ledger(name: str) -> tuple[Collective, ...]:
    return collectives_of_hlo(text(name, ".partitioned"), mesh(name), device_ids(name))


@cache
def ledger(name: str) -> tuple[Collective, ...]:
    """What ``explain`` shows: the compiled collectives mended from the partitioned module."""
    return with_partitioned(raw_ledger(name), partitioned_ledger(name))


def memory(name: str) -> dict[str, int]:
    return facts(name)["memory_analysis"]


def marker_line(mark: str) -> int:
    """The line of the backend fixtures' ``programs.py`` carrying ``# @mark: <mark>``."""
    return marker_line_in(PROGRAMS, mark)


def line_of(c: Collective) -> int:
    assert c.source is not None, c.name
    assert c.source.innermost.file.endswith("programs.py"), c.source
    return c.source.innermost.line


def axis_groups(name: str, axis: str) -> set[frozenset[int]]:
    """The device groups along one mesh axis (the others fixed), from the saved mesh."""
    m = mesh(name)
    k = m.axis_names.index(axis)
    groups: dict[tuple, set[int]] = {}
    for d in m.devices:
        coord = m.coords(d.id)
        groups.setdefault(coord[:k] + coord[k + 1 :], set()).add(d.id)
    return {frozenset(g) for g in groups.values()}


def as_sets(c: Collective) -> set[frozenset[int]]:
    return {frozenset(g) for g in c.groups}


def forward(c: Collective) -> bool:
    return "transpose(" not in c.op_name


def ring(kind: str, in_bytes: int, out_bytes: int, n: int) -> int:
    """The ring model written out (independently of ``moved_bytes``)."""
    return {
        "all-gather": out_bytes * (n - 1) // n,
        "reduce-scatter": in_bytes * (n - 1) // n,
        "all-reduce": 2 * in_bytes * (n - 1) // n,
        "all-to-all": in_bytes * (n - 1) // n,
    }[kind]


# --- the saved files -------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_files_are_complete_and_small(name: str) -> None:
    sizes = {}
    for suffix in (
        "",
        ".partitioned",
        ".before_spmd",
        ".buffer_assignment",
        ".memory_usage_report",
    ):
        assert text(name, suffix).strip(), f"{name}{suffix}.txt is empty"
        sizes[suffix] = len(text(name, suffix))
    assert text(name).startswith("HloModule ")
    assert sum(sizes.values()) < 100_000
    f = facts(name)
    assert f["platform"] == ("tpu" if name in TPU else "gpu")
    assert sorted(f["device_ids"]) == sorted(mesh(name).device_ids)
    assert set(f["memory_analysis"]) >= {
        "argument_size_in_bytes",
        "output_size_in_bytes",
        "alias_size_in_bytes",
        "temp_size_in_bytes",
        "peak_memory_in_bytes",
    }


def test_all_fixtures_together_stay_small() -> None:
    total = sum(p.stat().st_size for p in BACKENDS.iterdir() if p.suffix in (".txt", ".json"))
    assert total < 450_000


# --- the ledgers against hand-computed values ------------------------------------------------


@pytest.mark.parametrize("name", ["v5e_mlp_2d", "h100_mlp_2d"])
def test_mlp_2d_ledger(name: str) -> None:
    """w1 P('data','model'), w2 P('model','data'), x P('data') on a 4x4 mesh.

    Per device: w1 [256, 1024], w2 [1024, 256], x [64, 1024]. Forward: gather w1 over 'data'
    to [1024, 1024] and h = tanh(x @ w1) [64, 1024] over 'data' to [256, 1024]; h @ w2 gives
    partial sums [256, 256] to all-reduce over 'model'. Backward: dh [256, 1024] and
    dW1 [1024, 1024] are summed over 'data' and each device keeps its quarter.
    TPU gathers the f32 values as bf16 (half the bytes)."""
    dt, size = ("bfloat16", BF16) if name in TPU else ("float32", F32)
    data, model = axis_groups(name, "data"), axis_groups(name, "model")
    got = sorted(
        (
            c.kind,
            c.axes,
            c.in_dtype,
            c.in_shape,
            c.out_shape,
            c.in_bytes,
            c.out_bytes,
            c.moved_bytes,
        )
        for c in ledger(name)
    )
    want = sorted(
        [
            ("all-gather", ("data",), dt, (256, 1024), (1024, 1024), 256 * 1024 * size,
             1024 * 1024 * size, 1024 * 1024 * size * 3 // 4),
            ("all-gather", ("data",), dt, (64, 1024), (256, 1024), 64 * 1024 * size,
             256 * 1024 * size, 256 * 1024 * size * 3 // 4),
            ("all-reduce", ("model",), "float32", (256, 256), (256, 256), 262_144, 262_144,
             2 * 262_144 * 3 // 4),
            ("reduce-scatter", ("data",), "float32", (256, 1024), (64, 1024), 1_048_576,
             262_144, 1_048_576 * 3 // 4),
            ("reduce-scatter", ("data",), "float32", (1024, 1024), (256, 1024), 4_194_304,
             1_048_576, 4_194_304 * 3 // 4),
        ]
    )  # fmt: skip
    assert got == want
    for c in ledger(name):
        assert c.group_size == 4
        assert as_sets(c) == (data if c.axes == ("data",) else model)
        assert not c.user_written
        if c.kind != "all-reduce":
            assert c.dimension == 0
    # Where each comes from: the gathers and the all-reduce feed the forward matmuls.
    by_shape = {(c.kind, c.in_shape): c for c in ledger(name)}
    assert line_of(by_shape["all-gather", (256, 1024)]) == marker_line("mlp_h")
    assert line_of(by_shape["all-gather", (64, 1024)]) == marker_line("mlp_out")
    assert line_of(by_shape["all-reduce", (256, 256)]) == marker_line("mlp_out")
    assert line_of(by_shape["reduce-scatter", (1024, 1024)]) == marker_line("mlp_h")
    assert line_of(by_shape["reduce-scatter", (256, 1024)]) == marker_line("mlp_out")


@pytest.mark.parametrize("name, data_size", [("v5p_megatron", 2), ("h100_megatron", 4)])
def test_megatron_has_one_forward_all_reduce_of_the_activation(name: str, data_size: int) -> None:
    """w1 P(None,'model'), w2 P('model',None), x P('data'): the forward needs exactly one
    all-reduce over 'model' of out = h @ w2, [B/data, D] f32 per device."""
    over_model = [c for c in ledger(name) if c.axes == ("model",)]
    assert len(over_model) == 1
    (ar,) = over_model
    per_device = B // data_size * D * F32
    assert (ar.kind, ar.in_shape, ar.in_bytes) == ("all-reduce", (B // data_size, D), per_device)
    assert forward(ar) and line_of(ar) == marker_line("mlp_out")
    assert ar.group_size == 4 and as_sets(ar) == axis_groups(name, "model")
    assert ar.moved_bytes == 2 * per_device * 3 // 4
    # Backward: the gradients of w1 [D, H/4] and w2 [H/4, D] are summed over 'data' (the
    # batch is split there): 2 x 4 MiB, however the backend combines them.
    back = [c for c in ledger(name) if c is not ar]
    assert {c.axes for c in back} == {("data",)} and {c.kind for c in back} == {"all-reduce"}
    assert not any(forward(c) for c in back if c.op_name)
    assert sum(c.in_bytes for c in back) == 2 * D * (H // 4) * F32
    assert all(as_sets(c) == axis_groups(name, "data") for c in back)
    assert all(c.moved_bytes == ring("all-reduce", c.in_bytes, 0, data_size) for c in back)


def test_tpu_combined_gradient_all_reduce_is_split_with_each_source() -> None:
    back = [c for c in ledger("v5p_megatron") if not forward(c)]
    assert [(c.combined, c.in_shape) for c in back] == [
        ((0, 2), (1024, 1024)),
        ((1, 2), (1024, 1024)),
    ]
    assert sorted(line_of(c) for c in back) == [marker_line("mlp_h"), marker_line("mlp_out")]


def _fsdp_expected(n: int, dtype: str, size: int) -> list[tuple]:
    """Forward FSDP gathers: each parameter's 1/n tile (first dim) to the whole parameter."""
    return [
        ("all-gather", dtype, (D // n, H), (D, H), D * H * size // n, D * H * size),
        ("all-gather", dtype, (H // n, D), (H, D), H * D * size // n, H * D * size),
    ]


def _param_gathers(name: str) -> list[tuple]:
    return sorted(
        (c.kind, c.in_dtype, c.in_shape, c.out_shape, c.in_bytes, c.out_bytes)
        for c in ledger(name)
        if c.kind == "all-gather" and forward(c) and c.out_shape in ((D, H), (H, D))
    )


def test_a100_fsdp_gathers_each_parameter_once_and_reduce_scatters_dw2() -> None:
    """FSDP over 'data' of 8: w1 [128, 4096] and w2 [512, 1024] per device, gathered whole
    (16 MiB each, moved 7/8 of it); dW2 [4096, 1024] (16 MiB) reduce-scattered to [512, 1024]."""
    name, n = "a100_fsdp", 8
    assert _param_gathers(name) == sorted(_fsdp_expected(n, "float32", F32))
    cs = ledger(name)
    assert all(c.axes == ("data",) and c.group_size == n for c in cs)
    assert all(as_sets(c) == {frozenset(mesh(name).device_ids)} for c in cs)
    for c in cs:
        assert c.moved_bytes == ring(c.kind, c.in_bytes, c.out_bytes, n), c.name
    (rs,) = [c for c in cs if c.kind == "reduce-scatter"]
    assert (rs.in_shape, rs.out_shape, rs.in_bytes, rs.out_bytes) == (
        (H, D),
        (H // n, D),
        H * D * F32,
        H * D * F32 // n,
    )
    assert rs.moved_bytes == H * D * F32 * 7 // 8
    assert line_of(rs) == marker_line("mlp_out")  # dW2 = h.T @ d(out)


def test_v5e_fsdp_reduces_dw2_over_data() -> None:
    """On TPU the compiler sums dW2 [4096, 1024] with a full all-reduce over the 16 devices
    (its update fusion then slices each device's [256, 1024]): no all-reduce-scatter fusion."""
    (ar,) = [c for c in ledger("v5e_fsdp") if c.kind == "all-reduce"]
    assert (ar.in_shape, ar.in_bytes, ar.axes, ar.group_size) == (
        (H, D),
        H * D * F32,
        ("data",),
        16,
    )
    assert ar.moved_bytes == 2 * H * D * F32 * 15 // 16
    assert line_of(ar) == marker_line("mlp_out")


def test_v5e_fsdp_gathers_each_parameter_once() -> None:
    """FSDP over 'data' of 16: w1 [64, 4096] and w2 [256, 1024] per device, each gathered
    once, in bf16 (8 MiB out each); the program has as many collectives as the partitioner
    made."""
    assert _param_gathers("v5e_fsdp") == sorted(_fsdp_expected(16, "bfloat16", BF16))
    assert len(ledger("v5e_fsdp")) == len(partitioned_ledger("v5e_fsdp"))


@pytest.mark.parametrize("name", ["v5e_shard_map", "h100_shard_map"])
def test_shard_map_user_collectives(name: str) -> None:
    """x [256, 512] P('data','model') on 4x4: [64, 128] f32 (32 KiB) per device. psum over
    'model', ppermute j -> j+1 along 'data', tiled all_gather over 'data' to [256, 128]."""
    tile = (R // 4) * (C // 4) * F32
    m = mesh(name)
    cs = {c.kind: c for c in ledger(name)}
    assert sorted(cs) == ["all-gather", "all-reduce", "collective-permute"]
    assert len(ledger(name)) == 3
    assert all(c.user_written for c in cs.values())

    psum = cs["all-reduce"]
    assert (psum.axes, psum.in_shape, psum.in_bytes, psum.moved_bytes) == (
        ("model",),
        (R // 4, C // 4),
        tile,
        2 * tile * 3 // 4,
    )
    assert as_sets(psum) == axis_groups(name, "model")
    assert line_of(psum) == marker_line("sm_psum")

    perm = cs["collective-permute"]
    want_pairs = {
        (m.devices[j * 4 + k].id, m.devices[(j + 1) % 4 * 4 + k].id)
        for j in range(4)
        for k in range(4)
    }
    assert set(perm.pairs) == want_pairs
    assert (perm.axes, perm.in_bytes, perm.moved_bytes) == (("data",), tile, tile)
    assert line_of(perm) == marker_line("sm_ppermute")

    gather = cs["all-gather"]
    assert (gather.axes, gather.in_shape, gather.out_shape, gather.dimension) == (
        ("data",),
        (R // 4, C // 4),
        (R, C // 4),
        0,
    )
    assert gather.moved_bytes == 4 * tile * 3 // 4
    assert as_sets(gather) == axis_groups(name, "data")
    assert line_of(gather) == marker_line("sm_all_gather")


# --- sources ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_every_partitioner_collective_has_a_source(name: str) -> None:
    """After ``with_partitioned``, every collective points at a line of programs.py, except
    the known ones (``NO_SOURCE``), whose note says why."""
    marks = (
        {marker_line(m) for m in ("sm_psum", "sm_ppermute", "sm_all_gather")}
        if name.endswith("shard_map")
        else {marker_line("mlp_h"), marker_line("mlp_out")}
    )
    for c in ledger(name):
        if (name, c.name) in NO_SOURCE:
            assert c.source is None and c.note.startswith(SOURCE_UNKNOWN)
            continue
        assert c.op_name, c.name
        assert line_of(c) in marks, c.name


def test_gpu_reduce_scatters_get_their_source_back_from_the_partitioned_module() -> None:
    """The GPU makes its reduce-scatters from all-reduce + slice after partitioning, dropping
    the metadata; the partitioned module's all-reduce over the same groups gives it back."""
    for name in ("h100_mlp_2d", "a100_fsdp"):
        raw = [c for c in raw_ledger(name) if c.kind == "reduce-scatter"]
        assert raw and all(not c.op_name and c.source is None for c in raw)
        mended = [c for c in ledger(name) if c.kind == "reduce-scatter"]
        assert all(c.op_name.endswith(("dot_general", "transpose")) for c in mended)
        assert all(c.source is not None for c in mended)


def test_gpu_concatenated_all_reduce_keeps_a_source() -> None:
    (ar,) = [c for c in ledger("h100_megatron") if c.name == "all-reduce-start.1"]
    assert ar.in_shape == (2 * D * (H // 4),)  # the combined, flattened gradients
    assert ar.source is not None
    assert ar.op_name == "jit(train_step)/transpose(jvp())/transpose"
    assert "combined 2 all-reduces" in ar.note


# --- TPU specifics ---------------------------------------------------------------------------


def test_tpu_all_reduce_scatter_fusion_is_a_reduce_scatter() -> None:
    """v5e runs the backward sums over 'data' as ``all-reduce-scatter`` fusions: an all-reduce
    inside a fusion whose root keeps each device's slice. Moved bytes follow the
    reduce-scatter (in x 3/4), not the all-reduce (2 x in x 3/4)."""
    rs = [c for c in ledger("v5e_mlp_2d") if c.kind == "reduce-scatter"]
    assert sorted((c.in_shape, c.out_shape) for c in rs) == [
        ((256, 1024), (64, 1024)),
        ((1024, 1024), (256, 1024)),
    ]
    for c in rs:
        assert c.note.startswith(FUSED_SCATTER_NOTE) and c.name.startswith("all-reduce")
        assert c.in_bytes == c.out_bytes * 4
        assert (
            c.moved_bytes
            == c.in_bytes * 3 // 4
            == moved_bytes("reduce-scatter", c.in_bytes, c.out_bytes, 4)
        )
        assert c.dimension == 0 and not c.is_async
    assert "%all-reduce-scatter" in text("v5e_mlp_2d")  # the fusion is there as printed


@pytest.mark.parametrize("name", ["v5e_mlp_2d", "v5e_fsdp"])
def test_tpu_bf16_gathers_of_f32_values_say_so(name: str) -> None:
    """The program gathers f32 values; the TPU compiler converts them to bf16 first. Each such
    gather's twin in the partitioned module is f32."""
    bf16 = [c for c in ledger(name) if c.kind == "all-gather" and c.in_dtype == "bfloat16"]
    assert bf16
    for c in bf16:
        assert MOVED_AS_BF16 in c.note and "float32" in c.note, c.name
        assert c.in_bytes == c.in_shape[0] * c.in_shape[1] * BF16
    assert all(p.in_dtype == "float32" for p in partitioned_ledger(name))
    f32 = [c for c in ledger(name) if c.in_dtype == "float32"]
    assert all(MOVED_AS_BF16 not in c.note for c in f32)


# --- GPU specifics ---------------------------------------------------------------------------

_START = re.compile(
    r"=\s*\S.*?\s(all-gather|all-reduce|reduce-scatter|all-to-all|collective-permute)-start\("
)


@pytest.mark.parametrize("name", GPU)
def test_gpu_async_pairs_count_once(name: str) -> None:
    """Every GPU collective is an async start/done pair: one ledger entry per start."""
    starts = _START.findall(text(name))
    dones = re.findall(r"\s(?:all-gather|all-reduce|collective-permute)-done\(", text(name))
    assert starts and len(dones) >= 1
    cs = ledger(name)
    assert all(c.is_async for c in cs)
    assert len({c.name.split("#")[0] for c in cs}) == len(starts)
    assert not any("done" in c.name for c in cs)


# --- memory ----------------------------------------------------------------------------------

#: Argument bytes per device, by hand: each argument's tile.
ARGUMENT_BYTES = {
    # w1 [256, 1024] + w2 [1024, 256] + x [64, 1024]
    "v5e_mlp_2d": (256 * 1024 + 1024 * 256 + 64 * 1024) * F32,
    "h100_mlp_2d": (256 * 1024 + 1024 * 256 + 64 * 1024) * F32,
    # w1 [64, 4096] + w2 [256, 1024] + x [16, 1024]
    "v5e_fsdp": (64 * 4096 + 256 * 1024 + 16 * 1024) * F32,
    # w1 [128, 4096] + w2 [512, 1024] + x [32, 1024]
    "a100_fsdp": (128 * 4096 + 512 * 1024 + 32 * 1024) * F32,
    # w1 [1024, 1024] + w2 [1024, 1024] + x [128, 1024] (data 2) / [64, 1024] (data 4)
    "v5p_megatron": (2 * 1024 * 1024 + 128 * 1024) * F32,
    "h100_megatron": (2 * 1024 * 1024 + 64 * 1024) * F32,
    # x [64, 128]
    "v5e_shard_map": 64 * 128 * F32,
    "h100_shard_map": 64 * 128 * F32,
}


@pytest.mark.parametrize("name", FIXTURES)
def test_argument_bytes_match_hand_computation_and_buffer_assignment(name: str) -> None:
    ma = memory(name)
    assert ma["argument_size_in_bytes"] == ARGUMENT_BYTES[name]
    assigned = assigned_bytes(text(name, ".buffer_assignment"))
    assert assigned["argument"] == ma["argument_size_in_bytes"]
    assert set(assigned) == {"argument", "output", "temp"}


@pytest.mark.parametrize("name", MLP)
def test_output_bytes_are_the_updated_parameters(name: str) -> None:
    """The outputs are w1 and w2's tiles (plus the output tuple's small index table)."""
    params = ARGUMENT_BYTES[name] - _x_bytes(name)
    assert 0 <= memory(name)["output_size_in_bytes"] - params < 1024


def _x_bytes(name: str) -> int:
    data = dict(zip(mesh(name).axis_names, mesh(name).axis_sizes, strict=True))["data"]
    return B // data * D * F32


@pytest.mark.parametrize("name", FIXTURES)
def test_peak_rule_per_backend(name: str) -> None:
    """GPU: the compiler's own peak. TPU: the HBM its buffer assignment allocates (its own
    peak also counts on-chip VMEM). CPU: the sum."""
    ma = memory(name)
    arg, out, alias, temp = (
        ma["argument_size_in_bytes"],
        ma["output_size_in_bytes"],
        ma["alias_size_in_bytes"],
        ma["temp_size_in_bytes"],
    )
    compiler = ma["peak_memory_in_bytes"]
    platform = facts(name)["platform"]
    spaces = space_bytes(text(name, ".memory_usage_report"))
    peak, definition = peak_rule(platform, arg, out, alias, temp, compiler, spaces)
    if platform == "tpu":
        assert (
            peak
            == dict(spaces)["default"]
            == sum(assigned_bytes(text(name, ".buffer_assignment")).values())
        )
        assert definition == TPU_PEAK
    else:
        assert peak == compiler
        assert "compiler" in definition and platform.upper() in definition
    # The same figures read as a CPU program: the sum (the CPU's own peak leaves temp out).
    cpu_peak, cpu_definition = peak_rule("cpu", arg, out, alias, temp, compiler)
    assert cpu_peak == arg + out - alias + temp == peak_bytes(arg, out, alias, temp)
    assert cpu_definition == CPU_PEAK
    # Without a compiler peak or memory spaces, TPU/GPU fall back to the sum too.
    assert peak_rule(platform, arg, out, alias, temp, None)[0] == cpu_peak


@pytest.mark.parametrize("name", TPU)
def test_tpu_hbm_is_above_the_sum_because_temp_is_not_reported(name: str) -> None:
    """v5e's memory analysis says temp 0 while its buffer assignment has scratch in HBM; the
    compiler's own peak is higher still on every TPU fixture (it also counts on-chip VMEM)."""
    ma = memory(name)
    total = ma["argument_size_in_bytes"] + ma["output_size_in_bytes"] + ma["temp_size_in_bytes"]
    spaces = dict(space_bytes(text(name, ".memory_usage_report")))
    assert {"default", "vmem", "smem"} <= set(spaces)
    assigned = assigned_bytes(text(name, ".buffer_assignment"))
    assert spaces["default"] == sum(assigned.values())
    assert assigned["temp"] > 0
    if ma["temp_size_in_bytes"] == 0:  # v5e: scratch in HBM, yet temp reported as 0
        assert spaces["default"] > total
    assert ma["peak_memory_in_bytes"] > spaces["default"]


@pytest.mark.parametrize("name", FIXTURES)
def test_memory_spaces_list_default_first(name: str) -> None:
    spaces = space_bytes(text(name, ".memory_usage_report"))
    assert spaces and spaces[0][0] == "default"
    assert all(b >= 0 for _, b in spaces)
    assigned = assigned_bytes(text(name, ".buffer_assignment"))
    # The default space holds at least every argument and output buffer.
    assert spaces[0][1] >= assigned["argument"] + assigned["output"]
    if name in GPU:
        assert len(spaces) == 1


# --- intermediates ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_intermediates_use_the_user_axis_names(name: str) -> None:
    got = intermediates_of_hlo(text(name, ".before_spmd"), mesh(name), device_ids(name))
    assert got
    named = [s for s in got if s.spec is not None]
    assert named
    used = {a for s in named for entry in s.spec for a in entry}
    assert used and used <= set(mesh(name).axis_names)
    if name in MLP:
        # The first matmul's result h = x @ w1 [256, 4096] is split over 'data' on the batch.
        h = next(s for s in got if s.shape == (B, H) and s.op == "dot")
        assert h.spec is not None and h.spec[0] == ("data",)
