"""What the Explorer's controls check and propose, with no widgets and no jax: the mesh
shapes a device count allows, axis names, which strategies fit a mesh, and spec boxes fitted
to a renamed or reshaped mesh. :class:`~shardviz.widgets.controls.Controls` shows the results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from shardviz.capture.spec import normalize_spec
from shardviz.capture.spec_text import SpecEntries
from shardviz.errors import MeshError, problem
from shardviz.model.mesh import ascii_hint, axis_name_problem
from shardviz.strategies.rules import PIPELINE_NAMES, STRATEGY_NAMES
from shardviz.strategies.rules.named import get_rule_set

__all__ = [
    "AS_GIVEN",
    "DEFAULT_AXIS_NAMES",
    "factorisations",
    "fit_spec",
    "invalid_words",
    "parse_axis_names",
    "propose_names",
    "rename_spec",
    "strategies_for",
    "unused_axes_note",
    "validate_spec",
]

#: The strategy choice that keeps the specs typed in the boxes (the arguments as given).
AS_GIVEN = "as given"
#: Names offered when the mesh gains axes (the builtin strategies' vocabulary first).
DEFAULT_AXIS_NAMES = ("data", "model", "expert", "seq")


def factorisations(n: int, max_rank: int = 3, *, ones: bool = False) -> list[tuple[int, ...]]:
    """Every ordered mesh shape of at most ``max_rank`` axes whose product is ``n``.

    Axes of size 1 are left out unless ``ones`` (they change nothing but a name; a mesh the
    user already has keeps its own shape in :class:`Controls`). ``n == 1`` gives ``[(1,)]``.
    Sorted by rank, then by sizes: 8 gives (8,), (2, 4), (4, 2), (2, 2, 2).
    """
    if n < 1:
        raise MeshError(problem("factorisations", f"device count {n} is below 1", "pass n >= 1"))
    least = 1 if ones else 2

    def split(rest: int, rank: int) -> list[tuple[int, ...]]:
        if rank == 1:
            return [(rest,)] if rest >= least else []
        return [
            (f, *tail)
            for f in range(least, rest + 1)
            if rest % f == 0
            for tail in split(rest // f, rank - 1)
        ]

    shapes = [s for rank in range(1, max_rank + 1) for s in split(n, rank)]
    return sorted(set(shapes), key=lambda s: (len(s), s)) or [(n,)]


def validate_spec(
    array_name: str,
    shape: Sequence[int],
    spec: Any,
    mesh_shape: Sequence[int],
    axis_names: Sequence[str],
) -> None:
    """Check a spec against an array's shape and a mesh given as plain sizes and names.

    Raises:
        SpecError: unknown axis, axis used twice, spec longer than the rank, or a dim the
            axes do not divide (the message names the array, the dim, the axis and the fix).
    """
    normalize_spec(spec, tuple(shape), tuple(axis_names), tuple(mesh_shape), name=array_name)


def parse_axis_names(text: str, mesh_shape: Sequence[int]) -> tuple[str, ...]:
    """Comma-separated axis names (quotes optional), one per mesh axis, no repeats.

    Raises:
        MeshError: a name is empty or has characters the compiler cannot take, the count
            differs from the mesh's rank, or a name repeats.
    """
    parts = [p.strip().strip("'\"").strip() for p in text.split(",")]
    if parts and not parts[-1] and len(parts) > 1:
        parts = parts[:-1]  # a trailing comma
    shape = tuple(mesh_shape)
    where = f"axis names for the {' x '.join(map(str, shape))} mesh"
    if any(not p for p in parts):
        raise MeshError(problem(where, f"{text.strip()!r} has an empty name", _names_fix(shape)))
    if len(parts) != len(shape):
        raise MeshError(
            problem(
                where,
                f"{len(parts)} name(s) {tuple(parts)} for a mesh of {len(shape)} axes",
                _names_fix(shape),
            )
        )
    for part in parts:
        why = axis_name_problem(part)
        if why is not None:
            raise MeshError(problem(where, why, f"rename it, e.g. {ascii_hint(part)!r}"))
    if len(set(parts)) != len(parts):
        dup = sorted({p for p in parts if parts.count(p) > 1})
        raise MeshError(
            problem(
                where, f"{', '.join(map(repr, dup))} named twice", "give each axis its own name"
            )
        )
    return tuple(parts)


def _names_fix(shape: tuple[int, ...]) -> str:
    example = ", ".join(propose_names((), len(shape)))
    return f"give {len(shape)} comma-separated names, one per axis, e.g. {example}"


def propose_names(names: Sequence[str], rank: int) -> tuple[str, ...]:
    """Keep the first ``rank`` names; fill up with unused defaults."""
    kept = [n for n in names if n][:rank]
    spare = [n for n in DEFAULT_AXIS_NAMES if n not in kept]
    spare += [f"axis_{i}" for i in range(rank) if f"axis_{i}" not in kept]
    return tuple(kept + spare[: rank - len(kept)])


def strategies_for(axis_names: Sequence[str]) -> tuple[str, ...]:
    """:data:`AS_GIVEN` and every builtin strategy whose axes the mesh has (not yet the
    pipeline ones: they train a pipelined model, which the Explorer does not build)."""
    fits = [
        s
        for s in STRATEGY_NAMES
        if s not in PIPELINE_NAMES and set(get_rule_set(s).axes) <= set(axis_names)
    ]
    return (AS_GIVEN, *fits)


def _entry_axes(entry: Any) -> tuple[str, ...]:
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def _entry(axes: Sequence[str]) -> Any:
    return None if not axes else axes[0] if len(axes) == 1 else tuple(axes)


def rename_spec(spec: SpecEntries, renamed: Mapping[str, str]) -> SpecEntries:
    """The spec with each axis renamed (old name -> new name); other axes kept."""
    return tuple(_entry([renamed.get(a, a) for a in _entry_axes(e)]) for e in spec)


def fit_spec(
    spec: SpecEntries,
    shape: Sequence[int],
    mesh_shape: Sequence[int],
    axis_names: Sequence[str],
) -> SpecEntries:
    """The nearest spec that fits: axes the mesh lacks, repeats or cannot divide are dropped
    (a dim left without axes is ``None``), and entries beyond the array's rank are cut.

    Used when the mesh changes under specs typed for another one, so the boxes propose a
    placement that compiles instead of showing red errors.
    """
    sizes = dict(zip(axis_names, mesh_shape, strict=True))
    used: set[str] = set()
    out = []
    for dim, entry in zip(shape, spec, strict=False):
        kept: list[str] = []
        ways = 1
        for axis in _entry_axes(entry):
            if axis in sizes and axis not in used and dim % (ways * sizes[axis]) == 0:
                kept.append(axis)
                used.add(axis)
                ways *= sizes[axis]
        out.append(_entry(kept))
    return tuple(out)


def unused_axes_note(strategy: str, mesh_shape: Sequence[int], axis_names: Sequence[str]) -> str:
    """What a strategy leaves idle on this mesh, in plain words ("" when it uses every axis).

    A strategy's rules split arrays over its own axes only; every other axis of size > 1 holds
    copies: the same bytes and the same work on each of its devices.
    """
    if strategy == AS_GIVEN:
        return ""
    axes = get_rule_set(strategy).axes
    idle = [(n, k) for n, k in zip(axis_names, mesh_shape, strict=True) if n not in axes and k > 1]
    if not idle:
        return ""
    copies = math.prod(k for _, k in idle)
    names = " and ".join(f"{n!r} ({k} devices)" for n, k in idle)
    own = ", ".join(map(repr, axes))
    total = math.prod(mesh_shape)
    alone = (
        f"pick mesh shape {total} (every device on {own})"
        if len(axes) == 1
        else f"give the mesh only the axes {own}"
    )
    return (
        f"{strategy} splits arrays over {own} only: {names} is unused by its rules, so each "
        f"array is copied {copies} times along it ({copies}x the memory per device for the "
        f"same work), and the compiler may still move data over it. To see {strategy} alone, "
        f"{alone}."
    )


def invalid_words(errors: Mapping[str, str]) -> str:
    """Which fields are wrong and the first one's problem, in a line: ``fix params/w1: unknown
    mesh axis 'modle'`` ("" when none is)."""
    if not errors:
        return ""
    names = list(errors)
    first = errors[names[0]].split(". Fix:")[0]
    first = first.split(": ", 1)[1] if ": " in first else first  # its box is named already
    which = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"fix {which}: {first}"


# --- The widget -----------------------------------------------------------------------------
