"""KV cache accounting and the serving layouts: bytes per token by hand, specs by strategy."""

from __future__ import annotations

import pytest
from jax.sharding import PartitionSpec as P

from shardviz.errors import ShardvizError
from shardviz.strategies.models.configs import get_config
from shardviz.strategies.serving.layout import serving_layout
from shardviz.strategies.zoo import get_model

LLAMA70 = get_config("llama3.1-70b")


@pytest.mark.parametrize(("dtype", "expected"), [("bfloat16", 327_680), ("bf16", 327_680),
                                                 ("int8", 163_840), ("int4", 81_920)])  # fmt: skip
def test_kv_bytes_per_token_of_llama3_70b_is_2_x_layers_x_kv_heads_x_head_dim(dtype, expected):
    # 2 (k and v) x 80 layers x 8 KV heads x 128 head dim x bytes: the scaling book's 160 kB int8
    assert get_model("llama3.1-70b").kv_bytes_per_token(dtype) == expected
    assert 2 * 80 * 8 * 128 == 163_840


def test_kv_bytes_per_token_of_the_zoo_transformer_counts_every_head():
    m = get_model("transformer", layers=3, d_model=128, heads=8)
    assert m.kv_bytes_per_token("int8") == 2 * 3 * 8 * 16


def test_kv_bytes_per_token_refuses_a_model_without_attention_and_a_bad_dtype():
    with pytest.raises(ShardvizError, match="no attention layers"):
        get_model("mlp").kv_bytes_per_token()
    with pytest.raises(ShardvizError, match="not a serving dtype.*int4"):
        get_model("transformer").kv_bytes_per_token("fp8")


def test_tp_wider_than_the_kv_heads_splits_the_cache_positions_over_the_rest():
    layout = serving_layout("tp", 16, LLAMA70, batch=32, context=8192)
    assert layout.sizes == (("data", 1), ("sequence", 2), ("tensor", 8))
    assert layout.cache_spec == P(None, None, "sequence", "tensor", None)
    # query heads tensor-major, so head h = n * 8 + g lies with KV head n
    assert layout.weight_specs["layers/attn/wq"] == P(None, None, ("tensor", "sequence"), None)
    assert layout.weight_specs["layers/attn/wk"] == P(None, "sequence", "tensor", None)
    assert layout.weight_specs["layers/mlp/w_down"] == P(None, ("tensor", "sequence"), None)


def test_tp_heads_leaves_the_cache_copied_and_says_so():
    layout = serving_layout("tp-heads", 16, LLAMA70, batch=32, context=8192)
    assert layout.cache_spec == P(None, None, None, "tensor", None)
    assert any("held by 2 chips" in n for n in layout.notes)


def test_dp_and_dp_tp_split_the_batch():
    dp = serving_layout("dp", 8, LLAMA70, batch=32, context=8192)
    assert dp.cache_spec == P(None, "data", None, None, None)
    assert dp.weight_specs["layers/attn/wq"] == P(None, None, None, None)
    both = serving_layout("dp+tp", 16, LLAMA70, batch=32, context=8192)
    assert both.sizes == (("data", 2), ("sequence", 1), ("tensor", 8))
    assert both.cache_spec == P(None, "data", None, "tensor", None)


def test_bad_strategy_and_indivisible_batch_name_the_fix():
    with pytest.raises(ShardvizError, match="not a serving strategy.*'tp'"):
        serving_layout("fsdp", 8, LLAMA70, batch=8, context=64)
    with pytest.raises(ShardvizError, match="batch=3 does not divide.*multiple of 8"):
        serving_layout("dp", 8, LLAMA70, batch=3, context=64)
