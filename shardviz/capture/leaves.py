"""A function's arguments as named leaves: which are arrays, their shapes, their specs.

The explorer session reads its arguments through these (and puts re-placed leaves back with
:func:`from_leaves`), so the widgets never touch jax. Leaves are named by path, e.g.
``params/w1``, as in ``Report.arguments``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding

from shardviz.capture.layout import path_str
from shardviz.capture.spec import normalize_spec
from shardviz.model import Spec


def named_leaves(tree: Any) -> tuple[list[tuple[str, Any]], Any]:
    """Every leaf of ``tree`` with its path (``params/w1``), and the tree's structure."""
    flat, treedef = jax.tree_util.tree_flatten_with_path(tree)
    return [(path_str(p), leaf) for p, leaf in flat], treedef


def from_leaves(treedef: Any, leaves: Iterable[Any]) -> Any:
    """The tree of structure ``treedef`` (from :func:`named_leaves`) holding ``leaves``."""
    return jax.tree_util.tree_unflatten(treedef, list(leaves))


def is_placeable(x: Any) -> bool:
    """An array leaf that can be re-placed: a jax or numpy array, or a ``ShapeDtypeStruct``
    (a hypothetical array, e.g. for a deviceless topology); never a tracer."""
    return (isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)) or isinstance(
        x, np.ndarray | jax.ShapeDtypeStruct
    )


def leaf_shape(x: Any) -> tuple[int, ...]:
    """The global shape of an array leaf (a ``ShapeDtypeStruct``'s too)."""
    return tuple(x.shape) if isinstance(x, jax.ShapeDtypeStruct) else tuple(np.shape(x))


def first_named_mesh(leaves: Iterable[Any]) -> Any:
    """The jax mesh of the first leaf placed with a ``NamedSharding`` (or the first such
    sharding, when given shardings), or ``None``."""
    for leaf in leaves:
        sharding = leaf if isinstance(leaf, NamedSharding) else getattr(leaf, "sharding", None)
        if isinstance(sharding, NamedSharding):
            return sharding.mesh
    return None


def spec_on_mesh(leaf: Any, mesh: Any, name: str) -> Spec | None:
    """The leaf's spec, checked, when it is placed with a ``NamedSharding`` on ``mesh``;
    ``None`` when it is placed otherwise or not at all (``P.UNCONSTRAINED`` dims read as
    not split)."""
    sharding = getattr(leaf, "sharding", None)
    if not isinstance(sharding, NamedSharding) or sharding.mesh != mesh:
        return None
    names = tuple(str(n) for n in sharding.mesh.axis_names)
    sizes = tuple(int(s) for s in sharding.mesh.devices.shape)
    entries = tuple(None if e is sharding.spec.UNCONSTRAINED else e for e in sharding.spec)
    return normalize_spec(entries, leaf_shape(leaf), names, sizes, name=name)
