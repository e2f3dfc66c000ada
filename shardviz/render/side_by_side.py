"""Views of :class:`~shardviz.model.side_by_side.TreesOnOneScale`: trees side by side, every
bar chart on one scale (text, an HTML fragment, an offline page).

The HTML panels draw their bars with the tree view's own bar chart, given the shared scale,
so a bar means the same bytes in every panel; each panel's leaves are in a ``<details>`` that
opens on a click (no script).
"""

from __future__ import annotations

from shardviz.model.array import TreeLayout
from shardviz.model.side_by_side import TreesOnOneScale
from shardviz.model.units import format_bytes
from shardviz.render.geometry import mesh_summary
from shardviz.render.html import STYLE, bars_svg, leaf_table_html, page
from shardviz.render.svg import esc

#: Characters of a full bar in the text view.
TEXT_BAR = 32
#: Above this many runs of equal bars, the text view gives min, median and max instead.
TEXT_RUNS = 16

CSS = (
    ".sv-side .sv-side-panel{border-left:3px solid #d0d7de;padding:0 0 0 10px}"
    ".sv-side .sv-side-panel .sv-facts{margin:0 0 4px}"
    ".sv-side summary{cursor:pointer;color:#0550ae;font-size:11px;margin:4px 0}"
    ".sv-side details table{margin:4px 0 0}"
)


def _percent(fraction: float) -> str:
    """``100%``, ``12.5%``, ``7.6%``, ``<0.1%``."""
    pct = 100 * fraction
    if pct == 0 or pct >= 0.1:
        return f"{pct:.1f}".removesuffix(".0") + "%"
    return "<0.1%"


def _mesh_text(tree: TreeLayout) -> str:
    if tree.mesh is not None:
        return mesh_summary(tree.mesh)
    return "leaves on different meshes" if len(tree) else "no leaves"


def _runs(per_device: dict[int, int]) -> list[tuple[str, int]]:
    """Consecutive devices holding the same bytes, merged: ``[('d0-d7', 787968)]``."""
    runs: list[tuple[int, int, int]] = []
    for d, v in sorted(per_device.items()):
        if runs and runs[-1][2] == v and runs[-1][1] == d - 1:
            runs[-1] = (runs[-1][0], d, v)
        else:
            runs.append((d, d, v))
    return [(f"d{a}" if a == b else f"d{a}-d{b}", v) for a, b, v in runs]


def _text_bar(value: int, scale: int) -> str:
    filled = round(TEXT_BAR * value / scale)
    return "█" * filled + "░" * (TEXT_BAR - filled)


def _per_device_text(per_device: dict[int, int], scale: int) -> list[str]:
    if not per_device:
        return ["  no devices"]
    runs = _runs(per_device)
    if len(runs) > TEXT_RUNS:
        ordered = sorted(per_device.values())
        runs = [
            ("min", ordered[0]),
            ("median", ordered[len(ordered) // 2]),
            ("max", ordered[-1]),
        ]
    width = max(len(label) for label, _ in runs)
    return [
        f"  {label.ljust(width)}  {_text_bar(v, scale)}  {format_bytes(v, exact=True)}"
        for label, v in runs
    ]


def side_by_side_text(picture: TreesOnOneScale) -> str:
    """The trees one after another, each device's bytes as a bar of the same full length."""
    scale = picture.scale
    n = len(picture)
    lines = [
        f"{n} tree{'s' * (n != 1)} on one scale: a full bar is "
        f"{format_bytes(scale, exact=True)} per device"
    ]
    for (title, tree), fraction in zip(picture, picture.fractions, strict=True):
        leaves = len(tree)
        lines.append("")
        lines.append(f"{title} · {leaves} lea{'ves' if leaves != 1 else 'f'} · {_mesh_text(tree)}")
        lines.extend(_per_device_text(tree.bytes_per_device, scale))
        lines.append(
            f"  tallest bar {_percent(fraction)} of the scale · all devices together "
            f"{format_bytes(tree.total_bytes)} · counted once {format_bytes(tree.global_bytes)}"
        )
    return "\n".join(lines)


def side_by_side_html(picture: TreesOnOneScale) -> str:
    """The trees as panels in one row (wrapping when the page is narrow), each with its
    title, its facts and its per-device bars (``sv-bar``), all drawn to the same scale.

    Each panel is a ``<figure class="sv-side-panel">``; its leaves table is in a collapsed
    ``<details>``. Every title and leaf name is escaped.
    """
    scale = picture.scale
    n = len(picture)
    body = [
        f'<div class="sv-head">{n} tree{"s" * (n != 1)} on one scale '
        f'<span class="sv-dim">· a full bar is {esc(format_bytes(scale, exact=True))} '
        "per device</span></div>",
        '<div class="sv-panels">',
    ]
    for (title, tree), fraction in zip(picture, picture.fractions, strict=True):
        leaves = len(tree)
        tallest = max(tree.bytes_per_device.values(), default=0)
        facts = (
            f"tallest bar {esc(format_bytes(tallest))}, {_percent(fraction)} of the scale<br>"
            f"{leaves} lea{'ves' if leaves != 1 else 'f'} · "
            f"{esc(format_bytes(tree.total_bytes))} on all devices"
        )
        panel = [
            f'<figure class="sv-side-panel" data-title="{esc(title)}">',
            f"<figcaption>{esc(title)}</figcaption>",
            f'<div class="sv-facts">{facts}</div>',
            bars_svg(tree.bytes_per_device, scale) if leaves else "",
        ]
        if leaves:
            panel.append(
                f"<details><summary>its {leaves} lea{'ves' if leaves != 1 else 'f'}</summary>"
                f"{leaf_table_html(tree, kind=False)}</details>"
            )
        panel.append("</figure>")
        body.append("".join(panel))
    body.append("</div>")
    meshes = {_mesh_text(tree) for tree in picture.trees}
    if len(meshes) == 1:
        body.append(f'<div class="sv-note">{esc(meshes.pop())}</div>')
    return f'<div class="sv-root sv-side">{STYLE}<style>{CSS}</style>' + "".join(body) + "</div>"


def side_by_side_page(picture: TreesOnOneScale) -> str:
    """The picture as one self-contained offline HTML document."""
    return page("shardviz: " + " · ".join(picture.titles), [side_by_side_html(picture)])
