"""A compiled program's :class:`~shardviz.model.Report` as one self-contained HTML fragment.

Scoped ``<style>`` (every class starts with ``sv-``), inline SVG, no script and no URL: the only
links are ``#fragment`` anchors inside the fragment (a collective and the intermediate it
reshards). Each ledger row is a ``<details>`` element whose body draws the collective's
device groups on the mesh and who sends to whom (:mod:`.traffic`; in words only on a ledger too
big for a picture per row), so the view works without JavaScript, in saved notebooks and
offline. Every string from the model is escaped where it enters the markup.

Testable hooks: each ledger row is ``<details class="sv-collective" data-kind="…"
data-axes="a,b">``; each device on a group map is ``<g class="sv-gdev" data-device="4"
data-group="0">`` (devices in no group have ``sv-out`` and no ``data-group``); each
intermediate row is ``<tr class="sv-intermediate">`` with ``data-reshard="1"`` at a reshard
point (past a few intermediates, only reshard points show at first: the others are in a
collapsed ``<details class="sv-irest">`` under the table, same rows and ids); spec cells are
``<code class="sv-spec">`` and never wrap; a source cell shows the line's code
(``sv-srcline``) or, as ``?``, why there is none; the first few reshard points with a spec are each followed by a ``<tr
class="sv-tiles-row">`` holding a collapsed ``<details class="sv-itiles" data-name="…">`` with
the value's tiles (one ``sv-root sv-array`` fragment, drawn as :func:`~.html.array_html` draws
any array); memory segments are ``sv-seg`` with ``data-part`` and ``data-bytes``; the check
badge is ``sv-check`` with ``sv-ok`` or ``sv-bad``.

With an estimate (``report.estimate``), the ledger is ``<div class="sv-ledger sv-est">`` with an
``est.`` cell per row (``<span class="sv-est-cell" data-seconds="…">``); the section is
``<section class="sv-estimate" data-target="…" data-bound="…" data-fits="1|0">`` holding one
``<tr class="sv-est-row" data-part="step|compute|memory|communication|mfu|hbm">`` per figure
and the HBM bar ``<div class="sv-hbm">`` (``data-peak``, ``data-hbm``); the header's target line
is ``sv-target``.
"""

from __future__ import annotations

import colorsys
import hashlib
from collections.abc import Sequence

from shardviz.model.array import ArrayLayout
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Collective, MemoryReport, Report, ShardingOf, Source
from shardviz.model.units import format_bytes, format_flops, format_seconds, sig3
from shardviz.render.colors import KIND_COLORS, OTHER_KIND
from shardviz.render.findings.html import findings_section_html
from shardviz.render.geometry import MeshGrid, MeshPanel, PanelGap, mesh_grid
from shardviz.render.html import CSS, MONO, SANS, array_html, tree_html
from shardviz.render.report.view import (
    ESTIMATE_WORDS,
    MAX_GROUPS,
    MAX_LEAVES,
    MAX_OPS,
    AxesGroup,
    LedgerRow,
    assignment_str,
    axes_groups,
    axes_repr,
    check_word,
    compiler_peak_str,
    cost_rows,
    estimate_notes,
    estimate_rows,
    folded_intermediates,
    format_diff,
    format_float_bytes,
    has_estimates,
    hbm_str,
    host_rows,
    host_spread,
    hosts_headline,
    ids_str,
    intermediate_index,
    kind_totals,
    layout_hint,
    ledger_headline,
    measured_step,
    memory_parts,
    mesh_line,
    moved_per_step,
    multi_host,
    no_source_words,
    on_one_device,
    one_device_cost,
    permute_groups,
    profile_rows,
    reshard_links,
    reshard_tiles,
    role_totals,
    short_location,
    status_line,
    sum_rule_str,
    target_line,
    value_str,
)
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import (
    esc,
    mesh_panel_frame,
    svg_num,
    svg_rect,
    svg_text,
    text_width,
)
from shardviz.render.timeline import timeline_html
from shardviz.render.traffic import arrow_paths, traffic_css, traffic_of, traffic_svg

#: Mesh cells drawn on group maps in all, before later maps of the same groups are left out.
MAP_BUDGET = 3000
#: Characters of group legend under a map before ``… N more groups``.
LEGEND_CHARS = 160
#: A group map with more cells than this is drawn with tighter elision.
MAP_CELLS = 128


#: Fill colours of device groups (light, so dark labels read), then golden-angle hues.
GROUP_FILLS = (
    "#9ecbff",
    "#ffc38a",
    "#a8e6a1",
    "#ffadad",
    "#d5b8ff",
    "#f7dc6f",
    "#8fdde3",
    "#f5b7d8",
    "#c9d48a",
    "#b6c2d9",
)
MEMORY_COLORS = {"argument": "#54aeff", "output": "#4ac26b", "temp": "#fb8f44"}
ROLE_COLORS = ("#8250df", "#0969da", "#1a7f37", "#bf8700", "#cf222e", "#1b7c83", "#953800")

_COLS = "3.4em 10.5em minmax(7em,1.4fr) 5.6em 5.6em 3.6em 6.8em minmax(8em,1.6fr)"

REPORT_CSS = stylesheet("report.css", SANS=SANS, _COLS=_COLS, MONO=MONO)

_KIND_CSS = "".join(
    f".sv-report .sv-k{i}{{color:{fg};background:{bg}}}"
    for i, (fg, bg) in enumerate([*KIND_COLORS.values(), OTHER_KIND])
)
STYLE = (
    "<style>"
    + (CSS + "\n" + REPORT_CSS + _KIND_CSS).replace("\n", "")
    + traffic_css(".sv-report")
    + "</style>"
)

_EST_COLS = "3.4em 10.5em minmax(7em,1.4fr) 5.6em 5.6em 5.6em 3.6em 6.8em minmax(8em,1.6fr)"

#: Added only to reports with an estimate, so the others stay as they were.
ESTIMATE_CSS = stylesheet("estimate.css", _EST_COLS=_EST_COLS, SANS=SANS)
EST_STYLE = "<style>" + ESTIMATE_CSS.replace("\n", "") + "</style>"

_HOST_COLS = "3.4em 10.5em minmax(7em,1.4fr) 5.6em 5.6em 5.6em 3.6em 6.8em minmax(8em,1.6fr)"
_EST_HOST_COLS = (
    "3.4em 10.5em minmax(7em,1.4fr) 5.6em 5.6em 5.6em 5.6em 3.6em 6.8em minmax(8em,1.6fr)"
)
#: Added only to reports whose mesh spans several hosts (the "across hosts" column).
HOSTS_STYLE = (
    "<style>"
    f".sv-report .sv-ledger.sv-hosts .sv-lrow{{grid-template-columns:{_HOST_COLS}}}"
    f".sv-report .sv-ledger.sv-est.sv-hosts .sv-lrow{{grid-template-columns:{_EST_HOST_COLS}}}"
    ".sv-report .sv-host-cell{color:#953800}"
    "</style>"
)


# --------------------------------------------------------------------------------------------
# Small pieces


def group_fill(i: int) -> str:
    """The fill colour of device group ``i`` on a group map."""
    if i < len(GROUP_FILLS):
        return GROUP_FILLS[i]
    hue = (i * 137.50776405003785) % 360.0 / 360.0
    r, g, b = colorsys.hls_to_rgb(hue, 0.78, 0.65)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _kind_index(kind: str) -> int:
    """Which ``sv-k<i>`` colour class a kind gets (unknown kinds share the last)."""
    return list(KIND_COLORS).index(kind) if kind in KIND_COLORS else len(KIND_COLORS)


def _kind_pill(kind: str, extra: str = "") -> str:
    return f'<span class="sv-pill sv-k{_kind_index(kind)}">{esc(kind)}</span>{extra}'


def _prefix(report: Report) -> str:
    """A short id prefix for this report's anchors, stable for the same report."""
    h = hashlib.sha1(report.function.encode("utf-8", "replace"))
    for c in report.collectives:
        h.update(c.name.encode("utf-8", "replace"))
    for s in report.intermediates:
        h.update(s.name.encode("utf-8", "replace"))
    return "sv" + h.hexdigest()[:8]


def _source_cell(source: Source | None, what: str = "collective") -> str:
    """``train.py:42`` with the line's code beside it and the call chain under it; a ``?``
    says why there is no source."""
    if source is None or source.innermost is None:
        why = no_source_words(what)
        return f'<span class="sv-dim" title="{esc(why)}">?</span><span class="sv-chain">{esc(why)}</span>'
    line = (
        f' <span class="sv-srcline" title="{esc(source.text)}">{esc(source.text)}</span>'
        if source.text
        else ""
    )
    return (
        f'<code title="{esc(source.location)}">{esc(short_location(source))}</code>{line}'
        f'<span class="sv-chain" title="{esc(source.chain)}">{esc(source.chain)}</span>'
    )


def _frames(source: Source | None, what: str = "collective") -> str:
    """The call chain, outermost first, the innermost line's code under its frame."""
    if source is None or not source.frames:
        return esc(no_source_words(what))
    items = [
        f"<li>{esc(f.function)} <span class='sv-dim'>at</span> {esc(f.file)}:{f.line}</li>"
        for f in source.frames
    ]
    if source.text:
        items[-1] = items[-1][: -len("</li>")] + f"<br><code>{esc(source.text)}</code></li>"
    return f'<ul class="sv-frames">{"".join(items)}</ul>'


def _th(cells: Sequence[str], right: Sequence[int] = ()) -> str:
    return (
        "<tr>"
        + "".join(
            f'<th class="sv-r">{c}</th>' if i in right else f"<th>{c}</th>"
            for i, c in enumerate(cells)
        )
        + "</tr>"
    )


# --------------------------------------------------------------------------------------------
# Group maps: a collective's device groups on the mesh


class _Maps:
    """Decides which ledger rows draw a group map, so big ledgers on big meshes stay small."""

    def __init__(self, report: Report) -> None:
        self.mesh = report.mesh
        self.grid: MeshGrid | None = None
        self.per_row = False
        self.first: dict[tuple, int] = {}
        self.left = MAP_BUDGET
        if self.mesh is None or not report.collectives:
            return
        grid = mesh_grid(self.mesh)
        if sum(1 for _ in grid.cells()) > MAP_CELLS:
            grid = mesh_grid(self.mesh, 6, 2)
        self.grid = grid
        self.cells = sum(1 for _ in grid.cells())
        self.per_row = self.cells * len(report.collectives) <= MAP_BUDGET

    def decide(self, index: int, c: Collective) -> tuple[str, int | None]:
        """``("draw", None)``, ``("same", k)`` (drawn under row ``k``) or ``("none", None)``."""
        if self.grid is None:
            return "none", None
        key = (c.groups, c.pairs)
        if not self.per_row and key in self.first:
            return "same", self.first[key]
        if not self.per_row and self.left < self.cells:
            return "none", None
        self.first.setdefault(key, index)
        self.left -= self.cells
        return "draw", None


MAP_CELL_H = 26.0
#: Cells are taller on permute maps, to leave room for the arrows.
PERMUTE_CELL_H = 46.0


def _map_cell_w(mesh: MeshLayout, pairs: bool) -> float:
    return max(60.0 if pairs else 34.0, text_width(f"d{max(mesh.device_ids, default=0)}", 11) + 12)


def _arrow(x1: float, y1: float, x2: float, y2: float, inset: float, cell: float) -> str:
    """A curved arrow between two anchors (:func:`~.traffic.arrow_paths`), stopping ``inset``
    short of each."""
    curve, tip = arrow_paths(x1, y1, x2, y2, inset, cell)
    return f'<path class="sv-arrow" d="{curve}"/><path class="sv-arrowhead" d="{tip}"/>'


def _map_panel(
    mesh: MeshLayout,
    grid: MeshGrid,
    panel: MeshPanel,
    member: dict[int, int],
    groups: Sequence[Sequence[int]],
    pairs: Sequence[tuple[int, int]],
) -> str:
    cell_w = _map_cell_w(mesh, bool(pairs))
    cell_h = PERMUTE_CELL_H if pairs else MAP_CELL_H
    frame, out = mesh_panel_frame(grid.rows, grid.cols, cell_w, cell_h, "sv-gmap")
    anchors: dict[int, tuple[float, float]] = {}
    label_y = 12.0 if pairs else cell_h / 2
    for cell in panel.cells:
        x, y = frame.col_x[cell.col], frame.row_y[cell.row]
        d = cell.device.id
        named = ", ".join(f"{n}={c}" for n, c in zip(mesh.axis_names, cell.coords, strict=True))
        g = member.get(d)
        where = f"d{d}" + (f" · {named}" if named else "")
        if g is None:
            tip = where + "\nin no group of this collective"
            attrs, fill = ' class="sv-gdev sv-out"', ""
        else:
            tip = where + f"\ngroup {g}: {ids_str(groups[g])}"
            attrs = f' class="sv-gdev" data-group="{g}"'
            fill = f' fill="{group_fill(g)}"'
        if pairs:
            sends = [f"d{b}" for a, b in pairs if a == d]
            gets = [f"d{a}" for a, b in pairs if b == d]
            tip += f"\nsends to {', '.join(sends) or 'none'} · receives from {', '.join(gets) or 'none'}"
        out.append(
            f'<g{attrs} data-device="{d}"><title>{esc(tip)}</title>'
            + svg_rect(x, y, cell_w, cell_h, fill)
            + svg_text(x + cell_w / 2, y + label_y, f"d{d}", "sv-lbl")
            + "</g>"
        )
        anchors[d] = (x + cell_w / 2, y + cell_h / 2 + 7)
    out.extend(frame.gaps("indices"))
    for a, b in pairs:
        if a != b and a in anchors and b in anchors:
            out.append(_arrow(*anchors[a], *anchors[b], inset=9.0, cell=cell_w))
    out.append("</svg>")
    caption = f"<figcaption>{esc(panel.label)}</figcaption>" if panel.label else ""
    return f'<figure class="sv-panel">{caption}{"".join(out)}</figure>'


def _group_map(mesh: MeshLayout, grid: MeshGrid, c: Collective, anchor: str) -> str:
    groups = permute_groups(c)
    member: dict[int, int] = {}
    for g, ids in enumerate(groups):
        for d in ids:
            member.setdefault(d, g)
    panels = []
    for panel in grid.panels:
        if isinstance(panel, PanelGap):
            panels.append(f'<div class="sv-elided">{esc(panel.text)}</div>')
        else:
            panels.append(_map_panel(mesh, grid, panel, member, groups, c.pairs))
    legend = []
    chars = 0
    for g, ids in enumerate(groups[:MAX_GROUPS]):
        label = ids_str(ids)
        chars += len(label) + 3
        if g and chars > LEGEND_CHARS:
            break
        legend.append(
            f'<span><span class="sv-sw" style="background:{group_fill(g)}"></span>'
            f"{esc(label)}</span>"
        )
    if len(groups) > len(legend):
        legend.append(f"<span>… {len(groups) - len(legend)} more groups</span>")
    hidden = (
        grid.rows.hidden
        + grid.cols.hidden
        + (grid.panel_count - sum(isinstance(p, MeshPanel) for p in grid.panels))
    )
    caption = "device groups on the mesh" + (" (part elided)" if hidden else "")
    if c.pairs:
        panel_of = {
            cell.device.id: i
            for i, panel in enumerate(grid.panels)
            if isinstance(panel, MeshPanel)
            for cell in panel.cells
        }
        undrawn = sum(
            1
            for a, b in c.pairs
            if a != b and (a not in panel_of or panel_of.get(a) != panel_of.get(b))
        )
        note = "arrows: source → target"
        if undrawn:
            note += f" ({undrawn} pair{'s' * (undrawn != 1)} across panels or elided: listed only)"
        legend.append(f"<span class='sv-dim'>{esc(note)}</span>")
    return (
        f'<figure class="sv-map" id="{anchor}"><figcaption>{esc(caption)}</figcaption>'
        f'<div class="sv-panels">{"".join(panels)}</div>'
        f'<div class="sv-legend">{"".join(legend)}</div></figure>'
    )


# --------------------------------------------------------------------------------------------
# Sections


def _header(report: Report) -> list[str]:
    status = (
        '<span class="sv-badge sv-ran">ran</span>'
        if report.ran
        else '<span class="sv-badge sv-compile">compile-only</span>'
    )
    out = [
        f'<div class="sv-title">{esc(report.function)}{status}{_check_badge(report)}</div>',
        f'<div class="sv-line">{esc(report.platform)} · {esc(mesh_line(report))} · '
        f"{esc(status_line(report))}</div>",
    ]
    target = target_line(report)
    if target:
        out.append(f'<div class="sv-line sv-target">{esc(target)}</div>')
    if report.notes:
        out.append(
            '<div class="sv-notes">'
            + "".join(f"<div><b>note</b> {esc(n)}</div>" for n in report.notes)
            + "</div>"
        )
    return out


def _check_badge(report: Report) -> str:
    c = report.check
    if c is None:
        return '<span class="sv-badge sv-check sv-none">not checked</span>'
    cls = "sv-ok" if c.matches else "sv-bad"
    return f'<span class="sv-badge sv-check {cls}">{check_word(report)}</span>'


def _stats(report: Report) -> str:
    n = len(report.collectives)
    moved = moved_per_step(report.collectives)
    tiles = [
        (f"{n} collective{'s' * (n != 1)}", f"{format_bytes(moved)} moved per device per step", ""),
        (format_bytes(report.memory.peak_bytes), "peak memory per device", ""),
    ]
    if multi_host(report):
        crossing = sum(c.cross_host_bytes for c in report.collectives)
        tiles.insert(
            1,
            (format_bytes(crossing), f"across hosts per device ({hosts_headline(report)})", ""),
        )
    t = report.timing
    if t is not None:
        tiles.append((format_seconds(t.step_seconds), f"step, median of {t.steps}", ""))
    else:
        tiles.append(("—", "step time: not measured", ""))
    e = report.estimate
    if e is not None:
        tiles.append(
            (f"≥ {format_seconds(e.step_seconds)}",
             f"estimated step, {e.bound}-bound (a lower bound)", "sv-est")
        )  # fmt: skip
    c = report.check
    if c is not None:
        tiles.append(
            (
                check_word(report),
                f"max |diff| {format_diff(c.max_abs_diff)} (tol {format_diff(c.tolerance)})",
                "sv-ok" if c.matches else "sv-bad",
            )
        )
    else:
        tiles.append(("—", "check: not run", ""))
    return (
        '<div class="sv-stats">'
        + "".join(
            f'<div class="sv-stat {cls}"><b>{esc(big)}</b><span>{esc(small)}</span></div>'
            for big, small, cls in tiles
        )
        + "</div>"
    )


def _ledger_row(
    report: Report,
    row: LedgerRow,
    prefix: str,
    maps: _Maps,
    inter: dict[str, int],
    est: bool = False,
) -> str:
    index, c = row.index, row.collective
    facts = _collective_facts(report, row, prefix, inter)
    dl = '<dl class="sv-facts2">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
    fig = _groups_figure(report, index, c, prefix, maps)
    axes = esc(",".join(c.axes))
    hosts = multi_host(report)
    return (
        f'<details class="sv-collective" id="{prefix}-c{index}" data-kind="{esc(c.kind)}" '
        f'data-axes="{axes}"'
        + (f' data-cross-host="{c.cross_host_bytes}"' if hosts else "")
        + f'>{_row_summary(row, est, hosts)}<div class="sv-body">{dl}{fig}</div>'
        "</details>"
    )


def _host_cell(row: LedgerRow) -> str:
    c = row.collective
    return (
        f'<span class="sv-r sv-host-cell" title="{c.cross_host_bytes:,} B of '
        f'{c.moved_bytes:,} B moved cross hosts">{esc(row.across_hosts)}</span>'
    )


def _row_summary(row: LedgerRow, est: bool, hosts: bool = False) -> str:
    """A ledger row's one line (its ``<summary>``): number, kind, operand, bytes (and those
    across hosts, on several hosts), group size, origin and source."""
    index, c = row.index, row.collective
    kind = _kind_pill(
        c.kind,
        f" <span class='sv-dim'>{c.combined[0]}/{c.combined[1]}</span>" if c.combined else "",
    )
    return (
        '<summary class="sv-lrow">'
        f'<span><span class="sv-caret"></span>{index}</span>'
        f"<span>{kind}</span>"
        f'<span class="sv-opcell" title="{esc(row.operand)}">{esc(row.operand)}</span>'
        f'<span class="sv-r" title="{c.in_bytes:,} B">{esc(row.in_bytes)}</span>'
        f'<span class="sv-r" title="{c.moved_bytes:,} B">{esc(row.moved)}</span>'
        + (_host_cell(row) if hosts else "")
        + (_est_cell(row) if est else "")
        + f'<span class="sv-r">{c.group_size}</span>'
        f'<span><span class="sv-pill sv-origin-{c.origin}">{esc(c.origin)}</span></span>'
        f'<span class="sv-srccell">{_source_cell(c.source)}</span>'
        "</summary>"
    )


def _collective_facts(
    report: Report, row: LedgerRow, prefix: str, inter: dict[str, int]
) -> list[tuple[str, str]]:
    """What an open ledger row lists about its collective: ``(term, HTML)`` pairs."""
    c = row.collective
    facts = [
        ("instruction", f"<code>{esc(c.name)}</code>" + (" (async)" if c.is_async else "")),
        ("operand", esc(value_str(c.in_dtype, c.in_shape))),
        ("result", esc(value_str(c.out_dtype, c.out_shape))),
        (
            "bytes per device",
            " · ".join(
                f'{k} <span title="{v:,} B">{esc(format_bytes(v))}</span>'
                for k, v in (("in", c.in_bytes), ("out", c.out_bytes), ("moved", c.moved_bytes))
            ),
        ),
        ("mesh axes", f"<code>{esc(axes_repr(c.axes))}</code>" if c.axes else "none matched"),
    ]
    facts.append(("pairs" if c.pairs else "groups", esc(row.devices)))
    if row.hosts:
        facts.append(("hosts", esc(row.hosts)))
    if c.dimension is not None:
        facts.append(("dimension", str(c.dimension)))
    if c.combined:
        facts.append(("combined", f"operand {c.combined[0]} of {c.combined[1]} in one all-reduce"))
    if c.reshard:
        j = inter.get(c.reshard)
        target = esc(c.reshard)
        link = f'<a href="#{prefix}-i{j}">{target}</a> (#{j})' if j else f"<code>{target}</code>"
        facts.append(("reshards", link))
    if c.why is not None:
        facts.append(("why", esc(c.why.summary)))
    if c.note:
        facts.append(("note", esc(c.note)))
    if c.estimated_seconds is not None:
        facts.append(
            (
                "estimated",
                f"{esc(row.estimate)} on "
                f"{esc(report.target.label if report.target else 'the target')} "
                f"<span class='sv-dim'>({ESTIMATE_WORDS})</span>"
                + (f"<br><code>{esc(c.estimate_formula)}</code>" if c.estimate_formula else ""),
            )
        )
    if c.op_name:
        facts.append(("op name", f"<code>{esc(c.op_name)}</code>"))
    facts.append(
        ("origin", "written by the user" if c.user_written else "inserted by the partitioner")
    )
    facts.append(("source", _frames(c.source)))
    return facts


def _groups_figure(report: Report, index: int, c: Collective, prefix: str, maps: _Maps) -> str:
    """The collective's device groups on the mesh, or a line saying where they are drawn (or
    why not)."""
    how, k = maps.decide(index, c)
    if how == "draw":
        assert report.mesh is not None and maps.grid is not None
        gmap = _group_map(report.mesh, maps.grid, c, f"{prefix}-m{index}")
        if maps.per_row:
            return gmap + traffic_svg(report.mesh, maps.grid, c)
        return gmap + _traffic_words(report, c)
    if how == "same":
        return (
            f'<div class="sv-dim">same device groups as <a href="#{prefix}-m{k}">#{k}</a>'
            " (drawn once to keep the page small)</div>" + _traffic_words(report, c)
        )
    if report.mesh is None:
        return '<div class="sv-dim">no mesh to draw the groups on</div>'
    return '<div class="sv-dim">mesh view left out to keep the page small</div>' + _traffic_words(
        report, c
    )


def _traffic_words(report: Report, c: Collective) -> str:
    """Who sends what to whom in words, where a ledger too big for a picture per row has none."""
    words = traffic_of(c, report.mesh).words
    return f'<div class="sv-twords sv-dim">who sends to whom: {esc(words)}</div>'


def _est_cell(row: LedgerRow) -> str:
    c = row.collective
    s = c.estimated_seconds
    if s is None:
        return '<span class="sv-r sv-dim">—</span>'
    return (
        f'<span class="sv-r sv-est-cell" data-seconds="{s!r}" '
        f'title="estimated, {ESTIMATE_WORDS}: {esc(c.estimate_formula)}">'
        f"{esc(row.estimate)}</span>"
    )


def _ledger(report: Report, prefix: str) -> list[str]:
    cs = report.collectives
    out = [
        f'<h4>Collectives<span class="sv-dim">{esc(ledger_headline(report))} · bytes are per '
        "device, moved by the ring model · click a row for its device groups</span></h4>"
    ]
    if not cs:
        out.append('<div class="sv-dim">none: every value stays where the specs put it</div>')
        return out
    out.append(
        '<div class="sv-kinds">'
        + "".join(
            f'<span class="sv-pill sv-k{_kind_index(t.kind)}" data-kind="{esc(t.kind)}">'
            f"<b>{esc(t.kind)}</b> {esc(t.summary)}</span>"
            for t in kind_totals(cs)
        )
        + "</div>"
    )
    est = has_estimates(report)
    hosts = multi_host(report)
    head = (
        '<div class="sv-lrow sv-lhead"><span>#</span><span>kind</span><span>operand → result'
        '</span><span class="sv-r">in</span><span class="sv-r">moved</span>'
        + (
            '<span class="sv-r" title="the part of moved that crosses hosts">across hosts</span>'
            if hosts
            else ""
        )
        + (
            f'<span class="sv-r" title="estimated seconds on the target, {ESTIMATE_WORDS}">'
            "est.</span>"
            if est
            else ""
        )
        + '<span class="sv-r">group</span><span>origin</span><span>source · call chain</span></div>'
    )
    maps = _Maps(report)
    inter = intermediate_index(report)
    cls = "sv-ledger" + (" sv-est" if est else "") + (" sv-hosts" if hosts else "")
    for group in axes_groups(report):
        out.append(_axes_header(group))
        out.append(f'<div class="{cls}" data-axes="' + esc(",".join(group.axes)) + '">')
        out.append(head)
        for row in group.ledger:
            out.append(_ledger_row(report, row, prefix, maps, inter, est))
        out.append("</div>")
    return out


def _axes_header(group: AxesGroup) -> str:
    title = f"over <code>{esc(axes_repr(group.axes))}</code>" if group.axes else "over no mesh axis"
    return f'<div class="sv-axes">{title}<span class="sv-dim">{esc(group.summary)}</span></div>'


def _intermediates(report: Report, prefix: str) -> list[str]:
    ins = report.intermediates
    r = len(report.reshards)
    shown, rest = folded_intermediates(report)
    folded = " · the others folded below" if rest else ""
    out = [
        f'<h4>Intermediates<span class="sv-dim">{len(ins)} in program order · {r} reshard '
        f"point{'s' * (r != 1)}, where the partitioner moves data (highlighted){folded}"
        "</span></h4>"
    ]
    if not ins:
        out.append('<div class="sv-dim">none recorded</div>')
        return out
    links = reshard_links(report)
    tiles = reshard_tiles(report)
    kinds = {i: c.kind for i, c in enumerate(report.collectives, 1)}
    head = _th(
        ["", "#", "name", "op", "value", "sharding", "source · call chain", "by collective"], [1]
    )

    def row(j: int, s: ShardingOf) -> str:
        by = ", ".join(
            f'<a href="#{prefix}-c{i}">#{i} {esc(kinds[i])}</a>' for i in links.get(s.name, [])
        )
        mark = '<span class="sv-pill sv-rs">reshard</span>' if s.reshard else ""
        attrs = ' data-reshard="1"' if s.reshard else ""
        return (
            f'<tr class="sv-intermediate" id="{prefix}-i{j}"{attrs}>'
            f"<td>{mark}</td><td class='sv-r'>{j}</td><td><code>{esc(s.name)}</code></td>"
            f"<td>{esc(s.op)}</td><td>{esc(value_str(s.dtype, s.shape))}</td>"
            f"<td><code class='sv-spec' title='{esc(s.hlo_sharding)}'>{esc(s.spec_str)}</code></td>"
            f'<td class="sv-srccell">{_source_cell(s.source, "value")}</td><td>{by}</td></tr>'
        )

    out.append('<table class="sv-t sv-inter">' + head)
    for item in shown:
        if isinstance(item, int):
            where = " (listed below)" if rest else ""
            out.append(
                f'<tr class="sv-gap"><td></td><td colspan="7">… {item} more without a reshard'
                f"{where}</td></tr>"
            )
            continue
        out.append(row(*item))
        if item[0] in tiles:
            out.append(_tiles_row(tiles[item[0]]))
    out.append("</table>")
    if rest:
        out.append(
            f'<details class="sv-irest"><summary>the other {len(rest)} intermediate'
            f"{'s' * (len(rest) != 1)}, without a reshard</summary>"
            f'<table class="sv-t sv-inter">{head}{"".join(row(j, s) for j, s in rest)}</table>'
            "</details>"
        )
    hint = layout_hint(report)
    if hint:
        words, code = hint
        if tiles:
            r = len(report.reshards)
            some = "" if len(tiles) == r else f" (drawn for {len(tiles)} of the {r})"
            words = f"open a reshard point's tiles under its row{some} · {words}"
        out.append(f'<div class="sv-dim">{esc(words)}: <code>{esc(code)}</code></div>')
    return out


def _tiles_row(layout: ArrayLayout) -> str:
    """A table row under a reshard point holding its tiles, collapsed until opened."""
    return (
        '<tr class="sv-tiles-row"><td></td><td colspan="7"><details class="sv-itiles" '
        f'data-name="{esc(layout.name)}"><summary>tiles of <code>{esc(layout.name)}</code> '
        f'<span class="sv-dim">{esc(layout.kind)} · {layout.num_distinct_tiles} distinct</span>'
        f"</summary>{array_html(layout)}</details></td></tr>"
    )


def _seg(part: str, nbytes: int, total: int, color: str, label: str, cls: str = "") -> str:
    pct = 100.0 * nbytes / total if total else 0.0
    text = f"{label} {format_bytes(nbytes)}"
    shown = esc(text) if pct >= 14 else (esc(label) if pct >= 7 else "")
    return (
        f'<div class="sv-seg {cls}" data-part="{esc(part)}" data-bytes="{nbytes}" '
        f'style="width:{pct:.2f}%;background:{color}" title="{esc(text)} ({nbytes:,} B)">'
        f"{shown}</div>"
    )


def _memory(m: MemoryReport, platform: str) -> list[str]:
    out = [
        f'<h4>Memory per device<span class="sv-dim">peak {esc(format_bytes(m.peak_bytes))} = '
        f"{esc(m.peak_definition)}</span></h4>"
    ]
    shown_out = max(0, m.output_bytes - m.alias_bytes)
    total = max(m.peak_bytes, m.argument_bytes + shown_out + m.temp_bytes, 1)
    out.append(
        '<div class="sv-stack sv-mem">'
        + _seg("argument", m.argument_bytes, total, MEMORY_COLORS["argument"], "argument")
        + _seg("output", shown_out, total, MEMORY_COLORS["output"], "output")
        + _seg("temp", m.temp_bytes, total, MEMORY_COLORS["temp"], "temp")
        + "</div>"
        f'<div class="sv-axisline"><span>0</span><span>peak {esc(format_bytes(m.peak_bytes))}'
        "</span></div>"
    )
    rows = []
    for p in memory_parts(m):
        color = MEMORY_COLORS.get(p.name)
        sw = f'<span class="sv-sw" style="background:{color}"></span>' if color else ""
        meaning = p.meaning
        if p.name == "output" and m.alias_bytes:
            meaning += " (the bar shows the part not aliased)"
        rows.append(
            f'<tr class="sv-mempart" data-part="{p.name}" data-bytes="{p.bytes}"><td>{sw}{p.name}'
            f'</td><td class="sv-r">{esc(format_bytes(p.bytes))}</td><td class="sv-r">'
            f"{p.bytes:,} B</td><td>{esc(meaning)}</td></tr>"
        )
    rows.append(
        f'<tr class="sv-mempart" data-part="peak" data-bytes="{m.peak_bytes}"><td><b>peak</b>'
        f'</td><td class="sv-r"><b>{esc(format_bytes(m.peak_bytes))}</b></td><td class="sv-r">'
        f"{m.peak_bytes:,} B</td><td>{esc(m.peak_definition)}</td></tr>"
    )
    out.append('<table class="sv-t">' + _th(["part", "bytes", "exact", ""], [1, 2]))
    out.extend(rows)
    out.append("</table>")
    if m.compiler_peak_bytes is not None and m.compiler_peak_bytes != m.peak_bytes:
        out.append(f'<div class="sv-note">{esc(compiler_peak_str(m, platform))}</div>')
    out.extend(
        f'<div class="sv-note">{esc(x)}</div>' for x in (sum_rule_str(m), assignment_str(m)) if x
    )
    if m.by_leaf:
        out.extend(_by_leaf(m))
    if m.device_stats:
        out.append(
            '<table class="sv-t">' + _th(["device", "in use", "peak in use", "limit"], [1, 2, 3])
        )
        for d in m.device_stats:
            limit = format_bytes(d.bytes_limit) if d.bytes_limit is not None else "n/a"
            out.append(
                f"<tr><td>d{d.device_id}</td><td class='sv-r'>{esc(format_bytes(d.bytes_in_use))}"
                f"</td><td class='sv-r'>{esc(format_bytes(d.peak_bytes_in_use))}</td>"
                f"<td class='sv-r'>{esc(limit)}</td></tr>"
            )
        out.append("</table>")
    return out


def _by_leaf(m: MemoryReport) -> list[str]:
    roles = role_totals(m)
    color = {r: ROLE_COLORS[i % len(ROLE_COLORS)] for i, (r, _, _) in enumerate(roles)}
    total = sum(b for _, _, b in roles) or 1
    out = [
        '<div class="sv-line" style="margin:10px 0 4px">arguments by role and by leaf '
        "(the largest device's share)</div>",
        '<div class="sv-stack sv-roles">'
        + "".join(
            _seg(f"role:{r}", b, total, color[r] + "88", f"{r} ({n})", "sv-role")
            for r, n, b in roles
        )
        + "</div>",
        '<table class="sv-t sv-leaves" style="margin-top:6px">'
        + _th(["leaf", "role", "bytes", ""], [2]),
    ]
    top = max(x.bytes for x in m.by_leaf) or 1
    for leaf in m.by_leaf[:MAX_LEAVES]:
        w = 120.0 * leaf.bytes / top
        out.append(
            f'<tr class="sv-leafrow"><td><code>{esc(leaf.path)}</code></td><td>'
            f'<span class="sv-sw" style="background:{color[leaf.role]}"></span>{esc(leaf.role)}'
            f'</td><td class="sv-r" title="{leaf.bytes:,} B">{esc(format_bytes(leaf.bytes))}</td>'
            f'<td><span class="sv-minibar" style="width:{w:.1f}px;background:{color[leaf.role]}">'
            "</span></td></tr>"
        )
    if len(m.by_leaf) > MAX_LEAVES:
        rest = m.by_leaf[MAX_LEAVES:]
        out.append(
            f'<tr class="sv-gap"><td colspan="4">… {len(rest)} more leaves, '
            f"{esc(format_bytes(sum(x.bytes for x in rest)))}</td></tr>"
        )
    out.append("</table>")
    return out


def _estimate(report: Report) -> list[str]:
    e = report.estimate
    assert e is not None
    fits = e.fits
    attrs = f' data-fits="{int(fits)}"' if fits is not None else ""
    out = [
        f'<section class="sv-estimate" data-target="{esc(e.target)}" data-bound="{esc(e.bound)}"'
        f"{attrs}><h4>Estimate on {esc(e.target)}<span class='sv-estword'>estimate</span>"
        f'<span class="sv-dim">{ESTIMATE_WORDS}: from the compiler\'s figures and the '
        "target's published peak rates</span></h4>"
    ]
    rows = []
    for r in estimate_rows(e, measured_step(report)):
        value = esc(r.value)
        if r.key == "hbm" and fits is not None:
            value = f'<span class="{"sv-fit-ok" if fits else "sv-fit-bad"}">{value}</span>'
        elif r.key == "step":
            value = f"<b>{value}</b>"
        rows.append(
            f'<tr class="sv-est-row" data-part="{r.key}"><td>{esc(r.name)}</td>'
            f'<td class="sv-r">{value}</td><td class="sv-dim">{esc(r.meaning)}</td></tr>'
        )
    out.append('<table class="sv-t">' + "".join(rows) + "</table>")
    if e.peak_bytes is not None and e.hbm_bytes > 0:
        top = max(e.peak_bytes, e.hbm_bytes)
        peak_w = 100.0 * e.peak_bytes / top
        line_x = 100.0 * e.hbm_bytes / top
        over = " sv-over" if not fits else ""
        out.append(
            f'<div class="sv-hbm{over}" data-peak="{e.peak_bytes}" data-hbm="{e.hbm_bytes}" '
            f'title="{esc(hbm_str(e))}"><div class="sv-hbm-peak" style="width:{peak_w:.2f}%">'
            f'</div><div class="sv-hbm-line" style="left:calc({line_x:.2f}% - 1px)"></div></div>'
            f'<div class="sv-axisline"><span>0</span><span>peak {esc(format_bytes(e.peak_bytes))}'
            f" · HBM {esc(format_bytes(e.hbm_bytes))} per device (dashed)</span></div>"
        )
    notes = estimate_notes(report)
    if notes:
        out.append(
            '<div class="sv-note">'
            + "<br>".join(f"<b>{esc(k)}</b> {esc(n)}" for k, n in notes)
            + "</div>"
        )
    out.append("</section>")
    return out


def _cost(report: Report) -> list[str]:
    out = [
        "<h4>Cost<span class='sv-dim'>per step: the compiler's estimate, loops counted</span></h4>"
    ]
    c = report.cost
    if c is None:
        out.append('<div class="sv-dim">not available from this backend</div>')
        return out
    if on_one_device(report):
        flops, accessed = one_device_cost(c)
        out.append(
            '<table class="sv-t">'
            + _th(["", "on the one device"], [1])
            + f"<tr><td>flops</td><td class='sv-r'>{esc(format_flops(flops))}</td></tr>"
            f"<tr><td>bytes accessed</td><td class='sv-r'>{esc(format_float_bytes(accessed))}"
            "</td></tr></table>"
        )
    else:
        out.append('<table class="sv-t">' + _th(["", "per device", "global"], [1, 2]))
        out.append(
            f"<tr><td>flops</td><td class='sv-r'>{esc(format_flops(c.flops_per_device))}</td>"
            f"<td class='sv-r'>{esc(format_flops(c.flops_global))}</td></tr>"
            f"<tr><td>bytes accessed</td><td class='sv-r'>"
            f"{esc(format_float_bytes(c.bytes_accessed_per_device))}</td><td class='sv-r'>"
            f"{esc(format_float_bytes(c.bytes_accessed_global))}</td></tr></table>"
        )
    if c.flops_per_device and c.bytes_accessed_per_device:
        ratio = c.flops_per_device / c.bytes_accessed_per_device
        out.append(f'<div class="sv-note">{sig3(ratio)} FLOP per byte accessed, per device</div>')
    extra = cost_rows(c)
    if extra:
        out.append('<table class="sv-t sv-cost-more">')
        out.extend(
            f'<tr data-row="{esc(name)}"><td>{esc(name)}</td><td class="sv-r">{esc(value)}</td>'
            f'<td class="sv-dim">{esc(meaning)}</td></tr>'
            for name, value, meaning in extra
        )
        out.append("</table>")
    return out


def _samples_svg(samples: Sequence[float], median: float) -> str:
    lo, hi = min(samples), max(samples)
    span = (hi - lo) or 1.0
    w, h, pad = 200.0, 22.0, 6.0
    parts = [
        f'<svg class="sv-samples" width="{svg_num(w + 2 * pad)}" height="{svg_num(h + 12)}" '
        'role="img">',
        f'<path d="M{svg_num(pad)} {svg_num(h / 2)}h{svg_num(w)}" stroke="#d0d7de"/>',
    ]
    for s in samples:
        x = pad + w * (s - lo) / span
        parts.append(
            f'<circle cx="{svg_num(x)}" cy="{svg_num(h / 2)}" r="3" fill="#0969da" '
            'fill-opacity=".45">'
            f"<title>{esc(format_seconds(s))}</title></circle>"
        )
    mx = pad + w * (median - lo) / span
    if 0 <= mx <= w + 2 * pad:
        parts.append(
            f'<path d="M{svg_num(mx)} 2v{svg_num(h - 4)}" stroke="#1b1f24" stroke-width="1.5"/>'
        )
    parts.append(svg_text(pad, h + 10, format_seconds(lo), "sv-tick"))
    parts.append(svg_text(pad + w, h + 10, format_seconds(hi), "sv-tick", ' text-anchor="end"'))
    parts.append("</svg>")
    return "".join(parts)


def _timing(report: Report) -> list[str]:
    out = ["<h4>Timing<span class='sv-dim'>wall clock</span></h4>"]
    t = report.timing
    if t is None:
        why = "compile-only" if not report.ran else "not measured"
        out.append(f'<div class="sv-dim">not measured ({why})</div>')
        return out
    out.append(
        '<table class="sv-t">'
        f"<tr><td>compile</td><td class='sv-r'>{esc(format_seconds(t.compile_seconds))}</td></tr>"
        f"<tr><td>first run</td><td class='sv-r'>{esc(format_seconds(t.first_run_seconds))}"
        "</td></tr>"
        f"<tr><td><b>step</b></td><td class='sv-r'><b>{esc(format_seconds(t.step_seconds))}</b>"
        f"</td><td class='sv-dim'>median of {t.steps} steps</td></tr></table>"
    )
    if t.step_samples:
        out.append(_samples_svg(t.step_samples, t.step_seconds))
    if report.hosts:
        spread = host_spread(report)
        out.append(
            '<table class="sv-t sv-hosts-timing"><tr><th>host</th><th>devices</th>'
            "<th>step (its own)</th><th>live peak</th></tr>"
            + "".join(
                f'<tr data-process="{esc(p.split()[-1])}"><td>{esc(p)}</td><td>{esc(d)}</td>'
                f"<td class='sv-r'>{esc(st)}</td><td class='sv-r'>{esc(pk)}</td></tr>"
                for p, d, st, pk in host_rows(report)
            )
            + "</table>"
            + (f'<div class="sv-dim">{esc(spread)}</div>' if spread else "")
        )
    return out


def _check(report: Report) -> list[str]:
    out = ["<h4>Check<span class='sv-dim'>against a single-device run</span></h4>"]
    c = report.check
    if c is None:
        why = "compile-only" if not report.ran else "not run"
        out.append(f'<div class="sv-dim">not checked ({why})</div>')
        return out
    cls = "sv-ok" if c.matches else "sv-bad"
    out.append(
        f'<div class="sv-big"><span class="sv-badge sv-check {cls}" style="margin:0 6px 0 0;'
        f'font-size:13px">{check_word(report)}</span><span class="sv-dim">vs {esc(c.reference)}</span></div>'
        '<table class="sv-t" style="margin-top:6px">'
        f"<tr><td>max abs diff</td><td class='sv-r'>{esc(format_diff(c.max_abs_diff))}</td></tr>"
        f"<tr><td>max rel diff</td><td class='sv-r'>{esc(format_diff(c.max_rel_diff))}</td></tr>"
        f"<tr><td>tolerance</td><td class='sv-r'>{esc(format_diff(c.tolerance))}</td></tr>"
        + (
            f"<tr><td>rule</td><td class='sv-r'>{esc(c.tolerance_rule)}</td></tr>"
            if c.tolerance_rule
            else ""
        )
        + "</table>"
    )
    return out


def _profile(report: Report) -> list[str]:
    profile = report.profile or ()
    out = [f"<h4>Profile<span class='sv-dim'>{len(profile)} ops measured</span></h4>"]
    if any(op.illustrative for op in profile):
        out.append(
            '<div class="sv-illus sv-illustrative"><b>Illustrative</b>: measured on '
            f"{esc(report.platform)}; these durations show the shape of the program, they do "
            "not predict accelerator time</div>"
        )
    if not profile:
        return out
    out.append(
        '<table class="sv-t sv-profile">'
        + _th(["op", "count", "median", "total", "share", ""], [1, 2, 3, 4])
    )
    ranked = profile_rows(profile)
    for op, total, share in ranked[:MAX_OPS]:
        out.append(
            f'<tr class="sv-op"><td><code>{esc(op.name)}</code></td><td class="sv-r">{op.count}'
            f'</td><td class="sv-r">{esc(format_seconds(op.seconds))}</td><td class="sv-r">'
            f'{esc(format_seconds(total))}</td><td class="sv-r">{share * 100:.1f}%</td><td>'
            f'<span class="sv-minibar" style="width:{160 * share:.1f}px;background:#0969da">'
            "</span></td></tr>"
        )
    if len(ranked) > MAX_OPS:
        out.append(
            f'<tr class="sv-gap"><td colspan="6">… {len(ranked) - MAX_OPS} more ops</td></tr>'
        )
    out.append("</table>")
    return out


def _trees(report: Report) -> list[str]:
    a, o = len(report.arguments), len(report.outputs)
    if not a and not o:
        return []
    body = "".join(tree_html(t) for t in (report.arguments, report.outputs) if len(t))
    return [
        f'<details class="sv-trees"><summary>Arguments ({a} lea{"ves" if a != 1 else "f"}) and '
        f"outputs ({o} lea{'ves' if o != 1 else 'f'})</summary>{body}</details>"
    ]


def report_html(report: Report) -> str:
    """A report as a self-contained HTML fragment.

    Args:
        report: the report (live or hand-built).

    Returns:
        One ``<div class="sv-root sv-report">`` with its own ``<style>``: the header (function,
        platform, mesh, ran or compile-only, notes), headline numbers, the collective ledger
        grouped by mesh axes (each row opens to show its device groups on the mesh), the
        intermediates in program order with reshard points marked and linked to their
        collectives, memory per device as stacked bars, cost, timing, the check, the profile
        and its per-device timeline when there is one, and the argument and output trees (collapsed).
    """
    prefix = _prefix(report)
    body = [*_header(report), _stats(report), *findings_section_html(report.findings)]
    body += _ledger(report, prefix)
    body += _intermediates(report, prefix)
    body += _memory(report.memory, report.platform)
    if report.estimate is not None:
        body += _estimate(report)
    cards = [_cost(report), _timing(report), _check(report)]
    body.append(
        '<div class="sv-cards">'
        + "".join("<div>" + "".join(c) + "</div>" for c in cards)
        + "</div>"
    )
    if report.profile is not None:
        body += _profile(report)
    if report.timeline:
        body.append(timeline_html(report))
    body += _trees(report)
    style = STYLE + (EST_STYLE if report.estimate is not None or has_estimates(report) else "")
    style += HOSTS_STYLE if multi_host(report) else ""
    return f'<div class="sv-root sv-report" id="{prefix}">{style}' + "".join(body) + "</div>"
