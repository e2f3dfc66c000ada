"""The collectives of a compiled per-device HLO program -> :class:`~shardviz.model.Collective`.

Rules (see :func:`collectives_of_hlo` for the details):

- kinds: ``all-gather``, ``all-reduce``, ``reduce-scatter``, ``all-to-all``,
  ``collective-permute``, in every computation of the module (the entry, fusions, while
  bodies, conditionals, async wrappers). Each instruction is counted once, where it is written:
  a collective inside a while body is one entry however many times the loop runs (the trip
  count is not in the text in general);
- async pairs count once: ``all-gather-start``/``-done``, ``all-reduce-start``/``-done``,
  ``collective-permute-start``/``-done``, the sugared ``reduce-scatter-start``/``all-to-all-start``
  and the generic ``async-start``/``async-done`` wrapping a collective (``calls=``). Shapes in
  come from the start's operands, shapes out from the done's result;
- a tuple-shaped combined collective (``(f32[a], f32[b]) all-reduce(%x, %y)``) is split into one
  entry per operand, named ``all-reduce.3#0``, ``#1``..., with ``combined=(i, n)``; a tuple
  all-to-all (one operand per peer, as CPU prints it) stays one entry whose shapes stack the
  operands (``n`` x operand shape);
- bytes are per device; ``moved_bytes`` is the ring model of the ``Collective`` docstring.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from shardviz.capture.hlo.groups import (
    Groups,
    axes_of_groups,
    axes_of_pairs,
    expand_replica_groups,
    to_device_ids,
)
from shardviz.capture.hlo.loops import computation_runs, loops_of
from shardviz.capture.hlo.sharding import parse_hlo_sharding
from shardviz.capture.hlo.text import (
    ArrayShape,
    HloInstruction,
    HloModule,
    HloParseError,
    Shape,
    array_leaves,
    parse_hlo_module,
    parse_int_list,
    parse_int_lists,
    tuple_element,
)
from shardviz.model import Collective, MeshLayout, ShardingOf, Source

__all__ = [
    "USER_COLLECTIVE_PRIMITIVES",
    "collective_parts",
    "done_of",
    "collective_trip_counts",
    "collectives_of_hlo",
    "is_user_written",
    "link_reshards",
    "moved_bytes",
    "with_partitioned",
]

_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_SPLIT_KINDS = {"all-gather", "all-reduce", "reduce-scatter", "collective-permute"}

#: jax primitives a user writes inside ``shard_map`` (their names end the HLO ``op_name``).
USER_COLLECTIVE_PRIMITIVES = frozenset(
    {
        "psum",
        "psum_invariant",
        "unreduced_psum",
        "pmax",
        "pmin",
        "pmean",
        "ppermute",
        "pshuffle",
        "pswapaxes",
        "pbroadcast",
        "all_to_all",
        "ragged_all_to_all",
        "all_gather",
        "all_gather_invariant",
        "all_gather_reduced",
        "reduce_scatter",
        "unreduced_reduce_scatter",
        "psum_scatter",
    }
)


def is_user_written(op_name: str) -> bool:
    """Whether an HLO ``op_name`` names a collective the user wrote (in ``jax.shard_map``).

    jax names an instruction after the primitive that produced it, innermost scope last:
    ``jit(f)/shard_map/psum_invariant`` for ``psum``, ``.../ppermute``, ``.../all_to_all``,
    ``.../all_gather``, ``.../reduce_scatter`` for ``psum_scatter`` (``..._start`` for the async
    variants). A collective the partitioner inserts carries the ``op_name`` of the op that
    needed it (``.../dot_general``, ``.../reduce_sum``, ``.../shard_map`` for a reshard at the
    ``shard_map`` boundary), or none. So: user-written iff the last path component of the
    ``op_name`` (of any of its ``;``-joined names), with transforms such as
    ``transpose(...)`` peeled off and a ``_start``/``_done`` suffix dropped, is one of
    :data:`USER_COLLECTIVE_PRIMITIVES`.
    """
    for name in op_name.split(";"):
        last = name.strip().rsplit("/", 1)[-1]
        words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", last)
        if not words:
            continue
        word = re.sub(r"_(start|done)$", "", words[-1])
        if word in USER_COLLECTIVE_PRIMITIVES:
            return True
    return False


def moved_bytes(
    kind: str,
    in_bytes: int,
    out_bytes: int,
    group_size: int,
    pairs: Sequence[tuple[int, int]] = (),
) -> int:
    """Bytes one device sends under the ring model, rounded down.

    With ``n`` devices per group: all-gather ``out * (n-1)/n``, reduce-scatter
    ``in * (n-1)/n``, all-reduce ``2 * in * (n-1)/n``, all-to-all ``in * (n-1)/n``,
    collective-permute ``in`` for a device that sends (0 when no pair leaves its device).
    """
    n = max(1, group_size)
    if kind == "all-gather":
        return out_bytes * (n - 1) // n
    if kind == "reduce-scatter":
        return in_bytes * (n - 1) // n
    if kind == "all-reduce":
        return 2 * in_bytes * (n - 1) // n
    if kind == "all-to-all":
        return in_bytes * (n - 1) // n
    if kind == "collective-permute":
        return in_bytes if any(s != t for s, t in pairs) else 0
    raise ValueError(f"unknown collective kind {kind!r}")


def _pairs_groups(pairs: Sequence[tuple[int, int]]) -> Groups:
    """The devices a collective-permute connects, as the connected parts of its pair graph
    (each walked from its smallest id along the pairs)."""
    adj: dict[int, set[int]] = {}
    for s, t in pairs:
        adj.setdefault(s, set()).add(t)
        adj.setdefault(t, set()).add(s)
    seen: set[int] = set()
    groups = []
    for start in sorted(adj):
        if start in seen:
            continue
        order, stack = [], [start]
        while stack:
            d = stack.pop()
            if d in seen:
                continue
            seen.add(d)
            order.append(d)
            stack.extend(sorted(adj[d] - seen, reverse=True))
        groups.append(tuple(order))
    return tuple(groups)


def _stack(shapes: Sequence[ArrayShape]) -> tuple[str, tuple[int, ...], int]:
    """dtype, shape and bytes of several arrays seen as one (stacked if alike)."""
    if not shapes:
        return "", (), 0
    nbytes = sum(s.nbytes for s in shapes)
    if len(shapes) == 1:
        return shapes[0].dtype, shapes[0].dims, nbytes
    if all(s == shapes[0] for s in shapes):
        return shapes[0].dtype, (len(shapes), *shapes[0].dims), nbytes
    return shapes[0].dtype, (sum(s.size for s in shapes),), nbytes


def done_of(module: HloModule, start: HloInstruction) -> HloInstruction | None:
    """Follow an async ``start`` (a collective's, a copy's, a generic ``async-start``)
    through any ``async-update`` to its ``-done``."""
    current = start.name
    for _ in range(16):
        nxt = None
        for user in module.users(current):
            if user.opcode.endswith("-done") or user.opcode in ("async-update", "async-done"):
                nxt = user
                break
        if nxt is None:
            return None
        if nxt.opcode != "async-update":
            return nxt
        current = nxt.name
    return None


def _wrapped_collective(module: HloModule, start: HloInstruction) -> HloInstruction | None:
    """The collective inside a generic ``async-start``'s called computation."""
    for cname in start.called_computations:
        comp = module.computation(cname)
        if comp is None:
            continue
        for ins in comp.instructions:
            if ins.opcode in _KINDS:
                return ins
    return None


def _out_arrays(kind: str, start: HloInstruction, done: HloInstruction | None) -> list[ArrayShape]:
    """The result arrays of an async collective: the done's result; without a done, the
    start's own result (all-reduce-start) or its second element (``(operands, results, ...)``)."""
    if done is not None:
        return list(array_leaves(done.shape))
    shape: Shape = start.shape
    if kind != "all-reduce" and isinstance(shape, tuple) and len(shape) >= 2:
        # (operands, results[, context...]): the results are the second element.
        return list(array_leaves(shape[1]))
    return list(array_leaves(shape))


def _callers(module: HloModule) -> dict[str, HloInstruction]:
    """Computation name -> the (first) instruction that calls it."""
    return {name: calls[0] for name, calls in module.callers().items()}


def _fused_slice(
    module: HloModule, callers: dict[str, HloInstruction], ins: HloInstruction
) -> HloInstruction | None:
    """For an all-reduce whose fusion keeps only each device's slice of the result (the TPU
    compiler's ``all-reduce-scatter`` fusion: a reduce-scatter), that fusion."""
    comp = module.computation(ins.computation)
    caller = callers.get(ins.computation)
    if comp is None or caller is None or caller.opcode != "fusion":
        return None
    root = comp.root
    if root is None or root.opcode != "dynamic-slice" or root.operands[:1] != (ins.name,):
        return None
    return caller


_CHAIN_ID = re.compile(r'chain_id="([^"]*)"')


def _async_copy_key(ins: HloInstruction) -> tuple[str, str, str] | None:
    """What the copies of one TPU async collective share, or None for other instructions.

    The TPU compiler splits an async collective into a start, an overlap and a done fusion,
    each holding a copy of the collective with the same ``channel_id`` and the same
    ``chain_id`` frontend attribute: one collective, counted once.
    (``channel_id`` alone is not unique: every collective of a shard_map can have 1.)
    """
    chain = _CHAIN_ID.search(ins.attrs.get("frontend_attributes", ""))
    channel = ins.attrs.get("channel_id")
    if chain is None or channel is None:
        return None
    return ins.opcode, channel, chain.group(1)


FUSED_SCATTER_NOTE = (
    "the compiler fused this all-reduce with the slice each device keeps "
    "(an all-reduce-scatter fusion): it runs as a reduce-scatter"
)


def _part_meta(module: HloModule, ins: HloInstruction, index: int) -> HloInstruction:
    """The instruction whose metadata describes part ``index`` of a combined collective:
    the get-tuple-element taking that part (the combiner keeps each original's metadata
    there), else the collective itself."""
    for user in module.users(ins.name):
        index_of = parse_int_list(user.attrs.get("index", ""))
        if user.opcode == "get-tuple-element" and index_of == (index,) and user.op_name:
            return user
    return ins


#: Collectives the partitioner inserts to give a value the sharding its user needs.
_RESHARD_KINDS = frozenset({"all-gather", "all-to-all", "collective-permute"})
#: Ops between a reshard and its user that move or rename the value and describe nothing.
_PASS_THROUGH = frozenset({"get-tuple-element", "bitcast", "copy", "reshape", "transpose"})


def _resharded_for(module: HloModule, ins: HloInstruction) -> HloInstruction | None:
    """The op a partitioner-made reshard (gather, all-to-all, permute) serves: its first user,
    past the partitioner's own ops and ops that only move the value, that has an ``op_name``;
    inside a fusion, the fused op that reads it (a TPU fusion of two dots carries only the
    second dot's metadata, while each fused dot keeps its own).

    The ledger names a reshard after that op (the dot that needed the gathered weight). XLA
    of jax 0.10.2 printed the reshard with that op's metadata. XLA of jax 0.12 marks it
    ``is_spmd_generated`` and gives it its *operand's* metadata instead: a parameter's name
    (``op_name="w1"``, no source) or the op that made the value (a ``sharding_constraint``),
    so the reshard's own metadata no longer says where it is needed. ``None`` when no user
    says (a reshard of the program's output).
    """
    seen, frontier = {ins.name}, [ins]
    fallback: HloInstruction | None = None
    for _ in range(12):  # a few ops at most lie between a reshard and its user
        following: list[HloInstruction] = []
        for current in frontier:
            for user in module.users(current.name):
                if user.name in seen:
                    continue
                seen.add(user.name)
                if user.spmd_generated or not user.op_name or _moves_only(module, user):
                    following.append(user)
                elif inner := fused_parameters(module, user, current.name):
                    following += inner
                    fallback = user  # the innermost fusion that says anything
                else:
                    return user
        if not following:
            break
        frontier = following
    return fallback


def _moves_only(module: HloModule, ins: HloInstruction, depth: int = 0) -> bool:
    """Whether ``ins`` only moves or renames its value (a transpose, a copy, a bitcast, or a
    fusion of only such ops): the reshard is not needed by it but by whatever reads it."""
    if ins.opcode in _PASS_THROUGH:
        return True
    if ins.opcode != "fusion" or depth > 3 or not ins.called_computations:
        return False
    computation = module.computation(ins.called_computations[0])
    return computation is not None and all(
        i.opcode == "parameter" or _moves_only(module, i, depth + 1)
        for i in computation.instructions
    )


def fused_parameters(module: HloModule, user: HloInstruction, name: str) -> list[HloInstruction]:
    """The parameters of ``user``'s fused computation that receive ``name`` (none when ``user``
    is not a fusion)."""
    if user.opcode != "fusion" or not user.called_computations:
        return []
    computation = module.computation(user.called_computations[0])
    if computation is None:
        return []
    positions = {
        str(i) for i, o in enumerate(user.operands) if (tuple_element(o) or (o,))[0] == name
    }
    return [
        p
        for p in computation.instructions
        if p.opcode == "parameter" and p.operand_text.strip() in positions
    ]


class _Found(NamedTuple):
    """One collective as written in the program, before it is measured."""

    kind: str
    #: The instruction named in the ledger (an async pair's start).
    named: HloInstruction
    #: The instruction holding the attributes (the collective a generic ``async-start`` wraps).
    attrs_of: HloInstruction
    #: An async collective's ``-done``, if found.
    done: HloInstruction | None
    is_async: bool
    #: The ``recv`` of a transfer between slices (``named`` is its ``send``), else ``None``.
    across_slices: HloInstruction | None = None


#: The TPU compiler's transfers between slices (its "megascale" runtime, over the
#: data-centre network): what each ``_xla_megascale_transfer_type`` does, as a collective.
MEGASCALE_KINDS = {
    "ALL_GATHER": "all-gather", "ALL_REDUCE": "all-reduce", "REDUCE_SCATTER": "reduce-scatter",
    "ALL_TO_ALL": "all-to-all",
}  # fmt: skip
_MEGASCALE_TYPE = re.compile(r'_xla_megascale_transfer_type="([A-Z_]+)"')
_RENDEZVOUS = re.compile(r'_xla_host_transfer_rendezvous="([^"]*)"')
ACROSS_SLICES_NOTE = (
    "between slices, over the data-centre network: the TPU compiler splits a collective over "
    "several slices into its part inside each slice (ICI) and this exchange between them"
)


def _megascale(ins: HloInstruction) -> tuple[str, str] | None:
    """(collective kind, rendezvous key) of a ``send`` or ``recv`` between slices."""
    if ins.opcode not in ("send", "recv"):
        return None
    attrs = ins.attrs.get("frontend_attributes", "")
    kind, key = _MEGASCALE_TYPE.search(attrs), _RENDEZVOUS.search(attrs)
    if kind is None or key is None or kind.group(1) not in MEGASCALE_KINDS:
        return None
    return MEGASCALE_KINDS[kind.group(1)], key.group(1)


def _found_collectives(module: HloModule) -> list[_Found]:
    """Every collective of the module in printed order, async pairs once (at their start); a
    collective wrapped by a generic ``async-start`` is counted there, not where it is written."""
    wrapped: set[str] = set()
    found: list[_Found] = []
    recvs = {
        m[1]: ins
        for ins in module.instructions()
        if ins.opcode == "recv" and (m := _megascale(ins)) is not None
    }
    for ins in module.instructions():
        op = ins.opcode
        if op == "send" and (m := _megascale(ins)) is not None:
            recv = recvs.get(m[1])
            done = done_of(module, recv) if recv is not None else None
            found.append(_Found(m[0], ins, ins, done, True, recv))
        elif op == "async-start":
            inner = _wrapped_collective(module, ins)
            if inner is not None:
                wrapped.add(inner.name)
                found.append(_Found(inner.opcode, ins, inner, done_of(module, ins), True))
        elif op.endswith("-start") and op[: -len("-start")] in _KINDS:
            found.append(_Found(op[: -len("-start")], ins, ins, done_of(module, ins), True))
        elif op in _KINDS:
            found.append(_Found(op, ins, ins, None, False))
    return [f for f in found if f.is_async or f.named.name not in wrapped]


def _device_groups(
    kind: str,
    attrs: dict[str, str],
    mesh: MeshLayout | None,
    device_ids: Sequence[int] | None,
    num_devices: int,
) -> tuple[tuple[tuple[int, int], ...], Groups, tuple[str, ...]]:
    """A collective's source-target pairs (collective-permute only), its device groups (jax
    device ids) and the mesh axes it runs over."""
    if kind != "collective-permute":
        groups = to_device_ids(
            expand_replica_groups(attrs.get("replica_groups"), num_devices), device_ids
        )
        return (), groups, axes_of_groups(groups, mesh)
    raw_pairs = parse_int_lists(attrs.get("source_target_pairs", "{}"))
    logical = tuple((p[0], p[1]) for p in raw_pairs if len(p) == 2)
    if device_ids is not None:
        ids = list(device_ids)
        pairs = tuple((ids[s], ids[t]) for s, t in logical)
    else:
        pairs = logical
    return pairs, _pairs_groups(pairs), axes_of_pairs(pairs, mesh)


def slice_groups(mesh: MeshLayout | None) -> Groups:
    """The devices that exchange data between slices: one group per position within a
    slice, each holding that position's device of every slice (jax device ids)."""
    if mesh is None:
        return ()
    by_slice: dict[int, list[int]] = {}
    for d in mesh.devices:
        by_slice.setdefault(d.slice_index or 0, []).append(d.id)
    if len(by_slice) < 2:
        return ()
    columns = [sorted(ids) for _, ids in sorted(by_slice.items())]
    return tuple(zip(*columns, strict=False))


def _varying_axes(groups: Groups, mesh: MeshLayout | None) -> tuple[str, ...]:
    """The mesh axes along which a group's devices differ (part of an axis too: the slices'
    share of an axis that spans them)."""
    if mesh is None or not groups:
        return ()
    try:
        coords = [mesh.coords(d) for d in groups[0]]
    except KeyError:
        return ()
    return tuple(name for a, name in enumerate(mesh.axis_names) if len({c[a] for c in coords}) > 1)


def _dimension(
    kind: str,
    attrs: dict[str, str],
    fusion: HloInstruction | None,
    in_arrays: Sequence[ArrayShape],
    out_arrays: Sequence[ArrayShape],
) -> int | None:
    """The one dim a collective gathers, scatters or exchanges along (``None`` for an
    all-reduce or when it is not one dim); for a fused all-reduce-scatter, the dim whose
    size the slice changes."""
    dims = parse_int_list(attrs.get("dimensions", ""))
    dimension = dims[0] if len(dims) == 1 and kind != "all-reduce" else None
    if fusion is not None and len(in_arrays) == 1 and len(out_arrays) == 1:
        changed = [
            k
            for k, (a, b) in enumerate(zip(in_arrays[0].dims, out_arrays[0].dims, strict=False))
            if a != b
        ]
        dimension = changed[0] if len(changed) == 1 else None
    return dimension


def collectives_of_hlo(
    hlo: str | HloModule,
    mesh: MeshLayout | None = None,
    device_ids: Sequence[int] | None = None,
) -> tuple[Collective, ...]:
    """Every collective of a compiled per-device HLO program, in printed order.

    Args:
        hlo: ``compiled.as_text()`` (or its parsed module).
        mesh: the user's mesh, to name the axes each collective runs over (``axes=()``
            without one).
        device_ids: the executable's device assignment: ``device_ids[p]`` is the jax device id
            of HLO logical id ``p``. Identity when ``None``.

    Returns:
        One :class:`~shardviz.model.Collective` per collective (async pairs once, combined ones
        split per operand); ``reshard`` is left ``None`` (see :func:`link_reshards`).
        ``user_written`` follows :func:`is_user_written`. For a collective-permute, ``groups``
        are the connected parts of its pairs and ``axes`` the mesh axes along which sources
        and targets differ.
    """
    module = hlo if isinstance(hlo, HloModule) else parse_hlo_module(hlo)
    num_devices = len(device_ids) if device_ids is not None else module.num_devices
    callers = _callers(module)
    out: list[Collective] = []
    copies: set[tuple[str, str, str]] = set()
    for found in _found_collectives(module):
        copy = _async_copy_key(found.named)
        if copy is not None:
            if copy in copies:
                continue  # the same collective's overlap or done fusion (TPU)
            copies.add(copy)
        out += _entries(module, callers, found, mesh, device_ids, num_devices)
    return tuple(out)


def _entries(
    module: HloModule,
    callers: dict[str, HloInstruction],
    found: _Found,
    mesh: MeshLayout | None,
    device_ids: Sequence[int] | None,
    num_devices: int,
) -> list[Collective]:
    """The ledger entries of one collective: one, or one per operand of a combined one."""
    kind, named, attrs_of, done, is_async, across = found
    in_shapes = module.operand_shapes(named)
    in_arrays = [leaf for s in in_shapes if s is not None for leaf in array_leaves(s)]
    out_arrays = _out_arrays(kind, named, done) if is_async else list(array_leaves(named.shape))
    note = ""
    fusion = _fused_slice(module, callers, named) if kind == "all-reduce" else None
    if fusion is not None:
        kind, note = "reduce-scatter", FUSED_SCATTER_NOTE
        out_arrays = list(array_leaves(fusion.shape))
    attrs = attrs_of.attrs
    if across is not None:  # send's (data, token) in; recv's (data, context, token) out
        in_arrays = [a for a in in_arrays if a.type != "token"][:1]
        received = across.shape[0] if isinstance(across.shape, tuple) else across.shape
        out_arrays = list(array_leaves(received))[:1]
        note = ACROSS_SLICES_NOTE
        groups = slice_groups(mesh)
        pairs: tuple[tuple[int, int], ...] = ()
        axes = axes_of_groups(groups, mesh) or _varying_axes(groups, mesh)
    else:
        pairs, groups, axes = _device_groups(kind, attrs, mesh, device_ids, num_devices)
    group_size = max((len(g) for g in groups), default=1)
    dimension = _dimension(kind, attrs, fusion, in_arrays, out_arrays)

    n = len(in_arrays)
    split = kind in _SPLIT_KINDS and n > 1 and len(out_arrays) == n
    out: list[Collective] = []
    for i in range(n) if split else [None]:
        if i is None:
            in_dtype, in_shape, in_bytes = _stack(in_arrays)
            out_dtype, out_shape, out_bytes = _stack(out_arrays)
            meta = named if named.op_name or attrs_of is named else attrs_of
            if kind in _RESHARD_KINDS and (named.spmd_generated or attrs_of.spmd_generated):
                meta = _resharded_for(module, done or named) or meta
            meta = module.named(meta)
            name = named.name
        else:
            a, b = in_arrays[i], out_arrays[i]
            in_dtype, in_shape, in_bytes = a.dtype, a.dims, a.nbytes
            out_dtype, out_shape, out_bytes = b.dtype, b.dims, b.nbytes
            holder = done if done is not None else named
            meta = _part_meta(module, holder, i)
            if meta is holder:
                meta = named
            name = f"{named.name}#{i}"
        source: Source | None = module.source_of(meta)
        op_name = meta.op_name
        out.append(
            Collective(
                name=name,
                kind=kind,
                in_dtype=in_dtype,
                in_shape=tuple(in_shape),
                out_dtype=out_dtype,
                out_shape=tuple(out_shape),
                in_bytes=in_bytes,
                out_bytes=out_bytes,
                moved_bytes=moved_bytes(kind, in_bytes, out_bytes, group_size, pairs),
                group_size=group_size,
                groups=groups,
                axes=axes,
                op_name=op_name,
                source=source,
                user_written=is_user_written(op_name),
                is_async=is_async,
                combined=(i, n) if i is not None else None,
                pairs=pairs,
                dimension=dimension,
                note=note,
            )
        )
    return out


def with_partitioned(
    collectives: Sequence[Collective], partitioned: Sequence[Collective]
) -> tuple[Collective, ...]:
    """Mend what the backend's rewrites lost, from the partitioned program's collectives.

    ``partitioned`` is :func:`collectives_of_hlo` of the module right after SPMD partitioning
    (before the TPU/GPU optimizations). A compiled collective's twin there runs over the same
    groups with an operand of the same dims (a reduce-scatter's twin may be the all-reduce it
    was made from). Then:

    - a collective with no ``op_name`` (the GPU's reduce-scatters, made from all-reduce +
      slice after partitioning) takes its twin's ``op_name`` and source; one without a twin
      keeps none, and its note says why;
    - a collective done in another dtype than its twin (TPU gathering f32 parameters as bf16)
      says so in its note.

    Twins are taken in program order, each once where possible.
    """
    from dataclasses import replace

    used: set[int] = set()
    out = []
    for c in collectives:
        twins = [
            i
            for i, p in enumerate(partitioned)
            if p.groups == c.groups
            and p.in_shape == c.in_shape
            and (p.kind == c.kind or (c.kind == "reduce-scatter" and p.kind == "all-reduce"))
        ]
        twins.sort(key=lambda i: (i in used, partitioned[i].out_shape != c.out_shape, i))
        notes = [c.note] if c.note else []
        changes: dict = {}
        parts = [] if twins else _combined_parts(c, partitioned, used)
        if parts:
            used.update(parts)
            first = partitioned[parts[0]]
            if not c.op_name:
                changes.update(op_name=first.op_name, source=first.source)
            where = sorted({_where(partitioned[i]) for i in parts})
            notes.append(
                f"the compiler combined {len(parts)} {c.kind}s of the program into this one "
                f"flat buffer (from {', '.join(where)})"
            )
        elif twins:
            used.add(twins[0])
            twin = partitioned[twins[0]]
            if not c.op_name and twin.op_name:
                changes.update(
                    op_name=twin.op_name,
                    source=twin.source,
                    user_written=twin.user_written,
                )
            if twin.in_dtype != c.in_dtype:
                notes.append(
                    f"moved as {c.in_dtype}: the program has {twin.in_dtype} here, and the "
                    f"compiler converts it before the {c.kind} (fewer bytes, rounded values)"
                )
        elif not c.op_name:
            notes.append(
                "source unknown: the compiler's rewrites dropped this collective's metadata "
                "and no collective of the partitioned program matches it"
            )
        if notes != ([c.note] if c.note else []) or changes:
            c = replace(c, note="; ".join(notes), **changes)
        out.append(c)
    return tuple(out)


def _where(c: Collective) -> str:
    f = c.source.innermost if c.source is not None else None
    return f"{f.file.rsplit('/', 1)[-1]}:{f.line}" if f is not None else c.name


def _combined_parts(c: Collective, partitioned: Sequence[Collective], used: set[int]) -> list[int]:
    """Consecutive unused collectives of the partitioned program, of ``c``'s kind and groups,
    whose elements add up to ``c``'s flat operand (the GPU combines gradient all-reduces into
    one flat buffer); ``[]`` when there is none."""
    if len(c.in_shape) != 1:
        return []
    want = c.in_shape[0]
    alike = [
        i
        for i, p in enumerate(partitioned)
        if i not in used and p.kind == c.kind and p.groups == c.groups
    ]
    for start in range(len(alike)):
        total = 0
        for end in range(start, len(alike)):
            total += _elements(partitioned[alike[end]].in_shape)
            if total == want and end > start:
                return alike[start : end + 1]
            if total >= want:
                break
    return []


def collective_parts(module: HloModule) -> dict[str, frozenset[str]]:
    """Each collective of the ledger (by its name, without ``#part``) and every instruction
    that is part of it: an async pair's start and done, the collective a generic
    ``async-start`` wraps, the TPU compiler's start, overlap and done copies. What a
    schedule reader needs to see where a collective is in flight."""
    out: dict[str, set[str]] = {}
    by_copy: dict[tuple[str, str, str], str] = {}
    for found in _found_collectives(module):
        names = {found.named.name, found.attrs_of.name}
        for part in (found.done, found.across_slices):
            if part is not None:
                names.add(part.name)
        copy = _async_copy_key(found.named)
        ledger = by_copy.setdefault(copy, found.named.name) if copy else found.named.name
        out.setdefault(ledger, set()).update(names)
    return {k: frozenset(v) for k, v in out.items()}


def collective_trip_counts(hlo: str | HloModule) -> dict[str, int | None]:
    """How many times each collective runs per execution, from the loops around it.

    The ledger of :func:`collectives_of_hlo` lists each collective once, where it is written.
    This gives, by collective name (without a ``#part`` suffix), the product of the trips of
    every ``while`` whose body (or condition) encloses it (:mod:`.loops` reads them):
    ``1`` outside loops, ``None`` when an enclosing loop's count cannot be read. A collective
    in a conditional branch counts as running (``1``).
    """
    module = hlo if isinstance(hlo, HloModule) else parse_hlo_module(hlo)
    loops = loops_of(module)
    counted = computation_runs(module, loops)
    unknown = {lp.body for lp in loops if not lp.known} | {
        lp.condition for lp in loops if not lp.known
    }
    callers = _callers(module)

    def count_of(computation: str) -> int | None:
        comp, seen = computation, set()
        while comp not in unknown and comp in callers and comp not in seen:
            seen.add(comp)
            comp = callers[comp].computation
        return None if comp in unknown else counted.get(computation, 1)

    wrapped = {
        inner.name
        for ins in module.instructions()
        if ins.opcode == "async-start"
        for inner in [_wrapped_collective(module, ins)]
        if inner is not None
    }
    out: dict[str, int | None] = {}
    for ins in module.instructions():
        op = ins.opcode
        if ins.name in wrapped:
            continue
        if (
            (op == "send" and _megascale(ins) is not None)
            or op in _KINDS
            or op == "async-start"
            or (op.endswith("-start") and op[: -len("-start")] in _KINDS)
        ):
            out[ins.name] = count_of(ins.computation)
    return out


def _location(source: Source | None) -> tuple[str, int, int] | None:
    f = source.innermost if source is not None else None
    return (f.file, f.line, f.column) if f is not None else None


def link_reshards(
    collectives: Sequence[Collective], intermediates: Sequence[ShardingOf]
) -> tuple[Collective, ...]:
    """Set each partitioner-inserted collective's ``reshard`` to the reshard point behind it.

    The rule: the partitioner gives a collective it inserts the metadata of the instruction it
    was partitioning, so a collective is linked to the reshard point (``ShardingOf`` with
    ``reshard=True``) of the before-partitioning dump that has the same ``op_name`` and the
    same innermost source frame (file, line, column). Frame ids are not compared: the two
    modules number their frames differently, and the chains can differ above the innermost
    frame.

    When several reshard points match (e.g. the two backward dots of one forward line), the
    one whose per-device tile fits the collective wins: an all-reduce or all-gather over axes
    ``A`` yields the value unsplit over ``A`` (its result has the elements of the point's tile
    with ``A`` taken out of its spec), a reduce-scatter consumes such a value, and an
    all-to-all or collective-permute moves the point's own tile. Among equals, the earliest in
    program order not linked yet, then the earliest.

    Limits: user-written collectives, collectives without an ``op_name`` (e.g. resharding a
    result to its ``out_shardings``) and those whose op has no matching reshard point keep
    ``reshard=None``; communication the reshard rule does not see (a reshape or gather that
    moves data) cannot be linked; points that share ``op_name`` and line and whose tiles fit
    alike are told apart by program order only.
    """
    from dataclasses import replace

    candidates: dict[tuple[str, tuple[str, int, int] | None], list[ShardingOf]] = {}
    for s in intermediates:
        if s.reshard and s.op_name:
            candidates.setdefault((s.op_name, _location(s.source)), []).append(s)
    # Each point's fit depends on the collective only through its signature, so the points of
    # one (op, line) are split once per signature into those that fit and those that do not,
    # each in program order, with a cursor past the linked ones: linear, where trying every
    # point for every collective was quadratic (2,000 collectives of one line, 1,000 points).
    queues: dict[tuple[Any, ...], tuple[_Queue, _Queue]] = {}
    used: set[str] = set()
    out = []
    for c in collectives:
        where = (c.op_name, _location(c.source))
        found = candidates.get(where) if c.op_name and not c.user_written else None
        if not found:
            out.append(c)
            continue
        sig = (*where, c.kind, tuple(c.axes), c.group_size, _elements(c.in_shape),
               _elements(c.out_shape))  # fmt: skip
        if sig not in queues:
            fits = [_fits(c, x) for x in found]
            queues[sig] = (
                _Queue([x for x, ok in zip(found, fits, strict=True) if ok]),
                _Queue([x for x, ok in zip(found, fits, strict=True) if not ok]),
            )
        fitting, others = queues[sig]
        pick = fitting.next_unused(used) or fitting.first() or others.next_unused(used)
        pick = pick or others.first()
        assert pick is not None
        used.add(pick.name)
        out.append(replace(c, reshard=pick.name))
    return tuple(out)


class _Queue:
    """Reshard points in program order, with a cursor past those already linked."""

    def __init__(self, points: list[ShardingOf]) -> None:
        self.points, self.at = points, 0

    def next_unused(self, used: set[str]) -> ShardingOf | None:
        while self.at < len(self.points) and self.points[self.at].name in used:
            self.at += 1
        return self.points[self.at] if self.at < len(self.points) else None

    def first(self) -> ShardingOf | None:
        return self.points[0] if self.points else None


def _elements(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _tile_elements(s: ShardingOf, unsplit: Sequence[str] = (), factor: int = 1) -> int | None:
    """Elements of one device's tile of ``s`` (read from its HLO tile assignment); with
    ``unsplit`` axes (together ``factor`` devices, all on one dim) taken out of the split."""
    m = re.search(r"devices=\[([\d,]*)\]", s.hlo_sharding)
    named = _named_tiles(s.hlo_sharding) if m is None and "mesh[" in s.hlo_sharding else None
    if m:
        tiles = list(parse_int_list(m.group(1)))[: len(s.shape)]
    elif named is not None:  # jax 0.12: `{mesh['data'=2,'model'=4], [{}, {'data'}]}`
        tiles = list(named)[: len(s.shape)]
    elif "replicated" in s.hlo_sharding:
        tiles = [1] * len(s.shape)
    else:
        return None
    tiles += [1] * (len(s.shape) - len(tiles))
    if unsplit:
        if s.spec is None:
            return None
        dims = [k for k, entry in enumerate(s.spec) if set(unsplit) & set(entry)]
        if len(dims) == 1 and set(unsplit) <= set(s.spec[dims[0]]):
            tiles[dims[0]] //= max(1, factor)
        elif dims:
            return None
    n = 1
    for d, t in zip(s.shape, tiles, strict=True):
        n *= -(-d // max(1, t))
    return n


@functools.lru_cache(maxsize=1024)
def _named_tiles(text: str) -> tuple[int, ...] | None:
    """Tiles per dim of a sharding on a named mesh (as jax 0.12's XLA prints the partitioner's
    input; jax 0.10.2 printed ``devices=[...]``); ``None`` when it is not tiled or unreadable."""
    try:
        parsed = parse_hlo_sharding(text)
    except HloParseError:
        return None
    if parsed.kind == "replicated":
        return ()
    return parsed.tile_dims if parsed.kind == "tiled" else None


def _fits(c: Collective, s: ShardingOf) -> bool:
    """Whether the collective's per-device sizes agree with reshard point ``s`` (see
    :func:`link_reshards`)."""
    if c.kind in ("all-reduce", "all-gather"):
        return _tile_elements(s, c.axes, c.group_size) == _elements(c.out_shape)
    if c.kind == "reduce-scatter":
        return _tile_elements(s, c.axes, c.group_size) == _elements(c.in_shape)
    return _tile_elements(s) in (_elements(c.in_shape), _elements(c.out_shape))
