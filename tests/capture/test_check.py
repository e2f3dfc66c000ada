"""The one-device check runs exactly the function the user passed, and compares outputs as
values: NaN and infinities included, complex by the magnitude of the difference, integers
exactly, every float type (bf16, float8 too) with its own tolerance."""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.capture.run import difference, tolerance_rule

MESH = jax.sharding.Mesh(np.array(jax.devices()[:8]), ("data",))


def placed(x, spec=("data",)):
    return jax.device_put(x, NamedSharding(MESH, P(*spec)))


W = placed(jnp.linspace(-1.0, 1.0, 64).reshape(8, 8), (None, "data"))
X = placed(jnp.linspace(0.5, 1.5, 128).reshape(16, 8))


def loss(w, x):
    return jnp.mean(jnp.tanh(x @ w) ** 2)


def scanned(w, x):
    def body(h, _):
        return jnp.tanh(h @ w), None

    h, _ = jax.lax.scan(body, x, None, length=3)
    return jnp.sum(h)


@jax.custom_vjp
def clipped_tanh(x):
    return jnp.tanh(x)


def _fwd(x):
    return jnp.tanh(x), x


def _bwd(x, g):
    return (jnp.clip(g * (1 - jnp.tanh(x) ** 2), -0.1, 0.1),)


clipped_tanh.defvjp(_fwd, _bwd)


def logged(fn):
    @functools.wraps(fn)
    def inner(*args):
        return fn(*args) * 2.0  # a decorator that changes the result: its __wrapped__ differs

    return inner


POLICIES = ("nothing_saveable", "everything_saveable", "dots_with_no_batch_dims_saveable")

CASES = {
    "grad": (jax.grad(loss), (W, X)),
    "value_and_grad": (jax.value_and_grad(loss), (W, X)),
    "vmap": (jax.vmap(lambda x, w: jnp.tanh(x @ w), in_axes=(0, None)), (X, W)),
    "vmap of scan": (jax.vmap(scanned, in_axes=(None, 0)), (W, X.reshape(16, 1, 8))),
    "custom_vjp under grad": (jax.grad(lambda w, x: jnp.sum(clipped_tanh(x @ w) * 3)), (W, X)),
    "functools.wraps decorator": (logged(loss), (W, X)),
    **{
        f"checkpoint {p} under grad": (
            jax.grad(lambda w, x, p=p: jnp.sum(
                jax.checkpoint(lambda w: jnp.sin(x @ w) @ w, policy=getattr(
                    jax.checkpoint_policies, p))(w))),
            (W, X),
        )
        for p in POLICIES
    },
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_right_programs_match_whatever_wraps_them(case) -> None:
    fn, args = CASES[case]
    r = sv.explain(fn, *args, steps=1, diagnose=False)
    assert r.check is not None, r.notes
    assert r.check.matches, (case, r.check)


def test_an_equinox_filter_jit_program_matches() -> None:
    eqx = pytest.importorskip("equinox")
    r = sv.explain(eqx.filter_jit(jax.grad(loss)), W, X, steps=1, diagnose=False)
    assert r.check is not None and r.check.matches


def test_a_shard_map_that_forgets_its_psum_still_mismatches() -> None:
    def total(x):
        local = jax.shard_map(lambda b: jnp.sum(b, keepdims=True), in_specs=P("data"),
                              out_specs=P(), check_vma=False)  # fmt: skip
        return local(x)  # the sum of one device's rows only: no psum

    with jax.set_mesh(MESH):
        r = sv.explain(total, X, steps=1, diagnose=False)
    assert r.check is not None and not r.check.matches


def test_nan_is_a_value_not_a_pass() -> None:
    nan = sv.explain(lambda a: a * jnp.nan, X, reference=lambda a: a * 0, steps=1, diagnose=False)
    assert nan.check is not None and not nan.check.matches
    same = sv.explain(lambda a: a * jnp.nan, X, steps=1, diagnose=False)
    assert same.check is not None and same.check.matches


def test_infinities_and_nan_differences() -> None:
    inf, nan = np.inf, np.nan
    assert difference(np.array([inf, -inf, nan]), np.array([inf, -inf, nan])) == 0
    assert difference(np.array([inf]), np.array([-inf])) == inf
    assert difference(np.array([nan]), np.array([1.0])) == inf
    assert difference(np.array([1.0, 2.0]), np.array([1.0, 2.5])) == 0.5


def test_complex_outputs_compare_by_the_magnitude_of_the_difference() -> None:
    c = placed(jnp.arange(16, dtype=jnp.complex64) * (1 - 1j))
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        r = sv.explain(lambda z: z * (1 + 2j), c, steps=1, diagnose=False)
    assert r.check is not None and r.check.matches
    wrong = sv.explain(lambda z: z * (1 + 2j), c, reference=lambda z: z * (1 + 2.5j), steps=1,
                       diagnose=False)  # fmt: skip
    assert wrong.check is not None and not wrong.check.matches
    assert difference(np.array([1 + 1j]), np.array([1 + 4j])) == 3.0


def test_bf16_outputs_are_checked_with_their_own_tolerance() -> None:
    r = sv.explain(lambda a: (a + 1).astype(jnp.bfloat16), X,
                   reference=lambda a: a.astype(jnp.bfloat16), steps=1, diagnose=False)  # fmt: skip
    assert r.check is not None and not r.check.matches
    assert r.check.tolerance_rule.startswith("bfloat16: 0.02")
    assert "bfloat16: 0.02" in str(r)


def test_integers_compare_exactly() -> None:
    i = placed(jnp.arange(128, dtype=jnp.int32).reshape(16, 8))
    r = sv.explain(lambda a: a * 3, i, reference=lambda a: a * 3 + (a == 5), steps=1,
                   diagnose=False)  # fmt: skip
    assert r.check is not None and not r.check.matches
    assert r.check.tolerance_rule == "int32: exact"


@pytest.mark.parametrize(
    ("dtype", "rel"),
    [("float64", 1e-9), ("float32", 1e-3), ("complex64", 1e-3), ("complex128", 1e-9),
     ("bfloat16", 2e-2), ("float16", 2e-2), ("float8_e4m3fn", 0.25), ("float8_e5m2", 0.5),
     ("int4", 0.0), ("bool", 0.0)],
)  # fmt: skip
def test_each_dtype_has_its_tolerance(dtype, rel) -> None:
    assert tolerance_rule(jnp.dtype(dtype))[0] == pytest.approx(rel)


def test_outputs_computed_in_a_narrower_dtype_get_its_tolerance() -> None:
    # float32 weights updated from bfloat16 matmuls carry bfloat16's error.
    assert tolerance_rule(jnp.dtype("float32"), "bfloat16") == (
        2e-2,
        "float32 computed in bfloat16: 0.02 x max(1, |reference|)",
    )
    assert tolerance_rule(jnp.dtype("bfloat16"), "float32")[0] == pytest.approx(2e-2)
    assert tolerance_rule(jnp.dtype("int32"), "bfloat16")[0] == 0.0


@pytest.mark.parametrize(
    "dtype", ["int4", "int2", "uint4", "float8_e4m3fn", "float8_e5m2", "complex64", "bfloat16"]
)
def test_narrow_and_complex_types_run_and_are_checked(dtype) -> None:
    a = placed(jnp.arange(128).reshape(16, 8).astype(dtype))
    if "complex" in dtype:
        fn = lambda q: (q * (1 + 2j)).sum(axis=0)  # noqa: E731
    else:
        fn = lambda q: (q.astype(jnp.float32) * 2).sum(axis=0)  # noqa: E731
    r = sv.explain(fn, a, steps=1, diagnose=False)
    assert r.ran and r.check is not None and r.check.matches
    same = sv.explain(lambda q: q, a, steps=1, diagnose=False)
    assert same.check is not None and same.check.matches
    assert same.check.tolerance_rule.startswith(jnp.dtype(dtype).name)
