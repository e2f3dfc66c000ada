"""A plan search as plain data: every assignment of specs tried, its figures, and the ranking.

Filled in by :func:`shardviz.strategies.search.suggestions` from compile-only reports; read by the
text and HTML views. No jax import (and no strategies import: the rule set of a plan lives on
the strategies layer's subclass).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from shardviz.model import display
from shardviz.model._codec import JsonMixin
from shardviz.model.array import Spec
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Report

#: Without a target, plans whose per-device flops are within this fraction of the least any
#: fitting plan reached count as splitting the work; only they are ranked by bytes moved.
WORK_TOLERANCE = 0.10
#: Figures (bytes moved, estimated step) within this fraction of the best count as a tie.
NEAR = 0.02

#: A list in a plan's ``how`` (leaves in braces, a link's dims) longer than this many items is
#: shown as its first :data:`HOW_ITEMS` and a count of the rest.
HOW_LIST = 4
HOW_ITEMS = 3
#: The most characters one ``;``-part of a plan's ``how`` keeps once its lists are summarised
#: (what is cut ends in an ellipsis).
HOW_PART = 160


def summarised(items: Sequence[str], shown: int = HOW_ITEMS, sep: str = ", ") -> str:
    """``items`` joined by ``sep``; past :data:`HOW_LIST` of them, the first ``shown`` and
    ``and N more`` (``w0, w1, w2 and 997 more``)."""
    items = list(items)
    if len(items) <= max(HOW_LIST, shown):
        return sep.join(items)
    return f"{sep.join(items[:shown])} and {len(items) - shown} more"


def _top_level(text: str, seps: tuple[str, ...]) -> list[str]:
    """``text`` split at ``seps`` outside brackets and braces."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            sep = next((s for s in seps if text.startswith(s, i)), None)
            if sep is not None:
                parts.append(text[start:i])
                i += len(sep)
                start = i
                continue
        i += 1
    parts.append(text[start:])
    return parts


def _braces(text: str) -> str:
    """Each ``{a,b,c,...}`` list of names (a group's siblings) summarised."""
    out, i = [], 0
    while i < len(text):
        j = text.find("{", i)
        k = text.find("}", j + 1) if j >= 0 else -1
        if j < 0 or k < 0:
            out.append(text[i:])
            break
        names = text[j + 1 : k].split(",")
        out.append(text[i:j] + "{" + summarised(names, sep=",") + "}")
        i = k + 1
    return "".join(out)


def short_how(how: str) -> str:
    """A plan's ``how`` kept to a readable line: lists of leaves, siblings and a link's dims
    past :data:`HOW_LIST` items summarised (the first few and ``and N more``), each
    ``;``-part cut at :data:`HOW_PART` characters. Summarising twice changes nothing."""
    parts = []
    for part in _top_level(_braces(how), ("; ",)):
        items = _top_level(part, (", ", " and "))
        if len(items) > HOW_LIST:
            part = summarised(items)
        if len(part) > HOW_PART:
            part = part[: HOW_PART - 1].rstrip() + "…"
        parts.append(part)
    return "; ".join(parts)


@dataclass(frozen=True)
class Plan:
    """One assignment of partition specs to the arguments' leaves, compiled compile-only.

    Attributes:
        label: ``#n``, the order it was tried in (1 first).
        how: how the search came to it (a built-in strategy, or a move from another plan).
        specs: leaf path (``params/w1``, ``opt_state/0/mu/w1``, ``batch/x``) -> its spec.
        report: the compile-only report (``None`` if it did not compile: see ``error``).
        peak_bytes: peak memory per device (the report's figure, ``peak_definition`` says which).
        moved_bytes: bytes each device sends per step over all collectives (loops counted by
            their trip counts when known).
        estimated_seconds: the estimated step on the target (``None`` without a target).
        flops_per_device: the compiler's flops on one device (``None`` if the backend has no
            cost analysis).
        flops_global: the same program's flops unsplit (what one device would do alone).
        fits: whether ``peak_bytes`` is within the search's memory limit and ``host_bytes``
            within its host memory limit (``None``: no limit).
        error: why it did not compile ("" if it did).
        found_seconds: seconds from the start of the search to when this plan was compiled.
        host_bytes: host memory per device (the report's ``memory.host_bytes``: arguments
            kept in pinned host memory and the like), beside ``peak_bytes`` in HBM.
        on_host: the leaves the plan keeps in pinned host memory (the optimizer state, when
            the search offloaded it); ``()`` for a plan wholly in HBM.
        remat: the decoder's remat policy the plan gives a published architecture
            (``None``: the model's own, or a program whose remat is its own).
        activations: a published decoder's named activations -> the spec the plan pins them
            to (implied by its weights; ``{}``: the compiler places them).
        pipeline: the model trained as a pipeline (GSPMD's form): (the searched mesh's axis
            carrying the stages, stages, microbatches); ``None`` for any other plan.
    """

    label: str
    how: str
    specs: dict[str, Spec]
    report: Report | None
    peak_bytes: int | None
    moved_bytes: int | None
    estimated_seconds: float | None = None
    flops_per_device: float | None = None
    flops_global: float | None = None
    fits: bool | None = None
    error: str = ""
    found_seconds: float = 0.0
    host_bytes: int | None = None
    on_host: tuple[str, ...] = ()
    remat: str | None = None
    activations: dict[str, Spec] = field(default_factory=dict)
    pipeline: tuple[str, int, int] | None = None

    @property
    def devices(self) -> int:
        """How many devices the plan runs on (from its report's mesh; 1 if unknown)."""
        mesh = self.report.mesh if self.report is not None else None
        return len(mesh.devices) if mesh is not None else 1

    @property
    def work_ratio(self) -> float | None:
        """Per-device flops over an ideal split (``flops_global / devices``): 1.0 when the
        work is split evenly, ``devices`` when every device does all of it; ``None`` when
        the compiler gave no flops."""
        if not self.flops_per_device or not self.flops_global:
            return None
        return self.flops_per_device * self.devices / self.flops_global

    @property
    def compiled(self) -> bool:
        """Whether it compiled (a plan that did not has an :attr:`error`)."""
        return not self.error


@dataclass(frozen=True)
class Search(JsonMixin, display.Shown):
    """The plans a search tried, best first, and how they were ranked.

    Attributes:
        function: the function (or model) searched for.
        mesh: the mesh every plan is on.
        plans: every plan compiled, in rank order (best first); plans over the memory limit
            and plans that failed to compile come last.
        ranking: the rule the plans were ranked by, in words.
        memory_limit: bytes per device a plan's peak must stay within (``None``: no limit).
        host_memory_limit: bytes of host memory per device a plan may use (``None``: no
            limit).
        target: the target estimates are made for ("" without one).
        budget_seconds: the time the search was given; ``elapsed_seconds`` what it took.
        budget_ran_out: the search stopped because the budget ran out (not because no move
            helped any more).
        skipped: assignments not compiled because their arguments alone need more than
            the memory limit.
        roles: argument name -> ``params``, ``optimizer`` or ``batch`` (how its leaves were
            searched).
        notes: what else the search wants the reader to know.
        stopped: why the search stopped: ``"budget"`` (the budget ran out), ``"max_plans"``
            (the cap on plans compiled was reached), ``"converged"`` (every seed compiled,
            and no move from any of the best plans ranked better), ``"memory"`` (no plan fits
            the memory limit); ``""`` when not recorded.
    """

    #: What a document read back may hold (see :mod:`shardviz.model._codec`; a class
    #: attribute, not a field: it has no annotation).
    DOCUMENT_LIMITS = {"plans": 10_000}

    function: str
    mesh: MeshLayout | None
    plans: tuple[Plan, ...]
    ranking: str
    memory_limit: int | None = None
    target: str = ""
    budget_seconds: float = 0.0
    elapsed_seconds: float = 0.0
    budget_ran_out: bool = False
    skipped: int = 0
    roles: dict[str, str] | None = None
    notes: tuple[str, ...] = ()
    stopped: str = ""
    host_memory_limit: int | None = None

    @property
    def tried(self) -> int:
        """How many plans were compiled."""
        return len(self.plans)

    @property
    def best(self) -> Plan | None:
        """The best plan that compiled and fits the memory limit; ``None`` when none does
        (then :attr:`notes` say why and what to change)."""
        first = self.plans[0] if self.plans else None
        if first is None or not first.compiled or first.fits is False:
            return None
        return first

    def plan(self, label: str) -> Plan:
        """The plan labelled ``label`` (``#3``, or ``3``).

        Raises:
            KeyError: no plan has that label.
        """
        want = label if label.startswith("#") else f"#{label}"
        for p in self.plans:
            if p.label == want:
                return p
        raise KeyError(label)
