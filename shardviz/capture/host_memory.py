"""Host memory beside HBM: per-device host bytes from the compiler or from the shardings.

Arrays whose sharding names a host memory kind (``pinned_host``, ``unpinned_host``) and
values a remat policy offloads live in host memory, not HBM. The TPU and GPU compilers
report them apart (``memory_analysis()``'s ``host_*`` fields); the CPU compiler folds them
into its device figures and reports ``host_*`` as 0, so there shardviz counts the leaves
whose memory kind is a host one and takes them out of the peak. Pure: model in, model out.
"""

from __future__ import annotations

from dataclasses import replace

from shardviz.model import LeafBytes, MemoryReport
from shardviz.model.program import (
    CPU_PEAK,
    CPU_PEAK_LESS_HOST,
    GPU_HBM_PEAK,
    HOST_FROM_COMPILER,
    HOST_FROM_SHARDINGS,
)
from shardviz.model.units import format_bytes

__all__ = ["host_leaf_bytes", "with_host"]


def host_leaf_bytes(leaves: tuple[LeafBytes, ...]) -> int:
    """Per-device bytes of the leaves kept in host memory."""
    return sum(x.bytes for x in leaves if x.on_host)


def with_host(
    m: MemoryReport,
    platform: str,
    compiler_host: tuple[int, int, int, int] = (0, 0, 0, 0),
    offloaded: int = 0,
) -> MemoryReport:
    """``m`` with its host figures filled in.

    Args:
        m: the report, its ``by_leaf`` and ``out_leaves`` carrying each leaf's memory kind.
        platform: ``cpu`` takes the figures from the leaves (and leaves them out of a
            :data:`CPU_PEAK` peak); any other backend takes the compiler's.
        compiler_host: ``memory_analysis()``'s host (argument, output, alias, temp) bytes.
        offloaded: host buffers the program allocates itself (an offloaded scan's stack),
            which the compilers' host temp leaves out; dropped when a compiler's host temp
            is at least as large (it then holds them).

    The GPU compiler's own peak counts its host buffers too (h100, jax 0.10.2: peak =
    argument + output + temp + host output, within 0.02%); with host memory in use the HBM
    peak there is the buffer assignment's ``default`` memory space, as on TPU.
    """
    leaf_arg, leaf_out = host_leaf_bytes(m.by_leaf), host_leaf_bytes(m.out_leaves)
    if platform == "cpu":
        if not leaf_arg and not leaf_out and not offloaded:
            return m
        peak, definition = m.peak_bytes, m.peak_definition
        if definition == CPU_PEAK:
            peak, definition = max(0, peak - leaf_arg - leaf_out), CPU_PEAK_LESS_HOST
        return replace(
            m,
            peak_bytes=peak,
            peak_definition=definition,
            host_argument_bytes=leaf_arg,
            host_output_bytes=leaf_out,
            offloaded_bytes=offloaded,
            host_source=HOST_FROM_SHARDINGS,
        )
    arg, out, alias, temp = compiler_host
    if not any(compiler_host) and not leaf_arg and not leaf_out and not offloaded:
        return m
    if offloaded and temp >= offloaded:
        # A compiler whose host temp already holds the program's own host buffers (libtpu
        # with jax 0.10.2: act-offload's 128 KiB of layer inputs as temp 128 KiB, its host
        # memory space 128 KiB): adding them again would count them twice.
        offloaded = 0
    peak, definition = m.peak_bytes, m.peak_definition
    hbm = dict(m.by_space).get("default")
    if platform == "gpu" and hbm and m.compiler_peak_bytes == peak and (arg or out or temp):
        peak, definition = hbm, GPU_HBM_PEAK
    return replace(
        m,
        peak_bytes=peak,
        peak_definition=definition,
        offloaded_bytes=offloaded,
        host_argument_bytes=arg,
        host_output_bytes=out,
        host_alias_bytes=alias,
        host_temp_bytes=temp,
        host_source=HOST_FROM_COMPILER,
        host_mismatch=mismatch(leaf_arg, arg, leaf_out, out),
    )


def mismatch(leaf_arg: int, arg: int, leaf_out: int, out: int) -> str:
    """Where the leaves' memory kinds and the compiler's host figures disagree, in words
    (``""`` when they agree): e.g. a GPU compile that keeps a ``pinned_host`` argument in
    device memory."""
    parts = []
    for what, leaves, compiler in (("inputs", leaf_arg, arg), ("outputs", leaf_out, out)):
        if leaves == compiler:
            continue
        parts.append(
            f"{what} placed in host memory by their shardings: {format_bytes(leaves)} "
            f"({leaves:,} B) per device; the compiler keeps {format_bytes(compiler)} "
            f"({compiler:,} B) of {what} on host"
        )
    return "; ".join(parts)
