"""A ring group on several GPU hosts: the picture (rings, link loads) and the timing follow one
two-level rule, a ring inside each host and each GPU sending its share to the other hosts
over its own network link (issue 40: the picture drew every hop across hosts while the
timing split the network traffic over the host's GPUs)."""

from __future__ import annotations

from shardviz.analysis.estimate.physical import routed_transfers
from shardviz.analysis.estimate.placement import place
from tests.analysis.estimate.physical_programs import by_chip, explained, mesh_of, sv


def _straddling():
    """'model' groups of 8 taking their GPUs from both hosts in turn (4 + 4), as notebook 11."""
    chips = by_chip("h100:2x8")
    straddling = [chips[(i % 2, i // 2)] for i in range(16)]
    return explained(mesh_of(straddling, (2, 8), ("data", "model")), big=True)


def test_a_straddling_ring_is_drawn_host_by_host():
    report = _straddling()
    p = sv.physical(report)
    model = p.axis("model")
    assert model.shape == "hosts"
    ring = model.rings[0]
    host = {c.device: c.host for c in p.chips}
    hosts = [host[d] for d in ring.devices]
    crossings = sum(hosts[i] != hosts[(i + 1) % len(hosts)] for i in range(len(hosts)))
    assert crossings == 2, "one step into the other host, one step back"
    groups = {frozenset(g) for c in report.collectives for g in c.groups}
    assert frozenset(ring.devices) in groups


def test_each_gpu_sends_its_share_over_the_network_and_the_rest_over_nvlink():
    report = _straddling()
    (c,) = [c for c in report.collectives if c.kind == "all-reduce"]
    v, n, k = c.in_bytes, 8, 4  # the volume, the group, its GPUs on each host
    p = sv.physical(report)
    assert p.device_network_bytes == 2 * v // n  # its own 1/n, twice (all-reduce)
    assert p.device_chip_bytes == 2 * v * (k - 1) // k  # the ring inside its host
    # per device and summed are different figures: 16 GPUs send the network's bytes
    assert p.network_bytes == 16 * p.device_network_bytes
    # the bytes still add up to the ledger's: every byte one hop
    assert p.link_bytes == p.ledger_bytes == 16 * c.moved_bytes


def test_the_timing_is_the_busiest_gpu_bytes_over_its_link():
    report = _straddling()
    (c,) = [c for c in report.collectives if c.kind == "all-reduce"]
    p = sv.physical(report)
    hw = sv.hardware("h100")
    network = p.device_network_bytes / hw.network_bandwidth_per_device
    nvlink = p.device_chip_bytes / hw.nvlink_bandwidth
    assert c.estimated_seconds == max(network, nvlink, 2 * hw.hop_latency * (3 + 1))
    assert network > nvlink, "the network's share is the slower one here"


def test_in_one_host_the_same_bytes_go_over_nvlink_only():
    report = _straddling()
    (finding,) = report.try_fixes().findings.of("placement")
    fixed = sv.physical(report, order=finding.fix.devices)
    (c,) = [c for c in report.collectives if c.kind == "all-reduce"]
    hw = sv.hardware("h100")
    assert fixed.device_network_bytes == 0 and fixed.device_chip_bytes == c.moved_bytes
    assert fixed.collective_seconds == c.moved_bytes / hw.nvlink_bandwidth


def test_routed_bytes_add_up_to_the_ledger_for_uneven_hosts():
    chips = by_chip("h100:2x8")
    # 'model' groups of 4: three GPUs of one host and one of the other
    order = [chips[(0, g)] for g in range(3)] + [chips[(1, 0)]]
    order += [chips[(1, g)] for g in range(1, 4)] + [chips[(0, 3)]]
    order += [chips[(h, g)] for h in range(2) for g in range(4, 8)]
    report = explained(mesh_of(order, (4, 4), ("data", "model")), big=True)
    mesh = report.mesh
    target = report.target
    placement = place(mesh, target)
    for c in report.collectives:
        sent = routed_transfers(c, placement, target)
        assert sum(b for _, _, b in sent) <= len(c.groups) * len(c.groups[0]) * c.moved_bytes
        assert sum(b for _, _, b in sent) >= len(c.groups) * len(c.groups[0]) * (c.moved_bytes - 2)
