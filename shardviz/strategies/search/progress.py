"""Progress of a plan search while it runs: a bar in a notebook, one quiet line on a terminal,
nothing when output goes to a file or a test.

The notebook bar is :mod:`shardviz.strategies.progress`'s ``ipywidgets`` bar (the one every
long wait shows), naming the best plan so far and filling towards whichever limit is nearer:
the time budget, or with ``max_plans`` the cap (a capped search that ends at its cap long
before its budget fills the bar, and its line says "k of N plans").

A search compiles many plans on purpose, some of them poor; the SPMD partitioner's warnings
about those would flood the terminal, so :func:`compiler_quiet` sends file descriptor 2 to
``/dev/null`` while it runs (each plan's report still keeps its compiler log and notes).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from collections.abc import Iterator
from typing import Any, Protocol, TextIO

from shardviz.strategies.progress import Bar, Line, in_notebook, terminal_stream


class Progress(Protocol):
    """What the search reports to: after each plan, and once at the end. An ``update`` that
    also takes a ``max_plans`` keyword is told the search's cap (``None`` when it has none),
    as :class:`NotebookBar` and :class:`TerminalLine` are (:func:`tell`)."""

    def update(self, tried: int, elapsed: float, budget: float, best: str) -> None: ...

    def finish(self, words: str) -> None: ...


class Quiet:
    """Reports nothing."""

    def update(
        self, tried: int, elapsed: float, budget: float, best: str, max_plans: int | None = None
    ) -> None:
        pass

    def finish(self, words: str) -> None:
        pass


def tell(
    progress: Progress,
    tried: int,
    elapsed: float,
    budget: float,
    best: str,
    max_plans: int | None,
) -> None:
    """``progress.update(...)`` with ``max_plans`` when its ``update`` takes it (a reporter
    written before the cap existed takes four arguments and still works)."""
    try:
        params = list(inspect.signature(progress.update).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: tell it the four
        params = []
    takes = any(p.name == "max_plans" or p.kind is p.VAR_KEYWORD for p in params)
    if takes:
        update: Any = progress.update  # the protocol's four, and the keyword it takes
        update(tried, elapsed, budget, best, max_plans=max_plans)
    else:
        progress.update(tried, elapsed, budget, best)


def filled(tried: int, elapsed: float, budget: float, max_plans: int | None) -> float:
    """How far the search is towards its nearer limit, 0 to 1: the share of the budget spent
    or, with a cap, of the plans compiled, whichever is larger."""
    by_time = elapsed / budget if budget > 0 else 1.0
    by_plans = tried / max_plans if max_plans else 0.0
    return min(1.0, max(0.0, by_time, by_plans))


def _line(tried: int, elapsed: float, budget: float, best: str, max_plans: int | None) -> str:
    if max_plans:
        plans = f"{tried} of {max_plans} plan{'s' if max_plans != 1 else ''}"
    else:
        plans = f"{tried} plan{'s' if tried != 1 else ''}"
    return f"{plans} tried, {elapsed:.0f} of {budget:.0f} s; best so far: {best or 'none yet'}"


#: What the search's line starts with.
TITLE = "shardviz.suggest"


class TerminalLine(Line):
    """One line on ``stream``, rewritten in place after each plan; ended at the finish."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream, TITLE)

    def update(
        self, tried: int, elapsed: float, budget: float, best: str, max_plans: int | None = None
    ) -> None:
        self.show(0.0, _line(tried, elapsed, budget, best, max_plans))

    def finish(self, words: str) -> None:
        self.end(words)


class NotebookBar(Bar):
    """An ``ipywidgets`` bar filling towards the nearer limit (:func:`filled`), and a line
    under it.

    At the finish the bar's output is replaced by the final line as plain text and HTML, so a
    saved or exported notebook (or the docs site) shows what the search did, not a widget
    that needs a kernel.
    """

    def __init__(self, display: Any) -> None:
        super().__init__(display, TITLE, "searching", "compiling the first plan…")

    def update(
        self, tried: int, elapsed: float, budget: float, best: str, max_plans: int | None = None
    ) -> None:
        fraction = filled(tried, elapsed, budget, max_plans)
        self.show(fraction, _line(tried, elapsed, budget, best, max_plans))

    def finish(self, words: str) -> None:
        self.end(words)


def progress_for(show: bool | Progress, terminal: TextIO | None = None) -> Progress:
    """The reporter for ``suggest(progress=show)``: a bar in a notebook, a line on
    ``terminal`` (default ``sys.stderr``) when it is one, nothing otherwise or when ``show``
    is false; a :class:`Progress` object is used as it is."""
    if not isinstance(show, bool):
        return show
    if not show:
        return Quiet()
    if in_notebook():
        from IPython.display import display

        return NotebookBar(display)
    stream = terminal_stream(terminal)
    return TerminalLine(stream) if stream is not None else Quiet()


@contextlib.contextmanager
def compiler_quiet() -> Iterator[TextIO | None]:
    """File descriptor 2 sent to ``/dev/null`` for the block; yields a stream on the real
    stderr (for the progress line), or ``None`` when fd 2 cannot be redirected."""
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2 (an embedded interpreter): nothing to quiet
        yield None
        return
    real = os.fdopen(os.dup(saved), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    try:
        yield real
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        real.close()
