"""Plans compiled ahead and shipped with shardviz, for compares that take minutes of CPU.

A deviceless compare of a published model at full size (Llama 3.1 8B on a v5e pod, notebook
11) spends minutes in the TPU compiler on a laptop's CPU. ``benchmarks/plans.py`` (``make
plans``) runs that compare for real and stores what it returned, the
:class:`~shardviz.model.compare.Comparison`, beside the call that made it and the versions of
jax, jaxlib and libtpu that compiled it (``shardviz/strategies/plans/*.json.gz``).
:func:`compare_shipped` gives that stored result when the call and the versions match, and
compiles here otherwise (or always, with ``live=True``), saying which in the comparison's
notes. Nothing is hard-coded: a stored plan is only ever what :func:`write_plan` wrote from a
live compile, and the tests compile a reduced call both ways and compare.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
import resource
import sysconfig
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from shardviz.errors import FileError, problem
from shardviz.model.compare import Comparison
from shardviz.model.units import format_seconds

#: Where the shipped plans live (package data).
PLAN_DIR = Path(__file__).with_name("plans")
#: The layout of a plan file; a file of another format is not read.
FORMAT = 1
#: The packages whose versions decide what the compiler produced.
VERSIONED = ("jax", "jaxlib", "libtpu")


@dataclass(frozen=True)
class PlanCall:
    """A compare call, as the file records it: the model's name, the strategies, the target's
    name and the sizes, in a canonical order (what a stored plan must match)."""

    model: str
    strategies: tuple[str, ...]
    target: str | tuple[str, ...]
    sizes: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, model: str, strategies: Any, target: Any, **sizes: Any) -> PlanCall:
        """The call ``compare(model, strategies, target=target, **sizes)``; ``target`` one
        name or several."""
        t = target if isinstance(target, str) else tuple(target)
        return cls(model, tuple(strategies), t, tuple(sorted(sizes.items())))

    @property
    def targets(self) -> list[str]:
        return [self.target] if isinstance(self.target, str) else list(self.target)

    @property
    def file_name(self) -> str:
        """``llama3.1-8b_fsdp_v5e-16x16_batch_per_device-1_seq-4096.json.gz``."""
        parts = [self.model, "+".join(self.strategies), "+".join(self.targets)]
        parts += [f"{k}-{v}" for k, v in self.sizes]
        return re.sub(r"[^\w.+-]", "-", "_".join(parts)) + ".json.gz"

    def to_data(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "strategies": list(self.strategies),
            "target": self.target if isinstance(self.target, str) else list(self.target),
            "sizes": dict(self.sizes),
        }


#: Notebook 11's transformer: a one-million-token vocabulary, 1.08 billion parameters.
TRANSFORMER_1B = dict(vocab=2**20, d_model=512, heads=16, d_ff=2048, layers=2, seq=128, batch=256)
#: Notebook 11's section 4: ZeRO-1 and FSDP of that transformer on a v5e pod and on two H100
#: hosts (four compiles, a minute and a half of CPU).
POD_AND_GPUS = PlanCall.of(
    "transformer", ["zero1", "zero3"], ("v5e:16x16", "h100:2x8"), **TRANSFORMER_1B
)
#: Notebook 11's Llama 3.1 8B under FSDP on a v5e pod, one 4096-token sequence per chip.
LLAMA_ON_POD = PlanCall.of("llama3.1-8b", ["fsdp"], "v5e:16x16", batch_per_device=1, seq=4096)
#: The plans ``make plans`` writes and the package ships.
SHIPPED: tuple[PlanCall, ...] = (POD_AND_GPUS, LLAMA_ON_POD)
#: Paths inside the package are stored relative to it, under this mark, and read back as
#: paths of the package where it is installed (so sources still show their lines); so are
#: paths in site-packages (optax's update, in a step's sources) and beside the package.
PACKAGE_MARK = "<shardviz>"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
MARKS: tuple[tuple[str, str], ...] = (
    ("<site-packages>", sysconfig.get_paths()["purelib"]),
    (PACKAGE_MARK, str(PACKAGE_ROOT)),
    ("<beside-shardviz>", str(PACKAGE_ROOT.parent)),
)


def marked(text: str) -> str:
    """JSON text with this machine's paths (:data:`MARKS`) replaced by their marks."""
    for mark, path in MARKS:
        text = text.replace(json.dumps(path)[1:-1], mark)
    return text


def unmarked(text: str) -> str:
    """JSON text with the marks of :func:`marked` turned into this machine's paths."""
    for mark, path in MARKS:
        text = text.replace(mark, json.dumps(path)[1:-1])
    return text


@dataclass(frozen=True)
class ShippedPlan:
    """A plan file read back: the call, the versions that compiled it, when, the CPU and wall
    seconds the compile took where it was made, and the comparison it returned."""

    call: PlanCall
    versions: dict[str, str]
    made: str
    cpu_seconds: float
    wall_seconds: float
    comparison: Comparison

    @property
    def note(self) -> str:
        """One line for the comparison's notes: where the result came from."""
        v = ", ".join(f"{k} {self.versions[k]}" for k in VERSIONED if self.versions.get(k))
        return (
            f"shipped plan: compiled ahead ({v}; {format_seconds(self.cpu_seconds)} of CPU), "
            "read from the package; live=True compiles it here"
        )


def installed_versions() -> dict[str, str]:
    """The installed versions of :data:`VERSIONED` (``""`` for one not installed)."""
    out = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = ""
    return out


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def compile_live(call: PlanCall, **options: Any) -> tuple[Comparison, float, float]:
    """Run the compare ``call`` describes here: the comparison, and the CPU and wall seconds
    it took (``options`` go to :func:`~shardviz.strategies.runner.compare` as they are:
    ``progress``, not recorded)."""
    from shardviz.strategies.runner import compare

    cpu, wall = _cpu_seconds(), time.perf_counter()
    target = call.target if isinstance(call.target, str) else list(call.target)
    result = compare(
        call.model, list(call.strategies), target=target, **dict(call.sizes), **options
    )
    return result, _cpu_seconds() - cpu, time.perf_counter() - wall


def write_plan(call: PlanCall, directory: Path = PLAN_DIR, **options: Any) -> Path:
    """Compile ``call`` live and store what it returned, with the call, the versions and the
    seconds it took, as ``directory / call.file_name`` (gzipped JSON)."""
    comparison, cpu, wall = compile_live(call, **options)
    record = {
        "format": FORMAT,
        "call": call.to_data(),
        "versions": installed_versions(),
        "made": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu_seconds": round(cpu, 1),
        "wall_seconds": round(wall, 1),
        "comparison": json.loads(marked(comparison.to_json())),
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / call.file_name
    # mtime=0: the same plan gives the same bytes
    path.write_bytes(gzip.compress(json.dumps(record, sort_keys=True).encode(), mtime=0))
    return path


def read_plan(path: Path) -> ShippedPlan:
    """A plan file read back (any call, any versions); the same file (path, size and time
    unchanged) is read once (seconds for a large comparison).

    Raises:
        FileError: the file is missing, not a plan, or of another format.
    """
    try:
        st = path.stat()
    except OSError as err:
        raise FileError(
            problem(f"the shipped plan {path.name}", f"it could not be read ({err})", "make plans")
        ) from err
    return _read_plan(path, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _read_plan(path: Path, size: int, mtime_ns: int) -> ShippedPlan:
    where = f"the shipped plan {path.name}"
    try:
        record = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, EOFError, ValueError) as err:
        raise FileError(
            problem(where, f"it could not be read ({err})", "make plans writes it again")
        ) from err
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise FileError(
            problem(
                where,
                f"it is not a plan of format {FORMAT}",
                "make plans writes it again with this shardviz",
            )
        )
    c = record["call"]
    call = PlanCall.of(c["model"], c["strategies"], c["target"], **c["sizes"])
    comparison = Comparison.from_json(unmarked(json.dumps(record["comparison"])))
    return ShippedPlan(
        call,
        {str(k): str(v) for k, v in record["versions"].items()},
        str(record["made"]),
        float(record["cpu_seconds"]),
        float(record["wall_seconds"]),
        comparison,
    )


def shipped_plan(call: PlanCall, directory: Path = PLAN_DIR) -> tuple[ShippedPlan | None, str]:
    """The stored plan for ``call`` when one exists for this call and these versions, else
    ``None``; and, when ``None``, why not (in words)."""
    path = directory / call.file_name
    if not path.is_file():
        return None, "no plan is shipped for this call"
    plan = read_plan(path)
    if plan.call != call:
        return None, "the shipped plan was made for another call"
    mine = installed_versions()
    differ = [k for k in VERSIONED if plan.versions.get(k, "") != mine[k]]
    if differ:
        said = "; ".join(
            f"{k} {plan.versions.get(k) or 'none'} there, {mine[k] or 'none'} here" for k in differ
        )
        return None, f"the shipped plan was compiled by other versions ({said})"
    return plan, ""


def compare_shipped(
    model: str,
    strategies: Any,
    *,
    target: str | list[str],
    live: bool = False,
    directory: Path = PLAN_DIR,
    **sizes: Any,
) -> Comparison:
    """``compare(model, strategies, target=target, **sizes)``, read from the plan shipped
    with shardviz when one matches the call and the installed jax, jaxlib and libtpu, else
    compiled here (and always with ``live=True``). The comparison's last note says which.

    Args:
        model: a zoo name (``"llama3.1-8b"``).
        strategies: strategy names.
        target: a topology's name (``"v5e:16x16"``), or several (results side by side).
        live: compile here even when a shipped plan matches (minutes for a full-size model).
        directory: where plans are looked for (the package's own by default).
        sizes: the sizes the compare takes (``batch_per_device=1, seq=4096``).
    """
    call = PlanCall.of(model, strategies, target, **sizes)
    why = "live=True"
    if not live:
        plan, why = shipped_plan(call, directory)
        if plan is not None:
            c = plan.comparison
            return replace(c, notes=(*c.notes, plan.note))
    comparison, cpu, _ = compile_live(call)
    note = f"compiled here ({why}): {format_seconds(cpu)} of CPU"
    return replace(comparison, notes=(*comparison.notes, note))


def plan_files(directory: Path = PLAN_DIR) -> list[Path]:
    """The plan files in ``directory``, by name."""
    if not directory.is_dir():
        raise FileError(problem(f"the plans in {directory}", "no such folder", "make plans"))
    return sorted(directory.glob("*.json.gz"))
