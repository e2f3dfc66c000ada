"""Exercises of notebook 11 (planning for a pod you do not have: deviceless compiles)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from shardviz.course.answers import byte_count
from shardviz.course.exercise import exercise
from shardviz.model.units import format_bytes

#: The notebook's transformer: a one-million-token vocabulary, 1.08 billion parameters.
SIZES = dict(vocab=2**20, d_model=512, heads=16, d_ff=2048, layers=2, seq=128, batch=256)
#: The pod of 11.1, and 11.2's slice and model: an MLP of 2.15 billion parameters.
POD, SLICE = "v5e:16x16", "v5e:2x4"
BIG_MLP = dict(d_model=16384, d_hidden=65536, batch=256)
#: The one-axis strategies, least split first (ZeRO's stages 0 to 3).
STAGES = ("dp", "zero1", "zero2", "zero3")


def _per_chip_state(strategy: str) -> tuple[int, int, int, int]:
    """The transformer's parameters, gradients, Adam's moments and Adam's step counter (its
    one scalar) placed by ``strategy``'s rules over the pod's 256 chips (laid out, nothing
    compiled or allocated): the bytes of each on the fullest chip."""
    import optax

    import shardviz as sv
    from shardviz.strategies import get_model, get_rule_set
    from shardviz.strategies.step import strategy_step

    pod = sv.topology(POD)
    built = strategy_step(
        get_model("transformer", **SIZES),
        get_rule_set(strategy),
        devices=pod.devices,
        optimizer=optax.adam(1e-3),
    )
    params, opt_state, _ = built.abstract

    def per_chip(tree: Any, scalars: bool | None = None) -> int:
        leaves = sv.layout_tree(tree).leaves
        return sum(
            leaf.max_bytes_per_device
            for leaf in leaves
            if scalars is None or (leaf.ndim == 0) == scalars
        )

    moments, counter = per_chip(opt_state, scalars=False), per_chip(opt_state, scalars=True)
    return per_chip(params), built.grad_bytes, moments, counter


@exercise(
    "11.1",
    "ZeRO-2's model state on the pod",
    "the notebook's transformer (1,080,103,936 parameters, float32 Adam: 4 B of weight, 4 of "
    "gradient, 8 of moments per parameter) under ZeRO-2 ('zero2') on the 256 chips of the "
    "v5e pod: how many bytes of model state does each chip hold? (a number of bytes)",
    wrong=(17_281_662_976, 8_674_584_736, 67_506_496, 2_219_276_056),
)
def zero2_state(answer: Any) -> tuple[bool, str, str]:
    got = byte_count(answer)
    params, grads, moments, counter = _per_chip_state("zero2")
    total = params + grads + moments + counter
    right = abs(got - total) <= 0.01 * total
    if right:
        message = (
            f"shardviz placed the state with zero2's rules on the pod's 256 chips: per chip "
            f"{params:,} B of parameters (whole), {grads:,} B of gradients and {moments:,} B "
            f"of Adam's moments (each a 256th), and {counter:,} B of Adam's step counter: "
            f"{format_bytes(total, exact=True)} in all"
        )
    else:
        message = (
            "shardviz placed the state with zero2's rules on the pod's 256 chips (nothing "
            f"compiled) and added up one chip's bytes: {format_bytes(int(got), exact=True)} "
            f"is too {'high' if got > total else 'low'}"
        )
    hint = (
        "ZeRO-2 splits two of the three parts over the data-parallel chips and keeps one "
        "whole on each: which? Count float32 Adam as the notebook's table does (4 + 4 + 8 B "
        "per parameter), not the mixed-precision default of model_state_bytes"
    )
    return right, message, hint


def _stage(answer: Any) -> str:
    if not isinstance(answer, str):
        raise ValueError(f"name a strategy as a string, one of {', '.join(STAGES)}; got {answer!r}")
    text = re.sub(r"[\s_-]", "", answer.strip().lower())
    text = {"fsdp": "zero3", "zero0": "dp"}.get(text, text)
    if text not in STAGES:
        raise ValueError(f"{answer!r} is not one of the one-axis strategies {', '.join(STAGES)}")
    return text


@cache
def _compiled_on_slice(strategy: str) -> tuple[bool, str]:
    """The big MLP's training step under ``strategy``, compiled for the v5e 2x4 slice by the
    TPU compiler (deviceless): whether it fits, and what the compiler said in a few words
    (the peak, or the HBM it asked for and what a chip has free)."""
    import shardviz as sv
    from shardviz.strategies import get_model

    model = get_model("mlp", **BIG_MLP)
    try:
        result = sv.compare(model, [strategy], target=SLICE).results[0]
    except sv.CompileError as err:
        found = re.search(r"\(([\d.]+)G\) exceeds available HBM \(([\d.]+)G\)", str(err))
        if found is None:
            return False, "is refused: the TPU compiler ran out of HBM"
        need, have = found.groups()
        return False, f"is refused (it needs {need} GB of HBM, {have} GB are free)"
    estimate = result.report.estimate
    if estimate is None:  # a topology's report always carries its estimate
        raise RuntimeError(f"no estimate for {strategy} on {SLICE}")
    fits = bool(estimate.fits)
    return fits, ("fits" if fits else "does not fit") + f" ({estimate.fit_text.split(': ')[-1]})"


def _verdict_text(strategy: str) -> str:
    return f"{strategy} {_compiled_on_slice(strategy)[1]}"


@exercise(
    "11.2",
    "the least split stage that fits a slice",
    "an MLP of 2.15 billion parameters (d_model 16384, d_hidden 65536, batch 256, float32 "
    "Adam) on a v5e 2x4 slice (8 chips of 16 GiB): which of 'dp', 'zero1', 'zero2', 'zero3' "
    "is the least split strategy whose step the TPU compiler accepts? (a strategy's name)",
    wrong=("zero2", "zero1", "dp"),
)
def least_split(answer: Any) -> tuple[bool, str, str]:
    stage = _stage(answer)
    fits, _ = _compiled_on_slice(stage)
    lower = STAGES[: STAGES.index(stage)]
    lower_fitting = [s for s in lower if _compiled_on_slice(s)[0]] if fits else []
    right = fits and not lower_fitting
    message = f"compiled for TPU v5e 2x4 (deviceless): {_verdict_text(stage)}"
    if right and lower:
        message += "; every less split stage is refused: " + "; ".join(
            _verdict_text(s) for s in reversed(lower)
        )
    elif lower_fitting:
        message += f"; {lower_fitting[0]}, which splits less, fits too"
    hint = (
        "the state table counts only what is kept between steps, and a stage whose state "
        "fits can still hold more during the step (what is the gradient before it is "
        "reduced?). Ask the compiler: compile each stage for the slice in turn, least "
        "split first, and take the first one it accepts"
    )
    return right, message, hint
