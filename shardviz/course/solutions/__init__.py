"""The answers to the course's exercises, kept apart from the notebooks that ask them.

Each ``sNN`` module (NN: the notebook's number) has ``SOLUTIONS`` (exercise id -> an answer
its check accepts) and ``WHY`` (exercise id -> a few sentences on why, for the docs' solutions
page). The tests check every exercise against its solution.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any


def solutions() -> dict[str, tuple[Any, str]]:
    """Every exercise's solution and why, by exercise id."""
    found: dict[str, tuple[Any, str]] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("s") and module.name[1:].isdigit():
            mod = importlib.import_module(f"{__name__}.{module.name}")
            for key, answer in mod.SOLUTIONS.items():
                found[key] = (answer, mod.WHY.get(key, ""))
    return found
