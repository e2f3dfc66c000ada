"""A compiled sharded program as plain data: collectives, completed shardings, memory, time.

Filled in by ``shardviz.capture`` from the compiler's output (HLO text, memory and cost
analyses) and from live runs; read by the renderers and widgets. No jax import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shardviz.errors import ShardvizError, SpecError, problem
from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.array import HOST_KINDS, ArrayLayout, Spec, TreeLayout, format_spec
from shardviz.model.collective import COLLECTIVE_KINDS as COLLECTIVE_KINDS
from shardviz.model.collective import Collective as Collective
from shardviz.model.collective import CollectiveKind as CollectiveKind
from shardviz.model.collective import Frame as Frame
from shardviz.model.collective import Source as Source
from shardviz.model.collective import collective_kind_named as collective_kind_named
from shardviz.model.estimate import Estimate
from shardviz.model.findings import Findings, StopTrying, fix_trier
from shardviz.model.hardware import Target
from shardviz.model.kernels import KernelUse
from shardviz.model.mesh import MeshLayout
from shardviz.model.offload import HostTransfer, OffloadRequest
from shardviz.model.tiles import layout_from_spec
from shardviz.model.traffic import CollectiveTraffic, collective_traffic


@dataclass(frozen=True)
class ShardingOf:
    """The sharding sharding-completion chose for one value, before SPMD partitioning.

    ``spec`` is on the user's mesh axis names (``None`` when the HLO sharding maps to no
    named spec, e.g. maximal or manual). ``reshard`` is true where the value's layout differs
    from an operand's of the same rank: where the partitioner has to move data.
    """

    name: str
    op: str
    dtype: str
    shape: tuple[int, ...]
    spec: Spec | None
    hlo_sharding: str
    op_name: str = ""
    source: Source | None = None
    operands: tuple[str, ...] = ()
    reshard: bool = False

    @property
    def spec_str(self) -> str:
        return format_spec(self.spec) if self.spec is not None else self.hlo_sharding


@dataclass(frozen=True)
class LeafBytes:
    """Per-device bytes of one input leaf (the largest over devices), and the memory it
    lives in (``device``: HBM; ``pinned_host`` / ``unpinned_host``: host memory)."""

    path: str
    role: str
    bytes: int
    memory_kind: str = "device"

    @property
    def on_host(self) -> bool:
        return self.memory_kind in HOST_KINDS


@dataclass(frozen=True)
class DeviceMemory:
    """A live device's own memory statistics (GPU/TPU only; CPU reports none)."""

    device_id: int
    bytes_in_use: int
    peak_bytes_in_use: int
    bytes_limit: int | None = None


@dataclass(frozen=True)
class HostFigures:
    """One process (host) of a multi-process program, as it measured itself.

    ``devices`` are its devices' ids; ``step_seconds`` the median step it timed (every
    process runs the step; a slow host shows here); ``peak_bytes_in_use`` the largest live
    peak among its devices (GPU/TPU; ``None`` on CPU, which reports no statistics).
    """

    process: int
    devices: tuple[int, ...]
    step_seconds: float | None = None
    peak_bytes_in_use: int | None = None


def _some(names: list[str], n: int = 5) -> str:
    """The first ``n`` names quoted, ``…`` after them when there are more."""
    return ", ".join(repr(x) for x in names[:n]) + (", …" if len(names) > n else "")


#: The CPU's peak rule, as the views print it.
CPU_PEAK = "argument + output - alias + temp"
#: The CPU's with host-resident arguments and outputs taken out (the CPU compiler counts them).
CPU_PEAK_LESS_HOST = CPU_PEAK + " - host arguments and outputs"
#: The TPU's: what its buffer assignment allocates in HBM (see capture.memory.peak_rule).
TPU_PEAK = "HBM allocated by the TPU compiler's buffer assignment"
#: The GPU's when host memory is in use: its own peak also counts host buffers.
GPU_HBM_PEAK = "HBM allocated by the GPU compiler's buffer assignment"
#: Where the host figures come from: the compiler's own (TPU, GPU), or shardviz's accounting
#: from the leaves' memory kinds (CPU, whose compiler folds host bytes into its device figures).
HOST_FROM_COMPILER = "the compiler's host figures"
HOST_FROM_SHARDINGS = (
    "shardviz's accounting from the shardings' memory kinds (the CPU compiler counts host "
    "bytes as device bytes)"
)


@dataclass(frozen=True)
class MemoryReport:
    """What one device needs, from the compiler's memory analysis (the same on every device).

    ``peak_bytes`` depends on the backend, and ``peak_definition`` says which it is. On CPU it
    is ``argument + output - alias + temp`` (the CPU compiler's own peak figure, kept in
    ``compiler_peak_bytes``, leaves temp out). On TPU it is the HBM the compiler's buffer
    assignment allocates (the TPU compiler reports temp as 0, so the sum is too low, and its
    own peak also counts on-chip VMEM). On GPU it is the compiler's own peak.

    Host memory (arrays whose sharding has a host memory kind, values a remat policy
    offloads) is counted apart in the ``host_*`` fields, and :attr:`host_bytes` is their
    total; ``host_source`` says whose figures they are. On CPU the compiler counts host
    arguments and outputs as device bytes: there the host figures come from the leaves'
    memory kinds and ``peak_bytes`` leaves them out.

    TPU and GPU programs also carry the compiler's buffer assignment: ``assigned`` is the
    bytes it places in the default memory space (HBM) by role (``argument``, ``output``,
    ``temp``), and ``by_space`` the total of each memory space (``default`` is HBM; TPU also
    has on-chip ``vmem`` and ``smem``).
    """

    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    temp_bytes: int
    code_bytes: int
    peak_bytes: int
    compiler_peak_bytes: int | None = None
    peak_definition: str = CPU_PEAK
    by_leaf: tuple[LeafBytes, ...] = ()
    device_stats: tuple[DeviceMemory, ...] = ()
    assigned: tuple[tuple[str, int], ...] = ()
    by_space: tuple[tuple[str, int], ...] = ()
    host_argument_bytes: int = 0
    host_output_bytes: int = 0
    host_temp_bytes: int = 0
    host_alias_bytes: int = 0
    #: Host buffers the program allocates for itself (an offloaded scan's stacked values),
    #: counted from the compiled program: the compilers' host temp figure leaves them out.
    offloaded_bytes: int = 0
    #: :data:`HOST_FROM_COMPILER` or :data:`HOST_FROM_SHARDINGS`; ``""`` when nothing is on host.
    host_source: str = ""
    #: Input leaves kept on host by their shardings, against the compiler's host argument
    #: figure (TPU, GPU): ``""`` when they agree or there is nothing to compare.
    host_mismatch: str = ""
    #: Output leaves per device (the largest over devices), as ``by_leaf`` (role ``output``).
    out_leaves: tuple[LeafBytes, ...] = ()

    @property
    def host_bytes(self) -> int:
        """Host memory one device's program holds at once: host arguments, host outputs and
        host scratch (offloaded activations), beside :attr:`peak_bytes` in HBM."""
        return (
            self.host_argument_bytes
            + self.host_output_bytes
            - self.host_alias_bytes
            + self.host_temp_bytes
            + self.offloaded_bytes
        )


@dataclass(frozen=True)
class Loop:
    """One ``while`` loop of the compiled program (a ``scan``, ``fori_loop``, ``while_loop``,
    a remat'd or pipelined scan), as the per-step figures count it.

    ``trips``: runs of its body per run of the computation it sits in (``None``: the count
    depends on the data, or the compiler's loop has a form shardviz cannot read). ``runs``:
    runs of its body per step, the trips of it and every loop around it multiplied (``None``
    when any is unknown). ``counted_runs``: what the per-step figures count, an unknown
    count taken as one trip, so with ``runs`` unknown they are lower bounds. ``parent``: the
    loop around it (``None`` at the top level).
    """

    name: str
    body: str
    condition: str
    trips: int | None
    runs: int | None
    counted_runs: int = 1
    parent: str | None = None
    op_name: str = ""
    source: Source | None = None
    #: Whether the compiler's cost model counted its body alone, once per further run
    #: (``False``: it refused the body, so the flops and bytes accessed per step hold the
    #: body once per run of the loop around it; matmul, model flops and the ops still count
    #: every trip).
    costed: bool = True

    @property
    def known(self) -> bool:
        """Whether its runs per step are known (its own count and every enclosing one)."""
        return self.runs is not None

    @property
    def where(self) -> str:
        """``train.py:41`` (or ``In [12], line 41``): the jax code that made the loop, else its
        HLO name."""
        f = self.source.innermost if self.source is not None else None
        return f.place if f is not None else self.name


@dataclass(frozen=True)
class OpWork:
    """One op of the compiled schedule, what a predicted step time is built from.

    Per run: its matmul flops (``dot`` and ``convolution``, inside its fusion too) and the
    bytes it reads and writes in the device's main memory (HBM; on TPU, buffers the compiler
    placed in on-chip VMEM are not counted). ``runs``: how often it runs per step (its
    loops' trips multiplied). ``transfer``: an async copy (a prefetch into VMEM, an offload
    to host), which overlaps the ops scheduled while it is in flight. ``in_flight``: the
    collectives (ledger names) and transfers (op names) in flight while this op runs,
    which its time can hide.
    """

    name: str
    flops: float
    hbm_bytes: float
    runs: int = 1
    transfer: bool = False
    in_flight: tuple[str, ...] = ()
    host_bytes: float = 0.0
    #: What the op is, for grouping it by layer and module (:func:`shardviz.op_profile`): its
    #: HLO opcode, jax's ``op_name`` (the name stack, ``jit(step)/jvp(loss)/attn/dot_general``;
    #: a fused op's from the fusion), the computation it sits in (a loop body for a scanned
    #: layer) and the Python functions that made it, outermost first (``step > loss > mlp``).
    opcode: str = ""
    op_name: str = ""
    computation: str = ""
    functions: str = ""
    #: For an op the compiler named by its loop alone (a cast or copy of a scanned layer's
    #: weights): the ``op_name`` of the op its result feeds; ``functions`` are that op's.
    feeds: str = ""
    #: The part of ``flops`` whose matmuls take narrow operands, by precision
    #: (``(("fp8", 1e12),)``): those run at the chip's peak for that precision
    #: (:meth:`shardviz.model.Hardware.peak_for`); the rest at the bf16 peak.
    narrow_flops: tuple[tuple[str, float], ...] = ()

    def compute_seconds(self, peaks: Mapping[str, float]) -> float:
        """One run's matmuls on the matrix units at ``peaks`` (FLOP/s by precision, ``""``
        the bf16 peak; a precision missing from it runs at that)."""
        base = peaks[""]
        narrow = sum(f for _, f in self.narrow_flops)
        return (self.flops - narrow) / base + sum(
            f / peaks.get(p, base) for p, f in self.narrow_flops
        )


@dataclass(frozen=True)
class Cost:
    """Flops and bytes accessed per step, from the compiler's own cost model.

    Per device: the compiled per-device program. Global: the whole program before SPMD
    partitioning (what one device would do running it unsplit), so per device x devices
    above global means work the sharding repeats on several devices.

    Per step: each loop body counted as many times as it runs (``loops``), nested loops
    multiplied. The compiler's ``cost_analysis()`` counts every loop body once: its figures
    are kept as ``compiler_flops_per_device`` and ``compiler_bytes_accessed_per_device``.
    A loop whose count is unknown counts once, and :attr:`lower_bound` says so; so does a
    loop whose body the compiler's cost model refused (:attr:`uncosted_loops`: the flops and
    bytes accessed hold its body once).

    Flops two ways, as the field counts them (see ``docs``: MFU and HFU):

    - hardware flops (``flops_per_device``): what the compiler runs, every op, recomputation
      included (``jax.checkpoint``'s forward ops run again in the backward pass);
    - model flops (``model_flops_per_device``): the useful work, the matmuls (``dot`` and
      ``convolution``, 2 per multiply-add, attention's two matmuls as computed) with the
      recomputed ones counted once: 6 x active parameters x tokens plus attention. An MoE
      layer's dispatch and combine (``dispatch_flops_per_device``), the expert slots its
      capacity leaves empty and a dense grouped matmul's rows against the groups they are
      not in (``padding_flops_per_device``) are hardware flops only.
      ``matmul_flops_per_device`` is the matmuls as run, recomputation included.
    """

    flops_per_device: float | None
    bytes_accessed_per_device: float | None
    flops_global: float | None
    bytes_accessed_global: float | None
    compiler_flops_per_device: float | None = None
    compiler_bytes_accessed_per_device: float | None = None
    matmul_flops_per_device: float | None = None
    model_flops_per_device: float | None = None
    loops: tuple[Loop, ...] = ()
    ops: tuple[OpWork, ...] = field(default=(), repr=False)
    #: Matmul flops that only move data, against one-hot tensors (an embedding looked up as
    #: a matmul, ``one_hot(tokens) @ table``; an MoE layer's dispatch and combine):
    #: hardware flops, not model flops.
    dispatch_flops_per_device: float | None = None
    #: Expert matmul flops no token needs: slots no token fills (an MoE layer's capacity
    #: padding: slots ``experts x capacity``, tokens ``top_k x tokens``), and a grouped
    #: matmul (``jax.lax.ragged_dot``) computed densely, each row against every group, of
    #: which one is its own: hardware flops, not model flops.
    padding_flops_per_device: float | None = None
    #: The program's kernels (Pallas/Mosaic, Triton, other opaque custom calls) per device
    #: per step, each with how its flops were counted; their flops are in the figures above.
    kernels: tuple[KernelUse, ...] = ()

    @property
    def hardware_flops_per_device(self) -> float | None:
        """What the compiler runs per step on one device (the same as ``flops_per_device``)."""
        return self.flops_per_device

    @property
    def unknown_loops(self) -> tuple[Loop, ...]:
        """The loops whose runs per step are unknown."""
        return tuple(lp for lp in self.loops if not lp.known)

    @property
    def uncosted_loops(self) -> tuple[Loop, ...]:
        """The loops whose trips the flops and bytes accessed do not count (the compiler's
        cost model refused their body): those two figures hold each body once."""
        return tuple(lp for lp in self.loops if not lp.costed)

    @property
    def lower_bound(self) -> bool:
        """Whether the per-step figures are lower bounds (some loop's count is unknown, or
        the cost model could not count some loop's trips)."""
        return any(not lp.known or not lp.costed for lp in self.loops)

    @property
    def uncounted_kernels(self) -> tuple[KernelUse, ...]:
        """The kernels whose flops shardviz could not count: the flops, and every time
        built on them, are missing their work."""
        return tuple(k for k in self.kernels if not k.counted)

    @property
    def recomputed_flops_per_device(self) -> float | None:
        """The matmul flops ``jax.checkpoint`` runs a second time, per step."""
        if self.matmul_flops_per_device is None or self.model_flops_per_device is None:
            return None
        moved = (self.dispatch_flops_per_device or 0.0) + (self.padding_flops_per_device or 0.0)
        return self.matmul_flops_per_device - self.model_flops_per_device - moved


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds: compile, first run, and the steady-state step (median, warm-up out)."""

    compile_seconds: float
    first_run_seconds: float
    step_seconds: float
    steps: int
    step_samples: tuple[float, ...] = ()


@dataclass(frozen=True)
class Check:
    """The sharded outputs against an unsharded single-device run of the same function."""

    max_abs_diff: float
    max_rel_diff: float
    tolerance: float
    matches: bool
    reference: str = "one device, no sharding"
    #: The tolerance's rule for the leaf closest to failing, e.g. ``int32: exact`` or
    #: ``bfloat16: 0.02 x max(1, |reference|)``.
    tolerance_rule: str = ""
    #: The output leaf closest to failing (the one that fails, when the check does), by its
    #: path (``out/0/w1``), and its largest difference.
    leaf: str = ""
    leaf_diff: float = 0.0


@dataclass(frozen=True)
class OpTiming:
    """Measured duration of one HLO op in a profiled run (median over its occurrences)."""

    name: str
    seconds: float
    count: int
    illustrative: bool


@dataclass(frozen=True)
class OpEvent:
    """One HLO op as one device ran it in a profiled step: when it started (seconds after the
    step's first op on any device) and how long it took; the timeline draws these."""

    device: int
    name: str
    start: float
    seconds: float


@dataclass(frozen=True, repr=False)  # one line: see display.Shown._repr_pretty_
class Report(JsonMixin, display.Shown):
    """What the compiler did with the user's partition specs, and what the live run showed."""

    function: str
    platform: str
    mesh: MeshLayout | None
    arguments: TreeLayout
    outputs: TreeLayout
    collectives: tuple[Collective, ...]
    intermediates: tuple[ShardingOf, ...]
    memory: MemoryReport
    cost: Cost | None = None
    timing: Timing | None = None
    check: Check | None = None
    profile: tuple[OpTiming, ...] | None = None
    ran: bool = False
    notes: tuple[str, ...] = ()
    # The hardware estimates are made for, and the estimate (None when no target is known).
    target: Target | None = None
    estimate: Estimate | None = None
    #: Compiled for devices that are not here (a deviceless :func:`~shardviz.topology`):
    #: nothing can run, and the views say what it was compiled for.
    deviceless: bool = False
    #: Every op of one profiled step, per device (None without ``profile=True``).
    timeline: tuple[OpEvent, ...] | None = None
    #: Each process's own step time and live memory, gathered from all of them (empty for a
    #: single-process program, or when the step did not run).
    hosts: tuple[HostFigures, ...] = ()
    #: What shardviz found wrong, each fix tried by compiling again (None: not diagnosed,
    #: e.g. a report built by hand; :func:`shardviz.analysis.detect` then looks).
    findings: Findings | None = None
    #: The copies between HBM and host memory the compiler scheduled, per device (TPU, GPU;
    #: the CPU keeps one memory and moves nothing).
    host_transfers: tuple[HostTransfer, ...] = ()
    #: The values the program asked to keep in host memory (offloads and host outputs).
    offload_requests: tuple[OffloadRequest, ...] = ()

    def collectives_of(self, kind: str | None = None, axes: tuple[str, ...] | None = None):
        """The ledger filtered by kind and/or exact axes."""
        return tuple(
            c
            for c in self.collectives
            if (kind is None or c.kind == kind) and (axes is None or c.axes == axes)
        )

    @property
    def reshards(self) -> tuple[ShardingOf, ...]:
        return tuple(s for s in self.intermediates if s.reshard)

    def _find_intermediate(self, which: str | int, where: str) -> ShardingOf:
        """The intermediate named ``which`` (the first, if repeated) or at position ``which``.

        Raises:
            ShardvizError: none is; the message lists some that are.
        """
        names = [s.name for s in self.intermediates]
        if isinstance(which, int) and not isinstance(which, bool):
            if -len(names) <= which < len(names):
                return self.intermediates[which]
            what = f"{self.function} has no intermediate at position {which}"
        else:
            for s in self.intermediates:
                if s.name == which:
                    return s
            what = f"{self.function} has no intermediate named {which!r}"
        raise ShardvizError(
            problem(
                where,
                what
                + (f" (it has {len(names)}: {_some(names)})" if names else " (it records none)"),
                "pass a name listed under Intermediates, or a position in "
                "report.intermediates (0 first)",
            )
        )

    def intermediate_layout(self, which: str | int) -> ArrayLayout:
        """The tiles of an intermediate value, computed from the spec the compiler chose for it.

        The same :class:`~shardviz.model.ArrayLayout` :func:`shardviz.layout` gives for a real
        array, so ``print()`` and the notebook draw it like one.

        Args:
            which: the value's name as the report lists it, or its position in
                :attr:`intermediates`.

        Raises:
            ShardvizError: no intermediate is called ``which``.
            SpecError: the value has no named spec (manual or unknown to the mesh), the report
                has no mesh, or the spec or dtype does not fit it.
        """
        where = f"report.intermediate_layout({which!r})"
        s = self._find_intermediate(which, where)
        if s.spec is None:
            named = [v.name for v in self.intermediates if v.spec is not None]
            raise SpecError(
                problem(
                    where,
                    f"{s.name!r} has no named spec (the compiler's sharding is "
                    f"{s.hlo_sharding or 'unknown'}), so its tiles are unknown; a manual "
                    "(shard_map) value is split by the code inside, not by a spec",
                    "pick a value whose spec is a P(...)"
                    + (f", e.g. {_some(named)}" if named else " (this report has none)"),
                )
            )
        if self.mesh is None:
            raise SpecError(
                problem(
                    where,
                    f"the report has no mesh to place {s.name!r} on",
                    "compile the function under a mesh to see how its values are split",
                )
            )
        try:
            return layout_from_spec(s.name, s.shape, s.dtype, s.spec, self.mesh)
        except ValueError as err:
            raise SpecError(
                problem(
                    where, f"cannot place {s.name!r}: {err}", "check the value's spec and dtype"
                )
            ) from err

    def try_fixes(self, stop: StopTrying | None = None) -> Report:
        """This report with each finding's fix tried: applied to the program, compiled again
        (compile-only) and offered only if it helps, timed on the report's target if it has
        one. Returns a new report (this one is left as it is); one with no fix left to try
        comes back as it is.

        ``sv.explain`` leaves the fixes untried, since each costs a compile;
        ``sv.diagnose`` tries them.

        Args:
            stop: asked before each trial compile; once it returns True the trying ends
                there (a compile in progress cannot be interrupted) and this report comes
                back as it is, its fixes still untried. For background work whose result
                nobody will see any more (the Explorer, once the user edits again).

        Raises:
            ShardvizError: the program the fixes apply to is no longer kept in this process
                (a report loaded from JSON, or explained long ago): explain it again.
        """
        if self.findings is None or not self.findings.pending:
            return self
        result: Report = fix_trier()(self, stop=stop)
        return result

    def traffic(
        self, which: str | int, axes: str | tuple[str, ...] | None = None
    ) -> CollectiveTraffic:
        """Who sends what to whom in one collective of the ledger, to print or draw on the mesh.

        Args:
            which: a kind (``"all-to-all"``: the first of that kind in program order), a
                collective's name as the ledger lists it, or a position in
                :attr:`collectives` (0 first).
            axes: with a kind, only collectives over exactly these mesh axes.

        Returns:
            A :class:`~shardviz.model.traffic.CollectiveTraffic`: ``print()`` lists each
            group's links, a notebook draws them as arrows on the mesh.

        Raises:
            ShardvizError: no collective is ``which``; the message lists what the ledger has.
        """
        return collective_traffic(self, which, axes)
