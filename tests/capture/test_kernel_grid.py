"""A Pallas kernel's flops counted from its body over its grid, against hand counts:
conditions on the program ids, on a known scalar-prefetch block map, on unknown data, and
loops inside the body. Traced only (``jax.make_jaxpr``): nothing is compiled."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from shardviz.capture.hlo.kernels import kernel_key
from shardviz.capture.kernel_costs import hlo_type, kernel_table, model_share
from shardviz.capture.kernel_grid import count_kernel

B = 128  # block edge
DOT = 2.0 * B * B * B  # one [B, B] x [B, B] block matmul


def _pallas_eqn(fn, *args):
    closed = jax.make_jaxpr(fn)(*args)
    eqns = [e for e in closed.jaxpr.eqns if e.primitive.name == "pallas_call"]
    assert len(eqns) == 1
    return closed, eqns[0]


def _lower_triangle(n: int):
    """A [n*B, n*B] kernel that multiplies a block only on and below the diagonal."""

    def kernel(x_ref, y_ref, o_ref):
        i, j = pl.program_id(0), pl.program_id(1)

        @pl.when(j <= i)
        def _():
            o_ref[...] = jnp.dot(x_ref[...], y_ref[...])

    spec = pl.BlockSpec((B, B), lambda i, j: (i, j))
    return pl.pallas_call(
        kernel, grid=(n, n), in_specs=[spec, spec], out_specs=spec,
        out_shape=jax.ShapeDtypeStruct((n * B, n * B), jnp.float32),
    )  # fmt: skip


@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 6))
def test_program_id_condition_counts_the_triangle(n: int) -> None:
    x = jnp.zeros((n * B, n * B), jnp.float32)
    _, eqn = _pallas_eqn(_lower_triangle(n), x, x)
    count = count_kernel(eqn.params["jaxpr"], eqn.params["grid_mapping"].grid, [])
    assert count.flops == DOT * n * (n + 1) // 2
    assert count.dense == DOT * n * n
    assert not count.bounded


def _block_map_kernel(n: int, loop: int = 1):
    """A kernel that computes block (i, j) where a scalar-prefetch map says so, ``loop``
    times (a fori_loop inside the body)."""

    def kernel(map_ref, x_ref, y_ref, o_ref):
        i, j = pl.program_id(0), pl.program_id(1)

        @pl.when(map_ref[i, j] > 0)
        def _():
            def body(_, acc):
                return acc + jnp.dot(x_ref[...], y_ref[...])

            o_ref[...] = jax.lax.fori_loop(0, loop, body, jnp.zeros((B, B), jnp.float32))

    spec = pl.BlockSpec((B, B), lambda i, j, m: (i, j))
    return pl.pallas_call(
        kernel,
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(n, n), in_specs=[spec, spec], out_specs=spec
        ),
        out_shape=jax.ShapeDtypeStruct((n * B, n * B), jnp.float32),
    )


@settings(max_examples=10, deadline=None)
@given(
    blocks=st.lists(st.booleans(), min_size=9, max_size=9),
    loop=st.integers(1, 3),
)
def test_known_block_map_counts_its_blocks(blocks: list[bool], loop: int) -> None:
    block_map = np.array(blocks, np.int32).reshape(3, 3)
    call = _block_map_kernel(3, loop)
    x = jnp.zeros((3 * B, 3 * B), jnp.float32)

    def program(x):  # the map is a constant of the program, as splash attention's is
        return call(jnp.asarray(block_map), x, x)

    closed, eqn = _pallas_eqn(program, x)
    table = kernel_table(closed)
    (key,) = table
    assert table[key].flops == DOT * loop * int(block_map.sum())
    assert table[key].how == "counted"
    assert key == kernel_key(key[0], [hlo_type(v.aval) for v in eqn.invars])


def test_unknown_block_map_is_an_upper_bound() -> None:
    call = _block_map_kernel(3)
    x = jnp.zeros((3 * B, 3 * B), jnp.float32)
    closed, _ = _pallas_eqn(call, jnp.zeros((3, 3), jnp.int32), x, x)  # an argument: unknown
    (count,) = kernel_table(closed).values()
    assert count.how == "bounded"
    assert count.flops == DOT * 9


def test_argument_values_given_make_it_exact() -> None:
    call = _block_map_kernel(3)
    x = jnp.zeros((3 * B, 3 * B), jnp.float32)
    block_map = np.eye(3, dtype=np.int32)
    closed, _ = _pallas_eqn(call, block_map, x, x)
    (count,) = kernel_table(closed, [block_map, None, None]).values()
    assert count.how == "counted" and count.flops == DOT * 3


def test_data_dependent_loop_is_named_not_counted() -> None:
    def kernel(n_ref, x_ref, o_ref):
        def body(carry):
            k, acc = carry
            return k + 1, acc + jnp.dot(x_ref[...], x_ref[...])

        _, o_ref[...] = jax.lax.while_loop(
            lambda c: c[0] < n_ref[0], body, (0, jnp.zeros((B, B), jnp.float32))
        )

    spec = pl.BlockSpec((B, B), lambda i, n: (0, 0))
    call = pl.pallas_call(
        kernel,
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(2,), in_specs=[spec], out_specs=spec
        ),
        out_shape=jax.ShapeDtypeStruct((B, B), jnp.float32),
    )
    x = jnp.zeros((B, B), jnp.float32)
    closed, _ = _pallas_eqn(call, jnp.zeros((1,), jnp.int32), x)
    (count,) = kernel_table(closed).values()
    assert count.flops is None and count.how == "not counted"
    assert "data" in count.why
    (known,) = kernel_table(closed, [np.array([5], np.int32), None]).values()
    assert known.flops == DOT * 5 * 2  # 5 trips at each of the 2 grid points


def test_a_declared_kernel_is_counted_from_its_body_too() -> None:
    """An author's estimate may ignore what a mask skips: the body's count is kept, and
    the compiled side prefers it to the declared figure."""
    call = pl.pallas_call(
        lambda x_ref, o_ref: o_ref.__setitem__(..., jnp.dot(x_ref[...], x_ref[...])),
        out_shape=jax.ShapeDtypeStruct((B, B), jnp.float32),
        cost_estimate=pl.CostEstimate(flops=123, transcendentals=0, bytes_accessed=0),
    )
    closed, _ = _pallas_eqn(call, jnp.zeros((B, B), jnp.float32))
    (count,) = set(kernel_table(closed).values())
    assert count.flops == DOT and count.how == "counted"


@pytest.mark.parametrize(
    ("name", "dots", "share"),
    [
        ("splash_mha_fwd_residuals", [1.0] * 2, 1.0),
        ("splash_mha_dkv_no_residuals", [1.0] * 5, 0.8),  # fused: dq too; Q K^T recomputed
        ("splash_mha_dkv_no_residuals", [1.0] * 4, 0.75),
        ("splash_mha_dq_no_residuals", [1.0] * 3, 1 / 3),  # Q K^T and dP recomputed
        ("flash_mha_bwd_dkv_block_q_major_128", [1.0] * 4, 0.75),
        ("ragged_paged_attention_kernel", [1.0] * 2, None),  # counted as computed
        ("my_matmul", [1.0], None),
        # MLA: Q K^T and dK 192 wide, P V, dP and dV 128 wide: by flops, not by count.
        ("flash_backward_dkv", [192.0, 128.0, 128.0, 192.0], 448 / 640),
        ("flash_backward_dq", [192.0, 128.0, 192.0], 192 / 512),
        # Whole-backward kernels, by flops too: one loop recomputes Q K^T (192 wide); jax's
        # GPU kernel's two recompute Q K^T twice and dP (128 wide) once.
        ("mha_backward", [192.0, 128.0, 128.0, 192.0, 192.0], 640 / 832),
        ("mha_backward", [192.0, 128.0, 128.0, 192.0, 192.0, 128.0, 192.0], 640 / 1152),
        ("mha_backward", [1.0] * 7, 4 / 7),
        ("attention_bwd", [1.0] * 6, 4 / 6),  # another layout: by count
        # A sliding window's kernels compute their band (2 blocks of 1,024 keys), the field
        # counts the window (1,024): half, on top of the kernel's own share.
        ("flash_forward_window_1024_of_2048", [1.0] * 2, 0.5),
        ("flash_backward_dkv_window_1024_of_2048", [192.0, 128.0, 128.0, 192.0], 224 / 640),
        ("flash_backward_dq_window_20_of_32", [1.0] * 3, 20 / 96),
        ("my_matmul_window_16_of_32", [1.0], None),
        ("flash_forward_chunk_8192_of_8704", [1.0] * 2, 8192 / 8704),  # Llama 4's chunks
    ],
)
def test_model_share_follows_the_attention_convention(name, dots, share) -> None:
    assert model_share(name, dots) == (pytest.approx(share) if share is not None else None)


def test_grid_of_unknown_size_is_not_counted() -> None:
    count = count_kernel(None, (2, object()), [])  # type: ignore[arg-type]
    assert count.flops is None and "grid" in count.why


def test_a_body_the_count_cannot_follow_is_named(monkeypatch) -> None:
    import shardviz.capture.kernel_costs as kc

    def broken(*_a, **_k):
        raise RuntimeError("an op it has never seen")

    monkeypatch.setattr(kc, "count_kernel", broken)
    x = jnp.zeros((2 * B, 2 * B), jnp.float32)
    closed, _ = _pallas_eqn(_lower_triangle(2), x, x)
    (count,) = set(kc.kernel_table(closed).values())
    assert count.flops is None and count.how == "not counted"
    assert "could not read its body" in count.why and "never seen" in count.why
