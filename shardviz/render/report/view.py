"""How a compiled program's :class:`~shardviz.model.Report` is put into words.

Number formatting, the ledger grouped by mesh axes, per-kind totals, reshard links, memory
parts, the status and estimate lines. :func:`.sections.report_view` assembles them into the
one view that :mod:`.text`, :mod:`.html` and the Explorer's payload read, so every view
agrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from shardviz.model.array import ArrayLayout
from shardviz.model.estimate import Estimate
from shardviz.model.findings import ledger_refs
from shardviz.model.kernels import KernelUse, uncounted_line
from shardviz.model.program import (
    COLLECTIVE_KINDS,
    CPU_PEAK,
    GPU_HBM_PEAK,
    Collective,
    Cost,
    Loop,
    MemoryReport,
    OpTiming,
    Report,
    ShardingOf,
    Source,
)
from shardviz.model.units import (
    format_bytes,
    format_count,
    format_float_bytes,
    format_flops,
    format_mfu,
    format_seconds,
)
from shardviz.render.geometry import device_runs, mesh_summary

#: The TPU compiler's memory spaces, as its memory-usage report names them.
SPACE_NAMES = {
    "default": "HBM",
    "vmem": "VMEM (on-chip)",
    "smem": "SMEM (on-chip)",
    "host": "host memory",
    # The TPU report names color 5 "cmem"; the layouts' S(5) is host memory (pinned_host
    # arguments and outputs add up to it).
    "cmem": "host memory (color 5, 'cmem')",
}

#: Above this many intermediates, rows that are not reshard points are folded into gaps.
MAX_INTERMEDIATES = 200
#: Above this many, the HTML view shows only the reshard points at first (the rest folded).
FOLD_ABOVE = 8
#: Reshard points whose tiles the HTML view draws (in program order) before it stops.
MAX_RESHARD_TILES = 4
#: Device groups (or permute pairs) spelled out per collective before ``… N more``.
MAX_GROUPS = 8
#: Device ids spelled out per group before ``… +N``.
MAX_IDS = 8
#: Leaves and profiled ops listed before ``… N more``.
MAX_LEAVES = 50
MAX_OPS = 50

# --------------------------------------------------------------------------------------------
# Numbers and names, shared with the HTML view


def value_str(dtype: str, shape: Sequence[int]) -> str:
    """``float32[512, 1024]``; ``float32[]`` for a scalar."""
    return f"{dtype}[{', '.join(map(str, shape))}]"


def operand_str(c: Collective) -> str:
    """The operand, with the result shape when the collective changes it:
    ``float32[64, 1024] → [512, 1024]``."""
    text = value_str(c.in_dtype, c.in_shape)
    if c.out_shape != c.in_shape:
        out = value_str(c.out_dtype, c.out_shape)
        text += " → " + (out[len(c.out_dtype) :] if c.out_dtype == c.in_dtype else out)
    elif c.out_dtype != c.in_dtype:
        text += f" → {c.out_dtype}"
    return text


def basename(path: str) -> str:
    """The last component of a POSIX or Windows path."""
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def short_location(source: Source | None) -> str:
    """``train.py:42`` or ``In [12], line 42`` (the innermost frame as a person names its
    file: :attr:`~shardviz.model.Source.place`), or ``?``."""
    if source is None or source.innermost is None:
        return "?"
    return source.place


def on_one_device(report: Report) -> bool:
    """The program runs on one device (a one-device mesh, or no mesh and no collective): its
    per-device and global costs are the same program, so the views give one figure (the
    compiled program's; the global one is read before the compiler's optimisations and can
    differ a little, e.g. 42.5 against 42.4 MFLOP)."""
    if report.mesh is not None:
        return report.mesh.size == 1
    return not report.collectives


def one_device_cost(cost: Cost) -> tuple[float | None, float | None]:
    """Flops and bytes accessed of a one-device program: the compiled program's, or the
    global figure where the backend gives no per-device one."""
    flops = cost.flops_per_device if cost.flops_per_device is not None else cost.flops_global
    accessed = cost.bytes_accessed_per_device
    return flops, accessed if accessed is not None else cost.bytes_accessed_global


def loop_role(lp: Loop) -> str:
    """``forward``, ``backward`` or ``loop``: which pass a loop belongs to, read from jax's
    name stack (the backward pass is the transpose of the forward's linearisation)."""
    stack = lp.op_name.rsplit("/while", 1)[0]
    if "transpose(" in stack:
        return "backward"
    if "jvp(" in stack:
        return "forward"
    return "loop"


def loops_words(cost: Cost) -> str:
    """``2 loops: forward x32 (train.py:41), backward x32 (train.py:41)``: each loop and its
    body's runs per step (``x?`` where the count is unknown), at most four named."""

    def one(lp: Loop) -> str:
        runs = "?" if lp.runs is None else str(lp.runs)
        return f"{loop_role(lp)} x{runs}" + (f" ({lp.where})" if lp.where != lp.name else "")

    loops = cost.loops
    named = ", ".join(one(lp) for lp in loops[:4]) + (", ..." if len(loops) > 4 else "")
    return f"{len(loops)} loop{'s' if len(loops) != 1 else ''}: {named}"


def cost_rows(cost: Cost) -> list[tuple[str, str, str]]:
    """``(figure, value, meaning)`` beyond flops and bytes: the model flops, what remat
    recomputes, the loops counted and the compiler's own count, and the lower-bound warning
    (every view shows these rows)."""
    rows = []
    if cost.model_flops_per_device is not None:
        rows.append(
            (
                "model flops",
                format_flops(cost.model_flops_per_device),
                "per device per step, MFU's count: 6 x active params x tokens + attention "
                "(one-hot lookups, MoE dispatch, combine and padding: hardware flops only)",
            )
        )
    recomputed = cost.recomputed_flops_per_device
    if recomputed:
        rows.append(
            ("recomputed", format_flops(recomputed), "matmul flops jax.checkpoint runs again")
        )
    if cost.dispatch_flops_per_device:
        rows.append(
            (
                "one-hot",
                format_flops(cost.dispatch_flops_per_device),
                "matmul flops against one-hot tensors, which only move data (an embedding "
                "looked up as a matmul, an MoE's dispatch and combine): not model flops",
            )
        )
    if cost.padding_flops_per_device:
        rows.append(
            (
                "padding",
                format_flops(cost.padding_flops_per_device),
                "expert matmul flops no token needs (capacity slots left empty; a grouped matmul"
                " computed densely, each row against every group): not model flops",
            )
        )
    if cost.loops:
        once = (
            f"the compiler's own count, each body once: {format_flops(cost.compiler_flops_per_device)}"
            f", {format_float_bytes(cost.compiler_bytes_accessed_per_device)}"
        )
        but = " (but not the lower bounds below)" if cost.lower_bound else ""
        rows.append(
            ("loops", loops_words(cost), f"per step, each body times its runs{but}; {once}")
        )
    if cost.unknown_loops:
        where = ", ".join(lp.where for lp in cost.unknown_loops)
        rows.append(
            (
                "lower bound",
                where,
                "a loop whose count is unknown (it depends on the data) is counted once: "
                "every per-step figure is a lower bound",
            )
        )
    if cost.uncosted_loops:
        rows.append(("lower bound", uncosted_words(cost), UNCOSTED_MEANING))
    return rows


#: What a loop the compiler's cost model refused does to the figures.
UNCOSTED_MEANING = (
    "the compiler's cost model refused the loop's body alone, so flops and bytes accessed "
    "count it once, not per trip (lower bounds); matmul and model flops count every trip"
)


def uncosted_words(cost: Cost) -> str:
    """The loops whose trips flops and bytes accessed miss, with their runs per step
    (``loop at router.py:12, x4 a step``)."""

    def one(lp: Loop) -> str:
        runs = "?" if lp.runs is None else str(lp.runs)
        return f"{loop_role(lp)} at {lp.where}, x{runs} a step"

    return ", ".join(one(lp) for lp in cost.uncosted_loops)


def loops_heading(cost: Cost) -> str:
    """What the cost heading says of the loops: ``loops counted``, or which loops its flops
    and bytes count once (a count that depends on the data; a body the compiler's cost
    model refused)."""
    unknown = [f"{loop_role(lp)} at {lp.where} (count unknown)" for lp in cost.unknown_loops]
    uncosted = [uncosted_words(cost)] if cost.uncosted_loops else []
    if not unknown and not uncosted:
        return "loops counted"
    return f"not every loop counted: {', '.join(unknown + uncosted)} counted once"


#: How a kernel's flops were found, in words (:data:`~shardviz.model.kernels.KERNEL_HOWS`).
KERNEL_HOW_WORDS = {
    "declared": "declared by the kernel's author (the compiler's cost model counts it too)",
    "counted": "counted from the kernel",
    "bounded": "counted from the kernel, every grid step (an upper bound: a condition in it "
    "could not be read)",
    "not counted": "not counted",
}


@dataclass(frozen=True)
class KernelRow:
    """One kernel of the program in words, computed once: ``name``, its ``flops`` per step
    (``not counted`` when unknown) and what they mean (``3 calls of `splash_mha_fwd` per
    step: counted from the kernel (blocks its mask computes)``)."""

    name: str
    target: str
    how: str
    counted: bool
    flops: str
    meaning: str
    #: The user's line that called it, else ``""``.
    where: str


def kernel_meaning(k: KernelUse) -> str:
    """What a kernel's row says: its calls per step and how its flops were found, or, when
    they were not, :meth:`~shardviz.model.kernels.KernelUse.describe`'s sentence."""
    if not k.counted:
        return k.describe()
    calls = f"{format_count(k.calls)} call{'s' if k.calls != 1 else ''}"
    why = f" ({k.why})" if k.why else ""
    text = f"{calls} of `{k.name}` per step: {KERNEL_HOW_WORDS.get(k.how, k.how)}{why}"
    if k.model_flops is not None and k.model_flops != k.flops:
        text += f"; model flops {format_flops(k.model_flops)}"
    if k.added:
        text += f"; {format_flops(k.added)} added to the compiler's count"
    if k.where:
        text += f"; called at {k.where}"
    return text


def kernel_rows(cost: Cost) -> list[KernelRow]:
    """Each kernel of the program, counted or not, in the cost's order (every view shows
    these rows where the flops are broken down)."""
    return [
        KernelRow(
            name=k.name,
            target=k.target,
            how=k.how,
            counted=k.counted,
            flops=format_flops(k.flops) if k.counted else "not counted",
            meaning=kernel_meaning(k),
            where=k.where,
        )
        for k in cost.kernels
    ]


def uncounted_words(cost: Cost | None) -> str:
    """``3 calls of `splash_mha_fwd` not counted: flops and time for them are missing``, one
    sentence per kernel whose flops are unknown, or ``""`` when every kernel was counted."""
    return uncounted_line(cost.kernels) if cost is not None else ""


def no_source_words(what: str = "collective") -> str:
    """Why a source shows as ``?``: the compiler made the ``what`` (``collective`` or
    ``value``) with no line of the traced program in its metadata (the views trim shardviz's
    and the kernel's frames, so the caller's lines alone count as none)."""
    return f"no source: the compiler made this {what} without a line"


def source_words(source: Source | None, what: str = "collective") -> str:
    """``train.py:42 · y = h @ w`` (the line's code when it was read), or why there is none."""
    if source is None or source.innermost is None:
        return no_source_words(what)
    where = short_location(source)
    return f"{where} · {source.text}" if source.text else where


def axes_repr(axes: Sequence[str]) -> str:
    """``('data',)``, ``('data', 'model')`` or ``()``: how the ledger names a group of rows."""
    return repr(tuple(axes))


def ids_str(ids: Sequence[int], cap: int = MAX_IDS) -> str:
    """``{d0,d4}``, ``{d0-d7}`` (runs of three or more merged), or ``{d0,d8,d16,… +29}``."""
    pieces = device_runs(ids)
    if len(pieces) > cap:
        shown = pieces[: cap - 1]
        rest = len(ids) - sum(_piece_len(p) for p in shown)
        return "{" + ",".join(shown) + f",… +{rest}" + "}"
    return "{" + ",".join(pieces) + "}"


def _piece_len(piece: str) -> int:
    if "-" in piece:
        a, b = piece.split("-")
        return int(b[1:]) - int(a[1:]) + 1
    return 1


def groups_count_str(groups: Sequence[Sequence[int]]) -> str:
    """``4 groups of 2`` when every group has the same size, ``4 groups of 1 to 3 devices``
    when they differ (a collective-permute's connected groups), ``no replica groups``."""
    if not groups:
        return "no replica groups"
    n = len(groups)
    low, high = min(len(g) for g in groups), max(len(g) for g in groups)
    size = str(low) if low == high else f"{low} to {high} devices"
    return f"{n} group{'s' * (n != 1)} of {size}"


def groups_str(groups: Sequence[Sequence[int]], cap: int = MAX_GROUPS, max_chars: int = 120) -> str:
    """``4 groups of 2: {d0,d4} {d1,d5} {d2,d6} {d3,d7}`` (the count as
    :func:`groups_count_str` words it): at most ``cap`` groups spelled out, fewer when they
    would run past ``max_chars`` (at least one)."""
    if not groups:
        return "no replica groups"
    n = len(groups)
    head = groups_count_str(groups)
    shown: list[str] = []
    for g in groups[:cap]:
        text = ids_str(g)
        if shown and sum(len(x) + 1 for x in shown) + len(text) > max_chars:
            break
        shown.append(text)
    more = f" … {n - len(shown)} more" if n > len(shown) else ""
    return f"{head}: {' '.join(shown)}{more}"


def pairs_str(pairs: Sequence[tuple[int, int]], cap: int = 2 * MAX_GROUPS) -> str:
    """``4 pairs: d0→d1 d1→d2 d2→d3 d3→d0``."""
    n = len(pairs)
    body = " ".join(f"d{a}→d{b}" for a, b in pairs[:cap])
    more = f" … {n - cap} more" if n > cap else ""
    return f"{n} pair{'s' * (n != 1)}: {body}{more}"


# --------------------------------------------------------------------------------------------
# The ledger's shape, shared with the HTML view


@dataclass(frozen=True)
class LedgerRow:
    """One collective's words in the ledger, computed once: the text and the HTML read them.

    ``across_hosts`` is ``""`` unless the mesh spans several hosts; ``estimate`` is the
    estimated time (``unknown`` when the collective has none); ``devices`` its pairs or
    groups; ``hosts`` which of them cross hosts (``""`` on one host); ``no_source`` why no
    line is known (``""`` when one is).
    """

    index: int
    collective: Collective
    operand: str
    in_bytes: str
    moved: str
    across_hosts: str
    estimate: str
    location: str
    chain: str
    devices: str
    hosts: str
    no_source: str
    #: ``x32`` for a collective in a loop that runs 32 times a step, ``x?`` for an unknown
    #: count (counted once), ``""`` for one run.
    runs: str = ""
    #: Ledger numbers of the collectives folded into this row: the same kind, axes, line,
    #: values and device groups (a layer's collective, once per layer).
    same: tuple[int, ...] = ()

    @property
    def times(self) -> str:
        """`` ×12`` when other collectives are folded into the row, else ``""``."""
        return f" ×{1 + len(self.same)}" if self.same else ""

    @property
    def like_it(self) -> str:
        """``11 more like it: #5-#9, #12, …`` (``""`` when none is folded in)."""
        n = len(self.same)
        return f"{n} more like it: {ledger_refs(self.same)}" if n else ""


def fold_key(c: Collective) -> tuple:
    """What makes two collectives one ledger row: kind, axes, line, values, device groups."""
    where = c.source.location if c.source is not None else c.name
    return (
        c.kind, c.axes, where, c.in_dtype, c.in_shape, c.out_dtype, c.out_shape, c.groups,
        c.pairs, c.user_written, c.combined is not None, c.trips,
    )  # fmt: skip


#: Ledgers of more collectives than this fold their repeats (:func:`folded`); shorter ones
#: list every collective.
FOLD_COLLECTIVES = 24


def folded(rows: tuple[LedgerRow, ...]) -> tuple[LedgerRow, ...]:
    """``rows`` (in ledger order) with each row that repeats an earlier one's
    :func:`fold_key` folded into the earlier one's ``same``."""
    first: dict[tuple, int] = {}
    same: dict[int, list[int]] = {}
    kept: list[LedgerRow] = []
    for r in rows:
        k = fold_key(r.collective)
        if k in first:
            same[first[k]].append(r.index)
            continue
        first[k] = r.index
        same[r.index] = []
        kept.append(r)
    return tuple(replace(r, same=tuple(same[r.index])) if same[r.index] else r for r in kept)


def ledger_row(index: int, c: Collective, hosts: bool) -> LedgerRow:
    """The words of the ``index``-th collective (1-based) of the ledger."""
    return LedgerRow(
        index=index,
        collective=c,
        operand=operand_str(c),
        in_bytes=format_bytes(c.in_bytes),
        moved=format_bytes(c.moved_bytes),
        across_hosts=format_bytes(c.cross_host_bytes) if hosts else "",
        estimate=estimate_seconds_str(c.estimated_seconds),
        location=short_location(c.source),
        chain=c.source.chain if c.source else "",
        devices=pairs_str(c.pairs) if c.pairs else groups_str(c.groups),
        hosts=cross_groups_str(c) if hosts else "",
        no_source=no_source_words() if c.source is None or c.source.innermost is None else "",
        runs=runs_str(c),
    )


def runs_str(c: Collective) -> str:
    """``x32`` (its loops' trips a step), ``x?`` (unknown, counted once) or ``""`` (once)."""
    if c.trips is None:
        return "x?"
    return "" if c.trips == 1 else f"x{c.trips}"


def in_loops(report: Report) -> bool:
    """Whether some collective runs other than once a step: the ledger then has a runs column."""
    return any(c.trips != 1 for c in report.collectives)


@dataclass(frozen=True)
class AxesGroup:
    """The collectives over one tuple of mesh axes, with their ledger numbers (1-based) and
    their words (``ledger``); ``hosts`` when the mesh has several hosts (the summary then says
    what crosses them)."""

    axes: tuple[str, ...]
    rows: tuple[tuple[int, Collective], ...]
    hosts: bool = False
    #: The rows shown, repeats folded (:func:`folded`); every collective's row is in
    #: ``all_rows``.
    ledger: tuple[LedgerRow, ...] = ()
    all_rows: tuple[LedgerRow, ...] = ()

    @property
    def count(self) -> int:
        return len(self.rows)

    @property
    def in_bytes(self) -> int:
        return sum(c.in_bytes for _, c in self.rows)

    @property
    def moved_bytes(self) -> int:
        return sum(c.moved_bytes for _, c in self.rows)

    @property
    def cross_host_bytes(self) -> int:
        return sum(c.cross_host_bytes for _, c in self.rows)

    @property
    def step_bytes(self) -> int:
        """Bytes moved per device per step: each collective times its runs."""
        return moved_per_step([c for _, c in self.rows])

    @property
    def title(self) -> str:
        """``over ('data',)``, or ``over no mesh axis``."""
        return f"over {axes_repr(self.axes)}" if self.axes else "over no mesh axis"

    @property
    def summary(self) -> str:
        """``2 collectives · in 3 MiB · moved 3 MiB per device``; with collectives in loops,
        ``… moved 96 MiB per device per step (66 runs)``: each counted as often as it runs."""
        n = self.count
        text = (
            f"{n} collective{'s' * (n != 1)} · in {format_bytes(self.in_bytes)} · "
            f"moved {format_bytes(self.step_bytes)} per device"
            + step_words([c for _, c in self.rows])
        )
        if self.hosts:
            text += f" · {format_bytes(self.cross_host_bytes)} across hosts"
        return text


def multi_host(report: Report) -> bool:
    """Whether the report's mesh spans several hosts (processes): only then do the views
    split the ledger's bytes into within and across hosts."""
    return report.mesh is not None and report.mesh.num_processes > 1


def axes_groups(report: Report) -> list[AxesGroup]:
    """The ledger grouped by mesh axes, groups in order of first appearance."""
    groups: dict[tuple[str, ...], list[tuple[int, Collective]]] = {}
    for i, c in enumerate(report.collectives, 1):
        groups.setdefault(tuple(c.axes), []).append((i, c))
    hosts = multi_host(report)
    fold = len(report.collectives) > FOLD_COLLECTIVES
    out = []
    for axes, rows in groups.items():
        every = tuple(ledger_row(i, c, hosts) for i, c in rows)
        out.append(AxesGroup(axes, tuple(rows), hosts, folded(every) if fold else every, every))
    return out


def runs_per_step(c: Collective) -> int:
    """How many times ``c`` runs per step as the views count it: its loops' trips, once where
    a loop's count is unknown (0 in a loop that never runs)."""
    return c.trips if c.trips is not None else 1


def moved_per_step(cs: Sequence[Collective]) -> int:
    """Bytes the collectives move per device per step, each times its runs."""
    return sum(c.moved_bytes * runs_per_step(c) for c in cs)


def ledger_headline(report: Report) -> str:
    """``5 in the compiled program · 17 runs per step · 2.1 MiB moved per device per step``:
    a collective inside a loop runs once per trip (``at least`` where a loop's count is
    unknown and it is counted once)."""
    cs = report.collectives
    runs = sum(runs_per_step(c) for c in cs)
    moved = moved_per_step(cs)
    least = "at least " if any(c.trips is None for c in cs) else ""
    looped = f" · {least}{runs} runs per step" if runs != len(cs) or least else ""
    return (
        f"{len(cs)} in the compiled program{looped} · {least}{format_bytes(moved)} moved per "
        "device per step"
    )


def hosts_headline(report: Report) -> str:
    """``3 MiB across hosts (2 hosts)``: the ledger's cross-host bytes per device."""
    assert report.mesh is not None
    crossing = sum(c.cross_host_bytes for c in report.collectives)
    return f"{format_bytes(crossing)} across hosts ({report.mesh.num_processes} hosts)"


def cross_groups_str(c: Collective) -> str:
    """``across hosts: 4 of 4 groups span hosts, 2 MiB of 4 MiB moved per device`` or
    ``within hosts: no group spans hosts``."""
    n, k = len(c.groups), len(c.cross_host_groups)
    if not k:
        return "within hosts: no group spans hosts"
    return (
        f"across hosts: {k} of {n} group{'s' * (n != 1)} span{'s' * (k == 1)} hosts, "
        f"{format_bytes(c.cross_host_bytes)} of {format_bytes(c.moved_bytes)} moved per device"
    )


def step_words(cs: Sequence[Collective]) -> str:
    """`` per step (66 runs)`` (``at least`` where a loop's count is unknown) when some of
    ``cs`` run more than once a step, else ``""``."""
    if all(c.trips == 1 for c in cs):
        return ""
    least = "at least " if any(c.trips is None for c in cs) else ""
    return f" per step ({least}{sum(runs_per_step(c) for c in cs)} runs)"


@dataclass(frozen=True)
class KindTotal:
    kind: str
    count: int
    in_bytes: int
    moved_bytes: int
    user: int
    #: Bytes moved per step (each collective times its runs), and the runs words
    #: (:func:`step_words`).
    step_bytes: int = 0
    steps: str = ""

    @property
    def summary(self) -> str:
        """``× 2 · in 3 MiB · moved 3 MiB per device · 1 user-written``; in loops, ``moved
        96 MiB per device per step (64 runs)``."""
        text = (
            f"× {self.count} · in {format_bytes(self.in_bytes)} · "
            f"moved {format_bytes(self.step_bytes or self.moved_bytes)} per device{self.steps}"
        )
        if self.user:
            text += f" · {self.user} user-written"
        return text


def kind_totals(collectives: Sequence[Collective]) -> list[KindTotal]:
    """Count and bytes per collective kind, in the canonical kind order (unknown kinds last)."""
    kinds = [k for k in COLLECTIVE_KINDS if any(c.kind == k for c in collectives)]
    kinds += sorted({c.kind for c in collectives} - set(COLLECTIVE_KINDS))
    out = []
    for k in kinds:
        cs = [c for c in collectives if c.kind == k]
        out.append(
            KindTotal(
                k,
                len(cs),
                sum(c.in_bytes for c in cs),
                sum(c.moved_bytes for c in cs),
                sum(c.user_written for c in cs),
                moved_per_step(cs),
                step_words(cs),
            )
        )
    return out


def reshard_links(report: Report) -> dict[str, list[int]]:
    """Intermediate name -> ledger numbers (1-based) of the collectives that produce it."""
    out: dict[str, list[int]] = {}
    for i, c in enumerate(report.collectives, 1):
        if c.reshard:
            out.setdefault(c.reshard, []).append(i)
    return out


def intermediate_index(report: Report) -> dict[str, int]:
    """Intermediate name -> its number (1-based, program order); the first wins on repeats."""
    out: dict[str, int] = {}
    for j, s in enumerate(report.intermediates, 1):
        out.setdefault(s.name, j)
    return out


def shown_intermediates(
    report: Report, limit: int = MAX_INTERMEDIATES
) -> list[tuple[int, ShardingOf] | int]:
    """Intermediates in program order, numbered from 1; past ``limit`` of them, only reshard
    points (and values a collective links to) stay and each run of the rest becomes its
    length (an ``int``)."""
    items = list(enumerate(report.intermediates, 1))
    if len(items) <= limit:
        return list(items)
    linked = set(reshard_links(report))
    out: list[tuple[int, ShardingOf] | int] = []
    hidden = 0
    for j, s in items:
        if s.reshard or s.name in linked:
            if hidden:
                out.append(hidden)
                hidden = 0
            out.append((j, s))
        else:
            hidden += 1
    if hidden:
        out.append(hidden)
    return out


def folded_intermediates(
    report: Report, above: int = FOLD_ABOVE
) -> tuple[list[tuple[int, ShardingOf] | int], list[tuple[int, ShardingOf]]]:
    """The HTML view's intermediates: what shows at first, and the rest (one click away).

    Up to ``above`` values all show. Past that, the reshard points (and values a collective
    links to) show with each run of the others as its length, and the others, numbered in
    program order, are the rest. Past :data:`MAX_INTERMEDIATES`, as
    :func:`shown_intermediates` (no rest: a page of thousands of rows helps nobody).
    """
    items = report.intermediates
    if len(items) <= above or len(items) > MAX_INTERMEDIATES:
        return shown_intermediates(report), []
    shown = shown_intermediates(report, limit=above)
    kept = {item[0] for item in shown if not isinstance(item, int)}
    rest = [(j, s) for j, s in enumerate(items, 1) if j not in kept]
    return shown, rest


def reshard_tiles(report: Report, limit: int = MAX_RESHARD_TILES) -> dict[int, ArrayLayout]:
    """Intermediate number (as :func:`shown_intermediates` numbers it) -> its tiles, for the
    first ``limit`` reshard points shown whose tiles can be worked out from their spec.

    Reshard points without a named spec (manual, or no mesh) are passed over.
    """
    out: dict[int, ArrayLayout] = {}
    for item in shown_intermediates(report):
        if len(out) >= limit:
            break
        if isinstance(item, int) or not item[1].reshard or item[1].spec is None:
            continue
        j = item[0]
        try:
            out[j] = report.intermediate_layout(j - 1)  # by position: names may repeat
        except ValueError:  # a SpecError: the spec or dtype does not fit
            continue
    return out


def layout_hint(report: Report) -> tuple[str, str] | None:
    """How to draw an intermediate's tiles, as words and the code to run; ``None`` when no
    intermediate has any (no named spec, or no mesh)."""
    if report.mesh is None or not any(s.spec is not None for s in report.intermediates):
        return None
    return "tiles of a value with a spec", "print(report.intermediate_layout(name))"


@dataclass(frozen=True)
class MemoryPart:
    """One component of a device's memory: its name, bytes, and what it means."""

    name: str
    bytes: int
    meaning: str


def memory_parts(m: MemoryReport) -> list[MemoryPart]:
    """Argument, output, alias, temp and code bytes with a short explanation each."""
    return [
        MemoryPart("argument", m.argument_bytes, "inputs held on the device"),
        MemoryPart("output", m.output_bytes, "results written by the program"),
        MemoryPart("alias", m.alias_bytes, "outputs written into donated argument buffers"),
        MemoryPart("temp", m.temp_bytes, "scratch for intermediates"),
        MemoryPart("code", m.code_bytes, "the compiled program; not in peak"),
    ]


def role_totals(m: MemoryReport) -> list[tuple[str, int, int]]:
    """Per leaf role, in order of first appearance: ``(role, leaves, bytes)``."""
    out: dict[str, list[int]] = {}
    for leaf in m.by_leaf:
        acc = out.setdefault(leaf.role, [0, 0])
        acc[0] += 1
        acc[1] += leaf.bytes
    return [(r, n, b) for r, (n, b) in out.items()]


def profile_rows(profile: Sequence[OpTiming]) -> list[tuple[OpTiming, float, float]]:
    """Ops by total time (median × count), largest first: ``(op, total seconds, share)``."""
    totals = [(op, op.seconds * op.count) for op in profile]
    grand = sum(t for _, t in totals) or 1.0
    totals.sort(key=lambda x: (-x[1], x[0].name))
    return [(op, t, t / grand) for op, t in totals]


def compiler_peak_str(m: MemoryReport, platform: str) -> str:
    """``the compiler's own peak figure: 3.1 MiB (3,244,036 B), which leaves temp out on cpu``."""
    assert m.compiler_peak_bytes is not None
    text = (
        f"the compiler's own peak figure: {format_bytes(m.compiler_peak_bytes)} "
        f"({m.compiler_peak_bytes:,} B)"
    )
    if platform == "cpu":
        return text + ", which leaves temp out on cpu"
    if m.peak_definition == GPU_HBM_PEAK:
        return text + ", which also counts host memory (not HBM)"
    if platform == "tpu":
        return text + ", which also counts on-chip VMEM (not HBM)"
    return text


def assignment_str(m: MemoryReport) -> str | None:
    """``buffer assignment in HBM: argument 2.2 MiB · output 2 MiB · temp 277 KiB; memory
    spaces: HBM 4.5 MiB · VMEM (on-chip vector memory) 8 MiB`` (TPU/GPU programs), else None."""
    if not m.assigned and not m.by_space:
        return None
    parts = []
    if m.assigned:
        roles = " · ".join(f"{role} {format_bytes(b)}" for role, b in m.assigned)
        parts.append(f"the compiler's buffer assignment in HBM: {roles}")
    if m.by_space:
        spaces = " · ".join(
            f"{SPACE_NAMES.get(name, name)} {format_bytes(b)}" for name, b in m.by_space
        )
        parts.append(f"memory spaces: {spaces}")
    return "; ".join(parts)


def sum_rule_str(m: MemoryReport) -> str | None:
    """Where the peak is the compiler's own (TPU/GPU), what the CPU's rule would give."""
    if m.peak_definition == CPU_PEAK:
        return None
    total = m.argument_bytes + m.output_bytes - m.alias_bytes + m.temp_bytes
    return f"argument + output - alias + temp would give {format_bytes(total)} ({total:,} B)"


def status_line(report: Report) -> str:
    """``ran: compiled, run, timed and checked against one device`` or ``compile-only: …``."""
    if report.deviceless:
        what = report.target.label if report.target is not None else report.platform.upper()
        return f"compiled for {what}, not run"
    if not report.ran:
        return "compile-only: compiled and analysed, not run (no timing, no check)"
    did = ["compiled", "run"]
    if report.timing is not None:
        did.append("timed")
    if report.check is not None:
        did.append(f"checked against {report.check.reference}")
    return "ran: " + ", ".join(did[:-1]) + " and " + did[-1]


# --------------------------------------------------------------------------------------------
# Estimates on a target, shared with the HTML view and the Explorer

#: What every estimate is called, wherever one is shown.
ESTIMATE_WORDS = "a lower bound, not a measurement"


def estimate_words(e: Estimate) -> str:
    """What an estimate is: :data:`ESTIMATE_WORDS`, or, where a kernel was not counted,
    ``not a bound: 1 kernel not counted; not a measurement``."""
    if e.bounded:
        return ESTIMATE_WORDS
    return f"not a bound: {e.why_not_a_bound}; not a measurement"


def at_least_str(e: Estimate) -> str:
    """The step as a bound: ``≥ 144 µs``, or ``144 µs (not a bound)`` where a kernel was not
    counted."""
    step = format_seconds(e.step_seconds)
    return f"≥ {step}" if e.bounded else f"{step} (not a bound)"


def at_most_str(e: Estimate, fraction: float | None) -> str:
    """A utilisation the bound allows: ``≤ 45.5%``, or ``45.5% (not a bound)`` where a kernel
    was not counted (``unknown`` for ``None``)."""
    if fraction is None:
        return format_mfu(None)
    return f"≤ {format_mfu(fraction)}" if e.bounded else f"{format_mfu(fraction)} (not a bound)"


def target_line(report: Report) -> str | None:
    """What the report's estimates describe: on CPU devices ``estimated as if this mesh were
    TPU v5e 2x4 (…)``; on real devices ``target: …`` (``None`` without a target, and for a
    deviceless report, whose status line already names it)."""
    t = report.target
    if t is None:
        return None
    if report.platform == "cpu":
        return (
            f"estimated as if this mesh were {t.label} (compiled on CPU devices: the estimates "
            "describe the target, not this machine)"
        )
    return None if report.deviceless else f"target: {t.label}"


def estimate_title(report: Report) -> str:
    """``Estimate on TPU v5e 2x4 (8 chips, 2 hosts) (a lower bound, not a measurement)``
    (:func:`estimate_words`: not a bound where a kernel was not counted)."""
    e = report.estimate
    assert e is not None
    return f"Estimate on {e.target} ({estimate_words(e)})"


def measured_step(report: Report) -> float | None:
    """The step a real TPU/GPU run measured (median), ``None`` elsewhere: on CPU devices a
    step says nothing about the target the estimate describes."""
    if not report.ran or report.deviceless or report.timing is None:
        return None
    return report.timing.step_seconds if report.platform in ("tpu", "gpu") else None


def estimate_seconds_str(s: float | None) -> str:
    """An estimated time, ``unknown`` when its input is."""
    return "unknown" if s is None else format_seconds(s)


def step_bound_str(e: Estimate) -> str:
    """``≥ 144 µs, communication-bound`` (``144 µs (not a bound), …`` where a kernel was not
    counted)."""
    return f"{at_least_str(e)}, {e.bound}-bound"


def headroom_str(e: Estimate) -> str:
    """``16 GiB headroom``, ``over by 5.3 GiB`` or ``""`` (peak unknown)."""
    h = e.hbm_headroom_bytes
    if h is None:
        return ""
    return f"{format_bytes(h)} headroom" if h >= 0 else f"over by {format_bytes(-h)}"


def hbm_str(e: Estimate) -> str:
    """``fits: 6.3 MiB of 16 GiB per device · 16 GiB headroom`` or ``does not fit: needs …``."""
    room = headroom_str(e)
    return f"{e.fit_text} per device" + (f" · {room}" if room else "")


@dataclass(frozen=True)
class EstimateRow:
    """One line of an estimate: what, its value, how it was worked out."""

    key: str
    name: str
    value: str
    meaning: str


MFU_MEANING = (
    "model flops (6 x active params x tokens + attention) / (peak FLOP/s x step): what that "
    "bound allows"
)


PREDICTED_MEANING = (
    "the compiled schedule: each op at its compute or HBM time, whichever is longer, one "
    "after another, plus the communication the ops in flight beside it do not hide"
)


#: Added to the meaning of every figure the uncounted kernels' flops are missing from.
UNCOUNTED_TIME = "; without the uncounted kernels' flops and time (see kernels)"


def predicted_rows(e: Estimate) -> list[EstimateRow]:
    """The predicted step and its largest exposed transfers (none without a schedule)."""
    if e.predicted_seconds is None:
        return []
    low = " (a lower bound: a loop's count is unknown)" if e.lower_bound else ""
    low += UNCOUNTED_TIME if not e.bounded else ""
    exposed = ", ".join(f"{n} {format_seconds(t)}" for n, t in e.predicted_exposed[:3])
    meaning = PREDICTED_MEANING + low + (f"; most exposed: {exposed}" if exposed else "")
    return [EstimateRow("predicted", "predicted step", e.predicted_text, meaning)]


def estimate_rows(e: Estimate, measured: float | None = None) -> list[EstimateRow]:
    """The step, its three parts, the MFU and HFU that bound allows, the MFU at the measured
    step (``measured``: seconds of a real TPU/GPU step), the loops of unknown count, the
    kernels not counted (then the step and MFU are no bound) and the HBM line."""
    low = " (a lower bound: a loop's count is unknown)" if e.lower_bound else ""
    missing = "" if e.bounded else UNCOUNTED_TIME
    # With the schedule, compute and memory are the per-op work the prediction also uses.
    per_op = e.predicted_seconds is not None
    rows = [
        EstimateRow(
            "step", "step", at_least_str(e),
            f"{e.bound}-bound: the slowest part, if the others overlapped with it perfectly"
            + missing,
        ),
        *predicted_rows(e),
        EstimateRow(
            "compute", "compute", estimate_seconds_str(e.compute_seconds),
            ("each op's matmul " if per_op else "")
            + f"flops per device per step / peak bf16 FLOP/s{low}{missing}"
            if e.compute_seconds is not None else "no flop count from the compiler",
        ),
        EstimateRow(
            "memory", "memory", estimate_seconds_str(e.memory_seconds),
            ("each op's HBM reads and writes" if per_op else "bytes accessed")
            + f" per device per step / HBM bandwidth{low}"
            if e.memory_seconds is not None else "no bytes-accessed figure from the compiler",
        ),
        EstimateRow(
            "communication", "collectives", format_seconds(e.collective_seconds),
            "the ledger's estimated times, each times its runs per step, added up",
        ),
        EstimateRow("mfu", "MFU", at_most_str(e, e.mfu), MFU_MEANING + missing),
    ]  # fmt: skip
    if e.hfu is not None:
        rows.append(
            EstimateRow(
                "hfu", "HFU", at_most_str(e, e.hfu),
                "hardware flops (every op, recomputation included) / (peak x step)" + missing,
            )
        )  # fmt: skip
    measured_mfu = e.mfu_at(measured) if measured is not None else None
    if measured is not None and measured_mfu is not None:
        rows.append(
            EstimateRow(
                "measured-mfu", "measured MFU", format_mfu(measured_mfu),
                f"model flops / (peak x the measured step, {format_seconds(measured)})"
                + missing,
            )
        )  # fmt: skip
    if e.host_seconds is not None:
        rows.append(EstimateRow("host", "host link", format_seconds(e.host_seconds), e.host_text))
    if e.lower_bound:
        rows.append(
            EstimateRow(
                "loops", "loops", "lower bound",
                "counted once, count unknown: " + ", ".join(e.lower_bound),
            )
        )  # fmt: skip
    if not e.bounded:
        rows.append(
            EstimateRow("kernels", "kernels", "not a bound", "; ".join(e.unbounded_kernels))
        )
    rows.append(
        EstimateRow("hbm", "HBM", e.fit_text,
                    f"{headroom_str(e)} per device" if headroom_str(e) else "")
    )  # fmt: skip
    return rows


def estimate_notes(report: Report) -> list[tuple[str, str]]:
    """``("placement", …)`` for the target's placement note, then ``("note", …)`` for the
    estimate's notes (without repeating the placement, nor the CPU note :func:`target_line`
    already gives)."""
    e = report.estimate
    placement = report.target.placement if report.target is not None else ""
    out = [("placement", placement)] if placement else []
    if e is not None:
        cpu = report.platform == "cpu" and report.target is not None
        out += [
            ("note", n)
            for n in e.notes
            if n != placement and not (cpu and n.startswith("compiled for CPU; estimated as if"))
        ]
    return out


def has_estimates(report: Report) -> bool:
    """Whether the ledger carries estimated times (a target was known)."""
    return any(c.estimated_seconds is not None for c in report.collectives)


def mesh_line(report: Report) -> str:
    return mesh_summary(report.mesh) if report.mesh is not None else "no mesh (one device)"


def check_word(report: Report) -> str:
    if report.check is None:
        return "not checked"
    return "OK" if report.check.matches else "MISMATCH"


def host_rows(report: Report) -> list[tuple[str, str, str, str]]:
    """``(process, its devices, its median step, its live peak)`` for each host of a
    multi-process run (empty otherwise), as every view shows them."""
    rows = []
    for h in report.hosts:
        devices = f"{len(h.devices)} devices"
        step = format_seconds(h.step_seconds) if h.step_seconds is not None else "—"
        peak = format_bytes(h.peak_bytes_in_use) if h.peak_bytes_in_use is not None else "—"
        rows.append((f"process {h.process}", devices, step, peak))
    return rows


def host_spread(report: Report) -> str:
    """``slowest host 1.08x the fastest`` (``""`` with fewer than two timed hosts)."""
    steps = [h.step_seconds for h in report.hosts if h.step_seconds]
    if len(steps) < 2:
        return ""
    return f"slowest host {max(steps) / min(steps):.2f}x the fastest"
