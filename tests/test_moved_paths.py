"""Modules moved to the layered layout still import from their old paths, as the same module
objects, so code written against the old layout keeps working."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from shardviz.moved import MOVED


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_gives_the_module_at_its_new_path(old: str, new: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(new)
    assert importlib.import_module(new).__spec__.name == new  # its own spec is kept


def test_old_from_imports_work_in_a_fresh_interpreter() -> None:
    code = (
        "from shardviz.estimate.presets import hardware\n"
        "from shardviz.capture.explain import explain\n"
        "from shardviz.detect import candidates\n"
        "from shardviz.widgets.live import live, LiveRun\n"
        "from shardviz.strategies.search import suggest\n"
        "from shardviz.strategies.pipeline import pipeline_rules, stack_layers\n"
        "from shardviz.widgets.explorer import ExplorerView\n"
        "import shardviz as sv\n"
        "assert explain is sv.explain and hardware('v5e').name == 'TPU v5e'\n"
        "assert live is sv.live and suggest is sv.suggest\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_a_package_that_grew_from_a_module_still_names_its_submodules() -> None:
    import shardviz.widgets.live as live_package

    run = importlib.import_module("shardviz.widgets.live.run")
    assert live_package.run is run  # a submodule, not a name of the old module
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = live_package.nothing_here
