"""One cost model: the lower bound, the predicted step and the per-op figures read the same
flops and HBM bytes of each op, so the bound (the largest of compute, memory and
communication, each added up over the ops) is never above the ops one after another (each
op at the largest of its own parts) plus what the schedule leaves exposed.

Checked on every compiled fixture the test suite keeps (CPU, TPU and GPU programs, loops,
offloads) and on a small hypothesis family of compiled programs and meshes."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardviz.analysis.estimate import with_estimate
from shardviz.analysis.estimate.predict import Rates, op_parts, op_seconds, rates_of
from shardviz.capture.hlo.collectives import collective_trip_counts, collectives_of_hlo
from shardviz.capture.hlo.loops import computation_runs, loops_of
from shardviz.capture.hlo.op_work import op_work
from shardviz.capture.hlo.text import parse_hlo_module
from shardviz.model import Cost, Device, Estimate, MemoryReport, MeshLayout, Report, TreeLayout

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
#: Every saved compile: the module the device runs (not the passes' dumps beside it).
PROGRAMS = sorted(
    str(p.relative_to(FIXTURES))
    for folder in ("hlo", "backends", "loops", "offload")
    for p in (FIXTURES / folder).glob("*.txt")
    if "." not in p.stem and not p.stem.startswith("hand_") and "HloModule" in p.read_text()[:200]
)
#: v6e: a chip whose matmuls are predicted below the peak (``matmul_efficiency``).
TARGETS = ("v5e", "v5p", "v6e", "h100")


@cache
def _program(name: str) -> tuple[Cost, tuple, dict, int]:
    """The fixture's per-op work, its ledger (on a one-axis mesh of its partitions), the
    ledger's runs per step and the compiler's bytes accessed once."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    module = parse_hlo_module(text)
    runs = computation_runs(module, loops_of(module))
    ops = op_work(module, runs)
    found = re.search(r"num_partitions=(\d+)", text[:2000])
    n = int(found.group(1)) if found else 1
    facts = FIXTURES / name.replace(".txt", ".json")
    once = json.loads(facts.read_text()).get("once", {}) if facts.exists() else {}
    cost = Cost(once.get("flops"), once.get("bytes accessed"), None, None, ops=ops)
    mesh = MeshLayout(("d",), (n,), tuple(Device(i) for i in range(n)))
    try:
        ledger = collectives_of_hlo(text, mesh, tuple(range(n)))
    except Exception:  # a ledger the one-axis mesh cannot name: the ops alone
        ledger = ()
    return cost, ledger, collective_trip_counts(module), n


def _report(cost: Cost, ledger: tuple, n: int) -> Report:
    mesh = MeshLayout(("d",), (n,), tuple(Device(i) for i in range(n)))
    return Report(
        function="step", platform="cpu", mesh=mesh, arguments=TreeLayout(()),
        outputs=TreeLayout(()), collectives=ledger, intermediates=(),
        memory=MemoryReport(0, 0, 0, 0, 0, 0), cost=cost,
    )  # fmt: skip


def _check(estimate: Estimate, ops: tuple, rates: Rates) -> None:
    """The bound's compute and memory terms are the per-op figures added up (the memory
    term with the transfers' HBM bytes, a prefetch's too; compute at the peak); the bound is
    at most the predicted step; compute, and the HBM bytes of the ops that are not
    transfers, at most the ops one after another (timed at the chip's matmul efficiency)."""
    assert estimate.predicted_seconds is not None
    ops_seconds = estimate.predicted_seconds - (estimate.predicted_exposed_seconds or 0.0)
    slack = 1e-9 * max(estimate.predicted_seconds, 1e-12)
    peak, hbm_bw, host_bw = rates.peaks, rates.hbm_bandwidth, rates.host_bandwidth
    parts = [(op_parts(o, peak, hbm_bw, host_bw), o.runs, o.transfer) for o in ops]
    compute = sum(p[0] * n for p, n, _ in parts)
    memory = sum(p[1] * n for p, n, _ in parts)
    assert estimate.compute_seconds == pytest.approx(compute)
    assert estimate.memory_seconds == pytest.approx(memory)
    assert estimate.step_seconds <= estimate.predicted_seconds + slack
    assert compute <= ops_seconds + slack
    assert sum(p[1] * n for p, n, t in parts if not t) <= ops_seconds + slack
    busy = sum(
        op_seconds(o, peak, hbm_bw, host_bw, rates.efficiency) * o.runs
        for o in ops
        if not o.transfer
    )
    assert ops_seconds == pytest.approx(busy)


def test_every_fixture_program_is_found() -> None:
    assert len(PROGRAMS) >= 40 and "backends/v5p_megatron.txt" in PROGRAMS


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_the_bound_is_never_above_the_prediction_on_every_fixture(name: str, target: str) -> None:
    cost, ledger, trips, n = _program(name)
    report = with_estimate(_report(cost, ledger, n), target, trip_counts=trips)
    e = report.estimate
    assert e is not None and report.target is not None
    _check(e, cost.ops, rates_of(report.target))
    if cost.bytes_accessed_per_device is not None:  # the compiler's figure, said apart
        assert any("the compiler's bytes accessed" in note for note in e.notes), e.notes


def test_the_compilers_bytes_no_longer_set_the_memory_term() -> None:
    # The v5e scan: the compiler counts buffers the TPU keeps in VMEM; the ops do not.
    cost, ledger, trips, n = _program("loops/v5e_scan.txt")
    e = with_estimate(_report(cost, ledger, n), "v5e", trip_counts=trips).estimate
    assert e is not None and e.memory_seconds is not None
    hbm = sum((o.hbm_bytes + o.host_bytes) * o.runs for o in cost.ops)
    assert cost.bytes_accessed_per_device is not None and hbm < cost.bytes_accessed_per_device
    assert e.memory_seconds == pytest.approx(hbm / 8.1e11)


# --- a small family of compiled programs on small meshes ---------------------------------


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    layers=st.integers(1, 3),
    width=st.sampled_from((64, 128, 256)),
    shape=st.sampled_from(((8,), (2, 4), (4, 2))),
    scan=st.booleans(),
    target=st.sampled_from(TARGETS),
)
def test_the_bound_is_never_above_the_prediction_on_compiled_programs(
    layers: int, width: int, shape: tuple[int, ...], scan: bool, target: str
) -> None:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import shardviz as sv

    names = ("data", "model")[: len(shape)]
    mesh = jax.make_mesh(shape, names, axis_types=(jax.sharding.AxisType.Auto,) * len(shape))
    model = names[-1] if len(names) > 1 else None

    def loss(ws, x):
        def layer(h, w):
            return jnp.tanh(h @ w), None

        if scan:
            h, _ = jax.lax.scan(layer, x, ws)
        else:
            h = x
            for k in range(layers):
                h, _ = layer(h, ws[k])
        return jnp.mean(h**2)

    def step(ws, x):
        return jax.tree.map(lambda w, g: w - 0.1 * g, ws, jax.grad(loss)(ws, x))

    ws = jax.ShapeDtypeStruct(
        (layers, width, width), jnp.float32, sharding=NamedSharding(mesh, P(None, None, model))
    )
    x = jax.ShapeDtypeStruct((64, width), jnp.float32, sharding=NamedSharding(mesh, P("data")))
    report = sv.explain(step, ws, x, run=False, target=target)
    e = report.estimate
    assert e is not None and e.predicted_seconds is not None
    assert e.step_seconds <= e.predicted_seconds * (1 + 1e-9)
    ops_seconds = e.predicted_seconds - (e.predicted_exposed_seconds or 0.0)
    assert (e.compute_seconds or 0.0) <= ops_seconds * (1 + 1e-9)
