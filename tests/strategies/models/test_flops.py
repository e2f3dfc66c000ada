"""The published convention's model flops (``training_flops``) against hand counts, and
against shardviz's own count of the compiled zoo model: the matmuls of the program, what
``jax.checkpoint`` and FlashAttention's backward recompute counted apart."""

from __future__ import annotations

import pytest

from shardviz.strategies.models.configs import get_config
from shardviz.strategies.models.flops import training_flops

from .small import formula, step_cost


def test_llama_3_1_8b_and_70b_flops_per_token_are_the_published_convention() -> None:
    # 6 x matmul weights (the input embedding is a lookup) + attention's two matmuls x 3.
    c = get_config("llama3.1-8b")
    f = training_flops(c, tokens=1, seq=8192)
    per_layer = 4096 * 128 * (2 * 32 + 2 * 8) + 3 * 4096 * 14336
    assert f.weights == 6 * (32 * per_layer + 4096 * 128256)
    assert f.attention == 3 * 32 * 4 * 8192 * 32 * 128
    # The scaling book's LLaMA-3 70B figure: about 4.2e11 flops per token at 4096 tokens
    # (6 x 70.4e9 = 4.2e11; attention adds a few percent at 8192).
    seventy = training_flops(get_config("llama3.1-70b"), tokens=1, seq=4096)
    assert seventy.weights == pytest.approx(4.2e11, rel=0.02)
    assert training_flops(c, 1, 8192, causal_half=True).attention == f.attention / 2


def test_mixtral_counts_its_router_and_two_of_eight_experts() -> None:
    c = get_config("mixtral-8x7b")
    f = training_flops(c, tokens=1, seq=4096)
    per_layer = 4096 * 128 * (2 * 32 + 2 * 8) + 2 * 3 * 4096 * 14336 + 4096 * 8
    assert f.weights == 6 * (32 * per_layer + 4096 * 32000)


@pytest.mark.parametrize("remat", ["none", "full"])
def test_the_compiled_zoo_models_model_flops_are_the_formulas(remat) -> None:
    # One sequence per device: the step's matmuls, recomputation apart, are exactly the
    # published convention's count (attention computed in full, masked blocks included).
    # value_and_grad, as a train step: with grad alone XLA drops the forward's logits, and
    # this test passed only because a recomputed attention matmul XLA:CPU fused without
    # metadata was taken for the model's, the same 2,097,152 flops at these sizes.
    cost, r, model = step_cost("llama3.1-8b", batch=1, remat=remat)
    want = formula(model)
    assert cost.model_flops_per_device == pytest.approx(want, rel=1e-9)
    recomputed = cost.recomputed_flops_per_device or 0
    # The chunked loss recomputes its logits and FlashAttention's backward its scores even
    # without remat; "full" also recomputes every layer's forward.
    assert recomputed > 0
    if remat == "full":
        assert recomputed > 0.2 * want


def test_an_moe_layers_dispatch_is_data_movement_and_its_experts_the_formula() -> None:
    """Mixtral reduced at capacity factor 1 (each expert's slots exactly its share of the
    top-2 picks): the model flops are the formula's (router + two experts per token);
    the one-hot dispatch and combine einsums are counted apart, as hardware flops."""
    cost, r, model = step_cost("mixtral-8x7b", batch=1, remat="none", capacity_factor=1.0)
    assert cost.dispatch_flops_per_device
    want = formula(model)
    assert cost.model_flops_per_device == pytest.approx(want, rel=1e-9)
    assert "dispatch" in str(r)
