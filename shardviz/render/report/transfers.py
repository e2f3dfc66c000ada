"""The report's host <-> device transfers: one view object read by the text and HTML views.

Each transfer the compiler scheduled between HBM and host memory, per device: what it is for
(an argument in host memory brought in, an output sent out, an offloaded value), its bytes
per run and per step, the runs, the value and the user's line; totals each way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shardviz.model.program import Report
from shardviz.model.units import format_bytes
from shardviz.render.svg import esc
from shardviz.render.table import aligned_table


@dataclass(frozen=True)
class TransferRow:
    name: str
    role: str
    direction: str
    bytes: int
    per_run: str
    runs: str
    per_step: str
    value: str
    where: str


@dataclass(frozen=True)
class TransfersSection:
    """Host transfers per device: rows in schedule order, the totals each way, the requests
    the program made, and a note on how they were counted."""

    rows: tuple[TransferRow, ...]
    to_host: str
    to_device: str
    to_host_bytes: int
    to_device_bytes: int
    note: str


def transfers_section(report: Report) -> TransfersSection | None:
    """The section, or ``None`` for a program that moves nothing to or from host memory."""
    ts = report.host_transfers
    if not ts:
        return None
    rows = tuple(
        TransferRow(
            name=t.name,
            role=t.role,
            direction=t.direction,
            bytes=t.bytes_per_step,
            per_run=format_bytes(t.bytes),
            runs=f"{t.runs}{'+' if t.lower_bound else ''}",
            per_step=format_bytes(t.bytes_per_step),
            value=t.value,
            where=t.where,
        )
        for t in ts
    )
    out = sum(t.bytes_per_step for t in ts if t.direction == "to host")
    back = sum(t.bytes_per_step for t in ts if t.direction == "to device")
    lower = any(t.lower_bound for t in ts)
    return TransfersSection(
        rows=rows,
        to_host=format_bytes(out),
        to_device=format_bytes(back),
        to_host_bytes=out,
        to_device_bytes=back,
        note="runs per step: each loop's trips multiplied"
        + ("; +: in a loop of unknown count, counted once (a lower bound)" if lower else ""),
    )


_HEAD = ["transfer", "for", "direction", "per run", "runs", "per step", "value", "line"]


def _cells(r: TransferRow) -> list[str]:
    return [r.name, r.role, r.direction, r.per_run, r.runs, r.per_step, r.value, r.where]


def transfers_lines(v: TransfersSection) -> list[str]:
    """The section as text lines."""
    lines = [f"Host transfers per device · {v.to_host} to host · {v.to_device} to device per step"]
    rows: Sequence[Sequence[str]] = [_cells(r) for r in v.rows]
    lines.extend(aligned_table(_HEAD, rows, right={3, 4, 5}, indent="  "))
    lines.append(f"  {v.note}")
    return lines


def transfers_html(v: TransfersSection) -> str:
    """The section as an HTML fragment (every string escaped)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in _HEAD)
    body = "".join(
        f'<tr class="sv-transfer" data-role="{esc(r.role)}" data-direction="{esc(r.direction)}"'
        f' data-bytes="{r.bytes}">' + "".join(f"<td>{esc(c)}</td>" for c in _cells(r)) + "</tr>"
        for r in v.rows
    )
    return (
        f'<section class="sv-transfers" data-to-host="{v.to_host_bytes}" '
        f'data-to-device="{v.to_device_bytes}"><h4>Host transfers per device'
        f'<span class="sv-dim">{esc(v.to_host)} to host · {esc(v.to_device)} to device per '
        f'step</span></h4><table class="sv-t"><tr>{head}</tr>{body}</table>'
        f'<div class="sv-note">{esc(v.note)}</div></section>'
    )
