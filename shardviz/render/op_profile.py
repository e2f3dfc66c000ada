"""The views of :class:`~shardviz.model.op_profile.OpProfile` (``sv.op_profile(report)``): the
step by module, by layer and its costliest ops, predicted and, from a profile, measured beside.

:func:`op_profile_view` computes what every view shows, once, as words: text, HTML and the
Explorer's tab (:meth:`OpProfileView.to_data`) draw the same cells.

Testable hooks: ``<div class="sv-root sv-opprofile" data-target="…">``; each table ``<table
class="sv-op-table" data-group="module|layer|op">``; each row ``<tr data-name="…">``.
"""

from __future__ import annotations

import textwrap
from dataclasses import asdict, dataclass
from typing import Any

from shardviz.model._codec import JsonMixin
from shardviz.model.op_profile import OpProfile, ProfiledOp, ProfileGroup
from shardviz.model.units import format_bytes, format_flops, format_percent, format_seconds, sig3
from shardviz.render.html import CSS, page
from shardviz.render.svg import esc
from shardviz.render.table import aligned_table

__all__ = ["OpProfileView", "op_profile_html", "op_profile_page", "op_profile_text",
           "op_profile_view"]  # fmt: skip

#: Ops listed, the costliest first.
TOP_OPS = 12
#: The widest a name cell gets in the text view (longer names are cut with ``…``).
NAME_WIDTH = 32
#: The text view's width.
WIDTH = 99

_CSS = (
    "<style>.sv-opprofile table.sv-op-table{border-collapse:collapse;margin:4px 0 12px}"
    ".sv-opprofile .sv-op-table td,.sv-opprofile .sv-op-table th{padding:1px 8px;"
    "text-align:right;font-variant-numeric:tabular-nums}"
    ".sv-opprofile .sv-op-table td:first-child,.sv-opprofile .sv-op-table th:first-child"
    "{text-align:left}.sv-opprofile .sv-op-table th{border-bottom:1px solid #d0d7de}"
    ".sv-opprofile .sv-op-notes{color:#57606a}</style>"
)


@dataclass(frozen=True)
class OpProfileView(JsonMixin):
    """The profile as cells of words: a headline, then three tables (by module, by layer, the
    costliest ops) sharing ``columns``, and the notes."""

    title: str
    headline: str
    columns: tuple[str, ...]
    modules: tuple[tuple[str, ...], ...]
    layers: tuple[tuple[str, ...], ...]
    op_columns: tuple[str, ...]
    ops: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]

    def to_data(self) -> dict[str, Any]:
        """The view as plain JSON data, rows as lists (what the Explorer's pane draws)."""
        return {k: _lists(v) for k, v in asdict(self).items()}


def _lists(value: Any) -> Any:
    return [_lists(v) for v in value] if isinstance(value, tuple) else value


def _share(part: float | None, whole: float | None) -> str:
    if part is None or not whole:
        return "—"
    return format_percent(part / whole)


def _time(s: float | None) -> str:
    return "—" if s is None else format_seconds(s)


def _ratio(measured: float | None, predicted: float | None) -> str:
    """Measured over predicted, ``3.2x``; ``—`` when either is missing or zero."""
    if measured is None or not predicted:
        return "—"
    return f"{sig3(measured / predicted)}x"


def _cells(p: OpProfile, name: str, seconds: float | None, measured: float | None,
           flops: float, hbm: float) -> tuple[str, ...]:  # fmt: skip
    row: tuple[str, ...] = (name, _time(seconds), _share(seconds, p.seconds), format_flops(flops),
           format_bytes(hbm))  # fmt: skip
    if p.measured:
        row += (_time(measured), _share(measured, p.measured_seconds), _ratio(measured, seconds))
    return row


def _group_row(p: OpProfile, g: ProfileGroup) -> tuple[str, ...]:
    name = f"{g.name} ({g.ops} op{'' if g.ops == 1 else 's'})"
    return _cells(p, name, g.seconds, g.measured_seconds, g.flops, g.hbm_bytes)


def _op_row(p: OpProfile, op: ProfiledOp) -> tuple[str, ...]:
    """An op's cells: no shares (its group's tables have them), its module and layer."""
    runs = f" x{op.runs}" if op.runs > 1 else ""
    row: tuple[str, ...] = (f"{op.name}{runs}", _time(op.seconds), format_flops(op.flops),
           format_bytes(op.hbm_bytes))  # fmt: skip
    if p.measured:
        row += (_time(op.measured_seconds),)
    return row + (op.module, op.layer)


def _costliest(p: OpProfile, top: int) -> list[ProfiledOp]:
    def cost(op: ProfiledOp) -> tuple[float, float, float]:
        return (op.seconds or 0.0, op.measured_seconds or 0.0, op.flops + op.hbm_bytes)

    return sorted(p.ops, key=cost, reverse=True)[:top]


def op_profile_view(p: OpProfile, top: int = TOP_OPS) -> OpProfileView:
    """What the views of ``p`` show, computed once."""
    on = f" on {p.target}" if p.target else ""
    columns: tuple[str, ...] = ("", "predicted", "share", "flops", "HBM bytes")
    if p.measured:
        columns += ("measured", "share", "ratio")
    headline = (
        f"{p.function}: {len(p.ops)} ops per device per step{on}, "
        f"{_time(p.seconds)} predicted ({_time(p.exposed_seconds)} of it communication "
        f"and copies exposed), {format_flops(p.flops)}, {format_bytes(p.hbm_bytes)} of HBM"
    )
    if p.measured:
        headline += f"; {_time(p.measured_seconds)} measured"
    return OpProfileView(
        title=f"Op profile of {p.function}{on}",
        headline=headline,
        columns=columns,
        modules=tuple(_group_row(p, g) for g in p.modules),
        layers=tuple(_group_row(p, g) for g in p.layers),
        op_columns=("", "predicted", "flops", "HBM bytes")
        + (("measured",) if p.measured else ())
        + ("module", "layer"),
        ops=tuple(_op_row(p, op) for op in _costliest(p, top)),
        notes=p.notes,
    )


def _cut(cell: str) -> str:
    return cell if len(cell) <= NAME_WIDTH else cell[: NAME_WIDTH - 1] + "…"


def op_profile_text(p: OpProfile) -> str:
    """The profile as text: the headline, the tables by module and by layer, the costliest
    ops, the notes."""
    v = op_profile_view(p)
    right = set(range(1, len(v.columns)))
    lines = [*textwrap.wrap(v.headline, WIDTH), "", "By module:"]
    lines += aligned_table(("module", *v.columns[1:]), v.modules, right, "  ")
    lines += ["", "By layer:"]
    layers = [(_cut(r[0]), *r[1:]) for r in v.layers]
    lines += aligned_table(("layer", *v.columns[1:]), layers, right, "  ")
    lines += ["", f"The {len(v.ops)} costliest ops:"]
    # The layer is left to the HTML view: the text stays under WIDTH.
    ops = [(_cut(r[0]), *r[1:-1]) for r in v.ops]
    lines += aligned_table(("op", *v.op_columns[1:-1]), ops, set(range(1, len(ops[0]) - 1))
                           if ops else set(), "  ")  # fmt: skip
    for n in v.notes:
        lines += textwrap.wrap(f"note: {n}", WIDTH, subsequent_indent="  ")
    return "\n".join(lines)


def _table(group: str, columns: tuple[str, ...], rows: tuple[tuple[str, ...], ...]) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join(
        f'<tr data-name="{esc(r[0])}">' + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>"
        for r in rows
    )
    return (f'<table class="sv-op-table" data-group="{esc(group)}"><thead><tr>{head}</tr>'
            f"</thead><tbody>{body}</tbody></table>")  # fmt: skip


def op_profile_html(p: OpProfile) -> str:
    """The profile as an HTML fragment: the same tables as the text, every name escaped."""
    v = op_profile_view(p)
    notes = "".join(f"<li>{esc(n)}</li>" for n in v.notes)
    return (
        f'{CSS}{_CSS}<div class="sv-root sv-opprofile" data-target="{esc(p.target)}">'
        f"<p><b>{esc(v.headline)}</b></p>"
        f"<h4>By module</h4>{_table('module', ('module', *v.columns[1:]), v.modules)}"
        f"<h4>By layer</h4>{_table('layer', ('layer', *v.columns[1:]), v.layers)}"
        f"<h4>The {len(v.ops)} costliest ops</h4>"
        f"{_table('op', ('op', *v.op_columns[1:]), v.ops)}"
        f'<ul class="sv-op-notes">{notes}</ul></div>'
    )


def op_profile_page(p: OpProfile) -> str:
    """The profile as one self-contained offline HTML document."""
    return page(op_profile_view(p).title, [op_profile_html(p)])
