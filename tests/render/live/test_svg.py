"""The live view's static charts: what each SVG holds, and that user strings are escaped."""

from __future__ import annotations

import math
import re

from shardviz.model.units import format_bytes
from shardviz.render.live.svg import (
    LOSS_H,
    LOSS_W,
    MAX_MEMORY_BARS,
    PAD_L,
    PAD_T,
    TIME_W,
    loss_svg,
    memory_svg,
    time_svg,
)


def _path(svg: str) -> str:
    return re.search(r'<path class="sv-l-line" d="([^"]*)"', svg).group(1)


def test_loss_svg_has_one_point_per_loss_and_labels_the_extremes():
    svg = loss_svg([2.0, 1.0, 0.5], total_steps=10)
    assert svg.startswith(f'<svg class="sv-l-chart sv-l-loss" width="{LOSS_W}" height="{LOSS_H}"')
    assert svg.count("<circle") == 3
    assert _path(svg).count("M") == 1 and _path(svg).count("L") == 2
    assert ">2</text>" in svg and ">0.5</text>" in svg  # top and bottom labels
    assert ">10</text>" in svg  # the x axis spans the planned steps
    assert "<title>step 2: loss 1</title>" in svg


def test_a_non_finite_loss_is_a_red_point_on_the_top_edge_and_breaks_the_line():
    svg = loss_svg([1.0, None, math.nan, 0.5])
    assert svg.count('class="sv-l-pt sv-l-bad"') == 2
    assert svg.count(f'cy="{PAD_T}"') >= 2
    assert _path(svg).count("M") == 2  # the path starts again after the gap
    assert "loss not finite" in svg


def test_time_svg_leaves_the_compile_step_out_and_marks_the_median():
    svg = time_svg([900.0, 2.0, 4.0, 3.0])
    assert f'x2="{TIME_W - 10}"' in svg
    assert _path(svg).count("L") == 2  # three points: steps 2 to 4
    assert "<title>median 3.00 ms</title>" in svg
    assert time_svg([900.0]).count("sv-l-median") == 0


def test_memory_svg_draws_one_bar_per_device_scaled_to_the_limit():
    memory = [
        {"device": i, "bytes": 1024 * (i + 1), "peak": 4096, "limit": 8192, "color": "#123456"}
        for i in range(2)
    ]
    svg = memory_svg(memory)
    assert svg.count('class="sv-l-bar"') == 2 and svg.count('class="sv-l-peak"') == 2
    widths = [float(w) for w in re.findall(r'<rect x="\d+" y="\d+" width="([\d.]+)"', svg)]
    assert widths == [18.8, 37.5]  # 1 KiB and 2 KiB of an 8 KiB limit, bar 150 px
    assert f"device 1: {format_bytes(2048, exact=True)}" in svg and "of 8 KiB" in svg


def test_memory_svg_summarises_devices_beyond_the_cap():
    memory = [{"device": i, "bytes": 10 + i} for i in range(MAX_MEMORY_BARS + 3)]
    svg = memory_svg(memory)
    assert svg.count('class="sv-l-bar"') == MAX_MEMORY_BARS
    assert "… 3 more devices" in svg


def test_memory_svg_escapes_what_it_is_given():
    svg = memory_svg([{"device": "<b>", "bytes": 1, "color": '"><script>'}])
    assert "<b>" not in svg and "<script>" not in svg
    assert "&lt;b&gt;" in svg and "&quot;&gt;&lt;script&gt;" in svg


def test_points_start_at_the_left_padding():
    svg = loss_svg([1.0, 2.0])
    assert f'cx="{PAD_L}"' in svg


def test_time_svg_draws_each_process_as_its_own_line_under_its_name():
    hosts = [
        {"process": 0, "step_ms": [300.0, 4.0, 6.0, 5.0]},
        {"process": 1, "step_ms": [310.0, 5.0, 9.0, 6.0]},
    ]
    svg = time_svg([310.0, 5.0, 9.0, 6.0], 4, hosts)
    assert 'class="sv-l-chart sv-l-time sv-l-hosts"' in svg
    lines = re.findall(r'<path class="sv-l-host" stroke="([^"]+)" d="([^"]*)"><title>([^<]*)<', svg)
    assert [t for _, _, t in lines] == ["process 0: median 5.00 ms", "process 1: median 6.00 ms"]
    # Three points each (the compile step left out), the slowest line is the step's own.
    assert all(d.count("M") + d.count("L") == 3 for _, d, _ in lines)
    assert lines[1][1] == _path(svg)
    assert "sv-l-hosts" not in time_svg([310.0, 5.0], 4)
