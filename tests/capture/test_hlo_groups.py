"""Replica-group encodings -> ids, and the user's mesh axes the groups span (no jax)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardviz.capture.hlo.groups import (
    axes_of_groups,
    axes_of_pairs,
    expand_replica_groups,
    to_device_ids,
)
from shardviz.capture.hlo.text import HloParseError

from . import MESH_2X4, MESH_8_DATA, hlo_text, mesh_of

ROWS = ((0, 1, 2, 3), (4, 5, 6, 7))  # 'model' on the 2x4 mesh
COLS = ((0, 4), (1, 5), (2, 6), (3, 7))  # 'data' on the 2x4 mesh
ALL = ((0, 1, 2, 3, 4, 5, 6, 7),)


# Each encoding, as printed by jax 0.10.2 (the "live" ones appear in a saved compile).
@pytest.mark.parametrize(
    ("text", "groups", "live_in"),
    [
        ("{{0,1,2,3},{4,5,6,7}}", ROWS, "megatron"),
        ("{{0,4},{1,5},{2,6},{3,7}}", COLS, "megatron"),
        ("{{0,1,2,3,4,5,6,7}}", ALL, "shard_map"),
        ("[2,4]<=[8]", ROWS, "two_d"),
        ("[4,2]<=[2,4]T(1,0)", COLS, "two_d"),
        ("mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] {'axis_0'}", COLS, "dp"),
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_0'}", COLS, "two_d"),
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1'}", ROWS, "looped"),
        ("mesh['axis_0'=8,'axis_1'=1] {'axis_0'}", ALL, "fsdp"),
        ("mesh['axis_0'=1,'axis_1'=8] {'axis_1'}", ALL, "fsdp"),
        (
            "mesh['axis_0'=1,'axis_1'=8], device_ids=([2,4]T(1,0)) {'axis_1'}",
            ((0, 4, 1, 5, 2, 6, 3, 7),),
            "swapped",
        ),
        (
            "mesh['axis_0'=4,'axis_1'=2,'axis_2'=1] {'axis_1'}",
            ((0, 1), (2, 3), (4, 5), (6, 7)),
            "split_reduce",
        ),
        (
            "mesh['axis_0'=4,'axis_1'=1,'axis_2'=2] {'axis_0'}",
            ((0, 2, 4, 6), (1, 3, 5, 7)),
            "split_reduce",
        ),
    ],
)
def test_live_encodings_expand_to_hand_computed_groups(text, groups, live_in) -> None:
    assert f"replica_groups={text}" in hlo_text(live_in)
    assert expand_replica_groups(text) == groups


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        # Sub-axes ('axis':(pre-size)size), from XLA's printer (hand_sub_axes.txt).
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1':(1)2}", ((0, 2), (1, 3), (4, 6), (5, 7))),
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1':(2)2, 'axis_0'}", ((0, 4, 1, 5), (2, 6, 3, 7))),
        ("mesh['a'=8] {'a':(1)2, 'a':(4)2}", ((0, 1, 4, 5), (2, 3, 6, 7))),
        ("mesh['a'=8] {'a':(4)2, 'a':(1)2}", ((0, 4, 1, 5), (2, 6, 3, 7))),
        # A mesh whose device order is given explicitly / as a transposed iota.
        ("mesh['a'=2,'b'=4], device_ids=(0,2,4,6,1,3,5,7) {'b'}", ((0, 2, 4, 6), (1, 3, 5, 7))),
        (
            "mesh['axis_0'=2,'axis_1'=4], device_ids=([4,2]T(1,0)) {'axis_0'}",
            ((0, 1), (2, 3), (4, 5), (6, 7)),
        ),
        # Both axes, in either order.
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1','axis_0'}", ((0, 4, 1, 5, 2, 6, 3, 7),)),
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_0','axis_1'}", ALL),
        # Iota over three dims.
        ("[4,2]<=[2,2,2]T(0,2,1)", ((0, 2), (1, 3), (4, 6), (5, 7))),
        ("[2,4]<=[4,2]T(1,0)", ((0, 2, 4, 6), (1, 3, 5, 7))),
        ("{}", ALL),
        ("", ALL),
    ],
)
def test_other_encodings(text, groups) -> None:
    assert expand_replica_groups(text, num_devices=8) == groups


def test_sub_axis_fixture_mentions_the_forms() -> None:
    text = hlo_text("hand_sub_axes")
    assert "replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1':(1)2}" in text


@pytest.mark.parametrize(
    "text", ["[2,4]<=", "mesh['a'=2] {'b'}", "garbage", "mesh['a'=2], device_ids=(0,1,2) {'a'}"]
)
def test_bad_encodings_raise(text) -> None:
    with pytest.raises(HloParseError):
        expand_replica_groups(text, 8)


def test_empty_groups_need_the_device_count() -> None:
    with pytest.raises(HloParseError, match="num_devices"):
        expand_replica_groups("{}")


def test_to_device_ids_maps_logical_ids() -> None:
    assignment = (0, 2, 4, 6, 1, 3, 5, 7)
    assert to_device_ids(ROWS, assignment) == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert to_device_ids(ROWS, None) == ROWS


# --- axes_of_groups ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "axes"),
    [
        (COLS, ("data",)),
        (ROWS, ("model",)),
        (ALL, ("data", "model")),
        (((0, 4, 1, 5, 2, 6, 3, 7),), ("model", "data")),
        (((0,), (1,), (2,), (3,), (4,), (5,), (6,), (7,)), ()),
        (((0, 2), (1, 3), (4, 6), (5, 7)), ()),  # a sub-axis of 'model'
        (((0, 1, 2, 3),), ("model",)),  # only part of the mesh takes part
        (((4, 0), (5, 1), (6, 2), (7, 3)), ("data",)),  # no order fits: the sets do
        (((0, 9),), ()),  # an id not in the mesh
    ],
)
def test_axes_of_groups_on_2x4(groups, axes) -> None:
    assert axes_of_groups(groups, MESH_2X4) == axes


def test_axes_of_groups_in_other_orders_fall_back_to_mesh_order() -> None:
    # Same sets as 'model', listed in another order (an all-reduce does not care).
    assert axes_of_groups(((0, 2, 1, 3), (4, 6, 5, 7)), MESH_2X4) == ("model",)
    assert axes_of_groups(((1, 0, 2, 3),), MESH_2X4) == ("model",)


@pytest.mark.parametrize(
    ("text", "mesh", "axes"),
    [
        # The compiler renames axes and adds size-1 ones: never map by position.
        ("mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] {'axis_0'}", MESH_2X4, ("data",)),
        ("mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] {'axis_2'}", MESH_2X4, ("model",)),
        ("mesh['axis_0'=1,'axis_1'=8] {'axis_1'}", MESH_8_DATA, ("data",)),
        ("mesh['axis_0'=8,'axis_1'=1] {'axis_0'}", MESH_8_DATA, ("data",)),
        (
            "mesh['axis_0'=1,'axis_1'=8], device_ids=([2,4]T(1,0)) {'axis_1'}",
            MESH_2X4,
            ("model", "data"),
        ),
        ("mesh['axis_0'=4,'axis_1'=2,'axis_2'=1] {'axis_1'}", MESH_8_DATA, ()),
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1':(1)2}", MESH_2X4, ()),
        # The user's own mesh has a size-1 axis.
        ("[2,4]<=[8]", mesh_of(("pod", "data", "model"), (1, 2, 4)), ("model",)),
        ("[4,2]<=[2,4]T(1,0)", mesh_of(("data", "one", "model"), (2, 1, 4)), ("data",)),
    ],
)
def test_axes_of_renamed_and_size_one_mesh_forms(text, mesh, axes) -> None:
    assert axes_of_groups(expand_replica_groups(text), mesh) == axes


def test_axes_on_a_reordered_mesh_use_device_ids() -> None:
    # Mesh rows hold devices 0,2,4,6 and 1,3,5,7; HLO logical ids are positions in that order.
    assignment = (0, 2, 4, 6, 1, 3, 5, 7)
    mesh = mesh_of(("data", "model"), (2, 4), ids=assignment)
    groups = to_device_ids(expand_replica_groups("{{0,1,2,3},{4,5,6,7}}"), assignment)
    assert groups == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert axes_of_groups(groups, mesh) == ("model",)


def test_axes_of_groups_without_a_mesh() -> None:
    assert axes_of_groups(ROWS, None) == ()


def test_axes_of_pairs() -> None:
    ring = tuple((j, (j + 1) % 4 + 4 * (j // 4)) for j in range(8))
    assert axes_of_pairs(ring, MESH_2X4) == ("model",)
    assert axes_of_pairs(((0, 4), (4, 0)), MESH_2X4) == ("data",)
    assert axes_of_pairs(((0, 5),), MESH_2X4) == ("data", "model")
    assert axes_of_pairs(((0, 0),), MESH_2X4) == ()
    assert axes_of_pairs(((0, 99),), MESH_2X4) == ()
    assert axes_of_pairs(((0, 1),), None) == ()


# --- property: groups of random meshes and axis subsets round-trip through every encoding ---


def reference_groups(sizes, subset) -> tuple[tuple[int, ...], ...]:
    """Row-major device index of each coordinate; one group per coordinate of the other
    axes (in mesh order), listing the subset's coordinates row-major in the subset's order."""
    others = [a for a in range(len(sizes)) if a not in subset]
    strides = [math.prod(sizes[a + 1 :]) for a in range(len(sizes))]
    groups = []
    for rest in itertools.product(*(range(sizes[a]) for a in others)):
        group = []
        for pos in itertools.product(*(range(sizes[a]) for a in subset)):
            coord = dict(zip(others, rest, strict=True)) | dict(zip(subset, pos, strict=True))
            group.append(sum(coord[a] * strides[a] for a in range(len(sizes))))
        groups.append(tuple(group))
    return tuple(groups)


def iota_text(sizes, subset) -> str:
    """The iota / transposed-iota encoding of those groups, as XLA would print it."""
    others = [a for a in range(len(sizes)) if a not in subset]
    perm = others + list(subset)
    group_size = math.prod(sizes[a] for a in subset)
    n = math.prod(sizes)
    head = f"[{n // group_size},{group_size}]<=[{','.join(map(str, sizes))}]"
    if perm != sorted(perm):
        head += f"T({','.join(map(str, perm))})"
    return head


def explicit_text(groups) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


def mesh_form_text(sizes, subset) -> str:
    axes = ",".join(f"'axis_{i}'={s}" for i, s in enumerate(sizes))
    refs = ",".join(f"'axis_{a}'" for a in subset)
    return f"mesh[{axes}] {{{refs}}}"


@st.composite
def meshes_and_subsets(draw):
    ndim = draw(st.integers(1, 3))
    sizes = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    order = draw(st.permutations(list(range(ndim))))
    k = draw(st.integers(0, ndim))
    names = tuple(
        draw(st.sampled_from(["x", "y", "z", "data", "model", "pipe"])) + str(i)
        for i in range(ndim)
    )
    device_order = draw(st.permutations(list(range(math.prod(sizes)))))
    return sizes, tuple(order[:k]), names, tuple(device_order)


@settings(max_examples=300, deadline=None)
@given(meshes_and_subsets())
def test_groups_round_trip_and_axes_recovered(case) -> None:
    sizes, subset, names, device_order = case
    groups = reference_groups(sizes, subset)
    n = math.prod(sizes)
    for text in (
        iota_text(sizes, subset),
        explicit_text(groups),
        mesh_form_text(sizes, subset),
    ):
        assert expand_replica_groups(text, n) == groups, text
    expected_axes = tuple(names[a] for a in subset if sizes[a] > 1)
    mesh = mesh_of(names, sizes)
    assert axes_of_groups(groups, mesh) == expected_axes
    # Devices in any order: logical id p is the p-th device of the mesh.
    mesh = mesh_of(names, sizes, ids=device_order)
    assert axes_of_groups(to_device_ids(groups, device_order), mesh) == expected_axes
