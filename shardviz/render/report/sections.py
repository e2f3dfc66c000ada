"""A report's view: one frozen object per section, computed once by :func:`report_view`.

:mod:`.text` and :mod:`.html` print these fields and the Explorer's payload reads the
ledger's and the estimate's, so a figure is worked out in one place and reads the same in
``print(report)``, in the saved HTML and in the widget. The words themselves are spelled by
the helpers of :mod:`.view`; pictures (group maps, traffic, tiles) stay with the HTML, which
draws them from the report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from shardviz.model._codec import JsonMixin
from shardviz.model.array import ArrayLayout
from shardviz.model.program import MemoryReport, Report, ShardingOf
from shardviz.model.units import (
    format_bytes,
    format_diff,
    format_float_bytes,
    format_flops,
    format_seconds,
    sig3,
)
from shardviz.render.findings.view import FindingsView, section_view
from shardviz.render.report.transfers import TransfersSection, transfers_section
from shardviz.render.report.view import (
    MAX_LEAVES,
    MAX_OPS,
    AxesGroup,
    EstimateRow,
    KernelRow,
    KindTotal,
    LedgerRow,
    assignment_str,
    at_least_str,
    axes_groups,
    check_word,
    compiler_peak_str,
    cost_rows,
    estimate_notes,
    estimate_rows,
    estimate_title,
    estimate_words,
    folded_intermediates,
    has_estimates,
    hbm_str,
    host_rows,
    host_spread,
    hosts_headline,
    in_loops,
    kernel_rows,
    kind_totals,
    layout_hint,
    ledger_headline,
    loops_heading,
    measured_step,
    memory_parts,
    mesh_line,
    moved_per_step,
    multi_host,
    no_source_words,
    on_one_device,
    one_device_cost,
    profile_rows,
    reshard_links,
    reshard_tiles,
    role_totals,
    short_location,
    shown_intermediates,
    status_line,
    sum_rule_str,
    target_line,
    uncounted_words,
    value_str,
)

# --------------------------------------------------------------------------------------------
# Header


@dataclass(frozen=True)
class HeaderSection:
    """Function, platform, mesh, what was done (ran or compile-only), target and notes."""

    function: str
    platform: str
    mesh: str
    status: str
    target: str | None
    notes: tuple[str, ...]
    ran: bool
    #: ``OK``, ``MISMATCH`` or ``not checked``; ``matches`` is ``None`` when not checked.
    check: str
    matches: bool | None


def header_section(report: Report) -> HeaderSection:
    c = report.check
    return HeaderSection(
        function=report.function,
        platform=report.platform,
        mesh=mesh_line(report),
        status=status_line(report),
        target=target_line(report),
        notes=report.notes,
        ran=report.ran,
        check=check_word(report),
        matches=c.matches if c is not None else None,
    )


# --------------------------------------------------------------------------------------------
# Ledger


@dataclass(frozen=True)
class LedgerSection:
    """The collectives, grouped by mesh axes, with their totals by kind."""

    headline: str
    #: ``3 MiB across hosts (2 hosts)`` on several hosts, else ``""``.
    hosts_headline: str
    estimates: bool
    multi_host: bool
    #: Some collective runs other than once a step (the text ledger has a runs column).
    loops: bool
    groups: tuple[AxesGroup, ...]
    kinds: tuple[KindTotal, ...]
    count: int
    #: Bytes moved per device per step (each collective times its runs), and across hosts.
    moved: str
    across_hosts: str

    @property
    def shown_as(self) -> dict[int, int]:
        """Ledger number -> the number of the row it is shown in (itself, or the row it is
        folded into): where a link to it goes."""
        return {j: r.index for g in self.groups for r in g.ledger for j in (r.index, *r.same)}

    @property
    def rows(self) -> tuple[LedgerRow, ...]:
        """Every collective's row, in ledger order (row ``i`` is collective ``i + 1``), none
        folded."""
        return tuple(sorted((r for g in self.groups for r in g.all_rows), key=lambda r: r.index))


def ledger_section(report: Report) -> LedgerSection:
    cs = report.collectives
    hosts = multi_host(report)
    return LedgerSection(
        headline=ledger_headline(report),
        hosts_headline=hosts_headline(report) if hosts else "",
        estimates=has_estimates(report),
        multi_host=hosts,
        loops=in_loops(report),
        groups=tuple(axes_groups(report)),
        kinds=tuple(kind_totals(cs)),
        count=len(cs),
        moved=format_bytes(moved_per_step(cs)),
        across_hosts=format_bytes(sum(c.cross_host_bytes for c in cs)),
    )


# --------------------------------------------------------------------------------------------
# Intermediates


@dataclass(frozen=True)
class IntermediateRow:
    """One value in program order: its number, words, the collectives that produce it and,
    for the first few reshard points, its tiles."""

    index: int
    value: ShardingOf
    shape: str
    location: str
    #: ``(ledger number, kind)`` of each collective that reshards into this value.
    by: tuple[tuple[int, str], ...]
    tiles: ArrayLayout | None
    #: Numbers of the values folded into this row: made by the same line and op, of the
    #: same shape and spec (a layer's value, once per layer).
    same: tuple[int, ...] = ()

    @property
    def times(self) -> str:
        """`` ×8`` when other values are folded into the row, else ``""``."""
        return f" ×{1 + len(self.same)}" if self.same else ""


#: A run of rows left out, as its length.
Gap = int


def value_key(r: IntermediateRow) -> tuple:
    """What makes two values one row: line, op, dtype, shape, spec and whether it reshards."""
    s = r.value
    where = s.source.location if s.source is not None else s.name
    return (where, s.op, s.dtype, s.shape, s.spec_str, s.reshard, tuple(k for _, k in r.by))


#: Listings of more rows than this fold their repeated reshard points (:func:`folded_values`).
FOLD_VALUES = 48


def folded_values(items: tuple[IntermediateRow | Gap, ...]) -> tuple[IntermediateRow | Gap, ...]:
    """``items`` with each reshard point that repeats an earlier one's :func:`value_key`
    folded into it (``same``), and the gaps that then meet added up. Values without a
    reshard are left alone: a short listing shows each."""
    if sum(1 for x in items if not isinstance(x, int)) <= FOLD_VALUES:
        return items
    first: dict[tuple, int] = {}
    same: dict[int, list[int]] = {}
    kept: list[IntermediateRow | Gap] = []
    for item in items:
        if isinstance(item, int):
            if kept and isinstance(kept[-1], int):
                kept[-1] += item
            else:
                kept.append(item)
            continue
        key = value_key(item)
        if item.value.reshard and key in first:
            same[first[key]].append(item.index)
            continue
        first.setdefault(key, item.index)
        same.setdefault(item.index, [])
        kept.append(item)
    return tuple(
        replace(x, same=tuple(same[x.index])) if not isinstance(x, int) and same.get(x.index)
        else x
        for x in kept
    )  # fmt: skip


@dataclass(frozen=True)
class IntermediatesSection:
    """The values in program order, as the text lists them (``listed``) and as the HTML
    shows them at first (``first``) with the others one click away (``rest``)."""

    count: int
    reshards: int
    listed: tuple[IntermediateRow | Gap, ...]
    first: tuple[IntermediateRow | Gap, ...]
    rest: tuple[IntermediateRow, ...]
    tiles: int
    #: ``(words, code)``: how to draw a value's tiles; ``None`` when no value has a spec.
    hint: tuple[str, str] | None
    #: Why a value has no source line.
    no_source: str

    @property
    def shown_as(self) -> dict[int, int]:
        """Value number -> the number of the row it is shown in (itself, or the row it is
        folded into), for the HTML's first rows and the others: where a link to it goes."""
        rows = [x for x in (*self.first, *self.rest) if not isinstance(x, int)]
        return {j: r.index for r in rows for j in (r.index, *r.same)}


def intermediates_section(report: Report) -> IntermediatesSection:
    links = reshard_links(report)
    kinds = {i: c.kind for i, c in enumerate(report.collectives, 1)}
    tiles = reshard_tiles(report)
    rows: dict[int, IntermediateRow] = {}

    def row(j: int, s: ShardingOf) -> IntermediateRow:
        if j not in rows:
            rows[j] = IntermediateRow(
                index=j,
                value=s,
                shape=value_str(s.dtype, s.shape),
                location=short_location(s.source),
                by=tuple((i, kinds[i]) for i in links.get(s.name, [])),
                tiles=tiles.get(j),
            )
        return rows[j]

    def rows_of(items: list[tuple[int, ShardingOf] | int]) -> tuple[IntermediateRow | Gap, ...]:
        return folded_values(tuple(item if isinstance(item, int) else row(*item) for item in items))

    first, rest = folded_intermediates(report)
    return IntermediatesSection(
        count=len(report.intermediates),
        reshards=len(report.reshards),
        listed=rows_of(shown_intermediates(report)),
        first=rows_of(first),
        rest=tuple(row(j, s) for j, s in rest),
        tiles=len(tiles),
        hint=layout_hint(report),
        no_source=no_source_words("value"),
    )


# --------------------------------------------------------------------------------------------
# Memory


@dataclass(frozen=True)
class PartRow:
    """One part of a device's memory: ``argument 2 MiB (2,097,152 B) · inputs held …``."""

    name: str
    bytes: int
    text: str
    exact: str
    meaning: str


@dataclass(frozen=True)
class LeafRow:
    path: str
    role: str
    bytes: int
    text: str
    #: ``device`` (HBM) or a host memory kind (``pinned_host``, ``unpinned_host``).
    memory: str = "device"


@dataclass(frozen=True)
class HostMemory:
    """Host memory per device beside the HBM peak: its total, its parts, whose figures
    they are, and where the leaves and the compiler disagree."""

    bytes: int
    text: str
    exact: str
    #: ``(part, bytes, text)``: argument, output, temp (those above 0).
    parts: tuple[tuple[str, int, str], ...]
    source: str
    mismatch: str
    #: ``(path, role, memory kind, bytes text)`` of each leaf (input or output) on host.
    leaves: tuple[tuple[str, str, str, str], ...]

    @property
    def line(self) -> str:
        """``host memory per device 8 MiB (8,388,608 B): argument 4 MiB · output 4 MiB``."""
        parts = " · ".join(f"{name} {text}" for name, _, text in self.parts)
        return f"host memory per device {self.text} ({self.exact})" + (
            f": {parts}" if parts else ""
        )


@dataclass(frozen=True)
class RoleTotal:
    role: str
    leaves: int
    bytes: int
    text: str
    #: Of ``bytes``, those in host memory (leaves with a host memory kind).
    host_bytes: int = 0

    @property
    def label(self) -> str:
        """``opt 4 MiB (1)``, or ``opt 4 MiB (1, 4 MiB on host)``."""
        host = f", {format_bytes(self.host_bytes)} on host" if self.host_bytes else ""
        return f"{self.role} {self.text} ({self.leaves}{host})"


@dataclass(frozen=True)
class MemorySection:
    """Memory per device: the parts, the compiler's own figures, the leaves by role and the
    live device statistics."""

    peak_bytes: int
    peak: str
    peak_definition: str
    #: Argument, output, alias, temp and code, then the peak.
    parts: tuple[PartRow, ...]
    alias_bytes: int
    #: ``(part, bytes)`` of the stacked bar: argument, output not aliased, temp.
    bar: tuple[tuple[str, int], ...]
    compiler_peak: str | None
    #: The sum rule (TPU/GPU) and the compiler's buffer assignment, those that apply.
    notes: tuple[str, ...]
    leaves: tuple[LeafRow, ...]
    #: ``… 12 more leaves, 3 MiB`` past :data:`MAX_LEAVES`, else ``""``.
    more_leaves: str
    roles: tuple[RoleTotal, ...]
    #: ``(d0, in use, peak in use, limit)`` per device, when the run read them.
    devices: tuple[tuple[str, str, str, str], ...]
    #: Host memory beside HBM; ``None`` when the program keeps nothing on host.
    host: HostMemory | None = None
    #: Whether any leaf lives in host memory (the leaf table then shows each one's memory).
    any_host_leaf: bool = False


def memory_section(report: Report) -> MemorySection:
    m = report.memory
    parts = [
        PartRow(p.name, p.bytes, format_bytes(p.bytes), f"{p.bytes:,} B", p.meaning)
        for p in memory_parts(m)
    ]
    parts.append(
        PartRow("peak", m.peak_bytes, format_bytes(m.peak_bytes), f"{m.peak_bytes:,} B",
                m.peak_definition)
    )  # fmt: skip
    compiler = (
        compiler_peak_str(m, report.platform)
        if m.compiler_peak_bytes is not None and m.compiler_peak_bytes != m.peak_bytes
        else None
    )
    rest = m.by_leaf[MAX_LEAVES:]
    more = f"… {len(rest)} more leaves, {format_bytes(sum(x.bytes for x in rest))}" if rest else ""
    return MemorySection(
        peak_bytes=m.peak_bytes,
        peak=format_bytes(m.peak_bytes),
        peak_definition=m.peak_definition,
        parts=tuple(parts),
        alias_bytes=m.alias_bytes,
        bar=(
            ("argument", m.argument_bytes),
            ("output", max(0, m.output_bytes - m.alias_bytes)),
            ("temp", m.temp_bytes),
        ),
        compiler_peak=compiler,
        notes=tuple(x for x in (sum_rule_str(m), assignment_str(m)) if x),
        leaves=tuple(
            LeafRow(x.path, x.role, x.bytes, format_bytes(x.bytes), x.memory_kind)
            for x in m.by_leaf[:MAX_LEAVES]
        ),
        more_leaves=more,
        roles=tuple(
            RoleTotal(
                r,
                n,
                b,
                format_bytes(b),
                sum(x.bytes for x in m.by_leaf if x.role == r and x.on_host),
            )
            for r, n, b in role_totals(m)
        ),  # fmt: skip
        devices=tuple(
            (
                f"d{d.device_id}",
                format_bytes(d.bytes_in_use),
                format_bytes(d.peak_bytes_in_use),
                format_bytes(d.bytes_limit) if d.bytes_limit is not None else "n/a",
            )
            for d in m.device_stats
        ),
        host=host_memory(m),
        any_host_leaf=any(x.on_host for x in m.by_leaf),
    )


def host_memory(m: MemoryReport) -> HostMemory | None:
    """The host part of the memory section, or ``None`` when nothing is on host."""
    if not m.host_source:
        return None
    parts = tuple(
        (name, b, format_bytes(b))
        for name, b in (
            ("argument", m.host_argument_bytes),
            ("output", m.host_output_bytes),
            ("alias", m.host_alias_bytes),
            ("temp", m.host_temp_bytes),
            ("offloaded", m.offloaded_bytes),
        )
        if b
    )
    leaves = tuple(
        (x.path, x.role, x.memory_kind, format_bytes(x.bytes))
        for x in (*m.by_leaf, *m.out_leaves)
        if x.on_host
    )
    return HostMemory(
        bytes=m.host_bytes,
        text=format_bytes(m.host_bytes),
        exact=f"{m.host_bytes:,} B",
        parts=parts,
        source=m.host_source
        + (
            "; offloaded: the compiled program's own host buffers, which the compiler's "
            "host temp figure leaves out"
            if m.offloaded_bytes
            else ""
        ),
        mismatch=m.host_mismatch,
        leaves=leaves,
    )


# --------------------------------------------------------------------------------------------
# Cost, estimate, timing, check, profile


@dataclass(frozen=True)
class CostSection:
    """The compiler's cost per step: flops and bytes accessed per device and global (one
    figure each on one device), the intensity and the figures beyond them."""

    available: bool
    one_device: bool
    flops: str
    accessed: str
    #: The global figures (``""`` on one device).
    flops_global: str
    accessed_global: str
    #: FLOP per byte accessed per device, three significant digits (``""`` when unknown).
    intensity: str
    #: ``(figure, value, meaning)``: model flops, remat, loops, the lower-bound warning.
    more: tuple[tuple[str, str, str], ...]
    #: The program's kernels (Pallas/Mosaic, Triton, other custom calls), counted or not.
    kernels: tuple[KernelRow, ...] = ()
    #: One sentence naming each kernel whose flops are missing (``""`` when none is): the
    #: flops above, and every time built on them, leave its work out.
    uncounted: str = ""
    #: What the heading says of the loops: ``loops counted``, or the loops whose trips the
    #: flops and bytes could not count (``loop at router.py:12 counted once``).
    loops: str = "loops counted"

    @property
    def kernels_heading(self) -> str:
        """``kernels per device per step (their flops are in the figures above)``, or, when
        some is not counted, that the figures leave its work out."""
        missing = sum(not k.counted for k in self.kernels)
        if not missing:
            return "kernels per device per step (their flops are in the figures above)"
        return (
            f"kernels per device per step ({missing} not counted: the figures above leave "
            f"{'their' if missing != 1 else 'its'} work out)"
        )


def cost_section(report: Report) -> CostSection:
    c = report.cost
    if c is None:
        return CostSection(False, False, "", "", "", "", "", ())
    one = on_one_device(report)
    if one:
        flops, accessed = one_device_cost(c)
        figures = (format_flops(flops), format_float_bytes(accessed), "", "")
    else:
        figures = (
            format_flops(c.flops_per_device),
            format_float_bytes(c.bytes_accessed_per_device),
            format_flops(c.flops_global),
            format_float_bytes(c.bytes_accessed_global),
        )
    intensity = (
        sig3(c.flops_per_device / c.bytes_accessed_per_device)
        if c.flops_per_device and c.bytes_accessed_per_device
        else ""
    )
    return CostSection(
        True, one, *figures, intensity, tuple(cost_rows(c)), tuple(kernel_rows(c)),
        uncounted_words(c), loops_heading(c),
    )  # fmt: skip


@dataclass(frozen=True)
class EstimateSection:
    """The estimate on the report's target: its rows, notes and the HBM line."""

    title: str
    target: str
    bound: str
    fits: bool | None
    rows: tuple[EstimateRow, ...]
    #: ``(kind, text)``: the placement, then the estimate's own notes.
    notes: tuple[tuple[str, str], ...]
    peak_bytes: int | None
    hbm_bytes: int
    peak: str
    hbm: str
    #: ``fits: 6.3 MiB of 16 GiB per device · 16 GiB headroom``.
    hbm_text: str
    step: str
    #: The step as a bound (``≥ 144 µs``; ``144 µs (not a bound)`` where a kernel was not
    #: counted) and what the estimate is (:func:`~.view.estimate_words`).
    at_least: str = ""
    words: str = ""
    #: ``not a bound: 3 calls of `splash_mha_fwd` not counted: …`` (``""`` when every kernel
    #: was counted: then the step and MFU are bounds).
    not_a_bound: str = ""
    #: ``1 kernel not counted`` / ``2 kernels counted at their costliest`` (``""``: a bound).
    why_not_a_bound: str = ""

    @property
    def bounded(self) -> bool:
        """Whether the step and MFU are bounds (every kernel counted exactly)."""
        return not self.not_a_bound


def estimate_section(report: Report) -> EstimateSection | None:
    e = report.estimate
    if e is None:
        return None
    return EstimateSection(
        title=estimate_title(report),
        target=e.target,
        bound=e.bound,
        fits=e.fits,
        rows=tuple(estimate_rows(e, measured_step(report))),
        notes=tuple(estimate_notes(report)),
        peak_bytes=e.peak_bytes,
        hbm_bytes=e.hbm_bytes,
        peak=format_bytes(e.peak_bytes) if e.peak_bytes is not None else "",
        hbm=format_bytes(e.hbm_bytes),
        hbm_text=hbm_str(e),
        step=format_seconds(e.step_seconds),
        at_least=at_least_str(e),
        words=estimate_words(e),
        not_a_bound=e.not_a_bound,
        why_not_a_bound=e.why_not_a_bound,
    )


@dataclass(frozen=True)
class TimingSection:
    """Wall-clock timing of the run (``measured`` false: compile-only or not timed)."""

    measured: bool
    ran: bool
    compile: str
    first_run: str
    step: str
    steps: int
    samples: tuple[float, ...]
    #: ``(min …, max …)`` of the samples, ``""`` without samples.
    spread: str
    #: ``(process, devices, step, live peak)`` per host of a multi-process run.
    hosts: tuple[tuple[str, str, str, str], ...]
    host_spread: str
    step_seconds: float


def timing_section(report: Report) -> TimingSection:
    t = report.timing
    hosts = tuple(host_rows(report))
    if t is None:
        return TimingSection(False, report.ran, "", "", "", 0, (), "", hosts, "", 0.0)
    samples = tuple(t.step_samples)
    spread = (
        f"min {format_seconds(min(samples))}, max {format_seconds(max(samples))}" if samples else ""
    )
    return TimingSection(
        measured=True,
        ran=report.ran,
        compile=format_seconds(t.compile_seconds),
        first_run=format_seconds(t.first_run_seconds),
        step=format_seconds(t.step_seconds),
        steps=t.steps,
        samples=samples,
        spread=spread,
        hosts=hosts,
        host_spread=host_spread(report) if report.hosts else "",
        step_seconds=t.step_seconds,
    )


@dataclass(frozen=True)
class CheckSection:
    """The check against one device (``word`` is ``not checked`` when none ran)."""

    checked: bool
    ran: bool
    word: str
    matches: bool
    reference: str
    max_abs: str
    max_rel: str
    tolerance: str
    rule: str
    #: The failing output leaf and its largest difference, in words ("" when it matches).
    failing: str = ""


def check_section(report: Report) -> CheckSection:
    c = report.check
    if c is None:
        return CheckSection(False, report.ran, check_word(report), False, "", "", "", "", "")
    return CheckSection(
        checked=True,
        ran=report.ran,
        word=check_word(report),
        matches=c.matches,
        reference=c.reference,
        max_abs=format_diff(c.max_abs_diff),
        max_rel=format_diff(c.max_rel_diff),
        tolerance=format_diff(c.tolerance),
        rule=c.tolerance_rule or "",
        failing=(
            f"{c.leaf}: largest difference {format_diff(c.leaf_diff)}, tolerance "
            f"{format_diff(c.tolerance)}"
            if c.leaf and not c.matches
            else ""
        ),
    )


@dataclass(frozen=True)
class OpRow:
    """One profiled op: its median, total (median × count) and share of the total."""

    name: str
    count: int
    median: str
    total: str
    share: float
    percent: str


@dataclass(frozen=True)
class ProfileSection:
    count: int
    illustrative: bool
    rows: tuple[OpRow, ...]
    #: Ops past :data:`MAX_OPS`, left out.
    more: int


def profile_section(report: Report) -> ProfileSection | None:
    profile = report.profile
    if profile is None:
        return None
    ranked = profile_rows(profile)
    return ProfileSection(
        count=len(profile),
        illustrative=any(op.illustrative for op in profile),
        rows=tuple(
            OpRow(
                op.name,
                op.count,
                format_seconds(op.seconds),
                format_seconds(total),
                share,
                f"{share * 100:.1f}%",
            )
            for op, total, share in ranked[:MAX_OPS]
        ),  # fmt: skip
        more=max(0, len(ranked) - MAX_OPS),
    )


# --------------------------------------------------------------------------------------------
# The whole view


@dataclass(frozen=True)
class ReportView(JsonMixin):
    """Every section of a report's views, computed once (:func:`report_view`)."""

    header: HeaderSection
    findings: FindingsView | None
    ledger: LedgerSection
    intermediates: IntermediatesSection
    memory: MemorySection
    cost: CostSection
    estimate: EstimateSection | None
    timing: TimingSection
    check: CheckSection
    profile: ProfileSection | None
    #: Host <-> device transfers (``None``: the program moves nothing to or from host).
    transfers: TransfersSection | None = None


def report_view(report: Report) -> ReportView:
    """What every view of ``report`` shows, from the report alone."""
    return ReportView(
        header=header_section(report),
        findings=section_view(report.findings),
        ledger=ledger_section(report),
        intermediates=intermediates_section(report),
        memory=memory_section(report),
        cost=cost_section(report),
        estimate=estimate_section(report),
        timing=timing_section(report),
        check=check_section(report),
        profile=profile_section(report),
        transfers=transfers_section(report),
    )
