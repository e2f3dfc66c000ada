"""Placement on real TPU topologies (libtpu's deviceless devices carry their chip coords).

Skipped without the ``shardviz[tpu]`` extra. libtpu prints harmless warnings on stderr.
"""

from __future__ import annotations

import os

# libtpu takes a machine-wide lock (/tmp/libtpu_lockfile) unless told that several processes
# may load it; deviceless topologies need no exclusive TPU, so let parallel test runs share.
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from shardviz.analysis.estimate import collective_time, place, target_of_mesh  # noqa: E402
from shardviz.analysis.estimate.placement import chip_of_index  # noqa: E402
from shardviz.model import Collective  # noqa: E402

jax = pytest.importorskip("jax")
topology_mod = pytest.importorskip("shardviz.capture.topology")
mesh_mod = pytest.importorskip("shardviz.capture.mesh")


def topo(name: str):
    try:
        return topology_mod.topology(name)
    except topology_mod.TopologyError as err:
        pytest.skip(str(err))


def layout_of(name: str):
    """The topology's devices as a 1-D mesh layout, in jax's order."""
    t = topo(name)
    mesh = jax.sharding.Mesh(np.array(t.devices, dtype=object), ("all",))
    return mesh_mod.mesh_layout(mesh)


def gather_along(layout, axis: int, nbytes: int = 2**24) -> Collective:
    """An all-gather whose groups run along one physical axis (devices sharing the others)."""
    groups: dict[tuple, list[int]] = {}
    for d in layout.devices:
        if d.core_on_chip:
            continue
        key = tuple(c for a, c in enumerate(d.coords) if a != axis)
        groups.setdefault(key, []).append(d.id)
    gs = tuple(tuple(g) for g in groups.values())
    n = len(gs[0])
    return Collective("ag", "all-gather", "bf16", (1,), "bf16", (1,), nbytes // n, nbytes, 0, n,
                      gs, ())  # fmt: skip


@pytest.mark.parametrize("name", ["v5e:4x4", "v5e:16x16", "v5p:2x2x2", "v6e:4x4"])
def test_devices_carry_coords_in_jax_id_order(name):
    layout = layout_of(name)
    target = target_of_mesh(layout)
    assert target is not None
    for d in layout.devices:
        assert d.coords is not None
        assert tuple(d.coords[: len(target.shape)]) == chip_of_index(d.id, target.shape)


@pytest.mark.parametrize(
    ("name", "shape", "wraps", "hosts"),
    [
        ("v5e:4x4", (4, 4), (False, False), 4),
        ("v5e:16x16", (16, 16), (True, True), 64),
        ("v5p:2x2x2", (2, 2, 2), (False, False, False), 2),
    ],
)
def test_target_read_off_the_devices(name, shape, wraps, hosts):
    target = target_of_mesh(layout_of(name))
    assert target.shape == shape
    assert target.wraparound == wraps
    assert target.num_hosts == hosts
    assert target.name == name


def test_v4_lists_two_devices_per_chip():
    target = target_of_mesh(layout_of("v4:2x2x2"))
    assert target.devices_per_chip == 2
    assert target.shape == (2, 2, 2)
    layout = layout_of("v4:2x2x2")
    assert {d.core_on_chip for d in layout.devices} == {0, 1}


def test_along_x_of_a_16x16_is_a_ring_of_a_4x4_a_line():
    for name, ring in (("v5e:16x16", True), ("v5e:4x4", False)):
        layout = layout_of(name)
        target = target_of_mesh(layout)
        t = collective_time(gather_along(layout, 0), place(layout, target), target)
        assert ("ring" in t.formula) is ring, (name, t.formula)
        assert ("line" in t.formula) is (not ring), (name, t.formula)


def test_groups_across_hosts_inside_a_slice_use_ici_not_dcn():
    # v5e:4x4: 4 hosts of 2x2 chips; a row along x crosses two hosts, still over ICI.
    layout = layout_of("v5e:4x4")
    target = target_of_mesh(layout)
    c = gather_along(layout, 0)
    hosts_in_group = {layout.device(i).process_index for i in c.groups[0]}
    assert len(hosts_in_group) == 2
    t = collective_time(c, place(layout, target), target)
    assert t.link == "ICI"
    assert place(layout, target).assumed == ""


def test_groups_across_slices_go_over_dcn():
    from jax.experimental import topologies

    try:
        desc = topologies.get_topology_desc("v5e:2x2", "tpu", num_slices=2)
    except Exception as err:  # noqa: BLE001 - libtpu refuses in some builds
        pytest.skip(f"multi-slice topology unavailable: {err}")
    mesh = jax.sharding.Mesh(np.array(desc.devices, dtype=object).reshape(2, 4), ("dcn", "ici"))
    layout = mesh_mod.mesh_layout(mesh)
    assert {d.slice_index for d in layout.devices} == {0, 1}
    target = target_of_mesh(layout)
    assert target.num_slices == 2
    placement = place(layout, target)
    ids = layout.device_ids
    across = tuple((ids[i], ids[i + 4]) for i in range(4))
    nbytes = 2**24
    c = Collective("ag", "all-gather", "bf16", (1,), "bf16", (1,), nbytes // 2, nbytes, 0, 2,
                   across, ("dcn",))  # fmt: skip
    t = collective_time(c, placement, target)
    assert t.link == "ICI + DCN"
    # one chip per slice in each group: its own DCN share, 3.125e9 B/s (tpus.md)
    assert t.seconds == pytest.approx(nbytes / 2 / 3.125e9)
