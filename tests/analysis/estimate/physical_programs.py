"""Small programs on deviceless TPU/GPU topologies for the physical-layout tests.

Skipped where the topology's extra (libtpu, the CUDA plugin) is missing.
"""

from __future__ import annotations

import os

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
topology_mod = pytest.importorskip("shardviz.capture.topology")

from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import shardviz as sv  # noqa: E402


def topo(name: str):
    try:
        return topology_mod.topology(name)
    except topology_mod.TopologyError as err:
        pytest.skip(str(err))


def by_chip(name: str) -> dict[tuple[int, ...], object]:
    """The topology's devices by chip coordinates (TPU: (x, y[, z]); GPU: (host, gpu))."""
    t = topo(name)
    if t.platform == "gpu":
        out, seen = {}, {}
        for d in sorted(t.devices, key=lambda d: d.id):
            k = seen[d.process_index] = seen.get(d.process_index, -1) + 1
            out[(d.process_index, k)] = d
        return out
    dims = len(t.shape)
    return {tuple(d.coords[:dims]): d for d in t.devices}


def mesh_of(devices: list, shape: tuple[int, ...], names: tuple[str, ...]):
    arr = np.empty(len(devices), dtype=object)
    arr[:] = devices
    return jax.sharding.Mesh(arr.reshape(shape), names)


def matmul_args(mesh, data: str, model: str, n: int = 64, k: int = 256, m: int = 512):
    """``x`` split over ``data`` by rows and over ``model`` by columns, ``w`` split over
    ``model`` by rows: ``x @ w`` all-reduces over ``model``."""
    x = jax.ShapeDtypeStruct((n, k), jnp.float32, sharding=NamedSharding(mesh, P(data, model)))
    w = jax.ShapeDtypeStruct((k, m), jnp.float32, sharding=NamedSharding(mesh, P(model, None)))
    return x, w


def matmul(x, w):
    return jnp.tanh(x @ w)


def explained(mesh, data: str = "data", model: str = "model", big: bool = False, **kw):
    """``matmul`` explained on ``mesh`` (compile-only); ``big``: an 8 MiB all-reduce per
    device (bandwidth-bound on GPUs), else a few KiB."""
    sizes = (4096, 1024, 4096) if big else (64, 256, 512)
    return sv.explain(matmul, *matmul_args(mesh, data, model, *sizes), run=False, **kw)


def ring_shift_explained(mesh, axis: str = "model", **kw):
    """Each device passes its block to the next along ``axis`` (a ring of ppermutes, as ring
    attention does), compile-only. The shard_map takes its mesh from the argument's type, so
    the same function runs on a reordered mesh (what the placement fix's trial needs)."""
    n = mesh.shape[axis]
    spec = P(*mesh.axis_names)

    def shift(a):
        return jax.lax.ppermute(a, axis, perm=[(i, (i + 1) % n) for i in range(n)])

    def ring_shift(a):
        on = jax.typeof(a).sharding.mesh
        return jax.shard_map(shift, mesh=on, in_specs=spec, out_specs=spec)(a)

    x = jax.ShapeDtypeStruct((64, 64), jnp.float32, sharding=NamedSharding(mesh, spec))
    return sv.explain(ring_shift, x, run=False, **kw)
