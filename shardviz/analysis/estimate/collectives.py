"""How long one collective takes on a target: ring/torus formulas with a per-hop latency floor.

The model (from "How to Scale Your Model", jax-ml/scaling-book, sharding.md and gpus.md):

TPU, inside a slice (ICI). A group is placed on the physical axes it spans. Along one axis
of ``n`` chips, an all-gather of ``V`` bytes (the gathered size on each device) passes shards
of ``V / n`` from chip to chip:

- a ring with wraparound sends both ways at once: ``n // 2`` hops;
- a line (no wraparound, or a group covering part of an axis) sends one way to the far end:
  ``n - 1`` hops;

each hop takes ``max(hop_latency, (V / n) / link_bandwidth)`` with the one-way link bandwidth.
(A ring of even ``n`` gives ``V / W_bidi``, the book's formula; a line ``(n-1)/n V / W``.)
A group over several physical axes uses all of them: their rates add (the book's
``V / (W_bidi * n_axes)``), and its latency floor is the hops of every axis added. Members
``s`` chips apart share links with ``s - 1`` other groups: bandwidth ``/ s``, hops ``* s``.
Reduce-scatter costs the same on its input; all-reduce twice that. An all-to-all is bounded
by the traffic that must cross the middle of each axis (a quarter of the array; a ring has
two links across). A collective-permute sends its input from chip to chip: the hops between
them, through as many ports as axes it moves along.

The formulas take a group's ring through its chips in order (:func:`.rings.canonical_walk`).
A ring runs through its members in the order the group lists them, which is the order of
the devices along that mesh axis: a mesh whose order makes the ring jump between chips that
are not neighbours loads some links with several transfers at once (its own and its
neighbour groups') and takes more hops. The bandwidth term is then multiplied by how much
busier the busiest link is, and the latency floor by how many more hops the ring takes,
than the same members walked in order (:func:`.rings.ring_penalty`); the link loads of
:mod:`.physical` route the same rings, so the view and the estimate agree on an order.

Several slices (DCN) and GPUs. Within a host, GPUs reach each other in one hop over
NVLink; across hosts (GPU) or slices (TPU) the network carries it. A group with ``k``
members per host over ``M`` hosts gathers in ``V * max((k-1)/(k W_nvlink),
(M-1)/(M k W_network_per_device))``: in two levels, overlapped: a ring inside each host,
and each member sending its own ``V / (M k)`` to every other host over its own NIC (the
group's ``k`` members share out the network traffic; with uneven hosts, ``M k`` is the
group's size). Inside one TPU slice every chip talks over
ICI, even across hosts; DCN is only between slices.

Every figure is an estimate and a lower bound: real collectives rarely reach the peak link
bandwidth.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from shardviz.analysis.estimate.placement import AXIS_NAMES, Placement
from shardviz.analysis.estimate.rings import ring_penalty
from shardviz.model.hardware import Target
from shardviz.model.program import Collective
from shardviz.model.units import format_bytes, format_seconds, sig3


@dataclass(frozen=True)
class AxisSpan:
    """A group's extent along one physical axis: ``size`` members, ``stride`` chips apart,
    closing into a ring (wraparound covering the whole axis) or not."""

    axis: int
    size: int
    ring: bool
    stride: int = 1

    @property
    def hops(self) -> int:
        """Hops for a shard to reach the farthest member."""
        return self.size // 2 if self.ring else self.size - 1

    @property
    def label(self) -> str:
        name = AXIS_NAMES[self.axis] if self.axis < len(AXIS_NAMES) else f"axis{self.axis}"
        kind = "ring" if self.ring else "line"
        stride = f", stride {self.stride}" if self.stride > 1 else ""
        return f"{name}{self.size} {kind}{stride}"


@dataclass(frozen=True)
class Terms:
    """A collective's estimated time as its two terms (bandwidth, latency floor); the larger wins."""

    bandwidth_seconds: float
    latency_seconds: float

    @property
    def seconds(self) -> float:
        return max(self.bandwidth_seconds, self.latency_seconds)

    @property
    def latency_bound(self) -> bool:
        return self.latency_seconds > self.bandwidth_seconds

    def times(self, k: float) -> Terms:
        return Terms(self.bandwidth_seconds * k, self.latency_seconds * k)


@dataclass(frozen=True)
class CollectiveTime:
    """The estimate for one collective: seconds, the formula in words, the links it uses."""

    seconds: float
    formula: str
    link: str
    latency_bound: bool = False


# ----- formulas on numbers (what the book's worked examples check) -----


def torus_gather(volume: float, spans: Sequence[AxisSpan], link_bw: float, hop: float) -> Terms:
    """All-gather of ``volume`` bytes (gathered, per device) over ICI axes ``spans``."""
    if not spans:
        return Terms(0.0, 0.0)
    latency = hop * sum(s.hops * s.stride for s in spans)
    if volume <= 0:
        return Terms(0.0, latency)
    rate = sum((link_bw / s.stride) * s.size / (s.hops * volume) for s in spans)
    return Terms(1.0 / rate, latency)


def torus_all_to_all(
    in_bytes: float, spans: Sequence[AxisSpan], link_bw: float, hop: float
) -> Terms:
    """All-to-all of ``in_bytes`` per device over ICI axes: the busiest bisection."""
    if not spans:
        return Terms(0.0, 0.0)
    n_all = math.prod(s.size for s in spans)
    total = n_all * in_bytes
    worst = 0.0
    for s in spans:
        crossing = (s.size // 2) * ((s.size + 1) // 2) / s.size**2 * total
        capacity = (n_all / s.size) * link_bw * (2 if s.ring else 1) / s.stride
        worst = max(worst, crossing / capacity)
    return Terms(worst, hop * sum(s.hops * s.stride for s in spans))


def switched_gather(
    volume: float,
    per_host: int,
    hosts: int,
    fast_bw: float,
    net_bw: float | None,
    hop: float,
    members: int = 0,
) -> Terms:
    """All-gather of ``volume`` bytes over ``per_host`` devices on each of ``hosts`` hosts
    (``members`` in all; default ``per_host * hosts``): a ring inside each host (``fast_bw``
    per device), and each member sending its own ``volume / members`` to every other host
    over its own network link (``net_bw`` per device). :mod:`shardviz.analysis.estimate.
    physical` routes the same transfers onto the links."""
    terms = [0.0]
    if per_host > 1:
        terms.append(volume * (per_host - 1) / (per_host * fast_bw))
    if hosts > 1:
        n = members or per_host * hosts
        terms.append(volume * (hosts - 1) / (n * _need(net_bw)))
    return Terms(max(terms), hop * ((per_host - 1) + (hosts - 1)))


def switched_all_to_all(
    in_bytes: float, per_host: int, hosts: int, fast_bw: float, net_bw: float | None, hop: float
) -> Terms:
    """All-to-all of ``in_bytes`` per device: each device sends ``1/N`` to every other, the
    part for other hosts through its own NIC."""
    n = per_host * hosts
    terms = [0.0]
    if per_host > 1:
        terms.append(in_bytes * (per_host - 1) / n / fast_bw)
    if hosts > 1:
        terms.append(in_bytes * (n - per_host) / n / _need(net_bw))
    return Terms(max(terms), hop * ((per_host > 1) + (hosts > 1)))


def _need(bw: float | None) -> float:
    if not bw:
        raise ValueError("the target has no network bandwidth between hosts/slices")
    return bw


# ----- placement of one group -----


def axis_spans(chips: Sequence[tuple[int, ...]], target: Target) -> list[AxisSpan]:
    """The physical axes a set of chips spans, each a ring or a line, with its stride."""
    out = []
    for a, n_axis in enumerate(target.shape):
        vals = sorted({c[a] for c in chips})
        if len(vals) < 2:
            continue
        gaps = {b - a_ for a_, b in zip(vals, vals[1:], strict=False)}
        even = len(gaps) == 1
        stride = gaps.pop() if even else math.ceil((vals[-1] - vals[0]) / (len(vals) - 1))
        ring = even and target.wraparound[a] and len(vals) * stride == n_axis
        out.append(AxisSpan(a, len(vals), ring, stride))
    return out


def _ici_bw(target: Target) -> float:
    hw = target.hardware
    if not hw.ici_link_bandwidth:
        raise ValueError(f"{hw.name} has no ICI link bandwidth")
    return hw.ici_link_bandwidth


def _group_timing(kind: str, volume: float, group: Sequence[int], place: Placement,
                  target: Target) -> tuple[Terms, str, str]:  # fmt: skip
    """Time of one group (all groups of a collective run at once), the path, the link."""
    hw = target.hardware
    hop = hw.hop_latency
    sites = [place[i] for i in group]
    slices = sorted({s.slice for s in sites})
    if target.kind != "tpu":
        by_host: dict[tuple[int, int], int] = {}
        for s in sites:
            by_host[(s.slice, s.host)] = by_host.get((s.slice, s.host), 0) + 1
        hosts, per_host = len(by_host), max(by_host.values())
        nv = hw.nvlink_bandwidth or hw.hbm_bandwidth
        net_bw = hw.network_bandwidth_per_device
        if kind != "all-to-all":
            timing = switched_gather(volume, per_host, hosts, nv, net_bw, hop, len(sites))
        else:
            timing = switched_all_to_all(volume, per_host, hosts, nv, net_bw, hop)
        fast, net = _link_names(target)
        link = fast if hosts == 1 else f"{fast} + {net}"
        where = f"{per_host} GPU{'s' if per_host > 1 else ''} on each of {hosts} hosts"
        return timing, where if hosts > 1 else f"{per_host} GPUs in one host", link
    # TPU: ICI inside each slice, DCN between slices.
    ici = Terms(0.0, 0.0)
    path = "one chip"
    per_slice = 0
    for sl in slices:
        members = [s for s in sites if s.slice == sl]
        per_slice = max(per_slice, len(members))
        chips = sorted({s.chip for s in members})
        if len(chips) < 2:
            continue
        spans = axis_spans(chips, target)
        torus = torus_all_to_all if kind == "all-to-all" else torus_gather
        t = torus(volume, spans, _ici_bw(target), hop)
        if t.seconds >= ici.seconds:
            ici, path = t, " + ".join(s.label for s in spans) or "one chip"
    if len(slices) < 2:
        return ici, path, "ICI" if path != "one chip" else "on-chip"
    dcn_bw = hw.network_bandwidth_per_device
    if kind == "all-to-all":
        dcn = switched_all_to_all(volume, per_slice, len(slices), math.inf, dcn_bw, hop)
    else:
        dcn = switched_gather(volume, 1, len(slices), math.inf, dcn_bw, hop, len(sites))
    both = Terms(max(ici.bandwidth_seconds, dcn.bandwidth_seconds),
                  ici.latency_seconds + dcn.latency_seconds)  # fmt: skip
    return both, f"{path}; {len(slices)} slices", "ICI + DCN"


def _permute_timing(nbytes: float, pairs: Sequence[tuple[int, int]], place: Placement,
                    target: Target, memo: dict | None = None) -> tuple[Terms, str, str]:  # fmt: skip
    """The slowest of a collective-permute's sends: each pair's link and hops
    (:func:`_pair_links`, worked out once per pairs and placement in ``memo``) at ``nbytes``."""
    key = ("pairs", tuple(pairs))
    links = memo.get(key) if memo is not None else None
    if links is None:
        links = _pair_links(pairs, place, target)
        if memo is not None:
            memo[key] = links
    worst, where, link = Terms(0.0, 0.0), "no transfer", "none"
    for bandwidth, latency, w, lk in links:
        t = Terms(nbytes / bandwidth, latency)
        if t.seconds >= worst.seconds:
            worst, where, link = t, w, lk
    return worst, where, link


def _pair_links(
    pairs: Sequence[tuple[int, int]], place: Placement, target: Target
) -> tuple[tuple[float, float, str, str], ...]:
    """Each distinct way a pair's bytes travel, in the order last met: the bandwidth,
    latency, where (``3 hops over 2 axes``, ``across hosts``) and the link's name."""
    hw = target.hardware
    seen: dict[tuple[float, float, str, str], None] = {}
    for src, dst in pairs:
        a, b = place[src], place[dst]
        if src == dst or (a.slice, a.chip, a.host) == (b.slice, b.chip, b.host):
            continue
        if a.slice != b.slice or (target.kind != "tpu" and a.host != b.host):
            bw = _need(hw.network_bandwidth_per_device)
            where = "across slices" if a.slice != b.slice else "across hosts"
            found = (bw, hw.hop_latency, where, _link_names(target)[1])
        elif target.kind != "tpu":
            bw = hw.nvlink_bandwidth or hw.hbm_bandwidth
            found = (bw, hw.hop_latency, "within a host", _link_names(target)[0])
        else:
            dist = []
            for ax, (p, q) in enumerate(zip(a.chip, b.chip, strict=True)):
                d = abs(p - q)
                if target.wraparound[ax]:
                    d = min(d, target.shape[ax] - d)
                dist.append(d)
            hops, ports = sum(dist), sum(1 for d in dist if d)
            found = (ports * _ici_bw(target), hops * hw.hop_latency,
                     f"{hops} hops over {ports} axes", "ICI")  # fmt: skip
        seen.pop(found, None)  # the last pair met with it decides a tie, as it always did
        seen[found] = None
    return tuple(seen)


def _link_names(target: Target) -> tuple[str, str]:
    """The fast link inside a host and the network between hosts (or slices)."""
    if target.kind == "tpu":
        return "ICI", "DCN"
    if target.kind == "gpu":
        return "NVLink", "InfiniBand"
    return "in-host", "network"


def volume_of(c: Collective) -> float:
    """The bytes the formulas take: gathered output for an all-gather, the input otherwise."""
    return float(c.out_bytes if c.kind == "all-gather" else c.in_bytes)


def collective_time(
    c: Collective, place: Placement, target: Target, memo: dict | None = None
) -> CollectiveTime:
    """Estimated seconds of one run of ``c`` on ``target`` with devices placed by ``place``.

    All of a collective's groups run at once; the slowest sets the time. Unknown kinds get
    the all-gather formula on their input. ``memo``: a dict kept across the collectives of
    one ledger on one placement (a ledger repeats its groups and pairs, one layer after
    another): what depends on those alone is worked out once.
    """
    memo = {} if memo is None else memo
    volume = volume_of(c)
    if c.kind == "collective-permute":
        t, where, link = _permute_timing(volume, c.pairs, place, target, memo)
        text = f"send {format_bytes(volume)} {where}"
    else:
        worst: tuple[Terms, str, str] | None = None
        cache: dict[tuple, tuple[Terms, str, str]] = {}
        for key, g in _group_shapes(c.groups, place, memo):
            got = cache.get(key)
            if got is None:
                got = cache[key] = _group_timing(c.kind, volume, g, place, target)
            if worst is None or got[0].seconds > worst[0].seconds:
                worst = got
        t, where, link = worst if worst is not None else (Terms(0.0, 0.0), "no group", "none")
        if c.kind in RING_KINDS:
            ring = ("ring", c.groups)
            if ring not in memo:
                memo[ring] = ring_penalty(c.groups, place, target)
            busier, longer = memo[ring]
            if busier > 1 or longer > 1:
                t = Terms(t.bandwidth_seconds * busier, t.latency_seconds * longer)
                where += f", {ring_words(busier, longer)}"
        if c.kind == "all-reduce":
            t = t.times(2)
        text = f"{format_bytes(volume)} over {where}"
        if c.kind == "all-reduce":
            text = f"2 x ({text})  [reduce-scatter + all-gather]"
    floor = format_seconds(t.latency_seconds)
    text += (
        f": max(latency {floor}, bandwidth {format_seconds(t.bandwidth_seconds)}) on {link}"
        if link not in ("none", "on-chip")
        else f" ({link})"
    )
    return CollectiveTime(t.seconds, text, link, t.latency_bound)


def _group_shapes(
    groups: tuple[tuple[int, ...], ...], place: Placement, memo: dict
) -> tuple[tuple[tuple, tuple[int, ...]], ...]:
    """Each group with the key of its shape on the chips (groups that are translates of each
    other take the same time), once per groups and placement (in ``memo``)."""
    key = ("groups", groups)
    if key not in memo:
        memo[key] = tuple(
            ((len(g), _shape_signature(tuple(sorted((place[i].slice, place[i].host, place[i].chip)
                                                    for i in g)))), g)
            for g in groups
        )  # fmt: skip
    return memo[key]


#: The kinds whose groups run as rings through their members in the order listed.
RING_KINDS = ("all-gather", "reduce-scatter", "all-reduce")


def ring_words(busier: float, longer: float) -> str:
    """``rings as listed load the busiest link 3x and take 1.5x the hops``: how much worse
    the groups' rings are in their order than laid in order on the chips."""
    parts = []
    if busier > 1:
        parts.append(f"load the busiest link {sig3(busier)}x")
    if longer > 1:
        parts.append(f"take {sig3(longer)}x the hops")
    return "rings in this device order " + " and ".join(parts)


def _shape_signature(sig: tuple) -> tuple:
    """Groups that are translates of each other take the same time: key them alike."""
    if not sig:
        return sig
    slices = tuple(s for s, _, _ in sig)
    chips = [c for _, _, c in sig]
    lo = tuple(min(c[a] for c in chips) for a in range(len(chips[0])))
    rel = tuple(tuple(x - m for x, m in zip(c, lo, strict=True)) for c in chips)
    hosts = tuple(sorted(Counter((s, h) for s, h, _ in sig).values()))
    return (len(set(slices)), hosts, tuple(sorted(rel)))
