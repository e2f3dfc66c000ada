"""How a person names a source file: a notebook cell as Jupyter numbers it (``In [12]``), a
file by its path from the working directory, a library's file from its package."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import replace

from shardviz.model import Frame

#: Where installed packages live: a path inside is named from the package down.
PACKAGE_DIRS = ("site-packages/", "dist-packages/")

#: The directory holding shardviz's own package directory: the package's files are named from the package down
#: (``shardviz/strategies/models/decoder.py``) wherever it is checked out, also when it is
#: installed editable outside ``site-packages`` and the working directory.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_ROOT = os.path.dirname(_PACKAGE_DIR).replace("\\", "/").rstrip("/") + "/"


def cell_label(path: str) -> str:
    """``In [12]`` for code the running IPython kernel compiled as cell 12, else ``""``."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if name is None:
        return ""
    try:
        got = name(path)
    except Exception:  # an IPython whose compiler names code another way
        return ""
    if not got or not str(got[1]).startswith("In["):
        return ""
    return "In [" + str(got[1])[3:]


def library_label(path: str) -> str:
    """``shardviz/strategies/models/decoder.py`` for a file of shardviz's own package, from
    its package down (never the machine's path to it); ``""`` for any other file."""
    slashed = path.replace("\\", "/")
    rest = slashed[len(_LIBRARY_ROOT) :] if slashed.startswith(_LIBRARY_ROOT) else ""
    return rest if rest.startswith("shardviz/") else ""


def file_label(path: str) -> str:
    """``In [12]``, ``models/llama.py`` (from the working directory), ``flax/linen/module.py``
    or ``shardviz/strategies/models/decoder.py`` (from its package), or the path itself."""
    cell = cell_label(path)
    if cell:
        return cell
    slashed = path.replace("\\", "/")
    for marker in PACKAGE_DIRS:
        if marker in slashed:
            return slashed.split(marker, 1)[1]
    library = library_label(path)
    if library:
        return library
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:  # another drive
            return path
        if not rel.startswith(".."):
            return rel.replace("\\", "/")
    return path


def without_repeats(frames: Iterable[Frame]) -> tuple[Frame, ...]:
    """A call chain without the frames a transformation repeats: when a frame comes again
    (scan, remat and jit trace the same functions again under one another), the chain goes
    back to where it first was, so ``step > loss > forward > step > loss > forward > mlp``
    reads ``step > loss > forward > mlp``."""
    out: list[Frame] = []
    for f in frames:
        key = (f.file, f.line, f.function)
        at = next((i for i, g in enumerate(out) if (g.file, g.line, g.function) == key), None)
        if at is not None:
            del out[at:]
        out.append(f)
    return tuple(out)


def labelled(frames: Iterable[Frame], labels: dict[str, str]) -> tuple[Frame, ...]:
    """``frames`` with their :attr:`~shardviz.model.Frame.label` set (``labels`` caches each
    file's label)."""
    out = []
    for f in frames:
        if f.file not in labels:
            labels[f.file] = file_label(f.file)
        label = labels[f.file]
        out.append(f if f.label == label else replace(f, label=label))
    return tuple(out)
