"""Serving strategies as a ``data x sequence x tensor`` mesh and the specs of weights and cache.

Every strategy uses the same three mesh axes (size 1 when unused):

- ``data``: the batch is split over it; weights are whole on each of its groups;
- ``tensor``: the KV heads (and with them the query heads, the MLP width and the vocabulary)
  are split over it;
- ``sequence``: the cache's positions are split over it; the weights split over
  ``tensor x sequence`` together. It is what a tensor-parallel group wider than the KV
  heads uses for the cache (8 KV heads on 16 chips: 8 over ``tensor``, 2 over ``sequence``)
  instead of holding copies.

The strategies (:data:`SERVING_STRATEGIES`) differ only in those sizes. A dim that does not
divide by its axes is left whole, and the layout says so in its notes.

A mixture of experts' expert weights split like the MLP (their hidden size over the tensor
group) under every strategy; under ``ep`` the experts themselves split over ``data``, the
axis the batch splits over, so each token goes to its experts' chips and back (the compiled
step's collectives say how).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from jax.sharding import PartitionSpec as P

from shardviz.errors import ArgumentError, problem
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.models.params import param_table

__all__ = ["AXES", "SERVING_STRATEGIES", "ServingLayout", "serving_layout"]

#: The mesh axes every serving strategy uses, in mesh order.
AXES: tuple[str, str, str] = ("data", "sequence", "tensor")

#: The serving strategies, with what each does.
SERVING_STRATEGIES: dict[str, str] = {
    "tp": "every chip in one tensor-parallel group: heads, MLP and vocabulary split over all; "
    "the KV heads over as many chips as there are KV heads, the cache's positions over the rest",
    "dp": "every chip holds all the weights; the batch (and its cache) is split over chips",
    "dp+tp": "tensor-parallel groups as wide as the KV heads, the batch split over the groups",
    "tp-heads": "one tensor-parallel group, the cache split over KV heads only: chips beyond "
    "the KV heads hold copies of the cache (what a TP group wider than the KV heads does "
    "without a sequence split)",
    "ep": "mixtures of experts: the experts and the batch split over a data axis as wide as "
    "the experts divide (tokens travel to their experts' chips and back); attention, and each "
    "expert's hidden size, tensor-parallel over the chips left",
}

#: Logical axes of the weights -> the mesh axes they split over (``group``: tensor x sequence).
_WEIGHT_AXES: dict[str, str] = {
    "heads": "group",
    "mlp": "group",
    "vocab": "group",
    "kv_heads": "tensor",
}


@dataclass(frozen=True)
class ServingLayout:
    """A strategy's mesh sizes and the specs of the weights (by leaf path) and of the cache.

    The cache is ``[layers, batch, context, kv_heads, head_dim]`` (keys; values alike).
    """

    strategy: str
    sizes: tuple[tuple[str, int], ...]
    weight_specs: dict[str, P]
    cache_spec: P
    notes: tuple[str, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(n for _, n in self.sizes)

    def size(self, axis: str) -> int:
        return dict(self.sizes)[axis]


def _mesh_sizes(strategy: str, chips: int, config: ArchConfig) -> dict[str, int]:
    kv_ways = math.gcd(chips, config.kv_heads)
    if strategy == "ep":
        if not config.is_moe:
            raise ArgumentError(
                problem(
                    f"serving strategy 'ep' for {config.name}",
                    "it splits the experts of a mixture of experts, and this model has none",
                    "use 'dp' or 'dp+tp' for a dense model",
                )
            )
        data = math.gcd(chips, config.experts)
        tensor = math.gcd(chips // data, config.kv_heads)
        return {"data": data, "sequence": chips // data // tensor, "tensor": tensor}
    if strategy == "tp":
        return {"data": 1, "sequence": chips // kv_ways, "tensor": kv_ways}
    if strategy == "tp-heads":
        return {"data": 1, "sequence": chips // kv_ways, "tensor": kv_ways}
    if strategy == "dp":
        return {"data": chips, "sequence": 1, "tensor": 1}
    if strategy == "dp+tp":
        return {"data": chips // kv_ways, "sequence": 1, "tensor": kv_ways}
    raise ArgumentError(
        problem(
            f"serving strategy {strategy!r}",
            "not a serving strategy",
            f"use one of {', '.join(map(repr, SERVING_STRATEGIES))}",
        )
    )


def _axes_for(kind: str, sizes: dict[str, int]) -> tuple[str, ...]:
    # tensor first: a query head h = n * G + g then lies with its KV head n
    axes = ("tensor", "sequence") if kind == "group" else (kind,)
    return tuple(a for a in axes if sizes[a] > 1)


def _entry(axes: tuple[str, ...]) -> str | tuple[str, ...] | None:
    return None if not axes else axes[0] if len(axes) == 1 else axes


def serving_layout(
    strategy: str, chips: int, config: ArchConfig, batch: int, context: int
) -> ServingLayout:
    """The mesh sizes and specs of ``strategy`` serving ``config`` on ``chips`` devices.

    Raises:
      ArgumentError: an unknown strategy, ``ep`` for a dense model, or a batch that does not
        divide over ``data``.
    """
    sizes = _mesh_sizes(strategy, chips, config)
    notes: list[str] = []
    if sizes["data"] > 1 and batch % sizes["data"]:
        raise ArgumentError(
            problem(
                f"strategy {strategy!r} on {chips} chips",
                f"batch={batch} does not divide over the data axis of {sizes['data']}",
                f"use a batch that is a multiple of {sizes['data']}",
            )
        )
    specs: dict[str, P] = {}
    for path, info in param_table(config).items():
        entries = []
        for dim, name in zip(info.shape, info.axes, strict=True):
            kind = _WEIGHT_AXES.get(name) if name else None
            axes = _axes_for(kind, sizes) if kind else ()
            if path.endswith(("/wk", "/wv")) and name == "embed":
                axes = _axes_for("sequence", sizes)  # k/v projections: embed over sequence
            if strategy == "ep" and name == "expert" and path.startswith("layers/moe/w_"):
                axes = _axes_for("data", sizes)  # the experts (not the router's) over data
            if axes and dim % math.prod(sizes[a] for a in axes):
                notes.append(
                    f"{path}: {name}={dim} does not divide over {'x'.join(axes)}; kept whole"
                )
                axes = ()
            entries.append(_entry(axes))
        specs[path] = P(*entries)
    seq_axes = () if strategy == "tp-heads" else _axes_for("sequence", sizes)
    if seq_axes and context % sizes["sequence"]:
        notes.append(f"context={context} does not divide over sequence; the cache is copied")
        seq_axes = ()
    kv_axes = _axes_for("tensor", sizes)
    data_axes = _axes_for("data", sizes)
    cache = P(None, _entry(data_axes), _entry(seq_axes), _entry(kv_axes), None)
    if strategy == "tp-heads" and sizes["sequence"] > 1:
        notes.append(
            f"the cache is split over {sizes['tensor']} KV-head groups only: each of its "
            f"shards is held by {sizes['sequence']} chips"
        )
    return ServingLayout(strategy, tuple((a, sizes[a]) for a in AXES), specs, cache, tuple(notes))
