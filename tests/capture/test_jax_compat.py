"""The one adapter for what differs between jax versions (:mod:`shardviz.capture.jax_compat`).

Runs in both CI legs: ``make test`` (Python 3.11, jax 0.10.2) and ``make test-current``
(Python 3.13, the newest jax 0.12.x), so each function is checked on the version it adapts."""

from __future__ import annotations

import importlib.metadata

import jax
import jax.numpy as jnp
import pytest

from shardviz.capture import jax_compat
from shardviz.capture.jax_compat import (
    JAX_VERSION,
    fast_compile_options,
    scan_counts,
    version_tuple,
    versions_text,
)


def test_version_tuple_reads_release_numbers() -> None:
    assert version_tuple("0.12.0.1") == (0, 12, 0, 1)
    assert version_tuple("0.10.2") == (0, 10, 2)
    assert version_tuple("0.13.0rc1") == (0, 13, 0)
    assert version_tuple("0.12.0.dev20261120") == (0, 12, 0)
    assert version_tuple("") == ()


def test_the_installed_jax_is_in_the_supported_range() -> None:
    assert version_tuple(jax.__version__) == JAX_VERSION
    assert (0, 10, 2) <= JAX_VERSION < (0, 13)


def test_versions_text_names_the_installed_compiler() -> None:
    text = versions_text()
    assert f"jax {jax.__version__}" in text
    assert f"jaxlib {importlib.metadata.version('jaxlib')}" in text


def _scan_equation(consts: int, carry: int, xs: int):
    ks = [jnp.full((2,), float(i)) for i in range(consts)]

    def body(c, x):
        bump = sum(k.sum() for k in ks) if ks else 0.0
        return [ci + x[0] + bump for ci in c], x[0] * 2

    def run(c, xs_):
        return jax.lax.scan(body, c, xs_)

    jaxpr = jax.make_jaxpr(run)([1.0] * carry, [jnp.ones(3)] * xs)
    (eqn,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "scan"]
    return eqn


@pytest.mark.parametrize(("consts", "carry", "xs"), [(0, 1, 1), (2, 2, 1), (1, 3, 2)])
def test_scan_counts_on_this_jax(consts: int, carry: int, xs: int) -> None:
    eqn = _scan_equation(consts, carry, xs)
    assert scan_counts(eqn.params, len(eqn.invars)) == (consts, carry)
    assert len(eqn.invars) == consts + carry + xs


def test_scan_params_are_the_form_this_jax_prints() -> None:
    """jax 0.10.x: num_consts/num_carry; jax 0.11 and later: the ft_in flat tree instead."""
    params = _scan_equation(1, 1, 1).params
    if JAX_VERSION < (0, 11):
        assert "num_consts" in params and "ft_in" not in params
    else:
        assert "ft_in" in params and "num_consts" not in params


def test_scan_counts_reads_the_older_params_on_any_jax() -> None:
    assert scan_counts({"num_consts": 2, "num_carry": 3, "length": 4}, 9) == (2, 3)


def test_fast_compile_options_compile_on_this_jax() -> None:
    options = fast_compile_options()
    assert options["xla_backend_optimization_level"] == 0
    # jax 0.10.2 still has the CPU's option; jax 0.12 refuses it, and it must not be passed.
    has_emitters = "xla_cpu_use_fusion_emitters" in options
    if JAX_VERSION < (0, 11):
        assert has_emitters
    elif JAX_VERSION >= (0, 12):
        assert not has_emitters
    out = jax.jit(lambda x: x * 2).lower(jnp.ones(3)).compile(compiler_options=options)
    assert float(out(jnp.ones(3))[0]) == 2.0


def test_an_unknown_option_is_found_out_not_raised() -> None:
    assert not jax_compat._accepts((("xla_no_such_option_in_any_jax", True),))
    assert jax_compat._accepts((("xla_backend_optimization_level", 0),))
