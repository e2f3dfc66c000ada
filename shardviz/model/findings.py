"""What is wrong with a sharded program, in plain language, and the change that fixes it.

A :class:`Finding` is one problem shardviz recognised in a report (a value replicated where
its peers are split, a collective repeated inside a loop, a reshard the compiler could only
do by replicating...). Its :class:`Fix` is a concrete change (a spec for a named argument
leaf, a sharding constraint, a mesh reshape); shardviz applies it, compiles the program
again and keeps the before/after in :class:`FixCheck`. A fix that did not help is not
offered. Plain data: the explainer fills these in, renderers draw them.

Trying fixes compiles programs, so it is work done when asked for, never on reading:
``sv.explain`` gives the findings with their fixes not tried yet (:attr:`Findings.untried`),
``report.try_fixes()`` or ``sv.diagnose`` tries them.
"""

from __future__ import annotations

import importlib
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.array import Spec, format_spec

#: What :func:`shardviz.diagnose` checks a compiled program for.
ProgramFindingKind = Literal[
    "involuntary-remat",
    "replicated",
    "regather",
    "reshard-chain",
    "uneven",
    "loop-collective",
    "idle-axis",
    "imbalance",
    "over-hbm",
    "full-reduce",
    "offload-missed",
    "placement",
    "expert-gather",
]
#: What ``sv.compare(..., mode="decode" | "prefill")`` checks each serving strategy for: a KV
#: cache copied across a tensor-parallel group, weights copied under data parallelism, a
#: step set by its collectives.
ServingFindingKind = Literal["kv-replicated", "weights-replicated", "collective-bound"]
FindingKind = Literal[ProgramFindingKind, ServingFindingKind]
PROGRAM_FINDING_KINDS: tuple[str, ...] = typing.get_args(ProgramFindingKind)
SERVING_FINDING_KINDS: tuple[str, ...] = typing.get_args(ServingFindingKind)
#: Every kind of finding: the program's, then the serving ones.
FINDING_KINDS: tuple[str, ...] = PROGRAM_FINDING_KINDS + SERVING_FINDING_KINDS
#: ``error``: the program will not fit or cannot be partitioned sensibly; ``warning``: it
#: wastes memory, bandwidth or devices; ``info``: worth knowing, often the compiler's choice.
Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[str, ...] = typing.get_args(Severity)

#: What a finding costs: bytes moved per step, bytes of memory per device, or work repeated.
CostKind = Literal["moved", "memory", "work"]


@dataclass(frozen=True)
class FindingCost:
    """What the problem costs each device per step.

    ``bytes`` is per device: bytes moved per step (``kind="moved"``, counting loop trips) or
    bytes of memory (``"memory"``); for ``"work"`` it is 0 and ``flops`` holds the flops
    each device repeats. ``seconds`` is the estimated time per step on the report's target
    (``None`` without one).
    """

    kind: CostKind
    bytes: int
    seconds: float | None = None
    flops: float | None = None


@dataclass(frozen=True)
class Where:
    """Where the problem is: a line, a value or argument leaf and its spec, ledger entries.

    ``line`` is ``file:line`` (``place`` the same as a person reads it) and ``chain`` the call chain (``step > loss > mlp``) of the
    code that made the value; ``code`` that line's text. ``leaf`` is an argument's leaf path
    (``params/w1``) or a value's name, ``spec`` its spec. ``collectives`` are ledger numbers
    as the views show them (1 is ``report.collectives[0]``); ``values`` HLO value names
    (reshard points, the remat's op); ``devices`` the device ids most affected;
    ``strategy`` the strategy a serving finding is about (its ``leaf`` then names the part:
    ``KV cache``, ``weights``).
    """

    line: str = ""
    chain: str = ""
    code: str = ""
    leaf: str = ""
    spec: Spec | None = None
    collectives: tuple[int, ...] = ()
    values: tuple[str, ...] = ()
    devices: tuple[int, ...] = ()
    #: ``line`` as a person reads it (``In [12], line 45``, ``models/llama.py:45``); ``""``:
    #: the file's basename.
    place: str = ""
    #: The strategy the finding is about (serving findings: ``"tp-heads"``); ``""``: none.
    strategy: str = ""

    @property
    def spec_str(self) -> str:
        return format_spec(self.spec) if self.spec is not None else ""


#: Pieces (``#3`` or a run ``#3-#9``) :func:`ledger_refs` writes before ``and N more``.
MAX_LEDGER_REFS = 8


def _number_runs(numbers: list[int]) -> list[list[int]]:
    """Sorted numbers cut into runs of consecutive ones: ``[3, 4, 5, 9]`` -> ``[[3, 4, 5], [9]]``."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return runs


def _ref_pieces(numbers: tuple[int, ...]) -> list[tuple[str, int]]:
    """``("#3-#9", 7)``, ``("#12", 1)``: three or more consecutive numbers as one run, each
    piece with how many numbers it stands for."""
    pieces: list[tuple[str, int]] = []
    for run in _number_runs(sorted(set(numbers))):
        if len(run) >= 3:
            pieces.append((f"#{run[0]}-#{run[-1]}", len(run)))
        else:
            pieces.extend((f"#{n}", 1) for n in run)
    return pieces


def ledger_refs(numbers: tuple[int, ...], cap: int = MAX_LEDGER_REFS) -> str:
    """Ledger numbers as findings show them: ``#3, #4`` or ``#3-#9, #12`` (runs of three or
    more merged), at most ``cap`` pieces, then how many numbers are left out: ``#1, #3, …,
    #15 and 80 more``. ``""`` for none."""
    pieces = _ref_pieces(numbers)
    text = ", ".join(piece for piece, _ in pieces[:cap])
    more = sum(k for _, k in pieces[cap:])
    return f"{text} and {more} more" if more else text


#: A spec for an argument leaf (placed that way before the call); a sharding constraint on
#: an argument leaf at the top of the function; a sharding constraint removed at a line; a
#: mesh of another shape over the same devices.
FixKind = Literal["spec", "constraint", "drop-constraint", "mesh"]


@dataclass(frozen=True)
class Fix:
    """A concrete change. ``code`` is what to write (a line of Python).

    ``leaf`` names the argument leaf (``spec``/``constraint``) or the value, ``spec`` the
    new spec, ``line`` the ``file:line`` of the constraint to drop or of the value to
    constrain (a ``constraint`` with a line constrains the value of ``shape`` made there, not
    an argument), ``mesh_shape`` the new mesh shape (same axis names, same devices),
    ``devices`` the same devices in a new order (a ``placement`` fix).
    """

    kind: FixKind
    description: str
    code: str
    leaf: str = ""
    spec: Spec | None = None
    line: str = ""
    mesh_shape: tuple[int, ...] = ()
    #: For a constraint at a line: the shape of the value made there to constrain.
    shape: tuple[int, ...] = ()
    #: For a reordered mesh: the device ids in the new row-major mesh order (a permutation
    #: of the mesh's devices; ``mesh_shape`` keeps the shape).
    devices: tuple[int, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """One compiled program's figures, per device: what a fix is judged on."""

    collectives: int
    moved_bytes: int
    peak_bytes: int
    flops_per_device: float | None
    remats: int
    seconds: float | None = None
    #: The estimated communication seconds per step on the report's target (``None``: none).
    communication_seconds: float | None = None
    #: The step as the compiled schedule runs it on the report's target, and the collectives'
    #: time in it that the ops in flight do not hide (``None``: no prediction).
    predicted_seconds: float | None = None
    exposed_communication_seconds: float | None = None


@dataclass(frozen=True)
class FixCheck:
    """The program before and after the fix, compiled for real (compile-only), and whether
    the fix helps with what the finding is about (``verdict`` says by how much)."""

    before: Outcome
    after: Outcome
    helps: bool
    verdict: str


@dataclass(frozen=True)
class Finding(JsonMixin):
    """One problem in a sharded program, with what it costs, where it is and how to fix it.

    ``fix`` is ``None`` when shardviz knows no change that helps (tried changes that did not
    help are left out; ``unfixed`` says what happened), or, while ``untried``, when its
    fixes have not been tried yet; ``check`` holds the before/after of the fix offered.
    """

    kind: FindingKind
    severity: Severity
    title: str
    why: str
    cost: FindingCost
    where: Where
    fix: Fix | None = None
    check: FixCheck | None = None
    #: Fixes for this finding are known but not tried yet (``report.try_fixes()`` tries them).
    untried: bool = False
    #: Why no fix is offered once fixes were looked for: ``could not try: …`` (no change
    #: could be compiled), ``not tried: …`` (out of time) or ``none of 2 changes helped: …``;
    #: for a serving finding, the change to make by hand (another strategy, a larger
    #: batch), which shardviz does not apply itself; ``""`` when a fix is offered, or
    #: shardviz knows no change to try.
    unfixed: str = ""


@dataclass(frozen=True, eq=False)
class Findings(JsonMixin, display.Shown):
    """The findings of one report, most severe first: ``report.findings`` and
    :func:`shardviz.diagnose` give this. Iterates and indexes like a tuple of
    :class:`Finding`.

    Trying the fixes is work (each is compiled): while ``untried`` is not 0, some findings'
    fixes have not been tried, and ``report.try_fixes()`` gives a report whose findings have.
    """

    function: str
    items: tuple[Finding, ...] = ()
    #: Checks that did not run or fixes that could not be tried, in plain words.
    notes: tuple[str, ...] = ()
    #: Findings whose fixes are not tried yet (some are shown only once a fix helps).
    untried: int = 0
    #: Which kept program the untried fixes apply to (a key the explainer gave; ``""``: none).
    trial: str = ""

    @property
    def pending(self) -> bool:
        """Whether fixes are still to be tried (reading the findings never tries them)."""
        return self.untried > 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Findings):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return (self.function, self.items, self.notes, self.untried)

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Finding:
        return self.items[i]

    def __bool__(self) -> bool:
        return bool(self.items)

    def of(self, kind: str) -> tuple[Finding, ...]:
        """The findings of one kind."""
        return tuple(f for f in self.items if f.kind == kind)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(f.kind for f in self.items)


def severity_rank(f: Finding) -> int:
    """Sort key: errors first, then warnings, then info."""
    return SEVERITIES.index(f.severity)


#: The module that tries fixes (it registers :func:`register_fix_trier` on import): the model
#: names it and never imports it, as :mod:`.display` names the renderers.
FIX_TRIER = "shardviz.explainer.fix_check"

#: Asked between two fix trials (each a compile): ``True`` stops the trying there.
StopTrying = Callable[[], bool]


class FixTrier(Protocol):
    """``trier(report, stop=None) -> report``: the report with its fixes tried, or, once
    ``stop()`` says so between two trials, the report as it was (its fixes still untried)."""

    def __call__(self, report: Any, stop: StopTrying | None = None) -> Any: ...


_trier: list[FixTrier] = []


def register_fix_trier(trier: FixTrier) -> None:
    """Make ``trier`` what :meth:`~shardviz.Report.try_fixes` calls."""
    _trier[:] = [trier]


def fix_trier() -> FixTrier:
    """What tries a report's fixes, loading it on first use."""
    if not _trier:
        importlib.import_module(FIX_TRIER)
    return _trier[0]
