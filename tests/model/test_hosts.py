"""The host split of the ledger (shardviz.model.hosts), on small hand-made meshes.

Every figure is worked out by hand from the definition in ``Collective``'s docstring: a group
of ``n`` devices on ``h > 1`` hosts sends ``moved * h / n`` per device across hosts (its ring,
laid out host by host, crosses ``h`` of its ``n`` hops); a permute's hops are its pairs.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardviz.model import Collective, Device, MeshLayout
from shardviz.model.hosts import (
    axis_hosts,
    axis_spans,
    cross_host_split,
    is_model_parallel,
    process_map,
    ring_crossings,
    with_host_split,
)


def mesh(names, sizes, procs) -> MeshLayout:
    """Devices 0..n-1 in row-major order, device ``i`` on process ``procs[i]``."""
    return MeshLayout(tuple(names), tuple(sizes), tuple(Device(i, p) for i, p in enumerate(procs)))


#: 2x4 ('data', 'model'): row i on process i, so 'data' crosses hosts and 'model' does not.
TWO_HOSTS = mesh(("data", "model"), (2, 4), [0, 0, 0, 0, 1, 1, 1, 1])
#: The same mesh on four hosts of two devices: {0,1} {2,3} {4,5} {6,7}.
FOUR_HOSTS = mesh(("data", "model"), (2, 4), [0, 0, 1, 1, 2, 2, 3, 3])
DATA = ((0, 4), (1, 5), (2, 6), (3, 7))
MODEL = ((0, 1, 2, 3), (4, 5, 6, 7))


def coll(kind, groups, moved, axes=(), in_bytes=1024, pairs=(), trips=1) -> Collective:
    return Collective(
        name="c", kind=kind, in_dtype="f32", in_shape=(256,), out_dtype="f32",
        out_shape=(256,), in_bytes=in_bytes, out_bytes=in_bytes, moved_bytes=moved,
        group_size=max((len(g) for g in groups), default=1), groups=groups, axes=axes,
        pairs=pairs, trips=trips,
    )  # fmt: skip


def split(c: Collective, m: MeshLayout = TWO_HOSTS) -> tuple[int, tuple[int, ...]]:
    return cross_host_split(c, process_map(m))


def test_pairs_across_two_hosts_send_everything_across() -> None:
    # all-reduce of 1 KiB over 2 devices: moved 2 * 1024 * 1/2 = 1024; both hops cross.
    assert split(coll("all-reduce", DATA, 1024, ("data",))) == (1024, (0, 1, 2, 3))


def test_groups_within_a_host_send_nothing_across() -> None:
    assert split(coll("all-gather", MODEL, 3072, ("model",))) == (0, ())


def test_a_group_over_two_hosts_of_four_crosses_two_hops_of_eight() -> None:
    # all-gather to 8 KiB over all 8: moved 8192 * 7/8 = 7168; 2 of 8 hops cross -> 1792.
    c = coll("all-gather", ((0, 1, 2, 3, 4, 5, 6, 7),), 7168, ("data", "model"))
    assert split(c) == (1792, (0,))


def test_four_hosts_of_two() -> None:
    # reduce-scatter of 4 KiB over 'model' (4 devices on 2 hosts): moved 3072, 2 of 4 hops.
    assert split(coll("reduce-scatter", MODEL, 3072, ("model",)), FOUR_HOSTS) == (1536, (0, 1))
    # 'data' pairs {0,4}: hosts 0 and 2, each device on a host of its own in the pair.
    assert split(coll("all-reduce", DATA, 1024, ("data",)), FOUR_HOSTS) == (1024, (0, 1, 2, 3))


def test_listing_order_does_not_matter() -> None:
    """The ring visits each host's devices together, however the group lists them."""
    procs = {0: 0, 1: 0, 4: 1, 5: 1}
    assert ring_crossings((0, 4, 1, 5), procs) == ring_crossings((0, 1, 4, 5), procs) == (2, 4)
    assert ring_crossings((0, 1), procs) == (0, 2)


def test_the_group_that_crosses_most_sets_the_figure() -> None:
    # Group 0 within host 0; group 1 = {2, 3} on hosts 0 and 1: moved 1000, 2 of 2 hops.
    procs = {0: 0, 1: 0, 2: 0, 3: 1}
    c = coll("all-reduce", ((0, 1), (2, 3)), 1000)
    assert cross_host_split(c, procs) == (1000, (1,))
    # Rounded down: 3 hosts among 7 devices, 700 moved -> 700 * 3 // 7 = 300.
    procs7 = {i: p for i, p in enumerate([0, 0, 0, 1, 1, 2, 2])}
    assert cross_host_split(coll("all-gather", (tuple(range(7)),), 700), procs7) == (300, (0,))


def test_permute_ring_over_two_hosts() -> None:
    # 0->1->2->3->0 with {0,1} on host 0 and {2,3} on host 1: pairs 1->2 and 3->0 cross.
    procs = {0: 0, 1: 0, 2: 1, 3: 1}
    pairs = ((0, 1), (1, 2), (2, 3), (3, 0))
    c = coll("collective-permute", ((0, 1, 2, 3),), 1024, pairs=pairs)
    assert cross_host_split(c, procs) == (512, (0,))


def test_permute_pairs_each_leaving_their_host() -> None:
    pairs = ((0, 4), (1, 5))
    c = coll("collective-permute", ((0, 4), (1, 5)), 1024, ("data",), pairs=pairs)
    assert split(c) == (1024, (0, 1))
    # The same pairs within a host ('model' row): nothing crosses.
    inside = coll("collective-permute", ((0, 1), (2, 3)), 1024, pairs=((0, 1), (2, 3)))
    assert split(inside) == (0, ())


def test_permute_that_moves_nothing() -> None:
    c = coll("collective-permute", ((0,), (4,)), 0, pairs=((0, 0), (4, 4)))
    assert split(c) == (0, ())


def test_one_process_leaves_the_ledger_as_it_was() -> None:
    one = mesh(("data", "model"), (2, 4), [0] * 8)
    ledger = (coll("all-reduce", DATA, 1024, ("data",)),)
    assert with_host_split(ledger, process_map(one)) == ledger
    assert ledger[0].cross_host_bytes == 0 and ledger[0].cross_host_groups == ()


def test_with_host_split_fills_the_fields() -> None:
    ledger = (
        coll("all-reduce", DATA, 1024, ("data",)),
        coll("all-gather", MODEL, 3072, ("model",)),
    )
    out = with_host_split(ledger, process_map(TWO_HOSTS))
    assert [(c.cross_host_bytes, c.cross_host_groups) for c in out] == [
        (1024, (0, 1, 2, 3)),
        (0, ()),
    ]


def test_an_unknown_device_is_an_error() -> None:
    with pytest.raises(ValueError, match="device 9"):
        split(coll("all-reduce", ((0, 9),), 10))


def test_axis_hosts() -> None:
    assert axis_hosts(TWO_HOSTS, "data") == 2 and axis_hosts(TWO_HOSTS, "model") == 1
    assert axis_hosts(FOUR_HOSTS, "data") == 2 and axis_hosts(FOUR_HOSTS, "model") == 2


@pytest.mark.parametrize(
    ("axis", "model_parallel"),
    [("data", False), ("batch", False), ("dp", False), ("fsdp", False), ("dcn_data", False),
     ("stage", False), ("pp", False), ("Pipe", False), ("model", True), ("tensor", True),
     ("expert", True), ("seq", True), ("tp", True)],
)  # fmt: skip
def test_is_model_parallel(axis: str, model_parallel: bool) -> None:
    assert is_model_parallel(axis) is model_parallel


def test_axis_spans_per_step() -> None:
    """Per axis that spans hosts, the cross-host bytes of a step (times the loop's trips);
    an axis within hosts is left out even when a collective over it and another axis
    crosses."""
    ledger = with_host_split(
        (
            coll("all-reduce", MODEL, 3072, ("model",), trips=3),  # 2 of 4 hops -> 1536 x 3
            coll("all-gather", DATA, 1024, ("data",)),  # pairs on two hosts: all 1024 cross
            coll("reduce-scatter", ((0, 1),), 512, ("model",)),  # within host 0
        ),
        process_map(FOUR_HOSTS),
    )
    spans = {s.axis: s for s in axis_spans(ledger, FOUR_HOSTS)}
    assert spans["model"].bytes_per_step == 1536 * 3 and spans["model"].count == 1
    assert spans["model"].hosts == 2 and spans["model"].model_parallel
    assert spans["data"].bytes_per_step == 1024 and not spans["data"].model_parallel
    two = with_host_split((coll("all-gather", ((0, 1, 2, 3, 4, 5, 6, 7),), 7168, ("data", "model")),),
                          process_map(TWO_HOSTS))  # fmt: skip
    assert [s.axis for s in axis_spans(two, TWO_HOSTS)] == ["data"]
    assert axis_spans(two, None) == []


# --- properties -------------------------------------------------------------------------------


def components(pairs) -> tuple[tuple[int, ...], ...]:
    """The connected parts of a permute's pair graph (how the ledger groups a permute)."""
    parts: list[set[int]] = []
    for s, t in pairs:
        touching = [p for p in parts if s in p or t in p]
        merged = {s, t}.union(*touching)
        parts = [p for p in parts if p not in touching] + [merged]
    return tuple(tuple(sorted(p)) for p in sorted(parts, key=min))


@st.composite
def ledgers(draw):
    """A collective on ``n`` devices with random hosts: equal groups of a shuffled order, or
    random permute pairs grouped as the ledger groups them; and its device -> process map."""
    n = draw(st.integers(1, 16))
    procs = {i: draw(st.integers(0, 3)) for i in range(n)}
    order = draw(st.permutations(list(range(n))))
    size = draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
    groups = tuple(tuple(order[i : i + size]) for i in range(0, n, size))
    kind = draw(st.sampled_from(["all-gather", "all-reduce", "reduce-scatter", "all-to-all",
                                 "collective-permute"]))  # fmt: skip
    moved = draw(st.integers(0, 1 << 40))
    pairs: tuple = ()
    if kind == "collective-permute":
        pairs = tuple(zip(order, draw(st.permutations(order)), strict=True))
        groups = components(pairs)
    return coll(kind, groups, moved, pairs=pairs), procs


@settings(max_examples=300, deadline=None)
@given(ledgers())
def test_cross_host_bytes_are_part_of_moved(case) -> None:
    c, procs = case
    crossing, groups = cross_host_split(c, procs)
    assert 0 <= crossing <= c.moved_bytes
    assert groups == tuple(k for k, g in enumerate(c.groups) if len({procs[d] for d in g}) > 1)
    one = dict.fromkeys(procs, 7)
    assert cross_host_split(c, one) == (0, ())
    if not groups:
        assert crossing == 0
