"""The pipeline strategies as rule sets: ``"pp"`` and ``"pp+dp"``, in GSPMD's form or a schedule."""

from __future__ import annotations

from typing import Any

from shardviz.errors import ShardvizError, problem
from shardviz.model.arguments import whole_number
from shardviz.strategies.pipeline.stages import STAGE_AXIS
from shardviz.strategies.rules import RuleSet


def _dim0(shape: tuple[int, ...], axes: dict[str, int]) -> tuple:
    return (STAGE_AXIS,) + (None,) * (len(shape) - 1)


def pipeline_rules(
    kind: str = "pp",
    *,
    stages: int = 2,
    microbatches: int = 4,
    schedule: str | None = None,
    checkpoint: bool = False,
) -> Any:
    """The rule set of a pipeline: ``"pp"`` (the stage dim over ``stage``, the batch whole
    on every stage) or ``"pp+dp"`` (also the microbatch rows over ``data``). Its ``extra``
    holds ``stages``, ``microbatches``, ``schedule`` (``None``: GSPMD's form; ``"gpipe"`` or
    ``"1f1b"``: written with ``shard_map`` in that order) and ``checkpoint``:
    :func:`~shardviz.strategies.runner.compare` pipelines the model with them, and its default
    mesh has ``stages`` devices on the ``stage`` axis.

    Raises:
        ShardvizError: an unknown schedule.
        ArgumentError: ``stages`` or ``microbatches`` is not a whole number >= 1.
        ValueError: an unknown kind.
    """
    where = f"pipeline_rules({kind!r})"
    stages = whole_number(where, "stages", stages, example=2)
    microbatches = whole_number(where, "microbatches", microbatches, example=4)
    if schedule not in (None, "gpipe", "1f1b"):
        raise ShardvizError(
            problem(
                f"pipeline schedule {schedule!r}", "no schedule has this name",
                "use 'gpipe' or '1f1b' (or None for GSPMD's own form)",
            )
        )  # fmt: skip
    extra = {
        "stages": stages, "microbatches": microbatches, "schedule": schedule,
        "checkpoint": checkpoint,
    }  # fmt: skip

    layers = ((r"^layers/", _dim0),)
    form = (
        f"{schedule.upper() if schedule == '1f1b' else 'GPipe'}, shard_map"
        if schedule
        else ("GSPMD")
    )
    how = (
        f"each stage's program runs the {schedule} schedule tick by tick; activations go to "
        "the next stage and gradients to the previous one with collective-permutes"
        if schedule
        else "microbatches shift from stage to stage with a collective-permute"
    )
    if kind == "pp":
        return RuleSet(
            "pp", f"pipeline ({form})", params=layers, batch=((".*", ()),),
            activations=(("stage_layers|stage_state|stage_outputs", _dim0),),
            axes=(STAGE_AXIS,), strict=False, extra=extra,
            description=f"layers stacked on a stage dim split over 'stage'; {how}",
            expects=(("collective-permute", STAGE_AXIS, "activations"),),
        )  # fmt: skip
    if kind == "pp+dp":
        return RuleSet(
            "pp+dp", f"pipeline ({form}) x data parallel", params=layers,
            batch=((".*", ("data",)),),
            activations=(
                ("stage_layers", _dim0),
                ("stage_state", (STAGE_AXIS, "data", None, None)),
                ("stage_outputs", (STAGE_AXIS, None, "data", None, None)),
            ),
            axes=(STAGE_AXIS, "data"), strict=False, extra=extra,
            description="the pipeline over 'stage', each microbatch's rows split over "
            "'data'; gradients all-reduced over 'data'"
            + (" once, after the last microbatch" if schedule else ""),
            expects=(("collective-permute", STAGE_AXIS, "activations"),
                     ("all-reduce", "data", "gradients")),
        )  # fmt: skip
    raise ValueError(f"unknown pipeline rule set {kind!r}: use 'pp' or 'pp+dp'")
