"""Hand-built reports and comparisons whose meshes span several hosts (processes), for the
views' "across hosts" figures. Nothing here imports jax.

The meshes are :func:`.fixtures.make_mesh`'s 2x4 ``('data', 'model')`` split evenly over
processes: on 2 hosts row ``i`` is host ``i`` (``'data'`` pairs cross, ``'model'`` rows do
not); on 4 hosts each host holds two devices of a row (both axes cross). The cross-host bytes
come from :func:`shardviz.model.hosts.with_host_split`; the tests check them by hand.
"""

from __future__ import annotations

import dataclasses

from shardviz.model import Comparison, Report, StrategyResult
from shardviz.model.hosts import process_map, with_host_split

from .compare_fixtures import comparison, summarise
from .fixtures import make_mesh
from .report_fixtures import fsdp_report, megatron_report


def on_hosts(report: Report, processes: int) -> Report:
    """``report`` on the same 2x4 mesh split over ``processes`` hosts, its ledger split."""
    assert report.mesh is not None
    mesh = make_mesh(report.mesh.axis_names, report.mesh.axis_sizes, processes=processes)
    split = with_host_split(report.collectives, process_map(mesh))
    return dataclasses.replace(report, mesh=mesh, collectives=split)


def megatron_four_hosts() -> Report:
    """The Megatron block on 4 hosts of 2: its all-reduce over 'model' (rows of 4 on 2 hosts)
    sends half its 96 KiB across."""
    return on_hosts(megatron_report(), 4)


def fsdp_two_hosts() -> Report:
    """FSDP on 2 hosts of 4: gathers over both axes cross 2 of 8 hops, over 'data' all."""
    return on_hosts(fsdp_report(), 2)


def result_on_hosts(r: StrategyResult, processes: int) -> StrategyResult:
    report = on_hosts(r.report, processes)
    return dataclasses.replace(
        r, mesh=report.mesh, report=report, collectives=summarise_hosts(report)
    )


def summarise_hosts(report: Report):
    """:func:`.compare_fixtures.summarise` with the cross-host bytes added per (kind, axes)."""
    out = []
    for s in summarise(report):
        same = [c for c in report.collectives if (c.kind, c.axes) == (s.kind, s.axes)]
        out.append(dataclasses.replace(s, cross_host_bytes=sum(c.cross_host_bytes for c in same)))
    return tuple(out)


def comparison_two_hosts() -> Comparison:
    """dp, fsdp and tp of the MLP on 2 hosts of 4, and tp again on one host."""
    c = comparison()
    dp, fsdp, tp = (result_on_hosts(r, 2) for r in c.results)
    return dataclasses.replace(c, results=(dp, fsdp, tp, dataclasses.replace(c.results[2],
                                                                             strategy="tp1")))  # fmt: skip


#: Golden fixtures by name (tests/golden/hosts_<name>.txt).
HOST_REPORTS = {"megatron": megatron_four_hosts, "fsdp": fsdp_two_hosts}
HOST_COMPARISONS = {"compare": comparison_two_hosts}
