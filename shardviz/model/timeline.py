"""The timeline of one profiled step: per device, which op ran when, as compute or a collective.

Built from :attr:`Report.timeline` (the events of one traced step), so every view (HTML, text,
the Explorer) draws and describes the same lanes and totals.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model.program import COLLECTIVE_KINDS, OpEvent, Report

#: The kind of every op that is not a collective.
COMPUTE = "compute"


def op_kind(name: str) -> str:
    """``all-reduce`` for ``all-reduce.2`` or ``all-reduce-start.1``; ``compute`` otherwise."""
    base = name.split(".", 1)[0]
    for suffix in ("-start", "-done"):
        base = base.removesuffix(suffix)
    return base if base in COLLECTIVE_KINDS else COMPUTE


@dataclass(frozen=True)
class Bar:
    """One op on one device's lane: start and duration in seconds."""

    name: str
    kind: str
    start: float
    seconds: float


@dataclass(frozen=True)
class Lane:
    """One device's ops in the order they started."""

    device: int
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Timeline:
    """What a timeline view shows.

    ``kinds`` is ``compute`` first, then the collective kinds present; ``totals`` is the time
    of each kind summed over every lane (device-seconds); ``span`` is the step's length from
    its first op to its last op's end; ``illustrative`` is True on CPU, where the fake
    devices share the host's cores, so waits and overlaps are not what an accelerator shows.
    """

    lanes: tuple[Lane, ...]
    kinds: tuple[str, ...]
    totals: dict[str, float]
    span: float
    platform: str
    illustrative: bool

    @property
    def bars(self) -> int:
        """How many ops are drawn, over every lane."""
        return sum(len(lane.bars) for lane in self.lanes)


#: Wording of the two cases, used by every view.
ILLUSTRATIVE_LABEL = "illustrative: CPU devices share the host's cores"


def real_label(platform: str) -> str:
    """The label of figures measured on real ``platform`` devices."""
    return f"real: measured on {platform} devices"


def realness_label(t: Timeline) -> str:
    """The label a view shows next to the timeline: illustrative on CPU, real elsewhere."""
    if t.illustrative:
        return ILLUSTRATIVE_LABEL
    return real_label(t.platform)


def timeline_of(report: Report) -> Timeline | None:
    """The timeline of ``report``'s profiled step, or None when it has no timeline."""
    events = report.timeline
    if not events:
        return None
    return build_timeline(events, report.platform)


def build_timeline(events: tuple[OpEvent, ...], platform: str) -> Timeline:
    """Lanes (one per device, by device number), kinds, per-kind totals and the span."""
    by_device: dict[int, list[Bar]] = {}
    totals: dict[str, float] = {}
    for e in events:
        kind = op_kind(e.name)
        by_device.setdefault(e.device, []).append(Bar(e.name, kind, e.start, e.seconds))
        totals[kind] = totals.get(kind, 0.0) + e.seconds
    lanes = tuple(
        Lane(d, tuple(sorted(bars, key=lambda b: (b.start, b.name))))
        for d, bars in sorted(by_device.items())
    )
    start = min(e.start for e in events)
    span = max(e.start + e.seconds for e in events) - start
    kinds = (COMPUTE, *sorted(k for k in totals if k != COMPUTE))
    return Timeline(
        lanes=lanes,
        kinds=kinds,
        totals={k: totals.get(k, 0.0) for k in kinds},
        span=span,
        platform=platform,
        illustrative=platform == "cpu",
    )
