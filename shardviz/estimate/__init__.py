"""Estimates on hardware: presets, targets, collective times and a step's lower bound.

Pure Python (no jax): capture code builds the report, :func:`with_estimate` adds what the
target's published figures say about it. Every number here is an estimate.
"""

from shardviz.estimate.collectives import CollectiveTime as CollectiveTime
from shardviz.estimate.collectives import collective_time as collective_time
from shardviz.estimate.placement import Placement as Placement
from shardviz.estimate.placement import place as place
from shardviz.estimate.presets import PRESET_NAMES as PRESET_NAMES
from shardviz.estimate.presets import hardware as hardware
from shardviz.estimate.step import estimate_report as estimate_report
from shardviz.estimate.step import resolve_target as resolve_target
from shardviz.estimate.step import with_estimate as with_estimate
from shardviz.estimate.targets import target_for as target_for
from shardviz.estimate.targets import target_of_mesh as target_of_mesh
