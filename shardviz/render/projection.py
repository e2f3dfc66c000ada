"""Views of the ZeRO projection: model state per device for model sizes x device counts x stages.

The rows are :class:`~shardviz.model.ProjectionRow` objects, as
:func:`shardviz.strategies.accounting.projection_table` makes them. Every view can
draw an HBM capacity the user picks: ``hbm_bytes`` given here wins over the rows' own
capacity, and whether a row fits is ``total <= hbm_bytes``.

- :func:`projection_text`: one aligned table, deterministic for golden tests;
- :func:`projection_html`: per model size, devices x ZeRO stage, cells coloured by fit;
- :func:`projection_figure`: plotly, bytes per device vs device count, log-log, an HBM line;
- :func:`projection_mpl`: the same for slides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from shardviz.model.projection import ProjectionRow
from shardviz.model.units import format_bytes, format_count
from shardviz.render.compare.mpl import displayable, mpl_text, require_matplotlib
from shardviz.render.compare.plotly import require_plotly
from shardviz.render.html import CSS, SANS
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import esc
from shardviz.render.table import aligned_table

Row = ProjectionRow


#: Line colour per ZeRO stage, the same in plotly and matplotlib.
STAGE_COLORS = {0: "#8250df", 1: "#bc4c00", 2: "#1b7c83", 3: "#0969da"}
#: The HBM capacity line.
HBM_COLOR = "#cf222e"
STAGE_MEANING = {
    0: "plain data parallel: every rank holds everything",
    1: "optimizer state split over the data-parallel ranks",
    2: "optimizer state and gradients split",
    3: "optimizer state, gradients and parameters split",
}


def stage_color(stage: int) -> str:
    return STAGE_COLORS.get(stage, "#57606a")


def capacity(rows: Sequence[Row], hbm_bytes: int | None = None) -> int | None:
    """The capacity to draw: ``hbm_bytes`` if given, else the one the rows share (if any)."""
    if hbm_bytes is not None:
        return int(hbm_bytes)
    caps = {r.hbm_bytes for r in rows}
    return caps.pop() if len(caps) == 1 else None


def fits(row: Row, hbm: int | None) -> bool | None:
    """Whether the row's total fits ``hbm`` (the row's own flag when there is no capacity)."""
    return row.total <= hbm if hbm is not None else row.fits


def _fits_word(f: bool | None) -> str:
    return "—" if f is None else "yes" if f else "no"


def size_label(n: int) -> str:
    """``7.5B params``."""
    return f"{format_count(n)} params"


def _groups(rows: Sequence[Row]) -> dict[tuple[int, int], list[Row]]:
    """Rows by (model size, tensor parallel), in order of first appearance."""
    out: dict[tuple[int, int], list[Row]] = {}
    for r in rows:
        out.setdefault((r.num_params, r.tensor_parallel), []).append(r)
    return out


def _group_title(n: int, tp: int, several_tp: bool) -> str:
    text = f"{format_count(n)} parameters ({n:,})"
    return text + (f" · tensor parallel {tp}" if several_tp or tp > 1 else "")


def fits_from(rows: Sequence[Row], hbm: int | None) -> list[tuple[int, int, int, int | None]]:
    """Per (model size, tensor parallel, stage): the fewest devices among the rows that fit,
    ``None`` when none does. Empty without a capacity."""
    if hbm is None:
        return []
    best: dict[tuple[int, int, int], int | None] = {}
    for r in rows:
        key = (r.num_params, r.tensor_parallel, r.zero_stage)
        best.setdefault(key, None)
        if fits(r, hbm):
            cur = best[key]
            best[key] = r.devices if cur is None else min(cur, r.devices)
    return [(n, tp, s, d) for (n, tp, s), d in best.items()]


def _fits_from_lines(rows: Sequence[Row], hbm: int | None) -> list[str]:
    found = fits_from(rows, hbm)
    if not found:
        return []
    several_tp = len({r.tensor_parallel for r in rows}) > 1
    by_group: dict[tuple[int, int], list[str]] = {}
    for n, tp, s, d in found:
        by_group.setdefault((n, tp), []).append(
            f"stage {s} " + (f"from {d} devices" if d is not None else "never")
        )
    return [
        f"  {format_count(n)}{f' tp {tp}' if several_tp or tp > 1 else ''}: " + " · ".join(parts)
        for (n, tp), parts in by_group.items()
    ]


# --------------------------------------------------------------------------------------------
# Text


def projection_text(rows: Sequence[Row], *, hbm_bytes: int | None = None) -> str:
    """The projection as a table: one row per model size x device count x ZeRO stage.

    Args:
        rows: from ``projection_table(...)``.
        hbm_bytes: per-device capacity to test against (default: the rows' own).

    Returns:
        Deterministic lines joined by newlines, no trailing newline: the table (parameters,
        devices, data x tensor parallel, stage, params/grads/optimizer/total per device,
        share of HBM and whether it fits), then, with a capacity, the fewest devices that fit
        per model size and stage.
    """
    hbm = capacity(rows, hbm_bytes)
    lines = ["Model state per device (ZeRO: parameters, gradients, optimizer state; "
             "activations not included)"]  # fmt: skip
    if hbm is not None:
        lines.append(f"  HBM capacity {format_bytes(hbm, exact=True)} per device")
    if not rows:
        lines.append("  no rows")
        return "\n".join(lines)
    header = ["params", "devices", "dp × tp", "stage", "params/dev", "grads/dev",
              "optimizer/dev", "total/dev"]  # fmt: skip
    if hbm is not None:
        header.append("of HBM")
    header.append("fits")
    body: list[Sequence[str] | str] = []
    for r in rows:
        cells = [
            format_count(r.num_params),
            str(r.devices),
            f"{r.data_parallel} × {r.tensor_parallel}",
            str(r.zero_stage),
            format_bytes(r.params),
            format_bytes(r.grads),
            format_bytes(r.optimizer),
            format_bytes(r.total),
        ]
        if hbm is not None:
            cells.append(_share(r.total, hbm))
        cells.append(_fits_word(fits(r, hbm)))
        body.append(cells)
    right = {0, 1, 3, 4, 5, 6, 7} | ({8} if hbm is not None else set())
    lines.append("")
    lines.extend(aligned_table(header, body, right=right, indent="  "))
    more = _fits_from_lines(rows, hbm)
    if more:
        lines += ["", f"Fewest devices that fit {format_bytes(hbm or 0)} (of the counts shown)"]
        lines += more
    return "\n".join(lines)


def _share(total: int, hbm: int) -> str:
    if hbm <= 0:
        return "∞"
    pct = 100 * total / hbm
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%" if pct >= 0.1 else "<0.1%"


# --------------------------------------------------------------------------------------------
# HTML

PROJECTION_CSS = stylesheet("projection.css", SANS=SANS)
PROJECTION_STYLE = "<style>" + (CSS + "\n" + PROJECTION_CSS).replace("\n", "") + "</style>"


def _cell(r: Row, hbm: int | None) -> str:
    f = fits(r, hbm)
    flag = "" if f is None else "1" if f else "0"
    tip = (
        f"{format_count(r.num_params)} params on {r.devices} devices "
        f"(dp {r.data_parallel} × tp {r.tensor_parallel}), ZeRO stage {r.zero_stage}\n"
        f"params {format_bytes(r.params, exact=True)}\n"
        f"grads {format_bytes(r.grads, exact=True)}\n"
        f"optimizer {format_bytes(r.optimizer, exact=True)}\n"
        f"total {format_bytes(r.total, exact=True)} per device"
    )
    sub = ""
    if hbm is not None:
        tip += f"\n{_share(r.total, hbm)} of {format_bytes(hbm)}: " + (
            "fits" if f else "does not fit"
        )
        sub = f"<span>{esc(_share(r.total, hbm))} of HBM</span>"
    return (
        f'<td class="sv-prj-cell" data-devices="{r.devices}" data-stage="{r.zero_stage}" '
        f'data-params="{r.num_params}" data-bytes="{r.total}" data-fits="{flag}" '
        f'title="{esc(tip)}"><b>{esc(format_bytes(r.total))}</b>{sub}</td>'
    )


def projection_html(rows: Sequence[Row], *, hbm_bytes: int | None = None) -> str:
    """The projection as a self-contained HTML fragment: per model size, a table of device
    counts x ZeRO stages whose cells give the total per device, green where it fits the
    capacity and red where it does not (hover for params, grads and optimizer state).

    Hooks: each cell is ``<td class="sv-prj-cell" data-devices data-stage data-params
    data-bytes data-fits="1|0|">`` (empty without a capacity).
    """
    hbm = capacity(rows, hbm_bytes)
    body = [
        '<div class="sv-prj-title">Model state per device <span class="sv-prj-dim">· ZeRO '
        "stages over the data-parallel ranks · parameters, gradients, optimizer state; "
        "activations not included</span></div>"
    ]
    if hbm is not None:
        body.append(
            '<div class="sv-prj-key"><span>HBM capacity <b>'
            f"{esc(format_bytes(hbm))}</b> per device</span>"
            '<span><span class="sv-prj-sw" style="background:#4ac26b"></span>fits</span>'
            '<span><span class="sv-prj-sw" style="background:#ff8182"></span>does not fit'
            "</span></div>"
        )
    if not rows:
        body.append('<div class="sv-prj-dim">no rows</div>')
    groups = _groups(rows)
    several_tp = len({tp for _, tp in groups}) > 1
    body.append('<div class="sv-prj-groups">')
    for (n, tp), rs in groups.items():
        stages = sorted({r.zero_stage for r in rs})
        counts = sorted({r.devices for r in rs})
        at = {(r.devices, r.zero_stage): r for r in rs}
        body.append(f'<div><div class="sv-prj-group">{esc(_group_title(n, tp, several_tp))}</div>')
        head = "".join(f'<th title="{esc(STAGE_MEANING.get(s, ""))}">ZeRO {s}</th>' for s in stages)
        out = [
            f'<table class="sv-prj-t" data-params="{n}" data-tp="{tp}"><tr>'
            f'<th class="sv-prj-rowh">devices</th>{head}</tr>'
        ]
        for d in counts:
            cells = "".join(_cell(at[(d, s)], hbm) if (d, s) in at else "<td></td>" for s in stages)
            out.append(f'<tr><th class="sv-prj-rowh">{d}</th>{cells}</tr>')
        out.append("</table></div>")
        body.append("".join(out))
    body.append("</div>")
    more = _fits_from_lines(rows, hbm)
    if more:
        body.append(
            '<div class="sv-prj-note">fewest devices that fit (of the counts shown): '
            + "<br>".join(esc(x.strip()) for x in more)
            + "</div>"
        )
    return f'<div class="sv-root sv-projection">{PROJECTION_STYLE}' + "".join(body) + "</div>"


# --------------------------------------------------------------------------------------------
# Figures


def log_byte_ticks(lo: float, hi: float, most: int = 8) -> list[int]:
    """Powers of two from below ``lo`` to above ``hi``, every 1, 2, 5, 10 or 20 doublings so
    there are at most ``most`` (with 10 and 20, they land on KiB, MiB, GiB…)."""
    lo_e = math.floor(math.log2(max(lo, 1)))
    hi_e = math.ceil(math.log2(max(hi, 1)))
    for step in (1, 2, 5, 10, 20, 40):
        first = lo_e - lo_e % step
        exps = list(range(first, hi_e + step, step))
        if len(exps) <= most:
            return [2**e for e in exps]
    return [2**lo_e, 2**hi_e]


def _facets(rows: Sequence[Row]) -> list[tuple[tuple[int, int], list[tuple[int, list[Row]]]]]:
    """Per (model size, tensor parallel), in order: ``(stage, rows sorted by devices)`` lines."""
    out = []
    for key, rs in _groups(rows).items():
        lines = [
            (s, sorted((r for r in rs if r.zero_stage == s), key=lambda r: r.devices))
            for s in sorted({r.zero_stage for r in rs})
        ]
        out.append((key, lines))
    return out


def facet_grid(n: int) -> tuple[int, int]:
    """``(rows, cols)`` of small multiples for ``n`` model sizes: at most three across."""
    cols = max(1, min(n, 3))
    return max(1, math.ceil(n / cols)), cols


def _title(rows: Sequence[Row], hbm: int | None) -> str:
    sizes = list(dict.fromkeys(r.num_params for r in rows))
    what = ", ".join(format_count(n) for n in sizes) + " parameters"
    text = f"Model state per device (ZeRO): {what}"
    return text + (f" · HBM {format_bytes(hbm)}" if hbm is not None else "")


def _y_ticks(rows: Sequence[Row], hbm: int | None) -> list[int]:
    totals = [r.total for r in rows] + ([hbm] if hbm else [])
    return log_byte_ticks(min(totals, default=1), max(totals, default=1))


def projection_figure(rows: Sequence[Row], *, hbm_bytes: int | None = None) -> Any:
    """Total model state per device against device count, log-log, as a plotly figure.

    One line per ZeRO stage (colour by stage; click a legend entry to hide that stage). With
    several model sizes, one panel per size (small multiples, at most three across) sharing
    the y axis. With a capacity, each panel has a dashed red line (a layout shape at
    ``y = hbm_bytes``) labelled with it where no stage's line passes (:func:`hbm_label_spot`),
    and points above it are drawn as crosses.

    Args:
        rows: from ``projection_table(...)``.
        hbm_bytes: per-device capacity (default: the rows' own).

    Returns:
        A ``plotly.graph_objects.Figure``.
    """
    go, make_subplots = require_plotly()
    hbm = capacity(rows, hbm_bytes)
    facets = _facets(rows)
    several_tp = len({tp for (_, tp), _ in facets}) > 1
    n_rows, n_cols = facet_grid(len(facets))
    if len(facets) > 1:
        fig = make_subplots(
            rows=n_rows,
            cols=n_cols,
            shared_yaxes="all",
            horizontal_spacing=0.04,
            vertical_spacing=0.16 / n_rows + 0.06,
            # short titles: three panels across share the width of a notebook's output
            subplot_titles=[
                _group_title(n, tp, several_tp).split(" (")[0]
                + (f" · tensor parallel {tp}" if several_tp or tp > 1 else "")
                for (n, tp), _ in facets
            ],
        )
    else:
        fig = go.Figure()
    shown: set[int] = set()
    ticks = _y_ticks(rows, hbm)
    for k, (_, lines) in enumerate(facets):
        where = {"row": k // n_cols + 1, "col": k % n_cols + 1} if len(facets) > 1 else {}
        for stage, rs in lines:
            fig.add_trace(_stage_line(go, stage, rs, hbm, stage not in shown), **where)
            shown.add(stage)
        if hbm is not None:
            spot = hbm_label_spot(_panel_lines(lines), hbm, (ticks[0], ticks[-1]))
            _hbm_line(fig, k, hbm, spot)
    _log_axes(fig, rows, hbm, n_rows if len(facets) > 1 else None)
    fig.update_layout(
        template="plotly_white",
        height=460 if n_rows == 1 else 120 + 300 * n_rows,
        title={"text": _title(rows, hbm), "x": 0.01},
        legend={"title": {"text": "stage"}},
        margin={"t": 80, "r": 20, "l": 80, "b": 60},
        hoverlabel={"align": "left"},
    )
    return fig


def _stage_line(go: Any, stage: int, rs: Sequence[Row], hbm: int | None, legend: bool) -> Any:
    """One ZeRO stage's line in one panel: total per device by device count, a cross where it
    does not fit, every figure in the hover text."""
    custom = [
        [
            format_count(r.num_params),
            str(r.data_parallel),
            str(r.tensor_parallel),
            format_bytes(r.params, exact=True),
            format_bytes(r.grads, exact=True),
            format_bytes(r.optimizer, exact=True),
            format_bytes(r.total, exact=True),
            {True: "fits", False: "does not fit", None: ""}[fits(r, hbm)],
        ]
        for r in rs
    ]
    return go.Scatter(
        x=[r.devices for r in rs],
        y=[r.total for r in rs],
        mode="lines+markers",
        name=f"ZeRO {stage}",
        legendgroup=f"stage {stage}",
        showlegend=legend,
        line={"color": stage_color(stage), "width": 2},
        marker={
            "symbol": ["circle" if fits(r, hbm) is not False else "x" for r in rs],
            "size": 8,
        },
        customdata=custom,
        hovertemplate=(
            "<b>%{customdata[0]} params · %{x} devices</b> (dp %{customdata[1]} × "
            f"tp %{{customdata[2]}}) · ZeRO {stage}<br>params %{{customdata[3]}}<br>"
            "grads %{customdata[4]}<br>optimizer %{customdata[5]}<br>"
            "<b>total %{customdata[6]}</b> %{customdata[7]}<extra></extra>"
        ),
    )  # fmt: skip


#: The HBM label's size as a share of a panel: its height (a line of text) and its width.
LABEL_H = 0.05
LABEL_W = 0.3


def hbm_label_spot(
    lines: Sequence[Sequence[tuple[float, float]]], hbm: int, y_range: tuple[float, float]
) -> tuple[str, str]:
    """Where a panel's HBM label reads clear of its lines: ``(side, where)`` with side
    ``"right"`` or ``"left"`` and where ``"above"`` or ``"below"`` the HBM line.

    ``lines`` are the panel's ``(devices, bytes)`` points per stage and ``y_range`` its byte
    scale (both log). The label takes :data:`LABEL_W` of the panel's width at one end and
    :data:`LABEL_H` of its height on one side of the line; the first spot no line passes
    through wins, right above first (a flat ZeRO-0 line just over HBM hides a label above it),
    else the one the lines cross least.
    """
    xs = [x for line in lines for x, _ in line if x > 0]
    y_lo, y_hi = (math.log10(max(v, 1)) for v in y_range)
    if not xs or hbm <= 0 or y_hi <= y_lo:
        return "right", "above"
    x_lo, x_hi = math.log10(min(xs)), math.log10(max(xs))
    span = max(x_hi - x_lo, 1e-9)
    band = LABEL_H * (y_hi - y_lo)
    h = math.log10(hbm)

    def crossings(side: str, where: str) -> int:
        lo, hi = (h, h + band) if where == "above" else (h - band, h)
        a, b = (x_hi - LABEL_W * span, x_hi) if side == "right" else (x_lo, x_lo + LABEL_W * span)
        hits = 0
        for line in lines:
            pts = sorted((math.log10(x), math.log10(max(y, 1))) for x, y in line if x > 0)
            for t in range(9):
                y = _at(pts, a + (b - a) * t / 8)
                hits += y is not None and lo <= y <= hi
        return hits

    spots = (("right", "above"), ("right", "below"), ("left", "above"), ("left", "below"))
    return min(spots, key=lambda spot: crossings(*spot))  # the first clear one, or least crossed


def _at(pts: Sequence[tuple[float, float]], x: float) -> float | None:
    """The line through ``pts`` (sorted by x) at ``x``, or ``None`` outside it."""
    if not pts or x < pts[0][0] - 1e-12 or x > pts[-1][0] + 1e-12:
        return None
    for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[0][1]


def _panel_lines(lines: Sequence[tuple[int, Sequence[Row]]]) -> list[list[tuple[float, float]]]:
    return [[(float(r.devices), float(r.total)) for r in rs] for _, rs in lines]


def _hbm_line(fig: Any, k: int, hbm: int, spot: tuple[str, str]) -> None:
    """The capacity across panel ``k``: a dashed shape and its label (both named ``hbm``),
    the label at ``spot`` (from :func:`hbm_label_spot`), on a white ground."""
    suffix = "" if k == 0 else str(k + 1)
    side, where = spot
    fig.add_shape(
        type="line",
        xref=f"x{suffix} domain",
        x0=0,
        x1=1,
        yref=f"y{suffix}",
        y0=hbm,
        y1=hbm,
        line={"color": HBM_COLOR, "width": 2, "dash": "dash"},
        name="hbm",
    )
    fig.add_annotation(
        xref=f"x{suffix} domain",
        x=1 if side == "right" else 0,
        yref=f"y{suffix}",
        y=math.log10(hbm) if hbm > 0 else 0,  # annotations on a log axis take log10
        text=f"HBM {format_bytes(hbm)}",
        showarrow=False,
        xanchor=side,
        yanchor="bottom" if where == "above" else "top",
        font={"color": HBM_COLOR, "size": 11},
        bgcolor="rgba(255,255,255,0.85)",
        name="hbm",
    )


def _log_axes(fig: Any, rows: Sequence[Row], hbm: int | None, facet_rows: int | None) -> None:
    """Log axes ticked at the device counts and at powers of two in bytes; titles on the
    outer panels when there are facets (``facet_rows`` of them), else on the one plot."""
    ticks = _y_ticks(rows, hbm)
    counts = sorted({r.devices for r in rows})
    fig.update_yaxes(type="log", tickmode="array", tickvals=ticks,
                     ticktext=[format_bytes(v) for v in ticks],
                     range=[math.log10(ticks[0]), math.log10(ticks[-1])])  # fmt: skip
    fig.update_xaxes(type="log", tickmode="array", tickvals=counts,
                     ticktext=[str(d) for d in counts])  # fmt: skip
    if facet_rows is not None:
        fig.update_yaxes(title_text="model state per device", col=1)
        fig.update_xaxes(title_text="devices", row=facet_rows)
    else:
        fig.update_yaxes(title_text="model state per device")
        fig.update_xaxes(title_text="devices")


def projection_mpl(
    rows: Sequence[Row], *, hbm_bytes: int | None = None, figsize: Sequence[float] | None = None
) -> Any:
    """The projection for slides: total per device vs device count, log-log, one line per
    ZeRO stage, one panel per model size (sharing the y axis), and the HBM capacity as a
    dashed red line with its label in every panel.

    Returns:
        A ``matplotlib.figure.Figure`` (no pyplot; works under Agg).
    """
    Figure = require_matplotlib()
    hbm = capacity(rows, hbm_bytes)
    facets = _facets(rows)
    several_tp = len({tp for (_, tp), _ in facets}) > 1
    n_rows, n_cols = facet_grid(len(facets))
    if figsize is None:
        figsize = (8.0, 5.0) if len(facets) <= 1 else (4.0 * n_cols + 1.6, 3.4 * n_rows + 0.8)
    fig = Figure(figsize=tuple(figsize), layout="constrained")
    axs = fig.subplots(n_rows, n_cols, sharey=True, squeeze=False)
    ticks = _y_ticks(rows, hbm)
    counts = sorted({r.devices for r in rows})
    for k, ax in enumerate(axs.flat):
        if k >= len(facets):
            ax.set_visible(False)
            continue
        (n, tp), lines = facets[k]
        for stage, rs in lines:
            ax.plot([r.devices for r in rs], [r.total for r in rs], color=stage_color(stage),
                    marker="o", markersize=4, linewidth=1.8, label=f"ZeRO {stage}")  # fmt: skip
            over = [r for r in rs if fits(r, hbm) is False]
            if over:
                ax.scatter([r.devices for r in over], [r.total for r in over], marker="x",
                           s=36, color=stage_color(stage), zorder=3)  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        if counts:
            ax.set_xticks(counts, [str(d) for d in counts])
        ax.set_yticks(ticks, [format_bytes(v) for v in ticks])
        ax.minorticks_off()
        ax.set_ylim(ticks[0], ticks[-1])
        if hbm is not None and hbm > 0:
            ax.axhline(hbm, color=HBM_COLOR, linestyle="--", linewidth=1.5, gid="hbm")
            side, where = hbm_label_spot(_panel_lines(lines), hbm, (ticks[0], ticks[-1]))
            right, above = side == "right", where == "above"
            ax.annotate(f"HBM {format_bytes(hbm)}", (1.0 if right else 0.0, hbm),
                        xycoords=("axes fraction", "data"),
                        xytext=(-4 if right else 4, 3 if above else -3),
                        textcoords="offset points", ha=side, va="bottom" if above else "top",
                        color=HBM_COLOR, fontsize=9, gid="hbm-label",
                        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                              "alpha": 0.85})  # fmt: skip
        if len(facets) > 1:
            ax.set_title(mpl_text(_group_title(n, tp, several_tp)), fontsize=10)
        if k % n_cols == 0:
            ax.set_ylabel("model state per device")
        if k // n_cols == n_rows - 1 or k + n_cols >= len(facets):
            ax.set_xlabel("devices")
        ax.grid(color="#eaeef2", linewidth=0.8)
        ax.set_axisbelow(True)
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(labelsize=8)
    if facets:
        handles, labels = axs.flat[0].get_legend_handles_labels()
        by_label = dict(zip(labels, handles, strict=True))
        for ax in list(axs.flat)[1 : len(facets)]:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                by_label.setdefault(lab, h)
        fig.legend(list(by_label.values()), list(by_label), loc="outside right upper",
                   fontsize=8, frameon=False, title="stage", title_fontsize=8)  # fmt: skip
    fig.suptitle(mpl_text(_title(rows, hbm)), x=0.01, ha="left", fontsize=11)
    return displayable(fig)
