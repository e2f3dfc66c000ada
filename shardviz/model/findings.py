"""What is wrong with a sharded program, in plain language, and the change that fixes it.

A :class:`Finding` is one problem shardviz recognised in a report (a value replicated where
its peers are split, a collective repeated inside a loop, a reshard the compiler could only
do by replicating...). Its :class:`Fix` is a concrete change (a spec for a named argument
leaf, a sharding constraint, a mesh reshape); shardviz applies it, compiles the program
again and keeps the before/after in :class:`FixCheck`. A fix that did not help is not
offered. Plain data: capture fills these in, renderers draw them.
"""

from __future__ import annotations

import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.array import Spec, format_spec

FindingKind = Literal[
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
]
FINDING_KINDS: tuple[str, ...] = typing.get_args(FindingKind)
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

    ``line`` is ``file:line`` and ``chain`` the call chain (``step > loss > mlp``) of the
    code that made the value; ``code`` that line's text. ``leaf`` is an argument's leaf path
    (``params/w1``) or a value's name, ``spec`` its spec. ``collectives`` are ledger numbers
    as the views show them (1 is ``report.collectives[0]``); ``values`` HLO value names
    (reshard points, the remat's op); ``devices`` the device ids most affected.
    """

    line: str = ""
    chain: str = ""
    code: str = ""
    leaf: str = ""
    spec: Spec | None = None
    collectives: tuple[int, ...] = ()
    values: tuple[str, ...] = ()
    devices: tuple[int, ...] = ()

    @property
    def spec_str(self) -> str:
        return format_spec(self.spec) if self.spec is not None else ""


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
    an argument), ``mesh_shape`` the new mesh shape (same axis names, same devices).
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


@dataclass(frozen=True)
class Outcome:
    """One compiled program's figures, per device: what a fix is judged on."""

    collectives: int
    moved_bytes: int
    peak_bytes: int
    flops_per_device: float | None
    remats: int
    seconds: float | None = None


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
    help are left out); ``check`` holds the before/after of the fix offered.
    """

    kind: FindingKind
    severity: Severity
    title: str
    why: str
    cost: FindingCost
    where: Where
    fix: Fix | None = None
    check: FixCheck | None = None


@dataclass(frozen=True, eq=False)
class Findings(JsonMixin, display.Shown):
    """The findings of one report, most severe first: ``report.findings`` and
    :func:`shardviz.diagnose` give this. Iterates and indexes like a tuple of
    :class:`Finding`.

    :meth:`later` makes one whose fixes are tried (compiled) the first time it is looked
    at, so explaining a program costs no extra compile until its findings are read.
    """

    function: str
    items: tuple[Finding, ...] = ()
    #: Checks that did not run or fixes that could not be tried, in plain words.
    notes: tuple[str, ...] = ()

    @staticmethod
    def later(function: str, work: Callable[[], Findings]) -> Findings:
        """Findings that ``work()`` gives, run once, on first use of ``items`` or ``notes``."""
        return _Later(function, work=work)

    @property
    def pending(self) -> bool:
        """Whether reading ``items`` would still do work (try fixes by compiling them)."""
        return False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Findings):
            return NotImplemented
        return (self.function, self.items, self.notes) == (
            other.function,
            other.items,
            other.notes,
        )

    def __hash__(self) -> int:
        return hash((self.function, self.items, self.notes))

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


class _Later(Findings):
    """:class:`Findings` worked out on first use (see :meth:`Findings.later`)."""

    def __init__(
        self,
        function: str,
        items: tuple[Finding, ...] = (),
        notes: tuple[str, ...] = (),
        *,
        work: Callable[[], Findings] | None = None,
    ) -> None:
        # ``dataclasses.replace`` calls this with the fields (already worked out): then it
        # is plain findings.
        object.__setattr__(self, "function", function)
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "notes", notes)
        object.__setattr__(self, "_work", work)
        object.__setattr__(self, "_lock", threading.Lock())

    def __getattribute__(self, name: str):
        if name in ("items", "notes") and object.__getattribute__(self, "_work") is not None:
            with object.__getattribute__(self, "_lock"):
                work = object.__getattribute__(self, "_work")
                if work is not None:
                    done = work()
                    object.__setattr__(self, "items", done.items)
                    object.__setattr__(self, "notes", done.notes)
                    object.__setattr__(self, "_work", None)
        return object.__getattribute__(self, name)

    @property
    def pending(self) -> bool:
        return object.__getattribute__(self, "_work") is not None

    def __reduce__(self):
        return (Findings, (self.function, self.items, self.notes))


def severity_rank(f: Finding) -> int:
    """Sort key: errors first, then warnings, then info."""
    return SEVERITIES.index(f.severity)
