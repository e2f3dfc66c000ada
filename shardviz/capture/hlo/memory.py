"""The compiler's buffer assignment, read from its dump: bytes by role and by memory space.

``compiled.memory_analysis()`` leaves out what the TPU compiler keeps in other places (its
temp figure is 0 even when the program has scratch buffers in HBM). The dump's
``*-buffer-assignment.txt`` lists every allocation with its size, memory space (``color``;
none is the default, HBM on TPU and GPU) and what it holds; ``*-memory-usage-report.txt``
totals each memory space. Pure text in, numbers out (no jax).
"""

from __future__ import annotations

import re

#: ``allocation 3: size 1048576, parameter 0, shape |f32[256,1024]| at ShapeIndex {}:``
_ALLOCATION = re.compile(r"^allocation \d+: size (\d+)(.*)$", re.MULTILINE)
_COLOR = re.compile(r"\bcolor (\d+)\b")
#: ``Memory Space: default (color=0)`` then ``Total bytes: 4740608 (4.52MiB)``
_SPACE = re.compile(r"^Memory Space: (\S+) \(color=(\d+)\)\s*\nTotal bytes: (\d+)", re.MULTILINE)


def assigned_bytes(buffer_assignment: str) -> dict[str, int]:
    """Bytes the buffer assignment places in the default memory space, by role.

    Roles: ``argument`` (parameter allocations, also when an output is written into them),
    ``output`` (live-out results), ``temp`` (everything else: scratch, thread-local values,
    constants). Empty when the text holds no allocation.
    """
    out = {"argument": 0, "output": 0, "temp": 0}
    found = False
    for m in _ALLOCATION.finditer(buffer_assignment):
        attrs = m.group(2)
        color = _COLOR.search(attrs)
        if color and color.group(1) != "0":
            continue
        found = True
        size = int(m.group(1))
        if re.search(r"\bparameter \d+", attrs):
            out["argument"] += size
        elif "maybe-live-out" in attrs or "output shape is" in attrs:
            out["output"] += size
        else:
            out["temp"] += size
    return out if found else {}


def space_bytes(memory_usage_report: str) -> tuple[tuple[str, int], ...]:
    """(memory space, total bytes) per space of the compiler's memory-usage report, in its
    order (``default`` first)."""
    return tuple((m.group(1), int(m.group(3))) for m in _SPACE.finditer(memory_usage_report))
