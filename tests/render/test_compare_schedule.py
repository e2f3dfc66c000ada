"""A pipeline strategy's schedule in the comparison's views: its line in text (kind, form,
checkpointing, bubble) and its chart in HTML, under the strategy's name (no jax)."""

from __future__ import annotations

import dataclasses
import re

from shardviz.model.compare import Comparison
from shardviz.model.schedule import gpipe
from shardviz.render.compare.html import comparison_html
from shardviz.render.compare.text import comparison_text
from shardviz.render.compare.view import schedule_line
from shardviz.render.schedule.html import schedule_html

from .compare_fixtures import NASTY, comparison
from .schedule_fixtures import profiled


def piped(strategy: str = "pp") -> Comparison:
    """The fixture comparison with its first result pipelined (GSPMD GPipe 2 x 3) and its
    second 1F1B written with shard_map (profiled); the third is not pipelined."""
    c = comparison()
    first, second, third = c.results
    results = (
        dataclasses.replace(first, strategy=strategy, schedule=gpipe(2, 3)),
        dataclasses.replace(second, strategy="pp+dp", schedule=profiled()),
        third,
    )
    return dataclasses.replace(c, results=results)


def test_schedule_line_names_the_form() -> None:
    first, second, third = piped().results
    # 2 stages x 3 microbatches: (S-1)/(M+S-1) = 1/4.
    assert schedule_line(first) == (
        "pipeline: gpipe, GSPMD · 2 stages x 3 microbatches · bubble 25.0% of the schedule "
        "(theory (S-1)/(M+S-1) 25.0%)"
    )
    assert schedule_line(second) == (
        "pipeline: 1f1b, shard_map, checkpointed · 2 stages x 3 microbatches · bubble 25.0% of "
        "the schedule (theory (S-1)/(M+S-1) 25.0%) · measured 37.5%"
    )
    assert schedule_line(third) == ""


def test_text_says_the_line_under_each_pipeline_strategy() -> None:
    c = piped()
    lines = comparison_text(c).splitlines()
    for r in c.results[:2]:
        head = next(n for n, x in enumerate(lines) if x.startswith(f"{r.strategy} · "))
        # Under the name and the description, before the memory lines.
        assert lines[head + 2] == f"  {schedule_line(r)}"
    assert sum(x.startswith("  pipeline: ") for x in lines) == 2


def test_html_has_each_pipeline_strategys_schedule_chart() -> None:
    c = piped()
    html = comparison_html(c)
    blocks = re.findall(r'<div class="sv-cmp-sched" data-strategy="([^"]*)"', html)
    assert blocks == ["pp", "pp+dp"]  # the third strategy is not pipelined
    assert html.count('<div class="sv-root sv-schedule"') == 2
    for r in c.results[:2]:
        block = html.split(f'<div class="sv-cmp-sched" data-strategy="{r.strategy}"', 1)[1]
        assert schedule_html(r.schedule) in block.split('<div class="sv-cmp-sched"', 1)[0]
        assert schedule_line(r) in block
    # Each chart has all 2 * S * M slots; the profiled one its measured slots too.
    assert len(re.findall(r'class="sv-slot sv-[FB]"', html)) == 2 * (2 * 2 * 3)
    assert len(re.findall(r'class="sv-mslot sv-[FB]"', html)) == 12
    # The section sits after the collectives' cards and before the full reports.
    where = [html.index(x) for x in ('<div class="sv-cmp-cards">', ">Pipeline schedules<",
                                     '<details class="sv-cmp-report"')]  # fmt: skip
    assert where == sorted(where)
    assert "Pipeline schedules" not in comparison_html(comparison())
    assert 'class="sv-cmp-sched"' not in comparison_html(comparison())


def test_strategy_names_are_escaped_in_the_schedule_section() -> None:
    html = comparison_html(piped(strategy=NASTY))
    assert NASTY not in html
    assert '<div class="sv-cmp-sched" data-strategy="&lt;script&gt;alert(1)&lt;/script&gt;"' in html
