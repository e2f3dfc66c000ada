"""The pipeline Explorer's controls: microbatches, stages, schedule and checkpointing.

:class:`PipelineControls` offers only counts that split evenly (a slider over the batch's
divisors, buttons for the layer count's divisors that fit the devices), checks the rest with
:func:`~.checks.pipeline_errors` (e.g. ``pp+dp`` written with ``shard_map`` needs each
microbatch's rows to split over ``data``), says what is wrong in red right under the controls,
and hands on a :class:`~.checks.PipelineConfig` only when it can run. A status line
says what is compiling, what is shown, or why the last run failed.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets

from shardviz.errors import ShardvizError
from shardviz.explainer.background import COMPILING, DONE, ERROR, RUNNING, short_message
from shardviz.widgets.pipeline.checks import (
    SCHEDULE_TIPS,
    SCHEDULES,
    PipelineConfig,
    microbatch_options,
    pipeline_errors,
    stage_options,
)

__all__ = ["GSPMD", "PipelineControls"]

INVALID_COLOR = "#b00020"
NOTE_COLOR = "#57606a"
#: The schedule buttons' value for GSPMD's form (a selection widget reads ``None`` as "nothing
#: picked", so the buttons carry names and the config carries ``None``).
GSPMD = "gspmd"

ConfigCallback = Callable[[PipelineConfig], Any]
ErrorsCallback = Callable[[Mapping[str, str]], Any]


def _button_value(schedule: str | None) -> str:
    return GSPMD if schedule is None else schedule


def _color(message: widgets.HTML, text: str, color: str) -> None:
    message.value = (
        f'<span style="color:{color}">{html.escape(text, quote=False)}</span>' if text else ""
    )
    message.layout.display = "" if text else "none"


class PipelineControls(widgets.VBox):
    """A microbatch slider, stage and schedule buttons and a checkpoint box, checked together.

    Args:
        initial: the configuration shown first (it must be valid; see :meth:`errors_of`).
        strategies: the strategies that will run (``pp+dp`` adds a check).
        batch, layers: the model's batch rows and layer count.
        devices: how many devices there are (a stage needs one at least).

    Raises:
        ShardvizError: ``initial`` cannot run (the message names the control and the fix).
    """

    def __init__(
        self,
        initial: PipelineConfig,
        *,
        strategies: Sequence[str],
        batch: int,
        layers: int,
        devices: int,
    ) -> None:
        self.strategies = tuple(strategies)
        self.batch, self.layers, self.devices = batch, layers, devices
        problems = self.errors_of(initial)
        if problems:
            raise ShardvizError(next(iter(problems.values())))
        self._callbacks: list[ConfigCallback] = []
        self._error_callbacks: list[ErrorsCallback] = []
        self.config: PipelineConfig | None = initial
        self.errors: dict[str, str] = {}
        self._last: PipelineConfig = initial
        self._running: PipelineConfig = initial  # what the status line speaks of
        m_options = microbatch_options(batch)
        self.microbatches = widgets.SelectionSlider(
            options=[(str(m), m) for m in m_options], value=initial.microbatches,
            description="microbatches", continuous_update=False,
            tooltip=f"M: the batch of {batch} rows split into M microbatches (its divisors)",
            style={"description_width": "90px"}, layout=widgets.Layout(width="460px"),
        )  # fmt: skip
        s_options = stage_options(layers, devices)
        self.stages = widgets.ToggleButtons(
            options=[(str(s), s) for s in s_options], value=initial.stages, description="stages",
            tooltips=[f"{s} stage{'s' * (s != 1)}: {layers // s} of the {layers} layers each"
                      for s in s_options],
            style={"description_width": "90px", "button_width": "44px"},
            layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        self.schedule = widgets.ToggleButtons(
            options=[(label, _button_value(value)) for label, value in SCHEDULES],
            value=_button_value(initial.schedule), description="schedule",
            tooltips=list(SCHEDULE_TIPS),
            style={"description_width": "90px", "button_width": "auto"},
            layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        self.checkpoint = widgets.Checkbox(
            value=initial.checkpoint, description="checkpoint each stage (recompute it in the "
            "backward)", indent=False, layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        #: What is wrong with the picked combination (red), or hidden.
        self.message = widgets.HTML()
        #: What is compiling, what is shown, or why the last run failed.
        self.status = widgets.HTML()
        for control in (self.microbatches, self.stages, self.schedule, self.checkpoint):
            control.observe(self._on_control, names="value")
        super().__init__(
            [self.microbatches, self.stages, self.schedule, self.checkpoint, self.message,
             self.status]
        )  # fmt: skip
        self.add_class("shardviz-pipeline-controls")
        _color(self.message, "", INVALID_COLOR)
        self.show_status(DONE, "", initial)

    # --- public ---------------------------------------------------------------------------

    def errors_of(self, config: PipelineConfig) -> dict[str, str]:
        """Why ``config`` cannot run here, by control (``{}`` if it can)."""
        return pipeline_errors(
            config, self.strategies, batch=self.batch, layers=self.layers, devices=self.devices
        )

    def on_change(self, callback: ConfigCallback, remove: bool = False) -> None:
        """Call ``callback(config)`` whenever a new valid configuration is picked."""
        if remove:
            self._callbacks.remove(callback)
        else:
            self._callbacks.append(callback)

    def on_errors(self, callback: ErrorsCallback, remove: bool = False) -> None:
        """Call ``callback(errors)`` whenever what is wrong changes (``{}`` once fixed)."""
        if remove:
            self._error_callbacks.remove(callback)
        else:
            self._error_callbacks.append(callback)

    @property
    def picked(self) -> PipelineConfig:
        """The configuration the controls show now (valid or not)."""
        value = self.schedule.value
        return PipelineConfig(
            stages=int(self.stages.value),
            microbatches=int(self.microbatches.value),
            schedule=None if value == GSPMD else str(value),
            checkpoint=bool(self.checkpoint.value),
        )

    def show_status(self, status: str, error: str, config: PipelineConfig | None = None) -> None:
        """Say what a run is doing: ``compiling`` / ``running`` (with what), ``done`` (what is
        shown), or ``error`` (the message, in red)."""
        if config is not None:
            self._running = config
        words = self._running.words()
        if status == ERROR:
            _color(self.status, f"{words} failed: {error}", INVALID_COLOR)
        elif status in (COMPILING, RUNNING):
            _color(self.status, f"{status} {words}… (the kernel stays free)", NOTE_COLOR)
        elif status == DONE:
            _color(self.status, f"showing {words}", NOTE_COLOR)
        else:
            _color(self.status, "", NOTE_COLOR)

    # --- checking -------------------------------------------------------------------------

    def _on_control(self, change: dict) -> None:
        del change
        config = self.picked
        errors = self.errors_of(config)
        text = " ".join(errors.values())
        _color(self.message, text, INVALID_COLOR)
        if errors != self.errors:
            self.errors = errors
            self._call(self._error_callbacks, dict(errors))
        self.config = None if errors else config
        if self.config is not None and self.config != self._last:
            self._last = self.config
            self._call(self._callbacks, self.config)

    def _call(self, callbacks: Sequence[Callable[[Any], Any]], value: Any) -> None:
        for callback in list(callbacks):
            try:
                callback(value)
            except Exception as err:  # a broken receiver must not break the controls
                _color(self.message, f"the change handler failed: {short_message(err)}",
                       INVALID_COLOR)  # fmt: skip
