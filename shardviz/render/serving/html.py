"""Serving comparisons and slice choices as HTML: the table, the findings, and a chart of
memory per device and tokens/s per chip against the batch, with the HBM line."""

from __future__ import annotations

import math

from shardviz.model.serving import ServingComparison, SliceChoice
from shardviz.model.units import format_bytes
from shardviz.render.findings.html import finding_items_html
from shardviz.render.html import MONO, SANS, page
from shardviz.render.serving.view import (
    COLUMNS,
    NOT_COMPILED,
    PANELS,
    ServingChart,
    findings_head,
    result_row,
    serving_chart,
    slice_lines,
    summary_line,
    x_ticks,
)
from shardviz.render.svg import esc, svg_num

__all__ = ["memory_chart_svg", "serving_html", "serving_page", "slice_html", "slice_page"]

_W, _H, _PAD = 300.0, 180.0, 44.0


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
        return _PAD + (math.log2(b) - x0) / max(x1 - x0, 1e-9) * (_W - _PAD - 8)

    def py(y: float) -> float:
        return _H - 24 - y / top * (_H - 44)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{svg_num(_W)}" height="{svg_num(_H)}" '
        f'role="img" aria-label="{esc(title)}" style="font:10px {esc(SANS)}">',
        f'<text x="{svg_num(_PAD)}" y="12">{esc(title)}</text>',
        f'<line x1="{svg_num(_PAD)}" y1="{svg_num(_H - 24)}" x2="{svg_num(_W - 8)}" '
        f'y2="{svg_num(_H - 24)}" stroke="#888"/>',
    ]
    for b in x_ticks(xs):
        parts.append(
            f'<text x="{svg_num(px(b))}" y="{svg_num(_H - 10)}" text-anchor="middle">{b}</text>'
        )
    label = format_bytes if show == "bytes" else (lambda y: f"{y:,.0f}")
    parts.append(f'<text x="2" y="{svg_num(py(top / 1.1))}">{esc(label(top / 1.1))}</text>')
    if hbm:
        y = py(hbm)
        parts.append(
            f'<line class="sv-hbm" x1="{svg_num(_PAD)}" y1="{svg_num(y)}" x2="{svg_num(_W - 8)}" '
            f'y2="{svg_num(y)}" stroke="#000" stroke-dasharray="4 3"/>'
            f'<text x="{svg_num(_W - 8)}" y="{svg_num(y - 3)}" text-anchor="end">'
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
    parts.append("</svg>")
    return "".join(parts)


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
    legend = " ".join(
        f'<span style="color:{ln.colour}">&#9632; {esc(ln.strategy)}</span>' for ln in chart.batch
    ) + "".join(
        f' <span class="sv-not-compiled">&#9633; {esc(strategy)}: {NOT_COMPILED} (no line)</span>'
        for strategy, _ in chart.not_compiled
    )
    return f'<div class="sv-serving-chart">{"".join(panels)}<div>{legend}</div></div>'


def serving_html(c: ServingComparison) -> str:
    """The summary, the table (rows over HBM marked), notes, findings and the chart."""
    head = "".join(f"<th>{esc(h)}</th>" for h in COLUMNS)
    body = []
    notes = []
    for r in c.results:
        row = result_row(r)
        style = ' style="background:#fde2e1"' if row.fits is False else ""
        cells = "".join(f"<td>{esc(x)}</td>" for x in row.cells)
        body.append(f'<tr class="sv-serving-row"{style}>{cells}</tr>')
        notes += [f"<li>{esc(r.strategy)}: {esc(n)}</li>" for n in row.notes]
    findings = finding_items_html(c.findings, findings_head(c)) if c.findings else ""
    return (
        f'<div class="sv-serving" style="font-family:{esc(SANS)}">'
        f"<p>{esc(summary_line(c))}</p>"
        f'<table style="font-family:{esc(MONO)};border-collapse:collapse"><thead><tr>{head}'
        f"</tr></thead><tbody>{''.join(body)}</tbody></table>"
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
