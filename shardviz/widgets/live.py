"""The live training view: run training steps in a background thread, watch them in a widget.

:func:`live` starts a :class:`LiveRun` and returns at once; the run's :class:`LiveView` (an
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
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anywidget
import jax
import numpy as np
import traitlets

from shardviz.capture.calls import copy_arrays, donated_positions
from shardviz.capture.memory import analysis_bytes, memory_stats, peak_bytes
from shardviz.errors import problem
from shardviz.render.colors import device_color
from shardviz.render.geometry import format_bytes
from shardviz.render.html import esc, page
from shardviz.widgets.static_bundle import with_static_html

STATIC = Path(__file__).parent / "static"

#: Every value ``LiveView.status`` takes, in the order a run goes through them.
STATUSES = ("idle", "compiling", "running", "stopping", "done", "stopped", "error")
#: The view is updated at most this often (seconds), however fast the steps are.
SYNC_SECONDS = 0.1
#: An error shown in the view is cut to this many characters (the full one is ``run.exception``).
MAX_ERROR_CHARS = 4000
#: Devices drawn in the memory panel before the rest are summarised.
MAX_MEMORY_BARS = 64

# Chart geometry, shared with live.js (px).
LOSS_W, LOSS_H = 380, 180
TIME_W, TIME_H = 240, 120
PAD_L, PAD_R, PAD_T, PAD_B = 56, 10, 10, 22
MEM_ROW, MEM_LABEL, MEM_BAR, MEM_VALUE = 18, 52, 150, 78

Json = dict[str, Any]


# --------------------------------------------------------------------------------------------
# Numbers for people (live.js formats the same way)


def format_loss(value: float | None) -> str:
    """A loss with four significant digits; ``not finite`` for NaN/inf/``None``."""
    if value is None or not math.isfinite(value):
        return "not finite"
    return f"{value:.4g}"


def format_ms(ms: float) -> str:
    """Milliseconds, with fewer decimals as they grow: ``0.42``, ``12.3``, ``812``."""
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    return f"{ms:.2f}"


def median_step_ms(step_ms: Sequence[float]) -> float | None:
    """Median step time without the first step (which includes compiling); ``None`` if < 2."""
    return statistics.median(step_ms[1:]) if len(step_ms) > 1 else None


def json_loss(value: float) -> float | None:
    """A loss as JSON carries it: non-finite values become ``None`` (JSON has no NaN)."""
    return value if math.isfinite(value) else None


# --------------------------------------------------------------------------------------------
# Static SVG views (the same pictures live.js draws)


def _n(x: float) -> str:
    return f"{x:.1f}".removesuffix(".0")


def _x_of(i: int, count: int, width: int) -> float:
    """x of the ``i``-th step (0-based) when the axis spans ``count`` steps."""
    plot = width - PAD_L - PAD_R
    return PAD_L + (plot / 2 if count <= 1 else i / (count - 1) * plot)


def _span(values: Sequence[float]) -> tuple[float, float]:
    """The y range drawn for some finite values: their range, padded a little."""
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if hi == lo:
        pad = abs(hi) * 0.05 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.04
    return lo - pad, hi + pad


def _y_of(v: float, lo: float, hi: float, height: int) -> float:
    plot = height - PAD_T - PAD_B
    return PAD_T + (hi - v) / (hi - lo) * plot


def _path(points: Sequence[tuple[float, float] | None]) -> str:
    """An SVG path through the points, broken where a point is ``None``."""
    out, pen_down = [], False
    for p in points:
        if p is None:
            pen_down = False
            continue
        out.append(f"{'L' if pen_down else 'M'}{_n(p[0])} {_n(p[1])}")
        pen_down = True
    return "".join(out)


def _axes(width: int, height: int) -> str:
    x0, y1 = PAD_L, height - PAD_B
    return (
        f'<line class="sv-l-axis" x1="{x0}" y1="{PAD_T}" x2="{x0}" y2="{y1}"/>'
        f'<line class="sv-l-axis" x1="{x0}" y1="{y1}" x2="{width - PAD_R}" y2="{y1}"/>'
    )


def _tick(x: float, y: float, text: str, anchor: str) -> str:
    return f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}">{esc(text)}</text>'


def _x_ticks(count: int, width: int, height: int) -> str:
    y = height - PAD_B + 14
    last = max(count, 1)
    ticks = _tick(PAD_L, y, "1", "start")
    if last > 1:
        ticks += _tick(width - PAD_R, y, str(last), "end")
    return ticks


def loss_svg(losses: Sequence[float | None], total_steps: int = 0) -> str:
    """The loss curve: a path through the finite losses and one point per loss.

    A non-finite loss (``None`` in synced state) is a red point on the top edge, and the path
    breaks there.
    """
    count = max(total_steps, len(losses))
    finite = [v for v in losses if v is not None and math.isfinite(v)]
    lo, hi = _span(finite)
    pts: list[tuple[float, float] | None] = []
    dots = []
    for i, v in enumerate(losses):
        x = _x_of(i, count, LOSS_W)
        good = v is not None and math.isfinite(v)
        y = _y_of(v, lo, hi, LOSS_H) if good else PAD_T
        pts.append((x, y) if good else None)
        cls = "sv-l-pt" if good else "sv-l-pt sv-l-bad"
        dots.append(
            f'<circle class="{cls}" cx="{_n(x)}" cy="{_n(y)}" r="{_radius(len(losses))}">'
            f"<title>step {i + 1}: loss {esc(format_loss(v))}</title></circle>"
        )
    ticks = _x_ticks(count, LOSS_W, LOSS_H)
    if finite:
        top, bottom = max(finite), min(finite)
        ticks += _tick(PAD_L - 4, _y_of(top, lo, hi, LOSS_H) + 3, format_loss(top), "end")
        if bottom != top:
            ticks += _tick(PAD_L - 4, _y_of(bottom, lo, hi, LOSS_H) + 3, format_loss(bottom), "end")
    return (
        f'<svg class="sv-l-chart sv-l-loss" width="{LOSS_W}" height="{LOSS_H}" '
        f'viewBox="0 0 {LOSS_W} {LOSS_H}" role="img" aria-label="loss by step">'
        f'{_axes(LOSS_W, LOSS_H)}{ticks}<path class="sv-l-line" d="{_path(pts)}"/>'
        f'<g class="sv-l-pts">{"".join(dots)}</g></svg>'
    )


def _radius(n: int) -> str:
    return "2.5" if n <= 200 else "1.5"


def time_svg(step_ms: Sequence[float], total_steps: int = 0) -> str:
    """Step times after the first (compile) step, with their median as a dashed line."""
    count = max(total_steps, len(step_ms))
    rest = list(step_ms[1:])
    top = max(rest) * 1.1 if rest else 1.0
    pts = [
        (_x_of(i, count, TIME_W), _y_of(v, 0.0, top, TIME_H)) for i, v in enumerate(rest, start=1)
    ]
    ticks = _x_ticks(count, TIME_W, TIME_H)
    median = ""
    med = median_step_ms(step_ms)
    labels = [(0.0, "0")]
    if med is not None:
        labels += [(med, format_ms(med)), (max(rest), format_ms(max(rest)))]
    ticks += "".join(
        _tick(PAD_L - 4, _y_of(v, 0.0, top, TIME_H) + 3, text, "end")
        for v, text in _spaced(labels, top)
    )
    if med is not None:
        y = _y_of(med, 0.0, top, TIME_H)
        median = (
            f'<line class="sv-l-median" x1="{PAD_L}" y1="{_n(y)}" x2="{TIME_W - PAD_R}" '
            f'y2="{_n(y)}"><title>median {format_ms(med)} ms</title></line>'
        )
    return (
        f'<svg class="sv-l-chart sv-l-time" width="{TIME_W}" height="{TIME_H}" '
        f'viewBox="0 0 {TIME_W} {TIME_H}" role="img" aria-label="step time by step">'
        f'{_axes(TIME_W, TIME_H)}{ticks}{median}<path class="sv-l-line" d="{_path(pts)}"/></svg>'
    )


def _spaced(labels: Sequence[tuple[float, str]], top: float) -> list[tuple[float, str]]:
    """Tick labels, in order of importance, keeping only those 10 px clear of the ones kept."""
    plot = TIME_H - PAD_T - PAD_B
    kept: list[tuple[float, str]] = []
    for v, text in labels:
        if all(abs(v - k) / top * plot >= 10 for k, _ in kept):
            kept.append((v, text))
    return kept


def time_note(step_ms: Sequence[float]) -> str:
    """One line on the step times: the compile step apart, the median of the others."""
    if not step_ms:
        return "no step finished yet"
    text = f"step 1 (compile): {format_ms(step_ms[0])} ms"
    med = median_step_ms(step_ms)
    if med is not None:
        steps = "step 2" if len(step_ms) == 2 else f"steps 2–{len(step_ms)}"
        text += f" · median {format_ms(med)} ms over {steps}"
    return text


def memory_svg(memory: Sequence[Json]) -> str:
    """One bar per device (in the device's colour), scaled to the limit when every one has it."""
    shown = list(memory[:MAX_MEMORY_BARS])
    scale = _memory_scale(memory)
    rows = []
    for r, entry in enumerate(shown):
        rows.append(_memory_row(r, entry, scale))
    more = len(memory) - len(shown)
    height = MEM_ROW * (len(shown) + (1 if more else 0))
    if more:
        rows.append(_tick(0, height - 5, f"… {more} more devices", "start"))
    width = MEM_LABEL + MEM_BAR + MEM_VALUE
    return (
        f'<svg class="sv-l-mem" width="{width}" height="{max(height, 1)}" '
        f'viewBox="0 0 {width} {max(height, 1)}" role="img" aria-label="memory per device">'
        f"{''.join(rows)}</svg>"
    )


def _memory_scale(memory: Sequence[Json]) -> float:
    limits = [e.get("limit") for e in memory]
    if memory and all(limits):
        return float(max(limits))
    sizes = [max(e.get("bytes") or 0, e.get("peak") or 0) for e in memory]
    return float(max(sizes, default=0)) or 1.0


def _memory_row(r: int, entry: Json, scale: float) -> str:
    y = r * MEM_ROW
    used = int(entry.get("bytes") or 0)
    w = max(1.0, used / scale * MEM_BAR)
    hover = f"device {entry['device']}: {format_bytes(used, exact=True)}"
    peak = ""
    if entry.get("peak"):
        px = MEM_LABEL + entry["peak"] / scale * MEM_BAR
        peak = (
            f'<line class="sv-l-peak" x1="{_n(px)}" y1="{y + 2}" x2="{_n(px)}" '
            f'y2="{y + MEM_ROW - 3}"/>'
        )
        hover += f", peak {format_bytes(int(entry['peak']))}"
    if entry.get("limit"):
        hover += f" of {format_bytes(int(entry['limit']))}"
    return (
        f'<g class="sv-l-bar" data-device="{esc(entry["device"])}"><title>{esc(hover)}</title>'
        f'<text class="sv-l-dev" x="0" y="{y + 12}">dev {esc(entry["device"])}</text>'
        f'<rect x="{MEM_LABEL}" y="{y + 3}" width="{_n(w)}" height="{MEM_ROW - 6}" '
        f'fill="{esc(entry.get("color") or "#eaeef2")}"/>{peak}'
        f'<text x="{_n(MEM_LABEL + w + 4)}" y="{y + 12}">{esc(format_bytes(used))}</text></g>'
    )


def progress_text(step: int, total_steps: int) -> str:
    """``step 3 / 100``, or ``step 3`` when the number of steps is not known."""
    return f"step {step} / {total_steps}" if total_steps else f"step {step}"


# --------------------------------------------------------------------------------------------
# The widget


class LiveView(anywidget.AnyWidget):
    """The live training view: loss curve, step times and memory per device, updated in place.

    A :class:`LiveRun` writes these traits from its thread; the view only draws them (plus a
    Stop button that sets ``stop_requested``). Everything synced is plain JSON.

    Args:
        title: a heading for the view (any text; it is shown as text, never as markup).
        total_steps: the number of steps planned, or 0 if not known.
    """

    _esm = STATIC / "live.js"
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
    losses = traitlets.List().tag(sync=True)
    #: Wall time of each finished step (ms); the first includes tracing and compiling.
    step_ms = traitlets.List().tag(sync=True)
    #: One ``{"device", "bytes", "peak", "limit", "color"}`` per device of the program.
    memory = traitlets.List().tag(sync=True)
    #: Where ``memory`` comes from: ``"device"`` (memory_stats), ``"estimate"`` (compiler) or "".
    memory_source = traitlets.Enum(("", "device", "estimate"), default_value="").tag(sync=True)
    #: One line on what the memory bars mean.
    memory_note = traitlets.Unicode("").tag(sync=True)
    #: The error that ended the run, or "".
    error = traitlets.Unicode("").tag(sync=True)
    #: Set by the view's Stop button; the run stops after its current step.
    stop_requested = traitlets.Bool(False).tag(sync=True)

    def __init__(self, title: str = "", total_steps: int = 0, **kwargs: Any) -> None:
        super().__init__(title=str(title), total_steps=int(total_steps), **kwargs)

    def static_html(self) -> str:
        """The current state as static HTML+SVG (no script): for saved notebooks and files."""
        css = (STATIC / "live.css").read_text(encoding="utf-8")
        head = (
            f'<div class="sv-l-head"><span class="sv-l-title">{esc(self.title)}</span>'
            f'<span class="sv-l-status sv-l-status-{esc(self.status)}">{esc(self.status)}</span>'
            f'<span class="sv-l-progress">{esc(progress_text(self.step, self.total_steps))}</span>'
            f"{self._last_loss_html()}</div>"
        )
        error = (
            f'<div class="sv-l-error" role="alert">{esc(self.error)}</div>' if self.error else ""
        )
        panels = (
            '<div class="sv-l-panels">'
            '<figure class="sv-l-panel"><figcaption>loss</figcaption>'
            f"{loss_svg(self.losses, self.total_steps)}</figure>"
            '<figure class="sv-l-panel"><figcaption>step time (ms)</figcaption>'
            f"{time_svg(self.step_ms, self.total_steps)}"
            f'<div class="sv-l-note">{esc(time_note(self.step_ms))}</div></figure>'
            '<figure class="sv-l-panel"><figcaption>memory per device</figcaption>'
            f"{memory_svg(self.memory)}"
            f'<div class="sv-l-note">{esc(self.memory_note or "not measured yet")}</div>'
            "</figure></div>"
        )
        return f'<div class="sv-l-root"><style>{css}</style>{head}{error}{panels}</div>'

    def _last_loss_html(self) -> str:
        if not self.losses:
            return ""
        return f'<span class="sv-l-last">loss {esc(format_loss(self.losses[-1]))}</span>'

    def save_html(self, path: str | Path) -> str:
        """Write the current state as one self-contained offline HTML file; return the path."""
        title = f"shardviz live: {self.title}" if self.title else "shardviz live"
        Path(path).write_text(page(title, [self.static_html()]), encoding="utf-8")
        return str(path)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The live widget view plus a static ``text/html`` for viewers without a kernel."""
        return with_static_html(super()._repr_mimebundle_(**kwargs), self.static_html())


# --------------------------------------------------------------------------------------------
# Batches, steps and memory


class _Exhausted(Exception):
    """The batch iterator ran out."""


def batch_source(batches: Any) -> Callable[[int], Any]:
    """``step index -> batch`` for the three accepted forms.

    An iterator (a generator, ``iter(list_of_batches)``) gives the next batch each step; a
    callable is called with the 0-based step index; anything else is one batch reused every
    step (so a dict, tuple or list is a batch, not a sequence of batches).
    """
    if isinstance(batches, Iterator):

        def following(i: int) -> Any:
            del i
            try:
                return next(batches)
            except StopIteration:
                raise _Exhausted from None

        return following
    if callable(batches):

        def called(i: int) -> Any:
            try:
                return batches(i)
            except StopIteration:
                raise _Exhausted from None

        return called
    return lambda i: batches


def split_output(out: Any, n_state: int) -> tuple[tuple, float]:
    """``(*new_state, loss)`` -> the new state items and the loss as a float.

    Raises:
        TypeError: the output does not follow the convention.
    """
    if not isinstance(out, tuple) or len(out) != n_state + 1:
        got = f"a tuple of {len(out)}" if isinstance(out, tuple) else f"a {type(out).__name__}"
        raise TypeError(
            problem(
                "live",
                f"step_fn returned {got}, not (new_state..., loss) with {n_state} state item(s) "
                "and the loss",
                f"return the {n_state} new state item(s) in the order they came in, then the "
                "scalar loss, e.g. `return params, opt_state, loss`",
            )
        )
    loss = np.asarray(out[-1])
    if loss.size != 1 or loss.dtype.kind not in "fiu":
        raise TypeError(
            problem(
                "live",
                f"step_fn's last output should be the scalar loss, got {loss.dtype}{list(loss.shape)}",
                "return the loss last, reduced to one number (e.g. jnp.mean)",
            )
        )
    return tuple(out[:-1]), float(loss.reshape(()))


def abstract(tree: Any) -> Any:
    """jax arrays -> ``ShapeDtypeStruct`` with their sharding (safe after a donating step)."""

    def one(x: Any) -> Any:
        if isinstance(x, jax.Array):
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)
        return x

    return jax.tree.map(one, tree)


def program_devices(compiled: Any) -> list[Any]:
    """The devices a compiled program runs on, by id."""
    devices: dict[int, Any] = {}
    for sharding in jax.tree.leaves((compiled.input_shardings, compiled.output_shardings)):
        for d in getattr(sharding, "device_set", ()):
            devices[d.id] = d
    return [devices[i] for i in sorted(devices)]


def device_stats(devices: Sequence[Any]) -> list[dict | None]:
    """Each device's ``memory_stats()`` (GPU/TPU); ``None`` where the backend gives none (CPU)."""
    return [memory_stats(d) for d in devices]


def device_memory(devices: Sequence[Any], stats: Sequence[dict]) -> list[Json]:
    """Memory entries from the devices' own statistics: bytes in use, peak, limit."""
    return [
        {
            "device": int(d.id),
            "bytes": int(s.get("bytes_in_use", 0)),
            "peak": int(s["peak_bytes_in_use"]) if "peak_bytes_in_use" in s else None,
            "limit": int(s["bytes_limit"]) if "bytes_limit" in s else None,
            "color": device_color(int(d.id)),
        }
        for d, s in zip(devices, stats, strict=True)
    ]


def estimated_memory(devices: Sequence[Any], analysis: Any) -> tuple[list[Json], str]:
    """Memory entries from the compiler's analysis (one SPMD figure, the same on each device).

    Per device: arguments + outputs - aliased + temp, as :mod:`shardviz.capture.memory` counts.
    """
    arg, out, alias, temp = analysis_bytes(analysis)
    total = peak_bytes(arg, out, alias, temp)
    entries = [
        {
            "device": int(d.id),
            "bytes": total,
            "peak": None,
            "limit": None,
            "color": device_color(int(d.id)),
        }
        for d in devices
    ]
    note = (
        "compiler's estimate per device (the backend gives no memory statistics): arguments "
        f"{format_bytes(arg)} + outputs {format_bytes(out)} − aliased {format_bytes(alias)} + "
        f"temp {format_bytes(temp)} = {format_bytes(total)}"
    )
    return entries, note


DEVICE_NOTE = (
    "device memory_stats(): bytes in use (tick: peak in use), scaled to the limit if known"
)


# --------------------------------------------------------------------------------------------
# The run


class LiveRun:
    """Training steps running in a daemon thread, drawn live in :attr:`view`.

    Made by :func:`live`. Showing it in a notebook shows its view.
    """

    def __init__(
        self,
        step_fn: Callable[..., Any],
        state: Any,
        batches: Any,
        *,
        steps: int | None,
        every: int,
        title: str,
    ) -> None:
        self._tuple_state = type(state) is tuple
        self._state_args: tuple = state if self._tuple_state else (state,)
        self._jitted = step_fn if hasattr(step_fn, "lower") else jax.jit(step_fn)
        n_args = len(self._state_args) + 1
        self._donated = donated_positions(self._jitted, n_args)
        # A donating step deletes its inputs: the caller's state is copied once (the steps
        # then thread their own outputs), and a donated batch is copied every step (one batch
        # may be reused, and a buffer donated twice crashes the process).
        self._state_args = tuple(
            copy_arrays(x) if i in self._donated else x for i, x in enumerate(self._state_args)
        )
        self._copy_batch = n_args - 1 in self._donated
        self._next_batch = batch_source(batches)
        self._steps = steps
        self._every = every
        self._sync_seconds = SYNC_SECONDS
        self._mesh = jax.sharding.get_mesh()  # jax's mesh context is per thread: carry it over
        self._lock = threading.Lock()
        self._status_lock = threading.Lock()
        self._finished = False
        self._stop = threading.Event()
        self._losses: list[float] = []
        self._step_ms: list[float] = []
        self._devices: list[Any] = []
        self._memory_source = ""
        self.exception: BaseException | None = None
        self.view = LiveView(title=title, total_steps=steps or 0)
        self.view.observe(self._on_stop_button, names="stop_requested")
        self._thread = threading.Thread(target=self._run, name="shardviz-live", daemon=True)

    # -- public -------------------------------------------------------------------------------

    @property
    def state(self) -> Any:
        """The latest state, in the form given to :func:`live` (a tuple or one item)."""
        args = self._state_args
        return args if self._tuple_state else args[0]

    @property
    def losses(self) -> list[float]:
        """The loss of every finished step (floats; NaN stays NaN here)."""
        with self._lock:
            return list(self._losses)

    @property
    def step_ms(self) -> list[float]:
        """The wall time of every finished step, in ms; the first includes compiling."""
        with self._lock:
            return list(self._step_ms)

    @property
    def median_step_ms(self) -> float | None:
        """Median step time without the compile step; ``None`` before two steps."""
        return median_step_ms(self.step_ms)

    @property
    def status(self) -> str:
        """One of :data:`STATUSES` (the view's)."""
        return self.view.status

    @property
    def error(self) -> str:
        """The error message shown in the view, or ""."""
        return self.view.error

    @property
    def running(self) -> bool:
        """Whether the thread is still going."""
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> LiveRun:
        """Block until the run ends (or ``timeout`` seconds pass); returns the run.

        Errors in a step do not raise here: see :attr:`status`, :attr:`error`, :attr:`exception`.
        """
        self._thread.join(timeout)
        return self

    def stop(self) -> LiveRun:
        """Ask the run to stop after its current step; returns at once (``.wait()`` to join)."""
        self._stop.set()
        with self._status_lock:
            if not self._finished and self.view.status in ("compiling", "running"):
                self.view.status = "stopping"
        return self

    def save_html(self, path: str | Path) -> str:
        """Write the view's current state as a self-contained offline HTML file."""
        return self.view.save_html(path)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        losses = self.losses
        last = f", loss {format_loss(losses[-1])}" if losses else ""
        return f"<LiveRun {self.status}, {progress_text(len(losses), self.view.total_steps)}{last}>"

    # -- the thread ---------------------------------------------------------------------------

    def start(self) -> LiveRun:
        """Start the thread (once); :func:`live` does this."""
        self.view.status = "compiling"
        self._thread.start()
        return self

    def _on_stop_button(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self.stop()

    def _run(self) -> None:
        """The thread: run the steps; whatever happens, end with a final sync and a status."""
        outcome = "done"
        try:
            if self._mesh.empty:
                outcome = self._loop()
            else:
                with jax.set_mesh(self._mesh):
                    outcome = self._loop()
        except Exception as err:  # the user's code: show it in the view, keep the kernel alive
            outcome = "error"
            self.exception = err
            self.view.error = _error_text(len(self._step_ms) + 1, err)
        finally:
            with contextlib.suppress(Exception):  # the view may be gone; the lists keep it all
                self._sync()
            with self._status_lock:
                self._finished = True
                self.view.status = outcome

    def _loop(self) -> str:
        """Run the steps; returns ``"done"`` or ``"stopped"``."""
        last_sync, pending = -math.inf, 0
        i = 0
        while self._steps is None or i < self._steps:
            if self._stop.is_set():
                return "stopped"
            try:
                batch = self._next_batch(i)
            except _Exhausted:
                return "done"
            self._step(i, batch)
            i += 1
            pending += 1
            now = time.monotonic()
            if pending >= self._every and now - last_sync >= self._sync_seconds:
                self._sync()
                last_sync, pending = now, 0
        return "done"

    def _step(self, i: int, batch: Any) -> None:
        """One step: call, block, time; keep the new state, loss and time."""
        if self._copy_batch:
            batch = copy_arrays(batch)
        args = (*self._state_args, batch)
        specs = abstract(args) if i == 0 else None
        t0 = time.perf_counter()
        out = jax.block_until_ready(self._jitted(*args))
        ms = (time.perf_counter() - t0) * 1e3
        new_state, loss = split_output(out, len(self._state_args))
        self._state_args = new_state
        with self._lock:
            self._losses.append(loss)
            self._step_ms.append(ms)
        if specs is not None:
            self._measure_memory(specs)
            with self._status_lock:
                if not self._stop.is_set():
                    self.view.status = "running"

    def _measure_memory(self, specs: tuple) -> None:
        """After the first step: which devices, and their memory (device stats or estimate)."""
        try:
            compiled = self._jitted.lower(*specs).compile()
            self._devices = program_devices(compiled)
            stats = device_stats(self._devices)
            if self._devices and all(stats):
                self._memory_source = "device"
                entries, note = device_memory(self._devices, stats), DEVICE_NOTE
            else:
                analysis = compiled.memory_analysis()
                if analysis is None:
                    raise RuntimeError("the backend gives no memory analysis")
                self._memory_source = "estimate"
                entries, note = estimated_memory(self._devices, analysis)
        except Exception as err:  # memory is extra: never fail the run for it
            self._memory_source = ""
            entries, note = [], f"memory not available ({type(err).__name__}: {err})"[:300]
        with self.view.hold_sync():
            self.view.memory = entries
            self.view.memory_source = self._memory_source
            self.view.memory_note = note

    def _sync(self) -> None:
        """Push the losses, times and (live) device memory to the view in one message."""
        with self._lock:
            losses = [json_loss(v) for v in self._losses]
            step_ms = list(self._step_ms)
        memory = None
        if self._memory_source == "device":
            stats = device_stats(self._devices)
            if all(stats):
                memory = device_memory(self._devices, stats)
        with self.view.hold_sync():
            self.view.losses = losses
            self.view.step_ms = step_ms
            self.view.step = len(step_ms)
            if memory is not None:
                self.view.memory = memory


def _error_text(step: int, err: BaseException) -> str:
    text = f"step {step} failed: {type(err).__name__}: {err}"
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 1] + "…"
    return text


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
    _check_args(step_fn, batch_or_batches, steps, every)
    return LiveRun(step_fn, state, batch_or_batches, steps=steps, every=every, title=title).start()


def _check_args(step_fn: Any, batches: Any, steps: int | None, every: int) -> None:
    if not callable(step_fn):
        raise TypeError(
            problem(
                "live",
                f"step_fn is a {type(step_fn).__name__}, not a function",
                "pass a function step_fn(*state, batch) -> (*new_state, loss)",
            )
        )
    for name, value in (("steps", steps), ("every", every)):
        if value is None and name == "steps":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                problem(
                    "live", f"{name}={value!r} is not an integer >= 1", f"pass {name}=N, N >= 1"
                )
            )
    if steps is None and not isinstance(batches, Iterator):
        raise ValueError(
            problem(
                "live",
                "steps is missing, and a single batch or a batch function never runs out",
                "pass steps=N, or an iterator of batches (e.g. iter(list_of_batches))",
            )
        )
