"""Moves the program need not make: full rematerializations, values moved there and back,
weights gathered again and again, collectives in loops, all-reduces that should have been
reduce-scatters. (Who talks to whom in one collective is :mod:`shardviz.analysis.traffic`.)"""

from __future__ import annotations

import math
import re
from collections import defaultdict

from shardviz.analysis.detect.candidate import (
    Candidate,
    constraint_at_fix,
    constraint_fix,
    drop_constraint_fix,
    spec_fix,
)
from shardviz.analysis.detect.inputs import (
    INPUT_NAMES,
    CompilerEvidence,
    Remat,
    axis_sizes,
    by_name,
    format_bytes,
    full_bytes,
    is_constraint,
    leaf_group,
    leaf_named,
    number_of,
    spec_axes,
    spec_code,
    step_bytes,
    step_seconds,
    sum_seconds,
    ways_of,
    where_of,
)
from shardviz.model import ArrayLayout, Collective, Report, ShardingOf, Source
from shardviz.model.array import Spec
from shardviz.model.findings import Finding, FindingCost, Fix, ledger_refs
from shardviz.model.tiles import dtype_bits

#: Gathers of one weight per step a strategy needs at most: one forward, one backward.
GATHERS_NEEDED = 2
#: A loop's collectives carrying at least this share of the step's bytes are a warning.
LOOP_SHARE = 0.5


def _bytes_of(s: ShardingOf) -> int:
    return math.prod(s.shape) * max(1, dtype_bits(s.dtype) // 8)


def involuntary_remat(report: Report, evidence: CompilerEvidence) -> list[Candidate]:
    """[involuntary-remat] The partitioner could only reshard a value by replicating it."""
    values = by_name(report)
    groups: dict[str, list[Remat]] = defaultdict(list)
    loose = []  # the compiler's own values (no op name, not in the program): its helpers
    for r in evidence.remats:
        s = values.get(r.value)
        leaf = leaf_named(report, r.op_name) if s is None else None
        if s is None and leaf is None and not r.op_name:
            loose.append(r)
            continue
        key = (
            s.source.location if s is not None and s.source
            else leaf.name if leaf is not None else (r.op_name or r.value)
        )  # fmt: skip
        groups[key].append(r)
    if loose:  # part of the conversions above (or, with none, one finding of their own)
        groups[next(iter(groups))].extend(loose) if groups else groups.update({"": loose})
    return [_remat(report, remats, values) for remats in groups.values()]


def _remat(report: Report, remats: list[Remat], values: dict[str, ShardingOf]) -> Candidate:
    first = remats[0]
    s = values.get(first.value)
    leaf = leaf_named(report, first.op_name) if s is None else None
    sizes = axis_sizes(report)
    ways = (
        ways_of(tuple(spec_axes(first.from_spec)), sizes) if first.from_spec
        else _hlo_ways(first.from_hlo)
    )  # fmt: skip
    full = (
        _bytes_of(s) if s is not None
        else full_bytes(leaf) if leaf is not None
        else _logged_bytes(first)
    )  # fmt: skip
    moved = full - full // max(1, ways)
    frm, to = _remat_side(first.from_spec, first.from_hlo), _remat_side(first.to_spec, first.to_hlo)
    moving = (
        f"moving about {format_bytes(moved)} per device" if moved
        else "moving the whole value to every device"
    )  # fmt: skip
    linked = [
        number_of(report, c) for c in report.collectives
        if c.reshard is not None and (c.reshard == first.value or (
            s is not None and values.get(c.reshard) is not None
            and s.name in values[c.reshard].operands))
    ]  # fmt: skip
    fixes = list(_remat_fixes(report, remats, s))
    if s is not None and is_constraint(s) and s.source is not None:
        fixes.append(
            drop_constraint_fix(
                s.source.location, s.source.text, "let the value be", s.source.place
            )
        )
    elif s is not None and s.source is not None and first.to_spec is not None:
        fixes.append(
            constraint_at_fix(
                s.source.location, s.source.text, s.name, s.shape, first.to_spec,
                "make it in the form its user needs", s.source.place,
            )
        )  # fmt: skip
    if s is not None:
        what = f"{s.name} ({s.dtype}{list(s.shape)})"
    elif leaf is not None:
        what = f"argument {leaf.name} ({leaf.dtype}{list(leaf.shape)})"
    elif first.shape is not None and first.dtype:
        what = f"%{first.value} ({_numpy_dtype(first.dtype)}{list(first.shape)})"
    else:
        what = f"%{first.value}"
    more = f" ({len(remats)} times)" if len(remats) > 1 else ""
    finding = Finding(
        kind="involuntary-remat",
        severity="warning",
        title=(f"the compiler replicated {what} to reshard it from {frm} to {to}{more}"),
        why=(
            f"The value {what} is split as {frm}, and its next use needs {to}. The SPMD "
            "partitioner found no efficient way between the two (XLA's 'involuntary full "
            "rematerialization' warning, which only reaches the terminal): each device "
            f"gathers the whole value, then keeps its new part, {moving} and "
            "holding the full value for a while. Make the two sides agree: give the "
            "input the spec its user needs, or constrain the value where it is made."
        ),
        cost=FindingCost(kind="moved", bytes=moved),
        where=where_of(
            s.source if s is not None else _first_use(report, leaf),
            leaf=s.name if s is not None else (leaf.name if leaf is not None else ""),
            spec=first.from_spec,
            collectives=tuple(linked),
            values=tuple(r.value for r in remats),
        ),  # fmt: skip
    )
    return Candidate(finding, tuple(dict.fromkeys(fixes)), goal="remats")


def _remat_side(spec: Spec | None, hlo: str) -> str:
    """One side of a rematerialization: its spec, else the compiler's own sharding text
    (never a bare ``?``: the log always prints both shardings)."""
    if spec is not None:
        return spec_code(spec)
    return f"the compiler's sharding {hlo}" if hlo else "a sharding the log does not print"


def _hlo_ways(text: str) -> int:
    """How many parts an HLO sharding (``{devices=[1,8,1,1]<=[8]}``) splits a value into:
    its tile counts, less the last when that one only replicates (1 when it says none)."""
    m = re.search(r"devices=\[([0-9,]+)\]", text)
    if m is None:
        return 1
    counts = [int(n) for n in m.group(1).split(",")]
    if "last_tile_dim_replicate" in text:
        counts = counts[:-1]
    return math.prod(counts)


def _logged_bytes(r: Remat) -> int:
    """The value's size from the shape the compile log prints (0 when it prints none)."""
    if r.shape is None or not r.dtype:
        return 0
    try:
        bits = dtype_bits(_numpy_dtype(r.dtype))
    except ValueError:
        return 0
    return math.prod(r.shape) * max(1, bits // 8)


#: HLO's element type prefixes in numpy's spelling (``bf16`` -> ``bfloat16``).
_HLO_PREFIXES = {"bf": "bfloat", "f": "float", "s": "int", "u": "uint", "c": "complex"}


def _numpy_dtype(hlo: str) -> str:
    """An HLO element type (``f32``, ``bf16``, ``s32``, ``pred``) in numpy's spelling."""
    if hlo == "pred":
        return "bool"
    m = re.match(r"^(bf|f|s|u|c)(\d+)$", hlo)
    return f"{_HLO_PREFIXES[m.group(1)]}{m.group(2)}" if m else hlo


def _first_use(report: Report, leaf: ArrayLayout | None) -> Source | None:
    """Where an argument is first used (the line that needs it in another form)."""
    if leaf is None:
        return None
    for s in report.intermediates:
        for o in s.operands:
            named = leaf_named(report, o.rsplit(".", 1)[0])
            if named is leaf and s.source is not None:
                return s.source
    return None


def _remat_fixes(report: Report, remats: list[Remat], s: ShardingOf | None) -> tuple[Fix, ...]:
    fixes = []
    for r in remats:
        if r.to_spec is None or r.from_spec is None:
            continue
        for leaf in report.arguments.leaves:
            if (s is None or leaf.shape == s.shape) and _same(leaf.spec, r.from_spec):
                fixes.append(spec_fix(leaf.name, r.to_spec, "the spec the value's user needs"))
    return tuple(dict.fromkeys(fixes))


def _same(a: Spec | None, b: Spec | None) -> bool:
    if a is None or b is None:
        return False
    n = max(len(a), len(b))
    return tuple(a) + ((),) * (n - len(a)) == tuple(b) + ((),) * (n - len(b))


def reshard_chain(report: Report, evidence: CompilerEvidence) -> list[Candidate]:
    """[reshard-chain] A value moved A -> B -> A; an all-to-all between specs that differ by a
    transpose; a constraint overriding another."""
    values = by_name(report)
    specs: dict[str, Spec | None] = {**evidence.parameter_specs}
    specs.update({s.name: s.spec for s in report.intermediates})
    users: dict[str, list[str]] = defaultdict(list)
    for s in report.intermediates:
        for o in s.operands:
            users[o].append(s.name)
    out: list[Candidate] = []
    seen: set[tuple[str, str]] = set()
    for r in report.intermediates:
        if not r.reshard or r.spec is None:
            continue
        before = _moved_from(r, values, specs)
        if before is None:
            continue
        back = _back_to(r, before, values, specs, users)
        if back is not None and (r.name, back.name) not in seen:
            seen.add((r.name, back.name))
            out.append(_there_and_back(report, r, back, before, values, users))
    pairs: dict[tuple, list[Collective]] = defaultdict(list)
    for c in report.collectives:
        if c.kind != "all-to-all" or c.reshard not in values:
            continue
        r = values[c.reshard]
        before = _moved_from(r, values, specs)
        if before is None or r.spec is None or not _transposed(before, r.spec):
            continue
        if _users_spec(r, values):  # a constraint, or an argument placed that way
            pairs[(r.source.location if r.source else r.name, before, r.spec)].append(c)
    for (_, before, _), cs in pairs.items():
        out.append(_transpose_pair(report, cs, values[cs[0].reshard or ""], before))
    return out


def _users_spec(r: ShardingOf, values: dict[str, ShardingOf]) -> bool:
    """Whether ``r``'s spec or its operand's was written by the user (a constraint or an
    argument's placement), rather than chosen by propagation."""
    if is_constraint(r):
        return True
    return any(o not in values or is_constraint(values[o]) for o in r.operands)


def _moved_from(r: ShardingOf, values: dict[str, ShardingOf], specs: dict) -> Spec | None:
    """The spec of ``r``'s operand it was resharded from (same shape, other spec)."""
    for o in r.operands:
        spec = specs.get(o)
        shape = values[o].shape if o in values else r.shape
        if spec is not None and shape == r.shape and not _same(spec, r.spec):
            return spec
    return None


def _back_to(
    r: ShardingOf,
    spec: Spec,
    values: dict[str, ShardingOf],
    specs: dict,
    users: dict[str, list[str]],
) -> ShardingOf | None:
    """The first reshard point downstream of ``r`` that moves its value back to ``spec``."""
    frontier, seen = [r.name], {r.name}
    for _ in range(64):
        nxt = []
        for name in frontier:
            for u in users.get(name, ()):
                if u in seen or u not in values:
                    continue
                seen.add(u)
                v = values[u]
                if v.reshard and v.shape == r.shape and _same(v.spec, spec):
                    return v
                if v.shape == r.shape and _same(v.spec, r.spec):
                    nxt.append(u)
        if not nxt:
            return None
        frontier = nxt
    return None


def _between(r: ShardingOf, back: ShardingOf, users: dict[str, list[str]], values) -> list:
    """The values on the way from ``r`` to ``back`` (r included), for their constraints."""
    path, frontier, seen = [r], [r.name], {r.name}
    while frontier:
        nxt = []
        for name in frontier:
            for u in users.get(name, ()):
                if u in seen or u not in values or u == back.name:
                    continue
                seen.add(u)
                if values[u].shape == r.shape and _same(values[u].spec, r.spec):
                    path.append(values[u])
                    nxt.append(u)
        frontier = nxt
    return path


def _linked(report: Report, names: set[str]) -> list[Collective]:
    return [c for c in report.collectives if c.reshard in names]


def _there_and_back(
    report: Report,
    r: ShardingOf,
    back: ShardingOf,
    before: Spec,
    values: dict[str, ShardingOf],
    users: dict[str, list[str]],
) -> Candidate:
    moves = _linked(report, {r.name, back.name})
    moved = sum(step_bytes(c) for c in moves)
    fixes = []
    for v in _between(r, back, users, values):
        if is_constraint(v) and v.source is not None:
            fixes.append(
                drop_constraint_fix(
                    v.source.location, v.source.text, "keep the value as it was", v.source.place
                )
            )
    asked = bool(fixes)  # the user's own constraint asked for the move
    if r.source is not None:
        fixes.append(
            constraint_at_fix(
                r.source.location, r.source.text, r.name, r.shape, before,
                "keep it as it arrived", r.source.place,
            )
        )  # fmt: skip
    line_b = back.source.place if back.source else back.name
    finding = Finding(
        kind="reshard-chain",
        severity="warning",
        title=(
            f"{r.name} is moved from {spec_code(before)} to {spec_code(r.spec)} and back "
            f"(at {line_b})"
        ),
        why=(
            f"The value made at {r.source.place if r.source else r.name} arrives as "
            f"{spec_code(before)}, is resharded to {spec_code(r.spec)}, and later ({line_b}) "
            f"back to {spec_code(before)}: two moves ({format_bytes(moved)} per device per "
            f"step) that end where they started. Usually a sharding constraint asks for "
            f"{spec_code(r.spec)} where nothing needs it; drop it, or keep the value in one "
            "form throughout."
        ),
        cost=FindingCost(
            kind="moved", bytes=moved, seconds=sum_seconds([step_seconds(c) for c in moves])
        ),
        where=where_of(
            r.source,
            leaf=r.name,
            spec=r.spec,
            collectives=tuple(number_of(report, c) for c in moves),
            values=(r.name, back.name),
        ),  # fmt: skip
    )
    return Candidate(finding, tuple(dict.fromkeys(fixes)), goal="moved", only_with_fix=not asked)


def _transposed(a: Spec, b: Spec) -> bool:
    """Two specs with the same entries in another order (one is the other transposed)."""
    n = max(len(a), len(b))
    a2, b2 = tuple(a) + ((),) * (n - len(a)), tuple(b) + ((),) * (n - len(b))
    return a2 != b2 and sorted(a2) == sorted(b2)


def _transpose_pair(report: Report, cs: list[Collective], r: ShardingOf, before: Spec) -> Candidate:
    fixes = []
    if is_constraint(r) and r.source is not None:
        fixes.append(
            drop_constraint_fix(r.source.location, r.source.text, "keep its order", r.source.place)
        )
    for o in r.operands:  # an argument placed for the transposed array
        leaf = leaf_named(report, o.rsplit(".", 1)[0]) if o not in by_name(report) else None
        if leaf is not None and leaf.shape == r.shape and r.spec is not None:
            fixes.append(spec_fix(leaf.name, r.spec, "the order its use needs"))
    moved = sum(step_bytes(c) for c in cs)
    numbers = tuple(number_of(report, c) for c in cs)
    finding = Finding(
        kind="reshard-chain",
        severity="warning",
        title=(
            f"all-to-all {', '.join(f'#{n}' for n in numbers)} swaps {spec_code(before)} for "
            f"{spec_code(r.spec)}: the two specs differ by a transpose"
        ),
        why=(
            f"{r.name} comes in as {spec_code(before)} and is wanted as {spec_code(r.spec)}: "
            "the same axes on other dims, as if one side were written for the transposed "
            f"array. The all-to-all moves {format_bytes(moved)} per device per step to swap "
            "them. Write the spec for the array as it is at that point (after the "
            "transpose), or transpose after the constraint."
        ),
        cost=FindingCost(
            kind="moved", bytes=moved, seconds=sum_seconds([step_seconds(c) for c in cs])
        ),
        where=where_of(r.source, leaf=r.name, spec=r.spec, collectives=numbers, values=(r.name,)),
    )
    return Candidate(finding, tuple(fixes), goal="moved", only_with_fix=not is_constraint(r))


def regather(report: Report) -> list[Candidate]:
    """[regather] One argument leaf gathered more times per step than a strategy needs."""
    runs: dict[str, list[Collective]] = defaultdict(list)
    leaves = {leaf.name: leaf for leaf in report.arguments.leaves}
    for c in report.collectives:
        if c.kind != "all-gather" or c.user_written:
            continue
        path = _gathered_leaf(c, report)
        if path is not None and leaf_group(path).lower() not in INPUT_NAMES:
            runs[path].append(c)
    out = []
    for name, gathers in runs.items():
        count = sum(c.trips or 1 for c in gathers)
        if count <= GATHERS_NEEDED:
            continue
        arg = leaves[name]
        per = gathers[0]
        excess = sum(step_bytes(c) for c in gathers) - GATHERS_NEEDED * per.moved_bytes
        gathered = _without(arg.spec, per.axes)
        fn = report.function
        fixes = (
            constraint_fix(name, gathered, fn, "gather it once, before it is used"),
            spec_fix(name, gathered, "keep it gathered"),
        )
        loops = [c for c in gathers if (c.trips or 1) > 1]
        finding = Finding(
            kind="regather",
            severity="warning",
            title=f"{name} is gathered {count} times per step",
            why=(
                f"{name} (spec {spec_code(arg.spec)}) is all-gathered over "
                f"{per.axes_label} {count} times each step"
                + (f", {max(c.trips or 1 for c in loops)} of them inside a loop" if loops else "")
                + f"; a strategy needs it at most {GATHERS_NEEDED} times (once forward, once "
                f"backward). The extra gathers move {format_bytes(excess)} per device per step. "
                "Gather it once where the loop cannot repeat it (a sharding constraint at the "
                "top of the function), trading memory for traffic."
            ),
            cost=FindingCost(
                kind="moved",
                bytes=excess,
                seconds=sum_seconds([step_seconds(c) for c in gathers]),
            ),  # fmt: skip
            where=where_of(
                next((c.source for c in gathers if c.source is not None), None),
                leaf=name,
                spec=arg.spec,
                collectives=tuple(number_of(report, c) for c in gathers),
            ),  # fmt: skip
        )
        out.append(Candidate(finding, fixes, goal="moved"))
    return out


def _gathered_leaf(c: Collective, report: Report) -> str | None:
    """The argument leaf an all-gather gathers: from its reason when known, else the one leaf
    whose per-device tile and whole shape match the gather's operand and result."""
    why = c.why
    if why is not None and why.from_origin.kind == "argument":
        detail = why.from_origin.detail
        for leaf in report.arguments.leaves:
            if detail.endswith(leaf.name):
                return leaf.name
    matches = [
        leaf.name
        for leaf in report.arguments.leaves
        if leaf.shard_shape == c.in_shape and leaf.shape == c.out_shape
    ]
    return matches[0] if len(matches) == 1 else None


def _without(spec: Spec | None, axes: tuple[str, ...]) -> Spec:
    return tuple(tuple(a for a in e if a not in axes) for e in spec or ())


def loop_body(c: Collective) -> str:
    """The name stack of the innermost loop body ``c`` sits in (``jit(f)/while/body/``), or
    ``""`` when its name says none."""
    cut = c.op_name.rfind("/body/")
    return c.op_name[: cut + 6] if cut >= 0 else ""


def _loop_where(report: Report, body: str, cs: list[Collective]) -> str:
    """``model.py:88``: where the loop was written (its ``scan`` or ``fori_loop``), else the
    line of its heaviest collective."""
    loops = report.cost.loops if report.cost is not None else ()
    for lp in loops:
        if body and lp.op_name and body == lp.op_name.rstrip("/") + "/body/":
            return lp.where
    heaviest = max(cs, key=step_bytes)
    return heaviest.source.place if heaviest.source else heaviest.name


def _kinds_words(cs: list[Collective]) -> str:
    """``all-gather over data x6, reduce-scatter over data x2``."""
    counts: dict[tuple[str, tuple[str, ...]], int] = defaultdict(int)
    for c in cs:
        counts[(c.kind, c.axes)] += 1
    return ", ".join(
        f"{kind} over {', '.join(axes) or 'no mesh axis'}" + (f" x{n}" if n > 1 else "")
        for (kind, axes), n in counts.items()
    )


def loop_collective(report: Report) -> list[Candidate]:
    """[loop-collective] Collectives inside loops, with their per-step totals: one finding
    per loop, whatever the number of collectives in its body (a scanned model's per-layer
    gathers are one fact, not one per weight)."""
    total = sum(step_bytes(c) for c in report.collectives)
    groups: dict[tuple, list[Collective]] = defaultdict(list)
    for c in report.collectives:
        if c.trips is None or c.trips > 1:
            body = loop_body(c)
            groups[
                (body, c.trips)
                if body
                else ("", c.trips, c.source.location if c.source else c.name)
            ].append(c)
    out = []
    for key, cs in groups.items():
        per_step = sum(step_bytes(c) for c in cs)
        trips = {c.trips for c in cs}
        known = None not in trips
        count = max(t or 0 for t in trips) if known else None
        share = per_step / total if total else 0.0
        runs = f"{count} times" if known else "an unknown number of times"
        where = _loop_where(report, key[0], cs)
        once = sum(c.moved_bytes for c in cs)
        n = len(cs)
        what = (
            f"{cs[0].kind} over {', '.join(cs[0].axes) or 'no mesh axis'}"
            if n == 1
            else f"{n} collectives"
        )
        finding = Finding(
            kind="loop-collective",
            severity="warning" if share >= LOOP_SHARE else "info",
            title=f"{what} run{'s' * (n == 1)} {runs} per step inside the loop at {where}",
            why=(
                f"The loop at {where} runs its body {runs} per step, and "
                + (
                    f"the {_kinds_words(cs)} in it"
                    if n == 1
                    else f"its {n} collectives ({_kinds_words(cs)})"
                )
                + f" move {format_bytes(per_step)} per device per step ({share:.0%} of all "
                f"the program moves), where the ledger lists {format_bytes(once)} once. That "
                "is expected for a loop over layers or microbatches (a layer's weights "
                "gathered in its own iteration); if a value is the same every iteration, "
                "move its collective out of the loop, and check the loop's sharding "
                "constraints: one that changes the form of the carried value makes every "
                "trip move it back."
            ),
            cost=FindingCost(
                kind="moved",
                bytes=per_step,
                seconds=sum_seconds([step_seconds(c) for c in cs]),
            ),  # fmt: skip
            where=where_of(
                max(cs, key=step_bytes).source,
                collectives=tuple(number_of(report, c) for c in cs),
            ),
        )
        out.append(Candidate(finding, _loop_fixes(report, cs), goal="moved"))
    return out


def _loop_fixes(report: Report, cs: list[Collective]) -> tuple[Fix, ...]:
    """Sharding constraints in the same loop body as ``cs``: dropping one may keep the
    loop's values in one form, so nothing moves on every trip."""
    bodies = {c.op_name[: c.op_name.rfind("/body/") + 6] for c in cs if "/body/" in c.op_name}
    fixes = []
    for s in report.intermediates:
        if (
            is_constraint(s)
            and s.source is not None
            and any(s.op_name.startswith(b) for b in bodies)
        ):
            fixes.append(
                drop_constraint_fix(
                    s.source.location, s.source.text, "keep the loop's values", s.source.place
                )
            )
    return tuple(dict.fromkeys(fixes))


def full_reduce(report: Report) -> list[Candidate]:
    """[full-reduce] All-reduces whose result is then split over the axes they reduced over:
    reduce-scatters would have moved half the bytes (ZeRO-2/3's gradients). One finding per
    set of axes, listing every such all-reduce."""
    values = by_name(report)
    groups: dict[tuple[str, ...], list[tuple[Collective, ShardingOf]]] = defaultdict(list)
    for c in report.collectives:
        if c.kind != "all-reduce" or c.user_written or c.reshard not in values:
            continue
        r = values[c.reshard]
        if r.spec is not None and spec_axes(r.spec) & set(c.axes):
            groups[c.axes].append((c, r))
    out = []
    for pairs in groups.values():
        cs = [c for c, _ in pairs]
        waste = sum(step_bytes(c) for c in cs) // 2
        first, r = pairs[0]
        numbers = tuple(number_of(report, c) for c in cs)
        some = ledger_refs(numbers)
        finding = Finding(
            kind="full-reduce",
            severity="info",
            title=(
                f"{len(cs)} all-reduce{'s' if len(cs) > 1 else ''} over {first.axes_label} "
                f"({some}) sum{'' if len(cs) > 1 else 's'} whole values, then each device "
                f"keeps a 1/{first.group_size} slice"
            ),
            why=(
                f"Each device receives the full sum (e.g. of {r.name}, "
                f"{r.dtype}{list(r.shape)}), then keeps only its part ({spec_code(r.spec)}). "
                "A reduce-scatter gives each device its part of the sum directly, moving "
                f"half the bytes: {format_bytes(waste)} per device per step. This is the "
                "ZeRO-2/3 gradient step (and sequence parallelism's). XLA's GPU compiler "
                "turns an all-reduce followed by its slice into a reduce-scatter; this "
                f"{report.platform} compiler kept the all-reduce, and shardviz knows no spec "
                "change that makes it do otherwise."
            ),
            cost=FindingCost(
                kind="moved", bytes=waste, seconds=_half(sum_seconds([step_seconds(c) for c in cs]))
            ),
            where=where_of(first.source, leaf=r.name, spec=r.spec, collectives=numbers),
        )
        out.append(Candidate(finding, (), goal="moved"))
    return out


def _half(x: float | None) -> float | None:
    return x / 2 if x is not None else None
