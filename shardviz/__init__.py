"""shardviz: see how arrays and programs are split across devices.

The public API. Names that need jax (``use_cpu_devices``, ``Mesh``, ``mark_sharding``,
``mesh_split``, ``layout``, ``layout_tree``) load it on first use, so ``import shardviz.model``
and the renderers work without jax.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from shardviz import moved as _moved
from shardviz.errors import CompileError as CompileError
from shardviz.errors import DeviceSetupError as DeviceSetupError
from shardviz.errors import HardwareError as HardwareError
from shardviz.errors import LeafError as LeafError
from shardviz.errors import MeshError as MeshError
from shardviz.errors import ShardvizError as ShardvizError
from shardviz.errors import ShardvizWarning as ShardvizWarning
from shardviz.errors import SpecError as SpecError
from shardviz.model import ArrayLayout as ArrayLayout
from shardviz.model import Check as Check
from shardviz.model import Collective as Collective
from shardviz.model import CollectiveTraffic as CollectiveTraffic
from shardviz.model import Comparison as Comparison
from shardviz.model import Cost as Cost
from shardviz.model import Device as Device
from shardviz.model import Estimate as Estimate
from shardviz.model import Finding as Finding
from shardviz.model import Findings as Findings
from shardviz.model import Hardware as Hardware
from shardviz.model import MemoryReport as MemoryReport
from shardviz.model import MeshLayout as MeshLayout
from shardviz.model import Report as Report
from shardviz.model import ShardingOf as ShardingOf
from shardviz.model import Target as Target
from shardviz.model import Tile as Tile
from shardviz.model import Timing as Timing
from shardviz.model import TreeLayout as TreeLayout
from shardviz.model import TreesOnOneScale as TreesOnOneScale
from shardviz.model import format_spec as format_spec
from shardviz.model import on_one_scale as on_one_scale
from shardviz.model.search import Plan as Plan
from shardviz.model.search import Search as Search

if TYPE_CHECKING:
    from shardviz.capture.devices import use_cpu_devices as use_cpu_devices
    from shardviz.capture.layout import layout as layout
    from shardviz.capture.layout import layout_of as layout_of
    from shardviz.capture.layout import layout_tree as layout_tree
    from shardviz.capture.mesh import Mesh as Mesh
    from shardviz.capture.mesh import mark_sharding as mark_sharding
    from shardviz.capture.mesh import mesh_split as mesh_split
    from shardviz.capture.mesh import named_sharding as named_sharding
    from shardviz.capture.topology import Topology as Topology
    from shardviz.capture.topology import TopologyError as TopologyError
    from shardviz.capture.topology import topology as topology
    from shardviz.engines import Cluster as Cluster
    from shardviz.engines import cluster as cluster
    from shardviz.explainer.cache import clear_cache as clear_cache
    from shardviz.explainer.diagnose import diagnose as diagnose
    from shardviz.explainer.explain import explain as explain
    from shardviz.model.hardware_presets import hardware as hardware
    from shardviz.strategies.rules import RuleSet as RuleSet
    from shardviz.strategies.runner import compare as compare
    from shardviz.strategies.search.suggest import suggest as suggest
    from shardviz.strategies.zoo import ModelDef as ModelDef
    from shardviz.widgets.app import Explorer as Explorer
    from shardviz.widgets.live.widget import LiveRun as LiveRun
    from shardviz.widgets.live.widget import live as live
    from shardviz.widgets.mesh_view import MeshView as MeshView
    from shardviz.widgets.session import ExplorerSession as ExplorerSession

__version__ = "0.1.0"

_moved.install()

_LAZY = {
    "use_cpu_devices": "shardviz.capture.devices",
    "explain": "shardviz.explainer.explain",
    "compare": "shardviz.strategies.runner",
    "suggest": "shardviz.strategies.search.suggest",
    "RuleSet": "shardviz.strategies.rules",
    "ModelDef": "shardviz.strategies.zoo",
    "MeshView": "shardviz.widgets.mesh_view",
    "Explorer": "shardviz.widgets.app",
    "ExplorerSession": "shardviz.widgets.session",
    "live": "shardviz.widgets.live.widget",
    "LiveRun": "shardviz.widgets.live.widget",
    "clear_cache": "shardviz.explainer.cache",
    "diagnose": "shardviz.explainer.diagnose",
    "cluster": "shardviz.engines",
    "Cluster": "shardviz.engines",
    "Mesh": "shardviz.capture.mesh",
    "mark_sharding": "shardviz.capture.mesh",
    "mesh_split": "shardviz.capture.mesh",
    "named_sharding": "shardviz.capture.mesh",
    "layout": "shardviz.capture.layout",
    "layout_of": "shardviz.capture.layout",
    "layout_tree": "shardviz.capture.layout",
    "hardware": "shardviz.model.hardware_presets",
    "topology": "shardviz.capture.topology",
    "Topology": "shardviz.capture.topology",
    "TopologyError": "shardviz.capture.topology",
}

__all__ = [
    "ArrayLayout",
    "Check",
    "Collective",
    "CollectiveTraffic",
    "CompileError",
    "Cost",
    "MemoryReport",
    "MeshView",
    "Explorer",
    "ExplorerSession",
    "LiveRun",
    "live",
    "Plan",
    "Report",
    "Search",
    "ShardingOf",
    "Timing",
    "Comparison",
    "ModelDef",
    "RuleSet",
    "clear_cache",
    "cluster",
    "Cluster",
    "compare",
    "diagnose",
    "suggest",
    "explain",
    "Device",
    "DeviceSetupError",
    "Estimate",
    "Finding",
    "Findings",
    "Hardware",
    "HardwareError",
    "LeafError",
    "Mesh",
    "MeshError",
    "MeshLayout",
    "ShardvizError",
    "ShardvizWarning",
    "SpecError",
    "Target",
    "Tile",
    "Topology",
    "TopologyError",
    "TreeLayout",
    "TreesOnOneScale",
    "format_spec",
    "hardware",
    "layout",
    "layout_of",
    "layout_tree",
    "mark_sharding",
    "mesh_split",
    "named_sharding",
    "on_one_scale",
    "topology",
    "use_cpu_devices",
]


#: Subpackages loaded on first access (``sv.strategies.model_state_bytes`` with no import of
#: ``shardviz.strategies`` first), as jax does for its own; the ones needing jax load it then.
_SUBMODULES = frozenset({"capture", "model", "render", "strategies", "widgets"})


#: Old public names: asking for one says its new name.
_RENAMED = {"Model": "ModelDef (a model to train and shard; shardviz.model holds the data)"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        value = importlib.import_module(f"shardviz.{name}")
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        renamed = _RENAMED.get(name)
        hint = f"; it was renamed shardviz.{renamed}" if renamed else ""
        raise AttributeError(f"module 'shardviz' has no attribute {name!r}{hint}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
