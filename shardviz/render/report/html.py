"""A compiled program's :class:`~shardviz.model.Report` as one self-contained HTML fragment.

Scoped ``<style>`` (every class starts with ``sv-``), inline SVG, no script and no URL: the only
links are ``#fragment`` anchors inside the fragment (a collective and the intermediate it
reshards). Each ledger row is a ``<details>`` element whose body draws the collective's
device groups on the mesh and who sends to whom (:mod:`shardviz.render.traffic`; in words only on a
ledger too big for a picture per row, or past ``FOLD_COLLECTIVES`` collectives where an earlier row
drew the same picture: a ``sv-maps-note`` under the ledger counts those rows), so the view works
without JavaScript, in saved notebooks and offline. Every string from the model is escaped where it enters the markup.

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
is ``sv-target``. Where a kernel was not counted the section also has ``data-bounded="0"``, a
``<div class="sv-notes sv-uncounted">`` naming the kernels and a ``data-part="kernels"`` row.

The cost card lists the program's kernels, one ``<tr class="sv-kernel" data-kernel="…"
data-how="counted|declared|bounded|not counted" data-counted="1|0">`` each (``sv-kernel-missing``
too where it was not counted).
"""

from __future__ import annotations

import colorsys
import hashlib
from collections.abc import Sequence

from shardviz.analysis.traffic import permute_groups, traffic_of
from shardviz.model.array import ArrayLayout
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Collective, Report, Source
from shardviz.model.units import format_bytes, format_seconds
from shardviz.render.colors import KIND_COLORS, OTHER_KIND
from shardviz.render.findings.html import findings_section_html
from shardviz.render.geometry import MeshGrid, MeshPanel, PanelGap, mesh_grid
from shardviz.render.html import CSS, MONO, SANS, array_html, tree_html
from shardviz.render.report.sections import (
    CheckSection,
    CostSection,
    EstimateSection,
    HeaderSection,
    HostMemory,
    IntermediateRow,
    IntermediatesSection,
    LedgerSection,
    MemorySection,
    ProfileSection,
    ReportView,
    TimingSection,
    report_view,
)
from shardviz.render.report.transfers import transfers_html
from shardviz.render.report.view import (
    ESTIMATE_WORDS,
    FOLD_COLLECTIVES,
    MAX_GROUPS,
    AxesGroup,
    LedgerRow,
    axes_repr,
    ids_str,
    intermediate_index,
    no_source_words,
    short_location,
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
from shardviz.render.traffic import arrow_paths, traffic_css, traffic_svg

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
        return (
            f'<span class="sv-dim" title="{esc(why)}">?</span>'
            f'<span class="sv-chain" title="{esc(why)}">{esc(why)}</span>'
        )
    line = (
        f' <span class="sv-srcline" title="{esc(source.text)}">{esc(source.text)}</span>'
        if source.text
        else ""
    )
    return (
        f'<code title="{esc(_frames_title(source))}">{esc(short_location(source))}</code>{line}'
        f'<span class="sv-chain" title="{esc(source.chain)}">{esc(source.chain)}</span>'
    )


def _frames_title(source: Source) -> str:
    """Every frame as a person names its file, outermost first (``train.py:12 >
    shardviz/strategies/models/decoder.py:250``): never the machine's path to a file."""
    return " > ".join(f.place for f in source.frames)


def _frames(source: Source | None, what: str = "collective") -> str:
    """The call chain, outermost first, the innermost line's code under its frame."""
    if source is None or not source.frames:
        return esc(no_source_words(what))
    items = [
        f"<li>{esc(f.function)} <span class='sv-dim'>at</span> {esc(f.place)}</li>"
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
    """Decides which ledger rows draw a group map, so big ledgers on big meshes stay small.

    A small ledger draws every row's map and traffic picture (``per_row``). Past
    :data:`~.view.FOLD_COLLECTIVES` collectives, or when the maps would pass
    :data:`MAP_BUDGET` cells, a picture is drawn once per distinct figure and later rows with
    the same one link to it (rows of a big model mostly share their device groups: pictures
    repeated row after row were most of a big report's bytes).
    """

    def __init__(self, report: Report) -> None:
        self.mesh = report.mesh
        self.grid: MeshGrid | None = None
        self.per_row = False
        self.once = len(report.collectives) > FOLD_COLLECTIVES
        self.first: dict[tuple, int] = {}
        self.left = MAP_BUDGET
        self.counts = {"draw": 0, "same": 0, "none": 0}
        if self.mesh is None or not report.collectives:
            return
        grid = mesh_grid(self.mesh)
        if sum(1 for _ in grid.cells()) > MAP_CELLS:
            grid = mesh_grid(self.mesh, 6, 2)
        self.grid = grid
        self.cells = sum(1 for _ in grid.cells())
        self.per_row = self.cells * len(report.collectives) <= MAP_BUDGET

    def key(self, c: Collective) -> tuple:
        """What a drawn figure shows: the groups (and pairs), and with a traffic picture per
        row its pattern too (a ring and all pairs over the same groups draw differently)."""
        key: tuple = (c.groups, c.pairs)
        return key + (traffic_of(c, self.mesh).pattern,) if self.per_row else key

    def decide(self, index: int, c: Collective) -> tuple[str, int | None]:
        """``("draw", None)``, ``("same", k)`` (drawn under row ``k``) or ``("none", None)``."""
        how, k = self._decide(index, c)
        self.counts[how] += 1
        return how, k

    def _decide(self, index: int, c: Collective) -> tuple[str, int | None]:
        if self.grid is None:
            return "none", None
        key = self.key(c)
        if (self.once or not self.per_row) and key in self.first:
            return "same", self.first[key]
        if not self.per_row and self.left < self.cells:
            return "none", None
        self.first.setdefault(key, index)
        self.left -= self.cells
        return "draw", None

    def note(self) -> str:
        """How many rows drew their device groups and how many point to an earlier row's
        picture or left it out (``""`` when every row drew its own, or with no mesh)."""
        same, none = self.counts["same"], self.counts["none"]
        if self.grid is None or not (same or none):
            return ""
        drawn = self.counts["draw"]
        parts = [f"device groups drawn for {drawn} row{'s' * (drawn != 1)}"]
        if same:
            parts.append(
                f"{same} row{'s' * (same != 1)} with the same groups as an earlier row link to "
                "its picture and say who sends to whom in words"
            )
        if none:
            parts.append(f"{none} left out to keep the page small (in words)")
        return f'<div class="sv-dim sv-maps-note">{esc(" · ".join(parts))}</div>'


MAP_CELL_H = 26.0
#: Cells are taller on permute maps, to leave room for the arrows.
PERMUTE_CELL_H = 46.0


def _map_cell_w(mesh: MeshLayout, pairs: bool) -> float:
    return max(60.0 if pairs else 34.0, text_width(f"d{max(mesh.device_ids, default=0)}", 11) + 12)


def _arrow(x1: float, y1: float, x2: float, y2: float, inset: float, cell: float) -> str:
    """A curved arrow between two anchors (:func:`~shardviz.render.traffic.arrow_paths`), stopping
    ``inset`` short of each."""
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


def _header(h: HeaderSection) -> list[str]:
    status = (
        '<span class="sv-badge sv-ran">ran</span>'
        if h.ran
        else '<span class="sv-badge sv-compile">compile-only</span>'
    )
    out = [
        f'<div class="sv-title">{esc(h.function)}{status}{_check_badge(h)}</div>',
        f'<div class="sv-line">{esc(h.platform)} · {esc(h.mesh)} · {esc(h.status)}</div>',
    ]
    if h.target:
        out.append(f'<div class="sv-line sv-target">{esc(h.target)}</div>')
    if h.notes:
        out.append(
            '<div class="sv-notes">'
            + "".join(f"<div><b>note</b> {esc(n)}</div>" for n in h.notes)
            + "</div>"
        )
    return out


def _check_badge(h: HeaderSection) -> str:
    if h.matches is None:
        return '<span class="sv-badge sv-check sv-none">not checked</span>'
    cls = "sv-ok" if h.matches else "sv-bad"
    return f'<span class="sv-badge sv-check {cls}">{h.check}</span>'


def _stats(v: ReportView) -> str:
    n = v.ledger.count
    tiles = [
        (f"{n} collective{'s' * (n != 1)}", f"{v.ledger.moved} moved per device per step", ""),
        (v.memory.peak, "peak memory per device", ""),
    ]
    if v.ledger.multi_host:
        tiles.insert(
            1, (v.ledger.across_hosts, f"across hosts per device ({v.ledger.hosts_headline})", "")
        )
    t = v.timing
    if t.measured:
        tiles.append((t.step, f"step, median of {t.steps}", ""))
    else:
        tiles.append(("—", "step time: not measured", ""))
    e = v.estimate
    if e is not None:
        what = "a lower bound" if e.bounded else f"not a bound: {e.why_not_a_bound}"
        tiles.append(
            (e.at_least if e.bounded else e.step, f"estimated step, {e.bound}-bound ({what})",
             "sv-est" if e.bounded else "sv-est sv-bad")
        )  # fmt: skip
    c = v.check
    if c.checked:
        tiles.append(
            (
                c.word,
                f"max |diff| {c.max_abs} (tol {c.tolerance})",
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
    inter: dict[str, tuple[int, int]],
    est: bool = False,
    hosts: bool = False,
) -> str:
    index, c = row.index, row.collective
    facts = _collective_facts(report, row, prefix, inter)
    dl = '<dl class="sv-facts2">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
    fig = _groups_figure(report, index, c, prefix, maps)
    axes = esc(",".join(c.axes))
    return (
        f'<details class="sv-collective" id="{prefix}-c{index}" data-kind="{esc(c.kind)}" '
        f'data-axes="{axes}"'
        + (f' data-cross-host="{c.cross_host_bytes}"' if hosts else "")
        + f'>{_row_summary(row, est, hosts)}<div class="sv-body">{dl}{fig}</div>'
        "</details>"
    )


def _runs(row: LedgerRow) -> str:
    """`` x32`` under a collective in a loop: its runs a step (the bytes are one run's)."""
    if not row.runs:
        return ""
    what = (
        "an unknown number of times (counted once)" if row.runs == "x?" else row.runs[1:] + " times"
    )
    return f' <span class="sv-runs" title="runs {what} a step">{esc(row.runs)}</span>'


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
        (f" <span class='sv-dim'>{c.combined[0]}/{c.combined[1]}</span>" if c.combined else "")
        + (f" <b class='sv-times'>{esc(row.times.strip())}</b>" if row.times else ""),
    )
    return (
        '<summary class="sv-lrow">'
        f'<span><span class="sv-caret"></span>{index}</span>'
        f"<span>{kind}</span>"
        f'<span class="sv-opcell" title="{esc(row.operand)}">{esc(row.operand)}</span>'
        f'<span class="sv-r" title="{c.in_bytes:,} B">{esc(row.in_bytes)}</span>'
        f'<span class="sv-r" title="{c.moved_bytes:,} B">{esc(row.moved)}{_runs(row)}</span>'
        + (_host_cell(row) if hosts else "")
        + (_est_cell(row) if est else "")
        + f'<span class="sv-r">{c.group_size}</span>'
        f'<span><span class="sv-pill sv-origin-{c.origin}">{esc(c.origin)}</span></span>'
        f'<span class="sv-srccell">{_source_cell(c.source)}</span>'
        "</summary>"
    )


def _collective_facts(
    report: Report, row: LedgerRow, prefix: str, inter: dict[str, tuple[int, int]]
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
        j, shown = inter.get(c.reshard, (0, 0))
        target = esc(c.reshard)
        link = (
            f'<a href="#{prefix}-i{shown}">{target}</a> (#{j})' if j else f"<code>{target}</code>"
        )
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
    if row.same:
        facts.append(("like it", esc(row.like_it)))
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
        what = "device groups and arrows" if maps.per_row else "device groups"
        return (
            f'<div class="sv-dim">same {what} as <a href="#{prefix}-m{k}">#{k}</a>'
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


def _ledger(
    report: Report, ledger: LedgerSection, prefix: str, shown_as: dict[int, int] | None = None
) -> list[str]:
    """The ledger; ``shown_as`` maps a value's number to the row that shows it (links)."""
    out = [
        f'<h4>Collectives<span class="sv-dim">{esc(ledger.headline)} · bytes are per '
        "device, moved by the ring model · click a row for its device groups</span></h4>"
    ]
    if not ledger.count:
        out.append('<div class="sv-dim">none: every value stays where the specs put it</div>')
        return out
    out.append(
        '<div class="sv-kinds">'
        + "".join(
            f'<span class="sv-pill sv-k{_kind_index(t.kind)}" data-kind="{esc(t.kind)}">'
            f"<b>{esc(t.kind)}</b> {esc(t.summary)}</span>"
            for t in ledger.kinds
        )
        + "</div>"
    )
    est = ledger.estimates
    hosts = ledger.multi_host
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
    to = shown_as or {}
    inter = {name: (j, to.get(j, j)) for name, j in intermediate_index(report).items()}
    cls = "sv-ledger" + (" sv-est" if est else "") + (" sv-hosts" if hosts else "")
    for group in ledger.groups:
        out.append(_axes_header(group))
        out.append(f'<div class="{cls}" data-axes="' + esc(",".join(group.axes)) + '">')
        out.append(head)
        for row in group.ledger:
            out.append(_ledger_row(report, row, prefix, maps, inter, est, hosts))
        out.append("</div>")
    note = maps.note()
    return [*out, note] if note else out


def _axes_header(group: AxesGroup) -> str:
    title = f"over <code>{esc(axes_repr(group.axes))}</code>" if group.axes else "over no mesh axis"
    return f'<div class="sv-axes">{title}<span class="sv-dim">{esc(group.summary)}</span></div>'


def _intermediates(
    ins: IntermediatesSection, prefix: str, shown_as: dict[int, int] | None = None
) -> list[str]:
    r = ins.reshards
    folded = " · the others folded below" if ins.rest else ""
    out = [
        f'<h4>Intermediates<span class="sv-dim">{ins.count} in program order · {r} reshard '
        f"point{'s' * (r != 1)}, where the partitioner moves data (highlighted){folded}"
        "</span></h4>"
    ]
    if not ins.count:
        out.append('<div class="sv-dim">none recorded</div>')
        return out
    head = _th(
        ["", "#", "name", "op", "value", "sharding", "source · call chain", "by collective"], [1]
    )

    def row(item: IntermediateRow) -> str:
        s, j = item.value, item.index
        to = shown_as or {}
        by = ", ".join(
            f'<a href="#{prefix}-c{to.get(i, i)}">#{i} {esc(kind)}</a>' for i, kind in item.by
        )
        mark = '<span class="sv-pill sv-rs">reshard</span>' if s.reshard else ""
        attrs = ' data-reshard="1"' if s.reshard else ""
        return (
            f'<tr class="sv-intermediate" id="{prefix}-i{j}"{attrs}>'
            f"<td>{mark}</td><td class='sv-r'>{j}</td><td><code>{esc(s.name)}</code>{_times(item)}</td>"
            f"<td>{esc(s.op)}</td><td>{esc(item.shape)}</td>"
            f"<td><code class='sv-spec' title='{esc(s.hlo_sharding)}'>{esc(s.spec_str)}</code></td>"
            f'<td class="sv-srccell">{_source_cell(item.value.source, "value")}</td><td>{by}</td></tr>'
        )

    out.append('<table class="sv-t sv-inter">' + head)
    for item in ins.first:
        if isinstance(item, int):
            where = " (listed below)" if ins.rest else ""
            out.append(
                f'<tr class="sv-gap"><td></td><td colspan="7">… {item} more without a reshard'
                f"{where}</td></tr>"
            )
            continue
        out.append(row(item))
        if item.tiles is not None:
            out.append(_tiles_row(item.tiles))
    out.append("</table>")
    if ins.rest:
        n = len(ins.rest)
        out.append(
            f'<details class="sv-irest"><summary>the other {n} intermediate'
            f"{'s' * (n != 1)}, without a reshard</summary>"
            f'<table class="sv-t sv-inter">{head}{"".join(row(x) for x in ins.rest)}</table>'
            "</details>"
        )
    if ins.hint:
        words, code = ins.hint
        if ins.tiles:
            some = "" if ins.tiles == r else f" (drawn for {ins.tiles} of the {r})"
            words = f"open a reshard point's tiles under its row{some} · {words}"
        out.append(f'<div class="sv-dim">{esc(words)}: <code>{esc(code)}</code></div>')
    return out


def _times(item: IntermediateRow) -> str:
    """`` ×8`` after a row that stands for several values (their numbers on hover)."""
    if not item.same:
        return ""
    refs = ", ".join(f"#{j}" for j in item.same[:12]) + (" …" if len(item.same) > 12 else "")
    return f' <b class="sv-times" title="also {esc(refs)}">{esc(item.times.strip())}</b>'


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


def _memory(m: MemorySection) -> list[str]:
    out = [
        f'<h4>Memory per device<span class="sv-dim">peak {esc(m.peak)} = '
        f"{esc(m.peak_definition)}</span></h4>"
    ]
    total = max(m.peak_bytes, sum(b for _, b in m.bar), 1)
    out.append(
        '<div class="sv-stack sv-mem">'
        + "".join(_seg(part, b, total, MEMORY_COLORS[part], part) for part, b in m.bar)
        + "</div>"
        f'<div class="sv-axisline"><span>0</span><span>peak {esc(m.peak)}</span></div>'
    )
    rows = []
    for p in m.parts[:-1]:
        color = MEMORY_COLORS.get(p.name)
        sw = f'<span class="sv-sw" style="background:{color}"></span>' if color else ""
        meaning = p.meaning
        if p.name == "output" and m.alias_bytes:
            meaning += " (the bar shows the part not aliased)"
        rows.append(
            f'<tr class="sv-mempart" data-part="{p.name}" data-bytes="{p.bytes}"><td>{sw}{p.name}'
            f'</td><td class="sv-r">{esc(p.text)}</td><td class="sv-r">'
            f"{p.exact}</td><td>{esc(meaning)}</td></tr>"
        )
    peak = m.parts[-1]
    rows.append(
        f'<tr class="sv-mempart" data-part="peak" data-bytes="{peak.bytes}"><td><b>peak</b>'
        f'</td><td class="sv-r"><b>{esc(peak.text)}</b></td><td class="sv-r">'
        f"{peak.exact}</td><td>{esc(peak.meaning)}</td></tr>"
    )
    out.append('<table class="sv-t">' + _th(["part", "bytes", "exact", ""], [1, 2]))
    out.extend(rows)
    out.append("</table>")
    if m.compiler_peak:
        out.append(f'<div class="sv-note">{esc(m.compiler_peak)}</div>')
    out.extend(f'<div class="sv-note">{esc(x)}</div>' for x in m.notes)
    if m.host is not None:
        out.extend(_host(m.host))
    if m.leaves:
        out.extend(_by_leaf(m))
    if m.devices:
        out.append(
            '<table class="sv-t">' + _th(["device", "in use", "peak in use", "limit"], [1, 2, 3])
        )
        for d, in_use, peak_in_use, limit in m.devices:
            out.append(
                f"<tr><td>{d}</td><td class='sv-r'>{esc(in_use)}"
                f"</td><td class='sv-r'>{esc(peak_in_use)}</td>"
                f"<td class='sv-r'>{esc(limit)}</td></tr>"
            )
        out.append("</table>")
    return out


def _host(h: HostMemory) -> list[str]:
    """Host memory beside the HBM peak: the total and its parts, whose figures, the leaves."""
    out = [
        f'<div class="sv-host-mem" data-bytes="{h.bytes}">{esc(h.line)}'
        f'<div class="sv-dim">from {esc(h.source)}</div>'
    ]
    if h.mismatch:
        out.append(f'<div class="sv-note sv-host-mismatch">differs: {esc(h.mismatch)}</div>')
    if h.leaves:
        out.append(
            '<table class="sv-t sv-host-leaves">' + _th(["on host", "role", "memory", "bytes"], [3])
        )
        out.extend(
            f"<tr><td><code>{esc(p)}</code></td><td>{esc(role)}</td><td>{esc(kind)}</td>"
            f'<td class="sv-r">{esc(text)}</td></tr>'
            for p, role, kind, text in h.leaves
        )
        out.append("</table>")
    out.append("</div>")
    return out


def _by_leaf(m: MemorySection) -> list[str]:
    color = {r.role: ROLE_COLORS[i % len(ROLE_COLORS)] for i, r in enumerate(m.roles)}
    total = sum(r.bytes for r in m.roles) or 1
    out = [
        '<div class="sv-line" style="margin:10px 0 4px">arguments by role and by leaf '
        "(the largest device's share)</div>",
        '<div class="sv-stack sv-roles">'
        + "".join(
            _seg(
                f"role:{r.role}",
                r.bytes,
                total,
                color[r.role] + "88",
                f"{r.role} ({r.leaves})",
                "sv-role",
            )
            for r in m.roles
        )  # fmt: skip
        + "</div>",
        '<table class="sv-t sv-leaves" style="margin-top:6px">'
        + _th(["leaf", "role", "bytes", ""], [2]),
    ]
    top = max(x.bytes for x in m.leaves) or 1
    for leaf in m.leaves:
        w = 120.0 * leaf.bytes / top
        out.append(
            f'<tr class="sv-leafrow" data-memory="{esc(leaf.memory)}"><td><code>'
            f"{esc(leaf.path)}</code></td><td>"
            f'<span class="sv-sw" style="background:{color[leaf.role]}"></span>{esc(leaf.role)}'
            f'</td><td class="sv-r" title="{leaf.bytes:,} B">{esc(leaf.text)}</td>'
            f'<td><span class="sv-minibar" style="width:{w:.1f}px;background:{color[leaf.role]}">'
            "</span></td></tr>"
        )
    if m.more_leaves:
        out.append(f'<tr class="sv-gap"><td colspan="4">{esc(m.more_leaves)}</td></tr>')
    out.append("</table>")
    return out


def _estimate(e: EstimateSection) -> list[str]:
    fits = e.fits
    attrs = f' data-fits="{int(fits)}"' if fits is not None else ""
    attrs += "" if e.bounded else ' data-bounded="0"'
    out = [
        f'<section class="sv-estimate" data-target="{esc(e.target)}" data-bound="{esc(e.bound)}"'
        f"{attrs}><h4>Estimate on {esc(e.target)}<span class='sv-estword'>estimate</span>"
        f'<span class="sv-dim">{esc(e.words)}: from the compiler\'s figures and the '
        "target's published peak rates</span></h4>"
    ]
    if not e.bounded:
        out.append(f'<div class="sv-notes sv-uncounted">{esc(e.not_a_bound)}</div>')
    rows = []
    for r in e.rows:
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
            f'title="{esc(e.hbm_text)}"><div class="sv-hbm-peak" style="width:{peak_w:.2f}%">'
            f'</div><div class="sv-hbm-line" style="left:calc({line_x:.2f}% - 1px)"></div></div>'
            f'<div class="sv-axisline"><span>0</span><span>peak {esc(e.peak)}'
            f" · HBM {esc(e.hbm)} per device (dashed)</span></div>"
        )
    if e.notes:
        out.append(
            '<div class="sv-note">'
            + "<br>".join(f"<b>{esc(k)}</b> {esc(n)}" for k, n in e.notes)
            + "</div>"
        )
    out.append("</section>")
    return out


def _cost(c: CostSection) -> list[str]:
    out = [
        "<h4>Cost<span class='sv-dim'>per step: the compiler's estimate, "
        f"{esc(c.loops)}</span></h4>"
    ]
    if not c.available:
        out.append('<div class="sv-dim">not available from this backend</div>')
        return out
    if c.one_device:
        out.append(
            '<table class="sv-t">'
            + _th(["", "on the one device"], [1])
            + f"<tr><td>flops</td><td class='sv-r'>{esc(c.flops)}</td></tr>"
            f"<tr><td>bytes accessed</td><td class='sv-r'>{esc(c.accessed)}"
            "</td></tr></table>"
        )
    else:
        out.append('<table class="sv-t">' + _th(["", "per device", "global"], [1, 2]))
        out.append(
            f"<tr><td>flops</td><td class='sv-r'>{esc(c.flops)}</td>"
            f"<td class='sv-r'>{esc(c.flops_global)}</td></tr>"
            f"<tr><td>bytes accessed</td><td class='sv-r'>"
            f"{esc(c.accessed)}</td><td class='sv-r'>"
            f"{esc(c.accessed_global)}</td></tr></table>"
        )
    if c.intensity:
        out.append(f'<div class="sv-note">{c.intensity} FLOP per byte accessed, per device</div>')
    if c.more:
        out.append('<table class="sv-t sv-cost-more">')
        out.extend(
            f'<tr data-row="{esc(name)}"><td>{esc(name)}</td><td class="sv-r">{esc(value)}</td>'
            f'<td class="sv-dim">{esc(meaning)}</td></tr>'
            for name, value, meaning in c.more
        )
        out.append("</table>")
    if c.kernels:
        out.append(f'<div class="sv-note">{esc(c.kernels_heading)}</div>')
        out.append('<table class="sv-t sv-kernels">')
        out.extend(
            f'<tr class="sv-kernel{"" if k.counted else " sv-kernel-missing"}" '
            f'data-kernel="{esc(k.name)}" data-how="{esc(k.how)}" data-counted="{int(k.counted)}"'
            f'><td><code>{esc(k.name)}</code></td><td class="sv-r">{esc(k.flops)}</td>'
            f'<td class="sv-dim">{esc(k.meaning)}</td></tr>'
            for k in c.kernels
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


def _timing(t: TimingSection) -> list[str]:
    out = ["<h4>Timing<span class='sv-dim'>wall clock</span></h4>"]
    if not t.measured:
        why = "compile-only" if not t.ran else "not measured"
        out.append(f'<div class="sv-dim">not measured ({why})</div>')
        return out
    out.append(
        '<table class="sv-t">'
        f"<tr><td>compile</td><td class='sv-r'>{esc(t.compile)}</td></tr>"
        f"<tr><td>first run</td><td class='sv-r'>{esc(t.first_run)}"
        "</td></tr>"
        f"<tr><td><b>step</b></td><td class='sv-r'><b>{esc(t.step)}</b>"
        f"</td><td class='sv-dim'>median of {t.steps} steps</td></tr></table>"
    )
    if t.samples:
        out.append(_samples_svg(t.samples, t.step_seconds))
    if t.hosts:
        spread = t.host_spread
        out.append(
            '<table class="sv-t sv-hosts-timing"><tr><th>host</th><th>devices</th>'
            "<th>step (its own)</th><th>live peak</th></tr>"
            + "".join(
                f'<tr data-process="{esc(p.split()[-1])}"><td>{esc(p)}</td><td>{esc(d)}</td>'
                f"<td class='sv-r'>{esc(st)}</td><td class='sv-r'>{esc(pk)}</td></tr>"
                for p, d, st, pk in t.hosts
            )
            + "</table>"
            + (f'<div class="sv-dim">{esc(spread)}</div>' if spread else "")
        )
    return out


def _check(c: CheckSection) -> list[str]:
    out = ["<h4>Check<span class='sv-dim'>against a single-device run</span></h4>"]
    if not c.checked:
        why = "compile-only" if not c.ran else "not run"
        out.append(f'<div class="sv-dim">not checked ({why})</div>')
        return out
    cls = "sv-ok" if c.matches else "sv-bad"
    out.append(
        f'<div class="sv-big"><span class="sv-badge sv-check {cls}" style="margin:0 6px 0 0;'
        f'font-size:13px">{c.word}</span><span class="sv-dim">vs {esc(c.reference)}</span></div>'
        '<table class="sv-t" style="margin-top:6px">'
        f"<tr><td>max abs diff</td><td class='sv-r'>{esc(c.max_abs)}</td></tr>"
        f"<tr><td>max rel diff</td><td class='sv-r'>{esc(c.max_rel)}</td></tr>"
        f"<tr><td>tolerance</td><td class='sv-r'>{esc(c.tolerance)}</td></tr>"
        + (f"<tr><td>rule</td><td class='sv-r'>{esc(c.rule)}</td></tr>" if c.rule else "")
        + (f"<tr><td>fails at</td><td class='sv-r'>{esc(c.failing)}</td></tr>" if c.failing else "")
        + "</table>"
    )
    return out


def _profile(p: ProfileSection, platform: str) -> list[str]:
    out = [f"<h4>Profile<span class='sv-dim'>{p.count} ops measured</span></h4>"]
    if p.illustrative:
        out.append(
            '<div class="sv-illus sv-illustrative"><b>Illustrative</b>: measured on '
            f"{esc(platform)}; these durations show the shape of the program, they do "
            "not predict accelerator time</div>"
        )
    if not p.count:
        return out
    out.append(
        '<table class="sv-t sv-profile">'
        + _th(["op", "count", "median", "total", "share", ""], [1, 2, 3, 4])
    )
    for op in p.rows:
        out.append(
            f'<tr class="sv-op"><td><code>{esc(op.name)}</code></td><td class="sv-r">{op.count}'
            f'</td><td class="sv-r">{esc(op.median)}</td><td class="sv-r">'
            f'{esc(op.total)}</td><td class="sv-r">{op.percent}</td><td>'
            f'<span class="sv-minibar" style="width:{160 * op.share:.1f}px;background:#0969da">'
            "</span></td></tr>"
        )
    if p.more:
        out.append(f'<tr class="sv-gap"><td colspan="6">… {p.more} more ops</td></tr>')
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


def timeline_section(report: Report) -> str:
    """The report's profiled timeline alone, styled as in the report (a notebook cell can
    show it without the rest); ``""`` without a timeline."""
    body = timeline_html(report)
    if not body:
        return ""
    return f'<div class="sv-root sv-report" id="{_prefix(report)}-tl">{STYLE}{body}</div>'


def report_html(report: Report, view: ReportView | None = None) -> str:
    """A report as a self-contained HTML fragment.

    Args:
        report: the report (live or hand-built).
        view: its :func:`~.sections.report_view`, when the caller has it already.

    Returns:
        One ``<div class="sv-root sv-report">`` with its own ``<style>``: the header (function,
        platform, mesh, ran or compile-only, notes), headline numbers, the collective ledger
        grouped by mesh axes (each row opens to show its device groups on the mesh), the
        intermediates in program order with reshard points marked and linked to their
        collectives, memory per device as stacked bars, cost, timing, the check, the profile
        and its per-device timeline when there is one, and the argument and output trees (collapsed).
    """
    v = view if view is not None else report_view(report)
    prefix = _prefix(report)
    body = [*_header(v.header), _stats(v), *findings_section_html(v.findings)]
    body += _ledger(report, v.ledger, prefix, v.intermediates.shown_as)
    if v.transfers is not None:
        body.append(transfers_html(v.transfers))
    body += _intermediates(v.intermediates, prefix, v.ledger.shown_as)
    body += _memory(v.memory)
    if v.estimate is not None:
        body += _estimate(v.estimate)
    cards = [_cost(v.cost), _timing(v.timing), _check(v.check)]
    body.append(
        '<div class="sv-cards">'
        + "".join("<div>" + "".join(c) + "</div>" for c in cards)
        + "</div>"
    )
    if v.profile is not None:
        body += _profile(v.profile, v.header.platform)
    if report.timeline:
        body.append(timeline_html(report))
    body += _trees(report)
    style = STYLE + (EST_STYLE if v.estimate is not None or v.ledger.estimates else "")
    style += HOSTS_STYLE if v.ledger.multi_host else ""
    return f'<div class="sv-root sv-report" id="{prefix}">{style}' + "".join(body) + "</div>"
