"""The model: plain frozen dataclasses with a JSON round trip. No jax import here.

Capture code fills these in from jax objects; renderers and widgets read them. Tests can build
them by hand.
"""

from shardviz.model.array import (
    ArrayLayout as ArrayLayout,
)
from shardviz.model.array import (
    Kind as Kind,
)
from shardviz.model.array import (
    Spec as Spec,
)
from shardviz.model.array import (
    SpecEntry as SpecEntry,
)
from shardviz.model.array import (
    Tile as Tile,
)
from shardviz.model.array import (
    TreeLayout as TreeLayout,
)
from shardviz.model.array import (
    format_index as format_index,
)
from shardviz.model.array import (
    format_spec as format_spec,
)
from shardviz.model.compare import CollectiveSummary as CollectiveSummary
from shardviz.model.compare import Comparison as Comparison
from shardviz.model.compare import MemoryBreakdown as MemoryBreakdown
from shardviz.model.compare import StrategyResult as StrategyResult
from shardviz.model.estimate import Estimate as Estimate
from shardviz.model.findings import Finding as Finding
from shardviz.model.findings import FindingCost as FindingCost
from shardviz.model.findings import Findings as Findings
from shardviz.model.findings import Fix as Fix
from shardviz.model.findings import FixCheck as FixCheck
from shardviz.model.findings import Outcome as Outcome
from shardviz.model.findings import Where as Where
from shardviz.model.hardware import Hardware as Hardware
from shardviz.model.hardware import Target as Target
from shardviz.model.kernels import KernelUse as KernelUse
from shardviz.model.mesh import Device as Device
from shardviz.model.mesh import MeshLayout as MeshLayout
from shardviz.model.op_profile import OpProfile as OpProfile
from shardviz.model.physical import PhysicalLayout as PhysicalLayout
from shardviz.model.program import COLLECTIVE_KINDS as COLLECTIVE_KINDS
from shardviz.model.program import Check as Check
from shardviz.model.program import Collective as Collective
from shardviz.model.program import Cost as Cost
from shardviz.model.program import DeviceMemory as DeviceMemory
from shardviz.model.program import Frame as Frame
from shardviz.model.program import HostFigures as HostFigures
from shardviz.model.program import LeafBytes as LeafBytes
from shardviz.model.program import Loop as Loop
from shardviz.model.program import MemoryReport as MemoryReport
from shardviz.model.program import OpEvent as OpEvent
from shardviz.model.program import OpTiming as OpTiming
from shardviz.model.program import OpWork as OpWork
from shardviz.model.program import Report as Report
from shardviz.model.program import ShardingOf as ShardingOf
from shardviz.model.program import Source as Source
from shardviz.model.program import Timing as Timing
from shardviz.model.projection import ProjectionRow as ProjectionRow
from shardviz.model.side_by_side import TreesOnOneScale as TreesOnOneScale
from shardviz.model.side_by_side import on_one_scale as on_one_scale
from shardviz.model.tiles import dtype_bits as dtype_bits
from shardviz.model.tiles import layout_from_spec as layout_from_spec
from shardviz.model.tiles import padded_spec as padded_spec
from shardviz.model.tiles import tiles_from_spec as tiles_from_spec
from shardviz.model.traffic import CollectiveTraffic as CollectiveTraffic
from shardviz.model.why import CollectiveWhy as CollectiveWhy
from shardviz.model.why import Origin as Origin
