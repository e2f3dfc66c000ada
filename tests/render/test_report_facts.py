"""The facts every report view shares: numbers and device groups for people, the ledger
grouped by mesh axes, per-kind totals and the intermediates folded on large programs."""

from __future__ import annotations

from shardviz.render.report_facts import (
    axes_groups,
    format_flops,
    format_mfu,
    format_seconds,
    groups_str,
    ids_str,
    intermediate_index,
    kind_totals,
    permute_groups,
    reshard_links,
    shown_intermediates,
    sig3,
)

from .report_fixtures import REPORTS


def test_number_formats() -> None:
    assert format_seconds(1.234) == "1.23 s"
    assert format_seconds(0.0381) == "38.1 ms"
    assert format_seconds(0.000412) == "412 µs"
    assert format_seconds(0) == "0 s"
    assert format_flops(None) == "n/a"
    assert format_flops(150_994_944.0) == "151 MFLOP"
    assert format_flops(512) == "512 FLOP"
    assert ids_str((0, 1, 2, 3, 8)) == "{d0-d3,d8}"
    assert ids_str(tuple(range(0, 80, 8))) == "{d0,d8,d16,d24,d32,d40,d48,… +3}"
    assert groups_str(()) == "no replica groups"
    assert groups_str(((0, 4), (1, 5))) == "2 groups of 2: {d0,d4} {d1,d5}"


def test_permute_groups_are_rings() -> None:
    c = REPORTS["shard_map"]().collectives[1]
    assert c.kind == "collective-permute" and not c.groups
    assert permute_groups(c) == ((0, 1, 2, 3), (4, 5, 6, 7))


def test_three_significant_digits_and_mfu() -> None:
    assert [sig3(x) for x in (1.0, 1.234, 45.60, 789.4)] == ["1", "1.23", "45.6", "789"]
    assert [format_mfu(x) for x in (0.42, 0.005, 0.0001, None)] == ["42%", "0.5%", "<0.1%",
                                                                   "unknown"]  # fmt: skip


def test_ledger_groups_keep_their_numbers_and_add_up() -> None:
    report = REPORTS["shard_map"]()
    groups = axes_groups(report)
    assert [(g.axes, [i for i, _ in g.rows]) for g in groups] == [
        (("model",), [1, 2, 3]),
        (("data",), [4]),
    ]
    assert groups[1].title == "over ('data',)"
    assert groups[0].summary == "3 collectives · in 48 KiB · moved 52 KiB per device"
    assert sum(g.moved_bytes for g in groups) == sum(c.moved_bytes for c in report.collectives)


def test_kind_totals_in_canonical_order_with_user_written_counts() -> None:
    totals = kind_totals(REPORTS["shard_map"]().collectives)
    assert [(t.kind, t.count, t.user) for t in totals] == [
        ("all-gather", 1, 0),
        ("all-reduce", 1, 1),
        ("all-to-all", 1, 1),
        ("collective-permute", 1, 1),
    ]
    assert totals[0].summary.startswith("× 1 · in ")


def test_intermediates_fold_to_reshard_points_past_the_limit() -> None:
    report = REPORTS["dp"]()
    assert reshard_links(report) == {"reduce.5": [1], "dot.7": [2], "dot.9": [3]}
    assert intermediate_index(report)["dot.9"] == 9
    assert [x for x, _ in shown_intermediates(report)] == list(range(1, 12))  # under the limit
    folded = shown_intermediates(report, limit=2)
    assert [x if isinstance(x, int) else ("row", x[0]) for x in folded] == [
        4, ("row", 5), 1, ("row", 7), 1, ("row", 9), 2
    ]  # fmt: skip
