"""Partition specs in either vocabulary, checked against an array's shape and a mesh.

A spec has one entry per array dim: an axis name, an axis index, a tuple of those (split over
several mesh axes, in that order), or ``None`` (not split). Mesh axes not named replicate.
Checking happens here, before jax sees the spec, so every mistake gets a message that names
the array, the dim, the axis and the fix. No jax import: this works on names and sizes.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import Any

from shardviz.errors import SpecError, problem
from shardviz.model import Spec, format_spec


def _axis_list(names: Sequence[str], sizes: Sequence[int]) -> str:
    return ", ".join(f"{n!r} (size {s})" for n, s in zip(names, sizes, strict=True)) or "none"


def _resolve_axis(
    item: Any, dim: int, where: str, names: Sequence[str], sizes: Sequence[int]
) -> str:
    if isinstance(item, bool) or not isinstance(item, int | str):
        raise SpecError(
            problem(
                f"{where}, dim {dim}",
                f"spec entry {item!r} is a {type(item).__name__}; an entry is an axis name, an axis "
                "index, a tuple of those, or None",
                f"use one of the mesh axes: {_axis_list(names, sizes)}",
            )
        )
    if isinstance(item, int):
        if not 0 <= item < len(names):
            raise SpecError(
                problem(
                    f"{where}, dim {dim}",
                    f"mesh axis index {item} is out of range: the mesh has {len(names)} axes "
                    f"({_axis_list(names, sizes)})",
                    f"use an index from 0 to {len(names) - 1}, or the axis name",
                )
            )
        return names[item]
    if item not in names:
        close = difflib.get_close_matches(item, list(names), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise SpecError(
            problem(
                f"{where}, dim {dim}",
                f"unknown mesh axis {item!r}; the mesh has {_axis_list(names, sizes)}",
                f"{hint}name one of the mesh's axes, or None to keep dim {dim} whole",
            )
        )
    return item


def normalize_spec(
    spec: Any,
    shape: Sequence[int],
    axis_names: Sequence[str],
    axis_sizes: Sequence[int],
    *,
    name: str = "array",
    allow_uneven: bool = False,
) -> Spec:
    """Check ``spec`` against ``shape`` and the mesh and return it as the model's ``Spec``.

    Args:
        spec: a ``jax.sharding.PartitionSpec`` or any sequence of entries (see module doc).
        shape: the array's global shape.
        axis_names, axis_sizes: the mesh's axes.
        name: the array's name or leaf path, for messages.
        allow_uneven: accept dims that do not divide (inside a jitted function the compiler
            pads them); otherwise they are an error, as they are for ``jax.device_put``.

    Returns:
        One tuple of axis names per dim (``()`` for a dim not split), padded to the rank.

    Raises:
        SpecError: unknown axis, axis used twice, spec longer than the rank, uneven split.
    """
    where = f"array {name!r} (shape {tuple(shape)})"
    entries = _spec_entries(spec, where)
    rank = len(shape)
    _check_rank(entries, rank, where)
    used: dict[str, int] = {}
    out: list[tuple[str, ...]] = []
    for dim, entry in enumerate(entries):
        if entry is None:
            out.append(())
            continue
        _check_constrained(entry, f"{where}, dim {dim}")
        axes = _dim_axes(entry, dim, where, axis_names, axis_sizes, used)
        if not allow_uneven:
            _check_even(axes, dim, shape[dim], where, axis_names, axis_sizes)
        out.append(axes)
    out.extend(() for _ in range(rank - len(out)))
    return tuple(out)


def _spec_entries(spec: Any, where: str) -> list[Any]:
    """The spec's entries as a list: ``None`` is no entry, one name or index is one entry."""
    if spec is None:
        spec = ()
    if isinstance(spec, str | int):
        spec = (spec,)
    try:
        return list(spec)
    except TypeError:
        raise SpecError(
            problem(
                where,
                f"the partition spec {spec!r} is not a sequence",
                "pass one entry per dim, e.g. ('data', None) or PartitionSpec('data', None)",
            )
        ) from None


def _check_rank(entries: Sequence[Any], rank: int, where: str) -> None:
    """At most one entry per dim."""
    if len(entries) > rank:
        raise SpecError(
            problem(
                where,
                f"the spec has {len(entries)} entries but the array has rank {rank}: one entry per "
                f"dim at most",
                f"drop the extra entries (a spec of {rank} entries, e.g. "
                f"{format_spec(tuple(() for _ in range(rank)))}), or reshape the array",
            )
        )


def _check_constrained(entry: Any, where: str) -> None:
    """``P.UNCONSTRAINED`` names no placement, so there is nothing to show."""
    if str(entry) == "UNCONSTRAINED":
        raise SpecError(
            problem(
                where,
                "P.UNCONSTRAINED leaves the choice to the compiler, so there is no placement "
                "to show",
                "name an axis, or None",
            )
        )


def _dim_axes(
    entry: Any,
    dim: int,
    where: str,
    names: Sequence[str],
    sizes: Sequence[int],
    used: dict[str, int],
) -> tuple[str, ...]:
    """The axis names one entry splits its dim over; records each in ``used`` (axis -> dim)
    and refuses an axis already used."""
    items = list(entry) if isinstance(entry, tuple | list) else [entry]
    axes = []
    for item in items:
        axis = _resolve_axis(item, dim, where, names, sizes)
        if axis in used:
            first = used[axis]
            where_first = "this dim" if first == dim else f"dim {first}"
            raise SpecError(
                problem(
                    f"{where}, dim {dim}",
                    f"mesh axis {axis!r} is used twice (already by {where_first}); each mesh "
                    "axis can split at most one dim, once",
                    f"remove {axis!r} from one of the dims, or split this dim over another "
                    f"axis ({_axis_list(names, sizes)})",
                )
            )
        used[axis] = dim
        axes.append(axis)
    return tuple(axes)


def _check_even(
    axes: Sequence[str],
    dim: int,
    size: int,
    where: str,
    names: Sequence[str],
    sizes: Sequence[int],
) -> None:
    """A dim split over ``axes`` must divide evenly, as ``jax.device_put`` requires."""
    ways = math.prod(sizes[list(names).index(a)] for a in axes)
    if ways > 1 and size % ways:
        padded = -(-size // ways) * ways
        over = " x ".join(f"{a!r} ({sizes[list(names).index(a)]})" for a in axes)
        raise SpecError(
            problem(
                f"{where}, dim {dim}",
                f"size {size} does not divide over {over}, {ways} ways. jax will not place "
                f"an array split unevenly (device_put and jit arguments and outputs refuse "
                f"it); only inside a jitted function does the compiler accept it, padding "
                f"dim {dim} to {padded} (shards of {padded // ways}) behind your back",
                f"make dim {dim} a multiple of {ways} (pad it yourself), split it over an "
                f"axis whose size divides {size}, or replicate it with None",
            )
        )
