"""Exercises of notebook 03 (ZeRO / FSDP: splitting the training state)."""

from __future__ import annotations

from functools import cache
from typing import Any

from shardviz.course.answers import byte_count, bytes_verdict, specs_for
from shardviz.course.exercise import exercise
from shardviz.course.programs import mlp_step
from shardviz.model.units import format_bytes

#: The SGD MLP of notebook 01 (128 -> 512 -> 128, float32) with a batch of 1024, on 8 devices.
D, H, BATCH, N = 128, 512, 1024, 8
NAMES = ("w1", "b1", "w2", "b2")


def _fsdp_step(specs: dict[str, Any]) -> Any:
    """The training step with the parameters placed as ``specs`` and the batch cut over
    'data', compiled (not run): its report."""
    return mlp_step(specs, d=D, h=H, batch=BATCH)


@exercise(
    "03.1",
    "write the FSDP spec",
    "write one spec per parameter (a dict {'w1': ..., 'b1': ..., 'w2': ..., 'b2': ...}) so that "
    "each of the 8 devices stores an eighth of every parameter, ZeRO-3 style",
    wrong=(
        {"w1": (), "b1": (), "w2": (), "b2": ()},
        {"w1": ("data", None), "b1": (), "w2": ("data", None), "b2": ()},
    ),
)
def fsdp_specs(answer: Any) -> tuple[bool, str, str]:
    specs = specs_for(answer, NAMES)
    report = _fsdp_step(specs)
    short = []
    for name in NAMES:
        leaf = report.arguments[f"params/{name}"]
        if leaf.max_bytes_per_device * N != leaf.nbytes:
            short.append(
                f"{name} {format_bytes(leaf.max_bytes_per_device)} of {format_bytes(leaf.nbytes)}"
            )
    gathers = report.collectives_of("all-gather", ("data",))
    stored = sum(report.arguments[f"params/{n}"].max_bytes_per_device for n in NAMES)
    whole = sum(report.arguments[f"params/{n}"].nbytes for n in NAMES)
    right = not short and bool(gathers)
    message = (
        f"each device stores {format_bytes(stored, exact=True)} of the "
        f"{format_bytes(whole, exact=True)} of parameters, and the compiled step has "
        f"{len(gathers)} all-gather(s) over 'data'"
    )
    if short:
        message += "; not cut eight ways: " + ", ".join(short)
    hint = (
        "every parameter, the biases too, needs one dimension cut over 'data' (8 ways); "
        "a dimension whose size divides by 8 will do"
    )
    return right, message, hint


@cache
def _gather_moved() -> tuple[int, int, int]:
    """ZeRO-3 of the MLP, every parameter cut along dim 0: the all-gathers' bytes out, moved
    per device, and the parameter bytes."""
    report = _fsdp_step(
        {"w1": ("data", None), "b1": ("data",), "w2": ("data", None), "b2": ("data",)}
    )
    gathers = report.collectives_of("all-gather", ("data",))
    whole = sum(report.arguments[f"params/{n}"].nbytes for n in NAMES)
    return sum(g.out_bytes for g in gathers), sum(g.moved_bytes for g in gathers), whole


@exercise(
    "03.2",
    "bytes the ZeRO-3 all-gathers move",
    "with every parameter cut over 'data' (8 ways) and a batch of 1024, how many bytes do the "
    "step's all-gathers move per device, in the ring model? (a number of bytes)",
    wrong=(526_848, 921_984, 65_856),
)
def gather_bytes(answer: Any) -> tuple[bool, str, str]:
    got = byte_count(answer)
    out, moved, whole = _gather_moved()
    right = abs(got - moved) <= 0.01 * moved
    message = bytes_verdict(
        got, right, moved, "what the compiled step's all-gathers move per device",
        f"the parameters are {format_bytes(whole, exact=True)} and the all-gathers hand back "
        f"{format_bytes(out, exact=True)} per device",
    )  # fmt: skip
    hint = (
        "an all-gather starts from one eighth on each device and ends with the whole; in a "
        "ring each device receives the 7 pieces it lacks (and sends as many): no reduction "
        "pass, unlike an all-reduce"
    )
    return right, message, hint
