"""``report.traffic(...)``: one collective's who-sends-to-whom picked out of a report, printed
and drawn on the mesh; and the error that says what to pass when the ledger has no such one."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from shardviz.errors import ShardvizError
from shardviz.model import CollectiveTraffic
from shardviz.render.traffic_view import (
    collective_traffic_html,
    collective_traffic_page,
    collective_traffic_text,
)

from .report_fixtures import NASTY, QUOTES, megatron_report, nasty_report, shard_map_report
from .test_html import Doc, assert_offline


def _arrows(html: str) -> Counter[int]:
    """Arrows per group in the drawing."""
    return Counter(int(a["data-group"] or 0) for a in Doc(html).with_class("sv-tarrow"))


def test_a_kind_picks_the_first_collective_of_that_kind() -> None:
    r = shard_map_report()
    t = r.traffic("all-to-all")
    assert isinstance(t, CollectiveTraffic)
    assert t.collective is r.collectives[2] and t.index == 2 and t.mesh == r.mesh
    assert t.function == "ring_step" and t.kind == "all-to-all" and t.group_size == 4
    # The other ways to name it: jax's spelling, its position (also from the end), its name.
    assert r.traffic("all_to_all").index == 2
    assert r.traffic(2).collective is r.traffic(-2).collective is t.collective
    assert r.traffic("all-to-all.1").index == 2
    assert r.traffic("all-gather", axes="data").index == 3
    assert r.traffic("all-gather", axes=("data",)).index == 3


def test_all_to_all_is_drawn_as_every_ordered_pair_in_each_group() -> None:
    r = shard_map_report()
    t = r.traffic("all-to-all")
    html = t._repr_html_()
    assert html == collective_traffic_html(t)
    assert_offline(html)
    doc = Doc(html)
    (root,) = doc.with_class("sv-trafficview")
    assert root["data-kind"] == "all-to-all" and root["data-axes"] == "model"
    assert root["data-index"] == "2"
    n = t.group_size
    assert _arrows(html) == {0: n * (n - 1), 1: n * (n - 1)}  # 12 arrows per group of 4
    links = {a["data-link"] for a in doc.with_class("sv-tarrow")}
    assert links == {f"{a} {b}" for g in r.collectives[2].groups for a in g for b in g if a != b}
    (fig,) = doc.with_class("sv-traffic")
    assert fig["data-pattern"] == "all-pairs"
    # By hand: a float32[32, 128] operand is 16 KiB; a quarter (4 KiB) to each of the 3 others.
    assert int(fig["data-step-bytes"] or 0) == 4096
    assert int(fig["data-device-bytes"] or 0) == 3 * 4096 == t.collective.moved_bytes
    text = doc.all_text
    assert "all-to-all over ('model',) · report.collectives[2] of ring_step" in text
    assert "each device sends 4 KiB (1/4 of its 16 KiB operand) to each of the 3 others" in text
    assert "each arrow: 4 KiB" in text
    assert [d.get("data-device") for d in doc.with_class("sv-tdev")] == [str(d) for d in range(8)]


def test_the_text_view_tabulates_who_sends_what_to_whom() -> None:
    t = shard_map_report().traffic("all-to-all")
    text = str(t)
    assert text == collective_traffic_text(t)
    lines = text.splitlines()
    assert lines[0] == "all-to-all over ('model',) · report.collectives[2] of ring_step"
    assert "group 0: d0 d1 d2 d3" in lines and "group 1: d4 d5 d6 d7" in lines
    row = next(line for line in lines if line.strip().startswith("d1 "))
    assert row.split() == ["d1", "4", "KiB", "·", "4", "KiB", "4", "KiB"]
    assert all(len(line) <= 100 for line in lines)


def test_a_ring_is_printed_in_its_order_and_drawn_with_n_arrows() -> None:
    t = shard_map_report().traffic("all-reduce")
    assert "group 0: d0 → d1 → d2 → d3 → d0" in str(t)
    assert _arrows(t._repr_html_()) == {0: 4, 1: 4}


def test_permute_lists_its_pairs() -> None:
    t = shard_map_report().traffic("collective-permute")
    assert "d0 → d1, d1 → d2, d2 → d3, d3 → d0" in str(t)


def test_without_a_mesh_the_traffic_is_said_in_words() -> None:
    r = dataclasses.replace(shard_map_report(), mesh=None)
    html = r.traffic("all-to-all")._repr_html_()
    assert not Doc(html).with_class("sv-tarrow")
    assert "no mesh to draw on" in Doc(html).all_text
    assert "to each of the 3 others" in Doc(html).all_text


def test_every_model_string_is_escaped() -> None:
    t = nasty_report().traffic("all-reduce")
    html = t._repr_html_()
    assert_offline(html)
    assert "<script>" not in html and "&lt;script&gt;" in html
    (root,) = Doc(html).with_class("sv-trafficview")
    assert root["data-axes"] == NASTY  # escaped in the markup, the same string once parsed
    assert f"of {NASTY}{QUOTES}" in Doc(html).all_text
    assert NASTY in str(t)  # text is text: nothing to escape


def test_it_round_trips_through_json() -> None:
    t = shard_map_report().traffic("all-to-all")
    assert CollectiveTraffic.from_json(t.to_json()) == t


def test_save_html_writes_the_page(tmp_path: Path) -> None:
    t = megatron_report().traffic(0)
    path = t.save_html(str(tmp_path / "traffic.html"))
    page = Path(path).read_text(encoding="utf-8")
    assert page == collective_traffic_page(t)
    assert page.startswith("<!doctype html>") and "sv-trafficview" in page


@pytest.mark.parametrize(
    ("which", "axes", "says"),
    [
        ("reduce-scatter", None, "ring_step has no reduce-scatter (its ledger has: all-reduce ×1"),
        ("all-to-all", ("data",), "no all-to-all of ring_step runs over ('data',)"),
        ("alltoal", None, "'alltoal' is neither a collective kind"),
        (4, None, "ring_step has 4 collectives (positions 0 to 3)"),
        (-5, None, "ring_step has 4 collectives"),
        (True, None, "True names no collective"),
    ],
)
def test_a_collective_not_in_the_ledger_is_an_error_that_says_what_to_pass(
    which, axes, says
) -> None:
    with pytest.raises(ShardvizError) as err:
        shard_map_report().traffic(which, axes=axes)
    message = str(err.value)
    assert message.startswith("report.traffic(")
    assert says in message
    assert "Fix: pass " in message


def test_the_axes_error_names_the_axes_to_pass() -> None:
    with pytest.raises(ShardvizError, match=r"Fix: pass axes=\('model',\)"):
        shard_map_report().traffic("all-to-all", axes="data")


def test_a_program_with_no_collectives_says_nothing_moves() -> None:
    r = dataclasses.replace(shard_map_report(), collectives=())
    with pytest.raises(ShardvizError, match="has no collectives: nothing moves"):
        r.traffic("all-to-all")
