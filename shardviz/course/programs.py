"""The programs the course's judges compile, built in one place.

Most exercises ask about the zoo MLP's SGD training step (``d -> h -> d``, float32) on the 8
devices, with the parameters placed one way and the batch cut over ``'data'``. The judges
compile it (never run it) and read the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from shardviz.model import Report


def mesh(shape: Sequence[int] = (2, 4), names: Sequence[str] = ("data", "model")) -> Any:
    """A mesh of the 8 devices (by default the course's 2 x 4 ``('data', 'model')``)."""
    import shardviz as sv

    return sv.Mesh(range(8), tuple(shape), tuple(names))


def mlp_step(
    specs: Mapping[str, Any] | Any,
    *,
    d: int = 128,
    h: int = 512,
    batch: int = 64,
    mesh_shape: Sequence[int] = (8,),
    axis_names: Sequence[str] = ("data",),
) -> Report:
    """The MLP's training step compiled with the parameters placed as ``specs`` (one spec per
    parameter name, or one spec for all of them) and the batch's rows cut over ``'data'``.

    Raises:
        ShardvizError: a spec does not fit (shardviz's own message, naming the parameter).
    """
    import jax
    from jax.sharding import PartitionSpec as P

    import shardviz as sv
    from shardviz.strategies import mlp

    on = mesh(mesh_shape, axis_names)
    weights = mlp.init_params(jax.random.key(0), d, h)
    data = mlp.make_batch(jax.random.key(1), batch, d)
    spec_of = specs if isinstance(specs, Mapping) else dict.fromkeys(weights, specs)
    params = {k: sv.mark_sharding(v, on, spec_of[k], name=k) for k, v in weights.items()}
    rows = {k: sv.mark_sharding(v, on, P("data", None), name=k) for k, v in data.items()}
    return sv.explain(mlp.train_step, params, rows, run=False)


@cache
def data_parallel_step(d: int = 128, h: int = 512) -> Report:
    """The data-parallel step (parameters replicated on 8 devices), compiled once per size."""
    return mlp_step((), d=d, h=h)
