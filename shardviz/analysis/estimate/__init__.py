"""Estimates on hardware: presets, targets, collective times and a step's lower bound.

Pure Python (no jax): capture code builds the report, :func:`with_estimate` adds what the
target's published figures say about it. Every number here is an estimate.
"""

from shardviz.analysis.estimate.collectives import CollectiveTime as CollectiveTime
from shardviz.analysis.estimate.collectives import collective_time as collective_time
from shardviz.analysis.estimate.placement import Placement as Placement
from shardviz.analysis.estimate.placement import place as place
from shardviz.analysis.estimate.step import estimate_report as estimate_report
from shardviz.analysis.estimate.step import resolve_target as resolve_target
from shardviz.analysis.estimate.step import with_estimate as with_estimate
from shardviz.model.hardware_presets import PRESET_NAMES as PRESET_NAMES
from shardviz.model.hardware_presets import hardware as hardware
from shardviz.model.targets import target_for as target_for
from shardviz.model.targets import target_of_mesh as target_of_mesh
