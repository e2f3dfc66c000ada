"""Serving your own decoder, dense or a mixture of experts: a ModelDef that declares its sizes
plans decode, prefill and the smallest slice; a reduced Mixtral's decode reads the experts
its batch touches (the hand count E x (1 - (1 - k/E)^B)) and, under 'ep', moves its tokens by
the all-to-alls the compiled step has (their bytes by hand)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.model.hardware_presets import hardware
from shardviz.model.serving import ServingComparison
from shardviz.render.serving.text import serving_text
from shardviz.strategies.models.configs import param_count
from shardviz.strategies.serving.layout import serving_layout
from shardviz.strategies.serving.steps import CAPACITY_FACTOR, moe_group
from shardviz.strategies.zoo import ModelDef, get_model

#: A decoder of one's own: 2 layers, 8 query / 4 KV heads of 32.
DENSE = {"layers": 2, "d_model": 256, "heads": 8, "kv_heads": 4, "head_dim": 32, "ffn": 512,
         "vocab": 512}  # fmt: skip
#: Mixtral reduced: top-2 of 8 experts.
MOE = {"layers": 2, "d_model": 64, "heads": 8, "kv_heads": 4, "head_dim": 16, "ffn": 128,
       "vocab": 256, "experts": 8, "experts_per_token": 2}  # fmt: skip
BATCH, CONTEXT = 8, 64
V5E = hardware("v5e")


def own(name: str, **info) -> ModelDef:
    """A user's model: its own parameters and loss (not the zoo's), its sizes declared."""

    def loss(params, batch):
        return jnp.mean((batch @ params["w_in"] @ params["w_out"]) ** 2)

    d = info.get("d_model", 16)
    params = {"w_in": jnp.ones((d, 32)), "w_out": jnp.ones((32, d))}
    return ModelDef.custom(name, params, loss, jnp.ones((4, d)), info=info)


def test_kv_bytes_per_token_of_your_own_decoder_is_2_x_layers_x_kv_heads_x_head_dim():
    m = own("mine", layers=3, kv_heads=2, head_dim=48)
    for dtype, size in (("bfloat16", 2), ("int8", 1), ("int4", 0.5)):
        assert m.kv_bytes_per_token(dtype) == 2 * 3 * 2 * 48 * size
    with pytest.raises(ShardvizError, match="'mine' has no attention.*declares no head_dim"):
        own("mine", layers=3, kv_heads=2).kv_bytes_per_token()


def test_a_missing_size_is_named_with_how_to_declare_it():
    sizes = {k: v for k, v in DENSE.items() if k != "vocab"}
    with pytest.raises(ShardvizError, match=r"does not declare vocab in its info.*Fix: declare"):
        sv.compare(own("mine", **sizes), ["tp"], mode="decode")
    with pytest.raises(ShardvizError, match="does not declare head_dim or ffn"):
        sv.smallest_slice(own("mine", layers=2, d_model=64, heads=4, kv_heads=2, vocab=64), "v5e")
    with pytest.raises(ShardvizError, match="experts=8, experts_per_token=0 do not fit"):
        own("mine", **DENSE, experts=8).decoder_config()


def test_your_own_dense_decoder_plans_decode_and_prefill():
    m = own("my-decoder", **DENSE)
    config = m.decoder_config()
    decode = sv.compare(m, ["tp"], mode="decode", batch=BATCH, context=CONTEXT, target="v5e",
                        dtype="int8", progress=False)  # fmt: skip
    tp = decode.result("tp")
    assert decode.model == "my-decoder" and decode.num_params == param_count(config)
    assert decode.kv_bytes_per_token == 2 * 2 * 4 * 32
    assert tp.compiled and tp.experts is None
    assert tp.kv_bytes == 2 * 2 * BATCH * CONTEXT * 4 * 32 // 8  # int8, over all 8 devices
    assert tp.argument_bytes == tp.weight_bytes + tp.kv_bytes + 4 * BATCH + 4
    assert any(c.kind == "all-reduce" and "tensor" in c.axes for c in tp.collectives)
    norms, embed = 2 * 2 * 256 + 256, 512 * 256
    matmuls = param_count(config) - norms - embed
    attention = 4 * BATCH * CONTEXT * 8 * 32 * 2
    assert tp.flops == (2 * matmuls * BATCH + attention) / 8
    prefill = sv.compare(m, ["dp"], mode="prefill", batch=BATCH, context=CONTEXT, target="v5e",
                         progress=False)  # fmt: skip
    dp = prefill.result("dp")
    assert dp.compiled and dp.bound and dp.weight_copies == 8
    assert dp.flops == (2 * matmuls * BATCH * CONTEXT + attention * CONTEXT) / 8


def test_your_own_dense_decoder_gets_its_smallest_slice_checked_by_a_compile():
    m = own("my-decoder", **DENSE)
    # 1 KiB of bfloat16 cache per token: 128 x 327,680 tokens = 40 GiB need 4 v5e chips
    s = sv.smallest_slice(m, "v5e", batch=128, context=327_680, progress=False)
    assert s.kv_bytes == 128 * 327_680 * 1024 == 40 * 2**30
    assert s.weight_bytes == param_count(m.decoder_config()) * 2
    assert s.slice == "v5e:2x2" and s.checked.endswith(": fits")


@pytest.fixture(scope="module")
def mixtral() -> ServingComparison:
    return sv.compare(get_model("mixtral-8x7b", **MOE), ["tp", "ep"], mode="decode",
                      batch=BATCH, context=CONTEXT, target="v5e", progress=False)  # fmt: skip


def _touched(experts: int, k: int, tokens: int) -> float:
    return experts * (1 - (1 - k / experts) ** tokens)


def test_mixtral_decode_reads_the_experts_its_batch_touches(mixtral):
    e, k, layers, d, f = 8, 2, 2, 64, 128
    experts_bytes = 3 * layers * e * d * f * 2  # gate, up, down in bfloat16, all layers
    share = 1 - (1 - k / e) ** BATCH  # the chance one expert is touched by the batch
    assert round(_touched(e, k, BATCH), 2) == 7.2
    for name, per_device in (("tp", e), ("ep", 1)):
        r = mixtral.result(name)
        x = r.experts
        assert r.compiled and x is not None
        assert (x.experts, x.experts_per_token, x.tokens) == (e, k, BATCH)
        assert x.touched == _touched(e, k, BATCH)
        assert x.bytes_per_expert == 3 * d * f * 2 and x.layers == layers
        assert x.read_bytes_total == _touched(e, k, BATCH) * layers * 3 * d * f * 2
        # tp: every expert on each chip, its hidden size over 8; ep: one expert per chip
        assert x.held_bytes == experts_bytes // 8 and x.experts_per_device == per_device
        assert x.tokens_per_expert == BATCH  # the whole batch reaches each expert
        assert x.touched_per_device == per_device * share
        assert x.read_bytes == round(experts_bytes // 8 * share)
        # the estimate reads the touched experts only, and counts active parameters' flops
        read = r.weight_bytes - x.held_bytes + x.read_bytes
        assert r.memory_seconds == (read + r.kv_bytes) / V5E.hbm_bandwidth
    active = param_count(get_model("mixtral-8x7b", **MOE).decoder_config()) - (
        2 * 2 * 64 + 64) - 256 * 64 - (e - k) * 3 * d * f * layers  # fmt: skip
    attention = 4 * BATCH * CONTEXT * 8 * 16 * layers
    assert mixtral.result("tp").flops == (2 * active * BATCH + attention) / 8


def test_mixtral_ep_moves_tokens_by_the_all_to_alls_of_the_compiled_step(mixtral):
    ep = mixtral.result("ep")
    assert ep.axis_sizes == {"data": 8, "sequence": 1, "tensor": 1}
    (a2a,) = ep.collectives  # nothing else: attention is whole on every chip
    assert (a2a.kind, a2a.axes, a2a.count) == ("all-to-all", ("data",), 2 * 2)  # in, out, x2
    # each chip routes its group of B/8 tokens into [E, 1 group, C slots, D] and sends 7/8
    group = moe_group(BATCH // 8)
    slots = math.ceil(2 * CAPACITY_FACTOR * group / 8)
    f32 = 4  # the CPU compile runs bfloat16 einsums in float32, and moves float32
    assert a2a.moved_bytes == 4 * 8 * 1 * slots * 64 * f32 * 7 // 8
    assert not any(c.kind == "all-to-all" for c in mixtral.result("tp").collectives)
    text = serving_text(mixtral)
    assert "8 x (1 - (1 - 2/8)^8) = 7.2 of the 8" in text
    assert "4 all-to-all over data (7 KiB) per step" in text.replace("\n    ", " ")
    assert max(len(line) for line in text.split("\n") if "expert" in line) < 100


def test_your_own_moe_decoder_serves_as_mixtral_does(mixtral):
    mine = sv.compare(own("my-moe", **MOE), ["ep"], mode="decode", batch=BATCH,
                      context=CONTEXT, target="v5e", progress=False)  # fmt: skip
    got, want = mine.result("ep"), mixtral.result("ep")
    assert (got.weight_bytes, got.kv_bytes, got.argument_bytes, got.experts, got.collectives) == (
        want.weight_bytes, want.kv_bytes, want.argument_bytes, want.experts, want.collectives)  # fmt: skip


def test_ep_splits_the_experts_not_the_router_and_is_refused_for_a_dense_model():
    config = get_model("mixtral-8x7b", **MOE).decoder_config()
    layout = serving_layout("ep", 8, config, batch=BATCH, context=CONTEXT)
    assert layout.weight_specs["layers/moe/w_gate"] == P(None, "data", None, None)
    assert layout.weight_specs["layers/moe/router"] == P(None, None, None)
    assert layout.cache_spec == P(None, "data", None, None, None)
    with pytest.raises(ShardvizError, match="'ep'.*has none.*'dp' or 'dp\\+tp'"):
        serving_layout("ep", 8, own("mine", **DENSE).decoder_config(), batch=8, context=64)


def test_the_smallest_slice_of_mixtral_holds_every_expert():
    s = sv.smallest_slice("mixtral-8x7b", "v5e", dtype="int8", check=False)
    assert s.weight_bytes == 46_702_792_704  # every expert is held, int8
    assert s.chips == 4
