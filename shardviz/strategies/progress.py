"""Progress on a long wait: ``step 2 of 3: compiling fsdp for v5e:16x16, 12 s``, so that a
learner watching a compile of several minutes can tell it from a hung kernel.

Where it shows: in a notebook an ``ipywidgets`` bar with that line under it (replaced at the
finish by the last line as plain text and HTML, so a saved notebook and the docs site show it
without a kernel); on a terminal one line on stderr, rewritten in place; nothing otherwise (a
file, a test, a worker thread, whose progress is its owner's to show). A notebook never gets
a stderr line (ipykernel shows stderr in the cell, in red).

Quick work stays quiet: nothing appears until the work has taken :data:`DELAY_S`, and then the
seconds tick each :data:`TICK_S` while a compile holds the main thread.

Long work calls :func:`stepping` (``compare``, the serving comparison, ``smallest_slice``,
exercise checks); the plan search keeps its own line (:mod:`.search.progress`) on the same
:class:`Bar` and :class:`Line`. Work nested in work that shows progress (an exercise check
that compiles with ``compare``) shows in the outer line, not as a second bar.
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TextIO

from shardviz.model.units import format_seconds

#: Seconds of work before its progress appears (quicker work shows nothing).
DELAY_S = 2.0
#: Seconds between two updates of the elapsed time while a step runs.
TICK_S = 1.0


class Steps(Protocol):
    """What long work reports to: each step as it starts, and once at the end."""

    def start(self, k: int, n: int, what: str) -> None: ...

    def finish(self, words: str) -> None: ...


class Surface(Protocol):
    """Where progress is shown: a share done and a line, then the last line."""

    def show(self, fraction: float, line: str) -> None: ...

    def end(self, line: str) -> None: ...


class QuietSteps:
    """Reports nothing."""

    def start(self, k: int, n: int, what: str) -> None:
        pass

    def finish(self, words: str) -> None:
        pass


class Line:
    """One line on ``stream`` (``"title: line"``), rewritten in place; ended at the end.

    On a terminal the line is cut to its width (a wrapped line cannot be rewritten)."""

    def __init__(self, stream: TextIO, title: str) -> None:
        self.stream, self.title = stream, title
        self._width = 0

    def _columns(self) -> int | None:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):  # not a terminal
            return None
        return columns - 1 if columns > 1 else None  # 0: a terminal that gives no size

    def _text(self, line: str) -> str:
        text = f"{self.title}: {line}"
        columns = self._columns()
        return text[: columns - 1] + "…" if columns and len(text) > columns else text

    def show(self, fraction: float, line: str) -> None:
        text = self._text(line)
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = max(self._width, len(text))  # what is on the line now

    def end(self, line: str) -> None:
        self.stream.write("\r" + self._text(line).ljust(self._width) + "\n")
        self.stream.flush()


class Bar:
    """An ``ipywidgets`` bar (``description`` at its left) with a line under it.

    At the end the widget's output is replaced by ``"title: line"`` as plain text and HTML,
    so a saved or exported notebook (or the docs site) shows what happened, not a widget that
    needs a kernel."""

    def __init__(self, display: Any, title: str, description: str, first: str = "") -> None:
        import ipywidgets

        self.title = title
        self.bar = ipywidgets.FloatProgress(
            value=0.0, min=0.0, max=1.0, description=description, bar_style="info"
        )
        self.label = ipywidgets.Label(value=first)
        self.box = ipywidgets.VBox([self.bar, self.label])
        self.handle = display(self.box, display_id=True)

    def show(self, fraction: float, line: str) -> None:
        self.bar.value = min(1.0, max(0.0, fraction))
        self.label.value = line

    def end(self, line: str) -> None:
        self.bar.value = 1.0
        self.bar.bar_style = "success"
        self.bar.description = "done"
        self.label.value = line
        if self.handle is not None:
            text = f"{self.title}: {line}"
            bundle = {"text/plain": text, "text/html": f"<div>{html.escape(text)}</div>"}
            self.handle.update(bundle, raw=True)


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where widgets display)."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython()  # type: ignore[attr-defined]
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


def terminal_stream(terminal: TextIO | None = None) -> TextIO | None:
    """``terminal`` (default ``sys.stderr``) when it is a terminal, else ``None``."""
    stream = terminal if terminal is not None else sys.stderr
    try:
        return stream if stream is not None and stream.isatty() else None
    except (AttributeError, ValueError):  # a closed or odd stream
        return None


class Reporter:
    """Steps shown on a :class:`Surface` made once the work has taken ``delay_s`` (default
    :data:`DELAY_S`): ``step k of n: what, 12 s`` (``what, 12 s`` for one step), the seconds
    ticking on a thread of its own each ``tick_s`` (default :data:`TICK_S`; with
    ``ticking=False`` only when told, as the tests do).

    The thread runs in a copy of the caller's context, so a notebook bar it shows lands in
    the cell that started the work; :meth:`finish` stops it before returning."""

    def __init__(
        self,
        make_surface: Callable[[], Surface],
        *,
        delay_s: float | None = None,
        tick_s: float | None = None,
        ticking: bool = True,
        clock: Callable[[], float] = time.monotonic,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self.make_surface, self.clock = make_surface, clock
        self.delay_s = DELAY_S if delay_s is None else delay_s
        self.on_end = on_end
        self.surface: Surface | None = None
        self.began = clock()
        self._head, self._detail, self._fraction = "", "", 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._failed: BaseException | None = None
        self._thread: threading.Thread | None = None
        if ticking:
            every = TICK_S if tick_s is None else tick_s
            self._thread = threading.Thread(
                target=contextvars.copy_context().run, args=(self._ticking, every),
                name="shardviz-progress", daemon=True,
            )  # fmt: skip
            self._thread.start()

    def _ticking(self, tick_s: float) -> None:
        while not self._stop.wait(tick_s):
            try:
                self.tick()
            except Exception as err:  # noqa: BLE001 (kept for finish, never printed here)
                self._failed = err
                return

    def line(self) -> str:
        """What the surface shows now."""
        head = self._head + (f" · {self._detail}" if self._detail else "")
        return f"{head}, {format_seconds(round(self.clock() - self.began))}"

    def start(self, k: int, n: int, what: str) -> None:
        with self._lock:
            self._head = f"step {k} of {n}: {what}" if n > 1 else what
            self._detail, self._fraction = "", (k - 1) / n if n else 0.0
        self.tick()

    def detail(self, words: str) -> None:
        """What work nested in this step is doing (``""``: nothing now)."""
        with self._lock:
            self._detail = words
        self.tick()

    def tick(self) -> None:
        """Show the line now, once the work has taken ``delay_s``."""
        with self._lock:
            if self._stop.is_set():
                return
            if self.surface is None:
                if self.clock() - self.began < self.delay_s:
                    return
                self.surface = self.make_surface()
            self.surface.show(self._fraction, self.line())

    def finish(self, words: str) -> None:
        """Stop the clock; a surface shown ends with ``words``."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        try:
            with self._lock:
                if self.surface is not None:
                    self.surface.end(words)
        finally:
            if self.on_end is not None:
                self.on_end()
        if self._failed is not None:
            raise self._failed


class Nested:
    """Steps of work nested in a :class:`Reporter`'s step, shown in its line."""

    def __init__(self, outer: Reporter) -> None:
        self.outer = outer

    def start(self, k: int, n: int, what: str) -> None:
        self.outer.detail(f"{what} ({k} of {n})" if n > 1 else what)

    def finish(self, words: str) -> None:
        self.outer.detail("")


#: The steps reported to in this context (nested work reports there).
_current: contextvars.ContextVar[Steps | None] = contextvars.ContextVar(
    "shardviz_progress", default=None
)


def steps_for(
    show: bool | Steps,
    title: str,
    description: str = "working",
    terminal: TextIO | None = None,
) -> Steps:
    """The reporter for a ``progress=show`` argument: a :class:`Steps` object as it is;
    ``False`` nothing; ``True`` the line of work already showing progress in this context,
    else a bar in a notebook, a line on ``terminal`` (default ``sys.stderr``) when it is a
    terminal, nothing otherwise or off the main thread."""
    if not isinstance(show, bool):
        return show
    outer = _current.get()
    if not show or outer is not None:
        return Nested(outer) if show and isinstance(outer, Reporter) else QuietSteps()
    if threading.current_thread() is not threading.main_thread():
        return QuietSteps()
    if in_notebook():
        from IPython.display import display

        return Reporter(lambda: Bar(display, title, description))
    stream = terminal_stream(terminal)
    if stream is None:
        return QuietSteps()
    try:  # the terminal itself: fd 2 is the compiler's log file while XLA runs
        own = os.fdopen(os.dup(stream.fileno()), "w")
    except (AttributeError, OSError, ValueError):
        return Reporter(lambda: Line(stream, title))
    return Reporter(lambda: Line(own, title), on_end=own.close)


class Stepper:
    """Counts the steps of :func:`stepping`: call it with what the next step does; set
    ``done`` to say what the work did once it knows (the last line's words)."""

    def __init__(self, steps: Steps, n: int, done: str) -> None:
        self.steps, self.n, self.k, self.done, self.what = steps, n, 0, done, ""
        self.began = time.monotonic()

    def __call__(self, what: str) -> None:
        self.k += 1
        self.what = what
        self.steps.start(self.k, self.n, what)

    def summary(self, error: BaseException | None) -> str:
        """The last line: what was done and in how long, or why it stopped."""
        if error is None:
            return f"{self.done} in {format_seconds(round(time.monotonic() - self.began))}"
        why = (
            "interrupted"
            if isinstance(error, KeyboardInterrupt)
            else f"stopped by {type(error).__name__}"
        )
        return f"{why} at step {self.k} of {self.n}" + (f": {self.what}" if self.what else "")


@contextlib.contextmanager
def stepping(
    progress: bool | Steps, title: str, n: int, done: str, description: str = "working"
) -> Iterator[Stepper]:
    """Work of ``n`` steps reporting to ``progress`` (see :func:`steps_for`): the block
    calls the yielded :class:`Stepper` as each step starts; at the end the reporter finishes
    with ``"<done> in 12 s"``, or says where it was interrupted or which exception stopped
    it (``stopped by CompileError at step 1 of 2: compiling tp for v5e:2x4``; the exception
    goes on as it is)."""
    steps = steps_for(progress, title, description)
    stepper = Stepper(steps, n, done)
    token = _current.set(steps)
    error: BaseException | None = None
    try:
        yield stepper
    except BaseException as err:
        error = err
        raise
    finally:
        _current.reset(token)
        steps.finish(stepper.summary(error))
