"""A pipeline schedule: which stage runs which microbatch's forward or backward, when.

GPipe runs every forward, then every backward; 1F1B (one forward, one backward) starts each
stage's backwards as soon as it can, so a stage holds at most as many microbatches' activations
as there are stages after it (itself included) instead of all of them. With a forward and a
backward each taking one time unit, both idle ``(S - 1) / (M + S - 1)`` of the time (the
bubble) for S stages and M microbatches. Plain data, built by :func:`gpipe` and
:func:`one_f_one_b`; no jax.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from shardviz.model import display
from shardviz.model._codec import JsonMixin

Phase = Literal["F", "B"]
ScheduleKind = Literal["gpipe", "1f1b"]
#: How the pipeline is written: GSPMD's one loop over a stage-split state (autodiff orders the
#: backwards, as GPipe), or each stage's program by hand with ``shard_map``.
PipelineForm = Literal["gspmd", "shard_map"]


def theory_bubble(stages: int, microbatches: int) -> float:
    """``(S - 1) / (M + S - 1)``: the idle share of each stage's time with S stages and M
    microbatches, a forward and a backward taking one unit each."""
    return (stages - 1) / (microbatches + stages - 1)


@dataclass(frozen=True)
class Slot:
    """One unit of work: ``stage`` runs ``phase`` (forward or backward) of ``microbatch`` at
    time ``time`` (in units of one stage's forward)."""

    #: What a document read back may hold (see :mod:`shardviz.model._codec`).
    DOCUMENT_LIMITS: ClassVar[dict[str, tuple[int, int]]] = {
        "stage": (0, 127), "time": (0, 4095), "microbatch": (0, 1023),
    }  # fmt: skip

    stage: int
    time: int
    microbatch: int
    phase: Phase


@dataclass(frozen=True)
class MeasuredSlot:
    """One slot as a profiled run timed it: ``stage`` ran ``phase`` of ``microbatch`` from
    ``start`` seconds (after the step's first op) for ``seconds``."""

    DOCUMENT_LIMITS: ClassVar[dict[str, tuple[int, int]]] = {
        "stage": (0, 127), "microbatch": (0, 1023),
    }  # fmt: skip

    stage: int
    microbatch: int
    phase: Phase
    start: float
    seconds: float


@dataclass(frozen=True)
class Schedule(JsonMixin, display.Shown):
    """A pipeline schedule of ``stages`` x ``microbatches``, as slots on a stages x time grid.

    ``measured_bubble`` is the idle fraction measured from a profiled run (``None`` when it
    was not profiled), ``measured`` its slots as timed (empty when not profiled) on
    ``measured_platform`` (``"cpu"``: illustrative, the fake devices share the host's cores);
    :attr:`bubble_fraction` is the measured bubble, else the schedule's own. ``form``,
    ``checkpoint`` and ``residual_bytes`` (what one stage keeps per microbatch in flight for
    its backward, ``None`` when not known) describe the pipeline that ran it.
    """

    #: What a document read back may hold (see :mod:`shardviz.model._codec`): every view
    #: draws a cell per stage and time unit, so a schedule of a million stages is refused,
    #: not drawn for minutes.
    DOCUMENT_LIMITS: ClassVar[dict[str, int | tuple[int, int]]] = {
        "stages": (1, 128), "microbatches": (1, 1024), "slots": 65_536, "measured": 65_536,
    }  # fmt: skip

    kind: ScheduleKind
    stages: int
    microbatches: int
    slots: tuple[Slot, ...]
    measured_bubble: float | None = None
    measured: tuple[MeasuredSlot, ...] = ()
    measured_platform: str = ""
    form: PipelineForm = "gspmd"
    checkpoint: bool = False
    residual_bytes: int | None = None

    @property
    def length(self) -> int:
        """Time units from the first slot to the end of the last."""
        return 1 + max((s.time for s in self.slots), default=-1)

    @property
    def theory_bubble_fraction(self) -> float:
        """``(S - 1) / (M + S - 1)``: the idle share of each stage's time."""
        return theory_bubble(self.stages, self.microbatches)

    @property
    def schedule_bubble_fraction(self) -> float:
        """The idle share of the stages x time grid of this schedule."""
        total = self.stages * self.length
        return (total - len(self.slots)) / total if total else 0.0

    @property
    def bubble_fraction(self) -> float:
        return (
            self.measured_bubble
            if self.measured_bubble is not None
            else self.schedule_bubble_fraction
        )

    def figure(self):
        """An interactive plotly figure: the stages x time chart, the measured slots when
        profiled, each stage's activation memory when known."""
        return display.render(self, "plotly")

    def matplotlib_figure(self):
        """The same as a static matplotlib figure, for slides."""
        return display.render(self, "matplotlib")

    def in_flight(self, stage: int) -> int:
        """The most microbatches whose activations ``stage`` holds at once (forward done,
        backward not yet): what its activation memory scales with."""
        events = sorted(
            (s.time, 0 if s.phase == "B" else 1) for s in self.slots if s.stage == stage
        )
        held = most = 0
        for _, is_forward in events:
            held += 1 if is_forward else -1
            most = max(most, held)
        return most

    def activation_bytes(self, stage: int) -> int | None:
        """Bytes ``stage`` keeps for its backwards at its peak: its microbatches in flight
        times :attr:`residual_bytes` (``None`` when that is not known)."""
        if self.residual_bytes is None:
            return None
        return self.in_flight(stage) * self.residual_bytes


def _simulate(stages: int, microbatches: int, orders: list[list[tuple[Phase, int]]]) -> list[Slot]:
    """Run each stage's ops in its order, one per time unit, each as soon as what it needs is
    done: a forward needs the previous stage's forward of that microbatch; a backward needs
    the next stage's backward (the last stage: its own forward)."""
    done: dict[tuple[str, int, int], int] = {}  # (phase, microbatch, stage) -> time
    nxt = [0] * stages
    slots: list[Slot] = []
    t = 0
    total = sum(len(o) for o in orders)
    while len(slots) < total:
        ran: list[tuple[int, Phase, int]] = []
        for s in range(stages):
            if nxt[s] == len(orders[s]):
                continue
            phase, m = orders[s][nxt[s]]
            need: tuple[str, int, int] | None
            if phase == "F":
                need = ("F", m, s - 1) if s > 0 else None
            else:
                need = ("B", m, s + 1) if s < stages - 1 else ("F", m, s)
            if need is None or done.get(need, t) < t:
                ran.append((s, phase, m))
        for s, phase, m in ran:
            done[(phase, m, s)] = t
            nxt[s] += 1
            slots.append(Slot(stage=s, time=t, microbatch=m, phase=phase))
        t += 1
        if t > 4 * total + 4:  # an order that can never finish (a bug, not an input)
            raise RuntimeError("pipeline schedule does not finish")
    return sorted(slots, key=lambda x: (x.time, x.stage))


def _check(stages: int, microbatches: int) -> None:
    if stages < 1 or microbatches < 1:
        raise ValueError(
            f"a pipeline needs at least one stage and one microbatch (got {stages} stages, "
            f"{microbatches} microbatches)"
        )


def gpipe(stages: int, microbatches: int) -> Schedule:
    """GPipe: every stage runs all forwards, then all backwards (last microbatch first)."""
    _check(stages, microbatches)
    order: list[tuple[Phase, int]] = [("F", m) for m in range(microbatches)]
    order += [("B", m) for m in reversed(range(microbatches))]
    slots = _simulate(stages, microbatches, [list(order) for _ in range(stages)])
    return Schedule("gpipe", stages, microbatches, tuple(slots))


def one_f_one_b(stages: int, microbatches: int) -> Schedule:
    """1F1B: stage ``s`` runs ``S - 1 - s`` warm-up forwards, then alternates one forward
    and one backward, then drains the remaining backwards."""
    _check(stages, microbatches)
    orders = []
    for s in range(stages):
        warm = min(stages - 1 - s, microbatches)
        order: list[tuple[Phase, int]] = [("F", m) for m in range(warm)]
        for i in range(microbatches - warm):
            order += [("F", warm + i), ("B", i)]
        order += [("B", m) for m in range(microbatches - warm, microbatches)]
        orders.append(order)
    return Schedule("1f1b", stages, microbatches, tuple(_simulate(stages, microbatches, orders)))


def schedule(kind: str, stages: int, microbatches: int) -> Schedule:
    """The schedule of ``kind`` (``"gpipe"`` or ``"1f1b"``)."""
    if kind == "gpipe":
        return gpipe(stages, microbatches)
    if kind == "1f1b":
        return one_f_one_b(stages, microbatches)
    raise ValueError(f"unknown pipeline schedule {kind!r}: use 'gpipe' or '1f1b'")
