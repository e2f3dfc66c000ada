"""Lower and compile a function once, keeping what the compiler says about sharding.

The propagation dump (the module after sharding completion, before SPMD partitioning) is
asked for per call through compiler options: no environment variable, no restart. Its
temporary folder is always removed (at the latest when the interpreter exits), and a Ctrl-C
during a compile is raised once it returns (:mod:`.interrupts`).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jax

from shardviz.capture.dump_watch import PARTITIONED, PROPAGATED, DumpWatch, Stage, read_dump
from shardviz.capture.hlo import compiler_log as native_log
from shardviz.capture.hlo.compiler_log import compiler_log
from shardviz.capture.hlo.kernels import KernelTable
from shardviz.capture.hlo.text import HloModule, parse_hlo_module
from shardviz.capture.interrupts import interrupts_deferred
from shardviz.capture.jax_compat import cpu_final_dump
from shardviz.capture.kernel_costs import kernel_table
from shardviz.capture.remat_offload import PolicyNames, policy_names
from shardviz.capture.xla_flags import current_flags
from shardviz.errors import CompileError, problem

# The module between sharding completion and the SPMD partitioner: XLA dumps a pipeline's
# module between two passes when either name matches, so naming the partitioner's pass gets
# it whichever pass completed the shardings (Shardy's ``shardy-xla`` or GSPMD's). Not naming
# ``shardy-xla`` also keeps Shardy from writing its five MLIR dumps (~3 ms a compile).
# Text only: it carries the shardings and source lines, and loading it back into an HLO module
# for the global cost is ~15x cheaper than ``lowered.cost_analysis()`` (which converts the whole
# MLIR module again). Asking for protos as well would cost every compile ~1.5 ms more.
# The TPU compiler names its partitioner ``tpu-spmd-partitioning``.
_DUMP_OPTIONS = {
    "xla_dump_hlo_pass_re": "^(tpu-)?spmd-partitioning$",
    "xla_dump_hlo_as_text": True,
}


def scratch_dir() -> str | None:
    """Where the dump goes: a memory-backed folder when the system has one.

    XLA writes ~40 files per compile while dumping (kernels' LLVM IR and objects included);
    creating and removing them on a disk costs ~2 ms a compile, on tmpfs ~0.3 ms.
    ``None`` means the system's temporary folder.
    """
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return None


#: Dump folders made by this process and not yet removed: removed at exit, when a compile
#: that outlived its folder (one stopped by a second Ctrl-C) wrote it again.
_LEFT: set[str] = set()


@contextmanager
def dump_folder() -> Iterator[str]:
    """A new folder in :func:`scratch_dir` for one compile's dump, removed when the block ends
    however it ends (an error, a ``KeyboardInterrupt``), else at the interpreter's exit."""
    path = tempfile.mkdtemp(prefix="shardviz-dump-", dir=scratch_dir())
    _LEFT.add(path)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            _LEFT.discard(path)


@atexit.register
def _remove_left() -> None:
    for path in list(_LEFT):
        shutil.rmtree(path, ignore_errors=True)


# The compiler's final module as it dumps it, by platform (see lower_and_compile): the TPU's
# after codegen; on jax 0.10, the CPU's after its HLO passes (before LLVM compiles the
# kernels, about a fifth of the way into a CPU compile: see jax_compat.cpu_final_dump).
_FINAL = {"tpu": "*after_codegen.txt"}
if (_CPU_FINAL := cpu_final_dump()) is not None:  # jax 0.10: the CPU's dump is its program
    _FINAL["cpu"] = _CPU_FINAL
# The module as jax gave it: the only one that still shows what was asked for host memory.
_BEFORE_OPTIMIZATIONS = "*before_optimizations.txt"


@dataclass(frozen=True)
class EarlyWork:
    """Work on the dumps that may run on a thread during the compile (see
    :mod:`.dump_watch`): on the (propagated, partitioned) texts, and on the final module
    once parsed (TPU and CPU): its reading (``final``) and its per-op cost (``cost``: the
    module, its text and the kernels counted at trace time)."""

    shardings: Callable[[str, str], Any] | None = None
    final: Callable[[HloModule], Any] | None = None
    cost: Callable[[HloModule, str, Any], Any] | None = None


@dataclass(frozen=True)
class EarlyResults:
    """What :class:`EarlyWork` gave, ``None`` where it did not run on the final texts."""

    shardings: Any = None
    final: Any = None
    cost: Any = None


@dataclass
class Compiled:
    """A compiled program and the texts shardviz reads from it."""

    #: ``None`` for a program jax had compiled already (:func:`read_compiled`).
    lowered: Any
    compiled: Any
    hlo_text: str
    propagated_text: str
    lower_seconds: float
    compile_seconds: float
    #: TPU/GPU only: the partitioned module (before the backend's optimizations rewrite and
    #: fuse its collectives) and the buffer assignment's reports, by kind ("" if absent).
    partitioned_text: str = ""
    buffer_assignment: str = ""
    memory_usage_report: str = ""
    #: What the compiler wrote to stderr (fd 2) while compiling: its C++ log lines.
    compiler_log: str = ""
    #: The module before the compiler's passes, kept only when it asks for host memory
    #: (``annotate_device_placement`` calls: offloads and host outputs), else "".
    before_optimizations: str = ""
    #: The remat policies' offload names and the names the program tags (from the jaxpr).
    policies: PolicyNames = field(default_factory=PolicyNames)
    #: Each Pallas kernel call's count per call, made from the traced program
    #: (:mod:`.kernel_costs`); ``None`` where shardviz saw no trace of it.
    kernels: KernelTable | None = None
    #: What ``early`` (see :func:`lower_and_compile`) made of the dumps while the compiler
    #: ran, by stage (``None`` for a stage that did not finish on the final texts).
    early: EarlyResults = field(default_factory=lambda: EarlyResults(), repr=False)
    #: Kept by explain: (repr of a target, id of a report) -> (that report on the target,
    #: the report), so a repeated explain is served without estimating again.
    on_target: dict[tuple[str, int], tuple[Any, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _module: HloModule | None = field(default=None, repr=False, compare=False)

    def module(self) -> HloModule:
        """The final module, parsed once: the ledger and the loop trip counts both read it
        (on a 256-chip TPU program one parse is ~30 ms)."""
        if self._module is None:
            self._module = parse_hlo_module(self.hlo_text)
        return self._module


def _describe(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(err).__name__}: {first[:400]}"


def lower_and_compile(
    jitted: Any,
    args: tuple,
    kwargs: dict,
    fn_name: str,
    early: Callable[[Any], EarlyWork | None] | None = None,
) -> Compiled:
    """``jitted.lower(*args, **kwargs).compile()`` with the propagation dump captured.

    ``jitted`` may also be a stage a framework made, a ``jax.stages.Traced`` or ``Lowered``:
    it is compiled again here, with the dump options (see :func:`_traced_and_lowered`).

    While the compiler runs, a thread reads its dumps as they come (see :mod:`.dump_watch`):
    the TPU's final module is parsed, and ``early(lowered)`` may give more work; the results
    are kept in :attr:`Compiled.early`.

    Raises:
        CompileError: tracing or compiling failed; the message names the function and the
            cause (e.g. a sharding that does not fit, an op that cannot be partitioned).
    """
    with interrupts_deferred():  # Ctrl-C between compiles, never inside one
        return _lower_and_compile(jitted, args, kwargs, fn_name, early)


def _lower_and_compile(
    jitted: Any,
    args: tuple,
    kwargs: dict,
    fn_name: str,
    early: Callable[[Any], EarlyWork | None] | None,
) -> Compiled:
    t0 = time.perf_counter()
    try:
        traced, lowered = _traced_and_lowered(jitted, args, kwargs)
    except Exception as err:  # tracing runs user code: anything can come out of it
        raise CompileError(
            problem(
                f"function {fn_name!r}",
                f"it failed to trace with these arguments ({_describe(err)})",
                "call the function once without shardviz to see the full error; check the "
                "argument shapes and any sharding constraints inside it",
            )
        ) from err
    # The traced program (None when unreachable: a Lowered given as it is keeps no jaxpr).
    closed_jaxpr = traced.jaxpr if traced is not None else None
    t1 = time.perf_counter()
    kernels = _kernels(traced, args, kwargs)  # from the trace: the thread's cost uses them
    with dump_folder() as dump:
        work = (early(lowered) if early is not None else None) or EarlyWork()
        stages = _stages(lowered, work, kernels)
        watch = (
            DumpWatch(dump, [s for _, s in stages], _yields(lowered)).start() if stages else None
        )
        try:
            try:
                with compiler_log() as log:
                    compiled = lowered.compile(
                        compiler_options={**current_flags(), "xla_dump_to": dump, **_DUMP_OPTIONS}
                    )
            except Exception as err:
                raise _rejected(fn_name, err) from err
            t2 = time.perf_counter()
            # Each dumped file is read once: for the program's texts and to check the thread's.
            read = functools.cache(lambda pattern: read_dump(dump, pattern))
            done = (
                dict(zip((k for k, _ in stages), watch.finish(read), strict=True)) if watch else {}
            )
            propagated = read(PROPAGATED)
            # The CPU's final module keeps every collective's metadata and its buffer figures
            # are in memory_analysis; only TPU and GPU programs need the rest (and reading it
            # would slow every CPU compile).
            platform = program_platform(compiled)
            accelerator = platform != "cpu"
            extra = {
                "partitioned_text": PARTITIONED,
                "buffer_assignment": "*after_optimizations-buffer-assignment.txt",
                "memory_usage_report": "*after_optimizations-memory-usage-report.txt",
            }
            texts = {k: read(p) for k, p in extra.items()} if accelerator else {}
            # The final module as dumped: the TPU's after codegen is as_text()'s program with
            # its stack-frame table numbered in another order and async ops in their generic
            # form (``async-start``, ``calls=``), read in ~1 ms instead of ~45 ms on 256
            # chips; the CPU's is written before LLVM's part of the compile, so the thread
            # reads it (ledger, reasons) while the kernels compile.
            final = read(_FINAL[platform]) if platform in _FINAL else ""
            before = read(_BEFORE_OPTIMIZATIONS)
            if "annotate_device_placement" not in before:
                before = ""
        finally:
            if watch is not None:
                watch.finish()  # the thread may still be reading the folder
    module, final_result, cost = done.get("final") or (None, None, None)
    return Compiled(
        lowered=lowered,
        compiled=compiled,
        hlo_text=final or compiled.as_text(),
        propagated_text=propagated,
        lower_seconds=t1 - t0,
        compile_seconds=t2 - t1,
        early=EarlyResults(shardings=done.get("shardings"), final=final_result, cost=cost),
        compiler_log=log.text,
        before_optimizations=before,
        policies=policy_names(closed_jaxpr.jaxpr) if closed_jaxpr is not None else PolicyNames(),
        kernels=kernels,
        _module=module if final else None,
        **texts,
    )


def _kernels(traced: Any, args: tuple, kwargs: dict) -> KernelTable | None:
    """The program's kernels counted from its trace, with the arguments' values where they
    are concrete (a paged kernel's lengths); ``None`` without a trace."""
    if traced is None:
        return None
    closed = traced.jaxpr
    flat = jax.tree.leaves((args, kwargs))
    known = flat if len(flat) == len(closed.jaxpr.invars) else None
    try:
        return kernel_table(closed, known)
    except Exception:  # a kernel form the count does not know: named as not counted
        return {}


def _traced_and_lowered(jitted: Any, args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """The traced program (``None`` where jax cannot give it) and the lowered one.

    ``jitted`` is a jitted function (traced on ``args`` first where jax allows it: the jaxpr
    shows the remat policies' offloads), or a stage a framework made: a ``jax.stages.Traced``
    (lowered here) or ``Lowered`` (as it is; ``args`` unused).
    """
    if isinstance(jitted, jax.stages.Lowered):
        return None, jitted
    if isinstance(jitted, jax.stages.Traced):
        return jitted, jitted.lower()
    traced = jitted.trace(*args, **kwargs) if hasattr(jitted, "trace") else None
    return traced, traced.lower() if traced is not None else jitted.lower(*args, **kwargs)


def read_compiled(compiled: Any) -> Compiled:
    """A program jax compiled already (a ``jax.stages.Compiled``), read as it is.

    A Compiled keeps no link to its Lowered (jax 0.10: its executable holds the final
    module only), and compiling is where the dumps are written, so what comes only from them
    is missing: the propagation dump (intermediate shardings, the collectives' reasons, the
    global cost), the partitioned module and buffer assignment (TPU/GPU), the compiler's log
    and the module before optimizations. The final module, ``memory_analysis`` and
    ``cost_analysis`` are the program's own. No jaxpr either (no remat policies read).
    """
    return Compiled(
        lowered=None,
        compiled=compiled,
        hlo_text=compiled.as_text() or "",
        propagated_text="",
        lower_seconds=0.0,
        compile_seconds=0.0,
    )


def _rejected(fn_name: str, err: Exception) -> CompileError:
    """The error to raise when the compiler refused the program."""
    if "No such compile option" in str(err):  # a flag of sv.xla_flags this compiler lacks
        return CompileError(
            problem(
                f"function {fn_name!r}",
                f"this compiler does not know an XLA flag given to it: {_describe(err)}",
                "remove that flag from sv.xla_flags(...) (sv.known_flags sorts a recipe's "
                "flags into the ones this compiler takes and the rest)",
            )
        )
    if "ScopedVmemOom" in str(err):  # a kernel's on-chip scratch, not the arrays in HBM
        return CompileError(
            problem(
                f"function {fn_name!r}",
                f"a kernel's blocks do not fit in the chip's scoped VMEM: {_describe(err)}",
                "use smaller kernel blocks (e.g. splash attention's block sizes), or raise "
                "the compiler's limit before jax starts libtpu (LIBTPU_INIT_ARGS="
                "--xla_tpu_scoped_vmem_limit_kib=N, as MaxText's recipes do)",
            )
        )
    if "RESOURCE_EXHAUSTED" in str(err):  # TPU/GPU compilers refuse what will not fit
        return CompileError(
            problem(
                f"function {fn_name!r}",
                f"it does not fit on a device: {_describe(err)}",
                "split the largest arguments over more devices (ZeRO-3/FSDP, tensor "
                "parallelism), use a smaller batch, or plan on a chip with more memory",
            )
        )
    return CompileError(
        problem(
            f"function {fn_name!r}",
            f"the compiler rejected it ({_describe(err)})",
            "check that every argument's sharding uses the same mesh and that the "
            "partition specs fit the shapes",
        )
    )


def _platform(lowered: Any) -> str:
    """The backend jax compiles ``lowered`` for (a deviceless topology's is TPU or GPU)."""
    try:
        return str(lowered._lowering.compile_args["backend"].platform)
    except Exception:
        return ""


def _yields(lowered: Any) -> bool:
    """Whether the reading during the compile yields the cores to it (:class:`DumpWatch`):
    on CPU, where XLA compiles the kernels on a pool as wide as the machine, the reading is
    small beside what is left and fits the idle moments (benchmarks/explain.py, Megatron on
    8 CPU devices: 1.11x the bare compile against 1.20x; data parallel unchanged, 1.07x);
    not for a TPU compile, whose compiler keeps the cores busy to the end, so reading at a
    lower priority would wait for it and then run alone (the MoE on v5p: 1.26x against
    1.11x)."""
    return _platform(lowered) == "cpu"


def _stages(lowered: Any, work: EarlyWork, kernels: Any = None) -> list[tuple[str, Stage]]:
    """The reading to do during the compile, by name (``kernels``: counted at trace time)."""
    stages: list[tuple[str, Stage]] = []
    if work.shardings is not None:
        stages.append(("shardings", ((PROPAGATED, PARTITIONED), work.shardings)))
    platform = _platform(lowered)
    if platform in _FINAL:

        def final(text: str) -> tuple[HloModule, Any, Any]:
            module = parse_hlo_module(text)
            read = work.final(module) if work.final is not None else None
            cost = work.cost(module, text, kernels) if work.cost is not None else None
            return module, read, cost

        stages.append(("final", ((_FINAL[platform],), final)))
    return stages


def program_devices(compiled: Any) -> list[Any]:
    """The jax devices a compiled program is for (its device assignment)."""
    for sharding in jax.tree.leaves(compiled.input_shardings) + jax.tree.leaves(
        compiled.output_shardings
    ):
        assignment = getattr(sharding, "_device_assignment", None)
        if assignment:
            return list(assignment)
    return [jax.devices()[0]]


def is_compile_only(device: Any) -> bool:
    """Whether a jax device exists only to compile for (a deviceless topology's)."""
    client = getattr(device, "client", None)
    return type(client).__name__ == "CompileOnlyPyClient"


def program_platform(compiled: Any) -> str:
    """``cpu``, ``gpu`` or ``tpu``: the backend the program was compiled for (a deviceless
    TPU program compiles for TPU while jax's default backend is the CPU)."""
    return platform_of(program_devices(compiled)[0])


def platform_of(device: Any) -> str:
    """``cpu``, ``gpu`` or ``tpu`` for a jax device (CUDA and ROCm devices are ``gpu``)."""
    platform = str(device.platform)
    return "gpu" if platform in ("cuda", "rocm") else platform


def text_cost(hlo_text: str) -> dict | None:
    """XLA's cost analysis of an HLO module given as text (None if jaxlib refuses it).

    The analysis counts flops and bytes of the HLO ops themselves, so jax's default (CPU)
    backend gives the same figures for a module compiled for TPU or GPU.
    """
    try:  # JAX 0.10: these live in jaxlib's private extensions
        from jax._src import xla_bridge
        from jax._src.lib import _jax
        from jaxlib import _hlo  # type: ignore[attr-defined]

        # The parser's warnings go to the terminal, not a cell (the module's own function:
        # `compiler_log` here is the compile's, which tests hook to see each compile). On the
        # dump thread, fd 2 is the running compile's copy already: not waited for.
        with native_log.compiler_log(wait=False):
            hlo_module = _hlo.hlo_module_from_text(hlo_text)
            backend = xla_bridge.get_backend(jax.default_backend())
            return dict(_jax.hlo_module_cost_analysis(backend, hlo_module))
    except Exception:  # private API moved or backend refused: take the slow path
        return None


def per_device_cost(comp: Compiled) -> dict | None:
    """Cost analysis of the compiled per-device program.

    The GPU compiler gives none for a deviceless compile: then XLA's cost model is run on
    the final module's text (after the backend's fusions, as the TPU's own figure is: the
    partitioned module before fusion counted every intermediate's bytes, 1.8x too many on a
    two-layer MLP step for 8 H100s).
    """
    try:
        cost = comp.compiled.cost_analysis()
    except Exception:  # some backends raise instead of returning None
        cost = None
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else None
    if isinstance(cost, dict) and cost:
        return cost
    return text_cost(comp.hlo_text) if comp.hlo_text else None


def global_cost(comp: Compiled) -> dict | None:
    """Cost analysis of the whole (unpartitioned) program, from the dumped module.

    Falls back to ``lowered.cost_analysis()`` when there is no dump or jaxlib's private
    helpers moved; ``None`` when the backend gives neither.
    """
    if comp.propagated_text:
        cost = text_cost(comp.propagated_text)
        if cost is not None:
            return cost
    try:
        cost = comp.lowered.cost_analysis()
    except Exception:
        return None
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else None
    return cost if isinstance(cost, dict) else None


def device_order(compiled: Any) -> list[int]:
    """jax device ids in the compiled program's order: HLO's logical id p is entry p."""
    return [int(d.id) for d in program_devices(compiled)]
