"""Rings on the physical chips: the links a transfer crosses, walks through a block of
chips, and how much a ring in a given order loads the links against the same members in
the order the timing formulas assume.

Shared by the collective timings (:mod:`.collectives`), the link loads of the physical view
(:mod:`.physical`) and the device orders (:mod:`.orders`), so all three route a ring the
same way. Pure Python, no jax.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from shardviz.analysis.estimate.placement import Placement, Site
from shardviz.model.hardware import Target

#: A link: its two ends (sorted) and its kind (see :class:`~shardviz.model.physical.LinkLoad`).
LinkKey = tuple[tuple[int, ...], tuple[int, ...], str]
#: A transfer's route: the links it crosses, in order.
Route = tuple[LinkKey, ...]


def link_key(a: tuple[int, ...], b: tuple[int, ...], kind: str) -> LinkKey:
    return (a, b, kind) if a <= b else (b, a, kind)


def route(a: Site, b: Site, target: Target) -> Route:
    """The links a transfer from ``a`` to ``b`` crosses.

    TPU: dimension order (x, then y, then z) inside a slice, the shorter way round where an
    axis wraps (the forward way on a tie); one DCN link between slices. GPU: one NVLink hop
    inside a host, one network hop between hosts. Devices on the same chip cross no link.
    """
    if a.slice != b.slice:
        return (link_key((a.slice,), (b.slice,), "dcn"),)
    if target.kind != "tpu":
        if a.host != b.host:
            return (link_key((a.slice, a.host), (b.slice, b.host), "network"),)
        if a.chip == b.chip:
            return ()
        return (link_key((a.slice, a.host, *a.chip), (b.slice, b.host, *b.chip), "nvlink"),)
    cur = list(a.chip)
    links: list[LinkKey] = []
    for ax, n in enumerate(target.shape):
        d = b.chip[ax] - cur[ax]
        step, count = (1 if d > 0 else -1), abs(d)
        if target.wraparound[ax] and n > 2 and 2 * count > n:
            step, count = -step, n - count
        for _ in range(count):
            nxt = list(cur)
            nxt[ax] = (cur[ax] + step) % n
            kind = "wrap" if abs(nxt[ax] - cur[ax]) > 1 else "ici"
            links.append(link_key((a.slice, *cur), (a.slice, *nxt), kind))
            cur = nxt
    return tuple(links)


def _snake(dims: list[int]) -> list[tuple[int, ...]]:
    """Every cell of a block of ``dims``, each one step from the last (boustrophedon)."""
    if not dims:
        return [()]
    inner = _snake(dims[1:])
    out = []
    for v in range(dims[0]):
        part = inner if v % 2 == 0 else inner[::-1]
        out += [(v, *p) for p in part]
    return out


def block_walk(block: tuple[int, ...]) -> list[tuple[int, ...]]:
    """A walk through every cell of ``block``, one step apart; a closed loop (the last cell
    next to the first) when two or more of its dimensions are above 1 and one is even."""
    live = [a for a, n in enumerate(block) if n > 1]
    if len(live) < 2:
        return [tuple(0 if a != live[0] else v for a in range(len(block))) for v in
                range(block[live[0]])] if live else [tuple(0 for _ in block)]  # fmt: skip
    first, rest = live[0], live[1:]
    path = _snake([block[a] for a in rest])  # a path through the other dims
    if len(path) % 2:
        first, rest = live[-1], live[:-1]
        path = _snake([block[a] for a in rest])
        if len(path) % 2:  # no closed loop: a snake through all of it
            return [_cell(block, live, p) for p in _snake([block[a] for a in live])]
    n_first = block[first]
    cells: list[tuple[int, ...]] = []
    for j, p in enumerate(path):  # out along `first` (skipping 0), row by row
        run = range(1, n_first) if j % 2 == 0 else range(n_first - 1, 0, -1)
        cells += [_cell(block, [first, *rest], (v, *p)) for v in run]
    cells += [_cell(block, [first, *rest], (0, *p)) for p in reversed(path)]  # and back
    return cells[-1:] + cells[:-1]  # from the block's first cell


def _cell(block: tuple[int, ...], axes: list[int], values: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(block)
    for a, v in zip(axes, values, strict=True):
        out[a] = v
    return tuple(out)


def canonical_walk(chips: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """``chips`` in the order the timing formulas assume a ring takes through them: the
    block their distinct coordinates make, walked as :func:`block_walk` walks it (a closed
    loop where one can be), each step to the next chip of the set."""
    dims = len(chips[0])
    values = [sorted({c[a] for c in chips}) for a in range(dims)]
    present = set(chips)
    out = []
    for cell in block_walk(tuple(len(v) for v in values)):
        chip = tuple(values[a][i] for a, i in enumerate(cell))
        if chip in present:
            out.append(chip)
    return out


def _ring_routes(chips: Sequence[tuple[int, ...]], target: Target) -> list[Route]:
    sites = [Site(c, 0) for c in chips]
    n = len(sites)
    return [route(sites[k], sites[(k + 1) % n], target) for k in range(n)]


_PENALTIES: dict[tuple, tuple[float, float]] = {}


def ring_penalty(
    groups: Sequence[Sequence[int]], placement: Placement, target: Target
) -> tuple[float, float]:
    """How much worse a collective's rings are in the order its groups list their members
    than the same members walked as the formulas assume (:func:`canonical_walk`): the
    busiest link's transfers (every group's ring at once, as they run: a ring that jumps
    crosses links its neighbours' rings use too), and the longest ring's hops. Each at least
    1; ``(1, 1)`` for rings laid well, off TPU, or for groups over several slices (the data
    centre network sets their time), and where the devices were placed by assumption (CPU
    devices previewed on a target: their order on real chips is not known)."""
    if target.kind != "tpu" or placement.assumed:
        return 1.0, 1.0
    rings = []
    for g in groups:
        sites = [placement[d] for d in g]
        if len({s.slice for s in sites}) > 1:
            return 1.0, 1.0
        if len({s.chip for s in sites}) > 1:
            rings.append(tuple(s.chip for s in sites))
    key = (target.shape, target.wraparound, tuple(rings))
    got = _PENALTIES.get(key)
    if got is not None:
        return got
    listed: Counter[LinkKey] = Counter()
    laid: Counter[LinkKey] = Counter()
    hops_listed = hops_laid = 0
    for chips in rings:
        routes = _ring_routes(chips, target)
        walked = _ring_routes(canonical_walk(sorted(set(chips))), target)
        for r in routes:
            listed.update(r)
        for r in walked:
            laid.update(r)
        hops_listed = max(hops_listed, sum(len(r) for r in routes))
        hops_laid = max(hops_laid, sum(len(r) for r in walked))
    busiest, ideal = max(listed.values(), default=0), max(laid.values(), default=0)
    got = (
        max(1.0, busiest / ideal) if ideal else 1.0,
        max(1.0, hops_listed / hops_laid) if hops_laid else 1.0,
    )
    if len(_PENALTIES) > 4096:
        _PENALTIES.clear()
    _PENALTIES[key] = got
    return got
