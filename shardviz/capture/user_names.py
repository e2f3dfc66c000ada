"""The names the user's code gives the mesh and the arguments, read from the frame that
called shardviz: what a fix's code must say to run where it is pasted."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping
from typing import Any

import jax

from shardviz.capture.calls import named_args
from shardviz.capture.layout import path_str
from shardviz.capture.leaves import first_named_mesh


def caller_namespace() -> dict[str, Any]:
    """The locals over the globals of the innermost frame outside shardviz (and jax): the
    notebook cell or script that called it; empty if there is none.

    Reading a function's locals makes CPython (before 3.13) keep a snapshot of them on its
    frame, which would keep the caller's arrays alive after it deletes them; the snapshot is
    emptied again once copied (the next reader gets a fresh one).
    """
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(("shardviz", "jax", "contextlib", "functools", "threading")):
            snapshot = frame.f_locals
            namespace = {**frame.f_globals, **snapshot}
            optimized = frame.f_code.co_flags & inspect.CO_OPTIMIZED
            if optimized and type(snapshot) is dict and snapshot is not frame.f_globals:
                snapshot.clear()
            return namespace
        frame = frame.f_back  # type: ignore[assignment]
    return {}


def name_of(value: Any, namespace: Mapping[str, Any]) -> str:
    """A public name ``namespace`` binds to ``value`` itself (identity), else ``""``."""
    for name, v in namespace.items():
        if v is value and not name.startswith("_") and name.isidentifier():
            return name
    return ""


def mesh_of(args: Any) -> Any:
    """The mesh of the first argument placed with a ``NamedSharding``, else ``None``."""
    return first_named_mesh(jax.tree.leaves(args))


def mesh_name(args: Any, namespace: Mapping[str, Any]) -> str:
    """The variable the arguments' mesh is bound to (the same object, else an equal mesh)."""
    mesh = mesh_of(args)
    if mesh is None:
        return ""
    found = name_of(mesh, namespace)
    if found:
        return found
    for name, v in namespace.items():
        if isinstance(v, jax.sharding.Mesh) and not name.startswith("_") and v == mesh:
            return name
    return ""


def leaf_expressions(
    fn: Any, args: tuple, namespace: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, str]]:
    """Per leaf path (as the report names it), how the function's body reaches the leaf
    (``params['w1']``) and how the calling code does (the argument's own variable, if the
    namespace has one, else the parameter's name)."""
    inside: dict[str, str] = {}
    outside: dict[str, str] = {}
    for param, value in named_args(fn, args).items():
        var = name_of(value, namespace) or param
        flat, _ = jax.tree_util.tree_flatten_with_path(value)
        for path, leaf in flat:
            if not isinstance(leaf, jax.Array | jax.ShapeDtypeStruct):
                continue
            name = f"{param}/{path_str(path)}" if path else param
            rest = jax.tree_util.keystr(path) if path else ""
            inside[name] = param + rest
            outside[name] = var + rest
    return inside, outside
