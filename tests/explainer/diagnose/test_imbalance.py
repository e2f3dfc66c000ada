"""Imbalance counts what the program holds: its arguments and outputs on each device."""

from __future__ import annotations

import dataclasses

from shardviz.analysis.detect import candidates
from shardviz.analysis.detect.placement import held_per_device, imbalance
from shardviz.model.array import TreeLayout
from tests.render.fixtures import make_layout, make_mesh
from tests.render.report_fixtures import dp_report

MiB = 1 << 20


def _report(*leaves):
    mesh = make_mesh(("data",), (8,))
    r = dp_report()
    args = TreeLayout(tuple(make_layout(n, shape, spec, mesh) for n, shape, spec in leaves))
    return dataclasses.replace(r, mesh=mesh, arguments=args, outputs=TreeLayout(()))


def test_held_bytes_are_the_arguments_and_outputs_per_device():
    r = _report(("w", (8, MiB), ("data",)), ("b", (MiB,), (None,)))
    held = held_per_device(r)
    assert held == {d: 4 * MiB + 4 * MiB for d in range(8)}
    assert imbalance(r) == []


def test_an_uneven_split_of_a_large_argument_is_imbalance():
    # 10 rows over 8 devices: d0-d4 hold 2 rows (8 MiB), d5-d7 none.
    r = _report(("params/embed", (10, MiB), ("data",)), ("x", (8, 1024), ("data",)))
    (cand,) = imbalance(r)
    f = cand.finding
    assert f.where.devices == (0, 1, 2, 3, 4)
    assert f.cost.bytes == 8 * MiB
    assert f.where.leaf == "params/embed" and "params/embed" in f.why
    assert "imbalance" in {c.finding.kind for c in candidates(r)}


def test_a_small_difference_is_not_imbalance():
    r = _report(("w", (10, 1024), ("data",)))  # 8 KiB against 0: under the threshold
    assert imbalance(r) == []
