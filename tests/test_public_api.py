"""The public names of ``shardviz``: every one resolves, and no module of the package hides
one (importing ``shardviz.<name>`` would replace the function ``sv.<name>`` with the module)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

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
