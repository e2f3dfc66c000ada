"""Matmul flops read from HLO text agree with the compiler's own cost model on single ops:
dots with batch and several contracting dims, and convolutions as the TPU compiler writes
matmuls (padded and strided windows, dilations, feature and batch groups)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardviz.capture.compile import text_cost
from shardviz.capture.hlo.matmuls import _kernel_precision, _valid_pairs, instruction_flops
from shardviz.capture.hlo.text import parse_hlo_module


def one_op(lhs: str, rhs: str, out: str, op: str) -> str:
    return f"""HloModule m

ENTRY %e (a: {lhs}, k: {rhs}) -> {out} {{
  %a = {lhs} parameter(0)
  %k = {rhs} parameter(1)
  ROOT %c = {out} {op}
}}
"""


CASES = [
    # a plain matmul, a batched one, two contracting dims
    ("f32[1024,256]", "f32[256,128]", "f32[1024,128]",
     "dot(%a, %k), lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    ("bf16[8,64,32]", "bf16[8,32,16]", "f32[8,64,16]",
     "dot(%a, %k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
     "rhs_contracting_dims={1}"),
    ("f32[4,8,16]", "f32[8,16,32]", "f32[4,32]",
     "dot(%a, %k), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}"),
    # matmuls as the TPU compiler writes them
    ("f32[16,64,256]", "f32[128,256,1]", "f32[16,64,128]",
     "convolution(%a, %k), window={size=1}, dim_labels=0bf_oi0->0bf"),
    ("f32[2,64,128,1]", "bf16[128,8,16,1]", "bf16[2,64,8,16]",
     "convolution(%a, %k), window={size=1x8 pad=0_0x7_7 rhs_reversal=0x1}, "
     "dim_labels=0bf1_i1o0->0b1f"),
    ("f32[64,256]", "f32[256,128]", "f32[64,128]",
     "convolution(%a, %k), dim_labels=bf_io->bf"),
    # windows: strided, padded, dilated; feature and batch groups
    ("f32[8,32,32,16]", "f32[3,3,16,24]", "f32[8,16,16,24]",
     "convolution(%a, %k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
    ("f32[8,32,32,16]", "f32[3,3,16,24]", "f32[8,32,32,24]",
     "convolution(%a, %k), window={size=3x3 pad=2_2x2_2 rhs_dilate=2x2}, "
     "dim_labels=b01f_01io->b01f"),
    ("f32[4,10,10,8]", "f32[3,3,8,8]", "f32[4,21,21,8]",
     "convolution(%a, %k), window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, "
     "dim_labels=b01f_01io->b01f"),
    ("f32[8,32,32,16]", "f32[3,3,4,16]", "f32[8,32,32,16]",
     "convolution(%a, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
     "feature_group_count=4"),
    ("f32[4,10,8]", "f32[3,8,4]", "f32[1,8,4]",
     "convolution(%a, %k), window={size=3}, dim_labels=b0f_0io->b0f, batch_group_count=4"),
    ("f32[8,10,8]", "f32[3,8,4]", "f32[2,8,4]",
     "convolution(%a, %k), window={size=3}, dim_labels=b0f_0io->b0f, batch_group_count=4"),
]  # fmt: skip


@pytest.mark.parametrize(("lhs", "rhs", "out", "op"), CASES)
def test_matmul_flops_are_the_compilers(lhs, rhs, out, op) -> None:
    text = one_op(lhs, rhs, out, op)
    module = parse_hlo_module(text)
    ins = module.entry.root
    assert ins is not None
    want = text_cost(text)
    assert want is not None
    assert instruction_flops(module, ins) == pytest.approx(want["flops"])


@settings(max_examples=600, deadline=None)
@given(
    size=st.integers(0, 24), out=st.integers(0, 24), k=st.integers(1, 9), lo=st.integers(0, 8),
    stride=st.integers(1, 6), lhs=st.integers(1, 6), rhs=st.integers(1, 4),
)  # fmt: skip
def test_valid_window_pairs_match_a_brute_count(size, out, k, lo, stride, lhs, rhs) -> None:
    w = {"size": k, "lo": lo, "hi": 0, "stride": stride, "lhs": lhs, "rhs": rhs}
    span = (size - 1) * lhs + 1 if size else 0
    brute = sum(
        1
        for j in range(k)
        for o in range(out)
        if 0 <= o * stride + j * rhs - lo < span and (o * stride + j * rhs - lo) % lhs == 0
    )
    assert _valid_pairs(size, out, w) == brute


#: A remat step as jax 0.12's TPU compiler leaves it: the forward projection has metadata;
#: in the backward its recomputation (``%r``) and the weight gradient (``%dw``) have none
#: (relaid-out convolutions), each with one operand under the remat mark. The weights come
#: from the stacked layers' slice, the gradient from the backward.
_FWD = "jit(step)/jvp()/while/body/bsd,dnk->bsnk/dot_general"
_SLICE = "jit(step)/transpose(jvp())/while/body/jit(dynamic_index_in_dim)/squeeze"
_REMAT = "jit(step)/transpose(jvp())/while/body/checkpoint/rematted_computation/convert"
_GRAD = "jit(step)/transpose(jvp())/while/body/checkpoint/mul"
REMAT_STEP = f"""HloModule m

ENTRY %e (x: bf16[256,64], w: bf16[64,128], g: bf16[256,128]) -> bf16[64,128] {{
  %x = bf16[256,64] parameter(0)
  %w = bf16[64,128] parameter(1)
  %g = bf16[256,128] parameter(2)
  %f = bf16[256,128]{{0,1}} convolution(%x, %w), dim_labels=fb_io->fb, metadata={{op_name="{_FWD}"}}
  %xr = bf16[256,64] copy(%x), metadata={{op_name="{_REMAT}"}}
  %ws = bf16[64,128] copy(%w), metadata={{op_name="{_SLICE}"}}
  %r = bf16[256,128]{{0,1}} convolution(%xr, %ws), dim_labels=fb_io->fb
  %gg = bf16[256,128] multiply(%g, %r), metadata={{op_name="{_GRAD}"}}
  ROOT %dw = bf16[64,128]{{0,1}} convolution(%xr, %gg), dim_labels=bf_io->bf
}}
"""


def test_a_recomputed_matmul_without_metadata_is_known_by_its_forward_twin() -> None:
    """The recomputation counts apart (its remat-marked operand, and a forward matmul of the
    same shapes contracted the same way); the weight gradient, which has a remat-marked
    operand too but no forward twin, stays the model's (jax 0.12 had both as the model's)."""
    from shardviz.capture.hlo.matmuls import matmul_flops

    m = parse_hlo_module(REMAT_STEP)
    flops = matmul_flops(m, {})
    each = 2.0 * 256 * 64 * 128
    assert flops.total == 3 * each
    assert flops.recomputed == each
    assert flops.model == 2 * each


def test_a_backward_matmul_of_a_forward_ones_shapes_is_not_taken_for_a_recomputation() -> None:
    """Square blocks (blockwise attention's ``p @ v`` and its gradient's ``p @ dO``): a
    backward matmul with a recomputed operand and the shapes of a forward one stays the
    model's when its other operand is a gradient, computed in the backward, not read."""
    from shardviz.capture.hlo.matmuls import matmul_flops

    square = REMAT_STEP.replace("[256,64]", "[64,64]").replace("[64,128]", "[64,64]")
    square = square.replace("[256,128]", "[64,64]")
    # The backward's matmul takes the gradient (%gg), not the weights' slice (%ws).
    square = square.replace(
        "convolution(%xr, %ws), dim_labels=fb_io->fb",
        "convolution(%xr, %gg0), dim_labels=fb_io->fb",
    )
    square = square.replace("  %ws = ", f'  %gg0 = bf16[64,64] multiply(%g, %g), metadata={{op_name="{_GRAD}"}}\n  %ws = ')  # fmt: skip
    m = parse_hlo_module(square)
    flops = matmul_flops(m, {})
    assert flops.recomputed == 0 and flops.model == flops.total


def test_a_matmul_xla_rematerialised_is_recomputation_whatever_its_metadata() -> None:
    """Under memory pressure XLA's rematerialisation copies an op to run it again, naming the
    copy ``<op>.remat<N>`` and keeping the original's metadata (here a forward matmul's, and
    a backward one's in a fusion): a copy beside its original is the hardware's work, not
    the model's; a copy whose original is gone (its uses all moved to it) is the op itself.
    The 405B on two v6e-256 slices counted 8.3% more model flops than MaxText's formula
    until the first were known, and 8.4% fewer while every copy was taken for one."""
    from shardviz.capture.hlo.matmuls import matmul_flops, xla_remat_copies

    grad = "jit(step)/transpose(jvp())/while/body/checkpoint/bsd,df->bsf/dot_general"

    def fused(name: str, dot: str) -> str:
        return f"""%{name} (p0: bf16[256,64], p1: bf16[256,128]) -> bf16[64,128] {{
  %p0 = bf16[256,64] parameter(0)
  %p1 = bf16[256,128] parameter(1)
  ROOT %{dot} = bf16[64,128] dot(%p0, %p1), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}, metadata={{op_name="{grad}"}}
}}
"""

    out = "bf16[256,128], bf16[256,128], bf16[64,128], bf16[64,128], bf16[64,128]"
    text = f"""HloModule m

{fused("fused_grad", "d")}
{fused("fused_grad.clone", "d.1")}
{fused("fused_moved.clone", "d.2")}
ENTRY %e (x: bf16[256,64], w: bf16[64,128], g: bf16[256,128]) -> ({out}) {{
  %x = bf16[256,64] parameter(0)
  %w = bf16[64,128] parameter(1)
  %g = bf16[256,128] parameter(2)
  %f = bf16[256,128] dot(%x, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, metadata={{op_name="{_FWD}"}}
  %f.remat = bf16[256,128] dot(%x, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, metadata={{op_name="{_FWD}"}}
  %fusion.7 = bf16[64,128] fusion(%x, %g), kind=kOutput, calls=%fused_grad
  %fusion.7.remat2 = bf16[64,128] fusion(%x, %g), kind=kOutput, calls=%fused_grad.clone
  %fusion.9.remat = bf16[64,128] fusion(%x, %g), kind=kOutput, calls=%fused_moved.clone
  ROOT %t = ({out}) tuple(%f, %f.remat, %fusion.7, %fusion.7.remat2, %fusion.9.remat)
}}
"""
    module = parse_hlo_module(text)
    assert xla_remat_copies(module) == {"f.remat", "fusion.7.remat2"}
    flops = matmul_flops(module, {})
    each = 2.0 * 256 * 64 * 128
    assert flops.total == 5 * each
    assert flops.recomputed == 2 * each
    assert flops.model == 3 * each


@pytest.mark.parametrize(
    ("types", "want"),
    [
        # tokamax's fp8 grouped matmuls: group metadata, then each operand's fp8 values and
        # their bf16 tile scales, which at small sizes outnumber the values.
        (("s32[1]", "s32[5]", "s32[4]", "s32[4]", "s32[1]", "f8e4m3fn[128,256]",
          "bf16[128,128]", "f8e4m3fn[4,128,256]", "bf16[4,128,128]"), "fp8"),
        (("s32[1]", "s32[9]", "s32[39]", "s32[39]", "s32[1]", "f8e4m3fn[4096,1024]",
          "bf16[16,1024]", "f8e4m3fn[4096,2048]", "bf16[16,2048]"), "fp8"),
        # the compiler's own ragged-dot kernel, an E5M2 gradient against E4M3 weights
        (("s32[1]", "s32[9]", "f8e5m2[4096,2048]", "f8e4m3fn[8,2048,1024]"), "fp8"),
        (("s32[8]", "s8[64,128]", "s8[128,256]"), "int8"),
        # bf16 attention: q, k, v and a mask's bounds
        (("bf16[4,512,128]", "bf16[4,512,128]", "bf16[4,512,128]", "s32[4]"), ""),
        # one narrow operand against a wide one: the kernel widens it
        (("f8e4m3fn[128,256]", "bf16[256,512]"), ""),
        # bf16 queries against an fp8 cache (a paged attention kernel): not an fp8 matmul
        (("bf16[8,128]", "f8e4m3fn[64,16,128]", "f8e4m3fn[64,16,128]", "s32[8,4]"), ""),
        # a wide operand after a narrow one whose dims it does not divide is a value
        (("f8e4m3fn[128,256]", "bf16[128,384]", "f8e4m3fn[256,512]"), ""),
        (("f8e4m3fn[128,256]",), ""),
    ],
)  # fmt: skip
def test_a_kernels_precision_is_its_value_operands(types, want) -> None:
    assert _kernel_precision(types) == want
