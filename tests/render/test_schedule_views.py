"""The text and HTML views of a pipeline schedule, on GPipe and 1F1B schedules (no jax).

Hand-built schedules come from :mod:`.schedule_fixtures`; the figures are tested in
test_schedule_plotly.py and test_schedule_mpl.py.

The text view is pinned by golden files tests/golden/schedule_<name>.txt; rewrite them after
an intended change with ``SHARDVIZ_UPDATE_GOLDEN=1 pytest tests/render`` and read the diff.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from shardviz.model import display
from shardviz.model.schedule import Schedule, gpipe, one_f_one_b
from shardviz.render.schedule.html import (
    IDLE_FILL,
    MAX_BODY,
    cell_width,
    darken,
    schedule_html,
    schedule_page,
    slot_fill,
    tick_step,
)
from shardviz.render.schedule.text import (
    TIME_ELIDE_ABOVE,
    TIME_KEEP,
    activation_lines,
    realness_str,
    schedule_text,
    seconds_ticks,
    short_how,
)
from tests.without_jax import run_without_jax

from .schedule_fixtures import KEPT, T0, profiled, wide

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE = os.environ.get("SHARDVIZ_UPDATE_GOLDEN") == "1"


CASES: dict[str, Callable[[], Schedule]] = {
    "gpipe_4x8": lambda: gpipe(4, 8),
    "1f1b_4x8": lambda: one_f_one_b(4, 8),
    "1f1b_4x64_measured": wide,
    "1f1b_2x3_shard_map_profiled": profiled,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_schedule_text(name: str) -> None:
    text = schedule_text(CASES[name]()) + "\n"
    path = GOLDEN / f"schedule_{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with SHARDVIZ_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_no_stale_schedule_golden_files() -> None:
    names = {p.stem.removeprefix("schedule_") for p in GOLDEN.glob("schedule_*.txt")}
    assert names <= set(CASES), f"schedule goldens without a case: {sorted(names - set(CASES))}"


# --------------------------------------------------------------------------------------------
# Text


def _rows(text: str) -> dict[str, list[str]]:
    """The chart's cells by row title (``time``, ``stage 0``...)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"(time|stage \d+)\s+(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).split()
    return out


def test_text_gpipe_by_hand() -> None:
    text = schedule_text(gpipe(4, 8))
    rows = _rows(text)
    assert rows["time"] == [str(t) for t in range(22)]
    # Stage 0: eight forwards, six idle units (3 fill + 3 drain), eight backwards last first.
    assert rows["stage 0"] == [f"F{m}" for m in range(8)] + ["·"] * 6 + [
        f"B{m}" for m in reversed(range(8))
    ]
    # The last stage starts 3 units late and runs its backwards right after its forwards.
    assert rows["stage 3"][:4] == ["·", "·", "·", "F0"]
    assert rows["stage 3"][10:12] == ["F7", "B7"]
    cells = [c for s in range(4) for c in rows[f"stage {s}"]]
    assert sum(c.startswith("F") for c in cells) == sum(c.startswith("B") for c in cells) == 32
    assert cells.count("·") == 4 * 22 - 64
    lines = text.splitlines()
    assert lines[0] == "pipeline schedule · gpipe · 4 stages × 8 microbatches · 22 time units"
    assert (
        lines[1] == "written with GSPMD (one loop shifting a stage-split state) · no checkpointing"
    )
    # (4 * 22 - 64) / (4 * 22) = 24/88 = 3/11 idle, as the theory says.
    assert lines[2] == "bubble 27.3% idle in the schedule · theory (S-1)/(M+S-1) = 3/11 = 27.3%"
    assert "activation memory" not in text  # the bytes kept per microbatch are not known
    assert "at once): 0: 8 · 1: 8 · 2: 8 · 3: 8" in text  # GPipe holds every microbatch


def test_text_1f1b_by_hand() -> None:
    text = schedule_text(one_f_one_b(4, 8))
    rows = _rows(text)
    # Stage 0 warms up with 3 forwards past the first, then alternates once B0 comes back.
    assert rows["stage 0"][:10] == ["F0", "F1", "F2", "F3", "·", "·", "·", "B0", "F4", "B1"]
    assert rows["stage 3"][3:7] == ["F0", "B0", "F1", "B1"]
    assert "at once): 0: 4 · 1: 3 · 2: 2 · 3: 1" in text  # at most S - s microbatches
    assert "measured" not in text


def test_text_wide_schedule_is_elided() -> None:
    s = wide()
    assert s.length == 134 > TIME_ELIDE_ABOVE
    text = schedule_text(s)
    rows = _rows(text)
    shown = [str(t) for t in range(TIME_KEEP)] + ["…"] + [str(t) for t in range(122, 134)]
    assert rows["time"] == shown
    assert rows["stage 0"][-1] == "B63" and rows["stage 3"][0] == "·"
    assert all(len(rows[f"stage {i}"]) == 2 * TIME_KEEP + 1 for i in range(4))
    assert "… 110 more time units not shown (time 12:122)" in text
    assert max(len(line) for line in text.splitlines()) <= 120
    # 3/67 theory; measured shown next to it.
    assert "theory (S-1)/(M+S-1) = 3/67 = 4.5% · measured 7.1% idle on the devices" in text


def test_text_many_stages_elides_rows() -> None:
    text = schedule_text(gpipe(16, 2))
    rows = _rows(text)
    assert "stage 4" in rows and "stage 5" not in rows and "stage 11" in rows
    assert "… 6 more stages (5:11) …" in text


def test_text_one_stage_has_no_bubble() -> None:
    text = schedule_text(gpipe(1, 1))
    assert _rows(text)["stage 0"] == ["F0", "B0"]
    assert "bubble 0.0% idle in the schedule · theory (S-1)/(M+S-1) = 0/1 = 0.0%" in text


def test_text_profiled_shard_map_by_hand() -> None:
    s = profiled()
    text = schedule_text(s)
    lines = text.splitlines()
    assert lines[1] == (
        "written with shard_map (each stage's program by hand) · checkpointed (a stage keeps "
        "only its input per microbatch)"
    )
    # 2 stages x 3 microbatches: 8 time units, 16 - 12 idle = 1/4 = (S-1)/(M+S-1).
    assert lines[2] == (
        "bubble 25.0% idle in the schedule · theory (S-1)/(M+S-1) = 1/4 = 25.0% · "
        "measured 37.5% idle on the devices (illustrative, on CPU)"
    )
    # 12 slots; the last (stage 0's B2 at time 7) ends at 7 ms + 0.9 ms after the first start.
    assert lines[3] == (
        "measured 12 slots over 7.9 ms (illustrative: CPU devices share the host's cores)"
    )
    rows = _rows(text)
    assert rows["stage 0"] == ["F0", "F1", "·", "B0", "F2", "B1", "·", "B2"]
    # 1F1B: stage 0 holds 2 microbatches at once, stage 1 one; 3,250,000 B = 3.1 MiB each.
    assert "  stage 0 holds 2 microbatches × 3.1 MiB = 6.2 MiB" in lines
    assert "  stage 1 holds 1 microbatch × 3.1 MiB = 3.1 MiB" in lines
    assert s.activation_bytes(0) == 2 * KEPT == 6_500_000


def test_realness_wording() -> None:
    assert realness_str(profiled("cpu")) == "illustrative: CPU devices share the host's cores"
    assert realness_str(profiled("gpu")) == "real: measured on gpu devices"
    assert realness_str(wide()) == ""  # platform not known: no claim either way
    text = schedule_text(profiled("tpu"))
    assert "measured 37.5% idle on the devices (real, on tpu)" in text
    assert "(real: measured on tpu devices)" in text
    assert "illustrative" not in text


def test_short_how() -> None:
    assert short_how(gpipe(2, 2)) == "gpipe, GSPMD"
    assert short_how(profiled()) == "1f1b, shard_map, checkpointed"
    assert short_how(dataclasses.replace(one_f_one_b(2, 2), form="shard_map")) == "1f1b, shard_map"


def test_activation_lines_elide_many_stages() -> None:
    s = dataclasses.replace(gpipe(16, 2), residual_bytes=1024)
    lines = activation_lines(s)
    assert lines[0] == (0, "stage 0 holds 2 microbatches × 1 KiB = 2 KiB")
    assert (None, "… 6 more stages (5:11) …") in lines
    assert [i for i, _ in lines if i is not None] == [0, 1, 2, 3, 4, 11, 12, 13, 14, 15]
    assert activation_lines(gpipe(2, 2)) == []


def test_seconds_ticks() -> None:
    assert seconds_ticks(7.9e-3) == pytest.approx([0, 2e-3, 4e-3, 6e-3, 8e-3])
    assert seconds_ticks(6.0) == pytest.approx([0, 1, 2, 3, 4, 5, 6])
    assert seconds_ticks(0.0) == [0.0]
    for span in (3e-6, 0.0123, 1.0, 47.0):
        ticks = seconds_ticks(span)
        assert ticks[-1] >= span > ticks[-2] and len(ticks) <= 7


def test_str_is_the_text_view_and_json_round_trip_renders_the_same() -> None:
    s = wide()
    assert str(s) == schedule_text(s) == schedule_text(wide())
    assert schedule_text(Schedule.from_json(s.to_json())) == schedule_text(s)
    p = profiled()
    assert str(p) == schedule_text(p)
    assert schedule_text(Schedule.from_json(p.to_json())) == schedule_text(p)


# --------------------------------------------------------------------------------------------
# HTML


def _count(html: str, pattern: str) -> int:
    return len(re.findall(pattern, html))


@pytest.mark.parametrize(("kind", "S", "M"), [("gpipe", 4, 8), ("1f1b", 4, 8), ("1f1b", 3, 5)])
def test_html_one_rect_per_slot(kind: str, S: int, M: int) -> None:
    s = gpipe(S, M) if kind == "gpipe" else one_f_one_b(S, M)
    html = schedule_html(s)
    assert _count(html, r'class="sv-slot sv-[FB]"') == 2 * S * M
    assert _count(html, r'class="sv-slot sv-F"') == _count(html, r'class="sv-slot sv-B"') == S * M
    assert _count(html, r'class="sv-idle"') == S * s.length - 2 * S * M
    assert _count(html, r'<g class="sv-stage"') == S
    # Every slot's place and microbatch is in the markup.
    for x in s.slots:
        assert f'class="sv-slot sv-{x.phase}" data-mb="{x.microbatch}" data-t="{x.time}"' in html
    # Narrow enough: every slot is labelled, F3 / B3.
    assert _count(html, r'class="sv-slbl[^"]*"') == 2 * S * M
    assert ">F3<" in html and ">B3<" in html


def test_html_forward_and_backward_look_different() -> None:
    s = gpipe(2, 2)
    f = next(x for x in s.slots if x.phase == "F" and x.microbatch == 1)
    b = next(x for x in s.slots if x.phase == "B" and x.microbatch == 1)
    assert slot_fill(f) != slot_fill(b) == darken(slot_fill(f))
    assert darken("#ffffff", 0.5) == "#808080"
    html = schedule_html(s)
    assert f'data-mb="1" data-t="{f.time}" fill="{slot_fill(f)}"' in html
    assert f'data-mb="1" data-t="{b.time}" fill="{slot_fill(b)}"' in html
    assert "sv-slbl sv-on-dark" in html  # backward labels are white on the dark fill


def test_html_bubble_numbers() -> None:
    s = gpipe(4, 8)
    html = schedule_html(s)
    assert float(re.search(r'data-bubble="([^"]+)"', html).group(1)) == pytest.approx(3 / 11)
    assert float(re.search(r'data-theory="([^"]+)"', html).group(1)) == pytest.approx(3 / 11)
    assert "data-measured" not in html and "measured" not in html and IDLE_FILL in html
    assert "<b>bubble</b> 27.3% idle in the schedule" in html
    assert "<b>theory</b> (S-1)/(M+S-1) = 3/11 = 27.3%" in html
    assert 'data-kind="gpipe" data-stages="4" data-microbatches="8" data-length="22"' in html
    measured = schedule_html(wide())
    assert 'data-measured="0.0712"' in measured
    assert "<b>measured</b> 7.1% idle on the devices" in measured


def test_html_form_checkpoint_and_activation() -> None:
    html = schedule_html(gpipe(4, 8))
    assert 'data-form="gspmd" data-checkpoint="0"' in html
    assert "data-residual-bytes" not in html and 'sv-activation"' not in html
    assert (
        '<div class="sv-note sv-how">written with GSPMD (one loop shifting a stage-split ' in html
    )
    html = schedule_html(profiled())
    assert 'data-form="shard_map" data-checkpoint="1" data-residual-bytes="3250000"' in html
    assert "checkpointed (a stage keeps only its input per microbatch)" in html
    acts = re.findall(r'<div class="sv-act" data-stage="(\d+)" data-bytes="(\d+)">([^<]*)<', html)
    assert acts == [
        ("0", "6500000", "stage 0 holds 2 microbatches × 3.1 MiB = 6.2 MiB"),
        ("1", "3250000", "stage 1 holds 1 microbatch × 3.1 MiB = 3.1 MiB"),
    ]
    stages = re.findall(r'data-in-flight="(\d+)" data-activation-bytes="(\d+)"', html)
    assert stages == [("2", "6500000"), ("1", "3250000")]


def test_html_measured_chart() -> None:
    s = profiled()
    html = schedule_html(s)
    assert 'data-measured="0.375"' in html
    assert "<b>measured</b> 37.5% idle on the devices (illustrative, on CPU)" in html
    assert (
        '<div class="sv-realness sv-illustrative"><b>measured 12 slots over 7.9 ms</b> · ' in html
    )
    assert '<svg class="sv-sched-measured" data-platform="cpu"' in html
    found = re.findall(
        r'class="sv-mslot sv-([FB])" data-stage="(\d)" data-mb="(\d)" data-start="([^"]+)" '
        r'data-seconds="([^"]+)" fill="([^"]+)"',
        html,
    )
    assert len(found) == 2 * 2 * 3 == len(s.measured)
    for phase, stage, mb, start, seconds, fill in found:
        m = next(x for x in s.measured if (x.phase, x.stage, x.microbatch) == (phase, int(stage),
                                                                             int(mb)))  # fmt: skip
        assert (float(start), float(seconds)) == (m.start, m.seconds)
        assert fill == slot_fill(next(x for x in s.slots if (x.phase, x.stage, x.microbatch) ==
                                      (phase, int(stage), int(mb))))  # fmt: skip
    # Placed on the seconds axis: the first slot at the left edge, ticks 0, 2, ..., 8 ms.
    ticks = re.findall(r">(\d+ ms|0 s)</text>", html.split("sv-sched-measured", 1)[1])
    assert ticks == ["0 s", "2 ms", "4 ms", "6 ms", "8 ms"]
    real = schedule_html(profiled("gpu"))
    assert (
        '<div class="sv-realness"><b>measured 12 slots over 7.9 ms</b> · real: measured on ' in real
    )
    assert "sv-sched-measured" not in schedule_html(wide())  # a bubble but no timed slots
    # Time is drawn from the first slot's start (T0 after the step's first op), not from zero:
    # F0 on stage 0 sits where the "0 s" tick is; B2 (7 ms later) 7/8 of the axis further.
    part = html.split("sv-sched-measured", 1)[1]
    zero = float(re.search(r'x="([\d.]+)" y="28" text-anchor="middle">0 s<', part).group(1))
    eight = float(re.search(r'x="([\d.]+)" y="28" text-anchor="middle">8 ms<', part).group(1))
    f0 = re.search(r'<rect x="([\d.]+)"[^>]*sv-mslot sv-F" data-stage="0" data-mb="0"', part)
    b2 = re.search(r'<rect x="([\d.]+)"[^>]*sv-mslot sv-B" data-stage="0" data-mb="2"', part)
    assert float(f0.group(1)) == zero and T0 > 0
    assert float(b2.group(1)) == pytest.approx(zero + (eight - zero) * 7 / 8, abs=0.1)


def test_html_in_flight() -> None:
    html = schedule_html(one_f_one_b(4, 8))
    flights = re.findall(r'<g class="sv-stage" data-stage="(\d+)" data-in-flight="(\d+)"', html)
    assert flights == [("0", "4"), ("1", "3"), ("2", "2"), ("3", "1")]
    assert "at once)</b>: 0: 4 · 1: 3 · 2: 2 · 3: 1" in html
    assert ">holds 4<" in html


def test_html_wide_schedule_is_scaled_not_elided() -> None:
    s = wide()
    html = schedule_html(s)
    assert _count(html, r'class="sv-slot sv-[FB]"') == 2 * 4 * 64  # every slot drawn
    assert cell_width(s.length) == pytest.approx(MAX_BODY / 134)
    w = float(re.search(r'<svg class="sv-sched" width="([\d.]+)"', html).group(1))
    assert MAX_BODY < w < MAX_BODY + 200
    assert "sv-slbl" not in html.split("</style>", 1)[1]  # too narrow for labels...
    assert "hover a slot" in html  # ... said so, and each slot has its hover text
    assert "<title>stage 0 · time 133 · backward of microbatch 63</title>" in html
    ticks = re.findall(r'<text class="sv-tick" x="[\d.]+" y="28" text-anchor="middle">(\d+)<', html)
    assert ticks == [str(t) for t in range(0, 134, 5)]


def test_tick_step() -> None:
    assert tick_step(22, 26.0) == 1
    assert tick_step(134, 900 / 134) == 5  # "133" needs ~24 px: 5 units of 6.7 px
    assert tick_step(2000, 0.45) == 100
    assert cell_width(22) == 26.0 and cell_width(100_000) == 3.0


def test_html_is_self_contained() -> None:
    for make in CASES.values():
        for html in (schedule_html(make()), schedule_page(make())):
            assert "http" not in html and "src=" not in html and "<script" not in html
            assert "url(" not in html


def test_model_methods_use_the_registered_views(tmp_path: Path) -> None:
    s = one_f_one_b(4, 8)
    assert s._repr_html_() == schedule_html(s)
    assert display.render(s, "page") == schedule_page(s)
    path = s.save_html(str(tmp_path / "schedule.html"))
    text = Path(path).read_text(encoding="utf-8")
    assert text == schedule_page(s) and "<title>shardviz: 1f1b pipeline schedule" in text


def test_views_work_without_jax() -> None:
    out = run_without_jax(
        """
        import sys
        from shardviz.model.schedule import one_f_one_b
        from tests.render.schedule_fixtures import profiled
        s = one_f_one_b(3, 4)
        assert "F3" in str(s) and "sv-slot" in s._repr_html_()
        assert "sv-mslot" in profiled()._repr_html_() and "6.2 MiB" in str(profiled())
        assert not any(m == "jax" or m.startswith("jax.") for m in sys.modules), "jax imported"
        print("ok")
        """
    )
    assert out.strip() == "ok"
