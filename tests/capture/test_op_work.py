"""Each op of a schedule: flops, HBM bytes as the hardware moves them, and what is in flight.

Hand-written modules pin each rule (a fused slice reads the slice, an in-place update
writes the update, VMEM and host buffers are not HBM, async windows); the compiled loop
fixtures check the totals against the matmul count and the compiler's own bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shardviz.capture.hlo.loops import computation_runs, loops_of
from shardviz.capture.hlo.matmuls import matmul_flops
from shardviz.capture.hlo.op_work import op_work, schedule_computations
from shardviz.capture.hlo.text import parse_hlo_module, parse_shape
from shardviz.capture.step_cost import per_step

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "loops"

# A scanned layer as the compilers leave it: the body slices its layer's weight out of the
# stacked array (a fused dynamic-slice), multiplies, writes its residual into a stacked
# buffer in place, and all-gathers the next weight asynchronously around the matmul.
SCANNED = """HloModule scanned, is_scheduled=true

%slice_weight (p0: f32[4,64,64], p1: s32[]) -> f32[64,64] {
  %sw_stack = f32[4,64,64]{2,1,0} parameter(0)
  %sw_i = s32[] parameter(1)
  %sw_z = s32[] constant(0)
  %sw_ds = f32[1,64,64]{2,1,0} dynamic-slice(%sw_stack, %sw_i, %sw_z, %sw_z), dynamic_slice_sizes={1,64,64}
  ROOT %sw_b = f32[64,64]{1,0} bitcast(%sw_ds)
}

%matmul (x: f32[32,64], w: f32[64,64]) -> f32[32,64] {
  %mm_x = f32[32,64]{1,0} parameter(0)
  %mm_w = f32[64,64]{1,0} parameter(1)
  ROOT %mm_d = f32[32,64]{1,0} dot(%mm_x, %mm_w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%save (buf: f32[4,32,64], y: f32[32,64], i: s32[]) -> f32[4,32,64] {
  %sv_buf = f32[4,32,64]{2,1,0} parameter(0)
  %sv_y = f32[32,64]{1,0} parameter(1)
  %sv_i = s32[] parameter(2)
  %sv_y3 = f32[1,32,64]{2,1,0} bitcast(%sv_y)
  %sv_z = s32[] constant(0)
  ROOT %sv_u = f32[4,32,64]{2,1,0} dynamic-update-slice(%sv_buf, %sv_y3, %sv_i, %sv_z, %sv_z)
}

%body (s: (s32[], f32[32,64], f32[4,64,64], f32[4,32,64], f32[8,64])) -> (s32[], f32[32,64], f32[4,64,64], f32[4,32,64], f32[8,64]) {
  %s = (s32[], f32[32,64]{1,0}, f32[4,64,64]{2,1,0}, f32[4,32,64]{2,1,0}, f32[8,64]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[32,64]{1,0} get-tuple-element(%s), index=1
  %ws = f32[4,64,64]{2,1,0} get-tuple-element(%s), index=2
  %res = f32[4,32,64]{2,1,0} get-tuple-element(%s), index=3
  %shard = f32[8,64]{1,0} get-tuple-element(%s), index=4
  %ag = (f32[8,64]{1,0}, f32[64,64]{1,0}) all-gather-start(%shard), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}
  %w = f32[64,64]{1,0} fusion(%ws, %i), kind=kLoop, calls=%slice_weight
  %y = f32[32,64]{1,0} fusion(%x, %w), kind=kOutput, calls=%matmul
  %agd = f32[64,64]{1,0} all-gather-done(%ag)
  %r = f32[4,32,64]{2,1,0} fusion(%res, %y, %i), kind=kLoop, calls=%save
  %ar = f32[32,64]{1,0} all-reduce(%y), channel_id=2, replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[32,64]{1,0}, f32[4,64,64]{2,1,0}, f32[4,32,64]{2,1,0}, f32[8,64]{1,0}) tuple(%next, %ar, %ws, %r, %shard)
}

%add (a: f32[], b: f32[]) -> f32[] {
  %add_a = f32[] parameter(0)
  %add_b = f32[] parameter(1)
  ROOT %add_c = f32[] add(%add_a, %add_b)
}

%cond (s: (s32[], f32[32,64], f32[4,64,64], f32[4,32,64], f32[8,64])) -> pred[] {
  %cs_s = (s32[], f32[32,64]{1,0}, f32[4,64,64]{2,1,0}, f32[4,32,64]{2,1,0}, f32[8,64]{1,0}) parameter(0)
  %cs_i = s32[] get-tuple-element(%cs_s), index=0
  %cs_n = s32[] constant(4)
  ROOT %lt = pred[] compare(%cs_i, %cs_n), direction=LT
}

ENTRY %main (x: f32[32,64], ws: f32[4,64,64], shard: f32[8,64]) -> f32[32,64] {
  %main_x = f32[32,64]{1,0} parameter(0)
  %main_ws = f32[4,64,64]{2,1,0} parameter(1)
  %main_shard = f32[8,64]{1,0} parameter(2)
  %zero = s32[] constant(0)
  %buf = f32[4,32,64]{2,1,0} broadcast(%main_x), dimensions={1,2}
  %init = (s32[], f32[32,64]{1,0}, f32[4,64,64]{2,1,0}, f32[4,32,64]{2,1,0}, f32[8,64]{1,0}) tuple(%zero, %main_x, %main_ws, %buf, %main_shard)
  %loop = (s32[], f32[32,64]{1,0}, f32[4,64,64]{2,1,0}, f32[4,32,64]{2,1,0}, f32[8,64]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"4"}}
  ROOT %out = f32[32,64]{1,0} get-tuple-element(%loop), index=1
}
"""  # noqa: E501

F32 = 4


def ops_of(text: str):
    module = parse_hlo_module(text)
    return {o.name: o for o in op_work(module, computation_runs(module, loops_of(module)))}


def test_the_schedule_is_the_entry_and_the_loop_bodies_not_fusions() -> None:
    module = parse_hlo_module(SCANNED)
    assert [c.name for c in schedule_computations(module)] == ["main", "body", "cond"]


def test_a_fused_slice_reads_the_slice_and_an_in_place_update_writes_the_update() -> None:
    ops = ops_of(SCANNED)
    # The weight's slice out of the stack: read 64x64 (not 4x64x64) plus the index, write it.
    assert ops["w"].hbm_bytes == 64 * 64 * F32 * 2 + 4
    # The residual written into the stack in place: the update (32x64) is read and written,
    # the 4x32x64 buffer is neither read nor copied.
    assert ops["r"].hbm_bytes == 32 * 64 * F32 * 2 + 4
    # The matmul reads x and w and writes y.
    assert ops["y"].hbm_bytes == (32 * 64 + 64 * 64 + 32 * 64) * F32
    assert ops["y"].flops == 2 * 32 * 64 * 64


# The TPU compiler's way of writing the same: each stacked operand first goes through a
# nested fusion that relayouts it in place (a ``copy_fusion`` aliased to its operand, between
# two tilings), and the slice is cut inside another nested fusion.
NESTED = """HloModule nested, is_scheduled=true

%relayout (c0: bf16[8,256,128]) -> bf16[8,256,128] {
  %c0 = bf16[8,256,128]{2,1,0:T(16,128)(2,1)} parameter(0)
  ROOT %c1 = bf16[8,256,128]{2,1,0:T(8,128)(2,1)} copy(%c0)
}

%cut (k0: bf16[8,256,128], k1: s32[]) -> bf16[256,128] {
  %k0 = bf16[8,256,128]{2,1,0} parameter(0)
  %k1 = s32[] parameter(1)
  %kz = s32[] constant(0)
  %kr = bf16[8,256,128]{2,1,0} fusion(%k0), kind=kLoop, output_to_operand_aliasing={{}: (0, {})}, calls=%relayout
  %ks = bf16[1,256,128]{2,1,0} dynamic-slice(%kr, %k1, %kz, %kz), dynamic_slice_sizes={1,256,128}
  ROOT %kb = bf16[256,128]{1,0} bitcast(%ks)
}

%save (s0: bf16[8,256,128], s1: bf16[1,256,128], s2: s32[]) -> bf16[8,256,128] {
  %s0 = bf16[8,256,128]{2,1,0} parameter(0)
  %s1 = bf16[1,256,128]{2,1,0} parameter(1)
  %s2 = s32[] parameter(2)
  %sz = s32[] constant(0)
  %sr = bf16[8,256,128]{2,1,0} fusion(%s0), kind=kLoop, output_to_operand_aliasing={{}: (0, {})}, calls=%relayout
  ROOT %su = bf16[8,256,128]{2,1,0} dynamic-update-slice(%sr, %s1, %s2, %sz, %sz)
}

%read (r0: bf16[8,256,128], r1: s32[]) -> bf16[256,128] {
  %r0 = bf16[8,256,128]{2,1,0} parameter(0)
  %r1 = s32[] parameter(1)
  ROOT %rn = bf16[256,128]{1,0} fusion(%r0, %r1), kind=kLoop, calls=%cut
}

%whole (w0: bf16[8,256,128]) -> bf16[8,256,128] {
  %w0 = bf16[8,256,128]{2,1,0} parameter(0)
  %wr = bf16[8,256,128]{2,1,0} fusion(%w0), kind=kLoop, output_to_operand_aliasing={{}: (0, {})}, calls=%relayout
  ROOT %wn = bf16[8,256,128]{2,1,0} negate(%wr)
}

ENTRY %main (stack: bf16[8,256,128], update: bf16[1,256,128], i: s32[]) -> bf16[8,256,128] {
  %stack = bf16[8,256,128]{2,1,0} parameter(0)
  %update = bf16[1,256,128]{2,1,0} parameter(1)
  %i = s32[] parameter(2)
  %sliced = bf16[256,128]{1,0} fusion(%stack, %i), kind=kLoop, calls=%read
  %saved = bf16[8,256,128]{2,1,0} fusion(%stack, %update, %i), kind=kLoop, calls=%save
  ROOT %negated = bf16[8,256,128]{2,1,0} fusion(%saved), kind=kLoop, calls=%whole
}
"""  # noqa: E501

BF16 = 2


def test_through_nested_fusions_a_slice_reads_the_slice_and_an_update_writes_the_update() -> None:
    """Layer slices of a stacked buffer, as the TPU compiler nests them: counted as slices
    (before, each read the whole stack: the 70B on Ironwood's ops moved 4.5x the compiler's
    bytes, most of it 80 layers' residuals read per layer)."""
    ops = ops_of(NESTED)
    layer = 256 * 128 * BF16
    assert ops["sliced"].hbm_bytes == layer * 2 + 4  # the slice read and written, the index
    assert ops["saved"].hbm_bytes == layer * 2 + 4  # the update read and written in place
    # An op that reads every element still reads the whole stack, relayout or not.
    assert ops["negated"].hbm_bytes == 8 * layer * 2


def test_each_op_runs_as_often_as_its_loop() -> None:
    ops = ops_of(SCANNED)
    assert {ops[n].runs for n in ("w", "y", "r", "next")} == {4}
    assert ops["buf"].runs == 1


def test_collectives_are_the_ledgers_and_the_ops_between_start_and_done_overlap_them() -> None:
    ops = ops_of(SCANNED)
    assert "ag" not in ops and "agd" not in ops and "ar" not in ops  # timed by the ledger
    assert ops["w"].in_flight == ("ag",) and ops["y"].in_flight == ("ag",)
    assert ops["r"].in_flight == () and ops["next"].in_flight == ()


def test_vmem_buffers_are_not_hbm_traffic_and_host_buffers_are_counted_apart() -> None:
    text = """HloModule m, is_scheduled=true

ENTRY %e (a: f32[256,256], h: f32[256,256]) -> f32[256,256] {
  %a = f32[256,256]{1,0} parameter(0)
  %h = f32[256,256]{1,0:S(5)} parameter(1)
  %cs = (f32[256,256]{1,0:S(1)}, f32[256,256]{1,0}, u32[]) copy-start(%a)
  %n = f32[256,256]{1,0} negate(%a)
  %cd = f32[256,256]{1,0:S(1)} copy-done(%cs)
  %m = f32[256,256]{1,0:S(1)} multiply(%cd, %cd)
  %hs = (f32[256,256]{1,0}, f32[256,256]{1,0:S(5)}, u32[]) copy-start(%h)
  %hd = f32[256,256]{1,0} copy-done(%hs)
  ROOT %r = f32[256,256]{1,0} add(%m, %hd)
}
"""
    ops = ops_of(text)
    size = 256 * 256 * F32
    assert parse_shape("f32[2]{0:T(8,128)S(1)}").memory_space == 1
    # The prefetch reads HBM once into VMEM; the multiply then works in VMEM only.
    assert ops["cs"].transfer and ops["cs"].hbm_bytes == size
    assert ops["m"].hbm_bytes == 0
    assert ops["n"].in_flight == ("cs",) and ops["n"].hbm_bytes == 2 * size
    # The host copy reads host memory and writes HBM.
    assert ops["hs"].transfer and (ops["hs"].hbm_bytes, ops["hs"].host_bytes) == (size, size)
    assert ops["r"].hbm_bytes == 2 * size  # reads hd and writes r; m is in VMEM


#: The compiles with the compiler's own cost beside them (the TPU's dumps have none).
CASES = sorted(p.stem for p in FIXTURES.glob("*.txt") if (FIXTURES / f"{p.stem}.json").exists())


@pytest.mark.parametrize("case", CASES)
def test_compiled_loops_ops_add_up_to_the_matmuls_and_near_the_compilers_bytes(case) -> None:
    """Every matmul is in exactly one op, as often as it runs. HBM bytes: on CPU and GPU,
    within 25% below the compiler's own per-step count (it also counts the bytes a fusion
    keeps in registers between its parts); on TPU far below it, since the compiler keeps
    most of these small programs' buffers in VMEM."""
    text = (FIXTURES / f"{case}.txt").read_text()
    module = parse_hlo_module(text)
    runs = computation_runs(module, loops_of(module))
    ops = op_work(module, runs)
    assert sum(o.flops * o.runs for o in ops) == pytest.approx(matmul_flops(module, runs).total)
    hbm = sum((o.hbm_bytes + o.host_bytes) * o.runs for o in ops)
    once = json.loads((FIXTURES / f"{case}.json").read_text())["once"]
    compiler = per_step(once, text, module)[0]["bytes accessed"]
    if case.startswith("v5e"):
        assert 0 < hbm < compiler
    else:
        assert 0.75 * compiler <= hbm <= compiler, (hbm, compiler)


OFFLOAD = Path(__file__).resolve().parents[1] / "fixtures" / "offload"
#: One layer's offloaded activation per device (64 rows x 512 f32), L=4 layers, and the
#: 4 x 512 x 512 f32 optimizer state kept in host memory (tests/fixtures/offload).
ACT, LAYERS, OPT = 64 * 512 * 4, 4, 4 * 512 * 512 * 4


@pytest.mark.parametrize(
    "name", ["v5e_offload", "v5e_offload_dumped", "h100_offload"]
)  # jax 0.10's TPU slice ops, jax 0.12's async-start wrapping them, the GPU's fusion-start
def test_an_offload_moves_one_layers_slice_per_trip_asynchronously(name) -> None:
    # Each trip sends one layer's activation to host and the backward brings it back: the
    # slice, not the whole stacked host buffer, and as async copies that ops can hide.
    module = parse_hlo_module((OFFLOAD / f"{name}.txt").read_text())
    ops = op_work(module, computation_runs(module, loops_of(module)))
    host = [op for op in ops if op.host_bytes]
    assert all(op.transfer for op in host)  # the allocation and the -done halves move nothing
    slices = sum(op.host_bytes * op.runs for op in host if "slice" in op.name)
    assert slices == 2 * LAYERS * ACT  # to host and back
    copies = sum(op.host_bytes * op.runs for op in host if op.name.startswith("copy-start"))
    assert copies == (2 if name.startswith("v5e") else 1) * OPT  # GPU keeps it in HBM
