"""A :class:`~shardviz.model.findings.Fix` applied to the user's call (its function and
arguments, a :class:`~shardviz.explainer.call.Call`), so the fixed program can be compiled
(compile-only: arguments become ``ShapeDtypeStruct`` objects). The call's argument names and
mesh are worked out once, by the call, however many fixes are tried."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from shardviz.capture.constraint_edit import with_constraint_at, without_constraints
from shardviz.capture.layout import path_str
from shardviz.capture.mesh import reordered_mesh
from shardviz.errors import MeshError
from shardviz.explainer.call import Call
from shardviz.model.array import Spec
from shardviz.model.findings import Fix


class CannotApply(Exception):
    """The fix cannot be tried on this program (the message says why, for a note)."""


def _p(spec: Spec) -> PartitionSpec:
    return PartitionSpec(*(e[0] if len(e) == 1 else (tuple(e) if e else None) for e in spec))


def _abstract(x: Any, sharding: Any = None) -> Any:
    """An array leaf as a ``ShapeDtypeStruct`` with its (or the given) sharding."""
    if isinstance(x, jax.Array | jax.ShapeDtypeStruct):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding or x.sharding)
    return x


def abstract_args(args: tuple) -> tuple:
    return jax.tree.map(_abstract, args)


def _mesh_of(call: Call) -> Any:
    if call.mesh is None:
        raise CannotApply("no argument is placed with a NamedSharding, so there is no mesh")
    return call.mesh


def _map_leaf(call: Call, leaf: str, change: Callable[[Any], Any]) -> tuple:
    """The call's arguments with the leaf at path ``leaf`` replaced by ``change(leaf)``."""
    names, args = call.names, call.args
    found = False

    def visit(path: tuple, x: Any, top: str) -> Any:
        nonlocal found
        name = f"{top}/{path_str(path)}" if path else top
        if name == leaf and isinstance(x, jax.Array | jax.ShapeDtypeStruct):
            found = True
            return change(x)
        return x

    out = tuple(
        jax.tree_util.tree_map_with_path(lambda p, x, t=top: visit(p, x, t), a)
        for top, a in zip(names, args, strict=False)
    )
    if not found:
        raise CannotApply(f"no positional argument leaf is called {leaf!r}")
    return out


def apply_fix(call: Call, fix: Fix) -> Call:
    """The call with ``fix`` applied: its function and (abstract) arguments changed."""
    fn, args = _applied(call, fix)
    return Call(fn, args, call.kwargs, call.jit_kwargs)


def _applied(call: Call, fix: Fix) -> tuple[Any, tuple]:
    fn, args = call.fn, call.args
    if fix.kind == "spec":
        mesh = _mesh_of(call)
        spec = _p(fix.spec or ())
        new = _map_leaf(call, fix.leaf, lambda x: _abstract(x, NamedSharding(mesh, spec)))
        return fn, abstract_args(new)
    if fix.kind == "constraint" and fix.line:
        sharding = NamedSharding(_mesh_of(call), _p(fix.spec or ()))
        try:
            at = with_constraint_at(fn, abstract_args(args), fix.line, fix.shape, sharding)
        except ValueError as err:
            raise CannotApply(str(err)) from err
        return at, abstract_args(args)
    if fix.kind == "constraint":
        sharding = NamedSharding(_mesh_of(call), _p(fix.spec or ()))
        names = call.names

        def constrained(*a: Any) -> Any:
            a = _map_leaf_traced(names, a, fix.leaf, sharding)
            return fn(*a)

        constrained.__name__ = getattr(fn, "__name__", "fn")
        return constrained, abstract_args(args)
    if fix.kind == "drop-constraint":
        try:
            edited = without_constraints(fn, abstract_args(args), [fix.line])
        except ValueError as err:
            raise CannotApply(str(err)) from err
        return edited, abstract_args(args)
    if fix.kind == "mesh":
        mesh = _mesh_of(call)
        if fix.devices:
            try:
                devices = np.asarray(reordered_mesh(mesh, fix.devices).devices)
            except MeshError as err:
                raise CannotApply(str(err)) from err
        else:
            devices = np.asarray(mesh.devices).reshape(fix.mesh_shape)
        new_mesh = jax.sharding.Mesh(devices, mesh.axis_names, axis_types=mesh.axis_types)

        def remesh(x: Any) -> Any:
            s = getattr(x, "sharding", None)
            if isinstance(s, NamedSharding) and s.mesh == mesh:
                return _abstract(x, NamedSharding(new_mesh, s.spec))
            return _abstract(x)

        return fn, jax.tree.map(remesh, args)
    raise CannotApply(f"shardviz cannot apply a {fix.kind!r} fix")


def _map_leaf_traced(names: list[str], args: tuple, leaf: str, sharding: Any) -> tuple:
    def visit(path: tuple, x: Any, top: str) -> Any:
        name = f"{top}/{path_str(path)}" if path else top
        return jax.lax.with_sharding_constraint(x, sharding) if name == leaf else x

    return tuple(
        jax.tree_util.tree_map_with_path(lambda p, x, t=top: visit(p, x, t), a)
        for top, a in zip(names, args, strict=False)
    )
