"""The live view's readouts: the words and scales Python makes so that live.js only draws."""

from __future__ import annotations

import json
import math

import pytest

import shardviz.render.live.view as view
from shardviz.model._codec import to_data
from shardviz.model.units import format_bytes
from shardviz.render.live.format import time_note
from shardviz.render.live.view import (
    MAX_MEMORY_BARS,
    NO_MEMORY_NOTE,
    PART_OF_TRAIT,
    host_color,
    hosts_note,
    memory_scale,
    same_memory_words,
)
from shardviz.widgets.live.widget import LiveWidget


# The views as the widget syncs them (their JSON), which is what these tests read.
def head_readout(*args):
    return to_data(view.head_readout(*args))


def loss_readout(*args):
    return to_data(view.loss_readout(*args))


def time_readout(*args):
    return to_data(view.time_readout(*args))


def memory_readout(*args):
    return to_data(view.memory_readout(*args))


def memory_row_words(*args):
    return to_data(view.memory_row_words(*args))


def test_every_live_view_round_trips_through_json():
    for v in (
        view.head_readout(3, 10),
        view.loss_readout([2.0, None, 0.5]),
        view.time_readout([900.0, 2.0, 4.0], [{"process": 0, "step_ms": [9.0, 2.0, 3.0]}]),
        view.time_readout([]),
        view.memory_readout([{"device": 0, "bytes": 4096, "peak": 8192, "limit": 1 << 20}], ""),
    ):
        assert type(v).from_json(v.to_json()) == v


def test_head_readout_is_the_progress():
    assert head_readout(3, 100) == {"progress": "step 3 / 100"}
    assert head_readout(3, 0) == {"progress": "step 3"}


def test_loss_readout_labels_the_extremes_and_every_point():
    words = loss_readout([2.0, 1.5, 0.5])
    assert words["range"] == pytest.approx([0.5 - 1.5 * 0.04, 2.0 + 1.5 * 0.04])
    assert words["ticks"] == [{"value": 2.0, "text": "2"}, {"value": 0.5, "text": "0.5"}]
    assert words["titles"] == ["step 1: loss 2", "step 2: loss 1.5", "step 3: loss 0.5"]
    assert words["last"] == "loss 0.5"


def test_loss_readout_leaves_non_finite_losses_out_of_the_scale():
    words = loss_readout([1.0, None, math.nan])
    assert words["range"] == pytest.approx([0.95, 1.05])  # one finite value: padded by 5%
    assert words["ticks"] == [{"value": 1.0, "text": "1"}]  # top == bottom: one label
    assert words["titles"][1:] == ["step 2: loss not finite", "step 3: loss not finite"]
    assert words["last"] == "loss not finite"


def test_loss_readout_before_any_step():
    assert loss_readout([]) == {"range": [0.0, 1.0], "ticks": [], "titles": [], "last": ""}


def test_time_readout_leaves_the_compile_step_out():
    words = time_readout([900.0, 2.0, 4.0, 3.0])
    assert words["range"] == [0.0, 4.0 * 1.1]
    assert words["median"] == {"value": 3.0, "title": "median 3.00 ms"}
    assert words["note"] == time_note([900.0, 2.0, 4.0, 3.0])
    # The median (3.0) is 20 px below the slowest (4.0) on an 88 px plot: all three kept.
    assert [t["text"] for t in words["ticks"]] == ["0", "3.00", "4.00"]


def test_time_readout_drops_tick_labels_closer_than_10_px():
    words = time_readout([900.0, 2.0, 2.1])
    assert [t["text"] for t in words["ticks"]] == ["0", "2.05"]  # 2.10 would overlap 2.05


def test_time_readout_before_two_steps():
    for step_ms in ([], [900.0]):
        words = time_readout(step_ms)
        assert words["range"] == [0.0, 1.0] and words["median"] is None
        assert words["ticks"] == [{"value": 0.0, "text": "0"}]


def test_memory_scale_is_the_limit_only_when_every_device_has_one():
    assert memory_scale([{"bytes": 10, "limit": 100}, {"bytes": 20, "limit": 80}]) == 100.0
    assert memory_scale([{"bytes": 10, "limit": 100}, {"bytes": 20, "peak": 30}]) == 30.0
    assert memory_scale([]) == 1.0


def test_memory_readout_words_per_bar():
    memory = [
        {"device": 3, "bytes": 1536, "peak": 4096, "limit": 8192},
        {"device": 5, "bytes": 7, "peak": None, "limit": None},
    ]
    words = memory_readout(memory, "")
    assert words["rows"] == [
        {
            "label": "dev 3",
            "text": "1.5 KiB",
            "title": f"device 3: {format_bytes(1536, exact=True)}, peak 4 KiB of 8 KiB",
        },
        {"label": "dev 5", "text": "7 B", "title": "device 5: 7 B"},
    ]
    assert words["scale"] == 4096.0 and words["more"] == ""
    assert words["note"] == NO_MEMORY_NOTE
    assert memory_readout(memory, "from the compiler")["note"] == "from the compiler"


def test_memory_readout_summarises_devices_beyond_the_cap():
    words = memory_readout([{"device": i, "bytes": i} for i in range(MAX_MEMORY_BARS + 3)], "")
    assert len(words["rows"]) == MAX_MEMORY_BARS
    assert words["more"] == "… 3 more devices"


def test_identical_devices_are_one_bar_said_once():
    memory = [{"device": i, "bytes": 2048, "peak": 4096, "limit": None} for i in range(8)]
    words = memory_readout(memory, "from the compiler")
    assert words["rows"] == [
        {
            "label": "all 8",
            "text": "2 KiB",
            "title": f"same on every device (8 devices): {format_bytes(2048, exact=True)}, peak 4 KiB",
        }
    ]
    assert words["more"] == ""
    assert words["note"] == "same on every device (8 devices) · from the compiler"
    assert same_memory_words(memory[:1]) == ""  # one device is not "every device"
    memory[3] = {**memory[3], "peak": 8192}
    assert same_memory_words(memory) == "" and len(memory_readout(memory, "")["rows"]) == 8


def _fresh(view: LiveWidget) -> dict:
    """The readouts of a new view given the same state: what ``view.readouts`` should be."""
    return LiveWidget(**{name: getattr(view, name) for name in PART_OF_TRAIT}).readouts


def test_the_view_keeps_its_readouts_in_step_with_its_traits():
    view = LiveWidget(total_steps=4)
    assert view.readouts["head"] == {"progress": "step 0 / 4"}
    view.losses = [1.0, None]
    view.step_ms = [500.0, 2.0]
    view.step = 2
    view.memory = [{"device": 0, "bytes": 2048, "peak": None, "limit": None, "color": "#fff"}]
    view.memory_note = "note"
    assert view.readouts == _fresh(view)
    assert view.readouts["head"]["progress"] == "step 2 / 4"
    assert view.readouts["loss"]["last"] == "loss not finite"
    assert view.readouts["memory"]["rows"][0]["text"] == "2 KiB"
    json.dumps(view.get_state()["readouts"], allow_nan=False)  # plain JSON


def test_readouts_go_in_the_same_message_as_the_numbers():
    view = LiveWidget(total_steps=3)
    sent: list[set] = []
    view.send_state = lambda key=None: sent.append(set(key) if key is not None else set())
    with view.hold_sync():
        view.losses = [1.0, 0.5]
        view.step_ms = [3.0, 1.0]
        view.step = 2
    assert sent == [{"losses", "step_ms", "step", "readouts"}]


#: Two processes' own step times: process 1 is the slower one after the compile step.
HOSTS = [
    {"process": 0, "step_ms": [300.0, 4.0, 6.0, 5.0]},
    {"process": 1, "step_ms": [310.0, 5.0, 9.0, 6.0]},
]


def test_time_readout_scales_to_the_slowest_process_and_names_each_line():
    slowest = [max(a, b) for a, b in zip(HOSTS[0]["step_ms"], HOSTS[1]["step_ms"], strict=True)]
    words = time_readout(slowest, HOSTS)
    assert words["range"] == [0.0, pytest.approx(9.0 * 1.1)]
    assert words["hosts"] == [
        {"process": 0, "color": host_color(0), "title": "process 0: median 5.00 ms"},
        {"process": 1, "color": host_color(1), "title": "process 1: median 6.00 ms"},
    ]
    assert host_color(0) != host_color(1)
    # Medians 5 and 6 ms: the slower is 20% over the faster.
    assert words["note"] == (
        time_note(slowest) + " · the step is the slowest process's; per process: "
        "p0 5.00 ms, p1 6.00 ms, slowest 20% over fastest"
    )


def test_one_process_or_one_step_has_no_host_words():
    assert time_readout([300.0, 4.0])["hosts"] == []
    assert hosts_note(HOSTS[:1]) == ""
    assert hosts_note([{"process": p, "step_ms": [300.0]} for p in (0, 1)]) == ""
    compiling = time_readout([300.0], [{"process": 0, "step_ms": [300.0]}])
    assert compiling["hosts"][0]["title"] == "process 0: compiling"


def test_a_bar_of_a_multi_process_run_names_its_process():
    entry = {"device": 5, "bytes": 2048, "peak": None, "limit": None, "process": 1}
    words = memory_row_words(entry)
    assert words["label"] == "p1 d5"
    assert words["title"].startswith("device 5 (process 1): 2 KiB")
    assert memory_row_words({**entry, "process": None})["label"] == "dev 5"


def test_the_view_remakes_the_time_words_when_host_times_arrive():
    view = LiveWidget()
    view.step_ms = [310.0, 5.0, 9.0, 6.0]
    assert view.readouts["time"]["hosts"] == []
    view.host_step_ms = HOSTS
    assert [h["process"] for h in view.readouts["time"]["hosts"]] == [0, 1]
    assert "per process" in view.readouts["time"]["note"]
