"""The ledger's host split, filled in when a program is read: which bytes cross hosts, and a
note for each model-parallel mesh axis that spans hosts.

The host of a device is its ``process_index``, from the devices the program was compiled
for (real processes under ``jax.distributed``, or a deviceless topology's hosts). The figures
are :mod:`shardviz.model.hosts`'s; this module only adds the words. No jax import.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from shardviz.model.hosts import AxisSpan, axis_spans, process_map, with_host_split
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Collective
from shardviz.model.units import format_bytes


def span_note(span: AxisSpan, platform: str) -> str:
    """What a model-parallel axis spanning hosts costs, and what to do about it."""
    n = span.count
    head = (
        f"axis {span.axis!r} spans hosts (up to {span.hosts} along it): "
        f"{format_bytes(span.bytes_per_step)} per device per step cross the host boundary "
        f"({n} collective{'s' * (n != 1)} over it)"
    )
    if platform == "tpu" and span.slices < 2:
        return (
            head + "; on one TPU slice they still travel over ICI (the chips of a slice are "
            "linked across hosts; only traffic between slices goes over DCN)"
        )
    if platform == "tpu":
        return (
            head + f"; its devices run over {span.slices} slices joined by DCN, far slower "
            f"than ICI: put {span.axis!r} within a slice"
        )
    return (
        head + "; a model-parallel axis talks every layer, and across hosts over the network, "
        f"far slower than within one: put {span.axis!r} within a host"
    )


def host_notes(
    collectives: Sequence[Collective], mesh: MeshLayout | None, platform: str
) -> list[str]:
    """A note per model-parallel mesh axis (see :func:`shardviz.model.hosts.is_model_parallel`)
    that spans hosts and carries bytes across them."""
    return [span_note(s, platform) for s in axis_spans(collectives, mesh) if s.model_parallel]


def host_split(
    collectives: Sequence[Collective],
    devices: Iterable[Any],
    mesh: MeshLayout | None,
    platform: str,
) -> tuple[tuple[Collective, ...], list[str]]:
    """``collectives`` with their cross-host bytes and groups, and the notes to add.

    Args:
        collectives: the ledger.
        devices: the program's devices (anything with ``id`` and ``process_index``).
        mesh: the program's mesh (``None`` without one).
        platform: ``cpu``, ``gpu`` or ``tpu`` (TPU hosts of a slice share ICI).
    """
    process_of = {int(d.id): int(d.process_index) for d in devices}
    if mesh is not None:
        process_of = {**process_map(mesh), **process_of}
    try:
        split = with_host_split(collectives, process_of)
    except ValueError as err:  # a group names a device the program does not list
        return tuple(collectives), [f"no cross-host split of the ledger: {err}"]
    return split, host_notes(split, mesh, platform)
