"""The view of a :class:`~shardviz.model.dispatch.DispatchTiming`: the cost per step of each
way of dispatching, by step program and number of processes, and the survey's claims checked
on it (text, an HTML fragment, an offline page).

One :class:`DispatchView` holds the figures (computed once from the timing); its text and its
HTML read the same rows and claims.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model.dispatch import SHAPE_NAMES, SHAPES, Claim, DispatchTiming
from shardviz.model.units import format_seconds
from shardviz.render.html import STYLE, page
from shardviz.render.svg import esc, svg_num
from shardviz.render.table import aligned_table

#: Each shape's colour in the chart (multi-controller blues, single controller oranges; the
#: pipelined ones lighter).
COLORS = {
    ("multi", "sync"): "#0969da",
    ("multi", "pipelined"): "#54aeff",
    ("single", "sync"): "#bc4c00",
    ("single", "pipelined"): "#fb8f44",
}
#: The chart of one step program: its size, and each bar's width.
CHART_W, CHART_H, BAR_W, GAP = 300.0, 120.0, 14.0, 18.0
CSS = (
    ".sv-dispatch .sv-ok{color:#1a7f37;font-weight:600}"
    ".sv-dispatch .sv-no{color:#cf222e;font-weight:600}"
    ".sv-dispatch ul{margin:2px 0 8px;padding-left:18px}"
    ".sv-dispatch li.sv-claim{margin:4px 0 0}"
    ".sv-dispatch td.sv-num{text-align:right;font-variant-numeric:tabular-nums}"
    ".sv-dispatch .sv-key span{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px;"
    "vertical-align:-1px}"
)


@dataclass(frozen=True)
class DispatchRow:
    """One step program on one number of processes: each shape's median seconds per step
    (in :data:`~shardviz.model.dispatch.SHAPES` order) and as a multiple of the floor."""

    step: str
    processes: int
    per_step: tuple[float, ...]
    ratios: tuple[float, ...]


def dispatch_rows(timing: DispatchTiming) -> tuple[DispatchRow, ...]:
    """The rows of the view: by step program (shortest first), then by number of processes."""
    rows = []
    for program in timing.programs:
        for n in timing.process_counts:
            rows.append(
                DispatchRow(
                    step=program.name,
                    processes=n,
                    per_step=tuple(timing.per_step(c, m, n, program.name) for c, m in SHAPES),
                    ratios=tuple(timing.ratio(c, m, n, program.name) for c, m in SHAPES),
                )
            )
    return tuple(rows)


class DispatchView:
    """What a :class:`DispatchTiming` shows: its rows and claims, as text and HTML.

    Attributes:
        timing: the measurements.
        rows: :func:`dispatch_rows` of them.
        claims: ``timing.claims()``.
    """

    def __init__(self, timing: DispatchTiming) -> None:
        self.timing = timing
        self.rows = dispatch_rows(timing)
        self.claims = timing.claims()

    def to_json(self, indent: int | None = None) -> str:
        """The view as JSON: its timing's, from which the rows and claims are worked out
        again, the same, on the way back."""
        return self.timing.to_json(indent)

    @classmethod
    def from_json(cls, text: str) -> DispatchView:
        """The view of :meth:`to_json`'s timing (a ShardvizError naming the field that does
        not fit, as :meth:`DispatchTiming.from_json` raises)."""
        return cls(DispatchTiming.from_json(text))

    def _facts(self) -> str:
        t = self.timing
        runs = t.runs[0] if t.runs else None
        per = f"{runs.steps} steps x {len(runs.seconds)} repeats, medians; " if runs else ""
        progs = "; ".join(
            f"{p.name}: [{p.rows}, {p.width}] @ [{p.width}, {p.width}] per device"
            + (f", each device held {format_seconds(p.wait)}" if p.wait > 0 else "")
            for p in t.programs
        )
        return (
            f"{per}{t.devices_per_process} CPU device(s) per process; ratios are to the floor "
            f"(multi-controller pipelined). Steps: {progs}"
        )

    def text(self) -> str:
        """The table (a column per shape: ``multi sync`` is the multi-controller synchronous
        one, and so on), then each claim with its evidence."""
        header = ["step", "processes", *(f"{c} {m}" for c, m in SHAPES)]
        body = [
            [
                r.step,
                str(r.processes),
                *(
                    f"{format_seconds(s)} ({x:.1f}x)"
                    for s, x in zip(r.per_step, r.ratios, strict=True)
                ),
            ]
            for r in self.rows
        ]
        lines = ["Dispatch cost per step", self._facts(), ""]
        lines += aligned_table(header, body, right=set(range(1, len(header))))
        for c in self.claims:
            lines += ["", _claim_head(c)]
            lines += [f"    {e}" for e in c.evidence]
        if self.timing.command:
            lines += ["", f"measured by: {self.timing.command}"]
        return "\n".join(lines)

    def html(self) -> str:
        """An HTML fragment: a chart per step program, the table, the claims."""
        key = "".join(
            f'<span style="background:{COLORS[s]}"></span>{esc(SHAPE_NAMES[s])}' for s in SHAPES
        )
        charts = "".join(self._chart(p.name) for p in self.timing.programs)
        head = "".join(f"<th>{esc(SHAPE_NAMES[s])}</th>" for s in SHAPES)
        body = "".join(
            f"<tr><td>{esc(r.step)}</td><td class='sv-num'>{r.processes}</td>"
            + "".join(
                f"<td class='sv-num'>{esc(format_seconds(s))} ({x:.1f}x)</td>"
                for s, x in zip(r.per_step, r.ratios, strict=True)
            )
            + "</tr>"
            for r in self.rows
        )
        claims = "".join(
            f'<li class="sv-claim"><span class="{"sv-ok" if c.holds else "sv-no"}">'
            f"{'holds' if c.holds else 'does not hold'}</span> ({esc(c.source)}) "
            f"{esc(c.statement)}<ul>"
            + "".join(f"<li>{esc(e)}</li>" for e in c.evidence)
            + "</ul></li>"
            for c in self.claims
        )
        command = (
            f'<p class="sv-note">measured by: <code>{esc(self.timing.command)}</code></p>'
            if self.timing.command
            else ""
        )
        return (
            f'<div class="sv-root sv-dispatch">{STYLE}<style>{CSS}</style>'
            '<p class="sv-head">Dispatch cost per step</p>'
            f'<p class="sv-facts">{esc(self._facts())}</p>'
            f'<p class="sv-key">{key}</p><div class="sv-panels">{charts}</div>'
            f'<table class="sv-table"><thead><tr><th>step</th><th>processes</th>{head}</tr>'
            f"</thead><tbody>{body}</tbody></table><ul>{claims}</ul>{command}</div>"
        )

    def _chart(self, step: str) -> str:
        """Bars of one step program: a group per number of processes, a bar per shape, on
        one scale (seconds per step); the floor is the second bar of each group."""
        rows = [r for r in self.rows if r.step == step]
        top = max((s for r in rows for s in r.per_step), default=0.0) or 1.0
        group = len(SHAPES) * BAR_W + GAP
        width = max(CHART_W, group * len(rows) + GAP)
        parts = []
        for g, r in enumerate(rows):
            x0 = GAP + g * group
            for k, (shape, s) in enumerate(zip(SHAPES, r.per_step, strict=True)):
                h = CHART_H * s / top
                parts.append(
                    f'<rect x="{svg_num(x0 + k * BAR_W)}" y="{svg_num(CHART_H - h)}" '
                    f'width="{svg_num(BAR_W - 2)}" height="{svg_num(h)}" fill="{COLORS[shape]}">'
                    f"<title>{esc(SHAPE_NAMES[shape])}, {r.processes} processes: "
                    f"{esc(format_seconds(s))} per step</title></rect>"
                )
            label = f"{r.processes} process" + ("" if r.processes == 1 else "es")
            parts.append(
                f'<text class="sv-tick" x="{svg_num(x0 + 2 * BAR_W)}" y="{svg_num(CHART_H + 12)}" '
                f'text-anchor="middle">{esc(label)}</text>'
            )
        parts.append(
            f'<text class="sv-tick" x="0" y="-4">{esc(format_seconds(top))} per step</text>'
            f'<line x1="0" x2="{svg_num(width)}" y1="{svg_num(CHART_H)}" y2="{svg_num(CHART_H)}" '
            'stroke="#8c959f"/>'
        )
        return (
            f"<figure><figcaption>{esc(step)} step</figcaption>"
            f'<svg width="{svg_num(width)}" height="{svg_num(CHART_H + 18)}" '
            f'viewBox="0 -14 {svg_num(width)} {svg_num(CHART_H + 32)}">{"".join(parts)}</svg>'
            "</figure>"
        )

    def page(self) -> str:
        """One self-contained offline HTML document."""
        return page("Dispatch cost per step", [self.html()])

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return self.html()


def _claim_head(claim: Claim) -> str:
    verdict = "holds" if claim.holds else "does not hold"
    return f"[{verdict}] ({claim.source}) {claim.statement}"
