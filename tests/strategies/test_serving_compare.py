"""sv.compare(mode="decode" | "prefill") on a reduced Llama: per device bytes from the
compiler checked against hand counts, the estimate against the formula, bad input."""

from __future__ import annotations

import jax
import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.model.hardware_presets import hardware
from shardviz.model.serving import ServingComparison
from shardviz.strategies.models.configs import param_count
from shardviz.strategies.zoo import get_model

#: 2 layers, 8 query / 4 KV heads of 32, every dim divisible by 8.
DIMS = {"layers": 2, "d_model": 256, "heads": 8, "kv_heads": 4, "head_dim": 32, "ffn": 512,
        "vocab": 512}  # fmt: skip
MODEL = get_model("llama3.1-8b", **DIMS)
CONFIG = MODEL.info["config"]
BATCH, CONTEXT = 8, 128
NORMS = 2 * 2 * 256 + 256  # bf16 scales: 2 per layer + the final one


@pytest.fixture(scope="module")
def decode() -> ServingComparison:
    return sv.compare(
        MODEL, ["tp", "dp", "tp-heads"], mode="decode", batch=BATCH, context=CONTEXT,
        dtype="int8", target="v5e",
    )  # fmt: skip


def test_cache_bytes_per_device_are_the_hand_count(decode):
    whole = 2 * 2 * BATCH * CONTEXT * 4 * 32  # k and v, layers, batch, context, kv heads, dim
    assert decode.kv_bytes_per_token == 2 * 2 * 4 * 32
    assert decode.result("tp").kv_bytes == whole // 8  # 4 over tensor x 2 over sequence
    assert decode.result("dp").kv_bytes == whole // 8  # batch over 8
    assert decode.result("tp-heads").kv_bytes == whole // 4  # heads only: 2 copies
    assert decode.result("tp-heads").kv_copies == 2


def test_weights_per_device_are_the_hand_count_and_the_compilers_arguments(decode):
    matrices = param_count(CONFIG) - NORMS
    dp = decode.result("dp")
    assert dp.weight_bytes == matrices * 1 + NORMS * 2  # int8 matrices, bf16 norms, whole
    assert dp.weight_copies == 8
    # the compiler's arguments: weights + both caches + this device's tokens + the position
    for r in decode.results:
        data = r.axis_sizes["data"]
        assert r.argument_bytes == r.weight_bytes + r.kv_bytes + 4 * BATCH // data + 4


def test_tp_splits_the_weights_and_moves_activations_per_layer(decode):
    tp, dp = decode.result("tp"), decode.result("dp")
    assert tp.weight_copies == 1 and tp.weight_bytes < dp.weight_bytes / 6
    assert dp.collectives == ()
    reduces = [c for c in tp.collectives if c.kind == "all-reduce" and "tensor" in c.axes]
    assert sum(c.count for c in reduces) >= 2 * CONFIG.layers  # after attention and the MLP


def test_decode_step_is_the_books_formula_on_v5e(decode):
    hw = hardware("v5e")
    dp = decode.result("dp")  # no collectives: bytes read over HBM bandwidth
    flops = dp.flops
    expected = dp.kv_bytes / hw.hbm_bandwidth + max(
        dp.weight_bytes / hw.hbm_bandwidth, flops / hw.peak_flops_bf16
    )
    assert dp.step_seconds == pytest.approx(expected)
    assert dp.bound == "memory"
    assert dp.tokens_per_second_per_chip == pytest.approx(BATCH / expected / 8)
    room = hw.hbm_bytes - dp.weight_bytes - dp.working_bytes
    assert dp.max_batch == int(room // (dp.kv_bytes / BATCH)) // 8 * 8


def test_findings_name_the_copied_cache(decode):
    kinds = {(f.kind, f.where.strategy) for f in decode.findings}
    assert ("kv-replicated", "tp-heads") in kinds
    assert ("kv-replicated", "tp") not in kinds
    # a model this small reads almost nothing per step: the compiled all-reduces' hop
    # latency on v5e sets tp's step, and the finding says so; dp has no collectives
    assert decode.result("tp").bound == "collectives"
    assert ("collective-bound", "tp") in kinds and ("collective-bound", "dp") not in kinds


def test_prefill_is_compute_and_counts_the_prompt():
    c = sv.compare(MODEL, ["dp+tp"], mode="prefill", batch=BATCH, context=CONTEXT,
                   dtype="bfloat16", target="v5e")  # fmt: skip
    r = c.results[0]
    matmul = param_count(CONFIG) - NORMS - CONFIG.vocab * CONFIG.d_model
    attention = 4 * BATCH * CONTEXT**2 * 8 * 32 * 2
    assert r.flops == pytest.approx((2 * matmul * BATCH * CONTEXT + attention) / 8)
    assert r.tokens_per_second_per_chip == pytest.approx(BATCH * CONTEXT / r.step_seconds / 8)


def test_int4_weights_and_cache_compile_here_at_half_of_int8():
    c = sv.compare(MODEL, ["tp"], mode="decode", batch=BATCH, context=CONTEXT, dtype="int4")
    r = c.results[0]
    assert r.kv_bytes == 2 * 2 * BATCH * CONTEXT * 4 * 32 // 8 // 2
    assert r.step_seconds is None  # CPU devices, no chip named: no estimate
    assert r.argument_bytes == r.weight_bytes + r.kv_bytes + 4 * BATCH + 4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "serve"}, "mode='decode'"),
        ({"mode": "decode", "strategies": ["fsdp"]}, "not a serving strategy"),
        ({"mode": "decode", "dtype": "fp8"}, "not a serving dtype"),
        ({"mode": "decode", "dtype": ("int8",)}, r"\(weights, cache\) pair"),
        ({"mode": "decode", "batch": 0}, "batch=0 is not a whole number"),
    ],
)
def test_bad_serving_input_names_the_fix(kwargs, match):
    strategies = kwargs.pop("strategies", ["tp"])
    with pytest.raises(ShardvizError, match=match):
        sv.compare(MODEL, strategies, context=CONTEXT, **kwargs)


def test_a_mesh_is_refused_in_serving_modes():
    with pytest.raises(ShardvizError, match="leave mesh out.*target="):
        sv.compare(MODEL, ["tp"], jax.make_mesh((8,), ("x",)), mode="decode")


def test_models_without_a_decoders_sizes_are_refused_naming_the_missing_ones():
    # the zoo's transformer has no kv_heads (its d_ff is taken for ffn); the MLP has no layers
    with pytest.raises(ShardvizError, match="'transformer' does not declare kv_heads in"):
        sv.compare("transformer", ["tp"], mode="decode")
    missing = "layers, heads, kv_heads, head_dim, ffn or vocab in its info"
    with pytest.raises(ShardvizError, match=f"'mlp' does not declare {missing}"):
        sv.smallest_slice("mlp", "v5e", check=False)


def test_compare_without_strategies_serves_the_serving_defaults():
    c = sv.compare(MODEL, mode="decode", batch=BATCH, context=64)
    assert isinstance(c, ServingComparison)
    assert [r.strategy for r in c.results] == ["tp", "dp+tp", "dp"]
    assert {r.target for r in c.results} == {"8 cpu devices here"}


def test_a_backend_that_cannot_compile_int4_names_the_fix(monkeypatch):
    # int4 compiles on this jax's CPU; a backend that refuses it must say what to do
    from shardviz.strategies.serving import plan

    def refuse(*args, **kwargs):
        raise RuntimeError("UNIMPLEMENTED: s4 not supported")

    monkeypatch.setattr(plan, "compile_program", refuse)
    with pytest.raises(ShardvizError, match="did not compile int4.*dtype='int8'"):
        sv.compare(MODEL, ["tp"], mode="decode", batch=BATCH, context=CONTEXT, dtype="int4")
    with pytest.raises(RuntimeError, match="s4 not supported"):  # not int4: the error itself
        sv.compare(MODEL, ["tp"], mode="decode", batch=BATCH, context=CONTEXT, dtype="int8")


def test_the_charts_sweeps_pass_through_the_compiled_point(decode):
    for r in decode.results:
        at_batch = dict((b, (m, t)) for b, m, t in r.sweep)[BATCH]
        at_context = dict((c, (m, t)) for c, m, t in r.context_sweep)[CONTEXT]
        for got in (at_batch, at_context):
            assert got[0] == r.total_bytes
            assert got[1] == pytest.approx(r.tokens_per_second_per_chip)
        sizes = [m for _, m, _ in r.sweep]
        assert sizes == sorted(sizes)  # more sequences, more bytes
