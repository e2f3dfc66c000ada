"""fp8 and int8 matmuls timed at their own peak, and Ironwood (TPU7x) compiled deviceless.

The counts are checked against hand counts: a matmul of m x k by k x n is 2mkn flops; on
TPU7x it runs at 4,614 TFLOP/s a chip in fp8 and 2,307 in bf16 (cloud.google.com/tpu/docs/
tpu7x), each chip's two TensorCores being two jax devices that share it.
"""

from __future__ import annotations

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.analysis.estimate.predict import op_parts
from shardviz.capture.hlo import parse_hlo_module
from shardviz.capture.hlo.matmuls import instruction_precision
from shardviz.model import OpWork

needs_tpu = pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None, reason="needs the shardviz[tpu] extra"
)

M, K, N = 4096, 8192, 8192


def _dot(lhs: str, rhs: str) -> str:
    return (
        "HloModule m\n\nENTRY %main (a: " + lhs + "[8,16], b: " + rhs + "[16,4]) -> f32[8,4] {\n"
        f"  %a = {lhs}[8,16]{{1,0}} parameter(0)\n  %b = {rhs}[16,4]{{1,0}} parameter(1)\n"
        f"  ROOT %d = f32[8,4]{{1,0}} dot({lhs}[8,16]{{1,0}} %a, {rhs}[16,4]{{1,0}} %b), "
        "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"
    )


@pytest.mark.parametrize(
    ("lhs", "rhs", "precision"),
    [
        ("f8e4m3fn", "f8e4m3fn", "fp8"),
        ("f8e5m2", "f8e4m3fn", "fp8"),  # the backward pass's e5m2 gradients against e4m3
        ("s8", "s8", "int8"),
        ("bf16", "bf16", ""),
        ("f8e4m3fn", "bf16", ""),  # one narrow operand: the compiler widens it
    ],
)
def test_a_matmul_is_as_narrow_as_both_its_operands(lhs, rhs, precision):
    module = parse_hlo_module(_dot(lhs, rhs))
    dot = next(i for i in module.entry.instructions if i.opcode == "dot")
    assert instruction_precision(module, dot) == precision


def test_an_op_times_each_precision_at_its_own_peak():
    op = OpWork("fusion", flops=3e12, hbm_bytes=0.0, narrow_flops=(("fp8", 2e12),))
    peaks = {"": 1e15, "fp8": 2e15, "int8": 1e15}
    compute, _, _ = op_parts(op, peaks, 1e12)
    assert compute == pytest.approx(1e12 / 1e15 + 2e12 / 2e15)
    # A single peak (a chip without figures by precision) times every flop at it.
    assert op_parts(op, 1e15, 1e12)[0] == pytest.approx(3e12 / 1e15)


def _program(dtype, devices):
    mesh = jax.sharding.Mesh(np.array(devices).reshape(2, 4), ("data", "model"))

    def step(x, w):
        return jnp.dot(x.astype(dtype), w.astype(dtype), preferred_element_type=jnp.bfloat16)

    x = jax.ShapeDtypeStruct((M, K), jnp.bfloat16, sharding=NamedSharding(mesh, P("data", None)))
    w = jax.ShapeDtypeStruct((K, N), jnp.bfloat16, sharding=NamedSharding(mesh, P(None, "model")))
    return step, x, w


@needs_tpu
def test_ironwood_fp8_matmuls_run_at_the_fp8_peak_two_devices_a_chip():
    pod = sv.topology("tpu7x:2x2x1")
    assert (len(pod.devices), pod.target.chips, pod.target.devices_per_chip) == (8, 4, 2)
    per_device = 2 * M * K * N / 8
    fp8 = sv.explain(*_program(jnp.float8_e4m3fn, pod.devices), run=False)
    bf16 = sv.explain(*_program(jnp.bfloat16, pod.devices), run=False)
    for report in (fp8, bf16):
        assert report.target is not None and report.target.devices_per_chip == 2
        assert sum(op.flops * op.runs for op in report.cost.ops) == pytest.approx(per_device)
    narrow = [p for op in fp8.cost.ops for p in op.narrow_flops]
    assert narrow == [("fp8", pytest.approx(per_device))]
    assert not [p for op in bf16.cost.ops for p in op.narrow_flops]
    # Each device has half a chip: 4,614 / 2 TFLOP/s in fp8, 2,307 / 2 in bf16.
    assert fp8.estimate.peak_flops_per_second == pytest.approx(4.614e15 / 2)
    assert bf16.estimate.peak_flops_per_second == pytest.approx(2.307e15 / 2)
    assert fp8.estimate.compute_seconds == pytest.approx(per_device / (4.614e15 / 2))
    assert bf16.estimate.compute_seconds == pytest.approx(per_device / (2.307e15 / 2))
    said = " ".join(fp8.estimate.notes)
    assert "fp8 matmuls: 100% of the matmul flops, at TPU7x's fp8 peak" in said
    assert "against the bf16 peak they would be 2.00x as high" in said
    assert "fp8" not in " ".join(bf16.estimate.notes)
    # MFU at a measured step is against the peak the matmuls ran at.
    assert fp8.estimate.mfu_at(1.0) == pytest.approx(fp8.estimate.model_flops / (4.614e15 / 2))


@needs_tpu
def test_v5p_fp8_has_no_faster_peak():
    """v5p's fp8 peak is its bf16 peak (the same Cloud table): same time, no second MFU."""
    pod = sv.topology("v5p:2x2x2")
    report = sv.explain(*_program(jnp.float8_e4m3fn, pod.devices), run=False)
    assert report.estimate.peak_flops_per_second == pytest.approx(4.59e14)
    assert not any("own peak" in n for n in report.estimate.notes)


def test_a_cpu_preview_of_fp8_says_the_target_may_run_it_faster():
    """The CPU compiler widens fp8 operands before its matmuls: timed at the bf16 peak,
    with a note naming the faster peak the target has."""
    devices = jax.devices()[:8]
    report = sv.explain(*_program(jnp.float8_e4m3fn, devices), run=False, target="tpu7x")
    assert report.target is not None and report.target.devices_per_chip == 2
    assert report.target.chips == 4
    notes = " ".join(report.estimate.notes)
    assert "the program casts to float8_e4m3fn" in notes
    assert "fp8 peak (4.61 PFLOP/s a chip against 2.31 PFLOP/s)" in notes
    assert "2 devices per chip, core i % 2" in notes
    # On v5e (no fp8 figure) the same preview has nothing faster to say.
    v5e = sv.explain(*_program(jnp.float8_e4m3fn, devices), run=False, target="v5e")
    assert "casts to float8" not in " ".join(v5e.estimate.notes)


@needs_tpu
def test_a_published_moe_plans_on_ironwood_half_a_chip_per_device():
    """Qwen3's MoE (reduced) compiled deviceless for TPU7x: each device holds half a chip's
    HBM and peak; the estimate, the collectives and the physical view all work with two
    devices a chip."""
    sizes = dict(layers=2, d_model=128, heads=4, kv_heads=2, head_dim=32, ffn=64, vocab=512,
                 seq=128, batch=8, experts=8, experts_per_token=2)  # fmt: skip
    c = sv.compare("qwen3-235b-a22b", ["ep"], target="tpu7x:2x2x1", **sizes)
    (r,) = c.results
    report = r.report
    assert report.platform == "tpu" and report.target.devices_per_chip == 2
    assert report.target.label == "TPU7x 2x2x1 (4 chips, 8 devices, 1 host)"
    e = report.estimate
    assert e.hbm_bytes == 96 * 2**30  # 192 GiB a chip, two devices
    assert e.peak_flops_per_second == pytest.approx(2.307e15 / 2)
    assert e.collective_seconds > 0 and e.predicted_seconds >= e.step_seconds
    assert report.collectives and sv.physical(report) is not None
