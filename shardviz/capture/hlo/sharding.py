"""HLO shardings -> partition specs on the user's axis names, and the shardings of intermediates.

:func:`hlo_sharding_to_spec` reads every sharding form XLA prints:

- ``{replicated}``; ``{maximal device=0}``, ``{manual}``, ``{unknown}`` (no spec: ``None``);
- tiled, with the tile assignment as an iota (``{devices=[2,1,4]<=[8]}``), a transposed iota
  (``{devices=[4,2]<=[2,4]T(1,0)}``) or an explicit list (``{devices=[2,2]0,2,1,3}``), with
  ``last_tile_dim_replicate`` or ``last_tile_dims={manual, replicated}`` subgroups;
- tuple shardings ``{{...}, {...}}`` (only a one-element tuple maps to a spec);
- the named form ``{mesh['a'=2,'b'=4], [{'a'}, {}]}`` (with ``replicated=``, ``device_ids=``
  and sub-axes), in case a later XLA prints it.

The compiler's axis names are never trusted: for each tensor dim the function enumerates the
ordered subsets of the user's mesh axes and keeps the one whose row-major coordinates give
that dim's tile index on every device.

:func:`intermediates_of_hlo` reads the ``*after_shardy-xla.before_spmd-partitioning.txt``
dump (every value carries the sharding "sharding completion" chose) into
:class:`~shardviz.model.ShardingOf` records and marks the reshard points.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from shardviz.capture.hlo.groups import ids_of_array_text, mesh_form_device_array, reindex_mesh
from shardviz.capture.hlo.text import (
    ArrayShape,
    HloComputation,
    HloInstruction,
    HloModule,
    HloParseError,
    parse_hlo_module,
    parse_int_list,
    split_top_level,
)
from shardviz.errors import problem
from shardviz.model import MeshLayout, ShardingOf, Spec

__all__ = [
    "HloSharding",
    "hlo_sharding_to_spec",
    "intermediates_of_hlo",
    "parse_hlo_sharding",
]


@dataclass(frozen=True)
class HloSharding:
    """A parsed HLO sharding.

    ``kind`` is ``replicated``, ``maximal``, ``manual``, ``unknown``, ``unreduced``, ``tiled``
    or ``tuple``. For ``tiled``, ``devices`` holds the logical ids shaped
    ``tile_dims + subgroup dims`` and ``subgroups`` names the trailing dims' kinds
    (``replicated``, ``manual``, ``unreduced``).
    """

    kind: str
    text: str
    tile_dims: tuple[int, ...] = ()
    devices: np.ndarray | None = None
    subgroups: tuple[str, ...] = ()
    elements: tuple[HloSharding, ...] = ()


_TILED_RE = re.compile(r"devices=\[([\d,\s]*)\]\s*")


def _strip_braces(text: str) -> str:
    t = text.strip()
    if t.startswith("{") and t.endswith("}"):
        return t[1:-1].strip()
    return t


def _drop_metadata(body: str) -> str:
    # ``metadata={...}`` (and its nested braces) may sit inside the sharding.
    while True:
        i = body.find("metadata={")
        if i < 0:
            return body
        depth = 0
        j = i + len("metadata=")
        while j < len(body):
            if body[j] == "{":
                depth += 1
            elif body[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        body = (body[:i] + body[j + 1 :]).strip().rstrip(",")


def parse_hlo_sharding(text: str) -> HloSharding:
    """Parse the text of an HLO sharding (the value after ``sharding=``).

    Raises:
        HloParseError: if the text is not a sharding XLA prints.
    """
    raw = text.strip()
    body = _drop_metadata(_strip_braces(raw))
    if body.startswith("{") or (not body and raw.startswith("{{")):
        elements = tuple(parse_hlo_sharding(p) for p in split_top_level(body) if p.strip())
        return HloSharding("tuple", raw, elements=elements)
    if body == "" and raw == "{}":
        return HloSharding("tuple", raw, elements=())
    words = body.split()
    head = words[0] if words else ""
    if head in ("replicated", "manual", "unknown", "unreduced"):
        return HloSharding(head, raw)
    if head == "maximal" or body.startswith("maximal_mesh"):
        return HloSharding("maximal", raw)
    if body.startswith("mesh["):
        return _parse_named(raw, body)
    m = _TILED_RE.match(body)
    if not m:
        raise HloParseError(
            problem("parse_hlo_sharding", f"unknown sharding {raw[:80]!r}", "check the HLO text")
        )
    dims = parse_int_list(m.group(1))
    rest = body[m.end() :]
    tokens_at = len(rest)
    for marker in (" last_tile_dim", " shard_", "last_tile_dim"):
        k = rest.find(marker)
        if 0 <= k < tokens_at:
            tokens_at = k
    assignment, flags = rest[:tokens_at].strip(), rest[tokens_at:]
    if assignment.startswith("<="):
        ids = ids_of_array_text(assignment[2:])
    else:
        ids = np.array(parse_int_list(assignment), dtype=np.int64)
    if ids.size != math.prod(dims):
        raise HloParseError(
            problem(
                "parse_hlo_sharding",
                f"tile shape {list(dims)} needs {math.prod(dims)} devices, the text lists "
                f"{ids.size}: {raw[:80]!r}",
                "check the HLO text",
            )
        )
    subgroups: list[str] = []
    if "last_tile_dims=" in flags:
        inner = flags[flags.index("last_tile_dims=") + len("last_tile_dims=") :]
        inner = inner[inner.index("{") + 1 : inner.index("}")]
        subgroups = [w.strip() for w in inner.split(",") if w.strip()]
    elif "last_tile_dim_replicate" in flags:
        subgroups = ["replicated"]
    devices = ids.reshape(dims)
    return HloSharding(
        "tiled",
        raw,
        tile_dims=tuple(dims[: len(dims) - len(subgroups)]),
        devices=devices,
        subgroups=tuple(subgroups),
    )


def _parse_named(raw: str, body: str) -> HloSharding:
    """``mesh[...](, device_ids=(..))?, [{..}, ..](, replicated={..})...`` -> tiled sharding."""
    m = re.match(r"mesh\[([^\]]*)\]\s*(?:,\s*device_ids=\(([^)]*\)?)\))?\s*(.*)$", body, re.S)
    if not m:
        raise HloParseError(problem("parse_hlo_sharding", f"cannot read {raw!r}", "check HLO"))
    names, device_array = mesh_form_device_array(m.group(1), m.group(2))
    rest = m.group(3).strip().lstrip(",").strip()
    parts = [p.strip() for p in split_top_level(rest) if p.strip()]
    if parts and parts[0] in ("replicated", "manual", "unreduced"):
        return HloSharding(parts[0], raw)
    if not parts:
        return HloSharding("maximal", raw)
    dim_refs: list[list[str]] = []
    for piece in split_top_level(parts[0].strip()[1:-1]):
        piece = piece.strip()
        if not piece:
            continue
        refs = [r for r in piece.strip("{}").split(",") if r.strip() and r.strip() != "?"]
        dim_refs.append(refs)
    for extra in parts[1:]:
        key, _, value = extra.partition("=")
        if key.strip() in ("unreduced", "manual") and value.strip("{} "):
            return HloSharding(key.strip(), raw)
    flat = [r for refs in dim_refs for r in refs]
    arr, positions = reindex_mesh(device_array, names, flat)
    others = [i for i in range(arr.ndim) if i not in positions]
    tile_dims = []
    k = 0
    for refs in dim_refs:
        tile_dims.append(math.prod(arr.shape[positions[k + j]] for j in range(len(refs))))
        k += len(refs)
    rep = math.prod(arr.shape[i] for i in others)
    devices = arr.transpose(positions + others).reshape(tile_dims + ([rep] if rep > 1 else []))
    return HloSharding(
        "tiled",
        raw,
        tile_dims=tuple(tile_dims),
        devices=devices,
        subgroups=("replicated",) if rep > 1 else (),
    )


def _spec_from_tiles(
    sharding: HloSharding, rank: int, mesh: MeshLayout, device_ids: Sequence[int] | None
) -> Spec | None:
    devices = sharding.devices
    assert devices is not None
    if len(sharding.tile_dims) != rank:
        return None
    flat = devices.reshape(-1)
    ids = list(device_ids) if device_ids is not None else None
    try:
        dev = [ids[p] if ids is not None else int(p) for p in flat]
        coords = np.array([mesh.coords(d) for d in dev], dtype=np.int64).reshape(
            len(dev), mesh.ndim
        )
    except (KeyError, IndexError):
        return None
    if len(set(dev)) != len(dev) or len(dev) != mesh.size:
        return None
    tile_index = np.indices(devices.shape, dtype=np.int64).reshape(devices.ndim, -1).T
    sizes = mesh.axis_sizes
    used: set[int] = set()
    spec: list[tuple[str, ...]] = []
    for k, t in enumerate(sharding.tile_dims):
        if t == 1:
            spec.append(())
            continue
        found = None
        free = [a for a in range(mesh.ndim) if sizes[a] > 1 and a not in used]
        for r in range(1, len(free) + 1):
            for order in itertools.permutations(free, r):
                if math.prod(sizes[a] for a in order) != t:
                    continue
                index = np.zeros(len(dev), dtype=np.int64)
                for a in order:
                    index = index * sizes[a] + coords[:, a]
                if np.array_equal(index, tile_index[:, k]):
                    found = order
                    break
            if found:
                break
        if found is None:
            return None
        used.update(found)
        spec.append(tuple(mesh.axis_names[a] for a in found))
    return tuple(spec)


def hlo_sharding_to_spec(
    sharding_text: str | HloSharding,
    shape: Sequence[int],
    mesh: MeshLayout,
    device_ids: Sequence[int] | None = None,
) -> Spec | None:
    """An HLO sharding as a partition spec on the user's mesh axis names.

    Args:
        sharding_text: the sharding as printed (``{devices=[2,1,4]<=[8] last_tile_dim_replicate}``)
            or already parsed.
        shape: the value's (global) shape; its rank must match the tile assignment's.
        mesh: the user's mesh.
        device_ids: ``device_ids[p]`` is the jax device id of HLO logical id ``p`` (the
            executable's device assignment); identity when ``None``.

    Returns:
        One entry per dim: the mesh axes that dim is split over, in major-to-minor order
        (``()`` for an unsplit dim). ``None`` when no named spec describes the sharding:
        maximal (one device), manual (inside ``shard_map``), unreduced, unknown, a tuple of
        several shardings, a rank mismatch, or a tiling no ordered set of the mesh's axes
        produces (e.g. sub-axes, or devices outside the mesh).
    """
    rank = len(tuple(shape))
    ids = tuple(device_ids) if device_ids is not None else None
    if isinstance(sharding_text, HloSharding):
        return _spec(sharding_text, rank, mesh, ids)
    return _spec_of_text(sharding_text, rank, mesh, ids)


@functools.lru_cache(maxsize=4096)
def _spec_of_text(
    text: str, rank: int, mesh: MeshLayout, device_ids: tuple[int, ...] | None
) -> Spec | None:
    """:func:`hlo_sharding_to_spec` of a printed sharding, kept: a program's thousands of
    values share a few shardings, and the programs of one mesh share most of theirs."""
    return _spec(parse_hlo_sharding(text), rank, mesh, device_ids)


def _spec(
    sharding: HloSharding, rank: int, mesh: MeshLayout, device_ids: tuple[int, ...] | None
) -> Spec | None:
    if sharding.kind == "tuple":
        if len(sharding.elements) == 1:
            return _spec(sharding.elements[0], rank, mesh, device_ids)
        return None
    if sharding.kind == "replicated":
        return ((),) * rank
    if sharding.kind != "tiled":
        return None
    if any(s != "replicated" for s in sharding.subgroups):
        return None
    return _spec_from_tiles(sharding, rank, mesh, device_ids)


# --- intermediates --------------------------------------------------------------------------

#: Opcodes left out of the intermediates: they create or route values without computing.
TRIVIAL_OPCODES = frozenset(
    {
        "parameter",
        "constant",
        "get-tuple-element",
        "tuple",
        "iota",
        "after-all",
        "partition-id",
        "replica-id",
        "bitcast",
        "opt-barrier",
    }
)

#: What the dump means by a value with no ``sharding=``: Shardy leaves values it did not
#: shard unannotated, and the partitioner replicates them.
UNANNOTATED = "{replicated}"


def _is_prefix(operand: tuple[str, ...], result: tuple[str, ...]) -> bool:
    return result[: len(operand)] == operand


def _dims_attr(ins: HloInstruction, key: str) -> tuple[int, ...]:
    return parse_int_list(ins.attrs.get(key, ""))


def _reshard_reason(
    ins: HloInstruction,
    spec: Spec | None,
    operand_specs: Sequence[Spec | None],
    operand_shapes: Sequence[object],
) -> bool:
    """Whether producing ``ins`` with ``spec`` from its operands needs communication."""
    if spec is None or not isinstance(ins.shape, ArrayShape):
        return False
    out_dims = ins.shape.dims

    def moves(operand: Spec | None, odim: int, rdim: int, shape: object) -> bool:
        if operand is None or odim >= len(operand) or rdim >= len(spec):
            return False
        if isinstance(shape, ArrayShape) and shape.dims[odim] == 1:
            return False
        return not _is_prefix(operand[odim], spec[rdim])

    op = ins.opcode
    if op == "dot" and len(operand_specs) >= 2:
        lhs, rhs = operand_specs[0], operand_specs[1]
        lshape, rshape = operand_shapes[0], operand_shapes[1]
        lb, lc = _dims_attr(ins, "lhs_batch_dims"), _dims_attr(ins, "lhs_contracting_dims")
        rb, rc = _dims_attr(ins, "rhs_batch_dims"), _dims_attr(ins, "rhs_contracting_dims")
        for spec_x, c in ((lhs, lc), (rhs, rc)):
            if spec_x is not None and any(d < len(spec_x) and spec_x[d] for d in c):
                return True  # a split contracting dim: partial sums, or an operand to gather
        out = 0
        for lbd, rbd in zip(lb, rb, strict=False):
            if moves(lhs, lbd, out, lshape) or moves(rhs, rbd, out, rshape):
                return True
            out += 1
        for spec_x, shape_x, b, c in ((lhs, lshape, lb, lc), (rhs, rshape, rb, rc)):
            n = len(shape_x.dims) if isinstance(shape_x, ArrayShape) else 0
            for d in range(n):
                if d in b or d in c:
                    continue
                if moves(spec_x, d, out, shape_x):
                    return True
                out += 1
        return False
    if op == "transpose" and operand_specs:
        perm = _dims_attr(ins, "dimensions")
        return any(moves(operand_specs[0], p, i, operand_shapes[0]) for i, p in enumerate(perm))
    if op == "broadcast" and operand_specs:
        dims = _dims_attr(ins, "dimensions")
        return any(moves(operand_specs[0], j, d, operand_shapes[0]) for j, d in enumerate(dims))
    if op == "reduce" and operand_specs:
        reduced = set(_dims_attr(ins, "dimensions"))
        n_inputs = max(1, len(operand_specs) // 2)
        for x, shape_x in zip(operand_specs[:n_inputs], operand_shapes[:n_inputs], strict=False):
            if x is None:
                continue
            if any(d < len(x) and x[d] for d in reduced):
                return True  # reducing over a split dim: partial results to combine
            kept = [d for d in range(len(x)) if d not in reduced]
            if any(moves(x, d, i, shape_x) for i, d in enumerate(kept)):
                return True
        return False
    # Any other op: compare dim by dim with every operand of the same shape.
    for x, shape_x in zip(operand_specs, operand_shapes, strict=False):
        same_shape = isinstance(shape_x, ArrayShape) and shape_x.dims == out_dims
        if same_shape and any(moves(x, d, d, shape_x) for d in range(len(out_dims))):
            return True
    return False


def _program_order(module: HloModule) -> Iterator[HloInstruction]:
    """The entry's instructions in order, with the computations it runs as part of the
    program (while bodies, conditional branches, non-manual calls) inlined before the
    instruction that runs them. Reductions (``to_apply``), fusions and ``shard_map`` bodies
    (a ``call`` with a manual sharding) are not entered."""
    seen: set[str] = set()

    def walk(comp: HloComputation | None) -> Iterator[HloInstruction]:
        if comp is None or comp.name in seen:
            return
        seen.add(comp.name)
        for ins in comp.instructions:
            called: list[str] = []
            if ins.opcode == "while":
                called = [ins.attrs.get("body", "")]
            elif ins.opcode == "conditional" or (
                ins.opcode == "call" and "manual" not in (ins.sharding or "")
            ):
                called = list(ins.called_computations)
            for name in called:
                yield from walk(module.computation(name))
            yield ins

    yield from walk(module.entry)


def intermediates_of_hlo(
    hlo: str | HloModule,
    mesh: MeshLayout,
    device_ids: Sequence[int] | None = None,
) -> tuple[ShardingOf, ...]:
    """The sharding completion chose for each value of the program, in program order.

    Args:
        hlo: the text (or parsed module) of the ``*after_shardy-xla.before_spmd-partitioning``
            dump: the whole program, every value with its ``sharding=``.
        mesh: the user's mesh (specs come out on its axis names).
        device_ids: the executable's device assignment (HLO logical id -> jax device id).

    Returns:
        One :class:`~shardviz.model.ShardingOf` per instruction of the entry computation and
        of what it runs as part of the program (while bodies, placed before their ``while``;
        conditional branches; plain calls), leaving out the trivial ones (parameters,
        constants, tuples, get-tuple-element, iota, bitcast, ...), scalar broadcasts, integer
        and boolean scalars (loop counters) and tuple-shaped values. Values the dump prints
        without a sharding are replicated (Shardy leaves them unannotated); they show
        ``{replicated}``. Reductions' computations and ``shard_map`` bodies (manual values)
        are not entered; the ``call`` of a ``shard_map`` body is listed, with ``spec=None``.

    ``reshard`` -- the rule: a value is a reshard point when producing it with its sharding
    from its operands' shardings needs communication. Dims are matched through the op:
    ``dot`` (batch and free dims to the result's, and a split contracting dim always counts:
    partial sums to reduce, or an operand to gather), ``transpose`` (its permutation),
    ``broadcast`` (its ``dimensions``), ``reduce`` (a split reduced dim always counts, kept dims
    in order); any other op compares dim by dim with each operand of the same shape (so
    elementwise ops, copies and sharding constraints, not reshapes, slices, gathers or
    concatenations, whose dims do not line up). A matched pair needs communication unless the
    operand's axes for that dim are a prefix of the result's (``P(None)`` -> ``P('x')`` and
    ``P('x')`` -> ``P(('x','y'))`` are local slicing; ``P('x')`` -> ``P(None)`` is a gather,
    ``P('x', None)`` -> ``P(None, 'x')`` an all-to-all). Size-1 dims and operands without a
    named spec (manual, maximal) are not compared.
    """
    module = hlo if isinstance(hlo, HloModule) else parse_hlo_module(hlo)
    specs: dict[str, Spec | None] = {}
    out: list[ShardingOf] = []
    # A program repeats a handful of shardings over thousands of values: map each
    # (sharding, rank) to a spec once.
    seen: dict[tuple[str, int], Spec | None] = {}
    for ins in _program_order(module):
        if not isinstance(ins.shape, ArrayShape):
            continue
        text = ins.sharding or UNANNOTATED
        key = (text, len(ins.shape.dims))
        if key not in seen:
            seen[key] = _spec_or_none(text, ins.shape.dims, mesh, device_ids)
        spec = seen[key]
        specs[ins.name] = spec
        if ins.opcode in TRIVIAL_OPCODES:
            continue
        if not ins.shape.dims and not ins.shape.type.startswith(("f", "bf", "c")):
            continue  # integer and boolean scalars: loop counters, indices, predicates
        operand_shapes = module.operand_shapes(ins)
        if ins.opcode == "broadcast" and _broadcasts_a_scalar(operand_shapes):
            continue
        operand_specs = [specs.get(name) for name in ins.operands]
        out.append(
            ShardingOf(
                name=ins.name,
                op=ins.opcode,
                dtype=ins.shape.dtype,
                shape=ins.shape.dims,
                spec=spec,
                hlo_sharding=text,
                op_name=ins.op_name,
                source=module.source_of(ins),
                operands=ins.operands,
                reshard=_reshard_reason(ins, spec, operand_specs, operand_shapes),
            )
        )
    return tuple(out)


def _spec_or_none(
    text: str, dims: Sequence[int], mesh: MeshLayout, device_ids: Sequence[int] | None
) -> Spec | None:
    """:func:`hlo_sharding_to_spec`, with ``None`` for a sharding that does not parse."""
    try:
        return hlo_sharding_to_spec(text, dims, mesh, device_ids)
    except HloParseError:
        return None


def _broadcasts_a_scalar(operand_shapes: Sequence[object]) -> bool:
    """Whether a broadcast's operand is a scalar: a filled array, not a value worth listing."""
    first = operand_shapes[0] if operand_shapes else None
    return isinstance(first, ArrayShape) and not first.dims
