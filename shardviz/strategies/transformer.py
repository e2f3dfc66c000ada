"""A decoder-only transformer in plain jax: causal multi-head attention, MLP, layer norm, residuals.

Parameters are nested dicts of arrays with stable leaf paths, so sharding rules can match them
by regular expression::

    embed                    [vocab, d_model]          token embedding
    pos                      [seq, d_model]            learned positions
    layers/<i>/ln1/{scale,bias}        [d_model]
    layers/<i>/attn/{wq,wk,wv}         [d_model, heads, head_dim]   heads dim explicit: split it
    layers/<i>/attn/wo                 [heads, head_dim, d_model]   for Megatron attention
    layers/<i>/ln2/{scale,bias}        [d_model]
    layers/<i>/mlp/w_in                [d_model, d_ff]              column-split in Megatron
    layers/<i>/mlp/w_out               [d_ff, d_model]              row-split in Megatron
    ln_f/{scale,bias}        [d_model]
    unembed                  [d_model, vocab]

Blocks are pre-norm: ``x + attn(ln1(x))`` then ``x + mlp(ln2(x))``. The loss is next-token
cross-entropy. :func:`forward` calls an optional ``constrain(name, array)`` hook on the named
activations in :data:`ACTIVATIONS`, so a strategy (sequence parallelism, say) can pin their
shardings; by default the hook does nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Params = dict[str, Any]
Batch = dict[str, jax.Array]
Constrain = Callable[[str, jax.Array], jax.Array]

#: Activation names passed to the ``constrain`` hook, with their shapes
#: (B batch, T seq, D d_model, H heads, K head_dim, F d_ff, V vocab). Names inside a layer are
#: the same for every layer.
ACTIVATIONS: dict[str, str] = {
    "embed": "[B, T, D] token + position embedding",
    "attn_in": "[B, T, D] ln1 output, the attention input",
    "attn_qkv": "[B, T, H, K] queries, keys and values (called once for each)",
    "attn_heads": "[B, T, H, K] attention output per head, before wo",
    "attn_out": "[B, T, D] attention output after wo, before the residual add",
    "residual": "[B, T, D] the residual stream after each add (twice per layer)",
    "mlp_in": "[B, T, D] ln2 output, the MLP input",
    "mlp_hidden": "[B, T, F] MLP hidden activations after gelu",
    "mlp_out": "[B, T, D] MLP output, before the residual add",
    "final": "[B, T, D] ln_f output",
    "logits": "[B, T, V] output logits",
}


def no_constraint(name: str, x: jax.Array) -> jax.Array:
    """The default ``constrain`` hook: returns ``x`` unchanged."""
    del name
    return x


def init_params(
    key: jax.Array,
    *,
    vocab: int,
    d_model: int,
    heads: int,
    d_ff: int,
    layers: int,
    seq: int,
    dtype: Any = jnp.float32,
) -> Params:
    """Random weights, each matrix scaled by 1/sqrt(fan-in); layer norms start at scale 1, bias 0.

    Args:
      key: a jax PRNG key.
      vocab, d_model, heads, d_ff, layers, seq: model sizes; ``d_model`` must divide by ``heads``.
      dtype: parameter dtype.

    Returns:
      The parameter tree described in the module docstring.
    """
    head_dim = d_model // heads
    shapes = {
        "embed": (vocab, d_model),
        "pos": (seq, d_model),
        "wq": (d_model, heads, head_dim),
        "wk": (d_model, heads, head_dim),
        "wv": (d_model, heads, head_dim),
        "wo": (heads, head_dim, d_model),
        "w_in": (d_model, d_ff),
        "w_out": (d_ff, d_model),
        "unembed": (d_model, vocab),
    }
    fan_in = {"w_out": d_ff}  # every other matrix reads d_model inputs
    order = ["embed", "pos"] + ["wq", "wk", "wv", "wo", "w_in", "w_out"] * layers + ["unembed"]
    draws = iter(split_normal(key, [shapes[n] for n in order]))

    def normal(name: str) -> jax.Array:
        return (next(draws) / jnp.sqrt(fan_in.get(name, d_model))).astype(dtype)

    def norm() -> dict[str, jax.Array]:
        return {"scale": jnp.ones((d_model,), dtype), "bias": jnp.zeros((d_model,), dtype)}

    params: Params = {
        "embed": normal("embed"),
        "pos": normal("pos"),
        "layers": [],
    }
    for _ in range(layers):
        params["layers"].append(
            {
                "ln1": norm(),
                "attn": {
                    "wq": normal("wq"),
                    "wk": normal("wk"),
                    "wv": normal("wv"),
                    "wo": normal("wo"),
                },
                "ln2": norm(),
                "mlp": {
                    "w_in": normal("w_in"),
                    "w_out": normal("w_out"),
                },
            }
        )
    params["ln_f"] = norm()
    params["unembed"] = normal("unembed")
    return params


def split_normal(key: jax.Array, shapes: list[tuple[int, ...]]) -> list[jax.Array]:
    """Standard normals of the given shapes from ONE draw, cut in order.

    One draw compiles once; a draw per leaf compiles a random generator per leaf (seconds).
    """
    sizes = [math.prod(shape) for shape in shapes]
    flat = jax.random.normal(key, (sum(sizes),), jnp.float32)
    out, start = [], 0
    for shape, size in zip(shapes, sizes, strict=True):
        out.append(flat[start : start + size].reshape(shape))
        start += size
    return out


def make_batch(key: jax.Array, *, batch: int, seq: int, vocab: int) -> Batch:
    """Token sequences that count up with a random start and stride, so the model can learn them.

    Returns:
      ``{"inputs": int32[batch, seq], "targets": int32[batch, seq]}``, where ``targets`` is
      ``inputs`` shifted by one token (both have length ``seq``, so ``seq`` splits evenly).
    """
    start, stride = jax.random.randint(key, (2, batch, 1), 0, vocab)
    stride = 1 + stride % 3
    tokens = (start + stride * jnp.arange(seq + 1)[None, :]) % vocab
    tokens = tokens.astype(jnp.int32)
    return {"inputs": tokens[:, :-1], "targets": tokens[:, 1:]}


def layer_norm(p: dict[str, jax.Array], x: jax.Array, eps: float = 1e-5) -> jax.Array:
    """Layer norm over the last dim, computed in float32, returned in ``x``'s dtype."""
    xf = x.astype(jnp.float32)
    mean = jnp.mean(xf, axis=-1, keepdims=True)
    var = jnp.var(xf, axis=-1, keepdims=True)
    y = (xf - mean) * jax.lax.rsqrt(var + eps)
    return (y * p["scale"] + p["bias"]).astype(x.dtype)


def attention(p: Params, x: jax.Array, constrain: Constrain = no_constraint) -> jax.Array:
    """Causal multi-head self-attention: ``[B, T, D] -> [B, T, D]``."""
    q = constrain("attn_qkv", jnp.einsum("btd,dhk->bthk", x, p["wq"]))
    k = constrain("attn_qkv", jnp.einsum("btd,dhk->bthk", x, p["wk"]))
    v = constrain("attn_qkv", jnp.einsum("btd,dhk->bthk", x, p["wv"]))
    head_dim = q.shape[-1]
    scores = jnp.einsum("bthk,bshk->bhts", q, k).astype(jnp.float32) / jnp.sqrt(head_dim)
    t = x.shape[1]
    causal = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(causal, scores, jnp.finfo(jnp.float32).min)
    weights = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    heads = constrain("attn_heads", jnp.einsum("bhts,bshk->bthk", weights, v))
    return constrain("attn_out", jnp.einsum("bthk,hkd->btd", heads, p["wo"]))


def mlp(p: Params, x: jax.Array, constrain: Constrain = no_constraint) -> jax.Array:
    """The position-wise MLP: ``gelu(x @ w_in) @ w_out``."""
    hidden = constrain("mlp_hidden", jax.nn.gelu(x @ p["w_in"]))
    return constrain("mlp_out", hidden @ p["w_out"])


def decoder_layer(p: Params, x: jax.Array, constrain: Constrain = no_constraint) -> jax.Array:
    """One pre-norm decoder block: attention then MLP, each with a residual add."""
    x = constrain(
        "residual",
        x + attention(p["attn"], constrain("attn_in", layer_norm(p["ln1"], x)), constrain),
    )
    x = constrain(
        "residual", x + mlp(p["mlp"], constrain("mlp_in", layer_norm(p["ln2"], x)), constrain)
    )
    return x


def forward(params: Params, inputs: jax.Array, constrain: Constrain = no_constraint) -> jax.Array:
    """Logits ``[B, T, vocab]`` for int tokens ``inputs: [B, T]`` (T at most the trained ``seq``)."""
    t = inputs.shape[1]
    x = constrain("embed", params["embed"][inputs] + params["pos"][:t])
    for layer in params["layers"]:
        x = decoder_layer(layer, x, constrain)
    x = constrain("final", layer_norm(params["ln_f"], x))
    return constrain("logits", x @ params["unembed"])


def loss_fn(params: Params, batch: Batch, constrain: Constrain = no_constraint) -> jax.Array:
    """Mean next-token cross-entropy, computed in float32."""
    logits = forward(params, batch["inputs"], constrain).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, batch["targets"][..., None], axis=-1)
    return -jnp.mean(picked)
