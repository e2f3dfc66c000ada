"""The one-device check judges a program by the precision it computes in: float32 outputs of
bfloat16 matmuls get bfloat16's tolerance (read from the program's dots), ``tolerance=``
overrides it, and a failing check names the output leaf and its largest difference."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.capture.run import compute_dtype
from shardviz.errors import ArgumentError
from shardviz.model.units import format_diff

MESH = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
OPT = optax.adam(1e-3)


def _step(compute: jnp.dtype):
    """An Adam step on float32 weights whose matmuls run in ``compute``."""

    def loss(params, batch):
        h = jnp.tanh(batch["x"].astype(compute) @ params["w1"].astype(compute))
        y = h @ params["w2"].astype(compute)
        return jnp.mean((y.astype(jnp.float32) - batch["y"]) ** 2)

    def step(params, opt_state, batch):
        value, grads = jax.value_and_grad(loss)(params, batch)
        updates, opt_state = OPT.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    return step


def _arguments():
    k = jax.random.split(jax.random.key(0), 4)
    params = {
        "w1": jax.random.normal(k[0], (64, 256)) * 0.1,
        "w2": jax.random.normal(k[1], (256, 64)) * 0.1,
    }
    params = jax.device_put(
        params,
        {"w1": NamedSharding(MESH, P(None, "model")), "w2": NamedSharding(MESH, P("model", None))},
    )
    batch = jax.device_put(
        {"x": jax.random.normal(k[2], (32, 64)), "y": jax.random.normal(k[3], (32, 64))},
        NamedSharding(MESH, P("data")),
    )
    return params, OPT.init(params), batch


def test_bf16_compute_with_f32_outputs_passes_by_default():
    report = sv.explain(_step(jnp.bfloat16), *_arguments(), steps=1, diagnose=False)
    check = report.check
    assert check is not None
    # Wider than float32's 1e-3 (the rule it had from the outputs' dtype), within bfloat16's.
    assert check.max_abs_diff > 1e-3
    assert check.matches
    assert check.tolerance_rule.startswith("float32 computed in bfloat16: 0.02")


def test_tighter_tolerance_fails_naming_the_leaf_and_its_difference():
    report = sv.explain(_step(jnp.bfloat16), *_arguments(), steps=1, diagnose=False, tolerance=1e-3)
    check = report.check
    assert check is not None and not check.matches
    # 1e-3 x max(1, |reference|): the weights are below 1, the loss about 1.
    assert 1e-3 <= check.tolerance < 2e-3
    assert "tolerance= given" in check.tolerance_rule
    assert check.leaf in {"out/0/w1", "out/0/w2", "out/2"} or check.leaf.startswith("out/1/")
    assert check.leaf_diff > check.tolerance
    text = str(report)
    assert f"fails at {check.leaf}: largest difference {format_diff(check.leaf_diff)}" in text
    assert check.leaf in report._repr_html_()


def test_f32_program_keeps_its_tight_tolerance():
    report = sv.explain(_step(jnp.float32), *_arguments(), steps=1, diagnose=False)
    check = report.check
    assert check is not None and check.matches
    assert check.tolerance_rule.startswith("float32: 0.001")
    assert "fails at" not in str(report)


def test_tolerance_must_be_a_positive_number():
    with pytest.raises(ArgumentError, match="tolerance"):
        sv.explain(_step(jnp.float32), *_arguments(), tolerance=-1.0)
    with pytest.raises(ArgumentError, match="tolerance"):
        sv.compare("mlp", ["dp"], tolerance="tight", progress=False)


def test_compute_dtype_reads_the_dots_of_stablehlo_and_hlo():
    lowered = jax.jit(_step(jnp.bfloat16)).lower(*_arguments())
    assert compute_dtype(lowered.as_text()) == jnp.bfloat16
    assert compute_dtype(jax.jit(_step(jnp.float32)).lower(*_arguments()).as_text()) == np.float32
    hlo = (
        "%p0 = f16[8,4]{1,0} parameter(0)\n%p1 = f16[4,2]{1,0} parameter(1)\n"
        "ROOT %dot.1 = f32[8,2]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}\n"
    )
    assert compute_dtype(hlo) == np.float16
    assert compute_dtype("%a = s8[4]{0} parameter(0)\n%b = s32[] dot(%a, %a)") is None


def test_compare_passes_its_tolerance_to_the_check():
    result = sv.compare("mlp", ["dp"], tolerance=0.5, steps=1, progress=False).results[0]
    check = result.report.check
    assert check is not None and check.matches
    assert check.tolerance_rule.endswith("(tolerance= given)")
    assert check.tolerance >= 0.5
