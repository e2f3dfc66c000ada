"""The views of :class:`~shardviz.model.traffic.CollectiveTraffic` (``report.traffic(...)``):
one collective's who-sends-to-whom, as text and as an HTML fragment with the mesh drawn.

The links and figures come from :func:`~shardviz.render.traffic.traffic_of`, the picture from
:func:`~shardviz.render.traffic.traffic_svg` (the one the report's ledger details show), so
the three agree.

Testable hooks: the HTML view is ``<div class="sv-root sv-trafficview" data-kind="…"
data-axes="a,b" data-index="i">`` around the head (``sv-head``), the facts (``sv-facts``) and
the ``sv-traffic`` figure of :mod:`.traffic` (or, with no mesh, its words in ``sv-twords``).
The text view has a line per group: a from/to table for all-to-all (groups of at most
:data:`TABLE_DEVICES`), the ring's order for ring kinds, the pairs for collective-permute.
"""

from __future__ import annotations

import textwrap

from shardviz.analysis.traffic import Traffic, traffic_of
from shardviz.model.traffic import CollectiveTraffic
from shardviz.model.units import format_bytes
from shardviz.render.geometry import mesh_grid
from shardviz.render.html import CSS, SANS, page
from shardviz.render.report.view import axes_repr, groups_str, operand_str
from shardviz.render.svg import esc
from shardviz.render.table import aligned_table
from shardviz.render.traffic import traffic_css, traffic_svg

#: Groups the text view spells out before ``… N more groups``.
TEXT_GROUPS = 4
#: Largest all-to-all group the text view shows as a from/to table (larger: a line per device).
TABLE_DEVICES = 8
#: Mesh cells above which the picture elides more (as the report's ledger does).
MAP_CELLS = 128
#: Width the text view wraps its sentences at.
WIDTH = 96

_STYLE = (
    "<style>"
    + CSS.replace("\n", "")
    + f".sv-trafficview .sv-traffic figcaption{{font:600 11px {SANS};color:#57606a}}"
    ".sv-trafficview .sv-legend{display:flex;flex-direction:column;gap:2px;margin-top:4px;"
    "max-width:560px}"
    ".sv-trafficview .sv-twords{color:#24292f}" + traffic_css(".sv-trafficview") + "</style>"
)


def _title(t: CollectiveTraffic) -> str:
    c = t.collective
    where = f" of {t.function}" if t.function else ""
    return f"{c.kind} over {axes_repr(c.axes)} · report.collectives[{t.index}]{where}"


def _facts(t: CollectiveTraffic) -> str:
    c = t.collective
    return (
        f"operand {operand_str(c)} · {format_bytes(c.in_bytes)} in · "
        f"{format_bytes(c.moved_bytes)} moved per device · {groups_str(c.groups)}"
    )


def _group_lines(t: Traffic, g: int, links: tuple[tuple[int, int], ...]) -> list[str]:
    """One group's links in words: a from/to table, a ring's order, or its pairs."""
    devices = list(dict.fromkeys(x for link in links for x in link))
    head = f"group {g}: " + " ".join(f"d{d}" for d in devices)
    if t.pattern == "all-pairs" and len(devices) <= TABLE_DEVICES:
        sends = set(links)
        chunk = format_bytes(t.step_bytes)
        rows = [[f"d{a}", *(chunk if (a, b) in sends else "·" for b in devices)] for a in devices]
        header = ["from \\ to", *(f"d{b}" for b in devices)]
        return [head, *aligned_table(header, rows, set(range(1, len(devices) + 1)), "  ")]
    if t.pattern == "ring":
        order = [a for a, _ in links]
        return [f"group {g}: " + " → ".join(f"d{d}" for d in [*order, order[0]])]
    if t.pattern == "all-pairs":
        return [head] + [
            f"  d{a} → " + " ".join(f"d{b}" for x, b in links if x == a) for a in devices
        ]
    return [f"group {g}: " + ", ".join(f"d{a} → d{b}" for a, b in links)]


def collective_traffic_text(t: CollectiveTraffic) -> str:
    """The collective, what each device sends, and each group's links (the first few)."""
    traffic = traffic_of(t.collective, t.mesh)
    lines = [_title(t)]
    lines += textwrap.wrap(_facts(t), WIDTH, subsequent_indent="  ")
    lines += textwrap.wrap(
        f"who sends to whom (ring model): {traffic.words}", WIDTH, subsequent_indent="  "
    )
    groups = [(g, links) for g, links in enumerate(traffic.links) if links]
    for g, links in groups[:TEXT_GROUPS]:
        lines += _group_lines(traffic, g, links)
    if len(groups) > TEXT_GROUPS:
        more = len(groups) - TEXT_GROUPS
        lines.append(f"… {more} more group{'s' * (more != 1)}, the same pattern")
    return "\n".join(lines)


def collective_traffic_html(t: CollectiveTraffic) -> str:
    """The collective's head and facts, and its traffic drawn as arrows on the mesh."""
    c = t.collective
    if t.mesh is not None:
        grid = mesh_grid(t.mesh)
        if sum(1 for _ in grid.cells()) > MAP_CELLS:
            grid = mesh_grid(t.mesh, 6, 2)
        body = traffic_svg(t.mesh, grid, c)
    else:
        words = traffic_of(c, None).words
        body = (
            '<div class="sv-note">no mesh to draw on</div>'
            f'<div class="sv-twords">who sends to whom (ring model): {esc(words)}</div>'
        )
    return (
        f'<div class="sv-root sv-trafficview" data-kind="{esc(c.kind)}" '
        f'data-axes="{esc(",".join(c.axes))}" data-index="{t.index}">{_STYLE}'
        f'<div class="sv-head">{esc(_title(t))}</div>'
        f'<div class="sv-facts">{esc(_facts(t))}</div>{body}</div>'
    )


def collective_traffic_page(t: CollectiveTraffic) -> str:
    """The HTML view as one self-contained offline document."""
    return page(f"shardviz: {_title(t)}", [collective_traffic_html(t)])
