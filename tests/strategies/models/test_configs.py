"""Published architectures: exact parameter counts, abstract shapes at full size, and checks."""

from __future__ import annotations

import jax
import pytest

from shardviz.errors import ShardvizError
from shardviz.strategies.accounting import count_params
from shardviz.strategies.models import ARCH_NAMES, CONFIGS, param_count
from shardviz.strategies.models.configs import get_config
from shardviz.strategies.zoo import MODEL_NAMES, default_sizes, get_model, init_train_state

from .small import VISION

#: The counts the formula gives (float32 master weights, untied heads).
EXACT = {
    "llama2-7b": 6_738_415_616,
    "llama2-70b": 68_976_648_192,
    "llama3.1-8b": 8_030_261_248,
    "llama3.1-70b": 70_553_706_496,
    "llama3.1-405b": 405_853_388_800,
    "mixtral-8x7b": 46_702_792_704,
    "mixtral-8x22b": 140_630_071_296,
    "mistral-7b": 7_241_732_096,
    "qwen3-8b": 8_190_735_360,
    "qwen3-235b-a22b": 235_093_634_560,
    "qwen2.5-7b": 7_615_616_512,
    "gemma3-12b": 11_765_788_416,
    "gemma3-27b": 27_009_002_240,
    "deepseek3-671b": 671_026_419_200,
    "deepseek2-16b": 15_706_484_224,
    "llama4-scout": 107_769_861_120,
    "llama4-maverick": 400_711_848_960,
}

#: Parameters a published total includes that shardviz does not plan: Llama 4's vision
#: encoder (tests/strategies/models/test_llama4.py counts it).
UNPLANNED = {"llama4-scout": VISION, "llama4-maverick": VISION}

#: A mixture of experts' active parameters per token (experts_per_token of the experts;
#: DeepSeek-V3's, with its shared expert and dense layers, in test_deepseek3.py).
ACTIVE = {
    "mixtral-8x7b": 12_879_925_248,
    "mixtral-8x22b": 39_161_468_928,
    "qwen3-235b-a22b": 22_190_763_520,
}


def test_the_published_names() -> None:
    assert set(ARCH_NAMES) == set(EXACT)
    assert MODEL_NAMES == ("mlp", "transformer", "moe")  # the small zoo is unchanged


@pytest.mark.parametrize("name", ARCH_NAMES)
def test_param_count_is_within_half_a_percent_of_the_published_figure(name: str) -> None:
    """The published total, or, where only that is published (Gemma 3's text decoder), the
    count without the token embedding."""
    config = CONFIGS[name]
    assert param_count(config) == EXACT[name]
    if config.published_params is None:
        assert config.published_non_embedding is not None
        counted = EXACT[name] - config.vocab * config.d_model
        assert abs(counted / config.published_non_embedding - 1) < 0.005
        return
    planned = param_count(config) + UNPLANNED.get(name, 0)
    assert abs(planned / config.published_params - 1) < 0.005


@pytest.mark.parametrize("name", sorted(ACTIVE))
def test_active_params_are_within_one_percent_of_the_published_figure(name: str) -> None:
    config = CONFIGS[name]
    assert config.is_moe and config.published_active is not None
    assert param_count(config, active=True) == ACTIVE[name]
    assert abs(ACTIVE[name] / config.published_active - 1) < 0.01
    # By hand: the total less the experts a token does not use.
    unused = (config.experts - config.experts_per_token) * 3 * config.d_model * config.ffn
    assert ACTIVE[name] == EXACT[name] - config.layers * unused


def test_dense_models_are_wholly_active() -> None:
    for name in ARCH_NAMES:
        config = CONFIGS[name]
        if not config.is_moe:
            assert param_count(config, active=True) == param_count(config)
            assert config.published_active is None


def test_qwen3_normalises_each_query_and_key_head() -> None:
    key = jax.random.key(0)
    attn = jax.eval_shape(get_model("qwen3-235b-a22b").init_params, key)["layers"]["attn"]
    assert attn["q_norm"].shape == attn["k_norm"].shape == (94, 128)
    assert attn["wq"].shape == (94, 4096, 64, 128) and attn["wk"].shape == (94, 4096, 4, 128)
    assert "bq" not in attn
    moe = jax.eval_shape(get_model("qwen3-235b-a22b").init_params, key)["layers"]["moe"]
    assert moe["w_gate"].shape == (94, 128, 4096, 1536) and moe["router"].shape == (94, 4096, 128)
    assert CONFIGS["qwen3-8b"].qk_norm and not CONFIGS["llama3.1-8b"].qk_norm


@pytest.mark.parametrize("name", ARCH_NAMES)
def test_param_count_is_the_initialised_tree_at_full_size(name: str) -> None:
    """jax.eval_shape of the real init: every leaf counted, nothing allocated."""
    model = get_model(name)
    shapes = jax.eval_shape(model.init_params, jax.random.key(0))
    assert count_params(shapes) == param_count(CONFIGS[name]) == model.info["num_params"]
    assert {str(x.dtype) for x in jax.tree.leaves(shapes)} == {"float32"}


def test_70b_train_state_without_allocating() -> None:
    model = get_model("llama3.1-70b")
    params, opt_state, batch = jax.eval_shape(
        lambda k: init_train_state(model, k), jax.random.key(0)
    )
    assert params["layers"]["attn"]["wq"].shape == (80, 8192, 64, 128)
    assert params["layers"]["attn"]["wk"].shape == (80, 8192, 8, 128)
    assert params["layers"]["mlp"]["w_down"].shape == (80, 28672, 8192)
    assert params["unembed"].shape == (8192, 128256)
    assert count_params(opt_state) == 2 * param_count(CONFIGS["llama3.1-70b"]) + 1  # mu, nu, count
    assert batch["inputs"].shape == (8, 8192)


def test_mixtral_and_qwen_trees() -> None:
    key = jax.random.key(0)
    mixtral = jax.eval_shape(get_model("mixtral-8x7b").init_params, key)["layers"]
    assert mixtral["moe"]["router"].shape == (32, 4096, 8)
    assert mixtral["moe"]["w_gate"].shape == (32, 8, 4096, 14336)
    assert "mlp" not in mixtral
    qwen = jax.eval_shape(get_model("qwen2.5-7b").init_params, key)["layers"]["attn"]
    assert qwen["bq"].shape == (28, 28, 128)
    assert qwen["bk"].shape == (28, 4, 128)


def test_scaled_configs_keep_the_structure() -> None:
    qwen = CONFIGS["qwen2.5-7b"].scaled(layers=2, d_model=64, heads=4, kv_heads=2, head_dim=16)
    assert qwen.qkv_bias and qwen.norm_eps == 1e-6 and qwen.published_params is None
    shapes = jax.eval_shape(
        get_model("qwen2.5-7b", layers=2, d_model=64, heads=4, kv_heads=2, head_dim=16, ffn=96,
                  vocab=128, seq=32).init_params,
        jax.random.key(0),
    )  # fmt: skip
    assert count_params(shapes) == param_count(qwen.scaled(ffn=96, vocab=128))
    tied = CONFIGS["llama2-7b"].scaled(tied_embeddings=True)
    assert param_count(CONFIGS["llama2-7b"]) - param_count(tied) == 32000 * 4096


def test_default_sizes_of_a_published_model() -> None:
    sizes = default_sizes("llama3.1-8b")
    assert (sizes["layers"], sizes["d_model"], sizes["seq"], sizes["remat"]) == (
        32, 4096, 8192, "full",
    )  # fmt: skip
    assert default_sizes("llama2-7b")["seq"] == 4096  # capped at Llama 2's context


def test_unknown_model_name_lists_the_known_ones() -> None:
    with pytest.raises(ShardvizError, match="no built-in model 'llama4'") as err:
        get_model("llama4")
    for name in (*ARCH_NAMES, "mlp", "Fix:"):
        assert repr(name) in str(err.value) or name in str(err.value)
    with pytest.raises(ShardvizError, match="no published architecture 'gpt3'.*llama3.1-8b"):
        get_config("gpt3")


@pytest.mark.parametrize(
    ("sizes", "match"),
    [
        ({"hidden": 3}, "unknown size.*hidden.*Fix: use only layers, d_model"),
        ({"heads": 6}, "heads=6 does not divide by kv_heads=8.*Fix: pick kv_heads"),
        ({"seq": 100, "attention_block": 64}, "seq=100 does not divide into attention blocks"),
        ({"seq": 96, "loss_chunk": 64}, "seq=96 does not divide into loss chunks of 64"),
        ({"remat": "some"}, "remat='some' is not a remat policy.*'offload'"),
        ({"batch": 0}, "batch=0 is not a whole number >= 1. Fix: pass batch=8"),
        ({"compute_dtype": "float7"}, "compute_dtype='float7' is not a dtype"),
        ({"experts": 2}, "experts=2, experts_per_token=0 do not fit"),
    ],
)
def test_bad_overrides(sizes: dict, match: str) -> None:
    with pytest.raises(ShardvizError, match=match):
        get_model("llama3.1-8b", **sizes)


def test_scaled_rejects_unknown_fields() -> None:
    with pytest.raises(ShardvizError, match="unknown field.*hidden"):
        CONFIGS["llama2-7b"].scaled(hidden=3)
