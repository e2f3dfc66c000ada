"""The geometry every backend shares: what goes where, computed once from the model.

Arrays of any rank are drawn the same way: two dims on the page (rows and columns) and the
other dims as small multiples (panels). Meshes likewise: the last two axes on the page, the
leading axes flattened into panels. Long runs are elided numpy-style, by one rule
(:func:`elide`): more than :data:`ELIDE_ABOVE` slots along a page axis (or panels) show the
first :data:`KEEP`, one gap standing for the rest, and the last :data:`KEEP`.

Nothing here draws; :mod:`shardviz.render.text` and :mod:`shardviz.render.html` turn these
objects into characters and SVG.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

from shardviz.model.array import ArrayLayout, Tile, TreeLayout, format_index
from shardviz.model.mesh import Device, MeshLayout
from shardviz.model.units import format_bytes

#: More slots than this along one page axis (or more panels) are elided.
ELIDE_ABOVE = 12
#: Slots kept at each end of an elided run.
KEEP = 5

Interval = tuple[int, int]
S = TypeVar("S")
H = TypeVar("H")


def elide(
    n: int,
    shown: Callable[[int], S],
    hidden: Callable[[int, int], H],
    limit: int = ELIDE_ABOVE,
    keep: int = KEEP,
) -> list[S | H]:
    """The one elision rule, for page axes and panels alike: ``n`` slots, or, past ``limit``,
    the first and last ``keep`` around one gap standing for the rest.

    Args:
        n: how many slots there are.
        shown: what a shown slot becomes, given its number.
        hidden: what the gap becomes, given the hidden slots as ``first, stop`` (a range).
        limit: show all slots when there are at most this many.
        keep: slots kept at each end otherwise.

    Returns:
        One item per shown slot in order, with the gap's item where the hidden slots go.
    """
    if n <= limit:
        return [shown(i) for i in range(n)]
    return [
        *(shown(i) for i in range(keep)),
        hidden(keep, n - keep),
        *(shown(i) for i in range(n - keep, n)),
    ]


@dataclass(frozen=True)
class Band:
    """One slot along a page axis: an interval of an array dim or one mesh index, or a gap.

    ``start``/``stop`` are the interval (for a gap, the span of everything it hides);
    ``hidden`` is how many slots a gap stands for (0 for a real slot); ``label`` is the slot's
    tick text (``"0:4"`` for an array interval, ``"3"`` for a mesh index).
    """

    start: int
    stop: int
    label: str
    hidden: int = 0

    @property
    def elided(self) -> bool:
        return self.hidden > 0

    @property
    def length(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True)
class PageAxis:
    """The rows or the columns of a grid.

    ``dim`` is the array dim (or mesh axis) laid along this side, ``None`` when the side is
    unused (a 1-D array has no rows; it then holds one band). ``size`` is the dim's length (or
    the axis size), ``count`` how many distinct slots it has in all, ``names`` the mesh axes the
    dim is split over (for a mesh, the axis name), and ``title`` the label for the side, e.g.
    ``dim 0 (8) · 'data'`` or ``data (2)``.
    """

    dim: int | None
    size: int
    count: int
    names: tuple[str, ...]
    title: str
    bands: tuple[Band, ...]

    @property
    def used(self) -> bool:
        return self.dim is not None

    @property
    def hidden(self) -> int:
        """Slots hidden by elision."""
        return sum(b.hidden for b in self.bands)


@dataclass(frozen=True)
class PanelGap:
    """Stands for ``hidden`` panels not drawn, between panel ``after`` and the next one shown.

    ``first`` and ``last`` are the labels of the first and last hidden panel.
    """

    hidden: int
    after: int
    first: str = ""
    last: str = ""

    @property
    def text(self) -> str:
        """``… 6 more panels (dim 0 = 10:12 … dim 0 = 20:22) …``."""
        span = f" ({self.first} … {self.last})" if self.first else ""
        return f"… {self.hidden} more panels{span} …"


@dataclass(frozen=True)
class Cell:
    """One distinct tile on the page: the band it sits in and the devices holding it.

    ``tiles`` lists the holders, replica 0 first; it is empty when no device holds the piece
    at that place (only possible for shardings that are not a regular grid).
    """

    row: int
    col: int
    key: tuple[Interval, ...]
    tiles: tuple[Tile, ...]

    @property
    def device_ids(self) -> tuple[int, ...]:
        return tuple(t.device_id for t in self.tiles)

    @property
    def index_str(self) -> str:
        return format_index(tuple(slice(a, b) for a, b in self.key))


@dataclass(frozen=True)
class ArrayPanel:
    """One small multiple: the page at one combination of intervals along the off-page dims."""

    index: int
    coords: tuple[Interval, ...]
    label: str
    cells: tuple[Cell, ...]

    @cached_property
    def _by_place(self) -> dict[tuple[int, int], Cell]:
        return {(c.row, c.col): c for c in self.cells}

    def cell(self, row: int, col: int) -> Cell | None:
        """The cell at band ``row``, ``col`` (``None`` in an elided band)."""
        return self._by_place.get((row, col))


@dataclass(frozen=True)
class ArrayGrid:
    """Where every distinct tile of an array goes: page axes, then panels of cells."""

    rows: PageAxis
    cols: PageAxis
    panel_dims: tuple[int, ...]
    panel_count: int
    panels: tuple[ArrayPanel | PanelGap, ...]

    @property
    def page_dims(self) -> tuple[int, ...]:
        return tuple(a.dim for a in (self.rows, self.cols) if a.dim is not None)

    def cells(self) -> Iterator[Cell]:
        """Every cell drawn, panel by panel."""
        for panel in self.panels:
            if isinstance(panel, ArrayPanel):
                yield from panel.cells

    @property
    def elided(self) -> bool:
        return bool(self.rows.hidden or self.cols.hidden or self.panel_count > self.shown_panels)

    @property
    def shown_panels(self) -> int:
        return sum(isinstance(p, ArrayPanel) for p in self.panels)


@dataclass(frozen=True)
class MeshCell:
    """One device on the page: its band, the device, and its full mesh coordinate."""

    row: int
    col: int
    device: Device
    coords: tuple[int, ...]

    @property
    def coord_text(self) -> str:
        """The coordinate under the device's id: ``(1, 0, 3)`` (``""`` on a mesh of no axes)."""
        return "(" + ", ".join(map(str, self.coords)) + ")" if self.coords else ""


@dataclass(frozen=True)
class MeshPanel:
    """The last two mesh axes at one coordinate of the leading (panel) axes."""

    index: int
    coords: tuple[int, ...]
    label: str
    cells: tuple[MeshCell, ...]

    @cached_property
    def _by_place(self) -> dict[tuple[int, int], MeshCell]:
        return {(c.row, c.col): c for c in self.cells}

    def cell(self, row: int, col: int) -> MeshCell | None:
        return self._by_place.get((row, col))


@dataclass(frozen=True)
class MeshGrid:
    """Where every device of a mesh goes: page axes, then panels of device cells."""

    rows: PageAxis
    cols: PageAxis
    panel_axes: tuple[int, ...]
    panel_count: int
    panels: tuple[MeshPanel | PanelGap, ...]

    def cells(self) -> Iterator[MeshCell]:
        for panel in self.panels:
            if isinstance(panel, MeshPanel):
                yield from panel.cells


# --------------------------------------------------------------------------------------------
# Arrays


def _unravel(flat: int, sizes: Sequence[int]) -> tuple[int, ...]:
    out = []
    for size in reversed(sizes):
        out.append(flat % size)
        flat //= size
    return tuple(reversed(out))


def _interval_str(iv: Interval, size: int) -> str:
    return ":" if iv == (0, size) else f"{iv[0]}:{iv[1]}"


def spec_names(layout: ArrayLayout, dim: int) -> tuple[str, ...]:
    """The mesh axes dim ``dim`` is split over (``()`` when unsplit or not a named sharding)."""
    if layout.spec is None or dim >= len(layout.spec):
        return ()
    return tuple(layout.spec[dim])


def dim_title(layout: ArrayLayout, dim: int) -> str:
    """A side label such as ``dim 0 (8) · 'data'`` or ``dim 1 (16) · ('data', 'model')``."""
    names = spec_names(layout, dim)
    title = f"dim {dim} ({layout.shape[dim]})"
    if len(names) == 1:
        title += f" · {names[0]!r}"
    elif names:
        title += " · (" + ", ".join(repr(n) for n in names) + ")"
    return title


def dim_intervals(layout: ArrayLayout) -> list[list[Interval]]:
    """Per dim, the sorted distinct ``(start, stop)`` intervals of the tiles' indices."""
    if not layout.tiles:
        return [[(0, n)] for n in layout.shape]
    return [sorted({t.key[d] for t in layout.tiles}) for d in range(layout.ndim)]


def page_dims(ndim: int, sharded: Sequence[int]) -> tuple[int, ...]:
    """The array dims drawn on the page, in order (rows first).

    Sharded dims come first (the two trailing ones if more than two are sharded); if fewer than
    two dims are sharded the rest is filled with unsharded dims, trailing dims first.
    """
    if ndim <= 1:
        return tuple(range(ndim))
    chosen = list(sharded[-2:])
    for d in reversed(range(ndim)):
        if len(chosen) == 2:
            break
        if d not in chosen:
            chosen.append(d)
    return tuple(sorted(chosen))


def _array_axis(
    layout: ArrayLayout, dim: int | None, intervals: list[Interval], limit: int, keep: int
) -> PageAxis:
    if dim is None:
        return PageAxis(None, 1, 1, (), "", (Band(0, 1, ""),))

    def shown(i: int) -> Band:
        a, b = intervals[i]
        return Band(a, b, f"{a}:{b}")

    def gap(first: int, stop: int) -> Band:
        return Band(intervals[first][0], intervals[stop - 1][1], f"+{stop - first}", stop - first)

    return PageAxis(
        dim,
        layout.shape[dim],
        len(intervals),
        spec_names(layout, dim),
        dim_title(layout, dim),
        tuple(elide(len(intervals), shown, gap, limit, keep)),
    )


def _array_cells(
    rows: PageAxis,
    cols: PageAxis,
    key: list[Interval],
    groups: dict[tuple[Interval, ...], tuple[Tile, ...]],
) -> tuple[Cell, ...]:
    """The cells of one panel: ``key`` holds the panel's intervals along the off-page dims,
    each shown band fills in the page dims; ``groups`` maps a tile key to its holders."""
    cells = []
    for r, rb in enumerate(rows.bands):
        if rb.elided:
            continue
        if rows.dim is not None:
            key[rows.dim] = (rb.start, rb.stop)
        for c, cb in enumerate(cols.bands):
            if cb.elided:
                continue
            if cols.dim is not None:
                key[cols.dim] = (cb.start, cb.stop)
            k = tuple(key)
            cells.append(Cell(r, c, k, groups.get(k, ())))
    return tuple(cells)


def array_grid(layout: ArrayLayout, limit: int = ELIDE_ABOVE, keep: int = KEEP) -> ArrayGrid:
    """Lay an array of any rank out as panels of cells, one cell per distinct tile.

    Args:
        layout: the array.
        limit: elide a page axis (or the panels) with more slots than this.
        keep: slots kept at each end of an elided run.

    Returns:
        The grid: rows and columns (two page dims), the off-page dims as panels (one per
        combination of their distinct intervals), and in each panel one :class:`Cell` per
        distinct tile not hidden by elision.
    """
    intervals = dim_intervals(layout)
    sharded = [d for d in range(layout.ndim) if len(intervals[d]) > 1]
    page = page_dims(layout.ndim, sharded)
    row_dim = page[0] if len(page) == 2 else None
    col_dim = page[-1] if page else None
    rows = _array_axis(
        layout, row_dim, intervals[row_dim] if row_dim is not None else [], limit, keep
    )
    cols = _array_axis(
        layout, col_dim, intervals[col_dim] if col_dim is not None else [], limit, keep
    )

    panel_dims = tuple(d for d in range(layout.ndim) if d not in page)
    panel_sizes = [len(intervals[d]) for d in panel_dims]
    panel_count = math.prod(panel_sizes)
    groups = {group[0].key: group for group in layout.distinct_tiles}

    def panel_at(flat: int) -> tuple[tuple[Interval, ...], str]:
        pos = _unravel(flat, panel_sizes)
        coords = tuple(intervals[d][p] for d, p in zip(panel_dims, pos, strict=True))
        label = " · ".join(
            f"dim {d} = {_interval_str(iv, layout.shape[d])}"
            for d, iv in zip(panel_dims, coords, strict=True)
        )
        return coords, label

    def panel(flat: int) -> ArrayPanel:
        coords, label = panel_at(flat)
        key: list[Interval] = [(0, 0)] * layout.ndim
        for d, iv in zip(panel_dims, coords, strict=True):
            key[d] = iv
        return ArrayPanel(flat, coords, label, _array_cells(rows, cols, key, groups))

    def gap(first: int, stop: int) -> PanelGap:
        return PanelGap(stop - first, first - 1, panel_at(first)[1], panel_at(stop - 1)[1])

    panels = elide(panel_count, panel, gap, limit, keep)
    return ArrayGrid(rows, cols, panel_dims, panel_count, tuple(panels))


# --------------------------------------------------------------------------------------------
# Meshes


def _mesh_axis(mesh: MeshLayout, axis: int | None, limit: int, keep: int) -> PageAxis:
    if axis is None:
        return PageAxis(None, 1, 1, (), "", (Band(0, 1, ""),))
    size = mesh.axis_sizes[axis]
    name = mesh.axis_names[axis]
    bands = elide(
        size,
        lambda i: Band(i, i + 1, str(i)),
        lambda first, stop: Band(first, stop, f"+{stop - first}", stop - first),
        limit,
        keep,
    )
    return PageAxis(axis, size, size, (name,), f"{name} ({size})", tuple(bands))


def mesh_grid(mesh: MeshLayout, limit: int = ELIDE_ABOVE, keep: int = KEEP) -> MeshGrid:
    """Lay a mesh out as panels of device cells.

    One axis is one row; two axes are rows (axis 0) by columns (axis 1); with more axes the
    leading ones are flattened into panels, each showing the last two. A mesh with no axes is
    one cell.
    """
    n = mesh.ndim
    row_axis = n - 2 if n >= 2 else None
    col_axis = n - 1 if n >= 1 else None
    rows = _mesh_axis(mesh, row_axis, limit, keep)
    cols = _mesh_axis(mesh, col_axis, limit, keep)
    panel_axes = tuple(range(max(0, n - 2)))
    panel_sizes = [mesh.axis_sizes[a] for a in panel_axes]
    panel_count = math.prod(panel_sizes)
    nrows = mesh.axis_sizes[row_axis] if row_axis is not None else 1
    ncols = mesh.axis_sizes[col_axis] if col_axis is not None else 1

    def panel_at(flat: int) -> tuple[tuple[int, ...], str]:
        pcoords = _unravel(flat, panel_sizes)
        label = ", ".join(
            f"{mesh.axis_names[a]}={p}" for a, p in zip(panel_axes, pcoords, strict=True)
        )
        return pcoords, label

    def panel(flat: int) -> MeshPanel:
        pcoords, label = panel_at(flat)
        cells = []
        for r, rb in enumerate(rows.bands):
            if rb.elided:
                continue
            for c, cb in enumerate(cols.bands):
                if cb.elided:
                    continue
                flat_dev = (flat * nrows + rb.start) * ncols + cb.start
                coords = pcoords
                if row_axis is not None:
                    coords += (rb.start,)
                if col_axis is not None:
                    coords += (cb.start,)
                cells.append(MeshCell(r, c, mesh.devices[flat_dev], coords))
        return MeshPanel(flat, pcoords, label, tuple(cells))

    def gap(first: int, stop: int) -> PanelGap:
        return PanelGap(stop - first, first - 1, panel_at(first)[1], panel_at(stop - 1)[1])

    panels = elide(panel_count, panel, gap, limit, keep)
    return MeshGrid(rows, cols, panel_axes, panel_count, tuple(panels))


def mesh_cell_tip(mesh: MeshLayout, cell: MeshCell) -> str:
    """A device cell's hover text: ``d5 · data=1, model=1`` then ``process 0 · cpu``."""
    dev = cell.device
    named = ", ".join(f"{n}={c}" for n, c in zip(mesh.axis_names, cell.coords, strict=True))
    tip = f"d{dev.id}" + (f" · {named}" if named else "")
    tip += f"\nprocess {dev.process_index} · {dev.platform}"
    if dev.kind != dev.platform:
        tip += f" ({dev.kind})"
    return tip


def mesh_panels_text(mesh: MeshLayout, grid: MeshGrid) -> str:
    """``one panel per pod, data`` when leading axes are panels, else ``""``."""
    if not grid.panel_axes:
        return ""
    return "one panel per " + ", ".join(mesh.axis_names[a] for a in grid.panel_axes)


# --------------------------------------------------------------------------------------------
# Elided runs in words


def gap_tip(axis: PageAxis, band: Band, what: str) -> str:
    """An elided band's hover text: ``6 more indices of data (16) not shown (5:11)``."""
    return f"{band.hidden} more {what} of {axis.title} not shown ({band.start}:{band.stop})"


def gap_notes(axis: PageAxis, what: str, span: str) -> list[str]:
    """One note per elided band, for under a picture:
    ``… 6 more intervals of dim 0 (64) not shown (elements 20:44)``."""
    return [
        f"… {b.hidden} more {what} of {axis.title} not shown ({span} {b.start}:{b.stop})"
        for b in axis.bands
        if b.elided
    ]


# --------------------------------------------------------------------------------------------
# Pixel extents (HTML)

#: Least width (px) of an array's column band.
CELL_MIN = 16.0
#: Width (px) of an elided column band of an array.
GAP_PX = 26.0
#: Least height (px) of an array's row band.
ROW_MIN = 34.0
#: Height (px) of a mesh's device cell.
MESH_CELL_H = 40.0
#: Width and height (px) of an elided band of a mesh.
MESH_GAP = 24.0
#: Least and most aspect (height over width) an array is drawn with: a 4096 x 8 array is drawn
#: 4 times taller than wide, not 512 times.
ASPECT_MIN = 0.25
ASPECT_MAX = 4.0


def array_band_sizes(grid: ArrayGrid) -> tuple[list[float], list[float]]:
    """Pixel sizes of an array grid's column and row bands: ``(col_sizes, row_sizes)``.

    The picture keeps the array's aspect (height over width, clamped to :data:`ASPECT_MIN`
    .. :data:`ASPECT_MAX`) so a 512 x 128 weight reads taller than wide: it fills a box of
    520 x 360 px (300 x 240 when there are several panels), or less where the aspect asks for
    it, and grows only to give each band its least size. Bands share their side by interval
    length. An unused side is one fixed band.
    """
    rows, cols = grid.rows, grid.cols
    if not cols.used:
        return [140.0], [48.0]
    several = grid.shown_panels > 1
    box_w, box_h = (300.0, 240.0) if several else (520.0, 360.0)
    if not rows.used:
        return band_sizes(cols.bands, box_w, CELL_MIN, GAP_PX), [48.0]
    aspect = min(ASPECT_MAX, max(ASPECT_MIN, rows.size / max(1, cols.size)))
    n = len(rows.bands)
    least_h = max(48.0, ROW_MIN * n)
    width = min(box_w, box_h / aspect)
    height = max(least_h, width * aspect)
    width = min(box_w, max(width, height / aspect))  # a tall least height widens, up to the box
    col_sizes = band_sizes(cols.bands, width, CELL_MIN, GAP_PX)
    row_sizes = band_sizes(rows.bands, height, min(ROW_MIN, height / n), 22.0)
    return col_sizes, row_sizes


def mesh_band_sizes(grid: MeshGrid, cell_w: float) -> tuple[list[float], list[float]]:
    """Pixel sizes of a mesh grid's column and row bands: ``cell_w`` by :data:`MESH_CELL_H`
    per device, :data:`MESH_GAP` for an elided band."""
    col_sizes = [MESH_GAP if b.elided else cell_w for b in grid.cols.bands]
    row_sizes = [MESH_GAP if b.elided else MESH_CELL_H for b in grid.rows.bands]
    return col_sizes, row_sizes


def band_sizes(bands: Sequence[Band], total: float, min_px: float, gap_px: float) -> list[float]:
    """Pixel extent of each band: proportional to its length, at least ``min_px``.

    Gap bands get ``gap_px``; the rest share what is left in proportion to their interval
    lengths, and any band that would come out smaller than ``min_px`` is clamped to it (the
    others shrink to make room). If even the clamped sizes do not fit, ``total`` grows.
    """
    sizes = [0.0] * len(bands)
    free = []
    remaining = float(total)
    for i, b in enumerate(bands):
        if b.elided:
            sizes[i] = gap_px
            remaining -= gap_px
        else:
            free.append(i)
    remaining = max(remaining, min_px * len(free))
    while free:
        weight = sum(max(bands[i].length, 0) for i in free)
        share = {
            i: remaining * (bands[i].length / weight if weight else 1 / len(free)) for i in free
        }
        small = [i for i in free if share[i] < min_px]
        if not small:
            for i in free:
                sizes[i] = share[i]
            break
        for i in small:
            sizes[i] = min_px
            remaining -= min_px
            free.remove(i)
    return sizes


def offsets(sizes: Sequence[float], start: float = 0.0) -> list[float]:
    """Start position of each band given their sizes."""
    out = []
    pos = start
    for s in sizes:
        out.append(pos)
        pos += s
    return out


# --------------------------------------------------------------------------------------------
# Words and numbers both backends print


def format_shape(shape: Sequence[int]) -> str:
    """``(8, 16)``, ``(8,)`` or ``()``."""
    return str(tuple(shape))


def device_runs(ids: Sequence[int]) -> list[str]:
    """``[0, 1, 2, 3, 8]`` -> ``['d0-d3', 'd8']``: runs of three or more consecutive ids merged."""
    pieces: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        if j - i >= 2:
            pieces.append(f"d{ids[i]}-d{ids[j]}")
        else:
            pieces.extend(f"d{x}" for x in ids[i : j + 1])
        i = j + 1
    return pieces


def devices_label(ids: Sequence[int], max_pieces: int = 3, max_chars: int = 14) -> str:
    """Device ids in few characters: ``d0``, ``d0-d3``, ``d7,d3``, or ``d0…d12 (4)``.

    The ids stay in the order given (replica 0 first, the device whose colour fills the
    tile) when that is short; otherwise they are sorted and merged into runs; when that is
    still long, the smallest and largest id and the count are shown.
    """
    if not ids:
        return "—"
    for order in (list(ids), sorted(ids)):
        pieces = device_runs(order)
        text = ",".join(pieces)
        if len(pieces) <= max_pieces and len(text) <= max_chars:
            return text
    return f"d{min(ids)}…d{max(ids)} ({len(ids)})"


def coord_label(mesh: MeshLayout, device_id: int) -> str:
    """A device's mesh coordinate as ``data=1, model=2`` (``?`` if it is not in the mesh)."""
    try:
        coords = mesh.coords(device_id)
    except KeyError:
        return "?"
    return ", ".join(f"{n}={c}" for n, c in zip(mesh.axis_names, coords, strict=True))


def mesh_shape_str(mesh: MeshLayout) -> str:
    """``('data': 2, 'model': 4)``, the way jax prints a mesh's shape."""
    return (
        "("
        + ", ".join(f"{n!r}: {s}" for n, s in zip(mesh.axis_names, mesh.axis_sizes, strict=True))
        + ")"
    )


def platform_str(mesh: MeshLayout) -> str:
    """The platforms (and device kinds, where they say more) of a mesh, e.g. ``tpu (TPU v4)``."""
    platforms = sorted({d.platform for d in mesh.devices})
    kinds = sorted({d.kind for d in mesh.devices} - set(platforms))
    text = ", ".join(platforms)
    if kinds:
        text += " (" + ", ".join(kinds) + ")"
    return text


def mesh_summary(mesh: MeshLayout) -> str:
    """``Mesh ('data': 2, 'model': 4) · 8 devices · 1 process · cpu``."""
    nd, npr = mesh.size, mesh.num_processes
    return (
        f"Mesh {mesh_shape_str(mesh)} · {nd} device{'s' * (nd != 1)} · "
        f"{npr} process{'es' * (npr != 1)} · {platform_str(mesh)}"
    )


def process_runs(mesh: MeshLayout) -> list[tuple[int, str]]:
    """Per process, the devices it drives: ``[(0, 'd0-d3'), (1, 'd4-d7')]``."""
    by_proc: dict[int, list[int]] = {}
    for d in mesh.devices:
        by_proc.setdefault(d.process_index, []).append(d.id)
    return [(p, devices_label(ids, 4, 24)) for p, ids in sorted(by_proc.items())]


@dataclass(frozen=True)
class ArrayFacts:
    """The numbers an array's header shows, computed once for every backend."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    spec: str
    kind: str
    shard_shape: tuple[int, ...]
    num_tiles: int
    replication: int
    max_bytes: int
    min_bytes: int
    global_bytes: int
    total_bytes: int
    num_devices: int
    mesh: str = field(default="")
    #: ``device`` (HBM) or the host memory kind the tiles live in.
    memory_kind: str = "device"

    @property
    def uneven(self) -> bool:
        return self.max_bytes != self.min_bytes

    @property
    def title(self) -> str:
        """``x · float32[8, 16]``."""
        return f"{self.name} · {self.dtype}[{', '.join(map(str, self.shape))}]"

    @property
    def tiles_str(self) -> str:
        """``8 distinct tiles, each on 1 device``."""
        t, r = self.num_tiles, self.replication
        return f"{t} distinct tile{'s' * (t != 1)}, each on {r} device{'s' * (r != 1)}"

    @property
    def bytes_str(self) -> str:
        """``64 B per device · 512 B global · 512 B on all 8 devices``."""
        per = format_bytes(self.max_bytes)
        if self.uneven:
            per = f"max {per} (uneven, min {format_bytes(self.min_bytes)})"
        where = f"all {self.num_devices} devices" if self.num_devices != 1 else "1 device"
        if self.memory_kind != "device":
            per += f" in {self.memory_kind} memory"
        return (
            f"{per} per device · {format_bytes(self.global_bytes)} global · "
            f"{format_bytes(self.total_bytes)} on {where}"
        )


def array_facts(layout: ArrayLayout) -> ArrayFacts:
    """The header facts of an array: name, shape, spec, kind, shard shape, bytes."""
    nbytes = [t.nbytes for t in layout.tiles] or [0]
    return ArrayFacts(
        name=layout.name or "array",
        dtype=layout.dtype,
        shape=layout.shape,
        spec=layout.spec_str,
        kind=layout.kind,
        shard_shape=layout.shard_shape,
        num_tiles=layout.num_distinct_tiles,
        replication=layout.replication,
        max_bytes=max(nbytes),
        min_bytes=min(nbytes),
        global_bytes=layout.nbytes,
        total_bytes=sum(nbytes),
        num_devices=len(layout.tiles),
        mesh=mesh_shape_str(layout.mesh),
        memory_kind=layout.memory_kind,
    )


def memory_split_str(tree: TreeLayout) -> str | None:
    """``per device (largest): 8 KiB in HBM · 64 KiB in host memory (opt)`` for a tree with
    leaves in host memory; ``None`` when every leaf is in the devices' own memory."""
    host = tree.host_bytes_per_device
    if not any(host.values()):
        return None
    hbm = tree.hbm_bytes_per_device
    names = [leaf.name for leaf in tree if leaf.on_host]
    shown = ", ".join(names[:4]) + (f", … {len(names) - 4} more" if len(names) > 4 else "")
    return (
        f"per device (largest): {format_bytes(max(hbm.values()))} in HBM · "
        f"{format_bytes(max(host.values()))} in host memory ({shown})"
    )


def page_summary(grid: ArrayGrid) -> str:
    """Which dims are where: ``rows: dim 0 (8) · 'data' · cols: dim 1 (16) · 'model'``."""
    parts = []
    if grid.rows.used:
        parts.append(f"rows: {grid.rows.title}")
    if grid.cols.used:
        parts.append(f"cols: {grid.cols.title}")
    if not parts:
        parts.append("0-D: one cell")
    if grid.panel_dims:
        dims = ", ".join(str(d) for d in grid.panel_dims)
        n = grid.panel_count
        parts.append(
            f"panels: dim{'s' * (len(grid.panel_dims) > 1)} {dims} ({n} panel{'s' * (n != 1)})"
        )
    return " | ".join(parts)


def holder_lines(layout: ArrayLayout, tiles: Sequence[Tile], cap: int = 16) -> list[str]:
    """One line per holder: ``d5 (data=1, model=1)``; after ``cap`` of them, ``… N more``."""
    out = [f"d{t.device_id} ({coord_label(layout.mesh, t.device_id)})" for t in tiles[:cap]]
    if len(tiles) > cap:
        out.append(f"… {len(tiles) - cap} more")
    return out
