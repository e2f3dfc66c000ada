"""The mesh on the physical chips: rings that close, lines, jumps, hosts; link loads that
add up to the ledger's bytes (each byte counted once per hop it travels)."""

from __future__ import annotations

import pytest

from shardviz.analysis.estimate.physical import axis_rings, layout_on_chips, route
from shardviz.analysis.estimate.placement import place
from shardviz.capture.mesh import mesh_layout
from shardviz.errors import HardwareError, MeshError, ShardvizError
from tests.analysis.estimate.physical_programs import by_chip, explained, jax, mesh_of, sv, topo


def _rings(mesh, name: str):
    layout = mesh_layout(mesh)
    target = topo(name).target
    return {a.axis: a for a in axis_rings(layout, place(layout, target), target)}


def test_a_mesh_axis_along_a_full_torus_axis_closes_over_wraparound():
    chips = by_chip("v5p:4x4x4")
    # 'model' along x (4 chips, wraps on a 4x4x4 cube), 'data' over y and z.
    devices = [chips[(x, y, z)] for z in range(4) for y in range(4) for x in range(4)]
    rings = _rings(mesh_of(devices, (16, 4), ("data", "model")), "v5p:4x4x4")
    model = rings["model"]
    assert model.shape == "ring" and model.closes and model.wraps
    assert all(r.hops == (1, 1, 1, 1) for r in model.rings)
    assert len(model.rings) == 16


def test_an_axis_of_two_on_a_four_long_axis_does_not_close():
    chips = by_chip("v5e:4x4")
    devices = [chips[(x, y)] for y in range(4) for x in range(4)]
    rings = _rings(mesh_of(devices, (8, 2), ("data", "model")), "v5e:4x4")
    assert rings["model"].shape == "line" and not rings["model"].closes
    assert not rings["model"].wraps


def test_a_four_chip_line_without_wraparound_doubles_back():
    chips = by_chip("v5e:4x4")  # v5e wraps only axes of 16
    devices = [chips[(x, y)] for y in range(4) for x in range(4)]
    rings = _rings(mesh_of(devices, (4, 4), ("data", "model")), "v5e:4x4")
    assert rings["model"].shape == "line"
    assert rings["model"].rings[0].hops == (1, 1, 1, 3)


def test_a_two_by_two_square_in_ring_order_closes_and_in_z_order_jumps():
    """jax#20305: four chips in a 2x2 square are a ring only in the order that walks it."""
    chips = by_chip("v5e:4x4")
    square = [(0, 0), (1, 0), (1, 1), (0, 1)]
    z_order = [(0, 0), (1, 0), (0, 1), (1, 1)]

    def axis(order):
        rest = [c for c in chips if c not in order]
        devices = [chips[c] for c in order + rest]
        return _rings(mesh_of(devices, (4, 4), ("data", "model")), "v5e:4x4")["model"]

    assert axis(square).rings[0].shape == "ring" and not axis(square).rings[0].wraps
    assert axis(z_order).rings[0].shape == "jumps"
    assert axis(z_order).rings[0].hops == (1, 2, 1, 2)


def test_gpu_rings_inside_a_host_and_across_hosts():
    chips = by_chip("h100:2x8")
    in_host = [chips[(h, g)] for h in range(2) for g in range(8)]
    rings = _rings(mesh_of(in_host, (2, 8), ("data", "model")), "h100:2x8")
    assert rings["model"].shape == "nvlink" and rings["model"].closes
    assert rings["data"].shape == "hosts"
    across = [chips[(h, g)] for g in range(8) for h in range(2)]
    rings = _rings(mesh_of(across, (8, 2), ("data", "model")), "h100:2x8")
    assert rings["model"].shape == "hosts" and not rings["model"].closes
    assert rings["model"].rings[0].hosts == 2


def test_routes_take_the_wraparound_link_when_shorter():
    t = topo("v5p:4x4x4").target
    layout = mesh_layout(mesh_of(list(by_chip("v5p:4x4x4").values()), (64,), ("all",)))
    placement = place(layout, t)
    ids = {placement[d].chip: d for d in layout.device_ids}
    hops = route(placement[ids[(0, 0, 0)]], placement[ids[(3, 0, 0)]], t)
    assert len(hops) == 1 and hops[0][2] == "wrap"
    assert len(route(placement[ids[(0, 0, 0)]], placement[ids[(2, 3, 1)]], t)) == 2 + 1 + 1


def test_link_loads_on_a_ring_of_neighbours_sum_to_the_ledger():
    chips = by_chip("v5p:4x4x4")
    devices = [chips[(x, y, z)] for z in range(4) for y in range(4) for x in range(4)]
    report = explained(mesh_of(devices, (16, 4), ("data", "model")))
    assert report.collectives, "the matmul all-reduces over 'model'"
    ledger = sum(c.moved_bytes * len(g) * (c.trips or 1) for c in report.collectives
                 for g in c.groups)  # fmt: skip
    p = sv.physical(report)
    assert p.axis("model").closes
    assert p.ledger_bytes == ledger > 0
    assert p.link_bytes == ledger
    assert sum(x.bytes for x in p.links) == ledger
    assert p.axis("model").link_bytes == p.axis("model").ledger_bytes == ledger


def test_link_loads_count_each_byte_once_per_hop():
    chips = by_chip("v5e:4x4")
    devices = [chips[(x, y)] for y in range(4) for x in range(4)]
    report = explained(mesh_of(devices, (4, 4), ("data", "model")))
    p = sv.physical(report)
    model = p.axis("model")
    hops = sum(model.rings[0].hops)  # a line: 1 + 1 + 1 + 3 back
    assert p.link_bytes == p.ledger_bytes * hops // len(model.rings[0].hops)
    assert p.busiest(1)[0].bytes == max(x.bytes for x in p.links)
    # v5e 4x4: 4 hosts of 2x2 chips; the rings along x cross from one host to the next
    assert 0 < p.cross_host_bytes < p.link_bytes and p.network_bytes == 0


def test_gpu_traffic_across_hosts_goes_over_the_network():
    chips = by_chip("h100:2x8")
    across = [chips[(h, g)] for g in range(8) for h in range(2)]
    report = explained(mesh_of(across, (8, 2), ("data", "model")))
    p = sv.physical(report)
    assert p.network_bytes == p.link_bytes == p.ledger_bytes > 0
    assert {x.kind for x in p.links if x.bytes} == {"network"}


def test_an_order_that_is_not_a_permutation_is_an_error_naming_the_fix():
    chips = by_chip("v5e:4x4")
    devices = [chips[(x, y)] for y in range(4) for x in range(4)]
    mesh = mesh_of(devices, (4, 4), ("data", "model"))
    report = explained(mesh)
    ids = [d.id for d in devices]
    for bad in ([*ids[:-1], ids[0]], ids[:-1], [*ids[:-1], 99]):
        with pytest.raises(MeshError, match="permutation") as err:
            sv.physical(report, order=bad)
        assert "Fix: list each of the mesh's 16 device ids once" in str(err.value)
        with pytest.raises(ShardvizError, match="permutation"):
            sv.reordered_mesh(mesh, bad)
    flipped = sv.reordered_mesh(mesh, ids[::-1])
    assert [d.id for d in flipped.devices.flat] == ids[::-1]
    assert flipped.axis_names == mesh.axis_names


def test_no_target_is_an_error_naming_one():
    mesh = mesh_of(jax.devices()[:8], (2, 4), ("data", "model"))
    report = explained(mesh)
    with pytest.raises(HardwareError, match='target="v5e:4x4"'):
        sv.physical(report)
    p = sv.physical(report, target="v5e:2x4")
    assert p.target.shape == (2, 4) and p.notes  # placed in id order, and it says so


def test_the_layout_of_another_order_moves_the_ledger_with_the_positions():
    chips = by_chip("v5e:4x4")
    devices = [chips[(x, y)] for y in range(4) for x in range(4)]
    report = explained(mesh_of(devices, (4, 4), ("data", "model")))
    square = [(0, 0), (1, 0), (1, 1), (0, 1)]
    order = [chips[(bx * 2 + cx, by * 2 + cy)].id for by in range(2) for bx in range(2)
             for cx, cy in square]  # fmt: skip
    p = sv.physical(report, order=order)
    assert p.axis("model").shape == "ring"
    assert p.link_bytes == p.ledger_bytes
    assert p.collective_seconds is not None
    assert layout_on_chips(report, report.target).link_bytes > p.link_bytes
