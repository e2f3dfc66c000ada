"""Findings about an expert layer (a mixture of experts): tokens gathered to every device
where an all-to-all over the expert axes would send each token to its experts' devices only.

Read from the collectives' reasons (:attr:`~shardviz.model.CollectiveWhy.conversion`, filled
by :mod:`shardviz.analysis.collective_why`), so a program without an expert layer, or whose
collectives have no reason, gives nothing.
"""

from __future__ import annotations

from collections import defaultdict

from shardviz.analysis.detect.candidate import Candidate, constraint_at_fix
from shardviz.analysis.detect.inputs import (
    by_name,
    format_bytes,
    number_of,
    spec_code,
    step_bytes,
    step_seconds,
    sum_seconds,
    where_of,
)
from shardviz.model import Collective, Report
from shardviz.model.findings import Finding, FindingCost, Fix, ledger_refs
from shardviz.model.units import format_percent
from shardviz.model.why import why_axes


def _token_gathers(report: Report) -> list[Collective]:
    return [
        c
        for c in report.collectives
        if c.why is not None and c.why.conversion == "token-gather" and not c.user_written
    ]


def _fixes(report: Report, gathers: list[Collective]) -> tuple[Fix, ...]:
    """A constraint where each gathered token value is made (the dispatch), to the spec that
    splits its expert dim over the expert axes: the heaviest first."""
    values = by_name(report)
    weight: dict[str, int] = defaultdict(int)
    for c in gathers:
        weight[c.why.hlo_value if c.why else ""] += step_bytes(c)
    fixes = []
    for name in sorted(weight, key=lambda n: -weight[n]):
        s = values.get(name)
        why = next(c.why for c in gathers if c.why is not None and c.why.hlo_value == name)
        if s is None or s.source is None or why.better_spec is None:
            continue
        fixes.append(
            constraint_at_fix(
                s.source.location,
                s.source.text,
                s.name,
                s.shape,
                why.better_spec,
                f"split the tokens over {why_axes(why.expert_axes)} on their expert dim",
                s.source.place,
            )
        )
    return tuple(dict.fromkeys(fixes))


def expert_gather(report: Report) -> list[Candidate]:
    """[expert-gather] An expert layer whose tokens are all-gathered to every device."""
    gathers = _token_gathers(report)
    if not gathers:
        return []
    first = gathers[0].why
    assert first is not None
    expert = first.expert_axes
    axes = tuple(dict.fromkeys(a for c in gathers for a in c.axes))
    moved = sum(step_bytes(c) for c in gathers)
    total = sum(step_bytes(c) for c in report.collectives)
    exchanges = [
        c for c in report.collectives if c.kind == "all-to-all" and set(c.axes) & set(expert)
    ]
    numbers = tuple(number_of(report, c) for c in gathers)
    lines = sorted({c.why.needed_by_line for c in gathers if c.why and c.why.needed_by_line})
    made = by_name(report).get(first.hlo_value)
    place = made.source.place if made is not None and made.source is not None else ""
    title = (
        f"the expert layer has no all-to-all: every token is gathered over {why_axes(axes)} "
        f"({format_bytes(moved)} per step)"
        if not exchanges
        else f"the expert layer gathers every token over {why_axes(axes)} "
        f"({format_bytes(moved)} per step), beside its all-to-alls"
    )
    share = format_percent(moved / total) if total else ""
    finding = Finding(
        kind="expert-gather",
        severity="warning",
        title=title,
        why=(
            f"{len(gathers)} all-gather{'s' * (len(gathers) > 1)} ({ledger_refs(numbers)}) "
            f"bring the tokens going into the expert matmuls"
            + (f" ({', '.join(lines)})" if lines else "")
            + f" to every device over {why_axes(axes)}: {format_bytes(moved)} per device per "
            f"step" + (f", {share} of all the program moves" if share else "") + ". The "
            f"experts are split over {why_axes(expert)}, but the tokens' expert dim is not: "
            f"{first.value or 'the tokens'} {'is' if first.value else 'are'} "
            f"{spec_code(first.from_spec)}"
            + (f" (made at {place})" if place and "made at" not in first.value else "")
            + ". Shard the dispatch over "
            f"{why_axes(expert)}: constrain its result to {spec_code(first.better_spec)}, so "
            f"the partitioner sends each token only to its experts' devices with an "
            f"all-to-all over {why_axes(expert)}."
        ),
        cost=FindingCost(
            kind="moved", bytes=moved, seconds=sum_seconds([step_seconds(c) for c in gathers])
        ),
        where=where_of(
            made.source if made is not None else gathers[0].source,
            leaf=made.name if made is not None else "",
            spec=first.from_spec,
            collectives=numbers,
            values=tuple(dict.fromkeys(c.why.hlo_value for c in gathers if c.why)),
        ),
    )
    return [Candidate(finding, _fixes(report, gathers), goal="moved")]
