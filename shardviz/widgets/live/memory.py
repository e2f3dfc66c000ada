"""The live view's memory panel as synced JSON: one entry per device, and a note on its source.

An entry is ``{"device", "bytes", "peak", "limit", "color"}``. The figures come from
:mod:`shardviz.capture.device_memory`: the devices' own statistics, or the compiler's estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardviz.capture.memory import peak_bytes
from shardviz.model.units import format_bytes
from shardviz.render.colors import device_color

Json = dict[str, Any]

#: What the bars mean when they come from the devices' own statistics.
DEVICE_NOTE = (
    "device memory_stats(): bytes in use (tick: peak in use), scaled to the limit if known"
)


def device_memory(devices: Sequence[Any], stats: Sequence[dict]) -> list[Json]:
    """Memory entries from the devices' own statistics: bytes in use, peak, limit."""
    return [
        {
            "device": int(d.id),
            "bytes": int(s.get("bytes_in_use", 0)),
            "peak": int(s["peak_bytes_in_use"]) if "peak_bytes_in_use" in s else None,
            "limit": int(s["bytes_limit"]) if "bytes_limit" in s else None,
            "color": device_color(int(d.id)),
        }
        for d, s in zip(devices, stats, strict=True)
    ]


def estimated_memory(
    devices: Sequence[Any], analysis: tuple[int, int, int, int]
) -> tuple[list[Json], str]:
    """Memory entries from the compiler's analysis (one SPMD figure, the same on each device).

    Args:
        devices: the program's devices.
        analysis: (argument, output, alias, temp) bytes per device, as
            :func:`shardviz.capture.device_memory.compiler_memory_bytes` reads them.

    Per device: arguments + outputs - aliased + temp, as :mod:`shardviz.capture.memory` counts.
    """
    arg, out, alias, temp = analysis
    total = peak_bytes(arg, out, alias, temp)
    entries = [
        {
            "device": int(d.id),
            "bytes": total,
            "peak": None,
            "limit": None,
            "color": device_color(int(d.id)),
        }
        for d in devices
    ]
    note = (
        "compiler's estimate per device (the backend gives no memory statistics): arguments "
        f"{format_bytes(arg)} + outputs {format_bytes(out)} − aliased {format_bytes(alias)} + "
        f"temp {format_bytes(temp)} = {format_bytes(total)}"
    )
    return entries, note
