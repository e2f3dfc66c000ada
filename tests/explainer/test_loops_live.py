"""Loops counted right through ``explain``, compiled for CPU, TPU and GPU (deviceless).

The same MLP training step written with its layers stacked and scanned, as a ``fori_loop``
and as a nested scan (microbatches x layers) must give the per-step figures of its unrolled
twin (within 2%): flops, model flops, collectives run per step, bytes moved, estimated
compute and communication seconds. The programs are in tests/fixtures/loops/programs.py.

Bytes accessed are not compared with the jax-level twin: the scanned program really does
more memory traffic (each trip slices its layer's weights out of the stack and writes its
residuals into stacked buffers; measured 1.3-1.7x on these small layers), so its figure is
checked against the compiler's own count of the same program with its loops unrolled by XLA
(tests/capture/test_hlo_loops.py).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

import shardviz as sv  # noqa: E402
from shardviz.capture.topology import topology  # noqa: E402

HAS_TPU = importlib.util.find_spec("libtpu") is not None
HAS_GPU = importlib.util.find_spec("jax_plugins.xla_cuda12") is not None

_spec = importlib.util.spec_from_file_location(
    "loop_programs", Path(__file__).parents[1] / "fixtures" / "loops" / "programs.py"
)
assert _spec is not None and _spec.loader is not None
pr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pr)
#: The programs' file as the views name it: from the working directory.
PROGRAMS = os.path.relpath(Path(__file__).parents[1] / "fixtures" / "loops" / "programs.py")

#: (name, devices to compile for, estimate target): CPU devices estimated as a v5e slice.
BACKENDS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("v5e:2x4", id="tpu", marks=pytest.mark.skipif(not HAS_TPU, reason="needs libtpu")),
    pytest.param(
        "h100:8", id="gpu", marks=pytest.mark.skipif(not HAS_GPU, reason="needs the CUDA plugin")
    ),
]

_reports: dict[tuple, sv.Report] = {}


def mesh_of(backend: str, shape: tuple[int, int]) -> Mesh:
    devices = jax.devices() if backend == "cpu" else list(topology(backend).devices)
    return Mesh(np.array(devices[:8]).reshape(shape), ("data", "model"))


def report(backend: str, program: str, shape=(1, 8), layers: int = pr.L) -> sv.Report:
    key = (backend, program, shape, layers)
    if key not in _reports:
        args = pr.arguments(mesh_of(backend, shape), program, layers)
        target = "v5e:2x4" if backend == "cpu" else None
        _reports[key] = sv.explain(
            pr.PROGRAMS[program], *args, run=False, diagnose=False, target=target
        )
    return _reports[key]


def figures(r: sv.Report) -> dict[str, float]:
    cost, e = r.cost, r.estimate
    assert cost is not None and e is not None
    assert e.compute_seconds is not None
    return {
        "flops": cost.flops_per_device or 0.0,
        "model flops": cost.model_flops_per_device or 0.0,
        "collectives per step": sum(c.trips or 1 for c in r.collectives),
        "bytes moved": sum(c.moved_bytes * (c.trips or 1) for c in r.collectives),
        "compute seconds": e.compute_seconds,
        "communication seconds": e.collective_seconds,
    }


def assert_agree(a: dict, b: dict, keys) -> None:
    for k in keys:
        assert a[k] == pytest.approx(b[k], rel=0.02), k


ALL = ("flops", "model flops", "collectives per step", "bytes moved", "compute seconds",
       "communication seconds")  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("looped", "unrolled"), [("scan", "unrolled"), ("fori", "fori_unrolled")])
def test_a_loop_and_its_unrolled_twin_agree_per_step(backend, looped, unrolled) -> None:
    a, b = report(backend, looped), report(backend, unrolled)
    assert a.cost is not None and len(a.cost.loops) == 2 and not a.cost.lower_bound
    assert_agree(figures(a), figures(b), ALL)
    # The compiler's own count (each body once) is a quarter of that: what shardviz showed.
    assert a.cost.compiler_flops_per_device is not None
    assert a.cost.compiler_flops_per_device < 0.3 * (b.cost.flops_per_device or 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nested_scan_and_its_unrolled_twin_agree_per_step(backend) -> None:
    a, b = report(backend, "nested"), report(backend, "nested_unrolled")
    fa, fb = figures(a), figures(b)
    assert_agree(fa, fb, ("flops", "model flops", "bytes moved", "compute seconds"))
    # Unrolled, the compiler may merge the microbatches' collectives into fewer, larger ones
    # (it does for H100s): never more runs than the loops make.
    assert fb["collectives per step"] <= fa["collectives per step"]
    assert a.cost is not None
    assert sorted(lp.runs or 0 for lp in a.cost.loops) == [pr.M, pr.L * pr.M, pr.L * pr.M]


@pytest.mark.parametrize("backend", BACKENDS)
def test_data_and_tensor_parallel_twins_agree_on_the_work_and_the_bytes_moved(backend) -> None:
    a, b = report(backend, "scan", (2, 4)), report(backend, "unrolled", (2, 4))
    assert_agree(figures(a), figures(b), ("flops", "model flops", "bytes moved"))


@settings(max_examples=4, deadline=None, derandomize=True)
@given(layers=st.integers(1, 6))
def test_any_depth_scanned_or_unrolled_gives_the_same_step_on_cpu(layers) -> None:
    a, b = report("cpu", "scan", layers=layers), report("cpu", "unrolled", layers=layers)
    assert_agree(figures(a), figures(b), ALL)
    assert a.cost is not None
    # One layer: the compiler drops the loop.
    assert [lp.runs for lp in a.cost.loops] == ([layers, layers] if layers > 1 else [])


@pytest.mark.parametrize("backend", BACKENDS)
def test_remat_changes_the_hardware_flops_not_the_model_flops(backend) -> None:
    plain, remat = report(backend, "scan"), report(backend, "scan_remat")
    assert plain.cost is not None and remat.cost is not None
    assert remat.cost.model_flops_per_device == plain.cost.model_flops_per_device
    assert (remat.cost.flops_per_device or 0) > 1.1 * (plain.cost.flops_per_device or 0)
    assert (remat.cost.recomputed_flops_per_device or 0) > 0
    assert plain.cost.recomputed_flops_per_device == 0
    e, ep = remat.estimate, plain.estimate
    assert e is not None and ep is not None and e.hfu is not None and e.mfu is not None
    # HFU counts the recomputation, MFU does not.
    assert e.hfu / e.mfu == pytest.approx(
        (remat.cost.flops_per_device or 0) / (remat.cost.model_flops_per_device or 1)
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("looped", "unrolled"), [("scan", "unrolled"), ("fori", "fori_unrolled")])
def test_the_predicted_step_runs_each_loop_body_per_step(backend, looped, unrolled) -> None:
    """Each op of a loop body runs as often as the loop; the predicted steps of a loop and
    its unrolled twin are close (the loop's ops move somewhat more: each trip slices its
    layer out of the stacked weights and writes into stacked residuals)."""
    a, b = report(backend, looped), report(backend, unrolled)
    assert a.cost is not None and a.estimate is not None and b.estimate is not None
    runs = {op.runs for op in a.cost.ops}
    assert runs == {1, pr.L}
    matmuls = sum(op.flops * op.runs for op in a.cost.ops)
    assert matmuls == pytest.approx(a.cost.matmul_flops_per_device)
    pa, pb = a.estimate.predicted_seconds, b.estimate.predicted_seconds
    assert pa is not None and pb is not None
    assert 0.9 * pb <= pa <= 1.25 * pb


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_data_dependent_loop_makes_every_figure_a_lower_bound(backend) -> None:
    r = report(backend, "while")
    assert r.cost is not None and r.cost.lower_bound
    [loop] = r.cost.unknown_loops
    assert loop.where.startswith(f"{PROGRAMS}:")  # named from the working directory
    e = r.estimate
    assert e is not None and e.lower_bound == (loop.where,)
    text = str(r)
    assert "lower bound" in text and loop.where in text
    assert all(c.trips is None for c in r.collectives if "body" in c.op_name)


def test_views_show_the_loops_the_model_flops_and_the_compilers_own_count() -> None:
    from shardviz.render.report.html import report_html

    r = report("cpu", "scan_remat")
    text = str(r)
    assert f"2 loops: forward x{pr.L} ({PROGRAMS}:" in text
    assert f"backward x{pr.L} ({PROGRAMS}:" in text
    assert "the compiler's own count, each body once" in text
    assert "recomputed" in text and "model flops" in text
    assert (
        f"{len(r.collectives)} in the compiled program · {pr.L * len(r.collectives)} runs" in text
    )
    assert "predicted step" in text
    html = report_html(r)
    assert 'data-row="loops"' in html and 'data-row="recomputed"' in html
    assert 'data-part="hfu"' in html and 'data-part="predicted"' in html


@pytest.mark.parametrize(("schedule", "ticks"), [(None, 4 + 2 - 1), ("gpipe", 2 * (4 + 2 - 1))])
def test_a_pipelines_ticks_are_its_loops_trips(schedule, ticks) -> None:
    # GSPMD's form is one loop over M + S - 1 ticks forward (and its transpose backward);
    # the shard_map schedules one loop over every tick of the forward and backward passes.
    c = sv.compare("transformer", ["pp"], stages=2, microbatches=4, schedule=schedule, steps=1)
    cost = c.results[0].report.cost
    assert cost is not None and cost.loops and not cost.lower_bound
    assert {lp.runs for lp in cost.loops} == {ticks}
    assert (cost.flops_per_device or 0) > 3 * (cost.compiler_flops_per_device or 0)
    # Matmuls are part of what the compiler runs, never more.
    assert 0 < (cost.model_flops_per_device or 0) <= (cost.flops_per_device or 0)
