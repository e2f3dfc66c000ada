"""Each planted mistake gives its finding, at the right line, with a fix that was tried for
real and helps (figures checked against hand arithmetic where the program makes them plain)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv

from . import planted
from .planted import marker_line


def only(report, kind):
    found = report.findings.of(kind)
    assert len(found) == 1, (kind, report.findings.kinds)
    return found[0]


def helps(finding):
    assert finding.fix is not None, finding.title
    assert finding.check is not None and finding.check.helps, finding.check
    return finding.check


def test_involuntary_full_rematerialization_is_captured_and_tied_to_its_line():
    f = only(planted.involuntary_remat(), "involuntary-remat")
    assert f.where.line == marker_line("involuntary-remat")
    assert f.where.leaf == "a" and f.where.spec == (("data",), ())
    assert "P(None, 'model')" in f.title
    # The whole float32[16, 32] gathered from halves: 2048 - 1024 bytes arrive per device.
    assert f.cost.kind == "moved" and f.cost.bytes == 1024
    assert f.fix.kind == "spec" and f.fix.leaf == "a" and f.fix.spec == ((), ("model",))
    check = helps(f)
    assert check.before.remats >= 1 and check.after.remats == 0
    assert check.after.moved_bytes < check.before.moved_bytes


def test_large_replicated_weight_among_split_peers():
    f = only(planted.replicated(), "replicated")
    assert f.where.leaf == "params/w3" and f.severity == "warning"
    # 256 x 256 float32 whole on each of 8 devices: 7/8 of 256 KiB could go.
    assert f.cost.bytes == 256 * 256 * 4 * 7 // 8
    assert f.fix.kind == "spec" and f.fix.leaf == "params/w3"
    assert "data" in {a for e in f.fix.spec for a in e}
    check = helps(f)
    assert check.after.peak_bytes < check.before.peak_bytes


def test_weight_gathered_again_for_each_checkpointed_layer():
    f = only(planted.regather(), "regather")
    assert f.where.leaf == "w" and f.where.line == marker_line("regather")
    assert "4 times" in f.title
    assert len(f.where.collectives) == 4
    check = helps(f)
    assert check.after.moved_bytes < check.before.moved_bytes


def test_there_and_back_reshard_is_fixed_by_dropping_the_constraint():
    report = planted.reshard_chain()
    f = only(report, "reshard-chain")
    assert f.where.spec == ((), ("model",))
    assert f.fix.kind == "drop-constraint" and f.fix.line == marker_line("reshard-chain")
    assert f.where.collectives and all(
        report.collectives[n - 1].reshard is not None for n in f.where.collectives
    )
    check = helps(f)
    assert check.after.moved_bytes < check.before.moved_bytes / 4


def test_uneven_split_and_its_padding():
    f = only(planted.uneven(), "uneven")
    assert f.where.line == marker_line("uneven")
    # 10 rows over 4 devices: tiles of 3 rows, 12 rows allocated for 10; 2 rows x 64 x 4 B
    # of padding over the 4 tiles = 128 B per device.
    assert f.cost.kind == "memory" and f.cost.bytes == 128
    assert f.fix.kind == "drop-constraint"
    assert helps(f).verdict.startswith("the problem is gone")


def test_collectives_in_a_loop_count_every_trip_and_the_loops_constraint_is_dropped():
    report = planted.loop_collective()
    found = report.findings.of("loop-collective")
    assert found and all(f.where.line == marker_line("loop-collective") for f in found)
    for f in found:
        cs = [report.collectives[n - 1] for n in f.where.collectives]
        assert all(c.trips == 4 for c in cs)
        assert f.cost.bytes == sum(4 * c.moved_bytes for c in cs)
        assert f.fix.kind == "drop-constraint" and f.fix.line == marker_line("loop-constraint")
        check = helps(f)
        assert check.after.collectives == 0 and check.after.moved_bytes == 0


def test_an_all_reduce_on_every_microbatch_has_no_spec_fix():
    report = planted.loop_accumulation()
    f = only(report, "loop-collective")
    assert f.where.line == marker_line("loop-accumulation")
    (n,) = f.where.collectives
    c = report.collectives[n - 1]
    assert c.kind == "all-reduce" and c.trips == 4
    # float32[128, 128] all-reduced over 8 devices: 2 x 64 KiB x 7/8 per run, 4 runs.
    assert c.moved_bytes == 2 * 128 * 128 * 4 * 7 // 8
    assert f.cost.bytes == 4 * c.moved_bytes
    # The carried sum is replicated: no constraint to drop and no spec makes the reduction
    # wait for the last microbatch (that needs the code changed, e.g. one backward pass over
    # the summed loss), so no fix is offered.
    assert f.fix is None


def test_idle_axis_is_folded_into_the_used_one():
    f = only(planted.idle_axis(), "idle-axis")
    assert "'data'" in f.title
    assert f.fix.kind == "mesh" and f.fix.mesh_shape == (1, 8)
    check = helps(f)
    assert check.after.flops_per_device == pytest.approx(check.before.flops_per_device / 2)
    assert f.cost.flops == pytest.approx(check.before.flops_per_device / 2)


def test_arrays_outside_the_program_are_not_its_imbalance():
    """A 64 MiB array left on d0 that the program never reads is not the program's
    imbalance (it was, by the live arrays, until the issue's notebook showed it wrong)."""
    m = planted.mesh((8,), ("data",))
    lone = jax.device_put(jnp.ones((64, 1024, 1024), jnp.uint8), jax.devices()[0])
    try:
        x = planted.put(m, jnp.ones((64, 128)), "data", None)
        report = sv.explain(lambda x: x * 2, x, run=False)
        assert "imbalance" not in {f.kind for f in report.findings}
    finally:
        lone.delete()


def test_peak_over_the_targets_hbm():
    report = planted.over_hbm()
    f = only(report, "over-hbm")
    assert f.severity == "error" and report.findings[0] is f
    hbm = report.target.hardware.hbm_bytes
    assert f.cost.bytes == report.memory.peak_bytes - hbm
    assert f.fix.kind == "spec"
    check = helps(f)
    assert check.after.peak_bytes < check.before.peak_bytes
    assert check.before.seconds is not None and check.after.seconds is not None


def test_all_reduce_that_is_sliced_right_after():
    report = planted.full_reduce()
    f = only(report, "full-reduce")
    assert f.where.line == marker_line("full-reduce")
    (n,) = f.where.collectives
    c = report.collectives[n - 1]
    assert c.kind == "all-reduce" and c.axes == ("data",)
    assert f.cost.bytes == c.moved_bytes // 2
    assert f.fix is None and "cpu compiler kept the all-reduce" in f.why


def test_a_fix_that_does_not_help_is_not_offered():
    report = planted.uneven()  # 'data' is idle, but folding it in changes no flops here
    f = only(report, "idle-axis")
    assert f.fix is None and f.check is None
    assert any("did not help" in n and "idle-axis" in n for n in report.findings.notes)


def test_findings_survive_json_and_diagnose_returns_them():
    report = planted.reshard_chain()
    again = sv.Report.from_json(report.to_json())
    assert again.findings == report.findings
    assert sv.diagnose(report) is report.findings


def test_diagnose_a_function_directly():
    m = planted.mesh()
    a = planted.put(m, jnp.ones((16, 32)), "data", None)
    f = jax.jit(lambda a: a * 2, out_shardings=NamedSharding(m, P(None, "model")))
    assert "involuntary-remat" in sv.diagnose(f, a).kinds


def test_explain_without_diagnosis():
    m = planted.mesh()
    a = planted.put(m, jnp.ones((16, 32)), "data", None)
    f = jax.jit(lambda a: a * 3, out_shardings=NamedSharding(m, P(None, "model")))
    assert sv.explain(f, a, run=False, diagnose=False).findings is None
    assert sv.explain(f, a, run=False).findings.kinds == ("involuntary-remat",)


def test_a_weight_left_whole_beside_its_split_partner_is_replicated_with_a_checked_fix():
    """Issue 29: ``mlp(x, w1, w2)`` with w1 (128, 2048) split over 'model' by columns and w2
    (2048, 128), 1 MiB, left whole: loose arguments are one another's peers, and the fix
    splits w2's rows (the dim w1 splits) over 'model'."""
    forward, args = planted.replicated_partner_program()
    report = sv.explain(forward, *args, run=False).try_fixes()
    f = only(report, "replicated")
    assert f.where.leaf == "w2" and "'model'" in f.title
    assert f.fix.kind == "spec" and f.fix.leaf == "w2"
    assert f.fix.spec == (("model",), ())  # Megatron's row split
    check = helps(f)
    assert (
        check.after.moved_bytes < check.before.moved_bytes
        or check.after.peak_bytes < check.before.peak_bytes
    )
    assert check.after.peak_bytes < check.before.peak_bytes  # 3/4 of 1 MiB goes
