"""The user's function with a sharding constraint taken out or put in, to try a fix.

A fix "remove the sharding constraint at model.py:12" (or "constrain the value made at
model.py:12 to P('data', None)") is tried by tracing the function to a jaxpr and evaluating
it again with the ``sharding_constraint`` equations of that line passed through unchanged
(or the values of that shape made at that line constrained), inside nested ``jax.jit`` calls,
loop bodies and conditional branches too. The user's file is never edited.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Edit:
    """Constraints to take out (by line) and to put in (by line: the value's shape and the
    sharding to constrain it to)."""

    drop: frozenset[Line] = frozenset()
    add: tuple[tuple[Line, tuple[int, ...], Any], ...] = ()

    def adds_at(self, line: Line | None) -> list[tuple[tuple[int, ...], Any]]:
        return [(shape, s) for at, shape, s in self.add if at == line]


def _dropped(eqn: Any, edit: _Edit) -> bool:
    return eqn.primitive.name == "sharding_constraint" and _line_of(eqn) in edit.drop


def _touches(eqn: Any, edit: _Edit) -> bool:
    """Whether ``edit`` changes this equation (its constraint dropped, or its result
    constrained)."""
    if _dropped(eqn, edit):
        return True
    outs = [tuple(v.aval.shape) for v in eqn.outvars if hasattr(v.aval, "shape")]
    return any(shape in outs for shape, _ in edit.adds_at(_line_of(eqn)))


def _inner(params: dict) -> list[tuple[str, Any]]:
    """The jaxprs an equation runs (a jit's, a loop's body and condition, a cond's
    branches), by parameter name."""
    out = []
    for key, value in params.items():
        if isinstance(value, jcore.ClosedJaxpr) or (
            isinstance(value, tuple)
            and value
            and all(isinstance(v, jcore.ClosedJaxpr) for v in value)
        ):
            out.append((key, value))
    return out


def _mentions(jaxpr: Any, edit: _Edit) -> bool:
    for eqn in jaxpr.eqns:
        if _touches(eqn, edit):
            return True
        for _, value in _inner(eqn.params):
            closed = value if isinstance(value, tuple) else (value,)
            if any(_mentions(c.jaxpr, edit) for c in closed):
                return True
    return False


def _edited_params(params: dict, edit: _Edit) -> dict:
    """``params`` with every inner jaxpr the edit touches evaluated again with it."""
    changed: dict[str, Any] = {}
    for key, value in _inner(params):
        if isinstance(value, tuple):
            if any(_mentions(c.jaxpr, edit) for c in value):
                changed[key] = tuple(_rewritten(c, edit) for c in value)
        elif _mentions(value.jaxpr, edit):
            changed[key] = _rewritten(value, edit)
    return {**params, **changed} if changed else params


def _evaluate(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], edit: _Edit):
    env: dict[Any, Any] = {}

    def read(v: Any) -> Any:
        return v.val if isinstance(v, jcore.Literal) else env[v]

    for v, x in zip(jaxpr.constvars, consts, strict=True):
        env[v] = x
    for v, x in zip(jaxpr.invars, args, strict=True):
        env[v] = x
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        if _dropped(eqn, edit):
            outs = invals
        else:
            params = _edited_params(eqn.params, edit)
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
                adds = edit.adds_at(_line_of(eqn))
                if adds:
                    outs = [_constrained(x, adds) for x in outs]
        for v, x in zip(eqn.outvars, outs, strict=True):
            if not isinstance(v, jcore.DropVar):
                env[v] = x
    return [read(v) for v in jaxpr.outvars]


def _constrained(x: Any, adds: list[tuple[tuple[int, ...], Any]]) -> Any:
    for shape, sharding in adds:
        if tuple(getattr(x, "shape", ())) == shape:
            return jax.lax.with_sharding_constraint(x, sharding)
    return x


def _rewritten(closed: Any, edit: _Edit) -> Any:
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
    return jax.make_jaxpr(lambda *a: _evaluate(closed.jaxpr, closed.consts, a, edit))(*avals)


def edited(fn: Callable, args: tuple, edit: _Edit, what: str) -> Callable:
    """``fn`` for these ``args`` with ``edit`` made. Raises ``ValueError`` (saying ``what``
    was not found) when the edit touches nothing."""
    closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*args)
    if not _mentions(closed.jaxpr, edit):
        raise ValueError(what)
    out_tree = jax.tree.structure(out_shape)

    def run(*a: Any) -> Any:
        flat = jax.tree.leaves(a)
        return jax.tree.unflatten(out_tree, _evaluate(closed.jaxpr, closed.consts, flat, edit))

    run.__name__ = getattr(fn, "__name__", "fn")
    run.__qualname__ = getattr(fn, "__qualname__", run.__name__)
    return run


def without_constraints(fn: Callable, args: tuple, lines: Sequence[str]) -> Callable:
    """``fn`` for these ``args`` with the sharding constraints at ``lines`` (``file:line``)
    removed. Raises ``ValueError`` when no constraint is at those lines."""
    edit = _Edit(drop=frozenset(parse_line(x) for x in lines))
    return edited(fn, args, edit, f"no sharding constraint at {', '.join(lines)}")


def with_constraint_at(
    fn: Callable, args: tuple, line: str, shape: tuple[int, ...], sharding: Any
) -> Callable:
    """``fn`` for these ``args`` with every value of ``shape`` made at ``line`` constrained
    to ``sharding``. Raises ``ValueError`` when no such value is made there."""
    edit = _Edit(add=((parse_line(line), tuple(shape), sharding),))
    return edited(fn, args, edit, f"no value of shape {tuple(shape)} is made at {line}")
