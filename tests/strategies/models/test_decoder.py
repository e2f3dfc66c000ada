"""The decoder: remat policies, chunking and blocks change nothing but memory; it trains."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shardviz.strategies.models import ACTIVATION_AXES, decoder_model
from shardviz.strategies.zoo import get_model, init_train_state, make_train_step

from .small import compiled, small


def loss_and_grads(name: str, **changes):
    model = get_model(name, **small(name, **changes))
    params, _, batch = init_train_state(model, jax.random.key(0))
    return compiled(jax.value_and_grad(model.loss), params, batch)(params, batch)


def assert_close(a, b, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(a[0], b[0], rtol=rtol)
    for x, y in zip(jax.tree.leaves(a[1]), jax.tree.leaves(b[1]), strict=True):
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


@pytest.fixture(scope="module")
def llama_reference():
    """The reduced Llama's loss and grads: no remat, one loss chunk, attention blocks of 16."""
    return loss_and_grads("llama3.1-8b", remat="none", loss_chunk=64)


@pytest.mark.parametrize(
    ("remat", "pieces"),
    [
        ("full", {"loss_chunk": 16, "attention_block": 32}),
        ("save_matmuls", {}),
        ("offload", {"attention_block": 64}),
    ],
)
def test_remat_policies_chunks_and_blocks_give_the_same_loss_and_grads(
    llama_reference, remat: str, pieces: dict
) -> None:
    assert_close(loss_and_grads("llama3.1-8b", remat=remat, **pieces), llama_reference)


def test_initial_loss_is_near_log_vocab(llama_reference) -> None:
    """Unit-variance logits over 256 tokens: about log(256) + 1/2 before training."""
    assert abs(float(llama_reference[0]) - (np.log(256) + 0.5)) < 1.0


def test_bf16_compute_is_close_and_grads_are_float32(llama_reference) -> None:
    model = get_model("llama3.1-8b", **small("llama3.1-8b", compute_dtype="bfloat16"))
    params, _, batch = init_train_state(model, jax.random.key(0))
    loss = compiled(model.loss, params, batch)(params, batch)
    np.testing.assert_allclose(loss, llama_reference[0], rtol=2e-2)
    grads = jax.eval_shape(jax.grad(model.loss), params, batch)
    assert {str(g.dtype) for g in jax.tree.leaves(grads)} == {"float32"}


def test_the_compute_dtype_reaches_the_matmuls() -> None:
    model = get_model("llama3.1-8b", **small("llama3.1-8b", compute_dtype="bfloat16"))
    params, _, batch = jax.eval_shape(lambda k: init_train_state(model, k), jax.random.key(0))
    text = jax.jit(model.loss).lower(params, batch).as_text()
    assert "bf16" in text and "dot_general" in text


def test_twenty_adam_steps_lower_the_loss() -> None:
    """Mixtral reduced learns its counting sequences (routing and experts train)."""
    model = get_model("mixtral-8x7b", **small("mixtral-8x7b"))
    params, opt_state, batch = init_train_state(model, jax.random.key(0))
    step = compiled(make_train_step(model), params, opt_state, batch)
    losses = []
    for _ in range(20):
        params, opt_state, loss = step(params, opt_state, batch)
        losses.append(float(loss))
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.8 * losses[0], losses


def test_every_named_activation_is_constrained() -> None:
    seen: dict[str, tuple[int, ...]] = {}

    def record(name: str, x: jax.Array) -> jax.Array:
        seen[name] = tuple(x.shape)
        return x

    for name in ("llama3.1-8b", "mixtral-8x7b"):
        model = get_model(name, **small(name))
        state = jax.eval_shape(lambda k, m=model: init_train_state(m, k), jax.random.key(0))
        jax.eval_shape(model.constrained(record).loss, state[0], state[2])
    # The dropless layer's shard map reads these as specs (its in-specs), never pins them:
    # tests/strategies/models/test_dropless.py holds them.
    spec_only = {"moe_tokens", "expert_w_in", "expert_w_out"}
    assert set(seen) == set(ACTIVATION_AXES) - spec_only
    for name, axes in ACTIVATION_AXES.items():
        assert name in spec_only or len(seen[name]) == len(axes), name
    assert seen["query"] == (8, 64, 8, 16) and seen["key"] == (8, 64, 4, 16)
    assert seen["dispatched"] == (4, 16, 32, 64)  # experts, groups, capacity 2*2*32/4, embed
    assert seen["logits"] == (8, 32, 256)  # one chunk


def test_moe_aux_loss_is_added() -> None:
    name = "mixtral-8x7b"
    model = decoder_model(name, **small(name, layers=1))
    plain = decoder_model(model.config.scaled(router_aux_loss_coef=0.0), **small(name, layers=1))
    params = model.init_params(jax.random.key(0))
    batch = model.make_batch(jax.random.key(1))

    def both(p, b):
        return model.loss(p, b), plain.loss(p, b)

    with_aux, without = compiled(both, params, batch)(params, batch)
    # the load-balancing loss is about 1 (uniform routing); weighted by Mixtral's 0.02
    assert 0.01 < float(with_aux - without) < 0.05


def test_qwen_biases_get_gradients() -> None:
    model = get_model("qwen2.5-7b", **small("qwen2.5-7b", layers=1))
    params, _, batch = init_train_state(model, jax.random.key(0))
    grads = compiled(jax.grad(model.loss), params, batch)(params, batch)["layers"]["attn"]
    assert all(float(jnp.max(jnp.abs(grads[b]))) > 0 for b in ("bq", "bk", "bv"))


def test_qwen3_qk_norm_scales_get_gradients_and_change_the_loss() -> None:
    """Each query and key head is RMS-normalised over its width: the scales learn, and a
    query scale of 2 is a sharper softmax, a different loss."""
    model = get_model("qwen3-8b", **small("qwen3-8b", layers=1))
    params, _, batch = init_train_state(model, jax.random.key(0))
    grads = compiled(jax.grad(model.loss), params, batch)(params, batch)["layers"]["attn"]
    assert all(float(jnp.max(jnp.abs(grads[n]))) > 0 for n in ("q_norm", "k_norm"))
    loss = compiled(model.loss, params, batch)
    sharper = jax.tree.map(lambda x: x, params)
    sharper["layers"]["attn"]["q_norm"] = 2 * params["layers"]["attn"]["q_norm"]
    assert float(loss(sharper, batch)) != pytest.approx(float(loss(params, batch)), abs=1e-6)


def test_tied_embeddings_use_the_embedding_as_head() -> None:
    config = decoder_model("llama2-7b").config.scaled(tied_embeddings=True)
    model = decoder_model(config, **small("llama2-7b"))
    params, batch = model.abstract()
    assert "unembed" not in params
    assert jax.eval_shape(model.loss, params, batch).shape == ()


def test_decoder_model_facts() -> None:
    model = decoder_model("llama3.1-8b", layers=2, seq=1024)
    info = model.info()
    assert info["layers"] == 2 and info["seq"] == 1024 and info["remat"] == "full"
    assert info["compute_dtype"] == "bfloat16" and info["dtype"] == "float32"
    assert info["config"].published_params is None  # scaled
    params, batch = model.abstract()
    assert params["layers"]["attn"]["wq"].shape == (2, 4096, 32, 128)
    assert batch["inputs"].shape == (8, 1024) and batch["inputs"].dtype == jnp.int32
    assert "llama3.1-8b" in model.description()
