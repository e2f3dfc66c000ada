"""The pipeline Explorer's Schedule pane, built from hand-made results: pure, no runs."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from shardviz.model.compare import MemoryBreakdown, StrategyResult
from shardviz.model.mesh import Device, MeshLayout
from shardviz.model.schedule import gpipe, one_f_one_b
from shardviz.widgets.pipeline.pane import SweepPoint, SweepRun, pane_html, stage_devices, sweep_row

MIB = 1 << 20


def mesh(names: tuple[str, ...], sizes: tuple[int, ...]) -> MeshLayout:
    n = 1
    for k in sizes:
        n *= k
    return MeshLayout(names, sizes, tuple(Device(i) for i in range(n)))


def result(schedule, *, label_title="pipeline (GSPMD)", step=None, the_mesh=None):
    memory = MemoryBreakdown(
        params=0, grads=0, optimizer=0, batch=0, activations=0, arguments_from_leaves=0,
        arguments_from_compiler=0, temp=3 * MIB, output=0, alias=0, peak=5 * MIB,
    )  # fmt: skip
    return StrategyResult(
        strategy="pp", title=label_title, description="", report=None,  # type: ignore[arg-type]
        mesh=the_mesh or mesh(("stage",), (schedule.stages,)), memory=memory, collectives=(),
        step_seconds=step, schedule=schedule,
    )  # fmt: skip


def test_stage_devices_follow_the_stage_axis_wherever_it_is():
    assert stage_devices(mesh(("stage", "data"), (2, 2)), 2) == [(0, 1), (2, 3)]
    assert stage_devices(mesh(("data", "stage"), (2, 2)), 2) == [(0, 2), (1, 3)]
    assert stage_devices(mesh(("stage",), (4,)), 4) == [(0,), (1,), (2,), (3,)]
    assert stage_devices(mesh(("data",), (2,)), 3) == [(0, 1)] * 3  # no stage axis


def test_sweep_row_has_the_theory_for_every_count_and_the_runs_kept():
    runs = {4: SweepRun.of(result(gpipe(2, 4), step=0.012))}
    points = sweep_row(2, (1, 2, 4, 8), 4, runs)
    assert [p.microbatches for p in points] == [1, 2, 4, 8]
    assert [p.theory for p in points] == [1 / 2, 1 / 3, 1 / 5, 1 / 9]
    assert [p.current for p in points] == [False, False, True, False]
    assert points[2].step_seconds == 0.012
    assert points[2].bubble == gpipe(2, 4).schedule_bubble_fraction
    assert all(p.step_seconds is None and p.bubble is None for i, p in enumerate(points) if i != 2)


@pytest.mark.parametrize(("stages", "microbatches"), [(2, 4), (4, 8), (2, 16)])
def test_pane_draws_the_schedule_with_a_slot_per_forward_and_backward(stages, microbatches):
    schedule = gpipe(stages, microbatches)
    text = pane_html("pp", result(schedule), sweep_row(stages, (microbatches,), microbatches, {}))
    assert text.count('class="sv-root sv-schedule"') == 1
    slots = re.findall(r'<rect[^>]*class="sv-slot sv-[FB]"', text)
    assert len(slots) == 2 * stages * microbatches
    root = re.search(r'<div class="sv-root sv-pipe" ([^>]*)>', text)
    assert root is not None
    assert f'data-stages="{stages}"' in root.group(1)
    assert f'data-microbatches="{microbatches}"' in root.group(1)
    assert 'data-kind="gpipe"' in root.group(1)


def test_pane_names_each_stages_devices_and_the_compilers_figures():
    schedule = replace(one_f_one_b(2, 4), form="shard_map", residual_bytes=1000)
    text = pane_html("pp+dp", result(schedule, the_mesh=mesh(("stage", "data"), (2, 4))), [])
    assert '<span data-stage="0" data-devices="0 1 2 3">stage 0: 0, 1, 2, 3</span>' in text
    assert '<span data-stage="1" data-devices="4 5 6 7">stage 1: 4, 5, 6, 7</span>' in text
    assert "peak 5 MiB, temp 3 MiB" in text
    # GSPMD's form says where its activations are instead.
    assert "GSPMD's form keeps" not in text
    assert "GSPMD&#x27;s form keeps" in pane_html("pp", result(gpipe(2, 4)), [])


def test_sweep_table_marks_the_current_count_and_shows_what_ran():
    ran = {2: result(gpipe(2, 2), step=0.0031), 4: result(gpipe(2, 4), step=0.0125)}
    points = sweep_row(2, (1, 2, 4), 4, {m: SweepRun.of(r) for m, r in ran.items()})
    text = pane_html("pp", ran[4], points)
    table = text[text.index('<table class="sv-pipe-sweep">') :]
    assert table.count('data-mb="4" data-current') == 4  # one cell per row
    assert table.count('data-mb="1"') == 4
    assert ">50.0%<" in table and ">33.3%<" in table and ">20.0%<" in table
    assert ">3.1 ms<" in table and ">12.5 ms<" in table
    assert "move the slider there to run it" in table  # 1 microbatch has not run
    assert "step times are illustrative" in text  # CPU devices


def test_pane_escapes_the_label_and_title():
    text = pane_html("<b>x</b>", result(gpipe(2, 2), label_title='a "<title>"'), [])
    assert "<b>x</b>" not in text and "&lt;b&gt;x&lt;/b&gt;" in text
    assert "&quot;&lt;title&gt;&quot;" in text


def test_run_facts_take_the_measured_bubble_when_profiled():
    plain = result(gpipe(2, 4), step=0.5)
    assert SweepRun.of(plain) == SweepRun(0.5, gpipe(2, 4).schedule_bubble_fraction)
    profiled = replace(plain, schedule=replace(gpipe(2, 4), measured_bubble=0.3))
    assert SweepRun.of(profiled) == SweepRun(0.5, 0.3)
    assert SweepRun.of(replace(plain, schedule=None)) is None


def test_a_result_without_schedule_is_refused():
    no_schedule = replace(result(gpipe(2, 2)), schedule=None)
    with pytest.raises(ValueError, match="'dp' is not a pipeline"):
        pane_html("dp", no_schedule, [SweepPoint(1, 0.0)])
