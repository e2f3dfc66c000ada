"""The views' CSS, kept as files in ``render/static/`` (where an editor and a linter read it)
and inlined into every view's own ``<style>``, so a saved notebook needs nothing else."""

from __future__ import annotations

import functools
import string
from pathlib import Path

#: Where the stylesheets are.
STATIC = Path(__file__).parent / "static"


@functools.cache
def _text(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def stylesheet(name: str, **values: str) -> str:
    """The stylesheet ``name`` on one line, its ``${NAME}`` placeholders (font stacks, grid
    columns shared with the Python code) filled in from ``values``."""
    return string.Template(_text(name)).substitute(values).replace("\n", "")
