"""The collective ledger from compiled HLO: kinds, bytes, groups, axes, origin, links (no jax)."""

from __future__ import annotations

import pytest

from shardviz.capture.hlo import (
    collective_trip_counts,
    collectives_of_hlo,
    intermediates_of_hlo,
    is_user_written,
    link_reshards,
    moved_bytes,
)
from shardviz.model import COLLECTIVE_KINDS, Collective

from . import (
    MESH_2X4,
    MESH_8_DATA,
    MESH_8_I,
    fixture_device_ids,
    hlo_text,
    marker_line,
    mesh_of,
)

B, D, H = 64, 32, 128
F32 = 4
PARAM_BYTES = (D * H + H * D) * F32

MESHES = {
    "dp": MESH_2X4,
    "fsdp": MESH_8_DATA,
    "megatron": MESH_2X4,
    "two_d": MESH_2X4,
    "swapped": MESH_2X4,
    "constrained": MESH_8_DATA,
    "looped": MESH_2X4,
    "split_reduce": MESH_8_I,
    "shard_map": MESH_8_I,
    "shard_map_2d": MESH_2X4,
}


def ledger(name: str, mesh=None, device_ids=None) -> tuple[Collective, ...]:
    return collectives_of_hlo(hlo_text(name), mesh or MESHES.get(name, MESH_2X4), device_ids)


def linked(name: str) -> tuple[Collective, ...]:
    mesh = MESHES[name]
    return link_reshards(ledger(name), intermediates_of_hlo(hlo_text(f"{name}.before_spmd"), mesh))


def line_of(c: Collective) -> int:
    assert c.source is not None and c.source.innermost.file.endswith("programs.py")
    return c.source.innermost.line


def is_forward(c: Collective) -> bool:
    return "transpose(" not in c.op_name


# --- live programs -------------------------------------------------------------------------


def test_dp_gradient_all_reduces_add_up_to_the_parameters() -> None:
    cs = ledger("dp")
    assert [c.name for c in cs] == ["all-reduce.2#0", "all-reduce.2#1"]
    assert all(c.kind == "all-reduce" and c.axes == ("data",) for c in cs)
    assert all(c.group_size == 2 and c.groups == ((0, 4), (1, 5), (2, 6), (3, 7)) for c in cs)
    assert [c.combined for c in cs] == [(0, 2), (1, 2)]
    assert sum(c.in_bytes for c in cs) == PARAM_BYTES
    assert all(c.in_bytes == c.out_bytes and c.moved_bytes == c.in_bytes for c in cs)  # n=2
    assert not any(c.user_written or c.is_async for c in cs)
    # Each part keeps its own source: dW1 comes from the first matmul, dW2 from the second.
    assert [line_of(c) for c in cs] == [marker_line("mlp_h"), marker_line("mlp_out")]
    assert [c.in_shape for c in cs] == [(H, D), (D, H)]


def test_megatron_has_exactly_one_forward_all_reduce_over_model() -> None:
    cs = ledger("megatron")
    forward = [c for c in cs if is_forward(c)]
    assert len(forward) == 1
    (ar,) = forward
    assert ar.kind == "all-reduce" and ar.axes == ("model",)
    assert ar.groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert line_of(ar) == marker_line("mlp_out")
    assert ar.in_shape == (B // 2, D) and ar.in_bytes == B // 2 * D * F32
    assert ar.moved_bytes == 2 * ar.in_bytes * 3 // 4
    backward = [c for c in cs if not is_forward(c)]
    assert {c.axes for c in backward} == {("data",)}


def test_reordered_mesh_needs_the_device_assignment() -> None:
    assignment = fixture_device_ids("perm_megatron")
    assert assignment == (0, 2, 4, 6, 1, 3, 5, 7)
    mesh = mesh_of(("data", "model"), (2, 4), ids=assignment)
    cs = ledger("perm_megatron", mesh, assignment)
    (ar,) = [c for c in cs if is_forward(c)]
    assert ar.groups == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert ar.axes == ("model",)


def test_fsdp_gathers_parameters_over_data() -> None:
    cs = ledger("fsdp")
    gathers = [c for c in cs if c.kind == "all-gather" and is_forward(c)]
    assert [(c.in_shape, c.out_shape, c.dimension) for c in gathers] == [
        ((D // 8, H), (D, H), 0),
        ((H // 8, D), (H, D), 0),
    ]
    assert sum(c.out_bytes for c in gathers) == PARAM_BYTES
    assert all(c.axes == ("data",) and c.group_size == 8 for c in gathers)
    assert all(c.moved_bytes == c.out_bytes * 7 // 8 for c in gathers)
    # CPU prints the all-to-all as a tuple, one operand per peer: one entry, shapes stacked.
    a2a = [c for c in cs if c.kind == "all-to-all"]
    assert a2a and all(c.combined is None for c in a2a)
    first = next(c for c in a2a if c.name == "all-to-all.5")
    assert first.in_shape == (8, 8, 1, 4) and first.in_bytes == 8 * 8 * 4 * F32
    assert first.moved_bytes == first.in_bytes * 7 // 8
    assert first.dimension is None


def test_two_d_iota_encodings() -> None:
    cs = ledger("two_d")
    by_name = {c.name: c for c in cs}
    assert by_name["all-reduce"].axes == ("model",)  # [2,4]<=[8]
    assert by_name["all-gather.1"].axes == ("data",)  # [4,2]<=[2,4]T(1,0)
    assert by_name["all-gather.1"].dimension == 1
    assert by_name["all-reduce.3#1"].axes == ("data",)


def test_swapped_axes_order() -> None:
    (ar,) = ledger("swapped")
    assert ar.axes == ("model", "data")
    assert ar.groups == ((0, 4, 1, 5, 2, 6, 3, 7),)


def test_split_axis_matches_no_user_axis() -> None:
    cs = ledger("split_reduce")
    assert [c.axes for c in cs] == [(), ()]
    assert {c.group_size for c in cs} == {2, 4}


def test_collective_in_a_while_body() -> None:
    (ag,) = ledger("looped")
    assert ag.kind == "all-gather" and ag.axes == ("model",)
    assert line_of(ag) == marker_line("loop_matmul")
    assert collective_trip_counts(hlo_text("looped")) == {ag.name: 4}


def test_shard_map_collectives_are_user_written() -> None:
    cs = ledger("shard_map")
    assert sorted(c.kind for c in cs) == sorted(COLLECTIVE_KINDS)
    assert all(c.user_written and c.origin == "user" for c in cs)
    assert all(c.axes == ("i",) for c in cs)
    assert all(c.reshard is None for c in linked("shard_map"))
    by_kind = {c.kind: c for c in cs}
    marks = {
        "all-reduce": "sm_psum",
        "collective-permute": "sm_ppermute",
        "all-to-all": "sm_all_to_all",
        "all-gather": "sm_all_gather",
        "reduce-scatter": "sm_psum_scatter",
    }
    assert {k: line_of(c) for k, c in by_kind.items()} == {
        k: marker_line(m) for k, m in marks.items()
    }
    cp = by_kind["collective-permute"]
    assert cp.pairs == tuple((j, (j + 1) % 8) for j in range(8))
    assert cp.groups == ((0, 1, 2, 3, 4, 5, 6, 7),) and cp.group_size == 8
    assert cp.moved_bytes == cp.in_bytes == 8 * 16 * F32
    rs = by_kind["reduce-scatter"]
    assert (rs.in_shape, rs.out_shape, rs.dimension) == ((64, 16), (8, 16), 0)
    assert rs.moved_bytes == rs.in_bytes * 7 // 8


def test_shard_map_2d_psums() -> None:
    cs = [c for c in ledger("shard_map_2d") if c.kind == "all-reduce"]
    by_line = {line_of(c): c.axes for c in cs}
    assert by_line == {
        marker_line("sm2_psum_data"): ("data",),
        marker_line("sm2_psum_model"): ("model",),
        marker_line("sm2_psum_both"): ("data", "model"),
    }
    assert all(c.user_written for c in ledger("shard_map_2d"))


def test_partitioner_collectives_are_not_user_written() -> None:
    for name in ("dp", "fsdp", "megatron", "two_d", "swapped", "constrained", "looped"):
        assert not any(c.user_written for c in ledger(name)), name


# --- hand-made fixtures: async pairs and tuple all-reduces ---------------------------------


def test_async_pairs_are_counted_once() -> None:
    cs = ledger("hand_async_gpu")
    assert [c.name for c in cs] == [
        "all-gather-start",
        "all-reduce-start",
        "all-reduce-start.1#0",
        "all-reduce-start.1#1",
        "reduce-scatter-start",
        "all-to-all-start",
        "collective-permute-start",
    ]
    assert all(c.is_async for c in cs)
    kinds = [c.kind for c in cs]
    assert kinds.count("all-reduce") == 3 and set(kinds) == set(COLLECTIVE_KINDS)
    by = {c.name: c for c in cs}
    ag = by["all-gather-start"]
    assert (ag.in_shape, ag.out_shape) == ((4, 128), (32, 128))  # start operand, done result
    assert ag.moved_bytes == 32 * 128 * F32 * 7 // 8
    rs = by["reduce-scatter-start"]
    assert (rs.in_shape, rs.out_shape, rs.dimension) == ((32, 128), (4, 128), 0)
    a2a = by["all-to-all-start"]  # generic async-start wrapping an all-to-all (calls=)
    assert a2a.groups == ((0, 1, 2, 3), (4, 5, 6, 7)) and a2a.axes == ("model",)
    assert a2a.dimension == 0
    cp = by["collective-permute-start"]
    assert cp.in_shape == cp.out_shape == (8, 32)
    assert cp.user_written and cp.axes == ("model",)
    assert cp.source.location == "/hand/model.py:20" and cp.source.chain == "exchange"


def test_async_combined_all_reduce_splits_with_the_same_bytes() -> None:
    cs = [c for c in ledger("hand_async_gpu") if c.name.startswith("all-reduce-start.1")]
    assert [(c.in_dtype, c.in_shape) for c in cs] == [
        ("float32", (32, 128)),
        ("bfloat16", (128, 32)),
    ]
    assert sum(c.in_bytes for c in cs) == 32 * 128 * 4 + 128 * 32 * 2
    assert sum(c.out_bytes for c in cs) == sum(c.in_bytes for c in cs)
    assert [c.source.location for c in cs] == ["/hand/model.py:10", "/hand/model.py:11"]
    assert all(c.axes == ("data",) for c in cs)


def test_tuple_all_reduce_split_per_operand() -> None:
    cs = ledger("hand_tuple_all_reduce")
    assert [c.name for c in cs] == ["all-reduce.3#0", "all-reduce.3#1", "all-reduce.3#2"]
    assert [c.combined for c in cs] == [(0, 3), (1, 3), (2, 3)]
    assert [c.in_dtype for c in cs] == ["float32", "bfloat16", "int32"]
    combined_bytes = 512 * 128 * 4 + 128 * 512 * 2 + 4
    assert sum(c.in_bytes for c in cs) == combined_bytes
    assert sum(c.moved_bytes for c in cs) == combined_bytes  # 2 * (n-1)/n with n = 2
    assert collective_trip_counts(hlo_text("hand_tuple_all_reduce")) == {"all-reduce.3": 3}


def test_sub_axis_groups_span_no_user_axis() -> None:
    cs = ledger("hand_sub_axes")
    assert [c.groups for c in cs] == [
        ((0, 2), (1, 3), (4, 6), (5, 7)),
        ((0, 4, 1, 5), (2, 6, 3, 7)),
        ((0, 1), (2, 3), (4, 5), (6, 7)),
        ((0, 1, 4, 5), (2, 3, 6, 7)),
    ]
    assert all(c.axes == () and c.axes_label == "(no mesh axis)" for c in cs)


# --- ring model and origin -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "in_bytes", "out_bytes", "n", "pairs", "moved"),
    [
        ("all-gather", 100, 400, 4, (), 300),
        ("reduce-scatter", 400, 100, 4, (), 300),
        ("all-reduce", 400, 400, 4, (), 600),
        ("all-reduce", 10, 10, 3, (), 13),  # 2 * 10 * 2 / 3 = 13.33, rounded down
        ("all-to-all", 400, 400, 4, (), 300),
        ("collective-permute", 400, 400, 2, ((0, 1), (1, 0)), 400),
        ("collective-permute", 400, 400, 1, ((0, 0),), 0),
        ("all-reduce", 400, 400, 1, (), 0),
    ],
)
def test_moved_bytes_by_kind(kind, in_bytes, out_bytes, n, pairs, moved) -> None:
    assert moved_bytes(kind, in_bytes, out_bytes, n, pairs) == moved


def test_moved_bytes_rejects_unknown_kinds() -> None:
    with pytest.raises(ValueError):
        moved_bytes("broadcast", 1, 1, 2)


@pytest.mark.parametrize(
    ("op_name", "user"),
    [
        ("jit(f)/shard_map/psum_invariant", True),
        ("jit(f)/shard_map/psum", True),
        ("jit(f)/shard_map/ppermute", True),
        ("jit(f)/shard_map/all_to_all", True),
        ("jit(f)/shard_map/all_gather", True),
        ("jit(f)/shard_map/reduce_scatter", True),
        ("jit(f)/shard_map/psum_invariant_start", True),
        ("jit(f)/transpose(jvp(shard_map))/psum", True),
        ("psum_invariant", True),
        ("jit(f)/jvp()/dot_general", False),
        ("jit(f)/transpose(jvp())/dot_general", False),
        ("jit(f)/shard_map", False),  # a reshard at the shard_map boundary
        ("jit(f)/reduce_sum", False),
        ("jit(f)/mul;jit(f)/broadcast_in_dim", False),
        ("", False),
    ],
)
def test_is_user_written(op_name, user) -> None:
    assert is_user_written(op_name) is user


# --- reshard links -------------------------------------------------------------------------


def test_dp_all_reduces_link_to_the_weight_gradients() -> None:
    assert [c.reshard for c in linked("dp")] == ["dot_general.3", "dot_general.4"]


def test_two_d_tie_break_by_tile_size() -> None:
    by = {c.name: c.reshard for c in linked("two_d")}
    # Both backward dots of the second matmul share op_name and line; the all-reduce over
    # 'data' produces dW2 (dot_general.4), not dh (dot_general.2).
    assert by["all-reduce.3#1"] == "dot_general.4"
    assert by["all-reduce.3#0"] == "dot_general.3"
    assert by["all-reduce"] == "dot_general.1"
    assert by["all-gather"] == "dot_general.0"


def test_megatron_forward_all_reduce_links_to_its_matmul() -> None:
    (forward,) = [c for c in linked("megatron") if is_forward(c)]
    assert forward.reshard == "dot_general.1"


def test_constrained_links() -> None:
    assert [(c.kind, c.reshard) for c in linked("constrained")] == [
        ("all-gather", "dot_general.0"),
        ("all-reduce", "dot_general.1"),
    ]


@pytest.mark.parametrize("name", ["dp", "fsdp", "megatron", "two_d", "swapped", "constrained"])
def test_every_partitioner_collective_links_to_a_reshard_point(name) -> None:
    ints = intermediates_of_hlo(hlo_text(f"{name}.before_spmd"), MESHES[name])
    points = {s.name for s in ints if s.reshard}
    for c in link_reshards(ledger(name), ints):
        assert c.reshard in points, (name, c.name, c.op_name)


def test_links_leave_unmatched_collectives_alone() -> None:
    cs = ledger("split_reduce")
    ints = intermediates_of_hlo(hlo_text("split_reduce.before_spmd"), MESH_8_I)
    out = link_reshards(cs, ints)
    no_op_name = [c for c in out if not c.op_name]
    assert no_op_name and all(c.reshard is None for c in no_op_name)
    assert link_reshards(cs, ()) == cs


def test_collective_in_a_loop_links_to_the_body_matmul() -> None:
    (ag,) = link_reshards(
        ledger("looped"), intermediates_of_hlo(hlo_text("looped.before_spmd"), MESH_2X4)
    )
    assert ag.reshard == "dot_general.2"


def test_async_start_without_done_uses_the_start_result() -> None:
    text = (
        "HloModule m, num_partitions=4\n\nENTRY %e {\n"
        "  %p = f32[2,8]{1,0} parameter(0)\n"
        "  %ag = (f32[2,8]{1,0}, f32[8,8]{1,0}) all-gather-start(%p), replica_groups={}, "
        "dimensions={0}\n"
        "  ROOT %ar = f32[2,8]{1,0} all-reduce-start(%p), replica_groups=[1,4]<=[4], "
        "to_apply=%add\n}\n"
    )
    ag, ar = collectives_of_hlo(text, mesh_of(("x",), (4,)))
    assert (ag.in_shape, ag.out_shape, ag.groups, ag.axes) == (
        (2, 8),
        (8, 8),
        ((0, 1, 2, 3),),
        ("x",),
    )
    assert (ar.in_shape, ar.out_shape) == ((2, 8), (2, 8))


def test_permute_pairs_are_mapped_to_jax_device_ids() -> None:
    text = (
        "HloModule m, num_partitions=4\n\nENTRY %e {\n  %p = f32[2,8]{1,0} parameter(0)\n"
        "  ROOT %cp = f32[2,8]{1,0} collective-permute(%p), "
        "source_target_pairs={{0,1},{1,0},{2,3},{3,2}}\n}\n"
    )
    assignment = (0, 2, 1, 3)  # HLO logical id p runs on jax device assignment[p]
    mesh = mesh_of(("x", "y"), (2, 2))
    (cp,) = collectives_of_hlo(text, mesh, assignment)
    assert cp.pairs == ((0, 2), (2, 0), (1, 3), (3, 1))
    assert cp.groups == ((0, 2), (1, 3))
    assert cp.axes == ("x",) and cp.group_size == 2
    assert cp.moved_bytes == cp.in_bytes == 2 * 8 * F32
    (plain,) = collectives_of_hlo(text, mesh)
    assert plain.pairs == ((0, 1), (1, 0), (2, 3), (3, 2)) and plain.axes == ("y",)


def test_a_collective_wrapped_by_async_start_is_counted_once() -> None:
    text = (
        "HloModule m, num_partitions=2\n\n"
        "%wrapped (a: f32[4]) -> f32[8] {\n  %a = f32[4]{0} parameter(0)\n"
        "  ROOT %ag = f32[8]{0} all-gather(%a), replica_groups={{0,1}}, dimensions={0}\n}\n\n"
        "ENTRY %e {\n  %p = f32[4]{0} parameter(0)\n"
        "  %s = ((f32[4]{0}), f32[8]{0}) async-start(%p), calls=%wrapped\n"
        "  ROOT %d = f32[8]{0} async-done(%s)\n}\n"
    )
    (ag,) = collectives_of_hlo(text)
    assert (ag.name, ag.kind, ag.is_async) == ("s", "all-gather", True)
    assert (ag.in_shape, ag.out_shape, ag.dimension) == ((4,), (8,), 0)


def test_unknown_group_encoding_raises() -> None:
    from shardviz.capture.hlo import HloParseError

    text = (
        "HloModule m\n\nENTRY %e {\n  %p = f32[2]{0} parameter(0)\n"
        "  ROOT %ar = f32[2]{0} all-reduce(%p), replica_groups=weird, to_apply=%add\n}\n"
    )
    with pytest.raises(HloParseError, match="replica-group encoding"):
        collectives_of_hlo(text)


@pytest.mark.parametrize("name", sorted(MESHES))
def test_ledger_and_intermediates_are_plain_json_data(name) -> None:
    from shardviz.model import ShardingOf
    from shardviz.model._codec import from_data, to_data

    for c in linked(name):
        assert from_data(Collective, to_data(c)) == c
    for s in intermediates_of_hlo(hlo_text(f"{name}.before_spmd"), MESHES[name]):
        assert from_data(ShardingOf, to_data(s)) == s


#: A loop as TPU's optimized HLO prints it: no ``known_trip_count``; the counter starts at a
#: copied constant, the condition compares it with 22, the body adds 1.
TPU_STYLE_LOOP = """HloModule tpu_loop, num_partitions=4

%cond (p: (s32[], f32[8])) -> pred[] {
  %n = s32[] constant(22)
  %p = (s32[], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (q: (s32[], f32[8])) -> (s32[], f32[8]) {
  %q = (s32[], f32[8]) parameter(0)
  %j = s32[] get-tuple-element(%q), index=0
  %x = f32[8] get-tuple-element(%q), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%one, %j)
  %cp = f32[8] collective-permute(%x), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3}}
  ROOT %t = (s32[], f32[8]) tuple(%next, %cp)
}

ENTRY %main (a: f32[8]) -> f32[8] {
  %a = f32[8] parameter(0)
  %zero = s32[] constant(ZERO)
  %start = s32[] copy(%zero)
  %init = (s32[], f32[8]) tuple(%start, %a)
  %w = (s32[], f32[8]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[8] get-tuple-element(%w), index=1
}
"""


@pytest.mark.parametrize(("start", "trips"), [(0, 22), (2, 20), (30, 0)])
def test_trips_of_an_unannotated_loop_are_read_from_its_counter(start, trips) -> None:
    text = TPU_STYLE_LOOP.replace("ZERO", str(start))
    assert collective_trip_counts(text) == {"cp": trips}


@pytest.mark.parametrize(
    ("start", "step", "direction", "trips"),
    [(0, 2, "LT", 11), (1, 3, "LT", 7), (0, 1, "LE", 23), (0, 2, "NE", 11), (2, 1, "NE", 20)],
)
def test_a_counted_loop_with_any_step_and_bound_is_read(start, step, direction, trips) -> None:
    text = (
        TPU_STYLE_LOOP.replace("ZERO", str(start))
        .replace("constant(1)", f"constant({step})")
        .replace("direction=LT", f"direction={direction}")
    )
    assert collective_trip_counts(text) == {"cp": trips}


def test_an_unannotated_loop_that_is_not_a_counted_for_has_unknown_trips() -> None:
    doubling = TPU_STYLE_LOOP.replace("ZERO", "1").replace("add(%one, %j)", "multiply(%one, %j)")
    assert collective_trip_counts(doubling) == {"cp": None}
    never_equal = TPU_STYLE_LOOP.replace("ZERO", "3").replace("constant(1)", "constant(2)")
    assert collective_trip_counts(never_equal.replace("direction=LT", "direction=NE")) == {
        "cp": None
    }
    greater = TPU_STYLE_LOOP.replace("ZERO", "0").replace("direction=LT", "direction=GT")
    assert collective_trip_counts(greater) == {"cp": None}


# Two slices of four devices (jax numbers them slice by slice). The TPU compiler splits an
# all-gather over all eight into its part inside each slice (an all-gather of four) and an
# exchange between slices: a send and a recv the megascale runtime carries over DCN.
ACROSS_SLICES = """HloModule across, is_scheduled=true

ENTRY %main (w: bf16[64,128]) -> bf16[512,128] {
  %w = bf16[64,128]{1,0} parameter(0)
  %inside = bf16[256,128]{1,0} all-gather(%w), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, metadata={op_name="jit(step)/all_gather" source_file="model.py" source_line=12}
  %tok = token[] after-all()
  %send = (bf16[1,256,128]{2,1,0}, u32[], token[]) send(%inside, %tok), channel_id=2, is_host_transfer=true, frontend_attributes={_xla_host_transfer_handler_name="xla_megascale_runtime",_xla_host_transfer_rendezvous="all-gather.7_0",_xla_megascale_target="{1,2}x{0:3}",_xla_megascale_transfer_type="ALL_GATHER"}
  %recv = (bf16[2,256,128]{2,1,0}, u32[], token[]) recv(%tok), channel_id=3, is_host_transfer=true, frontend_attributes={_xla_host_transfer_handler_name="xla_megascale_runtime",_xla_host_transfer_rendezvous="all-gather.7_0",_xla_megascale_target="{1,2}x{0:3}",_xla_megascale_transfer_type="ALL_GATHER"}
  %send-done = token[] send-done(%send), channel_id=2, is_host_transfer=true
  %recv-done = (bf16[2,256,128]{2,1,0}, token[]) recv-done(%recv), channel_id=3, is_host_transfer=true
  %got = bf16[2,256,128]{2,1,0} get-tuple-element(%recv-done), index=0
  ROOT %all = bf16[512,128]{1,0} reshape(%got)
}
"""  # noqa: E501


def test_a_transfer_between_slices_is_a_collective_over_the_slices() -> None:
    from shardviz.model import Device, MeshLayout

    ids = [100000 + k for k in range(4)] + [200000 + k for k in range(4)]
    mesh = MeshLayout(("fsdp",), (8,), tuple(Device(i, slice_index=i // 200000) for i in ids))
    inside, across = collectives_of_hlo(ACROSS_SLICES, mesh, ids)
    assert (inside.kind, inside.group_size, inside.groups) == ("all-gather", 4, (tuple(ids[:4]),))
    assert (across.name, across.kind, across.is_async) == ("send", "all-gather", True)
    layer = 256 * 128 * 2
    assert (across.in_bytes, across.out_bytes) == (layer, 2 * layer)
    # Each device's counterpart in the other slice.
    assert across.groups == tuple((100000 + k, 200000 + k) for k in range(4))
    assert across.group_size == 2 and across.axes == ("fsdp",)
    assert "data-centre network" in across.note
    assert collective_trip_counts(ACROSS_SLICES) == {"inside": 1, "send": 1}
    # Without slices in the mesh the exchange is listed, its groups unknown.
    (_, alone) = collectives_of_hlo(ACROSS_SLICES, MESH_8_DATA)
    assert alone.kind == "all-gather" and alone.groups == ()


def test_the_exchange_between_slices_is_one_collective_for_the_schedule_reader() -> None:
    """Its send, recv and recv-done are parts of one ledger entry: none is an op of its own
    in the predicted step (the ledger times the exchange)."""
    from shardviz.capture.hlo.collectives import collective_parts
    from shardviz.capture.hlo.loops import computation_runs, loops_of
    from shardviz.capture.hlo.op_work import op_work
    from shardviz.capture.hlo.text import parse_hlo_module

    module = parse_hlo_module(ACROSS_SLICES)
    assert collective_parts(module)["send"] == {"send", "recv", "recv-done"}
    ops = {o.name for o in op_work(module, computation_runs(module, loops_of(module)))}
    assert not ops & {"send", "recv", "inside"}
