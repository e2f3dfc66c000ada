"""The physical view: chips, links and rings as HTML/SVG elements one can count, the text
view, and every name escaped."""

from __future__ import annotations

import dataclasses
import html as html_lib
import re
import xml.etree.ElementTree as ET

from shardviz.model import display
from shardviz.model.physical import PhysicalLayout
from shardviz.model.units import format_bytes
from tests.analysis.estimate.physical_programs import by_chip, explained, mesh_of, sv


def _v5e(names=("data", "model")) -> PhysicalLayout:
    chips = by_chip("v5e:4x4")
    devices = [chips[(x, y)] for y in range(4) for x in range(4)]
    return sv.physical(explained(mesh_of(devices, (4, 4), names), *names))


def _count(html: str, cls: str) -> int:
    return len(re.findall(rf'class="{cls}"', html))


def test_one_element_per_chip_and_per_link_on_a_2d_slice():
    p = _v5e()
    html = display.render(p, "html")
    assert html == p._repr_html_()
    assert html.startswith('<div class="sv-root sv-physical" data-target="v5e:4x4">')
    assert _count(html, "sv-chip") == 16
    assert _count(html, "sv-link") == len(p.links) == 2 * 4 * 3  # no wraparound on a 4x4 v5e
    assert not re.search(r'data-kind="wrap"', html)
    for c in p.chips:
        assert f'data-device="{c.device}" data-chip="{c.chip[0]},{c.chip[1]}"' in html
    loaded = [x for x in p.links if x.bytes]
    assert len(re.findall(r'data-bytes="[1-9]', html)) == len(loaded)
    # each axis's rings: one step per member (a line of 4 has 4 steps, the last back)
    model = p.axis("model")
    assert html.count('class="sv-ring" data-axis="model"') == 4 * len(model.rings)
    assert '<li class="sv-axis" data-axis="model" data-shape="line">' in html
    assert _count(html, "sv-busiest") == 1


def test_a_3d_torus_has_a_panel_per_z_and_marks_wraparound_links():
    chips = by_chip("v5p:4x4x4")
    devices = [chips[(x, y, z)] for z in range(4) for y in range(4) for x in range(4)]
    p = sv.physical(explained(mesh_of(devices, (16, 4), ("data", "model"))))
    html = p._repr_html_()
    assert _count(html, "sv-chips") == 4
    assert [int(z) for z in re.findall(r'<svg class="sv-chips" data-z="(\d)"', html)] == [
        0,
        1,
        2,
        3,
    ]
    assert _count(html, "sv-chip") == 64
    assert len(p.links) == 3 * 64  # every axis wraps: 4 links per line of 4
    # each panel draws its x and y links (z links run between panels: listed, not drawn)
    assert _count(html, "sv-link") == 4 * 32
    assert len(re.findall(r'data-kind="wrap"', html)) == 4 * 8
    assert '<li class="sv-axis" data-axis="model" data-shape="ring">' in html
    assert "over wraparound links" in html


def test_gpu_hosts_are_boxes_holding_their_gpus():
    chips = by_chip("h100:2x8")
    across = [chips[(h, g)] for g in range(8) for h in range(2)]
    p = sv.physical(explained(mesh_of(across, (8, 2), ("data", "model"))))
    html = p._repr_html_()
    assert _count(html, "sv-host") == 2
    assert _count(html, "sv-chip") == 16
    assert 'data-kind="network"' in html
    text = str(p)
    assert "host 0:" in text and "host 1:" in text
    assert "crosses hosts" in text


def test_hostile_axis_names_are_escaped():
    names = ('<img src=x onerror="alert(1)">', "m&'\"")
    p = _v5e(names)
    for fmt in ("html", "page"):
        out = display.render(p, fmt)
        assert "<img" not in out
        assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in out
        assert 'data-axis="m&amp;&#x27;&quot;"' in out
    assert names[0] in str(p)


def test_the_text_view_lists_axes_chips_busiest_links_and_the_rule():
    p = _v5e()
    text = str(p)
    assert text == display.render(p, "text")
    lines = text.splitlines()
    assert lines[0] == "Mesh on the chips of matmul · TPU v5e 4x4 (16 chips, 4 hosts)"
    assert "  'model'     4  line" in text
    assert "first ring: d0 →1 d1 →1 d2 →1 d3 →3 d0" in text
    assert "  y=0  d0    d1    d2    d3" in text
    assert "Busiest links" in text and "Rule: " in text
    busiest = p.busiest(1)[0]
    assert busiest.label in text


def test_the_layout_round_trips_through_json():
    p = _v5e()
    assert PhysicalLayout.from_json(p.to_json()) == p


def test_the_html_is_well_formed_on_tpu_and_gpu():
    chips = by_chip("h100:2x8")
    gpu = sv.physical(explained(mesh_of(list(chips.values()), (2, 8), ("data", "model"))))
    for p in (_v5e(), gpu):
        body = re.sub(r"<style>.*?</style>", "", p._repr_html_(), flags=re.S)
        root = ET.fromstring(body)
        assert root.get("class") == "sv-root sv-physical"


def test_link_labels_say_which_chips_hosts_or_slices():
    from shardviz.model.physical import LinkLoad

    assert LinkLoad((0, 1, 2), (0, 1, 3), "ici").label == "(1,2)–(1,3)"
    assert LinkLoad((1, 0, 0), (1, 3, 0), "wrap").label == "slice 1 (0,0)–slice 1 (3,0)"
    assert LinkLoad((0, 0, 3), (0, 0, 5), "nvlink").label == "host 0 gpu 3–host 0 gpu 5"
    assert LinkLoad((0, 0), (0, 1), "network").label == "host 0–host 1"
    assert LinkLoad((0,), (1,), "dcn").label == "slice 0–slice 1"


def test_a_ring_step_over_a_wraparound_link_is_drawn_round_the_edge():
    chips = by_chip("v5p:4x4x4")
    devices = [chips[(x, y, z)] for z in range(4) for y in range(4) for x in range(4)]
    html = sv.physical(explained(mesh_of(devices, (16, 4), ("data", "model"))))._repr_html_()
    steps = re.findall(r'<path class="sv-ring" data-axis="model" d="([^"]*)"', html)
    assert len(steps) == 64
    assert sum(" C" in d for d in steps) == 16  # the step from x=3 back to x=0 in each ring


# ----- reading at a glance: the load's own palette and scale, labels no line crosses -----


def _jumps() -> PhysicalLayout:
    """Notebook 11's layout: the 4x4 v5e's devices in jax's order, rows and columns jumping."""
    chips = by_chip("v5e:4x4")
    devices = sorted(chips.values(), key=lambda d: d.id)
    return sv.physical(explained(mesh_of(devices, (4, 4), ("data", "model"))))


def _rgb(color: str) -> tuple[int, int, int]:
    return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def test_link_load_has_a_palette_of_its_own_and_a_drawn_scale():
    from shardviz.render.physical import AXIS_COLORS, _load_style

    p = _jumps()
    html = p._repr_html_()
    links = re.findall(
        r'class="sv-link" [^>]*?data-bytes="(\d+)"[^>]*?stroke="(#[0-9a-f]{6})"', html
    )
    assert len(links) == len(p.links)
    # every axis's colour is a hue (its channels far apart), every link's a grey
    assert all(max(_rgb(c)) - min(_rgb(c)) > 60 for c in AXIS_COLORS)
    for _, color in links:
        r, g, b = _rgb(color)
        assert max(r, g, b) - min(r, g, b) <= 24, f"{color} is a hue, not a grey of the load ramp"
    # busier is darker and thicker, on one ramp from the least to the most loaded link
    top = p.max_link_bytes
    styles = [_load_style(round(top * k / 8), top) for k in range(1, 9)]
    assert all(
        sum(_rgb(a)) > sum(_rgb(b)) for (a, _), (b, _) in zip(styles, styles[1:], strict=False)
    )
    assert all(wa < wb for (_, wa), (_, wb) in zip(styles, styles[1:], strict=False))
    assert {c for _, c in links} <= {_load_style(x.bytes, top)[0] for x in p.links}
    # the scale: from the least to the most loaded link, their bytes written under it
    low, top = min(x.bytes for x in p.links if x.bytes), max(x.bytes for x in p.links)
    m = re.search(r'<div class="sv-loadscale" data-min="(\d+)" data-max="(\d+)">(.*?)</div>', html)
    assert m and (int(m.group(1)), int(m.group(2))) == (low, top)
    scale = m.group(3)
    assert format_bytes(low) in scale and format_bytes(top) in scale
    steps = re.findall(r'class="sv-loadstep" fill="(#[0-9a-f]{6})" data-load="(\d+)"', scale)
    assert len(steps) >= 3 and int(steps[0][1]) == low and int(steps[-1][1]) == top
    words = html_lib.unescape(scale)
    assert "bytes each link carries per step" in words and "each axis's rings" in words


def test_an_idle_slice_says_no_link_carries_bytes():
    p = _v5e()
    idle = dataclasses.replace(p, links=tuple(dataclasses.replace(x, bytes=0) for x in p.links))
    assert 'data-min="0" data-max="0"' in idle._repr_html_()
    assert "No link carries bytes" in idle._repr_html_()


def _points(d: str, n: int = 64) -> list[tuple[float, float]]:
    """Points along a ring step's path: ``M x,y L x,y`` or ``M x,y C x,y x,y x,y``."""
    nums = [tuple(map(float, xy.split(","))) for xy in re.findall(r"-?[\d.]+,-?[\d.]+", d)]
    if len(nums) == 2:
        (x0, y0), (x1, y1) = nums
        return [(x0 + (x1 - x0) * t / n, y0 + (y1 - y0) * t / n) for t in range(n + 1)]
    p0, p1, p2, p3 = nums
    out = []
    for k in range(n + 1):
        t = k / n
        c = ((1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3)
        out.append(
            tuple(sum(w * q[i] for w, q in zip(c, (p0, p1, p2, p3), strict=True)) for i in (0, 1))
        )
    return out  # type: ignore[return-value]


def test_no_ring_or_link_crosses_a_chip_label():
    for p in (_jumps(), _v5e()):
        html = p._repr_html_()
        for svg in re.findall(r'<svg class="sv-chips".*?</svg>', html, re.S):
            plates = [
                tuple(map(float, m))
                for m in re.findall(
                    r'<g class="sv-chipname"><rect x="([\d.]+)" y="([\d.]+)" '
                    r'width="([\d.]+)" height="([\d.]+)"/>',
                    svg,
                )
            ]
            assert len(plates) == svg.count('class="sv-chip"')
            names = re.findall(r'<g class="sv-chipname">.*?<text[^>]*>([^<]*)</text>', svg)
            assert all(n.startswith("d") for n in names)
            # the labels are drawn last: nothing is painted over them
            assert svg.index('class="sv-chipname"') > max(
                svg.rfind('class="sv-ring"'), svg.rfind('class="sv-link"')
            )
            lines = re.findall(r'class="sv-ring"[^>]*? d="([^"]*)"', svg)
            lines += [
                f"M{a},{b} L{c},{d}"
                for a, b, c, d in re.findall(
                    r'<line x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)" class="sv-link"',
                    svg,
                )
            ]
            assert lines
            for d in lines:
                for x, y in _points(d):
                    for px, py, w, h in plates:
                        inside = px + 0.5 < x < px + w - 0.5 and py + 0.5 < y < py + h - 0.5
                        assert not inside, f"{d} crosses the label plate at {(px, py, w, h)}"
