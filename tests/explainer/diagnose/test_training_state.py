"""Findings on a real training state: an optax Adam state straight from ``tx.init`` (its
step counter uncommitted on the default device) gives the same findings and checked fixes
as the same state placed by hand, and a kept trial holds none of the caller's arrays."""

from __future__ import annotations

import gc
import weakref

import jax
import jax.numpy as jnp
import optax
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.explainer import cache
from tests.explainer.diagnose import planted


def _step_and_state(count_placed: bool):
    """A train step (Adam, donated state) over the planted FSDP model whose ``w3`` is left
    replicated, and its state."""
    forward, (params, x) = planted.replicated_program()
    m = params["w1"].sharding.mesh
    tx = optax.adam(1e-3)
    opt = tx.init(params)
    if count_placed:
        opt = jax.tree.map(
            lambda a: jax.device_put(a, NamedSharding(m, P())) if a.ndim == 0 else a, opt
        )

    def step(state, x):
        params, opt = state

        def loss(p):
            return jnp.sum(forward(p, x) ** 2)

        grads = jax.grad(loss)(params)
        updates, opt = tx.update(grads, opt, params)
        return optax.apply_updates(params, updates), opt

    return jax.jit(step, donate_argnums=0), (params, opt), x


def _summary(report):
    return [
        (
            f.kind,
            f.where.leaf,
            f.fix.description if f.fix else None,
            f.check.helps if f.check else None,
        )
        for f in report.findings
    ]


def test_tx_init_state_gives_the_findings_of_a_state_placed_by_hand():
    sv.clear_cache()
    step, state, x = _step_and_state(count_placed=False)
    counts = [a for a in jax.tree.leaves(state[1]) if a.ndim == 0]
    assert counts and not any(a.committed for a in counts)  # optax's count, as tx.init left it
    raw = sv.explain(step, state, x, run=False).try_fixes()
    sv.clear_cache()
    step, state, x = _step_and_state(count_placed=True)
    placed = sv.explain(step, state, x, run=False).try_fixes()
    assert _summary(raw) == _summary(placed)
    kinds = {f.kind for f in raw.findings}
    assert "replicated" in kinds
    f = next(f for f in raw.findings if f.kind == "replicated")
    assert f.fix is not None and f.check is not None and f.check.helps
    assert not any("could not try" in n for n in raw.findings.notes), raw.findings.notes


def test_a_kept_trial_holds_none_of_the_callers_arrays():
    sv.clear_cache()
    forward, (params, x) = planted.replicated_program()
    report = sv.explain(forward, params, x, run=False)
    assert report.findings.untried
    ref = weakref.ref(params["w3"])
    del params
    gc.collect()
    assert ref() is None  # neither the cache nor the kept trial holds the argument
    tried = report.try_fixes()
    f = next(f for f in tried.findings if f.kind == "replicated")
    assert f.check is not None and f.check.helps


@pytest.fixture(autouse=True)
def _fresh_cache():
    yield
    cache.clear_cache()
