"""Device orders judged by one estimate: a collective's time depends on the links its rings
use in that order (the routing ``sv.physical`` shows), so the physical view, the estimate
and the ``placement`` finding agree; ``mesh_utils.create_device_mesh``'s order, ported
without jax, is offered as the fix where it cuts both the link load and the exposed
communication. Checked deviceless on v5p:4x4x4 with a naive order (the topology's device
list reshaped) against create_device_mesh's."""

from __future__ import annotations

import pytest

from shardviz.analysis.detect import device_order
from shardviz.analysis.estimate.collectives import collective_time
from shardviz.analysis.estimate.orders import standard_order
from shardviz.analysis.estimate.placement import Placement, Site, place
from shardviz.analysis.estimate.rings import ring_penalty
from shardviz.model import Collective
from shardviz.model.mesh import Device, MeshLayout
from shardviz.model.targets import target_for
from shardviz.model.units import format_bytes, format_seconds
from tests.analysis.estimate.physical_programs import NamedSharding, P, jax, jnp, np, sv, topo

SHAPE, NAMES = (4, 4, 4), ("data", "fsdp", "tensor")


def _layout(devices, shape) -> MeshLayout:
    names = tuple(f"a{i}" for i in range(len(shape)))
    return MeshLayout(names, shape, tuple(
        Device(d.id, process_index=d.process_index, platform="tpu", kind=d.device_kind,
               coords=tuple(d.coords), core_on_chip=d.core_on_chip)
        for d in devices
    ))  # fmt: skip


@pytest.mark.parametrize(
    "name, shapes",
    [
        ("v5p:4x4x4", [(4, 4, 4), (16, 4), (1, 4, 4, 4), (2, 2, 16), (64,)]),
        ("v5p:2x2x2", [(2, 4), (8,)]),
        ("v5e:4x4", [(4, 4), (16,), (2, 8)]),
        ("v5e:2x4", [(2, 4)]),
    ],
)
def test_the_standard_order_is_create_device_meshs(name, shapes) -> None:
    from jax.experimental import mesh_utils

    devices = list(topo(name).devices)
    target = target_for(name, len(devices))
    for shape in shapes:
        try:
            want = tuple(d.id for d in mesh_utils.create_device_mesh(shape, devices).flat)
        except NotImplementedError:  # no physical axes multiply to an axis: both refuse
            want = None
        layout = _layout(devices, shape)
        assert standard_order(layout, place(layout, target), target) == want, shape


def test_a_ring_that_jumps_loads_the_busiest_link_more_and_takes_more_hops() -> None:
    target = target_for("v5p:4x4x4", 64)
    sites = Placement({i: Site((i % 4, i // 4 % 4, i // 16), 0) for i in range(64)})
    in_order = [tuple(range(k, k + 4)) for k in range(0, 64, 4)]
    jumping = [(k, k + 2, k + 1, k + 3) for k in range(0, 64, 4)]
    assert ring_penalty(in_order, sites, target) == (1.0, 1.0)
    busier, longer = ring_penalty(jumping, sites, target)
    assert busier > 1 and longer == pytest.approx(6 / 4)  # hops 2+1+2+1 against 4

    def gather(groups) -> Collective:
        return Collective("ag", "all-gather", "bf16", (1,), "bf16", (4,), 1 << 20, 1 << 22,
                          3 << 20, 4, tuple(groups), ("model",))  # fmt: skip

    good, bad = (collective_time(gather(g), sites, target) for g in (in_order, jumping))
    assert bad.seconds == pytest.approx(good.seconds * busier)
    assert "rings in this device order" in bad.formula and "rings" not in good.formula


def _step(params, x):
    def loss(p):
        h = jax.nn.gelu(x @ p["w1"]) @ p["w2"]
        return jnp.mean(h.astype(jnp.float32) ** 2)

    grads = jax.grad(loss)(params)
    return jax.tree.map(lambda w, g: w - 0.01 * g, params, grads)


def _explained(mesh):
    """An FSDP + tensor-parallel MLP step on ``mesh`` (compile-only)."""

    def spec(shape, *axes):
        return jax.ShapeDtypeStruct(shape, jnp.bfloat16, sharding=NamedSharding(mesh, P(*axes)))

    params = {
        "w1": spec((1024, 4096), "fsdp", "tensor"),
        "w2": spec((4096, 1024), "tensor", "fsdp"),
    }
    return sv.explain(_step, params, spec((2048, 1024), ("data", "fsdp"), None), run=False)


@pytest.fixture(scope="module")
def orders():
    from jax.experimental import mesh_utils

    devices = list(topo("v5p:4x4x4").devices)
    naive = jax.sharding.Mesh(np.array(devices).reshape(SHAPE), NAMES)
    standard = jax.sharding.Mesh(mesh_utils.create_device_mesh(SHAPE, devices), NAMES)
    return naive, standard


def test_the_view_and_the_estimate_judge_the_orders_alike(orders) -> None:
    naive, standard = orders
    report = _explained(naive)
    ids = [d.id for d in standard.devices.flat]
    before, after = sv.physical(report), sv.physical(report, order=ids)
    assert before.axis("fsdp").shape == "jumps" and after.axis("fsdp").closes
    assert after.link_bytes < before.link_bytes
    # The estimate follows the links: fewer bytes on them, less time.
    assert after.collective_seconds < before.collective_seconds
    assert before.collective_seconds == report.estimate.collective_seconds
    # ... and is what the program compiled on the reordered mesh estimates.
    again = _explained(standard)
    assert again.estimate.collective_seconds == pytest.approx(after.collective_seconds)
    assert sv.physical(again).link_bytes == after.link_bytes


def test_the_naive_order_is_a_finding_whose_fix_is_create_device_mesh(orders) -> None:
    naive, standard = orders
    report = _explained(naive)
    found = report.findings.of("placement")
    assert len(found) == 1, report.findings.kinds
    finding = found[0]
    assert "mesh_utils.create_device_mesh's order cuts the exposed communication" in finding.title
    ids = [d.id for d in standard.devices.flat]
    links = f"{format_bytes(sv.physical(report).link_bytes)} -> "
    links += format_bytes(sv.physical(report, order=ids).link_bytes)
    assert f"the bytes the links carry {links} per step" in finding.why
    cand = device_order.placement(report)[0]
    fix = cand.fixes[0]
    assert fix.devices == tuple(ids) and "mesh_utils.create_device_mesh((4, 4, 4)" in fix.code
    tried = report.try_fixes().findings.of("placement")[0]
    assert tried.fix is not None and tried.check is not None and tried.check.helps
    assert "create_device_mesh" in tried.fix.code
    eb = tried.check.before.exposed_communication_seconds
    ea = tried.check.after.exposed_communication_seconds
    assert eb is not None and ea is not None and ea < eb
    assert format_seconds(eb) in finding.title


def test_create_device_meshs_order_is_no_finding(orders) -> None:
    _, standard = orders
    report = _explained(standard)
    assert "placement" not in report.findings.kinds


def test_the_create_device_mesh_fix_names_the_users_mesh() -> None:
    from shardviz.analysis.detect.fix_code import CodeNames, pasteable

    fix = device_order._standard_fix((4, 4), tuple(range(16)))
    code = pasteable(fix, CodeNames(mesh="pod_mesh")).code
    assert code.splitlines() == [
        "from jax.experimental import mesh_utils",
        "devices = mesh_utils.create_device_mesh((4, 4), pod_mesh.devices.ravel())",
        "pod_mesh = jax.sharding.Mesh(devices, pod_mesh.axis_names, axis_types=pod_mesh.axis_types)",
    ]
