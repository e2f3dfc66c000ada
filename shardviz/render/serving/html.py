"""Serving comparisons and slice choices as HTML: the table, the findings, and a chart of
memory per device and tokens/s per chip against the batch, with the HBM line."""

from __future__ import annotations

import math

from shardviz.model.serving import ServingComparison, SliceChoice
from shardviz.model.units import format_bytes
from shardviz.render.findings.html import finding_items_html
from shardviz.render.html import SANS, page
from shardviz.render.serving.view import (
    NOT_COMPILED,
    PANELS,
    ServingChart,
    columns,
    expert_lines,
    findings_head,
    result_row,
    serving_chart,
    shared_hbm,
    slice_lines,
    summary_line,
    x_ticks,
)
from shardviz.render.svg import esc, svg_num

__all__ = ["memory_chart_svg", "serving_html", "serving_page", "slice_html", "slice_page"]

_W, _H, _PAD = 300.0, 180.0, 44.0
#: Room right of the plot, so the last x label ("32768") is drawn whole inside the panel.
_RIGHT = 22.0
#: The view's layout: a cell never wraps (one figure each: the HBM they share is in the total's
#: header), the headers do, so the table fits a notebook's output column at 1280 px with the
#: file browser open (794 px) on one line per row; labels on a chart carry a white halo.
_STYLE = (
    "<style>.sv-serving table{border-collapse:collapse;font-size:12px;"
    "font-variant-numeric:tabular-nums}"
    ".sv-serving th{white-space:normal;vertical-align:bottom;text-align:left;font-size:11px;"
    "padding:2px 8px 2px 0;border-bottom:1px solid #d0d7de}"
    ".sv-serving td{padding:2px 8px 2px 0;border-bottom:1px solid #eaeef2;white-space:nowrap}"
    ".sv-serving .sv-key{font-size:11px;color:#57606a;margin:4px 0}"
    ".sv-serving svg{max-width:100%;height:auto}"
    ".sv-serving svg .sv-halo{paint-order:stroke;stroke:#fff;stroke-width:3px;"
    "stroke-linejoin:round}</style>"
)


def _panel(chart: ServingChart, key: str, along: str, show: str, title: str) -> str:
    """One panel of :data:`PANELS`: each strategy's line of ``along`` (``"sweep"``: against
    the batch, ``"context_sweep"``: the context), ``show`` (``"bytes"`` or ``"tokens"``)
    against log2 of its x; the HBM dashed on memory panels, the largest batches starred."""
    lines = chart.lines(along)
    points = [(ln, list(zip(ln.xs, ln.bytes if show == "bytes" else ln.tokens, strict=True)))
              for ln in lines]  # fmt: skip
    hbm = chart.hbm_bytes if show == "bytes" else 0
    marks = chart.max_batch if key == "batch-bytes" else ()
    xs = [b for _, ps in points for b, _ in ps]
    ys = [y for _, ps in points for _, y in ps] + ([hbm] if hbm else [])
    if not xs:
        return ""
    x0, x1 = math.log2(min(xs)), math.log2(max(xs)) or 1.0
    top = max(ys) * 1.1 or 1.0

    def px(b: float) -> float:
        return _PAD + (math.log2(b) - x0) / max(x1 - x0, 1e-9) * (_W - _PAD - _RIGHT)

    def py(y: float) -> float:
        return _H - 24 - y / top * (_H - 44)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{svg_num(_W)}" height="{svg_num(_H)}" '
        f'viewBox="0 0 {svg_num(_W)} {svg_num(_H)}" '
        f'role="img" aria-label="{esc(title)}" style="font:10px {esc(SANS)}">',
        f'<text x="{svg_num(_PAD)}" y="12">{esc(title)}</text>',
        f'<line x1="{svg_num(_PAD)}" y1="{svg_num(_H - 24)}" x2="{svg_num(_W - _RIGHT)}" '
        f'y2="{svg_num(_H - 24)}" stroke="#888"/>',
    ]
    for b in x_ticks(xs):
        parts.append(
            f'<text x="{svg_num(px(b))}" y="{svg_num(_H - 10)}" text-anchor="middle">{b}</text>'
        )
    label = format_bytes if show == "bytes" else (lambda y: f"{y:,.0f}")
    parts.append(f'<text x="2" y="{svg_num(py(top / 1.1))}">{esc(label(top / 1.1))}</text>')
    hbm_label = ""
    if hbm:
        y = py(hbm)
        parts.append(
            f'<line class="sv-hbm" x1="{svg_num(_PAD)}" y1="{svg_num(y)}" '
            f'x2="{svg_num(_W - _RIGHT)}" y2="{svg_num(y)}" stroke="#000" stroke-dasharray="4 3"/>'
        )
        # at the left end, clear of the largest-batch dots (on the line at the right), drawn
        # last, on a halo
        hbm_label = (
            f'<text class="sv-hbmlabel sv-halo" x="{svg_num(_PAD + 4)}" y="{svg_num(y - 4)}">'
            f"HBM {esc(format_bytes(hbm))}</text>"
        )
    for ln, ps in points:
        line = " ".join(f"{svg_num(px(b))},{svg_num(py(y))}" for b, y in ps)
        parts.append(
            f'<polyline points="{line}" fill="none" stroke="{ln.colour}" stroke-width="1.5">'
            f"<title>{esc(ln.strategy)}</title></polyline>"
        )
    for m in marks:
        parts.append(
            f'<circle class="sv-max-batch" cx="{svg_num(px(m.batch))}" '
            f'cy="{svg_num(py(min(m.bytes, top)))}" r="3.5" fill="{m.colour}" stroke="#000">'
            f"<title>{esc(m.strategy)}: largest batch that fits {m.batch:,} "
            f"({esc(format_bytes(m.bytes))} per device)</title></circle>"
        )
    parts.append(hbm_label + "</svg>")
    return "".join(parts)


#: The chart's marks, said in its legend: the dashed HBM line and the largest batch's dot.
_KEY = (
    ' <span class="sv-key">&#183; - - - HBM {hbm} per device &#183; <span style="font-size:13px">'
    "&#9679;</span> the largest batch that fits it (bytes against batch)</span>"
)


def memory_chart_svg(c: ServingComparison) -> str:
    """Bytes per device (with the HBM line) and tokens/s per chip against the batch, then
    against the context (log scales); one line per strategy, a dot at each strategy's
    largest batch that fits; a strategy that was not compiled is named in the legend, with no
    line. ``""`` without sweeps and nothing uncompiled."""
    chart = serving_chart(c)
    if not chart.batch:
        if not chart.not_compiled:
            return ""
        return f'<p class="sv-serving-chart">no chart: {esc(chart.empty_words)}</p>'
    panels = [_panel(chart, key, along, show, title) for key, along, show, title in PANELS]
    legend = (
        " ".join(
            f'<span style="color:{ln.colour}">&#9632; {esc(ln.strategy)}</span>'
            for ln in chart.batch
        )
        + _KEY.format(hbm=esc(format_bytes(chart.hbm_bytes))) * bool(chart.hbm_bytes)
        + "".join(
            f' <span class="sv-not-compiled">&#9633; {esc(strategy)}: {NOT_COMPILED} (no line)</span>'
            for strategy, _ in chart.not_compiled
        )
    )
    return f'<div class="sv-serving-chart">{"".join(panels)}<div>{legend}</div></div>'


#: The pink of a row whose total does not fit the HBM, and the key that says so.
_OVER_HBM = "#fde2e1"
_OVER_KEY = (
    f'<p class="sv-key"><span style="background:{_OVER_HBM}">&#160;pink row&#160;</span> its '
    "total does not fit one chip's HBM</p>"
)


def serving_html(c: ServingComparison) -> str:
    """The summary, the table (rows over HBM marked, with a key saying so), a mixture of
    experts' reads, notes, findings and the chart."""
    in_header = bool(shared_hbm(c))
    head = "".join(f"<th>{esc(h)}</th>" for h in columns(c))
    body = []
    notes = []
    over = False
    for r in c.results:
        row = result_row(r, hbm_in_header=in_header)
        over = over or row.fits is False
        style = f' style="background:{_OVER_HBM}"' if row.fits is False else ""
        cells = "".join(f"<td>{esc(x)}</td>" for x in row.cells)
        body.append(f'<tr class="sv-serving-row"{style}>{cells}</tr>')
        notes += [f"<li>{esc(r.strategy)}: {esc(n)}</li>" for n in row.notes]
    findings = finding_items_html(c.findings, findings_head(c)) if c.findings else ""
    experts = expert_lines(c)
    reads = (
        f'<p class="sv-experts">{esc(experts[0])}</p><ul class="sv-experts">'
        + "".join(f"<li>{esc(x)}</li>" for x in experts[1:])
        + "</ul>"
        if experts
        else ""
    )
    return (
        f'<div class="sv-serving" style="font-family:{esc(SANS)}">{_STYLE}'
        f"<p>{esc(summary_line(c))}</p>"
        f"<table><thead><tr>{head}"
        f"</tr></thead><tbody>{''.join(body)}</tbody></table>"
        + (_OVER_KEY if over else "")
        + reads
        + (f"<ul>{''.join(notes)}</ul>" if notes else "")
        + findings
        + memory_chart_svg(c)
        + "</div>"
    )


def serving_page(c: ServingComparison) -> str:
    return page(f"Serving {c.model}", [serving_html(c)])


def slice_html(s: SliceChoice) -> str:
    lines = slice_lines(s)
    items = "".join(f"<li>{esc(x.strip())}</li>" for x in lines[1:])
    return f'<div class="sv-slice"><p><b>{esc(lines[0])}</b></p><ul>{items}</ul></div>'


def slice_page(s: SliceChoice) -> str:
    return page(f"Smallest slice for {s.model}", [slice_html(s)])
