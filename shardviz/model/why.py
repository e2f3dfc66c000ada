"""Why the partitioner inserted a collective: the sharding it converts, who needed it, and
where each side's sharding came from (an argument, a constraint, or propagation)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from shardviz.model.array import Spec, format_spec

#: Where a sharding came from: an input's spec, the declared output sharding, a sharding
#: constraint in the code, a ``shard_map``'s specs, propagation from other ops (several
#: sources), or not known.
OriginKind = Literal["argument", "output", "constraint", "shard_map", "propagation", "unknown"]


@dataclass(frozen=True)
class AxisOrigin:
    """Where one mesh axis of a value's spec came from (the value itself or the nearest
    argument, constraint, declared output or ``shard_map`` the axis reached it from)."""

    axis: str
    kind: OriginKind
    detail: str
    value: str = ""
    line: str = ""


@dataclass(frozen=True)
class Origin:
    """Where one side of a conversion got its sharding.

    ``kind`` is the source: the value itself or the one source every axis of its spec came
    from; ``propagation`` when the axes came from several sources (``axes`` says which from
    which); ``unknown`` when shardviz cannot tell. ``detail`` names it in the user's words
    (``argument params/w1``, ``sharding constraint at model.py:21``, ``propagated from a
    matmul at model.py:12``); ``spec``, ``value`` (HLO value) and ``line`` (``file:line``,
    "" when none) are the source's. ``via`` names the op the sharding reached the converted
    value through, in plain words (``a matmul at model.py:12``, ``a jnp.where at
    model.py:14``; "" when the value is the source itself).
    """

    kind: OriginKind
    spec: Spec | None
    detail: str
    value: str = ""
    line: str = ""
    via: str = ""
    axes: tuple[AxisOrigin, ...] = ()


@dataclass(frozen=True)
class CollectiveWhy:
    """The reason for one partitioner-inserted collective.

    The collective converts ``value`` (in the user's words: an argument's leaf path, the
    value made at a line with its code, or the result of an op named in plain words;
    ``hlo_value`` is its HLO name) from ``from_spec`` to
    ``to_spec`` (on the user's mesh axes; ``None`` where shardviz cannot tell) because
    ``needed_by`` (an op such as ``dot_general``, at ``needed_by_line``, whose code is
    ``needed_by_code``; HLO value ``needed_by_value``) needs the converted form. When the
    op sums over a split dim, ``partial_axes`` are the mesh axes each device holds partial
    sums over (the ``from`` side), and ``other_origins`` are the other operands that split it.
    ``summary`` says it in one sentence. ``conversion`` names the kind of conversion where
    shardviz recognises one that matters at scale (``token-gather``: the tokens going into
    an expert layer's matmul gathered where an all-to-all over ``expert_axes`` would send
    each to its experts' devices, ``better_spec`` being the tokens' spec that does so;
    ``activation-gather``: an activation, not a weight, gathered; ``combine-all-reduce``:
    an expert layer's outputs summed over ``expert_axes`` in place of an all-to-all).
    """

    from_spec: Spec | None
    to_spec: Spec | None
    needed_by: str
    needed_by_line: str
    from_origin: Origin
    to_origin: Origin
    summary: str
    value: str = ""
    hlo_value: str = ""
    needed_by_value: str = ""
    needed_by_code: str = ""
    partial_axes: tuple[str, ...] = ()
    other_origins: tuple[Origin, ...] = ()
    conversion: str = ""
    expert_axes: tuple[str, ...] = ()
    better_spec: Spec | None = None


def why_axes(axes: Sequence[str]) -> str:
    """Mesh axes as the why texts name them: ``'data'``, ``'data', 'model'`` (never a
    tuple's ``('data',)``), or ``no mesh axis``."""
    return ", ".join(repr(a) for a in axes) if axes else "no mesh axis"


def why_spec(spec: Spec | None) -> str:
    """A spec as the why texts write it: :func:`~shardviz.model.array.format_spec`'s
    spelling, but one dim without jax's tuple comma (``P('model')``, not ``P('model',)``)."""
    text = format_spec(spec)
    return text.removesuffix(",)") + ")" if spec is not None and len(spec) == 1 else text
