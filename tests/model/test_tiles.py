"""Tiles from a spec, without jax in the code under test: ``shardviz.model.tiles``.

``tiles_from_spec`` is checked against jax's own placement (``NamedSharding.devices_indices_map``
and ``shardviz.layout``) with hypothesis over meshes and specs on the 8 test devices, against
hand-computed tiles, and through ``Report.intermediate_layout``, which draws the tiles of a
value the compiler reports only by its spec.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.capture.layout import layout_of
from shardviz.capture.mesh import mesh_layout
from shardviz.errors import ShardvizError, SpecError
from shardviz.model import (
    ArrayLayout,
    ShardingOf,
    Tile,
    dtype_bits,
    layout_from_spec,
    padded_spec,
    tiles_from_spec,
)
from shardviz.render.html import array_html
from shardviz.render.text import array_text
from tests.render.fixtures import make_layout, make_mesh, mesh_2x4
from tests.render.report_fixtures import dp_report, nasty_report, shard_map_report

# --------------------------------------------------------------------------------------------
# tiles_from_spec against jax

MESH_SHAPES = [(8,), (2, 4), (4, 2), (1, 8), (2, 2, 2), (2, 1, 4), (4,), (2,), (1,)]
NAMES = ("a", "b", "c")


@st.composite
def placements(draw):
    """A jax mesh (devices in a drawn order), a spec assigning its axes to dims, and a shape
    whose dims divide evenly (what NamedSharding accepts)."""
    shape_m = draw(st.sampled_from(MESH_SHAPES))
    n = math.prod(shape_m)
    order = draw(st.permutations(range(8)))[:n]
    devices = np.array([jax.devices()[i] for i in order]).reshape(shape_m)
    mesh = jax.sharding.Mesh(devices, NAMES[: len(shape_m)])
    ndim = draw(st.integers(0, 3))
    entries: list[list[str]] = [[] for _ in range(ndim)]
    for axis in draw(st.permutations(mesh.axis_names)):  # each axis on at most one dim
        if ndim and draw(st.booleans()):
            entries[draw(st.integers(0, ndim - 1))].append(axis)
    sizes = dict(mesh.shape)
    shape = tuple(math.prod(sizes[a] for a in e) * draw(st.integers(1, 3)) for e in entries)
    spec = tuple(tuple(e) for e in entries)
    dtype = draw(st.sampled_from(["float32", "bfloat16", "int8", "bool", "float64"]))
    return mesh, spec, shape, dtype


def _p(spec):
    return P(*(None if not e else e[0] if len(e) == 1 else tuple(e) for e in spec))


@settings(max_examples=150, deadline=None)
@given(placements())
def test_tiles_match_jax_devices_indices_map(placement):
    mesh, spec, shape, dtype = placement
    sharding = NamedSharding(mesh, _p(spec))
    ours = tiles_from_spec(shape, dtype, spec, mesh_layout(mesh))
    jax_map = {d.id: idx for d, idx in sharding.devices_indices_map(shape).items()}
    assert len(ours) == mesh.size
    for t in ours:
        want = tuple(
            slice(*s.indices(n)[:2]) for s, n in zip(jax_map[t.device_id], shape, strict=True)
        )
        assert t.index == want, (spec, shape, t.device_id)
    # ...and equal, field by field (replica numbers and bytes too), to what shardviz.layout says.
    real = layout_of(shape, dtype, sharding)
    assert ours == real.tiles
    # the whole layout too, but for the spec, which layout_from_spec pads to the array's rank
    ours_layout = layout_from_spec(real.name, shape, dtype, spec, mesh_layout(mesh))
    assert dataclasses.replace(ours_layout, spec=real.spec) == real


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40), st.sampled_from([(("a",),), (("b", "a"),), (("a", "b"),), ((),)]))
def test_uneven_dims_are_cut_like_the_compiler_pads_them(n, spec):
    """ceil(n / k) chunks, the last ones short or empty: every element held once per replica set."""
    mesh = make_mesh(("a", "b"), (2, 4))
    tiles = tiles_from_spec((n,), "float32", spec, mesh)
    k = math.prod(mesh.axis_size(a) for a in spec[0])
    pieces = sorted({t.key for t in tiles})
    covered = [i for (key,) in pieces for i in range(*key)]
    assert covered == list(range(n))  # disjoint and complete
    assert all(t.shape[0] <= -(-n // k) for t in tiles)
    assert all(t.nbytes == 4 * t.shape[0] for t in tiles)
    # the hand-built fixtures (tests/render/fixtures.py) use the same convention
    assert tiles == make_layout("x", (n,), [spec[0] or None], mesh).tiles


# --------------------------------------------------------------------------------------------
# By hand


def test_hand_computed_tiles_on_a_shuffled_mesh():
    """(4, 6) bfloat16 split over 'data' on dim 1; devices 3, 1, 0, 2 in mesh order."""
    mesh = make_mesh(("data", "model"), (2, 2), ids=[3, 1, 0, 2])
    tiles = tiles_from_spec((4, 6), "bfloat16", ((), ("data",)), mesh)
    left, right = (slice(0, 4), slice(0, 3)), (slice(0, 4), slice(3, 6))
    assert tiles == (
        Tile(3, left, (4, 3), 24, 0),
        Tile(1, left, (4, 3), 24, 1),
        Tile(0, right, (4, 3), 24, 0),
        Tile(2, right, (4, 3), 24, 1),
    )


def test_replicas_are_numbered_in_mesh_order():
    tiles = tiles_from_spec((8, 4), "float32", (("data",), ()), mesh_2x4())
    assert [(t.device_id, t.replica_id) for t in tiles] == [
        (0, 0), (1, 1), (2, 2), (3, 3), (4, 0), (5, 1), (6, 2), (7, 3)
    ]  # fmt: skip


def test_short_spec_leaves_the_rest_unsplit():
    tiles = tiles_from_spec((8, 4, 2), "float32", (("data",),), mesh_2x4())
    assert tiles[0].index == (slice(0, 4), slice(0, 4), slice(0, 2))
    assert padded_spec((8, 4, 2), (("data",),), mesh_2x4()) == (("data",), (), ())


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ((("nope",), ()), "names axis 'nope'"),
        ((("data",), ("data",)), "uses axis 'data' twice"),
        (((), (), ()), "3 entries for rank 2"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec, match):
    with pytest.raises(SpecError, match=match):
        tiles_from_spec((8, 4), "float32", spec, mesh_2x4())
    with pytest.raises(ValueError, match=match):  # SpecError is a ValueError, as it was
        padded_spec((8, 4), spec, mesh_2x4())


def test_dtype_sizes_and_sub_byte_rounding():
    assert [dtype_bits(d) for d in ("float32", "bfloat16", "bool", "int4", "uint8")] == [
        32, 16, 8, 4, 8
    ]  # fmt: skip
    assert dtype_bits("float8_e4m3fn") == 8 and dtype_bits("complex64") == 64
    assert tiles_from_spec((3,), "int4", ((),), mesh_2x4())[0].nbytes == 2
    assert layout_from_spec("q", (3,), "int4", (), mesh_2x4()).itemsize == 1
    with pytest.raises(ValueError, match="token"):
        dtype_bits("token")


# --------------------------------------------------------------------------------------------
# Report.intermediate_layout: the tiles of a value known only by its spec


def _report_with(*values: ShardingOf):
    mesh = make_mesh(("data", "model"), (2, 2))
    return dataclasses.replace(dp_report(), mesh=mesh, intermediates=values)


def _value(name: str, shape, spec, dtype: str = "float32") -> ShardingOf:
    return ShardingOf(name, "dot", dtype, tuple(shape), spec, "{devices=[2,2]<=[4]}")


def test_a_small_intermediate_by_name_and_by_index():
    """(4, 6) float32 over ('data', 'model') on a 2x2 mesh: four 2x3 tiles of 24 bytes."""
    report = _report_with(
        _value("add.1", (4,), ((),)), _value("dot.2", (4, 6), (("data",), ("model",)))
    )
    layout = report.intermediate_layout("dot.2")
    assert isinstance(layout, ArrayLayout)
    assert (layout.name, layout.shape, layout.dtype, layout.itemsize) == (
        "dot.2", (4, 6), "float32", 4
    )  # fmt: skip
    assert layout.spec == (("data",), ("model",)) and layout.mesh == report.mesh
    assert [(t.device_id, t.key, t.shape, t.nbytes, t.replica_id) for t in layout.tiles] == [
        (0, ((0, 2), (0, 3)), (2, 3), 24, 0),
        (1, ((0, 2), (3, 6)), (2, 3), 24, 0),
        (2, ((2, 4), (0, 3)), (2, 3), 24, 0),
        (3, ((2, 4), (3, 6)), (2, 3), 24, 0),
    ]
    assert layout.kind == "tiled"
    assert report.intermediate_layout(1) == layout == report.intermediate_layout(-1)
    # a replicated one, spec shorter than the rank: one tile on all four devices
    rep = report.intermediate_layout(0)
    assert rep.kind == "replicated" and {t.key for t in rep.tiles} == {((0, 4),)}


def test_it_draws_like_any_array():
    layout = dp_report().intermediate_layout("dot.9")
    assert str(layout) == array_text(layout)
    assert layout._repr_html_() == array_html(layout)
    assert "dot.9 · float32[512, 1024] · P(None, None) · replicated" in str(layout)


def test_repeated_names_give_the_first():
    report = _report_with(_value("x", (4,), (("data",),)), _value("x", (4,), ((),)))
    assert report.intermediate_layout("x").spec == (("data",),)


def test_unknown_name_lists_names_and_says_the_fix():
    with pytest.raises(ShardvizError) as err:
        dp_report().intermediate_layout("dot.99")
    msg = str(err.value)
    assert "report.intermediate_layout('dot.99')" in msg
    assert "no intermediate named 'dot.99'" in msg
    assert "(it has 11: 'dot.1', 'tanh.2', 'dot.3', 'subtract.4', 'reduce.5', …)" in msg
    assert "Fix: pass a name listed under Intermediates" in msg
    with pytest.raises(ShardvizError, match="no intermediate at position 11"):
        dp_report().intermediate_layout(11)
    with pytest.raises(ShardvizError, match=r"records none"):
        _report_with().intermediate_layout("x")


def test_a_value_without_a_spec_says_which_have_one():
    with pytest.raises(SpecError) as err:
        shard_map_report().intermediate_layout("add.2")
    msg = str(err.value)
    assert "'add.2' has no named spec (the compiler's sharding is {manual})" in msg
    assert "Fix: pick a value whose spec is a P(...), e.g. 'custom-call.3', 'copy.5'." in msg


def test_no_mesh_or_a_bad_dtype_is_a_spec_error():
    with pytest.raises(SpecError, match="no mesh to place 'dot.1'"):
        dataclasses.replace(dp_report(), mesh=None).intermediate_layout("dot.1")
    with pytest.raises(SpecError, match="unknown element size for dtype '<f4&'"):
        nasty_report().intermediate_layout(0)
    report = _report_with(_value("w", (4,), (("model",),)))
    assert len(report.intermediate_layout("w").tiles) == 4
    on_data_only = dataclasses.replace(report, mesh=make_mesh(("data",), (4,)))
    with pytest.raises(SpecError, match="names axis 'model', not one of the mesh's"):
        on_data_only.intermediate_layout("w")
