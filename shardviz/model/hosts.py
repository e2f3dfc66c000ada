"""The host boundary: which part of a collective's traffic crosses from one host to another.

A host is a process of a multi-process program (jax's ``device.process_index``): on GPUs
the network joins hosts, on one TPU slice the chip-to-chip links do. The split follows the
ring model of :class:`~shardviz.model.Collective` (whose docstring defines
``cross_host_bytes``): a group's ring visits its devices host by host, so it crosses hosts
once per host it spans. Pure functions of device ids and process indices; no jax.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Collective

#: Words in an axis name that mark it data-parallel (the batch is split over it) or
#: pipeline-parallel (stages): both are meant to span hosts. Every other axis counts as
#: model-parallel (tensor, expert, sequence, ...), whose traffic should stay within a host.
DATA_WORDS = frozenset({"data", "batch", "dp", "ddp", "fsdp", "replica", "replicas"})
PIPELINE_WORDS = frozenset({"stage", "stages", "pipe", "pipeline", "pp"})


def process_map(mesh: MeshLayout) -> dict[int, int]:
    """Device id -> process index of every device of ``mesh``."""
    return {d.id: d.process_index for d in mesh.devices}


def _process(device: int, process_of: Mapping[int, int]) -> int:
    if device not in process_of:
        raise ValueError(f"device {device} has no known process")
    return process_of[device]


def _hosts(ids: Iterable[int], process_of: Mapping[int, int]) -> int:
    return len({_process(i, process_of) for i in ids})


def ring_crossings(group: Sequence[int], process_of: Mapping[int, int]) -> tuple[int, int]:
    """``(hops that cross hosts, hops)`` of a group's ring laid out host by host: a group on
    ``h > 1`` hosts crosses ``h`` of its ``len(group)`` hops, on one host none."""
    hosts = _hosts(group, process_of)
    return (hosts if hosts > 1 else 0), len(group)


def _permute_crossings(c: Collective, process_of: Mapping[int, int]) -> list[tuple[int, int]]:
    """Per group of a collective-permute, ``(crossing pairs, moving pairs)``; a pair belongs
    to the group holding its source. Pairs in no group (a hand-built permute without
    ``groups``) are counted last, as one group."""
    where = {d: k for k, g in enumerate(c.groups) for d in g}
    counts = [[0, 0] for _ in range(len(c.groups) + 1)]
    for s, t in c.pairs:
        if s == t:
            continue
        acc = counts[where.get(s, len(c.groups))]
        acc[1] += 1
        acc[0] += _process(s, process_of) != _process(t, process_of)
    return [(x, n) for x, n in counts]


def cross_host_split(c: Collective, process_of: Mapping[int, int]) -> tuple[int, tuple[int, ...]]:
    """``(cross_host_bytes, cross_host_groups)`` of ``c`` (see :class:`Collective`).

    Raises:
        ValueError: a device of ``c`` is not in ``process_of``.
    """
    if c.kind == "collective-permute" and c.pairs:
        per_group = _permute_crossings(c, process_of)
        worst = max((c.moved_bytes * x // n for x, n in per_group if n), default=0)
        return worst, tuple(k for k, g in enumerate(c.groups) if _hosts(g, process_of) > 1)
    worst, spanning = 0, []
    for k, g in enumerate(c.groups):
        crossing, hops = ring_crossings(g, process_of)
        if crossing:
            spanning.append(k)
            worst = max(worst, c.moved_bytes * crossing // hops)
    return worst, tuple(spanning)


def with_host_split(
    collectives: Sequence[Collective], process_of: Mapping[int, int]
) -> tuple[Collective, ...]:
    """``collectives`` with ``cross_host_bytes`` and ``cross_host_groups`` filled in
    (unchanged when every device is on one process).

    Raises:
        ValueError: a collective's device is not in ``process_of``.
    """
    if len(set(process_of.values())) < 2:
        return tuple(collectives)
    out = []
    for c in collectives:
        crossing, groups = cross_host_split(c, process_of)
        out.append(replace(c, cross_host_bytes=crossing, cross_host_groups=groups))
    return tuple(out)


def axis_hosts(mesh: MeshLayout, axis: str) -> int:
    """The most hosts one line of devices along ``axis`` (the others fixed) runs over: 1 when
    the axis stays within hosts."""
    k = mesh.axis_names.index(axis)
    lines: dict[tuple[int, ...], set[int]] = {}
    for d in mesh.devices:
        coord = mesh.coords(d.id)
        lines.setdefault(coord[:k] + coord[k + 1 :], set()).add(d.process_index)
    return max((len(p) for p in lines.values()), default=1)


def axis_slices(mesh: MeshLayout, axis: str) -> int:
    """As :func:`axis_hosts`, for TPU slices (``Device.slice_index``)."""
    k = mesh.axis_names.index(axis)
    lines: dict[tuple[int, ...], set[int]] = {}
    for d in mesh.devices:
        coord = mesh.coords(d.id)
        lines.setdefault(coord[:k] + coord[k + 1 :], set()).add(d.slice_index)
    return max((len(p) for p in lines.values()), default=1)


def is_model_parallel(axis: str) -> bool:
    """Whether ``axis`` is taken for a model-parallel one: its name has no data-parallel or
    pipeline word (``data``, ``batch``, ``dp``, ``fsdp``, ``stage``, ``pp``, ...; split on
    anything not a letter, any case)."""
    words = set(re.split(r"[^a-z]+", axis.lower())) - {""}
    return not words & (DATA_WORDS | PIPELINE_WORDS)


def step_cross_bytes(c: Collective) -> int:
    """Cross-host bytes of one step: per run times the runs per step (once when unknown)."""
    return c.cross_host_bytes * (c.trips or 1)


@dataclass(frozen=True)
class AxisSpan:
    """A mesh axis whose lines of devices run over several hosts, and what crosses because
    of it: ``bytes_per_step`` per device over the collectives that span it (``count`` of
    them), ``hosts`` the most hosts one line covers, ``slices`` the same for TPU slices."""

    axis: str
    hosts: int
    slices: int
    bytes_per_step: int
    count: int
    model_parallel: bool


def axis_spans(collectives: Sequence[Collective], mesh: MeshLayout | None) -> list[AxisSpan]:
    """The mesh axes that span hosts and carry cross-host bytes, in mesh order.

    A collective over several axes counts for each of them that spans hosts.
    """
    if mesh is None or mesh.num_processes < 2:
        return []
    out = []
    for axis in mesh.axis_names:
        hosts = axis_hosts(mesh, axis)
        if hosts < 2:
            continue
        over = [c for c in collectives if axis in c.axes and c.cross_host_bytes]
        total = sum(step_cross_bytes(c) for c in over)
        if total:
            out.append(
                AxisSpan(
                    axis, hosts, axis_slices(mesh, axis), total, len(over), is_model_parallel(axis)
                )
            )
    return out
