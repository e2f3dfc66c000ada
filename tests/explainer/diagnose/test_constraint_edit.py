"""Fixes that edit the program, not the arguments: a constraint taken out or put in at a line,
by evaluating the traced function again (the user's file is never touched)."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.capture.constraint_edit import with_constraint_at, without_constraints
from shardviz.explainer.call import Call
from shardviz.explainer.fix_apply import CannotApply, apply_fix
from shardviz.model.findings import Fix

from . import planted

M = planted.mesh()


def program(x):
    y = jnp.sin(x)  # the line constrained below
    z = jax.lax.with_sharding_constraint(y * 2, NamedSharding(M, P(None, "model")))
    return z + 1


def _line(text: str) -> str:
    lines, start = inspect.getsourcelines(program)
    i = next(i for i, t in enumerate(lines) if text in t)
    return f"{inspect.getsourcefile(program)}:{start + i}"


X = jax.ShapeDtypeStruct((16, 32), jnp.float32, sharding=NamedSharding(M, P("data", None)))


def specs_at(report, line):
    return {s.spec for s in report.intermediates if s.source and s.source.location == line}


def test_a_constraint_put_in_at_a_line_shapes_the_value_made_there():
    line = _line("jnp.sin")
    before = sv.explain(program, X, run=False, diagnose=False)
    fixed = with_constraint_at(program, (X,), line, (16, 32), NamedSharding(M, P(None, "model")))
    after = sv.explain(fixed, X, run=False, diagnose=False)
    assert ((), ("model",)) in specs_at(after, line)
    assert any(s.op_name.endswith("sharding_constraint") for s in after.intermediates
               if s.source and s.source.location == line)  # fmt: skip
    assert len(after.intermediates) > len(before.intermediates)
    # The same values are computed: the fixed program gives the same numbers.
    x = jnp.arange(16 * 32, dtype=jnp.float32).reshape(16, 32)
    assert jnp.allclose(jax.jit(fixed)(x), jax.jit(program)(x))


def test_a_constraint_taken_out_leaves_the_rest_alone():
    line = _line("with_sharding_constraint")
    fixed = without_constraints(program, (X,), [line])
    report = sv.explain(fixed, X, run=False, diagnose=False)
    assert not any(s.op_name.endswith("sharding_constraint") for s in report.intermediates)
    assert not report.collectives  # nothing asks for another form any more


def test_an_edit_that_touches_nothing_cannot_be_applied():
    with pytest.raises(CannotApply, match="no sharding constraint"):
        apply_fix(Call(program, (X,)), Fix("drop-constraint", "d", "c", line=_line("jnp.sin")))
    fix = Fix("constraint", "d", "c", spec=((), ()), line=_line("jnp.sin"), shape=(3, 3))
    with pytest.raises(CannotApply, match="no value of shape"):
        apply_fix(Call(program, (X,)), fix)
