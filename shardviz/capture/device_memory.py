"""The memory of the devices a compiled program runs on, read while training runs.

Two sources, as the live view shows them: the devices' own ``memory_stats()`` (GPU/TPU, read
again at every update) and, where the backend keeps none (CPU), the compiler's memory analysis
(one SPMD figure per device). Plain values out: the widgets never touch jax.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from shardviz.capture.memory import analysis_bytes, memory_stats


def program_devices_by_id(compiled: Any) -> list[Any]:
    """Every device a compiled program's input or output shardings use, sorted by id.

    Unlike :func:`shardviz.capture.compile.program_devices` (the device assignment, in its
    order), this is the set of devices holding the program's arrays; empty when none says.
    """
    devices: dict[int, Any] = {}
    for sharding in jax.tree.leaves((compiled.input_shardings, compiled.output_shardings)):
        for d in getattr(sharding, "device_set", ()):
            devices[d.id] = d
    return [devices[i] for i in sorted(devices)]


def devices_memory_stats(devices: Sequence[Any]) -> list[dict | None]:
    """Each device's ``memory_stats()`` (GPU/TPU); ``None`` where the backend gives none (CPU)."""
    return [memory_stats(d) for d in devices]


def compiler_memory_bytes(compiled: Any) -> tuple[int, int, int, int]:
    """(argument, output, alias, temp) bytes per device from the compiler's memory analysis.

    Raises:
        RuntimeError: the backend gives no memory analysis.
    """
    analysis = compiled.memory_analysis()
    if analysis is None:
        raise RuntimeError("the backend gives no memory analysis")
    return analysis_bytes(analysis)
