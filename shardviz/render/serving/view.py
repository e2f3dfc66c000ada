"""The words and figures every serving view shows, computed once from the model objects."""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model.serving import ServingComparison, ServingResult, SliceChoice
from shardviz.model.units import format_bytes, format_seconds

__all__ = ["COLUMNS", "ResultRow", "result_row", "slice_lines", "summary_line"]

#: The columns of a serving comparison's table, in order.
COLUMNS: tuple[str, ...] = (
    "strategy",
    "mesh (data x sequence x tensor)",
    "weights",
    "KV cache",
    "working",
    "total / HBM",
    "collectives / step",
    "step",
    "bound",
    "tokens/s/chip",
    "largest batch",
)


@dataclass(frozen=True)
class ResultRow:
    """One strategy's cells (strings), and whether it fits (``None``: HBM unknown)."""

    cells: tuple[str, ...]
    fits: bool | None
    notes: tuple[str, ...]


def _opt(x: float | None, fmt: str = "{:,.0f}") -> str:
    return "—" if x is None else fmt.format(x)


def result_row(r: ServingResult) -> ResultRow:
    """A result's cells in :data:`COLUMNS` order."""
    mesh = " x ".join(str(n) for _, n in r.mesh)
    hbm = f" / {format_bytes(r.hbm_bytes)}" if r.hbm_bytes else ""
    count = sum(c.count for c in r.collectives)
    moved = sum(c.moved_bytes for c in r.collectives)
    colls = f"{count} ({format_bytes(moved)})" if count else "none"
    cells = (
        r.strategy,
        mesh,
        format_bytes(r.weight_bytes),
        format_bytes(r.kv_bytes) + (f" (x{r.kv_copies} copies)" if r.kv_copies > 1 else ""),
        "—" if r.working_bytes is None else format_bytes(r.working_bytes),
        format_bytes(r.total_bytes) + hbm,
        colls,
        "—" if r.step_seconds is None else format_seconds(r.step_seconds),
        r.bound or "—",
        _opt(r.tokens_per_second_per_chip),
        _opt(r.max_batch),
    )
    return ResultRow(cells, r.fits, r.notes)


def summary_line(c: ServingComparison) -> str:
    """What is served, and its cache per token."""
    first = c.results[0] if c.results else None
    what = (
        f"{first.mode}, batch {first.batch}, context {first.context:,}, weights "
        f"{first.weight_dtype}, cache {first.cache_dtype}, on {first.target}"
        if first
        else "no results"
    )
    return (
        f"Serving {c.model} ({c.num_params / 1e9:.1f} B parameters, weights "
        f"{format_bytes(c.weight_bytes_total)}): {what}. KV cache "
        f"{c.kv_bytes_per_token:,.0f} B per token."
    )


def slice_lines(s: SliceChoice) -> list[str]:
    """A slice choice in sentences: the slice, the bytes, the room left, what was tried."""
    lines = [
        f"Smallest {s.chip} slice for {s.model} (weights {s.weight_dtype}, cache "
        f"{s.cache_dtype}, {s.batch} x {s.context:,} tokens): {s.slice} ({s.chips} chips)",
        f"  weights {format_bytes(s.weight_bytes)} + cache {format_bytes(s.kv_bytes)} over "
        f"{s.chips} x {format_bytes(s.hbm_bytes_per_chip)} HBM; room for "
        f"{s.room_sequences} sequences of {s.context:,} beside the weights",
    ]
    for t in s.tried:
        verdict = "holds it" if t.fits else "too small"
        lines.append(
            f"  tried {t.name}: {format_bytes(t.needed_bytes)} per chip of "
            f"{format_bytes(t.hbm_bytes)}: {verdict}"
        )
    if s.checked:
        lines.append(f"  {s.checked}")
    return lines
