"""Big views fold their repeats: ledger rows of the same collective at the same line, reshard
points made by the same line, leaves that differ only in a list index. Small ones list all."""

from __future__ import annotations

import dataclasses

from shardviz.model.array import TreeLayout
from shardviz.render.leaf_rows import FOLD_LEAVES, leaf_rows
from shardviz.render.report.sections import report_view
from shardviz.render.report.text import report_text
from shardviz.render.report.view import FOLD_COLLECTIVES
from tests.render.fixtures import make_layout, mesh_2x4
from tests.render.report_fixtures import fsdp_report, large_report


def layered_report(n: int):
    """:func:`large_report` as a layered model makes it: every sixth collective (and value)
    comes from the same line, once per layer."""
    r = large_report(n, (2, 4))
    cs = tuple(
        dataclasses.replace(c, source=r.collectives[k % 6].source)
        for k, c in enumerate(r.collectives)
    )
    vs = tuple(
        dataclasses.replace(v, source=r.intermediates[k % 12].source)
        for k, v in enumerate(r.intermediates)
    )
    return dataclasses.replace(r, collectives=cs, intermediates=vs)


def test_a_long_ledger_folds_repeats_and_keeps_every_number():
    report = layered_report(120)
    v = report_view(report)
    shown = [r for g in v.ledger.groups for r in g.ledger]
    assert len(shown) < len(report.collectives)
    numbers = sorted(j for r in shown for j in (r.index, *r.same))
    assert numbers == list(range(1, 121))
    folded = next(r for r in shown if r.same)
    assert folded.times == f" ×{1 + len(folded.same)}"
    assert folded.like_it.startswith(f"{len(folded.same)} more like it: #")
    # the group totals still count every collective
    assert sum(g.count for g in v.ledger.groups) == 120
    for r in shown:
        for j in r.same:
            assert v.ledger.shown_as[j] == r.index


def test_a_short_ledger_lists_every_collective():
    report = fsdp_report()
    assert len(report.collectives) <= FOLD_COLLECTIVES
    v = report_view(report)
    assert all(not r.same for g in v.ledger.groups for r in g.ledger)
    assert "more like it" not in report_text(report)


def test_reshard_points_fold_in_a_long_listing():
    report = layered_report(300)
    v = report_view(report).intermediates
    rows = [x for x in v.listed if not isinstance(x, int)]
    assert any(r.same for r in rows)
    assert all(r.value.reshard for r in rows if r.same)  # only reshard points fold
    gaps = [x for x in v.listed if isinstance(x, int)]
    assert all(  # gaps that met are added up: never two in a row
        not (isinstance(a, int) and isinstance(b, int))
        for a, b in zip(v.listed, v.listed[1:], strict=False)
    )
    assert gaps


def _tree(n_layers: int) -> TreeLayout:
    mesh = mesh_2x4()
    leaves = [make_layout("params/embed", (64, 32), ("data", None), mesh)]
    for i in range(n_layers):
        leaves.append(make_layout(f"params/layers/{i}/wq", (32, 32), ("data", "model"), mesh))
        leaves.append(make_layout(f"params/layers/{i}/norm", (32,), (None,), mesh))
    leaves.append(make_layout("opt/0/count", (), (), mesh))
    return TreeLayout(tuple(leaves))


def test_leaves_fold_by_path_only_where_the_index_varies():
    rows = leaf_rows(_tree(20))
    assert [r.label for r in rows] == [
        "params/embed",
        "params/layers/*/wq ×20",
        "params/layers/*/norm ×20",
        "opt/0/count",
    ]
    small = _tree(3)
    assert len(small) <= FOLD_LEAVES
    assert [r.label for r in leaf_rows(small)] == [leaf.name for leaf in small]


def test_leaves_of_another_layout_do_not_fold():
    tree = _tree(20)
    odd = make_layout("params/layers/1/wq", (32, 32), (None, None), mesh_2x4())  # replicated
    tree = TreeLayout((*tree.leaves[:3], odd, *tree.leaves[4:]))
    labels = [r.label for r in leaf_rows(tree)]
    assert "params/layers/*/wq ×19" in labels and "params/layers/1/wq" in labels
