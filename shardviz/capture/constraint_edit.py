"""The user's function with some of its sharding constraints taken out, to try a fix.

A fix "remove the sharding constraint at model.py:12" is tried by tracing the function to a
jaxpr and evaluating it again with the ``sharding_constraint`` equations of that line passed
through unchanged (inside nested ``jax.jit`` calls too; not inside loops or conditionals,
whose bodies are re-bound as they are).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.extend.core as jcore
from jax._src import source_info_util

#: A source line: (absolute file path, line number).
Line = tuple[str, int]


def parse_line(location: str) -> Line:
    """``"/path/model.py:12"`` -> ``("/path/model.py", 12)``."""
    file, _, line = location.rpartition(":")
    return os.path.realpath(file), int(line)


def _line_of(eqn: Any) -> Line | None:
    frame = source_info_util.user_frame(eqn.source_info.traceback)
    if frame is None:
        return None
    return os.path.realpath(frame.file_name), int(frame.start_line)


def _dropped(eqn: Any, drop: frozenset[Line]) -> bool:
    return eqn.primitive.name == "sharding_constraint" and _line_of(eqn) in drop


def _mentions(jaxpr: Any, drop: frozenset[Line]) -> bool:
    for eqn in jaxpr.eqns:
        if _dropped(eqn, drop):
            return True
        inner = eqn.params.get("jaxpr")
        if (
            eqn.primitive.name in ("jit", "pjit")
            and inner is not None
            and _mentions(inner.jaxpr, drop)
        ):
            return True
    return False


def _evaluate(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], drop: frozenset[Line]):
    env: dict[Any, Any] = {}

    def read(v: Any) -> Any:
        return v.val if isinstance(v, jcore.Literal) else env[v]

    for v, x in zip(jaxpr.constvars, consts, strict=True):
        env[v] = x
    for v, x in zip(jaxpr.invars, args, strict=True):
        env[v] = x
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        if _dropped(eqn, drop):
            outs = invals
        else:
            params = eqn.params
            inner = params.get("jaxpr")
            nested = eqn.primitive.name in ("jit", "pjit") and inner is not None
            if nested and _mentions(inner.jaxpr, drop):
                params = dict(params, jaxpr=_rewritten(inner, drop))
            bind_params = eqn.primitive.get_bind_params(params)
            # Re-bound under the equation's own source line and name, so the fixed
            # program's values keep the user's lines (and its report can be compared).
            stack = source_info_util.current_name_stack() + eqn.source_info.name_stack
            with (
                source_info_util.user_context(eqn.source_info.traceback, name_stack=stack),
                eqn.ctx.manager,
            ):
                outs = eqn.primitive.bind(*invals, **bind_params)
            if not eqn.primitive.multiple_results:
                outs = [outs]
        for v, x in zip(eqn.outvars, outs, strict=True):
            if not isinstance(v, jcore.DropVar):
                env[v] = x
    return [read(v) for v in jaxpr.outvars]


def _rewritten(closed: Any, drop: frozenset[Line]) -> Any:
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
    return jax.make_jaxpr(lambda *a: _evaluate(closed.jaxpr, closed.consts, a, drop))(*avals)


def without_constraints(fn: Callable, args: tuple, lines: Sequence[str]) -> Callable:
    """``fn`` for these ``args`` with the sharding constraints at ``lines`` (``file:line``)
    removed. Raises ``ValueError`` when no constraint is at those lines."""
    drop = frozenset(parse_line(x) for x in lines)
    closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*args)
    if not _mentions(closed.jaxpr, drop):
        raise ValueError(f"no sharding constraint at {', '.join(lines)}")
    out_tree = jax.tree.structure(out_shape)

    def edited(*a: Any) -> Any:
        flat = jax.tree.leaves(a)
        return jax.tree.unflatten(out_tree, _evaluate(closed.jaxpr, closed.consts, flat, drop))

    edited.__name__ = getattr(fn, "__name__", "fn")
    edited.__qualname__ = getattr(fn, "__qualname__", edited.__name__)
    return edited
