"""The facts every report view shares: numbers and device groups for people, the ledger
grouped by mesh axes, per-kind totals and the intermediates folded on large programs."""

from __future__ import annotations

import dataclasses

from shardviz.analysis.traffic import permute_groups
from shardviz.model.units import format_flops, format_mfu, format_seconds, sig3
from shardviz.render.report.view import (
    MAX_RESHARD_TILES,
    axes_groups,
    groups_str,
    ids_str,
    intermediate_index,
    kind_totals,
    layout_hint,
    reshard_links,
    reshard_tiles,
    shown_intermediates,
)

from .report_fixtures import REPORTS, nasty_report


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
    # Enough digits to mean something: a small program's MFU never prints as 0% or "<0.1%".
    assert [format_mfu(x) for x in (0.4546, 0.42, 0.005, 0.0001234, 1.0, 0.0, None)] == [
        "45.5%", "42.0%", "0.5%", "0.0123%", "100%", "0%", "unknown",
    ]  # fmt: skip


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


def test_reshard_tiles_are_the_first_reshard_points_with_a_spec() -> None:
    dp = REPORTS["dp"]()
    tiles = reshard_tiles(dp)
    assert list(tiles) == [5, 7, 9]  # numbered as the views number them
    assert tiles[7] == dp.intermediate_layout("dot.7")
    assert [(t.name, t.kind, t.shape) for t in tiles.values()] == [
        ("reduce.5", "replicated", ()),
        ("dot.7", "replicated", (1024, 256)),
        ("dot.9", "replicated", (512, 1024)),
    ]
    fsdp = REPORTS["fsdp"]()  # six reshard points: capped
    assert len(fsdp.reshards) == 6 > MAX_RESHARD_TILES
    assert list(reshard_tiles(fsdp)) == [1, 3, 6, 7, 9, 11][:MAX_RESHARD_TILES]
    assert list(reshard_tiles(fsdp, limit=2)) == [1, 3]
    # in the shard_map program, both reshard points have a spec; the manual values are not ones
    assert list(reshard_tiles(REPORTS["shard_map"]())) == [3, 4]
    # no mesh, or no spec that fits: nothing to draw, and no error
    assert reshard_tiles(dataclasses.replace(dp, mesh=None)) == {}
    assert reshard_tiles(nasty_report()) == {}  # its dtype's size is unknown


def test_reshard_tiles_count_by_position_when_names_repeat() -> None:
    dp = REPORTS["dp"]()
    first = dataclasses.replace(dp.intermediates[0], name="dot.9", reshard=True)
    report = dataclasses.replace(dp, intermediates=(first, *dp.intermediates[1:]))
    tiles = reshard_tiles(report)
    assert list(tiles) == [1, 5, 7, 9]
    assert tiles[1].spec == (("data",), ()) and tiles[9].spec == ((), ())


def test_layout_hint_only_when_some_value_has_tiles() -> None:
    dp = REPORTS["dp"]()
    assert layout_hint(dp) == (
        "tiles of a value with a spec",
        "print(report.intermediate_layout(name))",
    )
    assert layout_hint(dataclasses.replace(dp, mesh=None)) is None
    no_spec = tuple(dataclasses.replace(s, spec=None) for s in dp.intermediates)
    assert layout_hint(dataclasses.replace(dp, intermediates=no_spec)) is None
    assert layout_hint(dataclasses.replace(dp, intermediates=())) is None


def test_a_real_accelerator_run_shows_its_measured_mfu_beside_the_bound() -> None:
    from shardviz.model import Timing
    from shardviz.render.report.text import report_text
    from shardviz.render.report.view import estimate_rows, measured_step

    base = REPORTS["dp_v5e"]()
    # On CPU devices the measured step says nothing about the target: no measured MFU.
    assert base.ran and measured_step(base) is None
    e = base.estimate
    assert e is not None and e.peak_flops_per_second
    timing = Timing(1.0, 0.5, 0.01, 5)
    on_tpu = dataclasses.replace(base, platform="tpu", timing=timing)
    assert measured_step(on_tpu) == 0.01
    rows = {r.key: r for r in estimate_rows(e, measured_step(on_tpu))}
    want = e.mfu_at(0.01)
    assert want is not None and rows["measured-mfu"].value == format_mfu(want)
    assert "measured step, 10 ms" in rows["measured-mfu"].meaning
    assert "measured MFU" in report_text(on_tpu)
    # Not when compiled for a topology and never run.
    assert measured_step(dataclasses.replace(on_tpu, deviceless=True)) is None
    assert measured_step(dataclasses.replace(on_tpu, ran=False)) is None
