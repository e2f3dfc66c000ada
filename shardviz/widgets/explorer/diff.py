"""What changed between two reports of one function, for the Explorer after an edit.

Pure (no widgets, no jax). A collective is known across recompiles by its identity
(:func:`collective_key`: kind, mesh axes and source frames), never by its ledger position,
which shifts as soon as the compiler adds or drops one. :func:`same_collective` finds the
selected collective again in a new ledger; :func:`change_words` says in one line what an
edit did to the ledger and to memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

from shardviz.model.program import Collective, Report
from shardviz.model.units import format_bytes
from shardviz.render.report.view import axes_repr

__all__ = ["change_words", "collective_key", "same_collective"]

#: Kinds named in the change line before ``… N more``.
MAX_NAMED = 4


def collective_key(c: Collective) -> Hashable:
    """What makes a collective the same one after a recompile: kind, axes and source frames."""
    frames = tuple((f.file, f.line, f.function) for f in c.source.frames) if c.source else ()
    return (c.kind, tuple(c.axes), frames)


def same_collective(before: Report, after: Report, position: int) -> int:
    """Where ``before``'s collective at ``position`` is in ``after``'s ledger, or -1.

    Several collectives with one identity are matched in order (the second such before is the
    second such after); a position outside ``before``'s ledger gives -1.
    """
    if not 0 <= position < len(before.collectives):
        return -1
    key = collective_key(before.collectives[position])
    rank = sum(1 for c in before.collectives[:position] if collective_key(c) == key)
    matches = [i for i, c in enumerate(after.collectives) if collective_key(c) == key]
    return matches[rank] if rank < len(matches) else -1


def _kind_axes(c: Collective) -> str:
    return f"{c.kind} over {axes_repr(c.axes)}" if c.axes else f"{c.kind} (no mesh axis)"


def _counted(counts: Counter[str], sign: str) -> list[str]:
    return [f"{sign}{n} {what}" if n > 1 else f"{sign}{what}" for what, n in counts.items()]


def _bytes_change(label: str, old: int, new: int) -> str:
    if old == new:
        return f"{label} {format_bytes(new)} (unchanged)"
    sign = "+" if new > old else "−"
    return (
        f"{label} {format_bytes(old)} → {format_bytes(new)} ({sign}{format_bytes(abs(new - old))})"
    )


def change_words(before: Report, after: Report) -> str:
    """One line: collectives added and removed (by kind and axes), bytes moved per device and
    the memory peak, from ``before`` to ``after``.

    E.g. ``since the last configuration: +all-reduce over ('data',), −2 all-reduce over
    ('model',) · moved per device 3 MiB → 1 MiB (−2 MiB) · peak 6 MiB → 4 MiB (−2 MiB)``.
    """
    old = Counter(_kind_axes(c) for c in before.collectives)
    new = Counter(_kind_axes(c) for c in after.collectives)
    changes = _counted(new - old, "+") + _counted(old - new, "−")
    if len(changes) > MAX_NAMED:
        changes = [*changes[:MAX_NAMED], f"… {len(changes) - MAX_NAMED} more"]
    ledger = ", ".join(changes) if changes else "the same collectives"
    moved = _bytes_change(
        "moved per device",
        sum(c.moved_bytes for c in before.collectives),
        sum(c.moved_bytes for c in after.collectives),
    )
    peak = _bytes_change("peak", before.memory.peak_bytes, after.memory.peak_bytes)
    return f"since the last configuration: {ledger} · {moved} · {peak}"
