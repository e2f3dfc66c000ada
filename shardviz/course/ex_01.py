"""Exercises of notebook 01 (from one device to data parallel)."""

from __future__ import annotations

from typing import Any

from shardviz.course.answers import bytes_verdict, collective_kinds
from shardviz.course.exercise import exercise
from shardviz.course.programs import data_parallel_step
from shardviz.model.units import format_bytes


def _dp_kinds() -> tuple[frozenset[str], tuple[str, ...], int]:
    """The notebook's own data-parallel step (D=128, H=512, batch 64 cut over 'data' on 8
    devices), compiled: the kinds of collective in its ledger, their mesh axes, how many."""
    report = data_parallel_step(128, 512)
    axes = tuple(sorted({"/".join(c.axes) for c in report.collectives}))
    return frozenset(c.kind for c in report.collectives), axes, len(report.collectives)


@exercise(
    "01.1",
    "which collective data parallelism needs",
    "which collective will the compiler insert into the data-parallel step? "
    "(give its name as a string, e.g. 'all-gather')",
    wrong=("all-gather", "reduce-scatter", "none", ["all-reduce", "all-gather"]),
)
def dp_collective(answer: Any) -> tuple[bool, str, str]:
    said = collective_kinds(answer)
    kinds, axes, count = _dp_kinds()
    right = said == kinds
    named = ", ".join(sorted(said)) or "no collective"
    message = (
        f"the compiled step has {count} collective(s) over {', '.join(axes)}, "
        f"{'all of the kind you named' if right else 'not ' + named}"
    )
    hint = (
        "each device computes gradients from its own 8 examples only; what has to happen "
        "to eight partial gradients so that every device takes the same step, and ends "
        "with the result?"
    )
    return right, message, hint


def _dp_allreduce() -> tuple[int, int, int]:
    """The data-parallel MLP step of notebook 01, explained: the gradient all-reduce's bytes
    in, its group size and the bytes it moves per device (ring model)."""
    report = data_parallel_step(256, 1024)
    ar = [c for c in report.collectives if c.kind == "all-reduce"]
    return sum(c.in_bytes for c in ar), ar[0].group_size, sum(c.moved_bytes for c in ar)


@exercise(
    "01.2",
    "bytes of the gradient all-reduce of a wider model",
    "the same MLP made wider (256 features, 1024 hidden units, a batch of 64 cut over the 8 "
    "devices of 'data'): how many bytes does its gradient all-reduce move per device, in the "
    "ring model? (give a number of bytes)",
    wrong=(0, 2_102_276, 8 * 2_102_276, 921_984),
)
def moved_bytes(answer: Any) -> tuple[bool, str, str]:
    in_bytes, n, moved = _dp_allreduce()
    got = float(answer)
    right = abs(got - moved) <= 0.01 * moved
    message = bytes_verdict(
        got, right, moved, "what the compiled step's gradient all-reduce moves per device",
        f"it all-reduces {format_bytes(in_bytes, exact=True)} over {n} devices",
    )  # fmt: skip
    hint = (
        "start from the wider model's gradients, one float32 per parameter of w1, b1, w2 and "
        "b2 (the notebook's model has 128 features and 512 hidden units, so its figure is not "
        "this one); in a ring each device sends (n-1)/n of them to reduce and as much again "
        "to gather"
    )
    return right, message, hint
