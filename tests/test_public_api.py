"""The public names of ``shardviz``: every one resolves, and no module of the package hides
one (importing ``shardviz.<name>`` would replace the function ``sv.<name>`` with the module)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import shardviz


def test_every_public_name_resolves():
    missing = [name for name in shardviz.__all__ if getattr(shardviz, name, None) is None]
    assert missing == []


def test_no_module_of_the_package_shares_a_public_name():
    modules = {m.name for m in pkgutil.iter_modules(shardviz.__path__)}
    assert modules & set(shardviz.__all__) == set()


def test_importing_every_module_leaves_the_public_functions_in_place():
    # In a fresh interpreter: import each top-level module, then call-check the functions.
    names = sorted(m.name for m in pkgutil.iter_modules(shardviz.__path__) if m.name != "__main__")
    code = (
        "import importlib, shardviz as sv\n"
        f"for m in {names!r}: importlib.import_module('shardviz.' + m)\n"
        "assert callable(sv.cluster) and callable(sv.live) and callable(sv.explain)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
    assert importlib.import_module("shardviz.engines").cluster is shardviz.cluster


def test_the_type_checkers_imports_are_the_api_table():
    """``shardviz.API`` is the one list: the TYPE_CHECKING imports repeat it for mypy."""
    source = Path(shardviz.__file__).read_text(encoding="utf-8")
    block = source.split("# --- generated from API ---\n")[1].split("    # --- end generated ---")[
        0
    ]
    by_module = sorted(shardviz.API.items(), key=lambda item: (item[1], item[0]))
    expected = "".join(f"    from {module} import {n} as {n}\n" for n, module in by_module)
    assert block == expected, "paste this block into shardviz/__init__.py:\n" + expected
    assert shardviz.__all__ == list(shardviz.API)


def test_names_load_from_the_module_the_table_names():
    for name, module in shardviz.API.items():
        assert getattr(shardviz, name) is getattr(importlib.import_module(module), name), name


def test_the_explorer_shows_its_own_signature() -> None:
    """Not traitlets' ``(*args, **kwargs)``: what ``help`` and the docs print."""
    import inspect

    params = list(inspect.signature(shardviz.Explorer).parameters)
    assert params == ["shown", "args", "steps", "target", "logical_axes", "kwargs"]
