"""Exercises of notebook 05 (comparing strategies; the 2-D layout: FSDP x Megatron)."""

from __future__ import annotations

from typing import Any

from shardviz.course.answers import specs_for
from shardviz.course.exercise import exercise
from shardviz.course.programs import mlp_step
from shardviz.model.units import format_bytes

#: 05.1's pod: a 7B model, mixed-precision Adam (16 B per parameter), 64 devices of 16 GiB.
PARAMS, DEVICES, HBM = 7e9, 64, 16 * 2**30
NAMES = ("w1", "b1", "w2", "b2")


def _state(data: int, model: int) -> int:
    """Model state per device with plain data parallelism over ``data`` and tensor
    parallelism over ``model`` (no ZeRO), from the accounting notebook 03 checked."""
    from shardviz.strategies import model_state_bytes

    return model_state_bytes(PARAMS, zero_stage=0, data_parallel=data, tensor_parallel=model).total


def _mesh_shape(answer: Any) -> tuple[int, int]:
    ok = (
        isinstance(answer, tuple | list)
        and len(answer) == 2
        and all(isinstance(a, int) and not isinstance(a, bool) and a >= 1 for a in answer)
    )
    if not ok:
        raise ValueError(f"give the mesh shape as two whole numbers (data, model); got {answer!r}")
    return int(answer[0]), int(answer[1])


@exercise(
    "05.1",
    "a 2-D mesh that fits memory",
    "a 7B-parameter model, mixed-precision Adam (16 B per parameter), 64 devices of 16 GiB, no "
    "ZeRO: which mesh shape (data, model) uses the smallest tensor-parallel size 'model' whose "
    "model state fits in 16 GiB per device? (a tuple of two numbers)",
    wrong=((16, 4), (4, 16), (64, 1), (8, 4)),
)
def mesh_that_fits(answer: Any) -> tuple[bool, str, str]:
    data, model = _mesh_shape(answer)
    if data * model != DEVICES:
        return (
            False,
            f"a {data} x {model} mesh has {data * model} devices, not {DEVICES}",
            "use all 64 devices: data x model = 64",
        )
    state = _state(data, model)
    fits = state <= HBM
    smaller = [m for m in range(1, model) if DEVICES % m == 0 and _state(DEVICES // m, m) <= HBM]
    right = fits and not smaller
    message = (
        f"on a {data} x {model} mesh each device holds {format_bytes(state)} of model state "
        f"({'fits' if fits else 'does not fit'} in {format_bytes(HBM)})"
    )
    if fits and smaller:
        message += "; a smaller tensor-parallel size fits too"
    hint = (
        "without ZeRO the 'data' axis copies the state and only 'model' divides it: "
        "16 B x 7e9 / model must stay under 16 GiB (17.2e9 B); tensor parallelism is costly "
        "(it all-reduces activations every layer), so take the smallest power of two that fits"
    )
    return right, message, hint


@exercise(
    "05.2",
    "write the 2-D specs",
    "write one spec per MLP parameter on the 2 x 4 mesh (a dict {'w1', 'b1', 'w2', 'b2'}) so "
    "that w1 and w2 are each cut 8 ways, stored FSDP-style over 'data', and the forward pass "
    "is Megatron's over 'model' (one all-reduce over 'model')",
    wrong=(
        {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()},
        {"w1": (("data", "model"), None), "b1": (), "w2": (("data", "model"), None), "b2": ()},
        {"w1": ("model", "data"), "b1": ("data",), "w2": ("data", "model"), "b2": ()},
    ),
)
def two_d_specs(answer: Any) -> tuple[bool, str, str]:
    report = mlp_step(specs_for(answer, NAMES), mesh_shape=(2, 4), axis_names=("data", "model"))
    short = [
        n
        for n in ("w1", "w2")
        if report.arguments[f"params/{n}"].max_bytes_per_device * 8
        != report.arguments[f"params/{n}"].nbytes
    ]
    forward = [c for c in report.collectives if "transpose(" not in c.op_name]
    model_reduces = [c for c in forward if c.kind == "all-reduce" and c.axes == ("model",)]
    data_gathers = [c for c in forward if c.kind == "all-gather" and c.axes == ("data",)]
    right = not short and len(model_reduces) == 1 and bool(data_gathers)
    message = (
        f"forward: {len(model_reduces)} all-reduce(s) over 'model', {len(data_gathers)} "
        f"all-gather(s) over 'data'" + (f"; not cut 8 ways: {', '.join(short)}" if short else "")
    )
    hint = (
        "start from Megatron's pair over 'model' (w1 by columns, w2 by rows) and cut each "
        "weight's other dimension over 'data', so the copies along 'data' become eighths "
        "that the compiler gathers before use"
    )
    return right, message, hint
