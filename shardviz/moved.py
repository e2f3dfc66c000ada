"""Old module paths that still work: modules moved when the package took its layered layout.

``import shardviz.capture.explain`` (or ``from shardviz.estimate.presets import hardware``) gives
the module now at the new path, the same object, so code written against the old layout keeps
working; new code should use the new path. :data:`MOVED` is the whole list.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

#: Old module path -> where that module lives now.
MOVED: dict[str, str] = {
    "shardviz.capture.hlo_text": "shardviz.capture.hlo.text",
    "shardviz.capture.hlo_collectives": "shardviz.capture.hlo.collectives",
    "shardviz.capture.hlo_groups": "shardviz.capture.hlo.groups",
    "shardviz.capture.hlo_loops": "shardviz.capture.hlo.loops",
    "shardviz.capture.hlo_matmuls": "shardviz.capture.hlo.matmuls",
    "shardviz.capture.hlo_memory": "shardviz.capture.hlo.memory",
    "shardviz.capture.hlo_sharding": "shardviz.capture.hlo.sharding",
    "shardviz.capture.op_work": "shardviz.capture.hlo.op_work",
    "shardviz.capture.compiler_log": "shardviz.capture.hlo.compiler_log",
    "shardviz.capture.mesh_facts": "shardviz.capture.mesh_info",
    "shardviz.capture.collective_why": "shardviz.analysis.collective_why",
    "shardviz.capture.sharding_origins": "shardviz.analysis.sharding_origins",
    "shardviz.detect": "shardviz.analysis.detect",
    "shardviz.detect.candidate": "shardviz.analysis.detect.candidate",
    "shardviz.detect.detect": "shardviz.analysis.detect.detect",
    "shardviz.detect.facts": "shardviz.analysis.detect.inputs",
    "shardviz.detect.placement": "shardviz.analysis.detect.placement",
    "shardviz.detect.traffic": "shardviz.analysis.detect.traffic",
    "shardviz.estimate": "shardviz.analysis.estimate",
    "shardviz.estimate.collectives": "shardviz.analysis.estimate.collectives",
    "shardviz.estimate.placement": "shardviz.analysis.estimate.placement",
    "shardviz.estimate.predict": "shardviz.analysis.estimate.predict",
    "shardviz.estimate.presets": "shardviz.model.hardware_presets",
    "shardviz.estimate.step": "shardviz.analysis.estimate.step",
    "shardviz.estimate.targets": "shardviz.model.targets",
    "shardviz.capture.explain": "shardviz.explainer.explain",
    "shardviz.capture.diagnosis": "shardviz.explainer.diagnose",
    "shardviz.capture.diagnose_facts": "shardviz.explainer.detector_inputs",
    "shardviz.capture.fix_check": "shardviz.explainer.fix_check",
    "shardviz.capture.fix_apply": "shardviz.explainer.fix_apply",
    "shardviz.widgets.background": "shardviz.explainer.background",
    "shardviz.strategies.search_inputs": "shardviz.strategies.search.inputs",
    "shardviz.strategies.search_progress": "shardviz.strategies.search.progress",
    "shardviz.strategies.search_rank": "shardviz.strategies.search.rank",
    "shardviz.strategies.search_rules": "shardviz.strategies.search.rules",
    "shardviz.strategies.pipeline_plan": "shardviz.strategies.pipeline.plan",
    "shardviz.strategies.pipeline_shard_map": "shardviz.strategies.pipeline.shard_map",
    "shardviz.widgets.live_format": "shardviz.widgets.live.format",
    "shardviz.widgets.live_memory": "shardviz.widgets.live.memory",
    "shardviz.widgets.live_readouts": "shardviz.widgets.live.readouts",
    "shardviz.widgets.live_run": "shardviz.widgets.live.run",
    "shardviz.widgets.live_stepper": "shardviz.widgets.live.stepper",
    "shardviz.widgets.live_steps": "shardviz.widgets.live.steps",
    "shardviz.widgets.live_svg": "shardviz.widgets.live.svg",
    "shardviz.widgets.pipeline_checks": "shardviz.widgets.pipeline.checks",
    "shardviz.widgets.pipeline_controls": "shardviz.widgets.pipeline.controls",
    "shardviz.widgets.pipeline_pane": "shardviz.widgets.pipeline.pane",
    "shardviz.widgets.pipeline_session": "shardviz.widgets.pipeline.session",
    "shardviz.widgets.explorer_diff": "shardviz.widgets.explorer.diff",
    "shardviz.widgets.explorer_payload": "shardviz.widgets.explorer.payload",
    "shardviz.render.report_facts": "shardviz.render.report.view",
    "shardviz.render.report_html": "shardviz.render.report.html",
    "shardviz.render.report_text": "shardviz.render.report.text",
    "shardviz.render.compare_facts": "shardviz.render.compare.view",
    "shardviz.render.compare_html": "shardviz.render.compare.html",
    "shardviz.render.compare_mpl": "shardviz.render.compare.mpl",
    "shardviz.render.compare_plotly": "shardviz.render.compare.plotly",
    "shardviz.render.compare_text": "shardviz.render.compare.text",
    "shardviz.render.findings_facts": "shardviz.render.findings.view",
    "shardviz.render.findings_html": "shardviz.render.findings.html",
    "shardviz.render.findings_text": "shardviz.render.findings.text",
    "shardviz.render.schedule_html": "shardviz.render.schedule.html",
    "shardviz.render.schedule_mpl": "shardviz.render.schedule.mpl",
    "shardviz.render.schedule_plotly": "shardviz.render.schedule.plotly",
    "shardviz.render.schedule_text": "shardviz.render.schedule.text",
    "shardviz.render.search_facts": "shardviz.render.search.view",
    "shardviz.render.search_html": "shardviz.render.search.html",
    "shardviz.render.search_text": "shardviz.render.search.text",
}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path in :data:`MOVED` and gives the module at its new path."""

    def __init__(self) -> None:
        self._own_specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED[spec.name])
        self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just given the module the old path's spec: give its own back.
        old = module.__spec__.name if module.__spec__ is not None else ""
        if old in self._own_specs:
            module.__spec__ = self._own_specs[old]


def install() -> None:
    """Let the old paths import (once per interpreter)."""
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        # First: an old package's path is its new home, where the path finder would load a
        # second copy of a moved submodule under its old name.
        sys.meta_path.insert(0, MovedModules())


def names_of(modules: str | tuple[str, ...], package: str) -> Callable[[str], Any]:
    """A package's ``__getattr__`` giving the names of ``modules``, the module(s) the package
    grew from (``from shardviz.widgets.live import live`` still works), loaded on first use so
    the package's own modules can import each other without a cycle. Submodule names are left
    to the import system."""
    sources = (modules,) if isinstance(modules, str) else modules

    def getattr_(name: str) -> Any:
        if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is None:
            for source in sources:
                module = importlib.import_module(source)
                if hasattr(module, name):
                    return getattr(module, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return getattr_
