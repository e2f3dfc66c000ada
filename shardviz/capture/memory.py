"""Memory per device from the compiler's memory analysis, with the argument bytes by leaf."""

from __future__ import annotations

from typing import Any

import jax

from shardviz.model import DeviceMemory, LeafBytes, MemoryReport, TreeLayout


def memory_report(compiled: Any, arguments: TreeLayout) -> MemoryReport:
    """The per-device memory figures of a compiled SPMD program.

    The compiler reports one figure per device (SPMD: every device runs the same program).
    ``peak_bytes`` is computed as argument + output - alias + temp on every backend; the
    backend's own ``peak_memory_in_bytes`` is kept beside it (on CPU it leaves temp out).
    """
    ma = compiled.memory_analysis()
    arg, out, alias, temp = analysis_bytes(ma)
    code = int(ma.generated_code_size_in_bytes)
    compiler_peak = getattr(ma, "peak_memory_in_bytes", None)
    return MemoryReport(
        argument_bytes=arg,
        output_bytes=out,
        alias_bytes=alias,
        temp_bytes=temp,
        code_bytes=code,
        peak_bytes=peak_bytes(arg, out, alias, temp),
        compiler_peak_bytes=int(compiler_peak) if compiler_peak is not None else None,
        by_leaf=leaf_bytes(arguments),
    )


def analysis_bytes(ma: Any) -> tuple[int, int, int, int]:
    """(argument, output, alias, temp) bytes per device from ``compiled.memory_analysis()``."""
    return (
        int(ma.argument_size_in_bytes),
        int(ma.output_size_in_bytes),
        int(ma.alias_size_in_bytes),
        int(ma.temp_size_in_bytes),
    )


def peak_bytes(argument: int, output: int, alias: int, temp: int) -> int:
    """What one device holds at the program's peak: arguments + outputs - aliased + temp."""
    return argument + output - alias + temp


def leaf_bytes(arguments: TreeLayout) -> tuple[LeafBytes, ...]:
    """Each argument leaf's bytes on the device holding the most of it; role = argument name."""
    return tuple(
        LeafBytes(path=leaf.name, role=leaf.name.split("/", 1)[0], bytes=leaf.max_bytes_per_device)
        for leaf in arguments
    )


def memory_stats(device: Any) -> dict | None:
    """A device's own memory statistics (GPU/TPU); ``None`` where the backend keeps none (CPU)."""
    try:
        return device.memory_stats() or None
    except Exception:  # some backends raise instead of returning None
        return None


def device_stats(device_ids: list[int]) -> tuple[DeviceMemory, ...]:
    """The devices' own memory statistics after a live run (GPU/TPU; CPU gives none)."""
    out = []
    by_id = {d.id: d for d in jax.devices()}
    for i in device_ids:
        stats = memory_stats(by_id[i]) if i in by_id else None
        if not stats:
            continue
        out.append(
            DeviceMemory(
                device_id=i,
                bytes_in_use=int(stats.get("bytes_in_use", 0)),
                peak_bytes_in_use=int(stats.get("peak_bytes_in_use", 0)),
                bytes_limit=int(stats["bytes_limit"]) if "bytes_limit" in stats else None,
            )
        )
    return tuple(out)
