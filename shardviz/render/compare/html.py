"""A :class:`~shardviz.model.Comparison` of strategies as one self-contained HTML fragment.

Scoped ``<style>``, inline SVG, no script and no URL, so it works in a notebook, a saved
notebook or a file opened offline. Every string from the model is escaped where it enters
the markup. The numbers come from :mod:`.compare_facts`, so the text and HTML views agree.

Testable hooks: one ``<tr class="sv-strategy" data-strategy="dp">`` per strategy in the
table; on the memory chart one ``<g class="sv-cmp-memrow" data-strategy="dp"
data-total="…">`` per strategy holding its segments ``<rect class="sv-mem"
data-component="params" data-bytes="…">`` (they add up to ``data-total``); on the transfer
chart one ``<rect class="sv-moved" data-strategy="dp" data-kind="all-reduce" data-bytes="…">``
per strategy and kind it uses, and on the chart by mesh axes one ``<rect class="sv-moved-axes"
data-strategy="dp" data-axes="data,model" data-bytes="…">`` per strategy and tuple of axes
(``data-axes=""``: no axis); the compiler's temp is ``<td class="sv-cmp-temp" data-bytes="…">``
and a strategy whose temp is smaller than its gradients gets ``<div class="sv-cmp-tempnote"
data-strategy="dp">`` under the memory chart; a pipeline strategy's schedule chart
(:mod:`.schedule_html`) sits in ``<div class="sv-cmp-sched" data-strategy="pp">``; the loss check is ``sv-cmp-check`` with ``sv-ok``, ``sv-bad``
or ``sv-none``; each full report sits in ``<details class="sv-cmp-report" data-strategy="dp">``.

With estimates (reports with a target): rows, bars and cards of a strategy on a target also
carry ``data-target="v5e:2x4"`` (the target's name) and, when the comparison spans several
targets, are labelled ``fsdp @ TPU v5e 2x4``; the table gains ``<td class="sv-cmp-est"
data-seconds="…" data-bound="…">`` and ``<td class="sv-cmp-fit" data-fits="1|0">``; the memory
chart draws ``<path class="sv-cmp-hbm" data-hbm="…">`` at the target's HBM per device (or, far
above the bars, ``<g class="sv-cmp-hbm-off" data-hbm="…">`` at the chart's edge).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from shardviz.model.compare import Comparison, StrategyResult
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.colors import KIND_COLORS, OTHER_KIND
from shardviz.render.compare.view import (
    BYTES_NOTE,
    Component,
    axes_color,
    axes_count,
    axes_cross,
    axes_label,
    axes_moved,
    axes_totals,
    byte_ticks,
    collective_count,
    common_mesh,
    comparison_axes,
    comparison_kinds,
    cross_total,
    estimate_header,
    estimate_line,
    estimate_of,
    finding_lines,
    fit_word,
    format_count,
    has_estimates,
    hbm_fit_str,
    kind_count,
    kind_moved,
    kind_rows,
    loss_str,
    loss_word,
    memory_chart_top,
    memory_parts,
    memory_total,
    mesh_str,
    moved_total,
    multi_host,
    reconcile_line,
    schedule_line,
    shown_components,
    step_str,
    step_time,
    target_groups,
    temp_line,
)
from shardviz.render.geometry import mesh_summary
from shardviz.render.html import CSS, MONO, SANS
from shardviz.render.report.view import ESTIMATE_WORDS, estimate_seconds_str, format_mfu
from shardviz.render.schedule.html import schedule_html
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import esc, svg_num, svg_text, text_width

COMPARE_CSS = stylesheet("compare.css", SANS=SANS, MONO=MONO)

_KIND_CSS = "".join(
    f".sv-compare .sv-cmp-k{i}{{color:{fg};background:{bg}}}"
    for i, (fg, bg) in enumerate([*KIND_COLORS.values(), OTHER_KIND])
)
STYLE = "<style>" + (CSS + "\n" + COMPARE_CSS + _KIND_CSS).replace("\n", "") + "</style>"

#: Width of the bar area of both charts, in px.
CHART_W = 560.0
MEM_ROW_H = 24.0
MEM_ROW_GAP = 12.0
MOVED_H = 170.0


def kind_color(kind: str) -> str:
    """The bar colour of a collective kind (the report view's colour for it)."""
    return KIND_COLORS.get(kind, OTHER_KIND)[0]


def _kind_class(kind: str) -> str:
    i = list(KIND_COLORS).index(kind) if kind in KIND_COLORS else len(KIND_COLORS)
    return f"sv-cmp-k{i}"


def _bytes_cell(n: int, cls: str = "sv-cmp-r") -> str:
    return f'<td class="{cls}" title="{n:,} B">{esc(format_bytes(n))}</td>'


def _cross_cell(r: StrategyResult, n: int) -> str:
    """Bytes across hosts (``data-cross-host``), or ``—`` on a mesh within one host."""
    if r.mesh.num_processes < 2:
        return '<td class="sv-cmp-r sv-cmp-dim" title="one host">—</td>'
    return f'<td class="sv-cmp-r" data-cross-host="{n}" title="{n:,} B">{esc(format_bytes(n))}</td>'


def _axes_span(r: StrategyResult, axes: tuple[str, ...], n: int, moved: int, hosts: bool) -> str:
    """``data ×2 · 3 MiB`` (`` · 1 MiB across hosts`` on a mesh over several hosts)."""
    text = f"{axes_label(axes)} ×{n} · {format_bytes(moved)}"
    if hosts and r.mesh.num_processes > 1:
        text += f" · {format_bytes(axes_cross(r, axes))} across hosts"
    return f'<span class="sv-cmp-axes" title="{moved:,} B">{esc(text)}</span>'


def _th(text: str, cls: str = "", extra: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f"<th{c}{extra}>{text}</th>"


def _check_badge(r: StrategyResult) -> str:
    word = loss_word(r)
    cls = {"OK": "sv-ok", "MISMATCH": "sv-bad"}.get(word, "sv-none")
    return (
        f'<span class="sv-cmp-badge sv-cmp-check {cls}" title="{esc(loss_str(r))}">'
        f"{esc(word)}</span>"
    )


def _reconciled_cell(r: StrategyResult) -> str:
    m = r.memory
    tip = esc(reconcile_line(m))
    if m.reconciled:
        return (
            f'<td data-reconciled="1"><span class="sv-cmp-badge sv-ok" title="{tip}">'
            f"yes</span></td>"
        )
    return (
        f'<td data-reconciled="0"><span class="sv-cmp-badge sv-bad" title="{tip}">no</span>'
        f'<span class="sv-cmp-axes">leaves {m.arguments_from_leaves:,} B</span>'
        f'<span class="sv-cmp-axes">compiler {m.arguments_from_compiler:,} B</span></td>'
    )


def _target_attr(r: StrategyResult) -> str:
    """`` data-target="v5e:2x4"`` for a result with a target, else ``""``."""
    t = r.target
    return f' data-target="{esc(t.name)}"' if t is not None else ""


# --------------------------------------------------------------------------------------------
# The table


def _comparison_table(c: Comparison) -> str:
    comps = shown_components(c)
    slowest = max((step_time(r) or 0.0 for r in c.results), default=0.0)
    with_mesh = common_mesh(c) is None  # one mesh for all is named above the table
    hosts = multi_host(c)
    head1 = (
        "<tr>"
        + _th("")
        + _th("memory per device", "sv-cmp-group sv-cmp-sep", f' colspan="{len(comps) + 3}"')
        + _th("collectives per step", "sv-cmp-group sv-cmp-sep", f' colspan="{3 + hosts}"')
        + _th("time and check", "sv-cmp-group sv-cmp-sep", ' colspan="2"')
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

    out = ['<table class="sv-cmp-t sv-cmp-table"><thead>', head1, "<tr>", *cells, "</tr>",
           "</thead><tbody>"]  # fmt: skip
    for r in c.results:
        parts = dict(memory_parts(r.memory))
        name = f'<span class="sv-cmp-name">{esc(r.strategy)}</span>'
        if c.by_target and r.target_label:
            name += f'<span class="sv-cmp-target">@ {esc(r.target_label)}</span>'
        if r.title and r.title != r.strategy:
            name += f'<span class="sv-cmp-sub" title="{esc(r.title)}">{esc(r.title)}</span>'
        if with_mesh:
            name += f'<span class="sv-cmp-mesh">{esc(mesh_str(r.mesh))}</span>'
        row = [f"<td>{name}</td>"]
        for i, comp in enumerate(comps):
            row.append(_bytes_cell(parts[comp], "sv-cmp-r" + (" sv-cmp-sep" if i == 0 else "")))
        row.append(_bytes_cell(r.memory.peak, "sv-cmp-r sv-cmp-peak"))
        row.append(
            f'<td class="sv-cmp-r sv-cmp-temp" data-bytes="{r.memory.temp}" '
            f'title="{esc(temp_line(r.memory))}">{esc(format_bytes(r.memory.temp))}</td>'
        )
        row.append(_reconciled_cell(r))
        row.append(f'<td class="sv-cmp-r sv-cmp-sep">{collective_count(r)}</td>')
        row.append(_bytes_cell(moved_total(r)))
        if hosts:
            row.append(_cross_cell(r, cross_total(r)))
        axes = "".join(_axes_span(r, a, n, b, hosts) for a, n, b in axes_totals(r))
        row.append(f"<td>{axes or '<span class=sv-cmp-dim>none</span>'}</td>")
        s = step_time(r)
        bar = (
            f'<span class="sv-cmp-minibar" style="width:{60 * s / slowest:.1f}px"></span>'
            if s and slowest
            else ""
        )
        row.append(f'<td class="sv-cmp-r sv-cmp-sep">{esc(step_str(r))}{bar}</td>')
        row.append(f"<td>{_check_badge(r)}</td>")
        out.append(
            f'<tr class="sv-strategy" data-strategy="{esc(r.strategy)}"{_target_attr(r)}>'
            + "".join(row)
            + "</tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Estimates on targets


def _estimate_table(c: Comparison) -> str:
    """Per target (a group of rows each), each strategy's estimated step, its parts, the MFU
    and whether its peak fits the target's HBM; strategies without an estimate at the end."""
    groups = target_groups(c)
    slowest = max((e.step_seconds for r in c.results if (e := estimate_of(r))), default=0.0)
    head = (
        "<tr>" + _th("strategy") + _th("step ≥", "sv-cmp-r", f' title="{ESTIMATE_WORDS}"')
        + _th("bound") + _th("MFU ≤", "sv-cmp-r", ' title="model-FLOPs utilisation the bound '
        'allows"') + _th("compute", "sv-cmp-r sv-cmp-sep") + _th("memory", "sv-cmp-r")
        + _th("collectives", "sv-cmp-r") + _th("HBM", "sv-cmp-sep",
        ' title="the peak against the target\'s HBM per device"') + "</tr>"
    )  # fmt: skip
    out = ['<table class="sv-cmp-t sv-cmp-esttable"><thead>', head, "</thead>"]
    for target, results in groups:
        out.append(f'<tbody class="sv-cmp-estgroup" data-target="{esc(target)}">')
        if len(groups) > 1:
            out.append(f'<tr><th class="sv-cmp-tgroup" colspan="8">on {esc(target)}</th></tr>')
        for r in results:
            out.append(_estimate_row(c, r, slowest))
        out.append("</tbody>")
    missing = [c.label(r) for r in c.results if estimate_of(r) is None]
    if missing:
        out.append(
            '<tbody><tr><td class="sv-cmp-dim" colspan="8">no estimate (no target): '
            f"{esc(', '.join(missing))}</td></tr></tbody>"
        )
    out.append("</table>")
    return "".join(out)


def _estimate_row(c: Comparison, r: StrategyResult, slowest: float) -> str:
    e = estimate_of(r)
    assert e is not None
    bar = (
        f'<span class="sv-cmp-minibar sv-cmp-estbar" style="width:{60 * e.step_seconds / slowest:.1f}px">'
        "</span>"
        if slowest
        else ""
    )
    word = fit_word(r)
    cls = {"fits": "sv-ok", "does not fit": "sv-bad"}.get(word, "sv-none")
    fits = f' data-fits="{int(e.fits)}"' if e.fits is not None else ""
    name = f'<span class="sv-cmp-name">{esc(r.strategy)}</span>'
    cells = [
        f"<td>{name}</td>",
        f'<td class="sv-cmp-r sv-cmp-est" data-seconds="{e.step_seconds!r}" '
        f'title="{esc(estimate_line(r) or "")}"><b>{esc(format_seconds(e.step_seconds))}</b>{bar}</td>',
        f"<td>{esc(e.bound)}</td>",
        f'<td class="sv-cmp-r">{esc(format_mfu(e.mfu))}</td>',
        f'<td class="sv-cmp-r sv-cmp-sep">{esc(estimate_seconds_str(e.compute_seconds))}</td>',
        f'<td class="sv-cmp-r">{esc(estimate_seconds_str(e.memory_seconds))}</td>',
        f'<td class="sv-cmp-r">{esc(format_seconds(e.collective_seconds))}</td>',
        f'<td class="sv-cmp-fit sv-cmp-sep"{fits}><span class="sv-cmp-badge {cls}">'
        f'{esc(word)}</span> <span class="sv-cmp-dim">'
        f"{esc(hbm_fit_str(r).split(': ', 1)[-1])}</span></td>",
    ]
    return (
        f'<tr class="sv-cmp-estrow" data-strategy="{esc(r.strategy)}"{_target_attr(r)} '
        f'data-bound="{esc(e.bound)}">' + "".join(cells) + "</tr>"
    )


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


def _tick_label(v: int) -> str:
    return "0" if v == 0 else format_bytes(v)


def _memory_chart(c: Comparison) -> str:
    """One stacked horizontal bar per strategy, every bar on the same scale."""
    comps = shown_components(c)
    ticks = byte_ticks(memory_chart_top(c))
    top = ticks[-1] or 1
    labels = c.labels
    cap = 260.0 if c.by_target else 180.0
    left = min(cap, max(60.0, *(text_width(x, 12) + 16 for x in labels)))
    offscale = any((e := estimate_of(r)) is not None and e.hbm_bytes > top for r in c.results)
    right = 186.0 if offscale else 96.0
    top_pad = 6.0
    rows_h = len(c.results) * (MEM_ROW_H + MEM_ROW_GAP)
    width = left + CHART_W + right
    height = top_pad + rows_h + 22
    out = [
        f'<svg class="sv-cmp-chart sv-cmp-memchart" width="{svg_num(width)}" '
        f'height="{svg_num(height)}" viewBox="0 0 {svg_num(width)} {svg_num(height)}" role="img">'
    ]
    axis_y = top_pad + rows_h
    for v in ticks:
        x = left + CHART_W * v / top
        out.append(
            f'<path class="sv-cmp-grid" d="M{svg_num(x)} {svg_num(top_pad)}V{svg_num(axis_y)}"/>'
        )
        out.append(svg_text(x, axis_y + 14, _tick_label(v), "sv-tick", ' text-anchor="middle"'))
    out.append(
        f'<path d="M{svg_num(left)} {svg_num(top_pad)}V{svg_num(axis_y)}" stroke="#8c959f"/>'
    )
    for k, r in enumerate(c.results):
        y = top_pad + MEM_ROW_GAP / 2 + k * (MEM_ROW_H + MEM_ROW_GAP)
        out.extend(_memory_row(r, labels[k], comps, left, y, top, width))
    out.append("</svg>")
    items = [(x.color, x.label, x.meaning) for x in comps]
    if has_estimates(c):
        items.append(("#cf222e", "HBM per device (dashed)", "the target's HBM per device: a "
                      "bar past the line does not fit"))  # fmt: skip
    return _legend(items) + "".join(out)


def _memory_row(
    r: StrategyResult,
    label: str,
    comps: Sequence[Component],
    left: float,
    y: float,
    top: int,
    width: float,
) -> list[str]:
    """One strategy's stacked bar on the memory chart, at height ``y``: its name, a segment
    per component, the peak after the bar (and a tick where it falls inside), its HBM mark."""
    total = memory_total(r.memory)
    name = label
    while text_width(name, 12) > left - 10 and len(name) > 4:
        name = name[:-2] + "…"
    out = [
        f'<g class="sv-cmp-memrow" data-strategy="{esc(r.strategy)}"{_target_attr(r)} '
        f'data-total="{total}">'
        f"<title>{esc(label)}: peak {esc(format_bytes(r.memory.peak, exact=True))}"
        "</title>" + svg_text(left - 8, y + MEM_ROW_H / 2, name, "sv-cmp-lab")
    ]
    x = left
    for comp, b in memory_parts(r.memory):
        if comp not in comps:
            continue
        w = CHART_W * b / top
        tip = f"{r.strategy} · {comp.label}: {format_bytes(b, exact=True)}"
        if comp.key == "other":
            tip += f"\n{comp.meaning}"
        out.append(
            f'<rect class="sv-mem" data-component="{comp.key}" data-bytes="{b}" '
            f'x="{svg_num(x)}" y="{svg_num(y)}" width="{svg_num(w)}" '
            f'height="{svg_num(MEM_ROW_H)}" fill="{comp.color}"><title>{esc(tip)}</title></rect>'
        )
        text = format_bytes(b)
        if b and text_width(text, 10) + 6 <= w:
            fg = "#fff" if comp.key in ("params", "optimizer") else "#1b1f24"
            out.append(
                svg_text(x + w / 2, y + MEM_ROW_H / 2, text, "sv-cmp-in", f' style="fill:{fg}"')
            )
        x += w
    out.append(
        svg_text(x + 6, y + MEM_ROW_H / 2, format_bytes(r.memory.peak) + " peak", "sv-cmp-val")
    )
    if r.memory.peak < total:
        px = left + CHART_W * r.memory.peak / top
        out.append(
            f'<path d="M{svg_num(px)} {svg_num(y - 3)}v{svg_num(MEM_ROW_H + 6)}" '
            'stroke="#1b1f24" stroke-width="2"><title>the peak</title></path>'
        )
    out.append(_hbm_mark(r, left, y, top, width))
    out.append("</g>")
    return out


def _hbm_mark(r: StrategyResult, left: float, y: float, top: int, width: float) -> str:
    """The target's HBM per device on a strategy's memory bar: a dashed line on the scale, or
    a label at the chart's right edge (``HBM 16 GiB →``) when it is far above every bar."""
    e = estimate_of(r)
    if e is None:
        return ""
    tip = f"HBM per device on {e.target}: {format_bytes(e.hbm_bytes, exact=True)}; {e.fit_text}"
    if e.hbm_bytes <= top:
        x = left + CHART_W * e.hbm_bytes / top
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
        + svg_text(x - 5, y + MEM_ROW_H / 2, f"HBM {format_bytes(e.hbm_bytes)} →",
                   "sv-cmp-hbmlab", ' text-anchor="end" dominant-baseline="central"')
        + "</g>"
    )  # fmt: skip


class _Series(NamedTuple):
    """One bar per strategy on a grouped transfer chart: a collective kind, or a tuple of mesh
    axes. ``attr`` is the bar's data attribute (``data-kind="all-reduce"``)."""

    label: str
    color: str
    attr: str
    moved: Callable[[StrategyResult], int]
    count: Callable[[StrategyResult], int]
    split: Callable[[StrategyResult], str]  # the other split, for the hover text


def _per_result(
    f: Callable[[StrategyResult, Any], int], key: Any
) -> Callable[[StrategyResult], int]:
    """``f(result, key)`` as a function of the result alone."""
    return lambda r: f(r, key)


def _kind_series(c: Comparison) -> list[_Series]:
    def split(kind: str) -> Callable[[StrategyResult], str]:
        def by_axes(r: StrategyResult) -> str:
            kr = {x.kind: x for x in kind_rows(r)}[kind]
            return "by axes: " + " · ".join(
                f"{axes_label(a)} ×{n} {format_bytes(m)}" for a, n, m in kr.by_axes
            )

        return by_axes

    return [
        _Series(k, kind_color(k), f' data-kind="{esc(k)}"',
                _per_result(kind_moved, k), _per_result(kind_count, k), split(k))
        for k in comparison_kinds(c)
    ]  # fmt: skip


def _axes_series(c: Comparison) -> list[_Series]:
    def split(axes: tuple[str, ...]) -> Callable[[StrategyResult], str]:
        def by_kind(r: StrategyResult) -> str:
            parts = [
                f"{kr.kind} ×{n} {format_bytes(m)}"
                for kr in kind_rows(r)
                for a, n, m in kr.by_axes
                if a == axes
            ]
            return "by kind: " + " · ".join(parts)

        return by_kind

    return [
        _Series(axes_label(a), axes_color(c, a), f' data-axes="{esc(",".join(a))}"',
                _per_result(axes_moved, a), _per_result(axes_count, a), split(a))
        for a in comparison_axes(c)
    ]  # fmt: skip


def _moved_chart(c: Comparison, series: Sequence[_Series], cls: str) -> str:
    """Grouped vertical bars: per strategy, bytes moved per step by each series (a collective
    kind, or a tuple of mesh axes); bars are ``<rect class="{cls}">``."""
    if not series:
        return '<div class="sv-cmp-dim">no collectives in any strategy</div>'
    n_s, n_k = len(c.results), len(series)
    bw = max(12.0, min(52.0, (CHART_W - 24 * n_s) / max(1, n_s * n_k)))
    group_w = bw * n_k + 24
    values = [x.moved(r) for r in c.results for x in series]
    ticks = byte_ticks(max(values, default=1))
    top = ticks[-1] or 1
    left = max(text_width(_tick_label(v), 10) for v in ticks) + 10
    top_pad = 16.0
    width = max(left + group_w * n_s + 8, 200.0)
    height = top_pad + MOVED_H + (36 if c.by_target else 24)
    base = top_pad + MOVED_H
    out = [
        f'<svg class="sv-cmp-chart sv-cmp-movedchart" data-bars="{cls}" width="{svg_num(width)}" '
        f'height="{svg_num(height)}" viewBox="0 0 {svg_num(width)} {svg_num(height)}" role="img">'
    ]
    for v in ticks:
        y = base - MOVED_H * v / top
        out.append(
            f'<path class="sv-cmp-grid" d="M{svg_num(left)} {svg_num(y)}H{svg_num(width - 4)}"/>'
        )
        out.append(
            svg_text(
                left - 5,
                y,
                _tick_label(v),
                "sv-tick",
                ' text-anchor="end" dominant-baseline="central"',
            )
        )
    out.append(
        f'<path d="M{svg_num(left)} {svg_num(base)}H{svg_num(width - 4)}" stroke="#8c959f"/>'
    )
    for i, r in enumerate(c.results):
        bars = _Bars(left + 12 + i * group_w, group_w, bw, base, top)
        out.extend(_moved_group(c, r, series, bars, cls))
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


def _moved_group(
    c: Comparison, r: StrategyResult, series: Sequence[_Series], at: _Bars, cls: str
) -> list[str]:
    """One strategy's bars on a transfer chart (a bar per series it uses, its bytes over it),
    then its name (and target, across targets) under them."""
    gx, group_w, bw, base, top = at
    out = [f'<g class="sv-cmp-movedgroup" data-strategy="{esc(r.strategy)}"{_target_attr(r)}>']
    for j, x_ in enumerate(series):
        n = x_.count(r)
        if not n:
            continue
        b = x_.moved(r)
        h = MOVED_H * b / top
        x = gx + j * bw
        tip = (
            f"{c.label(r)} · {x_.label}: {n} collective{'s' * (n != 1)}\n"
            f"moved {format_bytes(b, exact=True)} per device per step\n{x_.split(r)}"
        )
        out.append(
            f'<rect class="{cls}" data-strategy="{esc(r.strategy)}"{_target_attr(r)}{x_.attr} '
            f'data-bytes="{b}" x="{svg_num(x)}" y="{svg_num(base - h)}" '
            f'width="{svg_num(bw - 2)}" height="{svg_num(h)}" fill="{x_.color}">'
            f"<title>{esc(tip)}</title></rect>"
        )
        label = format_bytes(b)
        if text_width(label, 10) <= bw + 4:
            out.append(
                svg_text(x + (bw - 2) / 2, base - h - 7, label, "sv-tick", ' text-anchor="middle"')
            )
    name = r.strategy if text_width(r.strategy, 12) <= group_w else r.strategy[:12] + "…"
    out.append(
        svg_text(gx + (group_w - 24) / 2, base + 14, name, "sv-cmp-lab",
                 ' style="text-anchor:middle"')
    )  # fmt: skip
    if c.by_target and r.target is not None:
        sub = r.target.name
        while text_width(sub, 10) > group_w - 4 and len(sub) > 4:
            sub = sub[:-2] + "…"
        out.append(svg_text(gx + (group_w - 24) / 2, base + 27, sub, "sv-tick",
                            ' text-anchor="middle"'))  # fmt: skip
    out.append("</g>")
    return out


# --------------------------------------------------------------------------------------------
# Per strategy


def _kind_cards(c: Comparison) -> str:
    cards = []
    hosts = multi_host(c)
    for r in c.results:
        head = (
            f'<div class="sv-cmp-name">{esc(c.label(r))} <span class="sv-cmp-dim">'
            f"{collective_count(r)} per step · {esc(format_bytes(moved_total(r)))} moved"
            "</span></div>"
        )
        if not r.collectives:
            body = '<div class="sv-cmp-dim">none: every value stays where the specs put it</div>'
        else:
            rows = []
            for kr in kind_rows(r):
                for axes, count, mv in kr.by_axes:
                    same = [s for s in r.collectives if s.kind == kr.kind and tuple(s.axes) == axes]
                    ins = sum(s.in_bytes for s in same)
                    cross = _cross_cell(r, sum(s.cross_host_bytes for s in same)) if hosts else ""
                    rows.append(
                        f'<tr class="sv-cmp-kind" data-kind="{esc(kr.kind)}" '
                        f'data-axes="{esc(",".join(axes))}"><td><span class="sv-cmp-pill '
                        f'{_kind_class(kr.kind)}">{esc(kr.kind)}</span></td>'
                        f"<td><code>{esc(axes_label(axes))}</code></td>"
                        f'<td class="sv-cmp-r">{count}</td>{_bytes_cell(ins)}{_bytes_cell(mv)}'
                        f"{cross}</tr>"
                    )
            body = (
                '<table class="sv-cmp-t"><tr><th>kind</th><th>axes</th>'
                '<th class="sv-cmp-r">count</th><th class="sv-cmp-r">in</th>'
                '<th class="sv-cmp-r">moved</th>'
                + ('<th class="sv-cmp-r">across hosts</th>' if hosts else "")
                + "</tr>"
                + "".join(rows)
                + "</table>"
            )
        cards.append(
            f'<div class="sv-cmp-card" data-strategy="{esc(r.strategy)}"{_target_attr(r)}>'
            f"{head}{body}</div>"
        )
    return '<div class="sv-cmp-cards">' + "".join(cards) + "</div>"


def _notes(c: Comparison) -> list[str]:
    items = [f"<div>{esc(n)}</div>" for n in c.notes]
    items += [f"<div><b>{esc(c.label(r))}</b> {esc(n)}</div>" for r in c.results for n in r.notes]
    if not items:
        return []
    return ['<div class="sv-cmp-notes">' + "".join(items) + "</div>"]


def _findings(c: Comparison) -> list[str]:
    items = [f"<div><b>{esc(label)}</b> {esc(text)}</div>" for label, text in finding_lines(c)]
    if not items:
        return []
    return ['<div class="sv-cmp-notes sv-cmp-findings">' + "".join(items) + "</div>"]


def _schedules(c: Comparison) -> list[str]:
    """Each pipeline strategy's schedule chart (:mod:`.schedule_html`) under its name and
    its :func:`schedule_line`; nothing when no strategy is pipelined."""
    piped = [r for r in c.results if r.schedule is not None]
    if not piped:
        return []
    out = [
        '<h4 class="sv-cmp-h">Pipeline schedules<span class="sv-cmp-dim">each stage\'s '
        "forwards and backwards over time, the bubble next to the theory (S-1)/(M+S-1)"
        "</span></h4>"
    ]
    for r in piped:
        assert r.schedule is not None
        out.append(
            f'<div class="sv-cmp-sched" data-strategy="{esc(r.strategy)}"{_target_attr(r)}>'
            f'<div class="sv-cmp-name">{esc(c.label(r))} <span class="sv-cmp-dim">'
            f"{esc(schedule_line(r))}</span></div>{schedule_html(r.schedule)}</div>"
        )
    return out


def _reports(c: Comparison) -> list[str]:
    out = []
    for r in c.results:
        what = [x for x in (r.title, r.description) if x and x != r.strategy]
        out.append(
            f'<details class="sv-cmp-report" data-strategy="{esc(r.strategy)}"{_target_attr(r)}>'
            f'<summary>{esc(c.label(r))}<span class="sv-cmp-dim">'
            f"{esc(' · '.join([*what, 'the full report']))}</span></summary>"
            f"{r.report._repr_html_()}</details>"
        )
    return out


def comparison_html(c: Comparison) -> str:
    """A comparison as a self-contained HTML fragment.

    Args:
        c: the comparison (live or hand-built).

    Returns:
        One ``<div class="sv-root sv-compare">`` with its own ``<style>``: the model, one table
        (memory per device by component, the peak, whether leaves and compiler agree,
        collectives per step by mesh axes, step time, the loss check), memory per device as
        stacked bars on one scale (and what the temp holds where it is smaller than the
        gradients), bytes moved per step by collective kind and by mesh axes as grouped bars,
        each strategy's collectives by kind and axes, each pipeline strategy's schedule chart,
        the notes, and each strategy's full report collapsed.
    """
    n = len(c.results)
    body = [
        f'<div class="sv-cmp-title">{esc(c.model)} <span class="sv-cmp-dim">'
        f"· {c.num_params:,} parameters ({esc(format_count(c.num_params))}) · "
        f"{esc(c.param_dtype)} · {n} strateg{'ies' if n != 1 else 'y'}</span></div>"
    ]
    mesh = common_mesh(c)
    line = f"every strategy on {mesh_summary(mesh)} · " if mesh is not None else ""
    body.append(f'<div class="sv-cmp-line">{esc(line + BYTES_NOTE)}</div>')
    body += [f'<div class="sv-cmp-line sv-cmp-estline">{esc(x)}</div>' for x in estimate_header(c)]
    body += _notes(c)
    body += _findings(c)
    if not c.results:
        body.append('<div class="sv-cmp-dim">no strategies</div>')
        return f'<div class="sv-root sv-compare">{STYLE}' + "".join(body) + "</div>"
    body.append(_comparison_table(c))
    if has_estimates(c):
        body.append(
            '<h4 class="sv-cmp-h">Estimated step on the target<span class="sv-cmp-dim">'
            f"{ESTIMATE_WORDS}: from the compiler's figures and the target's published peak "
            "rates; HBM: the peak against the target's, per device</span></h4>"
        )
        body.append(_estimate_table(c))
    body.append(
        '<h4 class="sv-cmp-h">Memory per device<span class="sv-cmp-dim">stacked by component, '
        "one scale for every strategy; hover for exact bytes</span></h4>"
    )
    body.append(_memory_chart(c))
    body += [
        f'<div class="sv-cmp-line sv-cmp-tempnote" data-strategy="{esc(r.strategy)}">'
        f"<b>{esc(c.label(r))}</b> {esc(temp_line(r.memory))}</div>"
        for r in c.results
        if r.memory.temp < r.memory.grads
    ]
    body.append(
        '<h4 class="sv-cmp-h">Bytes moved per step<span class="sv-cmp-dim">per device, by '
        "collective kind (ring model)</span></h4>"
    )
    body.append(_moved_chart(c, _kind_series(c), "sv-moved"))
    body.append(
        '<h4 class="sv-cmp-h">Bytes moved per step, by mesh axes<span class="sv-cmp-dim">per '
        "device: which axis carries the traffic (ring model)</span></h4>"
    )
    body.append(_moved_chart(c, _axes_series(c), "sv-moved-axes"))
    body.append(
        '<h4 class="sv-cmp-h">Collectives by kind and mesh axes<span class="sv-cmp-dim">'
        "per step, per device</span></h4>"
    )
    body.append(_kind_cards(c))
    body += _schedules(c)
    body.append(
        '<h4 class="sv-cmp-h">Full reports<span class="sv-cmp-dim">the ledger, intermediates, '
        "memory, timing and check of each strategy</span></h4>"
    )
    body += _reports(c)
    return f'<div class="sv-root sv-compare">{STYLE}' + "".join(body) + "</div>"
