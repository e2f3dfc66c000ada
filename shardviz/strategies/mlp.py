"""A two-layer MLP and its training step, in plain jax: the smallest model with every collective.

``relu(x @ w1 + b1) @ w2 + b2`` against a regression target, trained with plain SGD. The
strategy rules of :mod:`shardviz.strategies` place its parameters; the compiler does the rest.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

Params = dict[str, jax.Array]


def init_params(key: jax.Array, d_model: int, d_hidden: int, dtype: Any = jnp.float32) -> Params:
    """Weights scaled by 1/sqrt(fan-in), biases zero."""
    k1, k2 = jax.random.split(key)
    return {
        "w1": (jax.random.normal(k1, (d_model, d_hidden)) / jnp.sqrt(d_model)).astype(dtype),
        "b1": jnp.zeros((d_hidden,), dtype),
        "w2": (jax.random.normal(k2, (d_hidden, d_model)) / jnp.sqrt(d_hidden)).astype(dtype),
        "b2": jnp.zeros((d_model,), dtype),
    }


def make_batch(key: jax.Array, batch: int, d_model: int, dtype: Any = jnp.float32) -> dict:
    kx, ky = jax.random.split(key)
    return {
        "x": jax.random.normal(kx, (batch, d_model), dtype),
        "y": jax.random.normal(ky, (batch, d_model), dtype),
    }


def forward(params: Params, x: jax.Array) -> jax.Array:
    h = jax.nn.relu(x @ params["w1"] + params["b1"])  # first matmul (column-split in Megatron)
    return h @ params["w2"] + params["b2"]  # second matmul (row-split: partial sums)


def loss_fn(params: Params, batch: dict) -> jax.Array:
    pred = forward(params, batch["x"])
    return jnp.mean((pred - batch["y"]) ** 2)


def train_step(params: Params, batch: dict, lr: float = 1e-2) -> tuple[Params, jax.Array]:
    """One SGD step: forward, backward, update. Returns new parameters and the loss."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    new = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    return new, loss
