"""Which function draws a model object in which format: a registry the renderers fill.

The model holds data and never names a view. ``str(report)``, ``report._repr_html_()``,
``comparison.figure()`` and the rest ask this registry for the view registered for their class
and a format. :mod:`shardviz.render` registers every view when it is imported; the first call
that finds none imports that package by name (so no model module imports a renderer, and there
is no import cycle) and looks again.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, Literal

from shardviz.model.files import checked_path, write_text

#: The package whose import registers the views.
RENDERERS = "shardviz.render"

#: What a view returns: text for ``print``, an HTML fragment, a whole offline HTML document,
#: a plotly figure or a matplotlib figure.
Format = Literal["text", "html", "page", "plotly", "matplotlib"]
#: A function of one model object that draws it in one format.
View = Callable[[Any], Any]

_views: dict[tuple[type, Format], View] = {}


def register(cls: type, fmt: Format, view: View) -> None:
    """Make ``view`` draw instances of ``cls`` (and its subclasses) in ``fmt``.

    A later registration for the same class and format replaces the earlier one.
    """
    _views[(cls, fmt)] = view


def find_view(cls: type, fmt: Format) -> View | None:
    """The view registered for ``cls`` or its nearest base class in ``fmt``, or ``None``."""
    for base in cls.__mro__:
        view = _views.get((base, fmt))
        if view is not None:
            return view
    return None


def render(obj: object, fmt: Format) -> Any:
    """``obj`` drawn in ``fmt`` by its registered view, loading the renderers if need be.

    Raises:
        LookupError: no view draws ``obj``'s class in ``fmt``, even with the renderers loaded.
    """
    view = find_view(type(obj), fmt)
    if view is None:
        importlib.import_module(RENDERERS)
        view = find_view(type(obj), fmt)
    if view is None:
        raise LookupError(f"no {fmt!r} view of {type(obj).__name__} is registered")
    return view(obj)


def this_process() -> int:
    """This process's index in a multi-process jax program (0 when jax is not loaded: the
    model never imports it, and a program that has not imported jax has one process)."""
    jax = sys.modules.get("jax")
    return int(jax.process_index()) if jax is not None else 0


def save_page(obj: object, path: str | os.PathLike[str], process: int | None = 0) -> str:
    """Write ``obj``'s ``"page"`` view (one self-contained offline HTML file); return ``path``.

    In a multi-process program every process runs this line; only ``process`` writes (the
    figures are global, the same in all of them). ``process=None``: every process writes.
    The file is written whole or not at all (:func:`shardviz.model.files.write_text`): a
    view that raises leaves the file that was there as it was.

    Raises:
        ShardvizError: ``path`` is not a file path, is a folder, is in a folder that does not
            exist, or cannot be written; the message names it and what to do.
    """
    given = checked_path(path)
    if process is not None and this_process() != process:
        return given
    return write_text(given, lambda: render(obj, "page"))


def plain_line(obj: object) -> str:
    """``<shardviz Report of train_step: print() it for the text view>``."""
    name = next(
        (
            v
            for a in ("function", "model", "name", "title")
            if isinstance(v := getattr(obj, a, None), str) and v
        ),
        "",
    )
    what = f"{type(obj).__name__} of {name}" if name else type(obj).__name__
    return f"<shardviz {what}: print() it for the text view>"


class Shown:
    """What every drawable model object does through this registry: ``print(obj)`` (text),
    its HTML in a notebook, and ``obj.save_html(path)`` (one offline page)."""

    def __str__(self) -> str:
        return render(self, "text")

    def _repr_html_(self) -> str:
        return render(self, "html")

    def __repr__(self) -> str:
        """One line (a class whose dataclass writes no ``__repr__`` of its own uses it)."""
        return plain_line(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """A notebook's ``text/plain`` beside the HTML: one line. IPython prefers a class's own
        ``__repr__``, so the big ones (``Report``, ``Comparison``) are dataclasses with
        ``repr=False``: their field-by-field repr spells out every collective and frame
        (8 MiB for a 274-leaf training step, saved in the notebook with every output)."""
        printer.text(plain_line(self))

    def save_html(self, path: str | os.PathLike[str], process: int | None = 0) -> str:
        """Write it as one self-contained offline HTML file; return the path. In a
        multi-process program only ``process`` writes it (``None``: every process)."""
        return save_page(self, path, process)
