"""Reports from real compiles that several test modules share (8 fake CPU devices)."""

import jax

import shardviz as sv
from shardviz.model import Report
from shardviz.strategies import mlp

#: Megatron tensor parallelism of the MLP: w1 split on its output dim, w2 on its input dim.
MEGATRON = {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()}


def megatron_mlp_report() -> Report:
    """``explain(run=False)`` of the MLP step placed Megatron-style on a 2x4 mesh."""
    mesh = sv.Mesh(range(8), (2, 4), ("data", "model"))
    params = mlp.init_params(jax.random.key(0), 64, 256)
    batch = mlp.make_batch(jax.random.key(1), 32, 64)
    params = {k: sv.mark_sharding(v, mesh, MEGATRON[k], name=k) for k, v in params.items()}
    batch = {k: sv.mark_sharding(v, mesh, ("data", None), name=k) for k, v in batch.items()}
    return sv.explain(mlp.train_step, params, batch, run=False)
