"""What the detectors need beyond the report, read from the compile and the live devices:
the partitioner's full rematerializations as specs, the parameters' specs, how many times
each collective runs, and the memory resident on each device."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

import jax

from shardviz.analysis.detect import Facts, Remat
from shardviz.analysis.detect.inputs import leaf_named
from shardviz.capture import hlo
from shardviz.capture.hlo.compiler_log import full_rematerializations
from shardviz.capture.hlo.sharding import hlo_sharding_to_spec
from shardviz.capture.hlo.text import HloParseError
from shardviz.model import Collective, MeshLayout, Report
from shardviz.model.array import Spec

#: A parameter line of an HLO dump: its name, shape and sharding.
_PARAM = re.compile(
    r"^\s*%?(?P<name>[^\s=]+) = (?P<dtype>[a-z0-9]+)\[(?P<dims>[0-9,]*)\][^=]*? "
    r"parameter\(\d+\)(?:, sharding=(?P<sharding>\{[^}]*\}))?",
    re.MULTILINE,
)
#: Arrays on one device smaller than this are not named in an imbalance finding.
LONE_ARRAY_BYTES = 1 << 20


def _spec(text: str, dims: Sequence[int], mesh: MeshLayout, ids: Sequence[int]) -> Spec | None:
    try:
        return hlo_sharding_to_spec(text, dims, mesh, ids)
    except (HloParseError, ValueError):
        return None


def remats(log: str, report: Report, ids: Sequence[int]) -> tuple[Remat, ...]:
    """The compile log's full rematerializations, their shardings as specs on the user's
    axes (the value's rank from the report's intermediates; ``None`` where unknown)."""
    found = full_rematerializations(log)
    if not found or report.mesh is None:
        return ()
    shapes = {s.name: s.shape for s in report.intermediates}
    out = []
    for r in found:
        leaf = leaf_named(report, r.op_name)
        dims = shapes.get(r.instruction, leaf.shape if leaf is not None else None)
        to = lambda t, d=dims: _spec(t, d, report.mesh, ids) if d is not None else None  # noqa: E731
        out.append(
            Remat(
                value=r.instruction, op_name=r.op_name, from_spec=to(r.source_sharding),
                to_spec=to(r.target_sharding), from_hlo=r.source_sharding,
                to_hlo=r.target_sharding,
            )
        )  # fmt: skip
    return tuple(out)


def parameter_specs(text: str, mesh: MeshLayout | None, ids: Sequence[int]) -> dict:
    """Each parameter of the partitioner's input (by HLO name) and its spec."""
    if not text or mesh is None:
        return {}
    out: dict[str, Spec | None] = {}
    seen: dict[tuple[str, int], Spec | None] = {}  # a few shardings over many parameters
    for m in _PARAM.finditer(text):
        dims = tuple(int(d) for d in m.group("dims").split(",") if d)
        key = (m.group("sharding") or "{replicated}", len(dims))
        if key not in seen:
            seen[key] = _spec(key[0], dims, mesh, ids)
        out[m.group("name")] = seen[key]
    return out


def resident(device_ids: Sequence[int]) -> tuple[dict[int, int], tuple]:
    """Bytes of live jax arrays on each of ``device_ids``, and the largest arrays that live
    on one device only (shape, dtype, device id, bytes)."""
    wanted = set(device_ids)
    per_device: dict[int, int] = defaultdict(int)
    lone = []
    for a in jax.live_arrays():
        try:  # the sharding's own (cached) figures: no Shard objects made
            sharding = a.sharding
            ids = {int(d.id) for d in sharding.device_set} & wanted
            piece = math.prod(sharding.shard_shape(a.shape)) * a.dtype.itemsize
        except Exception:  # a deleted or donated array
            continue
        for d in ids:
            per_device[d] += piece
        if len(ids) == 1 and len(wanted) > 1 and piece >= LONE_ARRAY_BYTES:
            lone.append((tuple(a.shape), str(a.dtype), next(iter(ids)), int(piece)))
    for d in wanted:
        per_device.setdefault(d, 0)
    lone.sort(key=lambda x: -x[3])
    return dict(per_device), tuple(lone[:8])


def with_trips(collectives: tuple[Collective, ...], module: object) -> tuple[Collective, ...]:
    """``collectives`` with ``trips`` set from the loops around them."""
    trips = hlo.collective_trip_counts(module)  # type: ignore[arg-type]
    out = []
    for c in collectives:
        n = trips.get(c.hlo_name, 1)
        out.append(c if n == c.trips else replace(c, trips=n))
    return tuple(out)


def facts_for(report: Report, log: str, propagated: str, ids: Sequence[int], live: bool) -> Facts:
    """Everything :func:`shardviz.analysis.detect.candidates` reads beyond ``report``."""
    chains = sum(1 for s in report.intermediates if s.reshard) >= 2
    res, lone = resident(ids) if live else ({}, ())
    return Facts(
        remats=remats(log, report, ids),
        parameter_specs=parameter_specs(propagated, report.mesh, ids) if chains else {},
        resident=res,
        lone_arrays=lone,
    )
