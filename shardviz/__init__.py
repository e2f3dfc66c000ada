"""shardviz: see how arrays and programs are split across devices.

The public API, listed once in :data:`API`: ``__all__``, the loading and the type checker's
imports all come from that table. The model's classes and the errors load with the package;
every other name loads its module on first use, so ``import shardviz`` and the renderers work
without jax, and ``sv.explain`` loads jax when first called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Every public name and the module it comes from. Names from :data:`EAGER` modules load
#: with the package (plain data, no jax); the others on first use.
API: dict[str, str] = {
    "ArgumentError": "shardviz.errors",
    "CompileError": "shardviz.errors",
    "DeviceSetupError": "shardviz.errors",
    "FileError": "shardviz.errors",
    "HardwareError": "shardviz.errors",
    "LeafError": "shardviz.errors",
    "MeshError": "shardviz.errors",
    "ShardvizError": "shardviz.errors",
    "ShardvizWarning": "shardviz.errors",
    "SpecError": "shardviz.errors",
    "ArrayLayout": "shardviz.model",
    "Check": "shardviz.model",
    "Collective": "shardviz.model",
    "CollectiveTraffic": "shardviz.model",
    "Comparison": "shardviz.model",
    "Cost": "shardviz.model",
    "Device": "shardviz.model",
    "Estimate": "shardviz.model",
    "Finding": "shardviz.model",
    "Findings": "shardviz.model",
    "format_spec": "shardviz.model",
    "Hardware": "shardviz.model",
    "MemoryReport": "shardviz.model",
    "MeshLayout": "shardviz.model",
    "on_one_scale": "shardviz.model",
    "Report": "shardviz.model",
    "ShardingOf": "shardviz.model",
    "Target": "shardviz.model",
    "Tile": "shardviz.model",
    "Timing": "shardviz.model",
    "TreeLayout": "shardviz.model",
    "TreesOnOneScale": "shardviz.model",
    "xla_flags": "shardviz.capture.xla_flags",
    "known_flags": "shardviz.capture.xla_flags",
    "hardware": "shardviz.model.hardware_presets",
    "physical": "shardviz.analysis.estimate.physical",
    "PhysicalLayout": "shardviz.model",
    "OpProfile": "shardviz.model",
    "Plan": "shardviz.model.search",
    "Search": "shardviz.model.search",
    "ServingComparison": "shardviz.model.serving",
    "ServingResult": "shardviz.model.serving",
    "SliceChoice": "shardviz.model.serving",
    "use_cpu_devices": "shardviz.capture.devices",
    "layout": "shardviz.capture.layout",
    "layout_of": "shardviz.capture.layout",
    "layout_tree": "shardviz.capture.layout",
    "mark_sharding": "shardviz.capture.mesh",
    "Mesh": "shardviz.capture.mesh",
    "mesh_split": "shardviz.capture.mesh",
    "named_sharding": "shardviz.capture.mesh",
    "reordered_mesh": "shardviz.capture.mesh",
    "Topology": "shardviz.capture.topology",
    "topology": "shardviz.capture.topology",
    "TopologyError": "shardviz.errors",
    "Cluster": "shardviz.engines",
    "cluster": "shardviz.engines",
    "clear_cache": "shardviz.explainer.cache",
    "diagnose": "shardviz.explainer.diagnose",
    "explain": "shardviz.explainer.explain",
    "op_profile": "shardviz.explainer.op_profile",
    "RuleSet": "shardviz.strategies.rules",
    "compare": "shardviz.strategies.runner",
    "custom_remat": "shardviz.strategies.models.remat",
    "suggest": "shardviz.strategies.search.suggestions",
    "smallest_slice": "shardviz.strategies.serving.slices",
    "ModelDef": "shardviz.strategies.zoo",
    "Explorer": "shardviz.widgets.app",
    "live": "shardviz.widgets.live.widget",
    "LiveRun": "shardviz.widgets.live.widget",
    "MeshView": "shardviz.widgets.mesh_view",
    "ExplorerSession": "shardviz.widgets.session",
}

#: The modules whose names load with the package: no jax, nothing heavy.
EAGER = frozenset(
    {
        "shardviz.errors",
        "shardviz.model",
        "shardviz.model.hardware_presets",
        "shardviz.model.search",
        "shardviz.model.serving",
    }
)

__all__ = list(API)

# The type checker cannot read a table: the same imports, written out. A test keeps them equal
# to API (tests/test_public_api.py prints the block to paste when they differ).
if TYPE_CHECKING:
    # --- generated from API ---
    from shardviz.analysis.estimate.physical import physical as physical
    from shardviz.capture.devices import use_cpu_devices as use_cpu_devices
    from shardviz.capture.layout import layout as layout
    from shardviz.capture.layout import layout_of as layout_of
    from shardviz.capture.layout import layout_tree as layout_tree
    from shardviz.capture.mesh import Mesh as Mesh
    from shardviz.capture.mesh import mark_sharding as mark_sharding
    from shardviz.capture.mesh import mesh_split as mesh_split
    from shardviz.capture.mesh import named_sharding as named_sharding
    from shardviz.capture.mesh import reordered_mesh as reordered_mesh
    from shardviz.capture.topology import Topology as Topology
    from shardviz.capture.topology import topology as topology
    from shardviz.capture.xla_flags import known_flags as known_flags
    from shardviz.capture.xla_flags import xla_flags as xla_flags
    from shardviz.engines import Cluster as Cluster
    from shardviz.engines import cluster as cluster
    from shardviz.errors import ArgumentError as ArgumentError
    from shardviz.errors import CompileError as CompileError
    from shardviz.errors import DeviceSetupError as DeviceSetupError
    from shardviz.errors import FileError as FileError
    from shardviz.errors import HardwareError as HardwareError
    from shardviz.errors import LeafError as LeafError
    from shardviz.errors import MeshError as MeshError
    from shardviz.errors import ShardvizError as ShardvizError
    from shardviz.errors import ShardvizWarning as ShardvizWarning
    from shardviz.errors import SpecError as SpecError
    from shardviz.errors import TopologyError as TopologyError
    from shardviz.explainer.cache import clear_cache as clear_cache
    from shardviz.explainer.diagnose import diagnose as diagnose
    from shardviz.explainer.explain import explain as explain
    from shardviz.explainer.op_profile import op_profile as op_profile
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
    from shardviz.model import OpProfile as OpProfile
    from shardviz.model import PhysicalLayout as PhysicalLayout
    from shardviz.model import Report as Report
    from shardviz.model import ShardingOf as ShardingOf
    from shardviz.model import Target as Target
    from shardviz.model import Tile as Tile
    from shardviz.model import Timing as Timing
    from shardviz.model import TreeLayout as TreeLayout
    from shardviz.model import TreesOnOneScale as TreesOnOneScale
    from shardviz.model import format_spec as format_spec
    from shardviz.model import on_one_scale as on_one_scale
    from shardviz.model.hardware_presets import hardware as hardware
    from shardviz.model.search import Plan as Plan
    from shardviz.model.search import Search as Search
    from shardviz.model.serving import ServingComparison as ServingComparison
    from shardviz.model.serving import ServingResult as ServingResult
    from shardviz.model.serving import SliceChoice as SliceChoice
    from shardviz.strategies.models.remat import custom_remat as custom_remat
    from shardviz.strategies.rules import RuleSet as RuleSet
    from shardviz.strategies.runner import compare as compare
    from shardviz.strategies.search.suggestions import suggest as suggest
    from shardviz.strategies.serving.slices import smallest_slice as smallest_slice
    from shardviz.strategies.zoo import ModelDef as ModelDef
    from shardviz.widgets.app import Explorer as Explorer
    from shardviz.widgets.live.widget import LiveRun as LiveRun
    from shardviz.widgets.live.widget import live as live
    from shardviz.widgets.mesh_view import MeshView as MeshView
    from shardviz.widgets.session import ExplorerSession as ExplorerSession
    # --- end generated ---

for _name, _module in API.items():
    if _module in EAGER:
        globals()[_name] = getattr(importlib.import_module(_module), _name)
del _name, _module

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
    module = API.get(name)
    if module is None:
        renamed = _RENAMED.get(name)
        hint = f"; it was renamed shardviz.{renamed}" if renamed else ""
        raise AttributeError(f"module 'shardviz' has no attribute {name!r}{hint}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
