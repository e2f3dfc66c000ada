"""Who talks to whom: the links of one collective's data movement on the mesh, under the ring
model, from :class:`~shardviz.model.Collective` alone.

- all-reduce, all-gather, reduce-scatter: a **ring** in the group's order, each device sending
  to the next. With ``n`` devices every step moves one ``1/n`` chunk per link; all-gather and
  reduce-scatter take ``n - 1`` steps, all-reduce ``2 (n - 1)`` (a reduce-scatter, then an
  all-gather), which is the ``moved_bytes`` the model records.
- all-to-all: **all pairs**, each device sending ``1/n`` of its operand to each of the others.
- collective-permute: the **pairs** the program lists, each source sending its whole operand.

:func:`traffic_of` computes the links and figures; :mod:`shardviz.render.traffic` draws them on
the mesh, and the Explorer draws the same links as data. No jax here.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.analysis.estimate.collectives import RING_KINDS
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Collective
from shardviz.model.units import format_bytes

Link = tuple[int, int]


@dataclass(frozen=True)
class Traffic:
    """The links of one collective per device group, and what each device sends.

    ``pattern`` is ``ring``, ``all-pairs``, ``pairs`` or ``none`` (groups of one, or no
    groups). ``links`` holds, per group, ``(source, target)`` device ids. ``step_bytes`` is
    what one device sends on one link in one step, ``steps`` how many steps it sends in.
    """

    kind: str
    pattern: str
    links: tuple[tuple[Link, ...], ...]
    step_bytes: int
    steps: int
    group_size: int
    operand_bytes: int

    @property
    def arrows(self) -> int:
        return sum(len(g) for g in self.links)

    @property
    def device_bytes(self) -> int:
        """What one device sends in all: the ring model's ``moved_bytes``."""
        if self.pattern == "all-pairs":
            return self.step_bytes * (self.group_size - 1)
        return self.step_bytes * self.steps

    @property
    def label(self) -> str:
        """What one arrow carries: ``1 KiB per step × 6 steps`` (ring), ``1 KiB`` otherwise."""
        if self.pattern == "ring" and self.steps > 1:
            return f"{format_bytes(self.step_bytes)} per step × {self.steps} steps"
        return format_bytes(self.step_bytes)

    @property
    def words(self) -> str:
        """The picture in one sentence, with the per-device figures."""
        n, operand = self.group_size, format_bytes(self.operand_bytes)
        chunk, total = format_bytes(self.step_bytes), format_bytes(self.device_bytes)
        if self.pattern == "ring":
            steps = (
                f"{self.steps} steps ({n - 1} to reduce-scatter, {n - 1} to all-gather)"
                if self.kind == "all-reduce"
                else f"{self.steps} step{'s' * (self.steps != 1)}"
            )
            what = "one shard" if self.kind == "all-gather" else f"1/{n} of its {operand} operand"
            return (
                f"ring of {n}: each device sends {chunk} ({what}) to the next per step, "
                f"{steps} = {total} per device"
            )
        if self.pattern == "all-pairs":
            return (
                f"all pairs in groups of {n}: each device sends {chunk} (1/{n} of its {operand} "
                f"operand) to each of the {n - 1} others = {total} per device"
            )
        if self.pattern == "pairs":
            return f"pairs: each source sends its whole operand ({chunk}) to its target at once"
        return "nothing moves between devices (groups of one)"


def permute_groups(c: Collective) -> tuple[tuple[int, ...], ...]:
    """The device groups of a collective; for a permute without groups, the connected sets of
    its source→target pairs (each ring its own group)."""
    if c.groups or not c.pairs:
        return c.groups
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    order: list[int] = []
    for a, b in c.pairs:
        for x in (a, b):
            if x not in parent:
                order.append(x)
            find(x)
        parent[find(a)] = find(b)
    comps: dict[int, list[int]] = {}
    for x in order:
        comps.setdefault(find(x), []).append(x)
    return tuple(tuple(sorted(g)) for g in sorted(comps.values(), key=min))


def _groups(c: Collective, mesh: MeshLayout | None) -> tuple[tuple[int, ...], ...]:
    """The collective's groups; no groups listed means one group of every device."""
    if c.groups:
        return c.groups
    if mesh is not None and c.group_size == mesh.size:
        return (mesh.device_ids,)
    return ()


def traffic_of(c: Collective, mesh: MeshLayout | None = None) -> Traffic:
    """The links and per-device bytes of ``c`` under the ring model.

    Args:
        c: the collective.
        mesh: the report's mesh, for a collective whose groups are "every device" (listed as
            no groups).
    """
    if c.kind == "collective-permute":
        links = tuple(
            tuple((a, b) for a, b in c.pairs if a in set(g) and a != b) for g in permute_groups(c)
        )
        pattern = "pairs" if any(links) else "none"
        return Traffic(c.kind, pattern, links, c.in_bytes, 1, c.group_size, c.in_bytes)
    groups = _groups(c, mesh)
    n = max((len(g) for g in groups), default=1)
    whole = c.out_bytes if c.kind == "all-gather" else c.in_bytes
    chunk = round(whole / n) if n else 0
    if n < 2:
        return Traffic(c.kind, "none", tuple(() for _ in groups), 0, 0, n, c.in_bytes)
    if c.kind in RING_KINDS:
        links = tuple(tuple((g[i], g[(i + 1) % len(g)]) for i in range(len(g))) for g in groups)
        steps = 2 * (n - 1) if c.kind == "all-reduce" else n - 1
        return Traffic(c.kind, "ring", links, chunk, steps, n, c.in_bytes)
    links = tuple(tuple((a, b) for a in g for b in g if a != b) for g in groups)
    return Traffic(c.kind, "all-pairs", links, chunk, 1, n, c.in_bytes)
