"""The facts every comparison view shares: memory by component, collectives by kind, byte
ticks and counts for people."""

from __future__ import annotations

import pytest

from shardviz.render.compare.view import (
    COMPONENTS,
    byte_ticks,
    format_count,
    kind_rows,
    memory_parts,
    memory_total,
    shown_components,
)

from .compare_fixtures import COMPARISONS, comparison


def test_memory_parts_add_up_to_the_total() -> None:
    for make in COMPARISONS.values():
        for r in make().results:
            parts = memory_parts(r.memory)
            assert [p.key for p, _ in parts] == [c.key for c in COMPONENTS]
            assert sum(b for _, b in parts) == memory_total(r.memory)
            assert memory_total(r.memory) >= r.memory.peak
            d = {p.key: b for p, b in parts}
            assert d["params"] == r.memory.params and d["activations"] == r.memory.activations
    # The fixture's donated train step: outputs minus aliased outputs is the 4-byte loss.
    assert {dict((p.key, b) for p, b in memory_parts(r.memory))["other"]
            for r in comparison().results} == {4}  # fmt: skip
    assert [x.key for x in shown_components(comparison())][-1] == "other"


def test_kind_rows_sum_the_ledger() -> None:
    for r in comparison().results:
        rows = kind_rows(r)
        assert sum(k.count for k in rows) == len(r.report.collectives)
        assert sum(k.moved_bytes for k in rows) == sum(c.moved_bytes for c in r.report.collectives)
        for k in rows:
            assert sum(n for _, n, _ in k.by_axes) == k.count


@pytest.mark.parametrize("top", [1, 3, 7, 100, 1000, 1023, 1024, 1500, 5 << 20, 7 << 20,
                                 12_771_336, 3 << 30, 123_456_789_012, 2**50])  # fmt: skip
def test_byte_ticks_cover_the_range_with_few_round_ticks(top: int) -> None:
    ticks = byte_ticks(top)
    assert ticks[0] == 0 and ticks[-1] >= top
    assert 2 <= len(ticks) <= 6
    step = ticks[1]
    assert all(b - a == step for a, b in zip(ticks, ticks[1:], strict=False))
    assert ticks[-2] < top  # no empty tick past the top


def test_format_count() -> None:
    assert format_count(786_432) == "786K"
    assert format_count(7_500_000_000) == "7.5B"
    assert format_count(10**12) == "1T"
    assert format_count(1_000_000) == "1M"
    assert format_count(512) == "512"


def test_an_estimate_with_a_loop_of_unknown_count_says_it_is_a_lower_bound() -> None:
    import dataclasses

    from shardviz.render.compare.view import estimate_line

    from .compare_fixtures import comparison_v5e

    r = comparison_v5e().results[0]
    line = estimate_line(r)
    assert line is not None and "lower bound" not in line
    e = r.report.estimate
    assert e is not None
    low = dataclasses.replace(e, lower_bound=("train.py:41",))
    r = dataclasses.replace(r, report=dataclasses.replace(r.report, estimate=low))
    line = estimate_line(r)
    assert line is not None
    assert line.endswith("; a lower bound: loops of unknown count (train.py:41) counted once")
