"""Loops read from saved CPU, TPU and GPU compiles (tests/fixtures/loops, made by its
make_fixtures.py): trip counts on every backend, loops inside loops, per-step cost against
the compiler's own count of the same program with its loops fully unrolled (GPU), and the
matmul flops against a hand count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shardviz.capture.hlo.loops import (
    computation_runs,
    loop_body_module,
    loops_of,
)
from shardviz.capture.hlo.matmuls import matmul_flops
from shardviz.capture.hlo.text import parse_hlo_module
from shardviz.capture.step_cost import per_step

HERE = Path(__file__).resolve().parent.parent / "fixtures" / "loops"
BACKENDS = ("cpu", "v5e", "h100")

#: The fixtures' sizes (programs.py): layers, batch, width, hidden, microbatches, and the
#: (2, 4) mesh: batch over 'data' (2), hidden over 'model' (4).
L, B, D, H, M = 4, 64, 256, 1024, 2
B_DEV, H_DEV = B // 2, H // 4


def text(name: str) -> str:
    return (HERE / f"{name}.txt").read_text()


def facts(name: str) -> dict:
    return json.loads((HERE / f"{name}.json").read_text())


def matmuls(name: str):
    module = parse_hlo_module(text(name))
    loops = loops_of(module)
    lower = any(not lp.known for lp in loops)
    return matmul_flops(module, computation_runs(module, loops), lower)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", ["scan", "scan_remat", "fori"])
def test_every_backend_reads_the_forward_and_backward_loops_trips(backend, program) -> None:
    # TPU writes no known_trip_count: its counts come from the loops' own counters.
    loops = loops_of(text(f"{backend}_{program}"))
    assert [(lp.trips, lp.runs, lp.counted_runs, lp.parent) for lp in loops] == [
        (L, L, L, None),
        (L, L, L, None),
    ]
    assert all(lp.known for lp in loops)
    assert [lp.op_name.rsplit("/while", 1)[0].split("/", 1)[1] for lp in loops] == [
        "jvp()",
        "transpose(jvp())",
    ]
    assert all(lp.where.startswith("programs.py:") for lp in loops)


@pytest.mark.parametrize("backend", BACKENDS)
def test_loops_inside_a_loop_multiply(backend) -> None:
    loops = loops_of(text(f"{backend}_nested"))
    outer = [lp for lp in loops if lp.parent is None]
    inner = [lp for lp in loops if lp.parent is not None]
    assert [(lp.trips, lp.runs) for lp in outer] == [(M, M)]
    assert [(lp.trips, lp.runs, lp.parent) for lp in inner] == [(L, L * M, outer[0].name)] * 2
    runs = computation_runs(parse_hlo_module(text(f"{backend}_nested")), loops)
    assert runs[outer[0].body] == M
    assert {runs[lp.body] for lp in inner} == {L * M}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_data_dependent_loop_is_unknown_and_counted_once(backend) -> None:
    [loop] = loops_of(text(f"{backend}_while"))
    assert (loop.trips, loop.runs, loop.counted_runs, loop.known) == (None, None, 1, False)
    once = facts(f"{backend}_while")["once"]
    per, _ = per_step(once, text(f"{backend}_while"))
    assert per == once
    assert matmuls(f"{backend}_while").lower_bound


@pytest.mark.parametrize("program", ["scan", "scan_remat", "nested", "fori", "while"])
def test_per_step_cost_is_the_compilers_own_count_of_the_loops_unrolled(program) -> None:
    # The same program compiled for H100s with XLA's full while-loop unroller: the compiler's
    # cost model then sees every trip. Counting each body times its runs gives its figures.
    f = facts(f"h100_{program}")
    per, _ = per_step(f["once"], text(f"h100_{program}"))
    assert per is not None
    want = f["xla_unrolled"]
    assert per["flops"] == pytest.approx(want["flops"], rel=1e-6)
    assert per["bytes accessed"] == pytest.approx(want["bytes accessed"], rel=0.02)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", ["scan", "scan_remat", "nested", "fori"])
def test_per_step_flops_are_the_loop_bodies_times_their_trips(backend, program) -> None:
    name = f"{backend}_{program}"
    once = facts(name)["once"]
    per, loops = per_step(once, text(name))
    assert per is not None and loops
    # Far above the compiler's once-per-body count, and the same on every backend.
    assert per["flops"] > 3 * once["flops"]
    cpu, _ = per_step(facts(f"cpu_{program}")["once"], text(f"cpu_{program}"))
    assert cpu is not None
    assert per["flops"] == pytest.approx(cpu["flops"], rel=0.02)


#: Per device: each layer's two matmuls forward and four backward, 2 flops per multiply-add.
HAND_MATMULS = 6 * 2 * B_DEV * D * H_DEV * L  # 100,663,296
#: What jax.checkpoint runs again per layer: the first matmul (tanh's input).
HAND_RECOMPUTED = 2 * B_DEV * D * H_DEV * L


@pytest.mark.parametrize("backend", BACKENDS)
def test_matmul_flops_match_a_hand_count_and_remat_counts_apart(backend) -> None:
    plain, remat = matmuls(f"{backend}_scan"), matmuls(f"{backend}_scan_remat")
    assert plain.total == plain.model == HAND_MATMULS
    assert remat.model == HAND_MATMULS  # the model's work is the same program's
    assert remat.total == HAND_MATMULS + HAND_RECOMPUTED  # the hardware runs more
    assert remat.recomputed == HAND_RECOMPUTED
    nested = matmuls(f"{backend}_nested")  # M microbatches of B / M: the same work
    assert nested.total == HAND_MATMULS


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loop_body_module_has_the_body_as_its_entry_and_everything_it_calls(backend) -> None:
    raw = text(f"{backend}_nested")
    module = parse_hlo_module(raw)
    outer = next(lp for lp in loops_of(module) if lp.parent is None)
    sub = parse_hlo_module(loop_body_module(raw, module, outer.body))
    assert sub.entry.name == outer.body
    assert sum(1 for i in sub.instructions() if i.opcode == "while") == 2  # the inner loops
    names = {c.name for c in sub.computations}
    for ins in sub.instructions():
        assert set(ins.called_computations) <= names
    assert sub.num_partitions == module.num_partitions


def test_the_tpu_compilers_own_dump_reads_the_same_loops_and_matmuls() -> None:
    # jax 0.12's TPU dump writes the loop counter as `param#0` (no get-tuple-element): the
    # trips are still read from it, and the matmul count matches the hand count.
    for program in ("scan", "scan_remat"):
        dumped = text(f"v5e_{program}_dumped")
        assert "#0" in dumped and "get-tuple-element(" not in dumped.split("ENTRY")[0]
        loops = loops_of(dumped)
        assert [(lp.trips, lp.runs, lp.parent) for lp in loops] == [(L, L, None)] * 2
    plain, remat = matmuls("v5e_scan_dumped"), matmuls("v5e_scan_remat_dumped")
    assert plain.total == plain.model == HAND_MATMULS
    assert remat.total == HAND_MATMULS + HAND_RECOMPUTED
