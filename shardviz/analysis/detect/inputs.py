"""What every detector reads from a report: axis sizes, leaf sizes, per-step bytes, lines.

Pure functions of model objects (no jax), so the detectors can be tested on hand-built
reports and run where only the model is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from shardviz.model import ArrayLayout, Collective, Report, ShardingOf, Source
from shardviz.model.array import Spec, format_spec
from shardviz.model.findings import Where
from shardviz.model.units import format_bytes

__all__ = ["format_bytes", "format_spec"]

#: Arguments that hold the data, not weights: gathering them is no regather of a weight.
INPUT_NAMES = frozenset(
    {"batch", "inputs", "input", "x", "data", "tokens", "features", "images", "targets",
     "labels", "y", "xs", "ys"}
)  # fmt: skip


@dataclass(frozen=True)
class Remat:
    """One involuntary full rematerialization, its shardings read as specs on the user's
    axes (``None`` where a sharding is no named spec)."""

    value: str
    op_name: str
    from_spec: Spec | None
    to_spec: Spec | None
    from_hlo: str
    to_hlo: str
    #: The value's element type (HLO's ``f32``) and dims, as the compile log gives them
    #: (``None``: not known), for its size where the report does not hold the value.
    dtype: str = ""
    shape: tuple[int, ...] | None = None


@dataclass(frozen=True)
class CompilerEvidence:
    """What capture knows beyond the report: the compile log's rematerializations and the
    specs of the program's parameters in the partitioner's input (by HLO value name)."""

    remats: tuple[Remat, ...] = ()
    parameter_specs: dict[str, Spec | None] = field(default_factory=dict)


def axis_sizes(report: Report) -> dict[str, int]:
    mesh = report.mesh
    return dict(zip(mesh.axis_names, mesh.axis_sizes, strict=True)) if mesh else {}


def spec_axes(spec: Spec | None) -> set[str]:
    """Every mesh axis a spec splits over."""
    return {a for entry in spec or () for a in entry}


def full_bytes(leaf: ArrayLayout) -> int:
    return math.prod(leaf.shape) * leaf.itemsize


def step_bytes(c: Collective) -> int:
    """Bytes ``c`` moves per device per execution: its ring figure times its loop trips."""
    return c.moved_bytes * (c.trips or 1)


def step_seconds(c: Collective) -> float | None:
    if c.estimated_seconds is None:
        return None
    return c.estimated_seconds * (c.trips or 1)


def number_of(report: Report, c: Collective) -> int:
    """``c``'s ledger number as the views show it (1 is the first)."""
    for i, x in enumerate(report.collectives, 1):
        if x is c:
            return i
    return report.collectives.index(c) + 1


def where_of(source: Source | None, **kw) -> Where:
    """A :class:`Where` at ``source``'s innermost line (empty line fields without one)."""
    if source is None or source.innermost is None:
        return Where(**kw)
    return Where(
        line=source.location, place=source.place, chain=source.chain, code=source.text, **kw
    )


def leaf_group(path: str) -> str:
    """The argument a leaf belongs to (``params`` of ``params/layers/0/w``)."""
    return path.split("/", 1)[0]


def by_name(report: Report) -> dict[str, ShardingOf]:
    return {s.name: s for s in report.intermediates}


def sum_seconds(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known and len(known) == len(values) else None


def with_axis(spec: Spec, dim: int, axis: str) -> Spec:
    """``spec`` with ``axis`` added to ``dim``'s entry (major to minor: appended)."""
    out = list(spec)
    out[dim] = (*out[dim], axis)
    return tuple(out)


def padded(spec: Spec, rank: int) -> Spec:
    return tuple(spec) + ((),) * (rank - len(spec))


def ways_of(entry: tuple[str, ...], sizes: dict[str, int]) -> int:
    return math.prod(sizes.get(a, 1) for a in entry)


def split_dim_for(
    shape: tuple[int, ...], spec: Spec, axis: str, sizes: dict[str, int]
) -> int | None:
    """The largest dim ``axis`` can also split evenly (given the axes already on it)."""
    best = None
    spec = padded(spec, len(shape))
    for d, n in enumerate(shape):
        k = ways_of(spec[d], sizes) * sizes[axis]
        if n % k == 0 and n >= k and (best is None or n > shape[best]):
            best = d
    return best


#: Said for a sharding that is no spec on the mesh's axes (never a bare ``?``).
NO_SPEC = "a sharding that is no spec on the mesh's axes"


def spec_code(spec: Spec | None) -> str:
    """``P('data', None)``, or :data:`NO_SPEC` for a sharding with no spec."""
    return format_spec(spec) if spec is not None else NO_SPEC


def is_constraint(s: ShardingOf) -> bool:
    """A value made by ``with_sharding_constraint`` (or ``reshard``) in the user's code."""
    return s.op_name.rsplit("/", 1)[-1] in ("sharding_constraint", "reshard")


def _plain_path(name: str) -> str:
    return re.sub(r"[\[\]'\".]+", "/", name).strip("/")


def leaf_named(report: Report, op_name: str) -> ArrayLayout | None:
    """The argument leaf an HLO parameter's ``op_name`` names (``x``, ``params['w1']``)."""
    if not op_name or "(" in op_name:
        return None
    want = _plain_path(op_name)
    for leaf in report.arguments.leaves:
        if _plain_path(leaf.name) == want:
            return leaf
    return None
