"""Properties of tile layouts that hold for every mesh and spec, checked against jax itself.

Runs on this process's devices (8), and once more in a subprocess with 16 devices.
"""

import math
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.model import ArrayLayout

NUM_DEVICES = len(jax.devices())
NAMES = ("x", "y", "z")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def meshes(draw):
    """A mesh of 1-3 axes on a random subset and order of the devices."""
    naxes = draw(st.integers(1, 3))
    sizes, left = [], NUM_DEVICES
    for _ in range(naxes):
        s = draw(st.sampled_from(_divisors(left)))
        sizes.append(s)
        left //= s
    n = math.prod(sizes)
    ids = draw(st.permutations(list(range(NUM_DEVICES))))[:n]
    return sv.Mesh(ids, sizes, NAMES[:naxes])


@st.composite
def arrays_on(draw, mesh):
    """A (shape, spec) of rank 0-4 that fits ``mesh``: each dim split over unused axes or not."""
    rank = draw(st.integers(0, 4))
    free = list(mesh.axis_names)
    spec, shape = [], []
    for _ in range(rank):
        k = draw(st.integers(0, min(2, len(free))))
        axes = []
        for _ in range(k):
            a = draw(st.sampled_from(free))
            free.remove(a)
            axes.append(a)
        ways = math.prod(mesh.shape()[a] for a in axes)
        shape.append(ways * draw(st.integers(1, 3)))
        spec.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
    return tuple(shape), P(*spec)


@st.composite
def cases(draw):
    mesh = draw(meshes())
    shape, spec = draw(arrays_on(mesh))
    dtype = draw(st.sampled_from([np.float32, np.int8, np.float16]))
    return mesh, shape, spec, dtype


def _check(layout: ArrayLayout, sharding: NamedSharding, shape) -> None:
    # Tiles are exactly jax's own index map.
    expected = {
        d.id: tuple(slice(*s.indices(n)[:2]) for s, n in zip(idx, shape, strict=True))
        for d, idx in sharding.devices_indices_map(shape).items()
    }
    assert {t.device_id: t.index for t in layout.tiles} == expected
    assert len(layout.tiles) == len(sharding.device_set)
    # Every element is held by exactly devices / distinct tiles devices.
    counts = np.zeros(shape, dtype=np.int64)
    for t in layout.tiles:
        counts[t.index] += 1
    assert layout.replication == len(layout.tiles) // layout.num_distinct_tiles
    assert np.all(counts == layout.replication)
    # Bytes add up to the global size times the replication.
    assert sum(t.nbytes for t in layout.tiles) == layout.nbytes * layout.replication
    assert all(t.shape == sharding.shard_shape(shape) for t in layout.tiles)
    # GSPMD's kinds agree with jax.
    assert (layout.kind == "replicated") == sharding.is_fully_replicated
    if layout.kind == "tiled":
        assert layout.num_distinct_tiles == len(layout.tiles)
    # Replica ids count 0.. within each group of holders.
    for group in layout.distinct_tiles:
        assert sorted(t.replica_id for t in group) == list(range(len(group)))
    assert ArrayLayout.from_json(layout.to_json()) == layout


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_hypothetical_layout_matches_jax(case):
    mesh, shape, spec, dtype = case
    sharding = NamedSharding(mesh.jax_mesh, spec)
    layout = sv.layout(jax.ShapeDtypeStruct(shape, dtype, sharding=sharding))
    _check(layout, sharding, shape)
    assert layout == sv.layout((shape, dtype, sharding))
    assert layout.mesh.axis_sizes == mesh.mesh_shape


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_live_array_layout_matches_its_shards(case):
    mesh, shape, spec, dtype = case
    x = sv.mark_sharding(np.zeros(shape, dtype), mesh, spec)
    layout = sv.layout(x)
    _check(layout, x.sharding, shape)
    by_dev = {t.device_id: t for t in layout.tiles}
    for shard in x.addressable_shards:
        t = by_dev[shard.device.id]
        assert t.replica_id == shard.replica_id
        assert t.shape == shard.data.shape
        assert t.nbytes == shard.data.nbytes


@pytest.mark.skipif(NUM_DEVICES != 8, reason="the 16-device run is started from the 8-device one")
def test_properties_on_16_devices():
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "SHARDVIZ_TEST_DEVICES": "16"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
         "-k", "layout_matches"],
        cwd=root, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "2 passed" in out.stdout
