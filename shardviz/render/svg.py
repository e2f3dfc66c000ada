"""The markup primitives every HTML view draws with: escaping, SVG numbers, rectangles and
text, text widths, and the frame (tick labels, axis titles, elided bands) around a panel.

:mod:`.html`, :mod:`.report.html`, :mod:`.compare.html` and :mod:`.projection` share these, so
a coordinate or a label is written the same way in every view.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from shardviz.render.geometry import PageAxis, offsets

#: Approximate advance of one monospace character, by font size (px).
CHAR_WIDTH = {9: 5.5, 10: 6.1, 11: 6.7}


def esc(value: object) -> str:
    """Escape any model string for HTML text and attributes."""
    return html.escape(str(value), quote=True)


def svg_num(x: float) -> str:
    """A coordinate, short: ``12``, ``12.5``."""
    return f"{x:.1f}".removesuffix(".0")


def text_width(text: str, size: int = 11) -> float:
    """The approximate width in px of ``text`` in the monospace font at ``size`` px."""
    return len(text) * CHAR_WIDTH.get(size, size * 0.61)


def svg_rect(x: float, y: float, w: float, h: float, extra: str = "") -> str:
    """A ``<rect>``; ``extra`` is more attributes, already escaped (``' fill="#fff"'``)."""
    return (
        f'<rect x="{svg_num(x)}" y="{svg_num(y)}" width="{svg_num(w)}" '
        f'height="{svg_num(h)}"{extra}/>'
    )


def svg_text(x: float, y: float, text: str, cls: str, extra: str = "") -> str:
    """A ``<text>`` of class ``cls`` at ``(x, y)``; ``text`` is escaped here, ``extra`` not."""
    return f'<text class="{cls}" x="{svg_num(x)}" y="{svg_num(y)}"{extra}>{esc(text)}</text>'


def tick_labels(axis: PageAxis) -> list[str]:
    """The tick label of each band of a page axis (one empty label for an unused side)."""
    return [b.label for b in axis.bands] if axis.used else [""]


# --------------------------------------------------------------------------------------------
# A panel's frame: tick labels and axis titles around a body of bands


class Frame:
    """Where a panel's body sits in its SVG and where each band starts and ends."""

    def __init__(
        self,
        rows: PageAxis,
        cols: PageAxis,
        col_sizes: list[float],
        row_sizes: list[float],
        row_ticks: Sequence[str],
    ) -> None:
        self.rows, self.cols = rows, cols
        self.col_sizes, self.row_sizes = col_sizes, row_sizes
        body_h = sum(row_sizes)
        tick_w = max([0.0, *(text_width(t, 10) for t in row_ticks)])
        title_w = text_width(rows.title, 11) if rows.used else 0.0
        self.rotate = rows.used and title_w + 8 <= body_h
        if not rows.used:
            self.left = 4.0
        elif self.rotate:
            self.left = 20 + tick_w + 6
        else:
            self.left = max(tick_w + 10, title_w + 14)
        self.top = 34.0 if cols.used else 4.0
        self.col_x = offsets(col_sizes, self.left)
        self.row_y = offsets(row_sizes, self.top)
        self.width = self.left + sum(col_sizes) + 4
        self.height = self.top + body_h + 4

    def axes(self, col_ticks: Sequence[str], row_ticks: Sequence[str]) -> list[str]:
        """The axis titles and tick labels of both sides."""
        return self._col_axis(col_ticks) + self._row_axis(row_ticks)

    def _col_axis(self, col_ticks: Sequence[str]) -> list[str]:
        if not self.cols.used:
            return []
        body_w = sum(self.col_sizes)
        out = [
            svg_text(
                self.left + body_w / 2,
                12,
                self.cols.title + " →",
                "sv-axis",
                ' text-anchor="middle"',
            )
        ]
        bands = self.cols.bands
        places = list(zip(self.col_x, self.col_sizes, col_ticks, bands, strict=True))
        centred = all(b.elided or text_width(t, 10) <= w + 2 for _, w, t, b in places)
        for x, w, t, b in places:
            if centred or b.elided:
                if t and text_width(t, 10) <= w + 2:
                    out.append(
                        svg_text(x + w / 2, self.top - 6, t, "sv-tick", ' text-anchor="middle"')
                    )
            elif text_width(str(b.start), 10) <= w - 2:
                # "a:b" does not fit every band: mark where each band starts, like a ruler.
                out.append(svg_text(x + 2, self.top - 6, str(b.start), "sv-tick"))
                out.append(
                    f'<path d="M{svg_num(x + 0.5)} {svg_num(self.top - 5)}v5" stroke="#8c959f"/>'
                )
        return out

    def _row_axis(self, row_ticks: Sequence[str]) -> list[str]:
        if not self.rows.used:
            return []
        out = []
        if self.rotate:
            cy = self.top + sum(self.row_sizes) / 2
            out.append(
                svg_text(
                    12,
                    cy,
                    self.rows.title,
                    "sv-axis",
                    f' text-anchor="middle" transform="rotate(-90 12 {svg_num(cy)})"',
                )
            )
        else:
            out.append(svg_text(4, 12, "↓ " + self.rows.title, "sv-axis"))
        for y, h, t in zip(self.row_y, self.row_sizes, row_ticks, strict=True):
            if t and h >= 10:
                out.append(
                    svg_text(
                        self.left - 5,
                        y + h / 2,
                        t,
                        "sv-tick",
                        ' text-anchor="end" dominant-baseline="central"',
                    )
                )
        return out

    def gaps(self, what: str) -> list[str]:
        """Dashed bands where runs were elided, with hover text."""
        out = []
        body_w = sum(self.col_sizes)
        body_h = sum(self.row_sizes)
        for x, w, b in zip(self.col_x, self.col_sizes, self.cols.bands, strict=True):
            if b.elided:
                tip = f"{b.hidden} more {what} of {self.cols.title} not shown ({b.start}:{b.stop})"
                out.append(
                    f'<g class="sv-elided"><title>{esc(tip)}</title>'
                    + svg_rect(x + 1, self.top, w - 2, body_h)
                    + svg_text(x + w / 2, self.top + body_h / 2, "…", "")
                    + "</g>"
                )
        for y, h, b in zip(self.row_y, self.row_sizes, self.rows.bands, strict=True):
            if b.elided:
                tip = f"{b.hidden} more {what} of {self.rows.title} not shown ({b.start}:{b.stop})"
                label = f"⋯ {b.hidden} more ⋯"
                if text_width(label) > body_w - 8:
                    label = "⋯"
                out.append(
                    f'<g class="sv-elided"><title>{esc(tip)}</title>'
                    + svg_rect(self.left, y + 1, body_w, h - 2)
                    + svg_text(self.left + body_w / 2, y + h / 2, label, "")
                    + "</g>"
                )
        return out


def mesh_panel_frame(
    rows: PageAxis, cols: PageAxis, cell_w: float, cell_h: float, cls: str
) -> tuple[Frame, list[str]]:
    """The frame of one mesh panel of ``cell_w`` x ``cell_h`` cells (elided bands 14 px), and
    the start of its SVG: the ``<svg class="{cls}">`` tag and both axes."""
    col_sizes = [14.0 if b.elided else cell_w for b in cols.bands]
    row_sizes = [14.0 if b.elided else cell_h for b in rows.bands]
    row_ticks = tick_labels(rows)
    frame = Frame(rows, cols, col_sizes, row_sizes, row_ticks if rows.used else [])
    w, h = svg_num(frame.width), svg_num(frame.height)
    out = [f'<svg class="{cls}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">']
    out.extend(frame.axes(tick_labels(cols), row_ticks))
    return frame, out
