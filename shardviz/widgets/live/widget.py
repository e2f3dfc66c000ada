"""The live training view: run training steps in a background thread, watch them in a widget.

:func:`live` starts a :class:`LiveRun` and returns at once; the run's :class:`LiveWidget` (an
anywidget) shows the loss curve, the time of each step and the memory of each device, and is
updated in place while the notebook stays usable.

The step-function convention (the one rule to know):

- ``state`` is the arguments before the batch. A plain ``tuple`` is several arguments,
  anything else (a dict of params, a list, a NamedTuple, ...) is one argument. So
  ``(params, opt_state)`` fits the zoo's ``make_train_step`` and ``params`` fits
  :func:`shardviz.strategies.mlp.train_step`; wrap a tuple-shaped single state as
  ``(state,)``.
- ``step_fn(*state, batch)`` returns ``(*new_state, loss)``: the new state in the same order,
  then the scalar loss. ``run.state`` has the same form as the ``state`` given.

A donating step (``jax.jit(step, donate_argnums=...)`` or ``equinox.filter_jit(donate=...)``)
runs as a training loop does: the state given is copied once (so the caller's arrays stay
alive), then each step's outputs feed the next; a donated batch is copied every step.

The step is jitted (unless it is already a ``jax.jit`` function) and called with its results
blocked on, so each step time is the real one; the first step includes tracing and compiling
and is marked as such. Synced state is plain JSON (lists of numbers; a non-finite loss is sent
as ``null``) and is pushed in small batches, so a thousand fast steps do not flood the comm.

This module holds the widget (:class:`LiveWidget`) and :func:`live`; the run's thread is
:mod:`.run`, the step convention :mod:`.steps`, the memory panel :mod:`.memory`; the words and
scales both pictures draw (synced as ``readouts``: view objects' JSON) are
:mod:`shardviz.render.live.view`, the static charts :mod:`shardviz.render.live.svg`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from shardviz.model._codec import to_data
from shardviz.model.files import write_text
from shardviz.render.html import page
from shardviz.render.live.svg import loss_svg, memory_svg, time_svg
from shardviz.render.live.view import (
    PART_OF_TRAIT,
    Json,
    head_readout,
    loss_readout,
    memory_readout,
    time_readout,
)
from shardviz.render.svg import esc
from shardviz.widgets.esm import widget_module
from shardviz.widgets.live.run import LiveRun
from shardviz.widgets.live.steps import check_live_args
from shardviz.widgets.static_bundle import with_static_html

__all__ = ["STATIC", "STATUSES", "LiveRun", "LiveWidget", "live"]

STATIC = Path(__file__).parent.parent / "static"

#: Every value ``LiveWidget.status`` takes, in the order a run goes through them.
STATUSES = ("idle", "compiling", "running", "stopping", "done", "stopped", "error")


class LiveWidget(anywidget.AnyWidget):
    """The live training view: loss curve, step times and memory per device, updated in place.

    A :class:`~shardviz.widgets.live.run.LiveRun` writes these traits from its thread; the
    view only draws them (plus a Stop button that sets ``stop_requested``). Everything synced
    is plain JSON.

    Args:
        title: a heading for the view (any text; it is shown as text, never as markup).
        total_steps: the number of steps planned, or 0 if not known.
    """

    _esm = widget_module("live.js")
    _css = STATIC / "live.css"

    #: A heading for the view.
    title = traitlets.Unicode("").tag(sync=True)
    #: One of :data:`STATUSES`.
    status = traitlets.Enum(STATUSES, default_value="idle").tag(sync=True)
    #: Steps finished (and synced).
    step = traitlets.Int(0).tag(sync=True)
    #: Steps planned; 0 when not known (e.g. an iterator of batches).
    total_steps = traitlets.Int(0).tag(sync=True)
    #: One loss per finished step; ``None`` for a non-finite loss.
    losses: traitlets.List[float | None] = traitlets.List().tag(sync=True)
    #: Wall time of each finished step (ms); the first includes tracing and compiling.
    step_ms: traitlets.List[float] = traitlets.List().tag(sync=True)
    #: Each process's own step times (ms), ``{"process", "step_ms"}`` each, in a multi-process
    #: run (:meth:`shardviz.engines.Cluster.live`); empty for one process. ``step_ms`` is then
    #: the slowest process's time of each step.
    host_step_ms: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    #: One ``{"device", "bytes", "peak", "limit", "color"}`` per device of the program (and
    #: ``"process"`` in a multi-process run).
    memory: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    #: Where ``memory`` comes from: ``"device"`` (memory_stats), ``"estimate"`` (compiler) or "".
    memory_source = traitlets.Enum(("", "device", "estimate"), default_value="").tag(sync=True)
    #: One line on what the memory bars mean.
    memory_note = traitlets.Unicode("").tag(sync=True)
    #: The error that ended the run, or "".
    error = traitlets.Unicode("").tag(sync=True)
    #: Set by the view's Stop button; the run stops after its current step.
    stop_requested = traitlets.Bool(False).tag(sync=True)
    #: What the view shows besides raw numbers (words, scales, tick labels), made from the
    #: traits above by :mod:`shardviz.render.live.view` and kept up to date here: the JS only draws it.
    readouts: traitlets.Dict[str, Json] = traitlets.Dict().tag(sync=True)

    def __init__(self, title: str = "", total_steps: int = 0, **kwargs: Any) -> None:
        super().__init__(title=str(title), total_steps=int(total_steps), **kwargs)

    @traitlets.default("readouts")
    def _all_readouts(self) -> dict[str, Json]:
        return {part: self._readout(part) for part in dict.fromkeys(PART_OF_TRAIT.values())}

    @traitlets.observe(*PART_OF_TRAIT)
    def _update_readouts(self, change: dict[str, Any]) -> None:
        """Remake the one part of :attr:`readouts` that the changed trait feeds."""
        part = PART_OF_TRAIT[change["name"]]
        self.readouts = {**self.readouts, part: self._readout(part)}

    def _readout(self, part: str) -> Json:
        """One part of :attr:`readouts` (``head``, ``loss``, ``time`` or ``memory``), made anew:
        its view object's JSON."""
        if part == "head":
            view: Any = head_readout(self.step, self.total_steps)
        elif part == "loss":
            view = loss_readout(self.losses)
        elif part == "time":
            view = time_readout(self.step_ms, self.host_step_ms)
        else:
            view = memory_readout(self.memory, self.memory_note)
        return to_data(view)

    def static_html(self) -> str:
        """The current state as static HTML+SVG (no script): for saved notebooks and files."""
        css = (STATIC / "live.css").read_text(encoding="utf-8")
        words = self.readouts
        last = words["loss"]["last"]
        last_html = f'<span class="sv-l-last">{esc(last)}</span>' if last else ""
        head = (
            f'<div class="sv-l-head"><span class="sv-l-title">{esc(self.title)}</span>'
            f'<span class="sv-l-status sv-l-status-{esc(self.status)}">{esc(self.status)}</span>'
            f'<span class="sv-l-progress">{esc(words["head"]["progress"])}</span>'
            f"{last_html}</div>"
        )
        error = (
            f'<div class="sv-l-error" role="alert">{esc(self.error)}</div>' if self.error else ""
        )
        panels = (
            '<div class="sv-l-panels">'
            '<figure class="sv-l-panel"><figcaption>loss</figcaption>'
            f"{loss_svg(self.losses, self.total_steps)}</figure>"
            '<figure class="sv-l-panel"><figcaption>step time (ms)</figcaption>'
            f"{time_svg(self.step_ms, self.total_steps, self.host_step_ms)}"
            f"{_legend(words['time']['hosts'])}"
            f'<div class="sv-l-note">{esc(words["time"]["note"])}</div></figure>'
            '<figure class="sv-l-panel"><figcaption>memory per device</figcaption>'
            f"{memory_svg(self.memory)}"
            f'<div class="sv-l-note">{esc(words["memory"]["note"])}</div>'
            "</figure></div>"
        )
        return f'<div class="sv-l-root"><style>{css}</style>{head}{error}{panels}</div>'

    def save_html(self, path: str | Path) -> str:
        """Write the current state as one self-contained offline HTML file; return the path.

        The file is written whole or not at all; a path that cannot be written is a
        ShardvizError naming it."""
        title = f"shardviz live: {self.title}" if self.title else "shardviz live"
        return write_text(path, lambda: page(title, [self.static_html()]))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The live widget view plus a static ``text/html`` for viewers without a kernel."""
        return with_static_html(super()._repr_mimebundle_(**kwargs), self.static_html())


def _legend(lines: list[Json]) -> str:
    """The key to the process lines of the step-time chart ("" for one process)."""
    if not lines:
        return ""
    keys = "".join(
        f'<span class="sv-l-key" style="--sv-key:{esc(line["color"])}" '
        f'title="{esc(line["title"])}">p{esc(line["process"])}</span>'
        for line in lines
    )
    return f'<div class="sv-l-legend">{keys}</div>'


def live(
    step_fn: Callable[..., Any],
    state: Any,
    batch_or_batches: Any,
    steps: int | None = None,
    every: int = 1,
    *,
    title: str = "",
) -> LiveRun:
    """Run training steps in the background and watch them live; returns at once.

    Args:
        step_fn: ``step_fn(*state, batch) -> (*new_state, loss)`` (see the module docstring),
            e.g. the zoo's ``make_train_step(model)`` with ``state=(params, opt_state)``, or
            ``mlp.train_step`` with ``state=params``. Jitted here unless it already is.
        state: the arguments before the batch: a plain ``tuple`` for several, else one.
        batch_or_batches: one batch reused every step; an iterator giving one batch per step
            (the run ends when it runs out); or a callable ``step_index -> batch``.
        steps: how many steps to run; ``None`` runs until an iterator of batches runs out.
        every: update the view after every ``every`` steps (and never more often than every
            0.1 s, so fast steps are sent in small batches).
        title: a heading for the view.

    Returns:
        The running :class:`LiveRun`: ``.view`` (the widget; showing the run shows it),
        ``.wait()``, ``.stop()``, ``.state``, ``.losses``, ``.step_ms``, ``.status``.
        A step that raises ends the run with status ``"error"`` and the message in the view.

    Raises:
        TypeError: ``step_fn`` is not callable.
        ValueError: ``steps`` or ``every`` is not a positive integer, or ``steps`` is missing
            for a batch or callable (which never run out).

    Note:
        The run happens in another thread: a ``with jax.set_mesh(...)`` around the call is
        carried into it, other context managers (e.g. ``jax.default_device``) are not.
    """
    check_live_args(step_fn, batch_or_batches, steps, every)
    view = LiveWidget(title=title, total_steps=steps or 0)
    return LiveRun(step_fn, state, batch_or_batches, steps=steps, every=every, view=view).start()
