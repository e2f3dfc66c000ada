"""What the pipeline Explorer's controls offer and check, with no widgets and no jax.

The microbatch counts a batch allows (its divisors), the stage counts a model allows (the
divisors of its layer count that the devices can hold), the three ways a pipeline is written,
and which combinations cannot run, each in the project's error format, so the controls flag
them before anything compiles. :class:`~.controls.PipelineControls` shows them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shardviz.errors import problem

__all__ = [
    "DATA_PARALLEL",
    "SCHEDULES",
    "PipelineConfig",
    "data_shards",
    "divisors",
    "microbatch_options",
    "pipeline_errors",
    "schedule_label",
    "stage_options",
]

#: The schedule choices, as ``(label, value)``: ``None`` is GSPMD's form (one loop the
#: compiler partitions), the others each stage's program written with ``shard_map``.
SCHEDULES: tuple[tuple[str, str | None], ...] = (
    ("GSPMD", None),
    ("GPipe · shard_map", "gpipe"),
    ("1F1B · shard_map", "1f1b"),
)
#: Hover text per schedule choice, for the buttons.
SCHEDULE_TIPS = (
    "GSPMD's form: layers stacked on a stage dim split over 'stage'; one loop shifts "
    "microbatches with a collective-permute; autodiff runs the backwards after all forwards",
    "GPipe written with shard_map: every stage runs all its forwards, then all its backwards",
    "1F1B written with shard_map: a stage starts its backwards as soon as it can, so it holds "
    "at most as many microbatches as there are stages from it to the end",
)
#: The pipeline strategy that also splits each microbatch's rows over a ``data`` axis.
DATA_PARALLEL = "pp+dp"


@dataclass(frozen=True)
class PipelineConfig:
    """One pipeline to run: ``stages`` x ``microbatches`` in the order ``schedule`` (``None``:
    GSPMD's form), each stage recomputed in its backward when ``checkpoint``."""

    stages: int
    microbatches: int
    schedule: str | None = None
    checkpoint: bool = False

    def words(self) -> str:
        """``4 stages × 8 microbatches, 1F1B · shard_map``: what runs, for status lines."""
        s, m = self.stages, self.microbatches
        text = (
            f"{s} stage{'s' * (s != 1)} × {m} microbatch{'es' * (m != 1)}, "
            f"{schedule_label(self.schedule)}"
        )
        return text + (", checkpointed" if self.checkpoint else "")


def schedule_label(schedule: str | None) -> str:
    """The control's label for a schedule value (``None`` -> ``GSPMD``)."""
    for label, value in SCHEDULES:
        if value == schedule:
            return label
    return str(schedule)


def divisors(n: int) -> tuple[int, ...]:
    """Every positive divisor of ``n``, ascending (``n >= 1``)."""
    if n < 1:
        raise ValueError(f"divisors of {n}: give a count of 1 or more")
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def microbatch_options(batch: int) -> tuple[int, ...]:
    """The microbatch counts a batch of ``batch`` rows splits into evenly: its divisors."""
    return divisors(batch)


def stage_options(layers: int, devices: int) -> tuple[int, ...]:
    """The stage counts that split ``layers`` evenly and fit ``devices`` (one device at least
    per stage): the divisors of ``layers`` up to ``devices``."""
    return tuple(d for d in divisors(layers) if d <= devices)


def data_shards(strategy: str, stages: int, devices: int) -> int:
    """How many ways a microbatch's rows are split: ``pp+dp``'s default mesh is ``stages x
    devices // stages`` (:func:`shardviz.strategies.rules.default_mesh_shape`), ``pp``'s
    has no data axis."""
    return max(1, devices // stages) if strategy == DATA_PARALLEL else 1


def pipeline_errors(
    config: PipelineConfig,
    strategies: Sequence[str],
    *,
    batch: int,
    layers: int,
    devices: int,
) -> dict[str, str]:
    """What makes ``config`` unable to run, by control (``"stages"``, ``"microbatches"``):
    ``{}`` when every strategy can run it.

    Checked: the stages divide the layers and fit the devices; the microbatches divide the
    batch; with ``pp+dp`` written with ``shard_map``, each microbatch's rows also split over
    the ``data`` axis (GSPMD's form pads them instead).
    """
    errors: dict[str, str] = {}
    s, m = config.stages, config.microbatches
    if s < 1 or layers % s:
        errors["stages"] = problem(
            f"stages={s}",
            f"the model's {layers} layers cannot be split evenly over {s} stages",
            f"pick one of {_listed(stage_options(layers, devices))}",
        )
    elif s > devices:
        errors["stages"] = problem(
            f"stages={s}",
            f"{s} stages need {s} devices, and there are {devices}",
            f"pick one of {_listed(stage_options(layers, devices))}",
        )
    if m < 1 or batch % m:
        errors["microbatches"] = problem(
            f"microbatches={m}",
            f"a batch of {batch} rows cannot be split into {m} microbatches",
            f"pick one of {_listed(microbatch_options(batch))}",
        )
    elif config.schedule is not None and "stages" not in errors:
        for name in strategies:
            shards = data_shards(name, s, devices)
            if batch % (m * shards):
                fits = [k for k in microbatch_options(batch) if batch % (k * shards) == 0]
                errors["microbatches"] = problem(
                    f"{name} with {schedule_label(config.schedule)}",
                    f"a microbatch of {batch // m} row{'s' * (batch // m != 1)} cannot be split "
                    f"over the 'data' axis of {shards} devices ({s} stages on {devices} "
                    "devices)",
                    f"pick microbatches from {_listed(fits)}, or more stages, or the GSPMD "
                    "schedule (which pads the rows)",
                )
                break
    return errors


def _listed(values: Sequence[int]) -> str:
    return ", ".join(map(str, values)) if values else "(none)"
