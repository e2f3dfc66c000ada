"""Who talks to whom: the traffic picture's links per group and its ring-model figures."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

import pytest

from shardviz.analysis.traffic import traffic_of
from shardviz.model.units import format_bytes
from shardviz.render.geometry import mesh_grid
from shardviz.render.traffic import MAX_ARROWS, drawable_links, traffic_svg

from .fixtures import make_mesh
from .report_fixtures import coll, megatron_report, shard_map_report
from .test_html import Doc


def _arrows(svg: str) -> Counter[int]:
    """Arrows per group in a traffic picture."""
    return Counter(int(a["data-group"]) for a in Doc(svg).with_class("sv-tarrow"))


def _figure(svg: str) -> dict[str, str]:
    return Doc(svg).with_class("sv-traffic")[0]


def test_all_reduce_is_a_ring_per_group_with_the_ring_models_bytes() -> None:
    r = shard_map_report()
    c = r.collectives[0]  # all-reduce of f32[32, 128] over 'model': groups of 4
    assert c.kind == "all-reduce" and [len(g) for g in c.groups] == [4, 4]
    svg = traffic_svg(r.mesh, mesh_grid(r.mesh), c)
    assert _arrows(svg) == {0: 4, 1: 4}  # a ring of n devices has n edges
    links = {a["data-link"] for a in Doc(svg).with_class("sv-tarrow")}
    assert links == {"0 1", "1 2", "2 3", "3 0", "4 5", "5 6", "6 7", "7 4"}
    # By hand: 32*128*4 B = 16 KiB; each step sends 16 KiB / 4 = 4 KiB, in 2*(4-1) = 6 steps.
    fig = _figure(svg)
    assert fig["data-pattern"] == "ring"
    assert int(fig["data-step-bytes"]) == 4096
    assert int(fig["data-steps"]) == 6
    assert int(fig["data-device-bytes"]) == 6 * 4096 == c.moved_bytes
    text = Doc(svg).all_text
    assert "each device sends 4 KiB (1/4 of its 16 KiB operand) to the next per step" in text
    assert "6 steps (3 to reduce-scatter, 3 to all-gather) = 24 KiB per device" in text
    assert "each arrow: 4 KiB per step × 6 steps" in text


@pytest.mark.parametrize(
    ("kind", "steps"), [("all-gather", 1), ("reduce-scatter", 1), ("all-reduce", 2)]
)
def test_ring_steps_and_bytes_for_groups_of_two(kind: str, steps: int) -> None:
    mesh = make_mesh(("data", "model"), (2, 4))
    c = coll("x.1", kind, (8, 16), (8, 16), ((0, 4), (1, 5), (2, 6), (3, 7)), ("data",))
    t = traffic_of(c, mesh)
    assert t.pattern == "ring" and t.steps == steps
    assert t.step_bytes == 8 * 16 * 4 // 2
    assert t.device_bytes == c.moved_bytes
    # Two devices: one edge each way.
    assert [sorted(g) for g in t.links] == [[(a, b), (b, a)] for a, b in c.groups]


def test_all_to_all_links_every_ordered_pair() -> None:
    r = shard_map_report()
    c = next(x for x in r.collectives if x.kind == "all-to-all")
    svg = traffic_svg(r.mesh, mesh_grid(r.mesh), c)
    n = 4
    assert _arrows(svg) == {0: n * (n - 1), 1: n * (n - 1)}
    fig = _figure(svg)
    assert fig["data-pattern"] == "all-pairs"
    # By hand: 16 KiB operand, 1/4 to each of the 3 others: 4 KiB each, 12 KiB in all.
    assert int(fig["data-step-bytes"]) == 4096
    assert int(fig["data-device-bytes"]) == 3 * 4096 == c.moved_bytes
    assert "to each of the 3 others = 12 KiB per device" in Doc(svg).all_text


def test_permute_draws_its_pairs_with_the_whole_operand() -> None:
    r = shard_map_report()
    c = next(x for x in r.collectives if x.kind == "collective-permute")
    svg = traffic_svg(r.mesh, mesh_grid(r.mesh), c)
    links = sorted(a["data-link"] for a in Doc(svg).with_class("sv-tarrow"))
    assert links == sorted(f"{a} {b}" for a, b in c.pairs)
    assert sum(_arrows(svg).values()) == len(c.pairs)
    fig = _figure(svg)
    assert fig["data-pattern"] == "pairs"
    assert int(fig["data-device-bytes"]) == c.in_bytes == c.moved_bytes
    assert f"each arrow: {format_bytes(c.in_bytes)}" in Doc(svg).all_text


def test_groups_of_one_move_nothing() -> None:
    mesh = make_mesh(("data", "model"), (2, 4))
    c = coll("ar.1", "all-reduce", (8,), (8,), tuple((d,) for d in range(8)), ())
    t = traffic_of(c, mesh)
    assert t.pattern == "none" and t.arrows == 0 and t.device_bytes == 0
    svg = traffic_svg(mesh, mesh_grid(mesh), c)
    assert not Doc(svg).with_class("sv-tarrow")
    assert "nothing moves" in Doc(svg).all_text


def test_no_groups_listed_means_one_ring_of_every_device() -> None:
    r = megatron_report()
    c = dataclasses.replace(r.collectives[0], groups=(), group_size=8)
    t = traffic_of(c, r.mesh)
    assert t.pattern == "ring" and [len(g) for g in t.links] == [8]


def test_links_across_panels_are_counted_not_drawn() -> None:
    mesh = make_mesh(("pipe", "data", "model"), (2, 2, 2))
    c = coll("ag.1", "all-gather", (8,), (16,), ((0, 4), (1, 5), (2, 6), (3, 7)), ("pipe",))
    svg = traffic_svg(mesh, mesh_grid(mesh), c)
    assert not Doc(svg).with_class("sv-tarrow")  # 'pipe' is the panel axis
    assert "8 of 8 arrows not drawn" in Doc(svg).all_text


def test_arrows_are_capped_on_big_groups() -> None:
    mesh = make_mesh(("x",), (32,))
    c = coll("a2a.1", "all-to-all", (32, 4), (32, 4), (tuple(range(32)),), ("x",))
    grid = mesh_grid(mesh, 64)
    assert sum(len(g) for g in drawable_links(traffic_of(c, mesh), grid)) <= MAX_ARROWS
    svg = traffic_svg(mesh, grid, c)
    assert len(Doc(svg).with_class("sv-tarrow")) <= MAX_ARROWS
    assert re.search(r"992 of 992 arrows not drawn", Doc(svg).all_text)
