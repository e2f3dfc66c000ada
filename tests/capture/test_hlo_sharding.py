"""HLO shardings -> specs on the user's axes; intermediates and the reshard rule (no jax)."""

from __future__ import annotations

import pytest

from shardviz.capture.hlo.sharding import (
    hlo_sharding_to_spec,
    intermediates_of_hlo,
    parse_hlo_sharding,
)
from shardviz.capture.hlo.text import HloParseError
from shardviz.model import format_spec

from . import MESH_2X4, MESH_8_DATA, MESH_8_I, hlo_text, marker_line, mesh_of

MESH_222 = mesh_of(("a", "b", "c"), (2, 2, 2))


@pytest.mark.parametrize(
    ("text", "shape", "mesh", "spec"),
    [
        ("{replicated}", (4, 4), MESH_2X4, "P(None, None)"),
        ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", (4, 4), MESH_2X4, "P('data', None)"),
        (
            "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
            (4, 4),
            MESH_2X4,
            "P(None, 'model')",
        ),
        (
            "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
            (8, 4),
            MESH_2X4,
            "P('model', None)",
        ),
        ("{devices=[2,4]<=[8]}", (4, 8), MESH_2X4, "P('data', 'model')"),
        ("{devices=[4,2]<=[2,4]T(1,0)}", (4, 8), MESH_2X4, "P('model', 'data')"),
        ("{devices=[1,8]<=[8]}", (4, 8), MESH_2X4, "P(None, ('data', 'model'))"),
        ("{devices=[1,8]<=[2,4]T(1,0)}", (4, 8), MESH_2X4, "P(None, ('model', 'data'))"),
        ("{devices=[8,1]<=[8]}", (8, 4), MESH_8_DATA, "P('data', None)"),
        # Explicit device lists.
        ("{devices=[2,4]0,1,2,3,4,5,6,7}", (2, 4), MESH_2X4, "P('data', 'model')"),
        ("{devices=[4,2]0,4,1,5,2,6,3,7}", (4, 4), MESH_2X4, "P('model', 'data')"),
        (
            "{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}",
            (4, 4),
            MESH_2X4,
            "P('data', None)",
        ),
        # Three axes (shardings seen in a 2x2x2 compile).
        (
            "{devices=[2,2,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}",
            (4, 4),
            MESH_222,
            "P('b', 'a')",
        ),
        (
            "{devices=[2,2,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}",
            (4, 4),
            MESH_222,
            "P('a', 'c')",
        ),
        # A scalar and a one-element tuple sharding.
        ("{devices=[8]<=[8] last_tile_dim_replicate}", (), MESH_2X4, "P()"),
        ("{{devices=[2,4]<=[8]}}", (2, 4), MESH_2X4, "P('data', 'model')"),
        # The named form (not printed by 0.10.2, parsed in case a later XLA does).
        ("{mesh['a'=2,'b'=4], [{'b'}, {}]}", (4, 4), MESH_2X4, "P('model', None)"),
        ("{mesh['a'=2,'b'=4], [{'b', 'a'}, {}]}", (8, 4), MESH_2X4, "P(('model', 'data'), None)"),
        ("{mesh['a'=2,'b'=4], replicated}", (4, 4), MESH_2X4, "P(None, None)"),
        # Metadata inside the sharding is ignored.
        ('{devices=[2,4]<=[8] metadata={op_name="a"}}', (2, 4), MESH_2X4, "P('data', 'model')"),
    ],
)
def test_hlo_sharding_to_spec(text, shape, mesh, spec) -> None:
    assert format_spec(hlo_sharding_to_spec(text, shape, mesh)) == spec


@pytest.mark.parametrize(
    ("text", "shape", "mesh"),
    [
        ("{maximal device=0}", (4,), MESH_2X4),
        ("{manual}", (4,), MESH_2X4),
        ("{unknown}", (4,), MESH_2X4),
        ("{devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}", (4, 4), MESH_2X4),
        ("{devices=[2,2]<=[4]}", (4, 4), MESH_2X4),  # 4 devices on a mesh of 8
        ("{devices=[2,2,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}", (4, 4), MESH_2X4),
        ("{devices=[2,4]<=[8]}", (4,), MESH_2X4),  # rank mismatch
        ("{{replicated}, {devices=[2,4]<=[8]}}", (4, 4), MESH_2X4),
        ("{mesh['a'=2,'b'=4], [{'b'}, {}], unreduced={'a'}}", (4, 4), MESH_2X4),
    ],
)
def test_shardings_without_a_named_spec(text, shape, mesh) -> None:
    assert hlo_sharding_to_spec(text, shape, mesh) is None


def test_device_ids_map_logical_ids_to_the_mesh() -> None:
    assignment = (0, 2, 4, 6, 1, 3, 5, 7)
    mesh = mesh_of(("data", "model"), (2, 4), ids=assignment)
    # Logical ids follow the mesh's device order, so the iota means the same spec.
    spec = hlo_sharding_to_spec("{devices=[2,4]<=[8]}", (4, 8), mesh, assignment)
    assert format_spec(spec) == "P('data', 'model')"
    # Read as device ids it would not match the reordered mesh.
    assert hlo_sharding_to_spec("{devices=[2,4]<=[8]}", (4, 8), mesh) is None


def test_parse_hlo_sharding_parts() -> None:
    s = parse_hlo_sharding("{devices=[1,1,4,2]<=[8] last_tile_dims={manual, replicated}}")
    assert s.kind == "tiled" and s.tile_dims == (1, 1)
    assert s.subgroups == ("manual", "replicated")
    assert s.devices.shape == (1, 1, 4, 2)
    assert parse_hlo_sharding("{replicated}").kind == "replicated"
    assert parse_hlo_sharding("{maximal device=3}").kind == "maximal"
    t = parse_hlo_sharding("{{replicated}, {devices=[2,1]0,1}}")
    assert t.kind == "tuple" and [e.kind for e in t.elements] == ["replicated", "tiled"]
    with pytest.raises(HloParseError):
        parse_hlo_sharding("{devices=[2,2]0,1,2}")
    with pytest.raises(HloParseError):
        parse_hlo_sharding("{whatever}")


# --- intermediates -------------------------------------------------------------------------


def by_name(intermediates):
    return {s.name: s for s in intermediates}


def test_dp_intermediates_in_program_order() -> None:
    ints = intermediates_of_hlo(hlo_text("dp.before_spmd"), MESH_2X4)
    names = [s.name for s in ints]
    assert names[0] == "dot_general.0" and "tanh.0" in names
    assert not {s.op for s in ints} & {"parameter", "constant", "tuple", "get-tuple-element"}
    s = by_name(ints)
    assert s["dot_general.0"].spec_str == "P('data', None)"
    assert s["dot_general.0"].op == "dot" and s["dot_general.0"].dtype == "float32"
    assert s["dot_general.0"].shape == (64, 128)
    assert s["dot_general.0"].operands == ("x.0", "params__w1__.0")
    assert s["dot_general.0"].source.location.endswith(f"programs.py:{marker_line('mlp_h')}")
    # The weight gradient: printed without a sharding, so replicated; it contracts the
    # batch, which is split over 'data': partial sums -> a reshard point.
    assert s["dot_general.3"].hlo_sharding == "{replicated}"
    assert s["dot_general.3"].spec_str == "P(None, None)"
    assert s["dot_general.3"].reshard
    assert s["dot_general.4"].reshard
    # Forward ops of data parallelism move nothing.
    for name in ("dot_general.0", "tanh.0", "dot_general.1", "sub.0"):
        assert not s[name].reshard, name
    assert {x.name for x in ints if x.reshard} == {"dot_general.3", "dot_general.4"}


def test_megatron_reshard_points() -> None:
    s = by_name(intermediates_of_hlo(hlo_text("megatron.before_spmd"), MESH_2X4))
    assert s["dot_general.0"].spec_str == "P('data', 'model')"
    assert not s["dot_general.0"].reshard
    # h @ w2 contracts over 'model': the forward all-reduce.
    assert s["dot_general.1"].spec_str == "P('data', None)"
    assert s["dot_general.1"].reshard


def test_constrained_program_marks_the_gather() -> None:
    s = by_name(intermediates_of_hlo(hlo_text("constrained.before_spmd"), MESH_8_DATA))
    # Sharding completion moved the constraint back onto the first dot: x (batch split)
    # must be gathered to give P(None, 'data').
    assert s["dot_general.0"].spec_str == "P(None, 'data')"
    assert s["dot_general.0"].reshard
    assert s["sharding_constraint.0"].op == "copy"
    assert s["sharding_constraint.0"].spec_str == "P(None, 'data')"
    assert not s["sharding_constraint.0"].reshard


def test_shard_map_values_are_manual() -> None:
    ints = intermediates_of_hlo(hlo_text("shard_map.before_spmd"), MESH_8_I)
    s = by_name(ints)
    call = next(x for x in ints if x.op == "call")
    assert call.spec is None and call.spec_str == "{manual}"
    assert s["shard_map.0"].spec_str == "P('i', None)"
    assert not any(x.reshard for x in ints)


def test_every_before_spmd_fixture_maps_to_specs() -> None:
    cases = {
        "dp": MESH_2X4,
        "fsdp": MESH_8_DATA,
        "megatron": MESH_2X4,
        "two_d": MESH_2X4,
        "swapped": MESH_2X4,
        "constrained": MESH_8_DATA,
        "looped": MESH_2X4,
    }
    for name, mesh in cases.items():
        ints = intermediates_of_hlo(hlo_text(f"{name}.before_spmd"), mesh)
        assert ints, name
        assert all(s.spec is not None for s in ints), name


def _module(*body: str) -> str:
    lines = "\n".join(f"  {b}" for b in body)
    return f"HloModule m, num_partitions=8\n\nENTRY %main {{\n{lines}\n}}\n"


ROW = "sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}"  # P('data', None)
COL = "sharding={devices=[1,2,4]<=[8] last_tile_dim_replicate}"  # P(None, 'data')
REP = "sharding={replicated}"


@pytest.mark.parametrize(
    ("instruction", "operand_sharding", "reshard"),
    [
        # Elementwise: same shape, compared dim by dim.
        (f"%y = f32[8,8] negate(%x), {REP}", ROW, True),  # gather
        (f"%y = f32[8,8] negate(%x), {ROW}", REP, False),  # local slice
        (f"%y = f32[8,8] negate(%x), {COL}", ROW, True),  # all-to-all
        (f"%y = f32[8,8] negate(%x), {ROW}", ROW, False),
        ("%y = f32[8,8] negate(%x), sharding={devices=[8,1]<=[8]}", ROW, False),  # refine
        (f"%y = f32[8,8] copy(%x), {COL}", ROW, True),
        # Transpose follows its permutation.
        (f"%y = f32[8,8] transpose(%x), dimensions={{1,0}}, {COL}", ROW, False),
        (f"%y = f32[8,8] transpose(%x), dimensions={{1,0}}, {ROW}", ROW, True),
        # Reduce: a split reduced dim needs the partial results combined.
        (f"%y = f32[8] reduce(%x, %z), dimensions={{0}}, to_apply=%add, {REP}", ROW, True),
        (
            "%y = f32[8] reduce(%x, %z), dimensions={1}, to_apply=%add, "
            "sharding={devices=[2,4]<=[8] last_tile_dim_replicate}",
            ROW,
            False,
        ),
        # A reshape's dims do not line up: not compared.
        (f"%y = f32[64] reshape(%x), {REP}", ROW, False),
    ],
)
def test_reshard_rule(instruction, operand_sharding, reshard) -> None:
    text = _module(
        f"%x = f32[8,8] parameter(0), {operand_sharding}",
        "%z = f32[] constant(0)",
        instruction,
    )
    (y,) = intermediates_of_hlo(text, MESH_2X4)
    assert y.reshard is reshard


def test_reshard_rule_for_dots_and_broadcasts() -> None:
    text = _module(
        "%x = f32[8,16] parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}",
        "%w = f32[16,4] parameter(1), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
        "%v = f32[16,4] parameter(2), sharding={devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
        "%a = f32[8,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
        "sharding={devices=[2,4]<=[8]}",
        "%b = f32[8,4] dot(%x, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
        "sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}",
        "%c = f32[8,4] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
        "sharding={replicated}",
        "%d = f32[4,8,16] broadcast(%x), dimensions={1,2}, "
        "sharding={devices=[1,2,1,4]<=[8] last_tile_dim_replicate}",
        "%e = f32[4,8,16] broadcast(%x), dimensions={1,2}, sharding={replicated}",
    )
    s = by_name(intermediates_of_hlo(text, MESH_2X4))
    assert not s["a"].reshard  # P('data') x P(None,'model') -> P('data','model'): local
    assert s["b"].reshard  # contracting dim split over 'model'
    assert s["c"].reshard  # batch split, result replicated: a gather
    assert not s["d"].reshard
    assert s["e"].reshard
    assert [x.name for x in s.values()] == ["a", "b", "c", "d", "e"]


def test_while_body_values_are_listed_before_the_loop() -> None:
    ints = intermediates_of_hlo(hlo_text("looped.before_spmd"), MESH_2X4)
    names = [s.name for s in ints]
    # The body sits where the while runs: after the copy of w that feeds the loop.
    assert names.index("w.3") < names.index("dot_general.2")
    s = by_name(ints)
    body_dot = s["dot_general.2"]
    assert body_dot.spec_str == "P('data', 'model')"
    assert body_dot.reshard  # h is split over 'model' on the contracting dim: a gather
    assert body_dot.source.location.endswith(f"programs.py:{marker_line('loop_matmul')}")
    # Loop counters (integer scalars) and the loop's condition are left out.
    assert not any(x.dtype in ("int32", "bool") and not x.shape for x in ints)
    assert "lt.4" not in s
