"""A collective's device groups counted in words: ``4 groups of 2`` when every group has the same
size, ``4 groups of 1 to 3 devices`` when they differ (a collective-permute's connected groups),
the same in the report's ledger, the traffic view and the Explorer's payload. Built by hand."""

from __future__ import annotations

from dataclasses import replace

from shardviz.analysis.traffic import permute_groups
from shardviz.model import CollectiveTraffic
from shardviz.model.program import Collective, Report
from shardviz.render.report.view import groups_count_str, groups_str
from shardviz.render.traffic_view import collective_traffic_text
from shardviz.widgets.explorer.payload import report_payload

from .report_fixtures import coll, shard_map_report

#: Connected groups of 1, 3, 3 and 1 devices: d0 and d7 send to themselves, two rings of three.
UNEVEN = ((0, 0), (1, 2), (2, 3), (3, 1), (4, 5), (5, 6), (6, 4), (7, 7))
#: Four swaps: groups of two.
EVEN = ((0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4), (6, 7), (7, 6))


def _permute(pairs: tuple[tuple[int, int], ...], captured: bool = True) -> Collective:
    """A collective-permute of these pairs; ``captured``: with ``groups`` and ``group_size``
    filled as the HLO reader fills them (the connected groups, the largest's size)."""
    c = coll("collective-permute.9", "collective-permute", (32, 128), (32, 128), (), ("model",),
             pairs=pairs, group_size=2)  # fmt: skip
    if not captured:
        return c
    groups = permute_groups(c)
    return replace(c, groups=groups, group_size=max(len(g) for g in groups))


def _report(c: Collective) -> Report:
    return replace(shard_map_report(), collectives=(c,))


def test_count_words_even_uneven_and_none() -> None:
    assert groups_count_str(((0, 4), (1, 5), (2, 6), (3, 7))) == "4 groups of 2"
    assert groups_count_str(((0, 1, 2, 3, 4, 5, 6, 7),)) == "1 group of 8"
    assert groups_count_str(((0,), (1, 2, 3), (4, 5, 6), (7,))) == "4 groups of 1 to 3 devices"
    assert groups_count_str(()) == "no replica groups"


def test_groups_str_says_the_range_of_sizes_when_groups_differ() -> None:
    assert groups_str(((0, 4), (1, 5))) == "2 groups of 2: {d0,d4} {d1,d5}"
    uneven = ((0,), (1, 2, 3), (4, 5, 6), (7,))
    assert groups_str(uneven) == "4 groups of 1 to 3 devices: {d0} {d1-d3} {d4-d6} {d7}"
    assert groups_str(((0, 1), (2, 4, 6))) == "2 groups of 2 to 3 devices: {d0,d1} {d2,d4,d6}"


def test_a_permutes_pairs_make_its_groups() -> None:
    assert permute_groups(_permute(UNEVEN, captured=False)) == ((0,), (1, 2, 3), (4, 5, 6), (7,))
    assert groups_str(permute_groups(_permute(UNEVEN, captured=False))).startswith(
        "4 groups of 1 to 3 devices: "
    )
    assert groups_str(permute_groups(_permute(EVEN, captured=False))).startswith(
        "4 groups of 2: {d0,d1} "
    )


def test_explorer_counts_a_permutes_groups_in_words() -> None:
    """The words come with the payload (the page used to write ``4 groups of 3``: the count,
    then the largest group's size)."""
    (uneven,) = report_payload(_report(_permute(UNEVEN)))["collectives"]
    assert uneven["groups_text"] == "4 groups of 1 to 3 devices"
    (even,) = report_payload(_report(_permute(EVEN)))["collectives"]
    assert even["groups_text"] == "4 groups of 2"
    # Only pairs (no groups listed): the page shows the pairs, and the count says so.
    (bare,) = report_payload(_report(_permute(UNEVEN, captured=False)))["collectives"]
    assert bare["groups"] is None and bare["groups_text"] == "no replica groups"


def test_traffic_view_counts_a_permutes_groups_in_words() -> None:
    report = _report(_permute(UNEVEN))
    text = collective_traffic_text(CollectiveTraffic(report.collectives[0], report.mesh, 0))
    text = " ".join(text.split())  # the view wraps its lines
    assert "4 groups of 1 to 3 devices: {d0} {d1-d3} {d4-d6} {d7}" in text
    assert "groups of 3" not in text
