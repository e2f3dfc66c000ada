"""The live view's memory panel as synced JSON, from device statistics or the compiler's estimate."""

from __future__ import annotations

import json
from types import SimpleNamespace

from shardviz.render.colors import device_color
from shardviz.widgets.live.memory import DEVICE_NOTE, device_memory, estimated_memory

DEVICES = [SimpleNamespace(id=i) for i in (3, 5)]


def test_device_memory_takes_what_each_device_reports():
    stats = [
        {"bytes_in_use": 100, "peak_bytes_in_use": 250, "bytes_limit": 1000},
        {"bytes_in_use": 7},
    ]
    assert device_memory(DEVICES, stats) == [
        {"device": 3, "bytes": 100, "peak": 250, "limit": 1000, "color": device_color(3)},
        {"device": 5, "bytes": 7, "peak": None, "limit": None, "color": device_color(5)},
    ]
    json.dumps(device_memory(DEVICES, stats), allow_nan=False)
    assert "memory_stats()" in DEVICE_NOTE


def test_estimated_memory_is_one_spmd_figure_per_device():
    entries, note = estimated_memory(DEVICES, (4096, 2048, 1024, 512))
    assert [e["device"] for e in entries] == [3, 5]
    assert {e["bytes"] for e in entries} == {4096 + 2048 - 1024 + 512}
    assert all(e["peak"] is None and e["limit"] is None for e in entries)
    assert note.startswith("compiler's estimate per device")
    assert "arguments 4 KiB + outputs 2 KiB − aliased 1 KiB + temp 512 B = 5.5 KiB" in note
