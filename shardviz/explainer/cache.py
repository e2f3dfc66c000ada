"""The programs ``explain`` compiled, kept by what makes a program (function, options, every
array's shape, dtype and sharding, the context mesh), so exploring the same step again is
instant."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import jax

from shardviz.capture.calls import context_mesh
from shardviz.capture.compile import Compiled
from shardviz.capture.xla_flags import current_flags
from shardviz.model import Report

CACHE_SIZE = 32


#: Compiled programs and their reports, newest last (at most :data:`CACHE_SIZE`).
PROGRAMS: OrderedDict[Any, tuple[Compiled, Report]] = OrderedDict()


def clear_cache() -> None:
    """Forget every compiled program ``explain`` kept."""
    PROGRAMS.clear()


def _leaf_key(x: Any) -> Any:
    if isinstance(x, jax.Array | jax.ShapeDtypeStruct):
        return ("array", tuple(x.shape), str(x.dtype), getattr(x, "sharding", None))
    try:
        hash(x)
    except TypeError:
        return ("value", type(x).__name__, id(x))
    return ("value", type(x).__name__, x)


def program_key(fn: Any, args: tuple, jit_kwargs: dict, kwargs: dict | None = None) -> Any:
    """What makes a program: the function, its options, every array leaf's shape, dtype and
    sharding, every other leaf's value (a static argument's new value is a new program) and
    the context mesh (``with jax.set_mesh``: a bare ``P('data')`` inside resolves to it)."""
    leaves, treedef = jax.tree.flatten((args, kwargs or {}))
    kw: Any
    try:
        kw = tuple(sorted(jit_kwargs.items()))
        hash(kw)
    except TypeError:
        kw = repr(sorted(jit_kwargs.items()))
    # The partitioner in use changes the program for the same function and shardings.
    partitioner = bool(getattr(jax.config, "jax_use_shardy_partitioner", True))
    leaf_keys = tuple(_leaf_key(x) for x in leaves)
    # The XLA flags of an enclosing sv.xla_flags block make another schedule.
    flags = tuple(sorted(current_flags().items()))
    return (fn, kw, treedef, leaf_keys, partitioner, context_mesh(), flags)


def remember_program(key: Any, comp: Compiled, report: Report) -> None:
    """Keep a compiled program and its report under its :func:`program_key`: a later
    :func:`explain` of the same function, shapes and shardings (real arrays or
    ``ShapeDtypeStruct`` objects) reuses them."""
    PROGRAMS[key] = (comp, report)
    while len(PROGRAMS) > CACHE_SIZE:
        PROGRAMS.popitem(last=False)
