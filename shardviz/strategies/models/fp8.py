"""fp8 training matmuls, as the recipes' ``quantization: fp8_full`` runs them.

A weight matmul takes both operands in fp8 E4M3 (activations and weights, clipped to its
range, one fixed scale of 1: MaxText's recipes calibrate with a fixed range too) and gives
its result in the compute dtype; its backward matmuls take the incoming gradient in fp8 E5M2
(wider range, fewer digits) against the saved E4M3 operands. Every matmul of a layer's
projections, MLP and experts then has two fp8 operands, which a chip with an fp8 peak runs at
that peak (:meth:`shardviz.model.Hardware.peak_for`); attention's own matmuls and the
output head stay in the compute dtype.

Why a ``custom_vjp``: differentiating ``einsum(x.astype(f8), w.astype(f8))`` would give the
backward matmuls one bf16 and one fp8 operand, which the compiler widens, so the backward pass
(two thirds of the flops) would run at the bf16 peak.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["QUANTIZATIONS", "fp8_einsum", "fp8_ragged_dot", "matmul"]

#: The matmul precisions the decoder takes, with what each means.
QUANTIZATIONS: dict[str, str] = {
    "": "every matmul in the compute dtype",
    "fp8": "the layers' weight matmuls in fp8 (E4M3 forward, E5M2 gradients), as MaxText's "
    "fp8_full; attention's matmuls and the output head in the compute dtype",
}

E4M3 = jnp.float8_e4m3fn
E5M2 = jnp.float8_e5m2


def _fp8(x: jax.Array, dtype: Any) -> jax.Array:
    """``x`` in ``dtype``, clipped to its range (an fp8 cast overflows to NaN)."""
    big = float(jnp.finfo(dtype).max)
    return jnp.clip(x, -big, big).astype(dtype)


def _parts(spec: str) -> tuple[str, str, str]:
    inputs, out = spec.replace(" ", "").split("->")
    a, b = inputs.split(",")
    return a, b, out


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def fp8_einsum(spec: str, x: jax.Array, w: jax.Array) -> jax.Array:
    """``einsum(spec, x, w)`` with both operands in E4M3, the result in ``x``'s dtype; the
    gradients of both through E5M2 x E4M3 matmuls. Every index of ``spec`` must be in two of
    its three parts (a matmul: no index summed within one operand)."""
    return _forward(spec, x, w)[0]


def _forward(spec: str, x: jax.Array, w: jax.Array) -> tuple[jax.Array, tuple]:
    qx, qw = _fp8(x, E4M3), _fp8(w, E4M3)
    out = jnp.einsum(spec, qx, qw, preferred_element_type=x.dtype)
    # The fp8 operands are what the backward pass keeps (half a bf16 activation's bytes),
    # and a zero of each input's dtype, to give the gradients those dtypes.
    return out, (qx, qw, jnp.zeros((), x.dtype), jnp.zeros((), w.dtype))


def _backward(spec: str, saved: tuple, g: jax.Array) -> tuple[jax.Array, jax.Array]:
    qx, qw, x_zero, w_zero = saved
    a, b, out = _parts(spec)
    qg = _fp8(g, E5M2)
    dx = jnp.einsum(f"{out},{b}->{a}", qg, qw, preferred_element_type=x_zero.dtype)
    dw = jnp.einsum(f"{a},{out}->{b}", qx, qg, preferred_element_type=w_zero.dtype)
    return dx, dw


fp8_einsum.defvjp(_forward, _backward)

#: The weights' gradient of a grouped matmul: rows [M, K] against gradients [M, N],
#: contracting the ragged row dim, one [K, N] block per group.
_RAGGED_CONTRACTING = jax.lax.RaggedDotDimensionNumbers(
    dot_dimension_numbers=(([0], [0]), ([], [])),
    lhs_ragged_dimensions=[0],
    rhs_group_dimensions=[],
)


@jax.custom_vjp
def fp8_ragged_dot(rows: jax.Array, w: jax.Array, sizes: jax.Array) -> jax.Array:
    """``jax.lax.ragged_dot(rows [M, K], w [G, K, N], sizes [G])`` (a dropless MoE's grouped
    matmul) the way :func:`fp8_einsum` runs a dense one: E4M3 operands, the result in
    ``rows``' dtype, and both gradients through E5M2 x E4M3 grouped matmuls."""
    return _ragged_forward(rows, w, sizes)[0]


def _ragged_forward(rows: jax.Array, w: jax.Array, sizes: jax.Array) -> tuple[jax.Array, tuple]:
    qx, qw = _fp8(rows, E4M3), _fp8(w, E4M3)
    out = jax.lax.ragged_dot(qx, qw, sizes, preferred_element_type=rows.dtype)
    return out, (qx, qw, sizes, jnp.zeros((), rows.dtype), jnp.zeros((), w.dtype))


def _ragged_backward(saved: tuple, g: jax.Array) -> tuple[jax.Array, jax.Array, None]:
    qx, qw, sizes, x_zero, w_zero = saved
    qg = _fp8(g, E5M2)
    dx = jax.lax.ragged_dot(qg, jnp.swapaxes(qw, 1, 2), sizes, preferred_element_type=x_zero.dtype)
    dw = jax.lax.ragged_dot_general(
        qx, qg, sizes, _RAGGED_CONTRACTING, preferred_element_type=w_zero.dtype
    )
    return dx, dw, None


fp8_ragged_dot.defvjp(_ragged_forward, _ragged_backward)


def matmul(quantization: str) -> Any:
    """The einsum a layer's weight matmuls use under ``quantization`` (:data:`QUANTIZATIONS`)."""
    return fp8_einsum if quantization == "fp8" else jnp.einsum
