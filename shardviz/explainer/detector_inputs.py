"""What the detectors need beyond the report, read from the compile: the partitioner's full
rematerializations as specs, the parameters' specs and how many times each collective runs.
Nothing is read from the live devices: a finding is about the program, not about what else
the process keeps on them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from shardviz.analysis.detect import CompilerEvidence, Remat
from shardviz.analysis.detect.inputs import leaf_named
from shardviz.capture import hlo
from shardviz.capture.hlo.compiler_log import full_rematerializations
from shardviz.capture.hlo.sharding import hlo_sharding_to_spec
from shardviz.capture.hlo.text import HloParseError
from shardviz.model import Collective, MeshLayout, Report
from shardviz.model.array import Spec

#: A parameter line of an HLO dump: its name, shape and sharding. The sharding may hold one
#: level of braces: jax 0.12 prints ``{mesh['data'=2,'model'=4], [{'data'}, {}]}`` where
#: jax 0.10.2 printed ``{devices=[2,1,4]<=[8] last_tile_dim_replicate}``.
_PARAM = re.compile(
    r"^\s*%?(?P<name>[^\s=]+) = (?P<dtype>[a-z0-9]+)\[(?P<dims>[0-9,]*)\][^=]*? "
    r"parameter\(\d+\)(?:, sharding=(?P<sharding>\{(?:[^{}]|\{[^{}]*\})*\}))?",
    re.MULTILINE,
)


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
        dims = shapes.get(r.instruction, leaf.shape if leaf is not None else r.dims)
        to = lambda t, d=dims: _spec(t, d, report.mesh, ids) if d is not None else None  # noqa: E731
        out.append(
            Remat(
                value=r.instruction, op_name=r.op_name, from_spec=to(r.source_sharding),
                to_spec=to(r.target_sharding), from_hlo=r.source_sharding,
                to_hlo=r.target_sharding, dtype=r.dtype, shape=dims,
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


def with_trips(collectives: tuple[Collective, ...], module: object) -> tuple[Collective, ...]:
    """``collectives`` with ``trips`` set from the loops around them."""
    trips = hlo.collective_trip_counts(module)  # type: ignore[arg-type]
    out = []
    for c in collectives:
        n = trips.get(c.hlo_name, 1)
        out.append(c if n == c.trips else replace(c, trips=n))
    return tuple(out)


def compiler_evidence(
    report: Report, log: str, propagated: str, ids: Sequence[int]
) -> CompilerEvidence:
    """Everything :func:`shardviz.analysis.detect.candidates` reads beyond ``report``."""
    chains = sum(1 for s in report.intermediates if s.reshard) >= 2
    return CompilerEvidence(
        remats=remats(log, report, ids),
        parameter_specs=parameter_specs(propagated, report.mesh, ids) if chains else {},
    )
