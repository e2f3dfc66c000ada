"""The :class:`~.widget.ExplorerWidget`'s synced state as plain JSON, from the model.

Pure: no jax and no anywidget, so every byte the widget syncs can be built and checked without
a kernel or a browser. Two payloads:

- :func:`report_payload`: everything about one report except tiles, sent once per report
  (the mesh, device colours, the list of arrays, the ledger, per-device memory). Device groups
  and source locations are deduplicated into tables that entries point into, so a 512-device
  program with hundreds of collectives stays far below a megabyte.
- :func:`array_payload`: the distinct tiles of *one* array and where each goes on the page
  (the static view's own geometry), built when that array is picked, or ahead of time in
  batches (:func:`prefetch_batches`) for the front end to keep.

Arrays are named by an id that says where they come from: ``arg:<leaf path>``,
``out:<leaf path>`` or ``mid:<intermediate name>`` (see :func:`array_id`). Intermediates carry
a spec but no tiles; :func:`shardviz.model.tiles_from_spec` computes them the way a
``NamedSharding`` places an array (and the way GSPMD pads a dim that does not divide evenly).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from shardviz.analysis.op_profile import op_profile_of
from shardviz.analysis.traffic import traffic_of
from shardviz.model._codec import to_data
from shardviz.model.array import ArrayLayout, Spec, format_spec
from shardviz.model.compare import Comparison
from shardviz.model.estimate import Estimate
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import HOST_FROM_COMPILER, Collective, Report, ShardingOf, Source
from shardviz.model.roles import leaf_role, path_parts
from shardviz.model.tiles import layout_from_spec
from shardviz.model.timeline import timeline_of
from shardviz.model.units import format_bytes, format_mfu
from shardviz.model.why import why_axes, why_spec
from shardviz.render.colors import KIND_COLORS, OTHER_KIND, device_color
from shardviz.render.geometry import MeshGrid, array_facts, format_shape, mesh_grid, mesh_summary
from shardviz.render.grid_view import array_grid_view, mesh_grid_view, tiles_of
from shardviz.render.op_profile import op_profile_view
from shardviz.render.report.html import MEMORY_COLORS, group_fill
from shardviz.render.report.sections import (
    EstimateSection,
    cost_section,
    estimate_section,
    header_section,
    host_memory,
    ledger_section,
)
from shardviz.render.report.transfers import transfers_section
from shardviz.render.report.view import (
    ESTIMATE_WORDS,
    LedgerRow,
    axes_repr,
    groups_count_str,
    ids_str,
    no_source_words,
    short_location,
    shown_intermediates,
    target_line,
    value_str,
)
from shardviz.render.timeline import timeline_view
from shardviz.render.traffic import drawable_links

#: Bumped when the payload's shape changes, so the front end can refuse what it cannot read.
#: 2: ready-made text (bytes, seconds, operands, device labels, sources) beside the numbers.
#: 3: the mesh laid out (``mesh_grid``) as the static view lays it out; grids carry their notes
#: and each elided band its hover text.
#: 4: the array picker's groups (``picker``) and each array's short ``label``.
#: 5: host memory beside HBM (``memory.host``, only for programs that keep something on host);
#: the HBM bars then leave host-resident leaves out.
VERSION = 5

ARGUMENT, OUTPUT, INTERMEDIATE = "argument", "output", "intermediate"
ROLES = (ARGUMENT, OUTPUT, INTERMEDIATE)
PREFIXES = {ARGUMENT: "arg:", OUTPUT: "out:", INTERMEDIATE: "mid:"}

#: The stacked parts of a memory bar, bottom first.
MEMORY_PARTS = ("argument", "output", "temp")
#: The groups host (and, for host programs, HBM) bytes are counted in per device: an argument
#: leaf's role (:func:`~shardviz.model.roles.leaf_role`); outputs (less what is aliased to
#: arguments), temp and offloaded values are ``other``.
MEMORY_ROLES = ("params", "optimizer", "batch", "other")
#: Their colours in the host bars (and the swatches of the host legend).
ROLE_COLORS = {"params": "#8250df", "optimizer": "#bf8700", "batch": "#1b7c83", "other": "#8c959f"}
#: Host leaves named one by one in a device's hover text before ``… N more leaves``.
HOST_LEAVES_NAMED = 8
#: The target's HBM line joins the memory bars' scale when at most this many times the tallest.
HBM_SCALE = 4
#: Device groups named in a collective's legend before ``… N more groups``.
LEGEND_GROUPS = 16


# --------------------------------------------------------------------------------------------
# The arrays a report names


@dataclass(frozen=True)
class ArrayEntry:
    """One pickable array: an argument or output leaf (with tiles) or an intermediate."""

    id: str
    role: str
    name: str
    shape: tuple[int, ...]
    dtype: str
    spec: Spec | None
    layout: ArrayLayout | None = None
    value: ShardingOf | None = None


def array_id(role: str, name: str) -> str:
    """The id an array is picked by: ``arg:params/w1``, ``out:loss``, ``mid:dot.3``."""
    return PREFIXES[role] + name


def picked_intermediates(report: Report) -> list[ShardingOf]:
    """The intermediates the array picker offers: all of them, or past
    :data:`~shardviz.render.report.view.MAX_INTERMEDIATES`, the reshard points and the values
    a collective links to, as the report's own listing keeps them (a 6,000-value program
    otherwise sends megabytes nobody scrolls through)."""
    return [item[1] for item in shown_intermediates(report) if not isinstance(item, int)]


def array_entries(report: Report) -> tuple[ArrayEntry, ...]:
    """Every argument leaf and output leaf, then the intermediates of
    :func:`picked_intermediates`, in that order, with unique ids.

    A name repeated within one role (not expected, but not forbidden) gets ``#2``, ``#3``...
    """
    out: list[ArrayEntry] = []
    seen: set[str] = set()

    def unique(role: str, name: str) -> str:
        base = array_id(role, name)
        ident, k = base, 1
        while ident in seen:
            k += 1
            ident = f"{base}#{k}"
        seen.add(ident)
        return ident

    for role, tree in ((ARGUMENT, report.arguments), (OUTPUT, report.outputs)):
        for leaf in tree:
            ident = unique(role, leaf.name)
            out.append(ArrayEntry(ident, role, leaf.name, leaf.shape, leaf.dtype, leaf.spec, leaf))
    for s in picked_intermediates(report):
        ident = unique(INTERMEDIATE, s.name)
        out.append(ArrayEntry(ident, INTERMEDIATE, s.name, s.shape, s.dtype, s.spec, value=s))
    return tuple(out)


#: What the picker's groups of top-level leaves (no module path) are called, by role.
ROLE_TITLES = {ARGUMENT: "arguments", OUTPUT: "outputs", INTERMEDIATE: "intermediates"}


def module_path(entry: ArrayEntry) -> tuple[str, str]:
    """``(module path, leaf label)`` of an argument or output leaf: ``("state/params/layers/0",
    "wq")``; a top-level leaf's module path is ``""``. An intermediate is ``("", its name)``."""
    if entry.role == INTERMEDIATE:
        return "", entry.name
    parts = path_parts(entry.name)
    return "/".join(parts[:-1]), parts[-1]


def is_parameter(name: str) -> bool:
    """Whether a leaf path names a model parameter (as the spec controls read it,
    :func:`~shardviz.model.roles.leaf_role`): ``state/params/...`` is one,
    ``state/opt/0/mu/...`` and ``opt_state/0/mu/params/w`` are not."""
    return leaf_role(name) == "params"


def intermediates_title(listed: int, left_out: int) -> str:
    """The intermediates group's label: ``intermediates (12)``, or past the limit ``intermediates
    (336 listed: the reshard points; 5,978 more not listed)``."""
    if not left_out:
        return f"intermediates ({listed})"
    return f"intermediates ({listed} listed: the reshard points; {left_out:,} more not listed)"


def picker_groups(entries: Sequence[ArrayEntry], left_out: int = 0) -> list[dict[str, Any]]:
    """The array picker's groups, in the order it shows them: for arguments, then outputs, one
    group per module path (parameters' paths first, each kind in order of first appearance),
    then one group of every intermediate. A hundreds-of-leaves state then reads as a list of
    layers with short option labels.

    Each group: ``label`` (the module path; the role's title for top-level leaves or the
    intermediates, :func:`intermediates_title`), ``role``, ``params`` (whether its leaves are
    parameters) and ``arrays`` (positions in ``entries``).
    """
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for k, e in enumerate(entries):
        path = module_path(e)[0]
        key = (e.role, path)
        if key not in groups:
            label = path or ROLE_TITLES[e.role]
            param = e.role != INTERMEDIATE and is_parameter(e.name)
            groups[key] = {"label": label, "role": e.role, "params": param, "arrays": []}
        groups[key]["arrays"].append(k)
    ordered = sorted(
        groups.values(), key=lambda g: (ROLES.index(g["role"]), not g["params"])
    )  # a stable sort: first appearance within each kind
    for g in ordered:
        if g["role"] == INTERMEDIATE:
            g["label"] = intermediates_title(len(g["arrays"]), left_out)
    return ordered


def default_array(report: Report) -> str:
    """The array shown first: the first argument leaf, else the first array at all, else ``""``."""
    entries = array_entries(report)
    return entries[0].id if entries else ""


def entry_layout(entry: ArrayEntry, mesh: MeshLayout | None) -> ArrayLayout | None:
    """The tiles of an entry as an ArrayLayout: the leaf's own, or computed from the spec.

    ``None`` for an intermediate without a named spec (manual or unknown) or without a mesh.

    Raises:
        ValueError: from :func:`~shardviz.model.layout_from_spec` when the spec does not fit
            the mesh.
    """
    if entry.layout is not None:
        return entry.layout
    if entry.spec is None or mesh is None:
        return None
    return layout_from_spec(entry.name, entry.shape, entry.dtype, entry.spec, mesh)


# --------------------------------------------------------------------------------------------
# Report payload


class _Table:
    """Interns JSON-able values: each distinct value once, referred to by its position."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._index: dict[str, int] = {}

    def add(self, value: Any) -> int:
        key = json.dumps(value, separators=(",", ":"))
        if key not in self._index:
            self._index[key] = len(self.items)
            self.items.append(value)
        return self._index[key]


class _Sources:
    """Call chains as ``[[file, line, function], ...]`` (outermost first), each chain and each
    file path stored once: entries point at a chain, a frame's ``file`` at ``files``. Beside
    each chain, its words (:func:`source_label`) in ``labels``. A missing source is a chain
    of no frames whose words say why (so the Explorer's ``?`` explains itself)."""

    def __init__(self) -> None:
        self.files = _Table()
        self.chains: list[list[list[Any]]] = []
        self.labels: list[list[str]] = []
        self._index: dict[str, int] = {}

    def add(self, source: Source | None, what: str = "collective") -> int:
        frames = (
            [[self.files.add(f.file), f.line, f.function] for f in source.frames]
            if source is not None
            else []
        )
        label = source_label(source, what)
        key = json.dumps([frames, label], separators=(",", ":"))
        if key not in self._index:
            self._index[key] = len(self.chains)
            self.chains.append(frames)
            self.labels.append(label)
        return self._index[key]


def source_label(source: Source | None, what: str = "collective") -> list[str]:
    """``[location, short, chain]``: ``/src/train.py:42 · y = h @ w``, ``train.py:42 · y = h @
    w`` (the line's code after its place, when it was read), ``step > loss``; for no source,
    ``["no source: …", "?", "no source: …"]``."""
    if source is None or source.innermost is None:
        why = no_source_words(what)
        return [why, "?", why]
    line = f" · {source.text}" if source.text else ""
    return [source.location + line, short_location(source) + line, source.chain]


def _array_item(entry: ArrayEntry, sources: _Sources) -> dict[str, Any]:
    s = entry.value
    spec = [list(e) for e in entry.spec] if entry.spec is not None else None
    return {
        "id": entry.id,
        "role": entry.role,
        "name": entry.name,
        "label": module_path(entry)[1],
        "shape": list(entry.shape),
        "dtype": entry.dtype,
        "spec": spec,
        "spec_str": s.spec_str if s is not None else format_spec(entry.spec),
        "value": value_str(entry.dtype, entry.shape),
        "op": s.op if s is not None else "",
        "source": sources.add(s.source, "value") if s is not None else None,
        "reshard": bool(s.reshard) if s is not None else False,
    }


def _collective_item(
    index: int,
    row: LedgerRow,
    groupings: _Table,
    pairings: _Table,
    sources: _Sources,
    ids: set[str],
) -> dict[str, Any]:
    c = row.collective
    reshard = array_id(INTERMEDIATE, c.reshard) if c.reshard is not None else None
    return {
        "index": index,
        "name": c.name,
        "kind": c.kind,
        "axes": list(c.axes),
        "in_dtype": c.in_dtype,
        "in_shape": list(c.in_shape),
        "out_dtype": c.out_dtype,
        "out_shape": list(c.out_shape),
        "in_bytes": c.in_bytes,
        "out_bytes": c.out_bytes,
        "moved_bytes": c.moved_bytes,
        "group_size": c.group_size,
        "groups": groupings.add([list(g) for g in c.groups]) if c.groups else None,
        "groups_text": groups_count_str(c.groups),
        "pairs": pairings.add([list(p) for p in c.pairs]) if c.pairs else None,
        "source": sources.add(c.source),
        "user_written": c.user_written,
        "op_name": c.op_name,
        "reshard": c.reshard,
        "reshard_array": reshard if reshard in ids else None,
        "estimated_seconds": c.estimated_seconds,
        "estimate_formula": c.estimate_formula,
        **collective_text(row),
    }


def collective_text(row: LedgerRow) -> dict[str, Any]:
    """A ledger entry's words: its :class:`LedgerRow`'s, which the text and HTML ledgers print.

    Keys: ``axes_text`` (``('data',)``), ``operand`` (``float32[64, 1024] → [512, 1024]``),
    ``in_value`` and ``out_value`` (``float32[64, 1024]``), ``in_bytes_text`` and
    ``moved_bytes_text`` (``4 KiB``), ``in_bytes_exact``, ``out_bytes_exact`` and
    ``moved_bytes_exact`` (``4 KiB (4,096 B)``), ``runs_text`` (``x32`` in a loop, ``x?``
    for an unknown count, ``""`` once a step), ``estimated_text`` (``1.23 µs``, or ``None``
    without an estimate), ``why_text`` (why the partitioner inserted it, one sentence) and
    ``why_change`` (``P('data', None) → P(None, 'model')``, ``P('data', None) (partial sums
    over 'model') → P('data', None)``, specs and axes as the why texts write them), both
    ``None`` when unknown.
    """
    c = row.collective
    seconds = c.estimated_seconds
    why = c.why
    change = None
    if why is not None and why.from_spec is not None and why.to_spec is not None:
        partial = f" (partial sums over {why_axes(why.partial_axes)})" if why.partial_axes else ""
        change = f"{why_spec(why.from_spec)}{partial} → {why_spec(why.to_spec)}"
    return {
        "axes_text": axes_repr(c.axes),
        "operand": row.operand,
        "in_value": value_str(c.in_dtype, c.in_shape),
        "out_value": value_str(c.out_dtype, c.out_shape),
        "in_bytes_text": row.in_bytes,
        "moved_bytes_text": row.moved,
        "in_bytes_exact": format_bytes(c.in_bytes, exact=True),
        "out_bytes_exact": format_bytes(c.out_bytes, exact=True),
        "moved_bytes_exact": format_bytes(c.moved_bytes, exact=True),
        "estimated_text": row.estimate if seconds is not None else None,
        "runs_text": row.runs,
        "why_text": why.summary if why is not None else None,
        "why_change": change,
    }


def traffic_item(
    c: Collective, mesh: MeshLayout | None, grid: MeshGrid | None, links: _Table
) -> dict[str, Any]:
    """Who sends to whom in ``c`` (:func:`~shardviz.render.traffic.traffic_of`), for the mesh.

    Keys: ``pattern`` (``ring``, ``all-pairs``, ``pairs`` or ``none``), ``words`` (the
    sentence under the static picture), ``label`` (what one arrow carries, the same for every
    arrow of the collective under the ring model), ``step_bytes``, ``steps``, ``device_bytes``
    and ``links`` (a position in ``traffic_links``: per group, ``[source, target]`` device
    ids of the arrows the mesh ``grid`` can draw (:func:`~shardviz.render.traffic.
    drawable_links`); the same links are stored once for every collective that has them).
    ``drawn`` says how many of the ``arrows`` those are.
    """
    t = traffic_of(c, mesh)
    shown = drawable_links(t, grid) if grid is not None else ()
    return {
        "pattern": t.pattern,
        "words": t.words,
        "label": t.label,
        "step_bytes": t.step_bytes,
        "steps": t.steps,
        "device_bytes": t.device_bytes,
        "arrows": t.arrows,
        "drawn": sum(len(g) for g in shown),
        "links": links.add([[list(link) for link in group] for group in shown]),
    }


def memory_payload(report: Report) -> dict[str, Any]:
    """Per-device bytes by part: ``argument``, ``output`` (the part not aliased), ``temp``.

    Arguments and outputs are the bytes of the leaves each device holds in its own memory
    (when the report has leaves; else the compiler's figure); temp, alias and peak are the
    compiler's figures, the same on every device. Words: ``peak_text``, ``note``
    (:func:`memory_note`), and per device a position in ``labels`` (``label_of``; each
    distinct :func:`memory_label` once). ``same`` is ``"same on every device (8 devices)"``
    when every bar would be the same (the view then draws one bar, once), else ``""``.

    A program that keeps something in host memory (a leaf whose sharding has a host memory
    kind, an offloaded value, a host transfer) also gets ``host`` (:func:`host_payload`), and
    its bars count HBM only: host-resident leaves are left out of them. Without host memory
    there is no ``host`` key.
    """
    m = report.memory
    args, outs = report.arguments, report.outputs
    if report.mesh is not None:
        devices = list(report.mesh.device_ids)
    else:
        devices = sorted(set(args.device_ids) | set(outs.device_ids)) or [0]
    on_host = has_host_memory(report)
    if on_host:
        arg_per, out_per = args.hbm_bytes_per_device, outs.hbm_bytes_per_device
        alias = max(0, m.alias_bytes - m.host_alias_bytes)
    else:
        arg_per, out_per = args.bytes_per_device, outs.bytes_per_device
        alias = m.alias_bytes
    rows = []
    for d in devices:
        a = arg_per.get(d, 0) if len(args) else m.argument_bytes
        o = out_per.get(d, 0) if len(outs) else m.output_bytes
        rows.append([a, max(0, o - alias), m.temp_bytes])
    host = host_payload(report, devices, rows) if on_host else None
    labels = _Table()
    label_rows = [memory_label(row) for row in rows]
    if host is not None:
        for label, hbm in zip(label_rows, host["hbm_bytes"], strict=True):
            label[0] += "\nby role: " + role_words(hbm, exact=True)
    out = {
        "parts": list(MEMORY_PARTS),
        "colors": [MEMORY_COLORS[p] for p in MEMORY_PARTS],
        "devices": devices,
        "bytes": rows,
        "argument_bytes": m.argument_bytes,
        "output_bytes": m.output_bytes,
        "alias_bytes": m.alias_bytes,
        "temp_bytes": m.temp_bytes,
        "code_bytes": m.code_bytes,
        "peak_bytes": m.peak_bytes,
        "peak_definition": m.peak_definition,
        "from_leaves": [bool(len(args)), bool(len(outs))],
        "peak_text": format_bytes(m.peak_bytes),
        "note": memory_note(report),
        "label_of": [labels.add(label) for label in label_rows],
        "labels": labels.items,
        "same": same_words(rows),
    }
    if host is not None:
        out["host"] = host
        both = [[*row, *h] for row, h in zip(rows, host["bytes"], strict=True)]
        out["same"] = same_words(both)
    return out


def has_host_memory(report: Report) -> bool:
    """Whether the program keeps anything in host memory or moves anything to or from it."""
    return bool(report.memory.host_source or report.host_transfers)


def leaf_group(name: str) -> str:
    """The :data:`MEMORY_ROLES` group of an argument leaf: its :func:`leaf_role`."""
    role = leaf_role(name)
    return role if role in MEMORY_ROLES else "other"


def role_words(row: Sequence[int], exact: bool = False) -> str:
    """``params 8 KiB · optimizer 0 B · batch 0 B · other 0 B``: bytes per role, in order."""
    return " · ".join(
        f"{role} {format_bytes(n, exact=exact)}" for role, n in zip(MEMORY_ROLES, row, strict=True)
    )


def host_payload(
    report: Report, devices: Sequence[int], hbm_rows: Sequence[Sequence[int]]
) -> dict[str, Any]:
    """Host memory beside HBM, per device, for :func:`memory_payload`'s ``host``.

    Per device (in ``devices`` order): ``bytes`` (host bytes by :data:`MEMORY_ROLES`:
    argument leaves kept on host by their role; host outputs less the host alias, host temp
    and offloaded values as ``other``), ``hbm_bytes`` (the HBM bars' bytes by the same roles:
    argument leaves in HBM by role, outputs not aliased and temp as ``other``, so each sums to
    the device's bar) and ``totals`` (the sum of ``bytes``). Leaves' figures come from the
    leaves each device holds, the rest from the report's memory figures.

    Words: ``text`` (``16 KiB in HBM · 8 KiB in host memory per device``: the HBM peak and
    :attr:`~shardviz.model.MemoryReport.host_bytes`), ``line`` (the static views'
    host line) and ``heading`` (the host bars' title: ``Host memory per device (not HBM): 8 KiB
    (8,192 B): argument 8 KiB``), ``source`` (whose figures: the compiler's, or shardviz's accounting from the
    shardings on CPU; ``from_compiler`` says which), ``mismatch`` (``""`` when the leaves and
    the compiler agree), ``leaves`` (``[path, group, memory kind, bytes text, exact]`` of
    each input or output leaf on host, the largest over devices; an output's group is
    ``other``), per device a position in ``labels`` (``label_of``; ``[hover, readout]``:
    exact bytes by role then by leaf, and the one-line readout), ``scale`` (``bytes`` and
    ``text``: the tallest host bar), ``roles`` and ``colors``, and ``transfers``
    (:func:`host_transfers_payload`, ``None`` without any).
    """
    m = report.memory
    args, outs = report.arguments, report.outputs
    other = MEMORY_ROLES.index("other")
    host_leaves = [(leaf, leaf_group(leaf.name)) for leaf in args if leaf.on_host]
    host_leaves += [(leaf, "other") for leaf in outs if leaf.on_host]
    per_leaf = [leaf.bytes_per_device for leaf, _ in host_leaves]
    hbm_roles: dict[int, list[int]] = {d: [0] * len(MEMORY_ROLES) for d in devices}
    for leaf in args:
        if leaf.on_host:
            continue
        at = MEMORY_ROLES.index(leaf_group(leaf.name))
        for t in leaf.tiles:
            if t.device_id in hbm_roles:
                hbm_roles[t.device_id][at] += t.nbytes
    hbm_bytes, host_bytes = [], []
    for d, row in zip(devices, hbm_rows, strict=True):
        hbm = hbm_roles[d] if len(args) else [0] * len(MEMORY_ROLES)
        hbm[other] += row[1] + row[2] + (0 if len(args) else row[0])
        hbm_bytes.append(hbm)
        h = [0] * len(MEMORY_ROLES)
        for (_, group), held in zip(host_leaves, per_leaf, strict=True):
            h[MEMORY_ROLES.index(group)] += held.get(d, 0)
        if not len(args):
            h[other] += m.host_argument_bytes
        if not len(outs):
            h[other] += m.host_output_bytes
        extra = m.host_temp_bytes + m.offloaded_bytes - m.host_alias_bytes
        h[other] = max(0, h[other] + extra)
        host_bytes.append(h)
    labels = _Table()
    label_of = []
    for d, h in enumerate(host_bytes):
        named = [
            (leaf.name, held.get(devices[d], 0))
            for (leaf, _), held in zip(host_leaves, per_leaf, strict=True)
            if held.get(devices[d], 0)
        ]
        label_of.append(labels.add(host_label(h, named)))
    tallest = max([1, *(sum(h) for h in host_bytes)])
    section = host_memory(m)
    hbm_text = format_bytes(m.peak_bytes)
    return {
        "roles": list(MEMORY_ROLES),
        "colors": [ROLE_COLORS[r] for r in MEMORY_ROLES],
        "bytes": host_bytes,
        "hbm_bytes": hbm_bytes,
        "totals": [sum(h) for h in host_bytes],
        "total": m.host_bytes,
        "total_text": format_bytes(m.host_bytes),
        "total_exact": format_bytes(m.host_bytes, exact=True),
        "text": f"{hbm_text} in HBM · {format_bytes(m.host_bytes)} in host memory per device",
        "line": section.line if section is not None else "",
        "heading": "Host memory per device (not HBM): "
        + (section.line.removeprefix("host memory per device ") if section is not None else "0 B"),
        "source": section.source if section is not None else "",
        "from_compiler": m.host_source == HOST_FROM_COMPILER,
        "mismatch": m.host_mismatch,
        "leaves": [
            [
                x.path,
                leaf_group(x.path) if k < len(m.by_leaf) else "other",
                x.memory_kind,
                format_bytes(x.bytes),
                format_bytes(x.bytes, exact=True),
            ]
            for k, x in enumerate((*m.by_leaf, *m.out_leaves))
            if x.on_host
        ],
        "label_of": label_of,
        "labels": labels.items,
        "scale": {"bytes": tallest, "text": format_bytes(tallest)},
        "transfers": host_transfers_payload(report),
    }


def host_label(row: Sequence[int], leaves: Sequence[tuple[str, int]]) -> list[str]:
    """One device's host bar in words, after ``d<id>: ``: ``[hover text, readout]``.

    The hover text: ``host memory`` and the total, exact, then one line per role and one per
    host leaf the device holds (the first :data:`HOST_LEAVES_NAMED`, then ``… N more
    leaves``); the readout: ``host 8 KiB: optimizer 8 KiB`` (the roles above 0).
    """
    total = sum(row)
    hover = [f"host memory {format_bytes(total, exact=True)} (not HBM)"]
    hover += [
        f"{role} {format_bytes(n, exact=True)}" for role, n in zip(MEMORY_ROLES, row, strict=True)
    ]
    hover += [f"{name}: {format_bytes(n, exact=True)}" for name, n in leaves[:HOST_LEAVES_NAMED]]
    rest = leaves[HOST_LEAVES_NAMED:]
    if rest:
        hover.append(f"… {len(rest)} more leaves, {format_bytes(sum(n for _, n in rest))}")
    parts = [f"{role} {format_bytes(n)}" for role, n in zip(MEMORY_ROLES, row, strict=True) if n]
    readout = f"host {format_bytes(total)}" + (f": {', '.join(parts)}" if parts else "")
    return ["\n".join(hover), readout]


def host_transfers_payload(report: Report) -> dict[str, Any] | None:
    """The host transfers per device per step (:func:`~shardviz.render.report.transfers.
    transfers_section`), or ``None`` for a program that moves nothing to or from host.

    Keys: ``to_host_bytes``, ``to_device_bytes``, ``count``, ``text`` (``host transfers per
    device per step: 4 MiB to host · 4 MiB to device (6 transfers)``), ``note`` and ``rows``
    (``[name, for, direction, per step text, exact bytes per step, line]``).
    """
    v = transfers_section(report)
    if v is None:
        return None
    return {
        "to_host_bytes": v.to_host_bytes,
        "to_device_bytes": v.to_device_bytes,
        "count": len(v.rows),
        "text": (
            f"host transfers per device per step: {v.to_host} to host · {v.to_device} to "
            f"device ({len(v.rows)} transfer{'s' if len(v.rows) != 1 else ''})"
        ),
        "note": v.note,
        "rows": [
            [r.name, r.role, r.direction, r.per_step, format_bytes(r.bytes, exact=True), r.where]
            for r in v.rows
        ],
    }


def same_words(rows: Sequence[Sequence[int]]) -> str:
    """``same on every device (8 devices)`` when several devices' bars are identical, else ""."""
    if len(rows) < 2 or any(list(r) != list(rows[0]) for r in rows):
        return ""
    return f"same on every device ({len(rows)} devices)"


def memory_label(row: Sequence[int]) -> list[str]:
    """One device's bar in words, after ``d<id>: ``: ``[hover text, readout]``.

    The hover text is the total, then one line per part, exact (``1 KiB (1,024 B)``); the
    readout one line: ``argument 1 KiB · output 0 B · temp 2 KiB · total 3 KiB``.
    """
    parts = list(zip(MEMORY_PARTS, row, strict=True))
    total = sum(row)
    hover = [format_bytes(total, exact=True)]
    hover += [f"{part} {format_bytes(n, exact=True)}" for part, n in parts]
    line = [f"{part} {format_bytes(n)}" for part, n in parts] + [f"total {format_bytes(total)}"]
    return ["\n".join(hover), " · ".join(line)]


def memory_note(report: Report) -> str:
    """What the bars count: where the argument figures come from, and any aliased output."""
    m = report.memory
    notes = []
    if m.alias_bytes:
        notes.append(
            f"output shown without the {format_bytes(m.alias_bytes)} aliased to arguments "
            "(written in place)"
        )
    held = " in HBM (host memory drawn apart)" if has_host_memory(report) else ""
    args = (
        f"arguments from the leaves each device holds{held}"
        if len(report.arguments)
        else "arguments: the compiler's figure"
    )
    notes.append(f"{args}; temp is the compiler's figure, the same on every device")
    return " · ".join(notes)


def memory_scale(memory: dict[str, Any], estimate: dict[str, Any] | None) -> dict[str, Any]:
    """The bytes at the top of the memory bars: the tallest bar or the peak, or the target's
    HBM when it is near them (at most :data:`HBM_SCALE` times the tallest), as in the
    comparison's charts.

    Keys: ``bytes``, ``text`` (the tick label) and ``hbm_on_scale``.
    """
    tallest = max([1, memory["peak_bytes"], *(sum(row) for row in memory["bytes"])])
    hbm = (estimate or {}).get("hbm_bytes") or 0
    on_scale = 0 < hbm <= HBM_SCALE * tallest
    top = max(tallest, hbm) if on_scale else tallest
    return {"bytes": top, "text": format_bytes(top), "hbm_on_scale": on_scale}


def estimate_payload(report: Report) -> dict[str, Any] | None:
    """The report's estimate on its target, or ``None`` without one.

    Keys: ``target`` (the target's label), ``target_name`` (``v5e:2x4``), ``words`` (what an
    estimate is: a lower bound, not a measurement), ``target_line`` (what the figures describe,
    e.g. "estimated as if this mesh were …", or ``None``), the :class:`Estimate`'s figures
    (``compute_seconds``, ``memory_seconds``, ``collective_seconds``, ``step_seconds``,
    ``bound``, ``mfu``, ``hfu``, ``lower_bound`` (where loops of unknown count are),
    ``uncounted`` (a sentence per kernel not counted: then ``not_a_bound`` says the step and
    MFU are no bound, and ``words`` says so too),
    ``predicted_seconds`` and ``predicted_exposed_seconds`` (the step as the schedule runs it),
    ``hbm_bytes``, ``peak_bytes``, ``hbm_headroom_bytes``, ``fits``, ``fit_text``,
    ``hbm_text``), ``rows`` (``[key, name, value, meaning]`` as the static views
    print them) and ``notes`` (``[kind, text]``: the placement, then the estimate's notes).
    """
    e = report.estimate
    section = estimate_section(report)
    if e is None or section is None:
        return None
    t = report.target
    return {
        "target": e.target,
        "target_name": t.name if t is not None else "",
        "words": section.words or ESTIMATE_WORDS,
        "target_line": target_line(report),
        "compute_seconds": e.compute_seconds,
        "memory_seconds": e.memory_seconds,
        "collective_seconds": e.collective_seconds,
        "step_seconds": e.step_seconds,
        "bound": e.bound,
        "mfu": e.mfu,
        "hfu": e.hfu,
        "lower_bound": list(e.lower_bound),
        "uncounted": list(e.uncounted),
        "overcounted": list(e.overcounted),
        "not_a_bound": e.not_a_bound,
        "predicted_seconds": e.predicted_seconds,
        "predicted_exposed_seconds": e.predicted_exposed_seconds,
        "hbm_bytes": e.hbm_bytes,
        "peak_bytes": e.peak_bytes,
        "hbm_headroom_bytes": e.hbm_headroom_bytes,
        "fits": e.fits,
        "fit_text": e.fit_text,
        "hbm_text": section.hbm_text,
        "rows": [[r.key, r.name, r.value, r.meaning] for r in section.rows],
        "notes": [list(n) for n in section.notes],
        **estimate_text(e, section),
    }


def estimate_text(e: Estimate, section: EstimateSection) -> dict[str, str]:
    """The estimate's words for the Explorer's header and memory pane.

    Keys: ``headline`` (``step ≥ 1.23 ms on <target> (compute-bound, MFU ≤ 42%) · <fit>``;
    without the signs, and ``· not a bound: 1 kernel not counted``, where a kernel was not),
    ``tooltip`` (the estimate's rows, then its notes, one per line), ``hbm_bytes_text`` and
    ``hbm_bytes_exact``.
    """
    at_least, at_most = ("≥ ", "≤ ") if e.bounded else ("", "")
    mfu = f", MFU {at_most}{format_mfu(e.mfu)}" if e.mfu is not None else ""
    missing = f" · not a bound: {e.why_not_a_bound}" if not e.bounded else ""
    rows = [f"{r.name} {r.value}" + (f": {r.meaning}" if r.meaning else "") for r in section.rows]
    notes = [f"{kind}: {text}" for kind, text in section.notes]
    return {
        "headline": (
            f"step {at_least}{section.step} on {e.target} ({e.bound}-bound{mfu}) · "
            f"{e.fit_text}{missing}"
        ),
        "tooltip": "\n".join(rows + notes),
        "hbm_bytes_text": section.hbm,
        "hbm_bytes_exact": format_bytes(e.hbm_bytes, exact=True),
    }


def kernels_payload(report: Report) -> dict[str, Any] | None:
    """The program's kernels as the cost section words them, or ``None`` when it has none.

    Keys: ``heading`` (``kernels per device per step (1 not counted: …)``), ``rows``
    (``[name, how, counted, flops, meaning]`` per kernel, in the cost's order), ``uncounted``
    (one sentence naming each kernel not counted, ``""`` when none is) and ``notice`` (what
    the header says: the estimate's ``not a bound: …`` when there is an estimate, else
    ``uncounted``; ``""`` when every kernel was counted) and ``tooltip`` (the heading, then
    ``name: flops · meaning`` per kernel, one per line).
    """
    section = cost_section(report)
    if not section.kernels:
        return None
    e = report.estimate
    return {
        "heading": section.kernels_heading,
        "rows": [[k.name, k.how, k.counted, k.flops, k.meaning] for k in section.kernels],
        "uncounted": section.uncounted,
        "notice": e.not_a_bound if e is not None and e.not_a_bound else section.uncounted,
        "tooltip": "\n".join(
            [section.kernels_heading]
            + [f"{k.name}: {k.flops} · {k.meaning}" for k in section.kernels]
        ),
    }


def timeline_payload(report: Report) -> dict[str, Any] | None:
    """The timeline pane's data, or None when the report was not profiled: the JSON of the
    :class:`~shardviz.render.timeline.TimelineView` the report's text and HTML print, so the
    front end only draws it (each bar ``[x, width, kind position, tooltip]``, each tick
    ``[x, text]``)."""
    t = timeline_of(report)
    return to_data(timeline_view(t)) if t is not None else None


def op_profile_payload(report: Report) -> dict[str, Any] | None:
    """The op profile pane's cells (:func:`~shardviz.render.op_profile.op_profile_view`, as
    ``print(sv.op_profile(report))`` shows them: ``headline``, ``columns``, ``modules``,
    ``layers``, ``op_columns``, ``ops``, ``notes``), or None without the compiled schedule."""
    if report.cost is None or not report.cost.ops:
        return None
    return op_profile_view(op_profile_of(report, report.target)).to_data()


def report_payload(report: Report) -> dict[str, Any]:
    """Everything the Explorer draws of one report, except tiles (see :func:`array_payload`).

    Keys: ``version``, ``function``, ``platform``, ``status_line``, ``ran``, ``notes``,
    ``mesh`` (``MeshLayout`` data or ``None``), ``mesh_grid`` (the mesh laid out,
    :class:`~shardviz.render.grid_view.MeshGridView`, or ``None``), ``mesh_summary``,
    ``colors`` (device id -> colour), ``arrays`` (one item per :func:`array_entries` entry,
    ``label`` its option's short name, :func:`module_path`; ``arrays_left_out`` counts the
    intermediates the picker leaves out), ``picker`` (the picker's groups in order,
    :func:`picker_groups`), ``collectives`` (the ledger
    in order, with its words from :func:`collective_text`; ``groups``/``pairs``/``source``
    are positions in ``groupings``/``pairings``/``sources``; ``groups_text`` counts the
    groups in words, :func:`groups_count_str`), ``sources`` (call chains,
    outermost frame first, each frame ``[file, line, function]`` with ``file`` a position in
    ``files``), ``source_labels`` (per chain, :func:`source_label`), ``files``,
    ``traffic_links`` (per collective's ``traffic``, :func:`traffic_item`),
    ``group_labels`` (per grouping, its first :data:`LEGEND_GROUPS` groups' device ids in
    words), ``group_colors``, ``kind_colors``, ``memory`` (:func:`memory_payload`, with
    ``scale`` from :func:`memory_scale`) and ``estimate`` (:func:`estimate_payload`, ``None``
    without a target; each collective then carries its ``estimated_seconds`` and
    ``estimate_formula``), ``kernels`` (:func:`kernels_payload`, ``None`` without kernels)
    ``timeline`` (:func:`timeline_payload`,
    ``None`` without a profile) and ``op_profile`` (:func:`op_profile_payload`). An array's ``source`` points into ``sources`` too.

    The words are spelled here, by the static views' own helpers, so the front end derives
    none of them and the live widget reads as the saved HTML does.
    """
    sources, groupings, pairings = _Sources(), _Table(), _Table()
    entries = array_entries(report)
    ids = {e.id for e in entries}
    arrays = [_array_item(e, sources) for e in entries]
    left_out = len(report.intermediates) - sum(1 for e in entries if e.role == INTERMEDIATE)
    collectives = [
        _collective_item(i, row, groupings, pairings, sources, ids)
        for i, row in enumerate(ledger_section(report).rows)
    ]
    most = max((len(g) for g in groupings.items), default=0)
    mesh = report.mesh
    links = _Table()
    grid = mesh_grid(report.mesh) if report.mesh is not None else None
    for item, c in zip(collectives, report.collectives, strict=True):
        item["traffic"] = traffic_item(c, report.mesh, grid, links)
    memory = memory_payload(report)
    estimate = estimate_payload(report)
    memory["scale"] = memory_scale(memory, estimate)
    device_ids = mesh.device_ids if mesh is not None else memory["devices"]
    return {
        "version": VERSION,
        "function": report.function,
        "platform": report.platform,
        "status_line": header_section(report).status,
        "ran": report.ran,
        "notes": list(report.notes),
        "mesh": to_data(mesh) if mesh is not None else None,
        "mesh_grid": to_data(mesh_grid_view(mesh, grid)) if mesh is not None else None,
        "mesh_summary": mesh_summary(mesh) if mesh is not None else "no mesh (one device)",
        "colors": {str(d): device_color(d) for d in device_ids},
        "arrays": arrays,
        "arrays_left_out": left_out,
        "picker": picker_groups(entries, left_out),
        "collectives": collectives,
        "groupings": groupings.items,
        "pairings": pairings.items,
        "traffic_links": links.items,
        "sources": sources.chains,
        "source_labels": sources.labels,
        "files": sources.files.items,
        "group_labels": [[ids_str(g) for g in gs[:LEGEND_GROUPS]] for gs in groupings.items],
        "group_colors": [group_fill(i) for i in range(most)],
        "kind_colors": {k: list(v) for k, v in KIND_COLORS.items()} | {"": list(OTHER_KIND)},
        "memory": memory,
        "estimate": estimate,
        "kernels": kernels_payload(report),
        "timeline": timeline_payload(report),
        "op_profile": op_profile_payload(report),
    }


# --------------------------------------------------------------------------------------------
# Array payload: one array's tiles and their places on the page


def find_entry(report: Report, ident: str) -> ArrayEntry:
    """The entry with this id.

    Raises:
        KeyError: no array of the report has this id.
    """
    for e in array_entries(report):
        if e.id == ident:
            return e
    raise KeyError(ident)


def array_payload(report: Report, ident: str) -> dict[str, Any] | None:
    """The tiles of one array and their layout, or ``None`` for ``ident == ""``.

    Keys: ``id``, ``role``, ``name``, ``shape``, ``dtype``, ``spec``, ``spec_str``, ``value``,
    ``message`` (why there are no tiles, else ``None``), ``facts`` (kind, tiles and bytes in
    words, and the shard shape as ``shard_text``), ``tiles`` and ``shards``
    (:func:`~shardviz.render.grid_view.tiles_of`) and ``grid``
    (:class:`~shardviz.render.grid_view.ArrayGridView`), the JSON of the views the static
    HTML prints.

    Raises:
        KeyError: no array of the report has this id.
    """
    if not ident:
        return None
    return entry_payload(report, find_entry(report, ident))


def entry_payload(report: Report, entry: ArrayEntry) -> dict[str, Any]:
    """:func:`array_payload` of an entry already looked up (no search through the report)."""
    out: dict[str, Any] = {
        "id": entry.id,
        "role": entry.role,
        "name": entry.name,
        "shape": list(entry.shape),
        "dtype": entry.dtype,
        "spec": [list(e) for e in entry.spec] if entry.spec is not None else None,
        "spec_str": entry.value.spec_str if entry.value is not None else format_spec(entry.spec),
        "value": value_str(entry.dtype, entry.shape),
        "message": None,
        "facts": None,
        "tiles": [],
        "shards": [],
        "grid": None,
    }
    try:
        layout = entry_layout(entry, report.mesh)
    except ValueError as err:
        out["message"] = f"cannot place this value: {err}"
        return out
    if layout is None:
        hlo = entry.value.hlo_sharding if entry.value is not None else ""
        out["message"] = (
            "no named sharding (manual or unknown to the mesh), so no tiles to draw"
            + (f"; the compiler's sharding is {hlo}" if hlo else "")
        )
        return out
    facts = array_facts(layout)
    out["facts"] = {
        "kind": facts.kind,
        "shard_shape": list(facts.shard_shape),
        "shard_text": format_shape(facts.shard_shape),
        "tiles": facts.tiles_str,
        "bytes": facts.bytes_str,
        "computed": entry.role == INTERMEDIATE,
    }
    tiles, shards = tiles_of(layout)
    out["tiles"], out["shards"] = to_data(tiles), list(shards)
    out["grid"] = to_data(array_grid_view(layout))
    return out


# --------------------------------------------------------------------------------------------
# Comparisons and JSON text


def strategies_payload(comparison: Comparison) -> list[dict[str, str]]:
    """One ``{"id", "title", "description", "mesh", "target"}`` per result, for the selector.

    ``id`` is the comparison's label for it (the strategy, or ``fsdp @ TPU v5e 2x4`` when the
    results span several targets), ``target`` its target's label (``""`` without one).
    """
    return [
        {
            "id": comparison.label(r),
            "title": r.title,
            "description": r.description,
            "mesh": mesh_summary(r.mesh),
            "target": r.target.label if r.target is not None else "",
        }
        for r in comparison.results
    ]


#: Characters written as JSON escapes, so the text is inert wherever a page embeds it (e.g. a
#: saved notebook's widget state inside a ``<script>`` element). ``JSON.parse`` reads them back.
#: (``str.replace`` per character, not ``str.translate``: 40x faster on a 40 KB payload.)
_INERT = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"))


def dumps(payload: Any) -> str:
    """Compact JSON text ("" for ``None``), what the widget syncs; ``<``, ``>``, ``&`` escaped."""
    if payload is None:
        return ""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    for char, escape in _INERT:
        text = text.replace(char, escape)
    return text


def report_json(report: Report) -> str:
    """:func:`report_payload` as JSON text."""
    return dumps(report_payload(report))


def array_json(report: Report, ident: str) -> str:
    """:func:`array_payload` as JSON text (``""`` for no array)."""
    return dumps(array_payload(report, ident))


def prefetch_batches(
    report: Report, skip: str, budget: int, batch_bytes: int
) -> Iterator[list[tuple[str, str]]]:
    """The arrays to send ahead of any pick: ``(id, JSON text)`` pairs in batches.

    Order: :func:`array_entries`' (argument leaves, output leaves, then intermediates in
    program order), without ``skip`` (the array already synced). Each text is exactly
    :func:`array_json` of its id. A batch holds arrays until the next would take it over
    ``batch_bytes`` (one array at least); the arrays end before the one that would take their
    total over ``budget``. Sizes are bytes of UTF-8 JSON text. Lazy: each array is built when
    its batch is asked for, so a consumer that stops early builds no more.
    """
    batch: list[tuple[str, str]] = []
    size = total = 0
    for entry in array_entries(report):
        if entry.id == skip:
            continue
        text = dumps(entry_payload(report, entry))
        n = len(text.encode())
        if total + n > budget:
            break
        total += n
        if batch and size + n > batch_bytes:
            yield batch
            batch, size = [], 0
        batch.append((entry.id, text))
        size += n
    if batch:
        yield batch
