"""The ``placement`` finding: a mesh whose devices sit badly on the chips, and its fix, the
same devices reordered, checked by recompiling and by the communication the predicted step
waits for."""

from __future__ import annotations

from shardviz.analysis.detect import device_order
from shardviz.analysis.estimate.orders import best_order, block_walk
from tests.analysis.estimate.physical_programs import (
    by_chip,
    explained,
    mesh_of,
    ring_shift_explained,
    sv,
)


def _strided_v5e():
    """A 4x4 ('data', 'model') mesh on v5e:4x4 whose 'model' groups stride across the slice:
    members two chips apart in x and y."""
    chips = by_chip("v5e:4x4")
    devices = [
        chips[(2 * (m % 2) + d % 2, 2 * (m // 2) + d // 2)] for d in range(4) for m in range(4)
    ]
    return mesh_of(devices, (4, 4), ("data", "model"))


def _check_fix(report):
    found = report.findings.of("placement")
    assert len(found) == 1, report.findings.kinds
    finding = found[0]
    assert finding.untried and finding.fix is None
    mesh_ids = report.mesh.device_ids
    tried = report.try_fixes().findings.of("placement")[0]
    fix, check = tried.fix, tried.check
    assert fix is not None and check is not None, tried.unfixed
    assert fix.kind == "mesh" and sorted(fix.devices) == sorted(mesh_ids)
    assert fix.devices != mesh_ids and fix.mesh_shape == report.mesh.axis_sizes
    # mesh_utils.create_device_mesh's order where it helps, else an order tiled to the chips
    assert "sv.reordered_mesh(" in fix.code or "mesh_utils.create_device_mesh(" in fix.code
    b, a = check.before.communication_seconds, check.after.communication_seconds
    assert b is not None and a is not None and a < b
    assert check.after.moved_bytes == check.before.moved_bytes
    # Judged on the communication the predicted step waits for: it and the step both drop.
    eb, ea = check.before.exposed_communication_seconds, check.after.exposed_communication_seconds
    assert eb is not None and ea is not None and ea < eb
    pb, pa = check.before.predicted_seconds, check.after.predicted_seconds
    assert pb is not None and pa is not None and pa < pb
    assert "exposed communication" in check.verdict and "predicted step" in check.verdict
    assert "exposed communication" in finding.title
    return fix, a, b


def test_a_strided_model_axis_is_a_finding_whose_reordered_mesh_cuts_communication():
    mesh = _strided_v5e()
    report = explained(mesh)
    assert report.estimate is not None
    assert sv.physical(report).axis("model").shape == "jumps"
    fix, after, before = _check_fix(report)
    assert before == report.estimate.collective_seconds
    # The fix as the user applies it: the same program on the reordered mesh.
    again = explained(sv.reordered_mesh(mesh, fix.devices))
    assert again.estimate.collective_seconds == after < before
    assert "placement" not in again.findings.kinds
    assert sv.physical(again).axis("model").closes


def test_a_model_axis_split_across_gpu_hosts_is_a_finding():
    chips = by_chip("h100:2x8")
    across = [chips[(h, g)] for g in range(8) for h in range(2)]
    report = explained(mesh_of(across, (8, 2), ("data", "model")), big=True)
    assert sv.physical(report).axis("model").shape == "hosts"
    fix, _, _ = _check_fix(report)
    mesh = sv.reordered_mesh(mesh_of(across, (8, 2), ("data", "model")), fix.devices)
    again = explained(mesh, big=True)
    assert sv.physical(again).axis("model").shape == "nvlink"


def test_a_ring_of_ppermutes_that_jumps_on_a_v5p_cube_is_a_finding():
    chips = by_chip("v5p:4x4x4")
    # 'model' on x = 0, 2, 1, 3: every other step of the ring jumps two chips.
    devices = [chips[(x, y, z)] for z in range(4) for y in range(4) for x in (0, 2, 1, 3)]
    mesh = mesh_of(devices, (16, 4), ("data", "model"))
    report = ring_shift_explained(mesh)
    assert {c.kind for c in report.collectives} == {"collective-permute"}
    assert sv.physical(report).axis("model").shape == "jumps"
    fix, _, _ = _check_fix(report)
    again = ring_shift_explained(sv.reordered_mesh(mesh, fix.devices))
    assert sv.physical(again).axis("model").closes


def test_a_mesh_laid_well_is_no_finding():
    chips = by_chip("v5p:4x4x4")
    devices = [chips[(x, y, z)] for z in range(4) for y in range(4) for x in range(4)]
    report = explained(mesh_of(devices, (16, 4), ("data", "model")))
    assert "placement" not in report.findings.kinds
    assert device_order.placement(report) == []


def test_block_walks_close_where_they_can():
    assert block_walk((2, 2)) == [(0, 0), (1, 0), (1, 1), (0, 1)]
    walk = block_walk((2, 4, 1))
    assert walk[0] == (0, 0, 0) and len(set(walk)) == 8
    steps = [sum(abs(p - q) for p, q in zip(a, b, strict=True))
             for a, b in zip(walk, walk[1:] + walk[:1], strict=True)]  # fmt: skip
    assert steps == [1] * 8  # a closed loop
    assert block_walk((4, 1)) == [(0, 0), (1, 0), (2, 0), (3, 0)]


def test_the_best_order_is_a_permutation_no_slower_than_the_report():
    report = explained(_strided_v5e())
    now, best = best_order(report, report.target)
    assert sorted(best.devices) == sorted(now.devices)
    assert best.seconds < now.seconds and best.words


def test_cpu_devices_placed_by_assumption_get_no_advice_on_their_order():
    import jax

    mesh = mesh_of(jax.devices()[:8], (2, 4), ("data", "model"))
    report = explained(mesh, target="v5e:2x4")
    assert report.estimate is not None and report.target.placement  # placed in id order
    assert device_order.placement(report) == []


def test_the_fix_code_names_the_users_mesh():
    from shardviz.analysis.detect.candidate import order_fix
    from shardviz.analysis.detect.fix_code import CodeNames, pasteable

    fix = order_fix((2, 2), (0, 1, 3, 2), "'model' on x2")
    code = pasteable(fix, CodeNames(mesh="pod_mesh")).code
    assert code.startswith("pod_mesh = sv.reordered_mesh(pod_mesh, [0, 1, 3, 2])")
    assert "Mesh your arrays are placed on" in pasteable(fix, CodeNames()).code
