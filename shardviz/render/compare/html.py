"""A :class:`~shardviz.model.Comparison` of strategies as one self-contained HTML fragment.

Scoped ``<style>``, inline SVG, no script and no URL, so it works in a notebook, a saved
notebook or a file opened offline. Every string from the model is escaped where it enters
the markup. The words and figures come from :func:`~.view.comparison_view`, computed once
and read by the text view too, so the text and HTML views agree.

Everything is laid out to fit a notebook's output column at 1280 px with the file browser open
(about 790 px, :data:`FIT_W`): the strategies' figures are two tables, memory (``table.sv-cmp-
table``) then collectives, time and check (``table.sv-cmp-colltable``), their text cells wrap and
their figures never do; the charts are drawn to that width and scale down past it.

Testable hooks: one ``<tr class="sv-strategy" data-strategy="dp">`` per strategy in the
memory table and one ``<tr class="sv-cmp-collrow" data-strategy="dp">`` in the collectives
table; a strategy whose argument bytes do not reconcile has its figures in ``<div
class="sv-cmp-reconnotes">`` under the memory table; on the memory chart one ``<g class="sv-cmp-memrow" data-strategy="dp"
data-total="…">`` per strategy holding its segments ``<rect class="sv-mem"
data-component="params" data-bytes="…">`` (they add up to ``data-total``); on the transfer
chart one ``<rect class="sv-moved" data-strategy="dp" data-kind="all-reduce" data-bytes="…">``
per strategy and kind it uses, and on the chart by mesh axes one ``<rect class="sv-moved-axes"
data-strategy="dp" data-axes="data,model" data-bytes="…">`` per strategy and tuple of axes
(``data-axes=""``: no axis); the compiler's temp is ``<td class="sv-cmp-temp" data-bytes="…">``
and a strategy whose temp is smaller than its gradients gets ``<div class="sv-cmp-tempnote"
data-strategy="dp">`` under the memory chart; a pipeline strategy's schedule chart
(:mod:`shardviz.render.schedule.html`) sits in ``<div class="sv-cmp-sched" data-strategy="pp">``;
the loss check is ``sv-cmp-check`` with ``sv-ok``, ``sv-bad``
or ``sv-none``; each full report sits in ``<details class="sv-cmp-report" data-strategy="dp">``.

With estimates (reports with a target): rows, bars and cards of a strategy on a target also
carry ``data-target="v5e:2x4"`` (the target's name) and, when the comparison spans several
targets, are labelled ``fsdp @ TPU v5e 2x4``; the table gains ``<td class="sv-cmp-est"
data-seconds="…" data-bound="…">`` and ``<td class="sv-cmp-fit" data-fits="1|0">``; the memory
chart draws ``<path class="sv-cmp-hbm" data-hbm="…">`` at the target's HBM per device (or, far
above the bars, ``<g class="sv-cmp-hbm-off" data-hbm="…">`` at the chart's edge). A strategy
whose estimate is no bound (a kernel not counted) has ``data-bounded="0"`` on its
``sv-cmp-estrow``, ``<span class="sv-cmp-notbound">†</span>`` after its step and MFU, and a line
in ``<div class="sv-cmp-notes sv-cmp-notbounds">`` under the table naming the kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from shardviz.model.compare import Comparison
from shardviz.render.colors import KIND_COLORS, OTHER_KIND
from shardviz.render.compare.host import (
    HOST_COLOR,
    HOST_LABEL,
    HOST_MEANING,
    HostView,
    roles_str,
)
from shardviz.render.compare.view import (
    CollectiveRow,
    ComparisonView,
    EstimateView,
    PartView,
    Scale,
    Series,
    StrategyView,
    Traffic,
    comparison_view,
)
from shardviz.render.html import CSS, MONO, SANS
from shardviz.render.report.view import ESTIMATE_WORDS
from shardviz.render.schedule.html import schedule_html
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import esc, svg_num, svg_text, text_width

COMPARE_CSS = stylesheet("compare.css", SANS=SANS, MONO=MONO)

_KIND_CSS = "".join(
    f".sv-compare .sv-cmp-k{i}{{color:{fg};background:{bg}}}"
    for i, (fg, bg) in enumerate([*KIND_COLORS.values(), OTHER_KIND])
)
STYLE = "<style>" + (CSS + "\n" + COMPARE_CSS + _KIND_CSS).replace("\n", "") + "</style>"

#: Width of the bar area of both charts at most, in px.
CHART_W = 560.0
#: Width a chart is laid out to fit (a notebook's output column at 1280 px with the file
#: browser open is about 790 px, less the view's padding); the memory chart's bar area
#: shrinks to fit it, down to :data:`MIN_CHART_W`, and any chart still wider scales down.
FIT_W = 720.0
MIN_CHART_W = 300.0
#: Widest room for a strategy's name under its bars on a transfer chart, px.
MAX_NAME_W = 120.0
MEM_ROW_H = 24.0
MEM_ROW_GAP = 12.0
HOST_BAR_H = 5.0
MOVED_H = 170.0


def _kind_class(kind: str) -> str:
    i = list(KIND_COLORS).index(kind) if kind in KIND_COLORS else len(KIND_COLORS)
    return f"sv-cmp-k{i}"


def _bytes_cell(n: int, text: str, cls: str = "sv-cmp-r") -> str:
    return f'<td class="{cls}" title="{n:,} B">{esc(text)}</td>'


def _cross_cell(s: StrategyView, n: int, text: str) -> str:
    """Bytes across hosts (``data-cross-host``), or ``—`` on a mesh within one host."""
    if not s.hosts:
        return '<td class="sv-cmp-r sv-cmp-dim" title="one host">—</td>'
    return f'<td class="sv-cmp-r" data-cross-host="{n}" title="{n:,} B">{esc(text)}</td>'


def _axes_span(s: StrategyView, t: Traffic, hosts: bool) -> str:
    """``data ×2 · 3 MiB`` (`` · 1 MiB across hosts`` on a mesh over several hosts)."""
    text = f"{t.label} ×{t.count} · {t.moved_str}"
    if hosts and s.hosts:
        text += f" · {t.cross_str} across hosts"
    return f'<span class="sv-cmp-axes" title="{t.moved:,} B">{esc(text)}</span>'


def _th(text: str, cls: str = "", extra: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f"<th{c}{extra}>{text}</th>"


def _check_badge(s: StrategyView) -> str:
    cls = {"OK": "sv-ok", "MISMATCH": "sv-bad"}.get(s.loss_word, "sv-none")
    return (
        f'<span class="sv-cmp-badge sv-cmp-check {cls}" title="{esc(s.loss_str)}">'
        f"{esc(s.loss_word)}</span>"
    )


def _reconciled_cell(s: StrategyView) -> str:
    """A badge; the exact figures of a "no" are said under the table (:func:`_reconcile_notes`),
    so the column stays narrow."""
    tip = esc(s.reconcile_line)
    if s.reconciled:
        return (
            f'<td data-reconciled="1"><span class="sv-cmp-badge sv-ok" title="{tip}">'
            f"yes</span></td>"
        )
    return (
        f'<td data-reconciled="0"><span class="sv-cmp-badge sv-bad" title="{tip}">no *</span></td>'
    )


def _reconcile_notes(view: ComparisonView) -> str:
    """Under the memory table: the strategies whose argument bytes do not reconcile, with
    both figures exactly (what their "no *" badges stand for), strategies with the same
    figures on one line and a reason they share said once
    (:attr:`.view.ComparisonView.reconcile_notes`)."""
    notes = view.reconcile_notes
    if not notes:
        return ""
    items = "".join(
        f'<div data-strategy="{esc(", ".join(n.strategies))}"><b>{esc(", ".join(n.labels))}</b> '
        f"{esc(n.text)}</div>"
        for n in notes
    )
    return (
        '<div class="sv-cmp-line sv-cmp-reconnotes">* reconciled: whether the bytes of the '
        "arguments' leaves (the arrays you pass) add up to the compiler's argument bytes"
        f"{items}</div>"
    )


def _target_attr(s: StrategyView) -> str:
    """`` data-target="v5e:2x4"`` for a result with a target, else ``""``."""
    return f' data-target="{esc(s.target_name)}"' if s.target_name is not None else ""


# --------------------------------------------------------------------------------------------
# The table


def _memory_head(view: ComparisonView, with_mesh: bool) -> list[str]:
    """The memory table's head: memory per device by component, the peak, the compiler's
    temp, whether the argument bytes reconcile."""
    comps = view.components
    head1 = (
        "<tr>"
        + _th("")
        + _th("memory per device", "sv-cmp-group sv-cmp-sep", f' colspan="{len(comps) + 3}"')
        + "</tr>"
    )
    cells = [_th("strategy" + (" · mesh" if with_mesh else ""))]
    for i, comp in enumerate(comps):
        cls = "sv-cmp-r sv-cmp-comp" + (" sv-cmp-sep" if i == 0 else "")
        label = esc(comp.label).replace("/", "/<wbr/>")
        style = f' style="box-shadow:inset 0 -3px {comp.color}"'
        cells.append(_th(label, cls, f' title="{esc(comp.meaning)}"{style}'))
    cells += [
        _th("peak", "sv-cmp-r"),
        _th(
            "compiler temp",
            "sv-cmp-r sv-cmp-comp",
            " title=\"the compiler's temp (scratch): "
            'gradients, activations and intermediates; part of the peak"',
        ),
        _th("reconciled", extra=' title="argument bytes: sum of the leaves vs the compiler"'),
    ]
    return ['<table class="sv-cmp-t sv-cmp-table"><thead>', head1, "<tr>", *cells, "</tr>",
            "</thead><tbody>"]  # fmt: skip


def _collectives_head(view: ComparisonView, with_mesh: bool) -> list[str]:
    """The second table's head: collectives per step, the step time, the loss check."""
    hosts = view.multi_host
    head1 = (
        "<tr>"
        + _th("")
        + _th("collectives per step", "sv-cmp-group sv-cmp-sep", f' colspan="{3 + hosts}"')
        + _th("time and check", "sv-cmp-group sv-cmp-sep", ' colspan="2"')
        + "</tr>"
    )
    cells = [
        _th("strategy" + (" · mesh" if with_mesh else "")),
        _th("count", "sv-cmp-r sv-cmp-sep"),
        _th("moved", "sv-cmp-r"),
        *(
            [_th("across hosts", "sv-cmp-r", ' title="the part of moved that crosses hosts"')]
            if hosts
            else []
        ),
        _th("by mesh axes"),
        _th("step", "sv-cmp-r sv-cmp-sep", ' title="median step time"'),
        _th("loss", extra=' title="the loss against an unsharded run"'),
    ]
    return ['<table class="sv-cmp-t sv-cmp-colltable"><thead>', head1, "<tr>", *cells,
            "</tr></thead><tbody>"]  # fmt: skip


def _name_cell(view: ComparisonView, s: StrategyView, with_mesh: bool) -> str:
    """A strategy's first cell: its name, its target, its title and its mesh, one a line."""
    name = f'<span class="sv-cmp-name">{esc(s.strategy)}</span>'
    if view.by_target and s.target_label:
        name += f'<span class="sv-cmp-target">@ {esc(s.target_label)}</span>'
    if s.title and s.title != s.strategy:
        name += f'<span class="sv-cmp-sub" title="{esc(s.title)}">{esc(s.title)}</span>'
    if with_mesh:
        name += f'<span class="sv-cmp-mesh">{esc(s.mesh)}</span>'
    return f'<td class="sv-cmp-who">{name}</td>'


def _memory_table_row(view: ComparisonView, s: StrategyView, with_mesh: bool) -> str:
    """A strategy's row of the memory table (``tr.sv-strategy``)."""
    row = [_name_cell(view, s, with_mesh)]
    for i, p in enumerate(s.memory):
        row.append(_bytes_cell(p.bytes, p.text, "sv-cmp-r" + (" sv-cmp-sep" if i == 0 else "")))
    row.append(_bytes_cell(s.peak, s.peak_str, "sv-cmp-r sv-cmp-peak"))
    row.append(
        f'<td class="sv-cmp-r sv-cmp-temp" data-bytes="{s.temp}" '
        f'title="{esc(s.temp_line)}">{esc(s.temp_str)}</td>'
    )
    row.append(_reconciled_cell(s))
    return (
        f'<tr class="sv-strategy" data-strategy="{esc(s.strategy)}"{_target_attr(s)}>'
        + "".join(row)
        + "</tr>"
    )


def _collectives_row(view: ComparisonView, s: StrategyView, with_mesh: bool) -> str:
    """A strategy's row of the collectives table (``tr.sv-cmp-collrow``)."""
    hosts = view.multi_host
    row = [_name_cell(view, s, with_mesh)]
    row.append(f'<td class="sv-cmp-r sv-cmp-sep">{s.count}</td>')
    row.append(_bytes_cell(s.moved, s.moved_str))
    if hosts:
        row.append(_cross_cell(s, s.cross, s.cross_str))
    axes = "".join(_axes_span(s, t, hosts) for t in s.axes_used)
    row.append(f"<td>{axes or '<span class=sv-cmp-dim>none</span>'}</td>")
    t, slowest = s.step_seconds, view.slowest_step
    bar = (
        f'<span class="sv-cmp-minibar" style="width:{60 * t / slowest:.1f}px"></span>'
        if t and slowest
        else ""
    )
    row.append(f'<td class="sv-cmp-r sv-cmp-sep">{esc(s.step_str)}{bar}</td>')
    row.append(f"<td>{_check_badge(s)}</td>")
    return (
        f'<tr class="sv-cmp-collrow" data-strategy="{esc(s.strategy)}"{_target_attr(s)}>'
        + "".join(row)
        + "</tr>"
    )


def _scrolled(table: str) -> str:
    """A wide table in a box of its own that scrolls sideways, so its scrollbar sits right
    under it in a narrow notebook column, not under the whole comparison."""
    return f'<div class="sv-cmp-scroll">{table}</div>'


def _comparison_tables(view: ComparisonView) -> str:
    """Two tables, each narrow enough for a notebook's output column at 1280 px: memory per
    device (with the reconciliation's footnote), then collectives, time and the check."""
    with_mesh = view.mesh_line is None  # one mesh for all is named above the table
    memory = _memory_head(view, with_mesh)
    memory += [_memory_table_row(view, s, with_mesh) for s in view.strategies]
    memory.append("</tbody></table>")
    colls = _collectives_head(view, with_mesh)
    colls += [_collectives_row(view, s, with_mesh) for s in view.strategies]
    colls.append("</tbody></table>")
    return _scrolled("".join(memory)) + _reconcile_notes(view) + _scrolled("".join(colls))


# --------------------------------------------------------------------------------------------
# Estimates on targets


def _estimate_table(view: ComparisonView) -> str:
    """Per target (a group of rows each), each strategy's estimated step, its parts, the MFU
    and whether its peak fits the target's HBM; strategies without an estimate at the end."""
    groups = view.target_groups
    head = (
        "<tr>" + _th("strategy") + _th("step ≥", "sv-cmp-r", f' title="{ESTIMATE_WORDS}"')
        + _th("bound") + _th("MFU ≤", "sv-cmp-r", ' title="model-FLOPs utilisation the bound '
        'allows"') + _th("compute", "sv-cmp-r sv-cmp-sep") + _th("memory", "sv-cmp-r")
        + _th("collectives", "sv-cmp-r") + _th("HBM", "sv-cmp-sep",
        ' title="the peak against the target\'s HBM per device"') + "</tr>"
    )  # fmt: skip
    out = ['<table class="sv-cmp-t sv-cmp-esttable"><thead>', head, "</thead>"]
    for group in groups:
        out.append(f'<tbody class="sv-cmp-estgroup" data-target="{esc(group.target)}">')
        if len(groups) > 1:
            out.append(
                f'<tr><th class="sv-cmp-tgroup" colspan="8">on {esc(group.target)}</th></tr>'
            )
        for s in view.members(group):
            out.append(_estimate_row(s, view.slowest_estimate))
        out.append("</tbody>")
    if view.no_estimate:
        out.append(
            '<tbody><tr><td class="sv-cmp-dim" colspan="8">no estimate (no target): '
            f"{esc(', '.join(view.no_estimate))}</td></tr></tbody>"
        )
    out.append("</table>")
    return "".join(out)


def _estimate_row(s: StrategyView, slowest: float) -> str:
    e = s.estimate
    assert e is not None
    bar = (
        f'<span class="sv-cmp-minibar sv-cmp-estbar" style="width:{60 * e.step_seconds / slowest:.1f}px">'
        "</span>"
        if slowest
        else ""
    )
    cls = {"fits": "sv-ok", "does not fit": "sv-bad"}.get(e.fit_word, "sv-none")
    fits = f' data-fits="{int(e.fits)}"' if e.fits is not None else ""
    name = f'<span class="sv-cmp-name">{esc(s.strategy)}</span>'
    mark = (
        f' <span class="sv-cmp-notbound" title="{esc(e.not_a_bound)}">{esc(e.mark)}</span>'
        if e.mark
        else ""
    )
    cells = [
        f"<td>{name}</td>",
        f'<td class="sv-cmp-r sv-cmp-est" data-seconds="{e.step_seconds!r}" '
        f'title="{esc(e.line)}"><b>{esc(e.step_str)}</b>{mark}{bar}</td>',
        f"<td>{esc(e.bound)}</td>",
        f'<td class="sv-cmp-r">{esc(e.mfu_str)}{mark}</td>',
        f'<td class="sv-cmp-r sv-cmp-sep">{esc(e.compute_str)}</td>',
        f'<td class="sv-cmp-r">{esc(e.memory_str)}</td>',
        f'<td class="sv-cmp-r">{esc(e.collectives_str)}</td>',
        f'<td class="sv-cmp-fit sv-cmp-sep"{fits}><span class="sv-cmp-badge {cls}">'
        f'{esc(e.fit_word)}</span> <span class="sv-cmp-dim">'
        f"{esc(e.fit_figures)}</span></td>",
    ]
    bounded = "" if e.bounded else ' data-bounded="0"'
    return (
        f'<tr class="sv-cmp-estrow" data-strategy="{esc(s.strategy)}"{_target_attr(s)} '
        f'data-bound="{esc(e.bound)}"{bounded}>' + "".join(cells) + "</tr>"
    )


def _not_bounds(view: ComparisonView) -> list[str]:
    """Under the estimates: each strategy whose estimate is no bound, and the kernels not
    counted that make it so (nothing when every kernel was counted)."""
    if not view.not_bounds:
        return []
    items = "".join(
        f"<div>{esc(mark)} <b>{esc(label)}</b> {esc(text)}</div>"
        for mark, label, text in view.not_bounds
    )
    return [f'<div class="sv-cmp-notes sv-cmp-notbounds">{items}</div>']


# --------------------------------------------------------------------------------------------
# Charts


def _legend(items: Sequence[tuple[str, str, str]]) -> str:
    """``(colour, label, hover)`` swatches in a row."""
    return (
        '<div class="sv-cmp-legend">'
        + "".join(
            f'<span title="{esc(tip)}"><span class="sv-cmp-sw" style="background:{color}">'
            f"</span>{esc(label)}</span>"
            for color, label, tip in items
        )
        + "</div>"
    )


class _Frame(NamedTuple):
    """Where the memory chart's bars sit: the bar area's left edge, the chart's width, the
    bytes at the scale's end and the bar area's width."""

    left: float
    width: float
    top: int
    bars: float


def _memory_chart(view: ComparisonView) -> str:
    """One stacked horizontal bar per strategy, every bar on the same scale."""
    comps = view.components
    scale = view.memory_scale
    cap = 260.0 if view.by_target else 180.0
    left = min(cap, max(60.0, *(text_width(s.label, 12) + 16 for s in view.strategies)))
    right = 186.0 if view.hbm_off_scale else 96.0
    bars = min(CHART_W, max(MIN_CHART_W, FIT_W - left - right))
    top_pad = 6.0
    rows_h = len(view.strategies) * (MEM_ROW_H + MEM_ROW_GAP)
    width = left + bars + right
    height = top_pad + rows_h + 22
    out = [
        f'<svg class="sv-cmp-chart sv-cmp-memchart" width="{svg_num(width)}" '
        f'height="{svg_num(height)}" viewBox="0 0 {svg_num(width)} {svg_num(height)}" role="img">'
    ]
    axis_y = top_pad + rows_h
    for v, text in zip(scale.ticks, scale.labels, strict=True):
        x = left + bars * v / scale.end
        out.append(
            f'<path class="sv-cmp-grid" d="M{svg_num(x)} {svg_num(top_pad)}V{svg_num(axis_y)}"/>'
        )
        out.append(svg_text(x, axis_y + 14, text, "sv-tick", ' text-anchor="middle"'))
    out.append(
        f'<path d="M{svg_num(left)} {svg_num(top_pad)}V{svg_num(axis_y)}" stroke="#8c959f"/>'
    )
    frame = _Frame(left, width, scale.end, bars)
    for k, s in enumerate(view.strategies):
        y = top_pad + MEM_ROW_GAP / 2 + k * (MEM_ROW_H + MEM_ROW_GAP)
        out.extend(_memory_row(s, frame, y))
        if view.host and view.host[k].host:
            out.append(_host_bar(view.host[k], s, frame, y + MEM_ROW_H + 1))
    out.append("</svg>")
    items = [(x.color, x.label, x.meaning) for x in comps]
    if view.host:
        items.append((HOST_COLOR, f"{HOST_LABEL} (thin bar)", HOST_MEANING))
    if any(s.peak < s.memory_total for s in view.strategies):
        items.append(("#1b1f24", "peak (black tick)", "the compiler's peak, inside a bar whose "
                      "parts by role add to more: the compiler reuses some of their buffers"))  # fmt: skip
    if view.has_estimates:
        items.append(("#cf222e", "HBM per device (dashed)", "the target's HBM per device: a "
                      "bar past the line does not fit"))  # fmt: skip
    return _legend(items) + "".join(out)


def _host_bar(h: HostView, s: StrategyView, at: _Frame, y: float) -> str:
    """A thin bar under a strategy's HBM stack: the bytes it keeps in host memory."""
    w = at.bars * h.host / at.top
    return (
        f'<rect class="sv-mem sv-cmp-hostbar" data-component="host" data-bytes="{h.host}" '
        f'data-strategy="{esc(s.strategy)}" x="{svg_num(at.left)}" y="{svg_num(y)}" '
        f'width="{svg_num(w)}" height="{svg_num(HOST_BAR_H)}" fill="{HOST_COLOR}">'
        f"<title>{esc(s.label)} · {HOST_LABEL}: {esc(h.host_exact)} ({esc(roles_str(h))})"
        "</title></rect>"
    )


def _host_table(view: ComparisonView) -> str:
    """HBM beside host memory per device, the bytes each way per step over the host link
    and its time on the target, with the estimated step it makes."""
    cols = ("strategy", "HBM peak", "host", "host by role", "host link per step",
            "link time", "step with host link")  # fmt: skip
    out = ['<table class="sv-cmp-t sv-cmp-hosttable"><thead><tr>']
    out += [_th(c, "sv-cmp-r" if c in ("HBM peak", "host") else "") for c in cols]
    out.append("</tr></thead><tbody>")
    for h in view.host:
        cells = (h.label, h.hbm_str, h.host_str, roles_str(h), h.moved_str, h.link_str,
                 h.step_str)  # fmt: skip
        out.append(
            f'<tr data-host-bytes="{h.host}" data-to-host="{h.to_host}" '
            f'data-to-device="{h.to_device}">'
            + "".join(
                f'<td class="sv-cmp-r">{esc(v)}</td>' if i in (1, 2) else f"<td>{esc(v)}</td>"
                for i, v in enumerate(cells)
            )
            + "</tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _memory_segment(s: StrategyView, p: PartView, x: float, y: float, w: float) -> list[str]:
    """One component's segment of a strategy's bar, its bytes written inside when they fit."""
    comp = p.component
    tip = f"{s.strategy} · {comp.label}: {p.exact}"
    if comp.key == "other":
        tip += f"\n{comp.meaning}"
    out = [
        f'<rect class="sv-mem" data-component="{comp.key}" data-bytes="{p.bytes}" '
        f'x="{svg_num(x)}" y="{svg_num(y)}" width="{svg_num(w)}" '
        f'height="{svg_num(MEM_ROW_H)}" fill="{comp.color}"><title>{esc(tip)}</title></rect>'
    ]
    if p.bytes and text_width(p.text, 10) + 6 <= w:
        fg = "#fff" if comp.key in ("params", "optimizer") else "#1b1f24"
        out.append(
            svg_text(x + w / 2, y + MEM_ROW_H / 2, p.text, "sv-cmp-in", f' style="fill:{fg}"')
        )
    return out


def _memory_row(s: StrategyView, at: _Frame, y: float) -> list[str]:
    """One strategy's stacked bar on the memory chart, at height ``y``: its name, a segment
    per component, the peak after the bar (and a tick where it falls inside), its HBM mark."""
    left, top = at.left, at.top
    name = s.label
    while text_width(name, 12) > left - 10 and len(name) > 4:
        name = name[:-2] + "…"
    out = [
        f'<g class="sv-cmp-memrow" data-strategy="{esc(s.strategy)}"{_target_attr(s)} '
        f'data-total="{s.memory_total}">'
        f"<title>{esc(s.label)}: peak {esc(s.peak_exact)}"
        "</title>" + svg_text(left - 8, y + MEM_ROW_H / 2, name, "sv-cmp-lab")
    ]
    x = left
    for p in s.memory:
        w = at.bars * p.bytes / top
        out.extend(_memory_segment(s, p, x, y, w))
        x += w
    out.append(svg_text(_peak_label_x(s, at, x), y + MEM_ROW_H / 2, s.peak_str + " peak",
                        "sv-cmp-val"))  # fmt: skip
    if s.peak < s.memory_total:
        px = left + at.bars * s.peak / top
        out.append(
            f'<path d="M{svg_num(px)} {svg_num(y - 3)}v{svg_num(MEM_ROW_H + 6)}" '
            'stroke="#1b1f24" stroke-width="2"><title>the peak</title></path>'
        )
    if s.estimate is not None:
        out.append(_hbm_mark(s.estimate, at, y))
    out.append("</g>")
    return out


def _peak_label_x(s: StrategyView, at: _Frame, end: float) -> float:
    """Where a bar's ``… peak`` label starts: after the bar, or after the target's HBM line
    when the line would cross the label."""
    x = end + 6
    e = s.estimate
    if e is not None and e.hbm_bytes <= at.top:
        line = at.left + at.bars * e.hbm_bytes / at.top
        if x - 4 <= line <= x + text_width(s.peak_str + " peak", 11) + 4:
            x = line + 6
    return x


def _hbm_mark(e: EstimateView, at: _Frame, y: float) -> str:
    """The target's HBM per device on a strategy's memory bar: a dashed line on the scale, or
    a label at the chart's right edge (``HBM 16 GiB →``) when it is far above every bar."""
    left, width, top = at.left, at.width, at.top
    tip = f"HBM per device on {e.target}: {e.hbm_exact}; {e.fit_text}"
    if e.hbm_bytes <= top:
        x = left + at.bars * e.hbm_bytes / top
        return (
            f'<path class="sv-cmp-hbm" data-hbm="{e.hbm_bytes}" '
            f'd="M{svg_num(x)} {svg_num(y - 4)}v{svg_num(MEM_ROW_H + 8)}">'
            f"<title>{esc(tip)}</title></path>"
        )
    x = width - 4
    return (
        f'<g class="sv-cmp-hbm-off" data-hbm="{e.hbm_bytes}"><title>{esc(tip)} (off this '
        f'scale)</title><path class="sv-cmp-hbm" '
        f'd="M{svg_num(x)} {svg_num(y)}v{svg_num(MEM_ROW_H)}"/>'
        + svg_text(x - 5, y + MEM_ROW_H / 2, f"HBM {e.hbm_str} →",
                   "sv-cmp-hbmlab", ' text-anchor="end" dominant-baseline="central"')
        + "</g>"
    )  # fmt: skip


class _Chart(NamedTuple):
    """A grouped transfer chart: its series (collective kinds, or tuples of mesh axes), each
    strategy's cells for them, the bars' data attribute (``kind``/``axes``), the hover text of
    a cell's other split, the scale and the bars' class."""

    series: tuple[Series, ...]
    cells: Callable[[StrategyView], tuple[Traffic, ...]]
    attr: str
    split: Callable[[StrategyView, Traffic], str]
    scale: Scale
    cls: str


def _by_axes_words(s: StrategyView, t: Traffic) -> str:
    """A kind's bar, split by mesh axes: ``by axes: data ×2 3 MiB · model ×1 1 MiB``."""
    return "by axes: " + " · ".join(f"{x.axes_label} ×{x.count} {x.moved_str}" for x in s.split(t))


def _by_kind_words(s: StrategyView, t: Traffic) -> str:
    """An axes' bar, split by kind: ``by kind: all-reduce ×2 3 MiB``."""
    return "by kind: " + " · ".join(f"{x.kind} ×{x.count} {x.moved_str}" for x in s.split(t))


def _kinds_chart(view: ComparisonView) -> _Chart:
    return _Chart(view.kinds, lambda s: s.by_kind, "kind", _by_axes_words, view.kinds_scale,
                  "sv-moved")  # fmt: skip


def _axes_chart(view: ComparisonView) -> _Chart:
    return _Chart(view.axes, lambda s: s.by_axes, "axes", _by_kind_words, view.axes_scale,
                  "sv-moved-axes")  # fmt: skip


def _moved_chart(view: ComparisonView, chart: _Chart) -> str:
    """Grouped vertical bars: per strategy, bytes moved per step by each series (a collective
    kind, or a tuple of mesh axes); bars are ``<rect class="{cls}">``."""
    series, scale = chart.series, chart.scale
    if not series:
        return '<div class="sv-cmp-dim">no collectives in any strategy</div>'
    n_s, n_k = len(view.strategies), len(series)
    bw = max(12.0, min(52.0, (CHART_W - 24 * n_s) / max(1, n_s * n_k)))
    # room for each strategy's name under its bars (a longer one is cut, whole on hover)
    names_w = max(text_width(s.strategy, 12) for s in view.strategies) + 12
    group_w = max(bw * n_k, min(names_w, MAX_NAME_W)) + 24
    left = max(text_width(x, 10) for x in scale.labels) + 10
    top_pad = 16.0
    width = max(left + group_w * n_s + 8, 200.0)
    height = top_pad + MOVED_H + (36 if view.by_target else 24)
    base = top_pad + MOVED_H
    out = [
        f'<svg class="sv-cmp-chart sv-cmp-movedchart" data-bars="{chart.cls}" '
        f'width="{svg_num(width)}" height="{svg_num(height)}" '
        f'viewBox="0 0 {svg_num(width)} {svg_num(height)}" role="img">'
    ]
    for v, text in zip(scale.ticks, scale.labels, strict=True):
        y = base - MOVED_H * v / scale.end
        out.append(
            f'<path class="sv-cmp-grid" d="M{svg_num(left)} {svg_num(y)}H{svg_num(width - 4)}"/>'
        )
        out.append(
            svg_text(left - 5, y, text, "sv-tick", ' text-anchor="end" dominant-baseline="central"')
        )
    out.append(
        f'<path d="M{svg_num(left)} {svg_num(base)}H{svg_num(width - 4)}" stroke="#8c959f"/>'
    )
    for i, s in enumerate(view.strategies):
        bars = _Bars(left + 12 + i * group_w, group_w, bw, base, scale.end)
        out.extend(_moved_group(view, s, chart, bars))
    out.append("</svg>")
    legend = _legend([(x.color, x.label, f"{x.label}: bytes moved per device") for x in series])
    return legend + "".join(out)


class _Bars(NamedTuple):
    """Where one strategy's group of bars sits on the transfer chart."""

    left: float  # the group's left edge
    width: float  # the group's width, gap included
    bar: float  # one bar's width
    base: float  # the y of the zero line
    top: int  # the bytes at the top of the scale


def _moved_bar(
    s: StrategyView,
    x_: Series,
    t: Traffic,
    chart: _Chart,
    x: float,
    at: _Bars,
    taken: list[tuple[float, float, float]],
) -> list[str]:
    """One strategy's bar for one series at ``x``, its bytes over it when they fit and clear
    the labels already drawn (``taken``: their left, right and baseline, added to here)."""
    _, _, bw, base, top = at
    h = MOVED_H * t.moved / top
    tip = (
        f"{s.label} · {x_.label}: {t.count} collective{'s' * (t.count != 1)}\n"
        f"moved {t.moved_exact} per device per step\n{chart.split(s, t)}"
    )
    out = [
        f'<rect class="{chart.cls}" data-strategy="{esc(s.strategy)}"{_target_attr(s)} '
        f'data-{chart.attr}="{esc(x_.key)}" '
        f'data-bytes="{t.moved}" x="{svg_num(x)}" y="{svg_num(base - h)}" '
        f'width="{svg_num(bw - 2)}" height="{svg_num(h)}" fill="{x_.color}">'
        f"<title>{esc(tip)}</title></rect>"
    ]
    tw, mid, y = text_width(t.moved_str, 10), x + (bw - 2) / 2, base - h - 7
    box = (mid - tw / 2, mid + tw / 2, y)
    clear = all(b[1] + 2 <= box[0] or box[1] + 2 <= b[0] or abs(b[2] - y) >= 12 for b in taken)
    if tw <= bw + 4 and clear:
        taken.append(box)
        out.append(
            svg_text(
                x + (bw - 2) / 2, base - h - 7, t.moved_str, "sv-tick", ' text-anchor="middle"'
            )
        )
    return out


def _moved_group(view: ComparisonView, s: StrategyView, chart: _Chart, at: _Bars) -> list[str]:
    """One strategy's bars on a transfer chart (a bar per series it uses, its bytes over it),
    then its name (and target, across targets) under them."""
    gx, group_w, bw, base, _ = at
    out = [f'<g class="sv-cmp-movedgroup" data-strategy="{esc(s.strategy)}"{_target_attr(s)}>']
    pad = (group_w - 24 - bw * len(chart.series)) / 2  # the bars centred over the name
    taken: list[tuple[float, float, float]] = []  # the value labels drawn, never overlapping
    for j, (x_, t) in enumerate(zip(chart.series, chart.cells(s), strict=True)):
        if t.count:
            out.extend(_moved_bar(s, x_, t, chart, gx + pad + j * bw, at, taken))
    name = s.strategy
    while text_width(name, 12) > group_w - 12 and len(name) > 4:
        name = name[:-2] + "…"
    out.append(
        svg_text(gx + (group_w - 24) / 2, base + 14, name, "sv-cmp-lab",
                 ' style="text-anchor:middle"')
        .replace("</text>", f"<title>{esc(s.strategy)}</title></text>")
    )  # fmt: skip
    if view.by_target and s.target_name is not None:
        sub = s.target_name
        while text_width(sub, 10) > group_w - 4 and len(sub) > 4:
            sub = sub[:-2] + "…"
        out.append(svg_text(gx + (group_w - 24) / 2, base + 27, sub, "sv-tick",
                            ' text-anchor="middle"'))  # fmt: skip
    out.append("</g>")
    return out


# --------------------------------------------------------------------------------------------
# Per strategy


def _kind_row(s: StrategyView, hosts: bool, x: CollectiveRow) -> str:
    cross = _cross_cell(s, x.cross, x.cross_str) if hosts else ""
    return (
        f'<tr class="sv-cmp-kind" data-kind="{esc(x.kind)}" '
        f'data-axes="{esc(",".join(x.axes))}"><td><span class="sv-cmp-pill '
        f'{_kind_class(x.kind)}">{esc(x.kind)}</span></td>'
        f"<td><code>{esc(x.axes_label)}</code></td>"
        f'<td class="sv-cmp-r">{x.count}</td>{_bytes_cell(x.in_bytes, x.in_str)}'
        f"{_bytes_cell(x.moved, x.moved_str)}{cross}</tr>"
    )


def _kind_card(s: StrategyView, hosts: bool) -> str:
    head = (
        f'<div class="sv-cmp-name">{esc(s.label)} <span class="sv-cmp-dim">'
        f"{s.count} per step · {esc(s.moved_str)} moved"
        "</span></div>"
    )
    if not s.rows:
        body = '<div class="sv-cmp-dim">none: every value stays where the specs put it</div>'
    else:
        body = (
            '<table class="sv-cmp-t"><tr><th>kind</th><th>axes</th>'
            '<th class="sv-cmp-r">count</th><th class="sv-cmp-r">in</th>'
            '<th class="sv-cmp-r">moved</th>'
            + ('<th class="sv-cmp-r">across hosts</th>' if hosts else "")
            + "</tr>"
            + "".join(_kind_row(s, hosts, x) for x in s.rows)
            + "</table>"
        )
    return (
        f'<div class="sv-cmp-card" data-strategy="{esc(s.strategy)}"{_target_attr(s)}>'
        f"{head}{body}</div>"
    )


def _kind_cards(view: ComparisonView) -> str:
    cards = [_kind_card(s, view.multi_host) for s in view.strategies]
    return '<div class="sv-cmp-cards">' + "".join(cards) + "</div>"


def _notes(view: ComparisonView) -> list[str]:
    items = [f"<div>{esc(n)}</div>" for n in view.notes]
    items += [
        f"<div><b>{esc(s.label)}</b> {esc(n)}</div>" for s in view.strategies for n in s.notes
    ]
    if not items:
        return []
    return ['<div class="sv-cmp-notes">' + "".join(items) + "</div>"]


def _findings(view: ComparisonView) -> list[str]:
    items = [f"<div><b>{esc(label)}</b> {esc(text)}</div>" for label, text in view.findings]
    if not items:
        return []
    return ['<div class="sv-cmp-notes sv-cmp-findings">' + "".join(items) + "</div>"]


def _schedules(view: ComparisonView) -> list[str]:
    """Each pipeline strategy's schedule chart (:mod:`shardviz.render.schedule.html`) under
    its name and its schedule line; nothing when no strategy is pipelined."""
    piped = [s for s in view.strategies if s.schedule is not None]
    if not piped:
        return []
    out = [
        '<h4 class="sv-cmp-h">Pipeline schedules<span class="sv-cmp-dim">each stage\'s '
        "forwards and backwards over time, the bubble next to the theory (S-1)/(M+S-1)"
        "</span></h4>"
    ]
    for s in piped:
        assert s.schedule is not None
        out.append(
            f'<div class="sv-cmp-sched" data-strategy="{esc(s.strategy)}"{_target_attr(s)}>'
            f'<div class="sv-cmp-name">{esc(s.label)} <span class="sv-cmp-dim">'
            f"{esc(s.schedule_line)}</span></div>{schedule_html(s.schedule)}</div>"
        )
    return out


def _reports(view: ComparisonView) -> list[str]:
    return [
        f'<details class="sv-cmp-report" data-strategy="{esc(s.strategy)}"{_target_attr(s)}>'
        f'<summary>{esc(s.label)}<span class="sv-cmp-dim">{esc(s.report_caption)}</span>'
        f'</summary><div class="sv-cmp-scroll">{s.report._repr_html_()}</div></details>'
        for s in view.strategies
    ]


def comparison_html(c: Comparison | ComparisonView) -> str:
    """A comparison as a self-contained HTML fragment.

    Args:
        c: the comparison (live or hand-built), or its view (:func:`comparison_view`).

    Returns:
        One ``<div class="sv-root sv-compare">`` with its own ``<style>``: the model, one table
        (memory per device by component, the peak, whether leaves and compiler agree,
        collectives per step by mesh axes, step time, the loss check), memory per device as
        stacked bars on one scale (and what the temp holds where it is smaller than the
        gradients), bytes moved per step by collective kind and by mesh axes as grouped bars,
        each strategy's collectives by kind and axes, each pipeline strategy's schedule chart,
        the notes, and each strategy's full report collapsed.
    """
    view = c if isinstance(c, ComparisonView) else comparison_view(c)
    body = [
        f'<div class="sv-cmp-title">{esc(view.model)} <span class="sv-cmp-dim">'
        f"· {view.params} parameters ({esc(view.params_short)}) · "
        f"{esc(view.dtype)} · {view.strategies_word}</span></div>"
    ]
    line = f"{view.mesh_line} · " if view.mesh_line is not None else ""
    body.append(f'<div class="sv-cmp-line">{esc(line + view.bytes_note)}</div>')
    body += [
        f'<div class="sv-cmp-line sv-cmp-estline">{esc(x)}</div>' for x in view.estimate_header
    ]
    body += _notes(view)
    body += _findings(view)
    if not view.strategies:
        body.append('<div class="sv-cmp-dim">no strategies</div>')
        return f'<div class="sv-root sv-compare">{STYLE}' + "".join(body) + "</div>"
    body.append(_comparison_tables(view))
    if view.has_estimates:
        body.append(
            '<h4 class="sv-cmp-h">Estimated step on the target<span class="sv-cmp-dim">'
            f"{ESTIMATE_WORDS}: from the compiler's figures and the target's published peak "
            "rates; HBM: the peak against the target's, per device</span></h4>"
        )
        body.append(_scrolled(_estimate_table(view)))
        body += _not_bounds(view)
    body.append(
        '<h4 class="sv-cmp-h">Memory per device<span class="sv-cmp-dim">stacked by component, '
        "one scale for every strategy; hover for exact bytes</span></h4>"
    )
    body.append(_memory_chart(view))
    body += [
        f'<div class="sv-cmp-line sv-cmp-tempnote" data-strategy="{esc(s.strategy)}">'
        f"<b>{esc(s.label)}</b> {esc(s.temp_line)}</div>"
        for s in view.strategies
        if s.temp_below_grads
    ]
    if view.host:
        body.append(
            '<h4 class="sv-cmp-h">HBM and host memory<span class="sv-cmp-dim">per device; '
            "the host link per step (PCIe / host DMA) and whether the step's own work (its "
            "compute or HBM time) hides it</span></h4>"
        )
        body.append(_scrolled(_host_table(view)))
    body.append(
        '<h4 class="sv-cmp-h">Bytes moved per step<span class="sv-cmp-dim">per device, by '
        "collective kind (ring model)</span></h4>"
    )
    body.append(_moved_chart(view, _kinds_chart(view)))
    body.append(
        '<h4 class="sv-cmp-h">Bytes moved per step, by mesh axes<span class="sv-cmp-dim">per '
        "device: which axis carries the traffic (ring model)</span></h4>"
    )
    body.append(_moved_chart(view, _axes_chart(view)))
    body.append(
        '<h4 class="sv-cmp-h">Collectives by kind and mesh axes<span class="sv-cmp-dim">'
        "per step, per device</span></h4>"
    )
    body.append(_kind_cards(view))
    body += _schedules(view)
    body.append(
        '<h4 class="sv-cmp-h">Full reports<span class="sv-cmp-dim">the ledger, intermediates, '
        "memory, timing and check of each strategy</span></h4>"
    )
    body += _reports(view)
    return f'<div class="sv-root sv-compare">{STYLE}' + "".join(body) + "</div>"
