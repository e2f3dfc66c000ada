"""What the XLA of jax 0.10.2 and of jax 0.12 print differently, read to the same ledger.

Each pair is one program as each version prints it (trimmed from real compiles: a two-layer
step on 8 CPU devices and an FSDP step deviceless on v5e:2x4). Pure text: runs on any jax.
"""

from __future__ import annotations

import pytest

from shardviz.capture import hlo
from shardviz.capture.hlo.text import HloParseError, compiler_versions, parse_hlo_module

_TABLES = """
FileNames
1 "/work/step.py"

FunctionNames
1 "step"

FileLocations
1 {file_name_id=1 function_name_id=1 line=9 end_line=9 column=17 end_column=17}
2 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=8 end_column=8}
3 {file_name_id=1 function_name_id=1 line=11 end_line=11 column=11 end_column=11}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}
3 {file_location_id=3 parent_frame_id=1}
"""

_FUSED = """
%fused_computation (param_0: f32[16,128], param_1: f32[128,128]) -> f32[16,128] {
  %param_0 = f32[16,128]{1,0} parameter(0)
  %param_1 = f32[128,128]{1,0} parameter(1)
  ROOT %dot.1 = f32[16,128]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(step)/dot_general" stack_frame_id=1}
}

%region_0 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}
"""

#: jax 0.10.2: the partitioner's gather carries the metadata of the dot that needs it.
TWO_LAYER_0_10 = (
    "HloModule jit_step, num_partitions=8\n"
    + _TABLES
    + _FUSED
    + """
ENTRY %main.0_spmd (param: f32[16,128], param.1: f32[32,128]) -> f32[] {
  %param = f32[16,128]{1,0} parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}, metadata={op_name="x"}
  %param.1 = f32[32,128]{1,0} parameter(1), sharding={devices=[4,2]<=[8]}, metadata={op_name="w"}
  %all-gather = f32[128,128]{1,0} all-gather(%param.1), channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}, use_global_device_ids=true, metadata={op_name="jit(step)/dot_general" stack_frame_id=1}
  %fusion = f32[16,128]{1,0} fusion(%param, %all-gather), kind=kCustom, calls=%fused_computation, metadata={op_name="jit(step)/dot_general" stack_frame_id=1}
  %reduce = f32[] reduce(%fusion, f32[] constant(0)), dimensions={0,1}, to_apply=%region_0, metadata={op_name="jit(step)/reduce_sum" stack_frame_id=3}
  ROOT %all-reduce = f32[] all-reduce(%reduce), channel_id=2, replica_groups=mesh['axis_0'=4,'axis_1'=2] {'axis_1'}, use_global_device_ids=true, to_apply=%region_0, metadata={op_name="jit(step)/reduce_sum" stack_frame_id=3}
}
"""
)

#: jax 0.12: the gather is marked as the partitioner's and carries its *operand's* metadata
#: (the argument's name, no source); mesh axes print with their names; parameters lose their
#: sharding in the final module.
TWO_LAYER_0_12 = (
    "HloModule jit_step, num_partitions=8\n"
    + _TABLES
    + _FUSED
    + """
ENTRY %main.0_spmd (param: f32[16,128], param.1: f32[32,128]) -> f32[] {
  %param = f32[16,128]{1,0} parameter(0), metadata={op_name="x"}
  %param.1 = f32[32,128]{1,0} parameter(1), metadata={op_name="w"}
  %all-gather = f32[128,128]{1,0} all-gather(%param.1), channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}, use_global_device_ids=true, frontend_attributes={is_spmd_generated="true"}, metadata={op_name="w"}
  %fusion = f32[16,128]{1,0} fusion(%param, %all-gather), kind=kCustom, calls=%fused_computation, metadata={op_name="jit(step)/dot_general" stack_frame_id=1}
  %reduce = f32[] reduce(%fusion, f32[] constant(0)), dimensions={0,1}, to_apply=%region_0, metadata={op_name="jit(step)/reduce_sum" stack_frame_id=3}
  ROOT %all-reduce = f32[] all-reduce(%reduce), channel_id=2, replica_groups=mesh['data'=4,'model'=2] {'model'}, use_global_device_ids=true, to_apply=%region_0, frontend_attributes={is_spmd_generated="true"}, metadata={op_name="jit(step)/reduce_sum" stack_frame_id=3}
}
"""
)


def _ledger(text: str) -> list[tuple]:
    return [
        (c.kind, c.in_shape, c.out_shape, c.groups, c.op_name, c.source and c.source.innermost)
        for c in hlo.collectives(text)
    ]


def test_a_gather_is_named_after_the_op_that_needs_it_in_both_formats() -> None:
    old, new = _ledger(TWO_LAYER_0_10), _ledger(TWO_LAYER_0_12)
    assert old == new
    gather, reduce = new
    assert gather[0] == "all-gather" and gather[4] == "jit(step)/dot_general"
    assert gather[5] is not None and gather[5].line == 9
    # A partial sum's all-reduce keeps its own metadata (the reduce that made the partial sums).
    assert reduce[0] == "all-reduce" and reduce[5] is not None and reduce[5].line == 11


def test_the_partitioners_mark_is_read() -> None:
    old, new = parse_hlo_module(TWO_LAYER_0_10), parse_hlo_module(TWO_LAYER_0_12)
    assert not old.instruction("all-gather").spmd_generated
    assert new.instruction("all-gather").spmd_generated
    assert not new.instruction("fusion").spmd_generated


#: TPU, jax 0.12 (v5e:2x4, FSDP): both dots fused into one op that carries only the second
#: dot's metadata; each fused dot keeps its own. The first gather must be named after line 9.
FUSED_DOTS_0_12 = (
    "HloModule jit_fsdp, num_partitions=8\n"
    + _TABLES
    + """
%fused_first (p0: f32[8,128], p1: f32[128,512]) -> f32[8,512] {
  %p0 = f32[8,128]{1,0} parameter(0)
  %p1 = f32[128,512]{1,0} parameter(1)
  ROOT %convolution.1 = f32[8,512]{1,0} convolution(%p0, %p1), dim_labels=bf_io->bf, metadata={op_name="jit(fsdp)/dot_general" stack_frame_id=1}
}

%fused_both (param_0.5: f32[512,128], param_1.4: f32[8,128], param_2: f32[128,512]) -> f32[8,128] {
  %param_1.4 = f32[8,128]{1,0} parameter(1)
  %param_2 = f32[128,512]{1,0} parameter(2)
  %first = f32[8,512]{1,0} fusion(%param_1.4, %param_2), kind=kOutput, calls=%fused_first, metadata={op_name="jit(fsdp)/dot_general" stack_frame_id=1}
  %param_0.5 = f32[512,128]{1,0} parameter(0)
  %moved = f32[512,128]{1,0} bitcast(%param_0.5)
  ROOT %convolution.4 = f32[8,128]{1,0} convolution(%first, %moved), dim_labels=bf_io->bf, metadata={op_name="jit(fsdp)/dot_general" stack_frame_id=2}
}

ENTRY %main.0_spmd (param.1: f32[16,512], param.2: f32[64,128], param: f32[8,128]) -> f32[8,128] {
  %param = f32[8,128]{1,0} parameter(2), metadata={op_name="x"}
  %param.2 = f32[64,128]{1,0} parameter(1), metadata={op_name="params['w2']"}
  %param.1 = f32[16,512]{1,0} parameter(0), metadata={op_name="params['w1']"}
  %all-gather.12 = f32[512,128]{1,0} all-gather(%param.2), channel_id=4, replica_groups=mesh['axis_0'=8] {'axis_0'}, dimensions={0}, use_global_device_ids=true, frontend_attributes={is_spmd_generated="true"}, metadata={op_name="params['w2']"}
  %all-gather.13 = f32[128,512]{1,0} all-gather(%param.1), channel_id=2, replica_groups=mesh['axis_0'=8] {'axis_0'}, dimensions={0}, use_global_device_ids=true, frontend_attributes={is_spmd_generated="true"}, metadata={op_name="params['w1']"}
  ROOT %fusion = f32[8,128]{1,0} fusion(%all-gather.12, %param, %all-gather.13), kind=kOutput, calls=%fused_both, metadata={op_name="jit(fsdp)/dot_general" stack_frame_id=2}
}
"""
)


def test_a_gather_into_a_fusion_of_two_dots_is_named_after_its_own_dot() -> None:
    lines = {c.name: c.source.innermost.line for c in hlo.collectives(FUSED_DOTS_0_12)}
    assert lines == {"all-gather.12": 10, "all-gather.13": 9}


#: A tuple-shaped result's element used directly (`%fusion.17#0`, TPU dumps of jax 0.12)
#: against the get-tuple-element jax 0.10.2 prints for it.
TUPLE_0_10 = """HloModule m, num_partitions=4

ENTRY %main (p: bf16[64,1024]) -> bf16[256,1024] {
  %p = bf16[64,1024]{1,0} parameter(0)
  %fusion.17 = (bf16[64,1024]{1,0}, f32[64,1024]{1,0}) custom-call(%p), custom_call_target="pair"
  %get-tuple-element = bf16[64,1024]{1,0} get-tuple-element(%fusion.17), index=0
  ROOT %all-gather.13 = bf16[256,1024]{1,0} all-gather(%get-tuple-element), channel_id=3, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
}
"""
TUPLE_0_12 = """HloModule m, num_partitions=4

ENTRY %main (p: bf16[64,1024]) -> bf16[256,1024] {
  %p = bf16[64,1024]{1,0} parameter(0)
  %fusion.17 = (bf16[64,1024]{1,0}, f32[64,1024]{1,0}) custom-call(%p), custom_call_target="pair"
  ROOT %all-gather.13 = bf16[256,1024]{1,0} all-gather(%fusion.17#0), channel_id=3, replica_groups=[1,4]<=[4], dimensions={0}, use_global_device_ids=true
}
"""


def test_a_tuple_element_operand_reads_as_its_get_tuple_element() -> None:
    old, new = hlo.collectives(TUPLE_0_10), hlo.collectives(TUPLE_0_12)
    assert [(c.in_dtype, c.in_shape, c.in_bytes) for c in new] == [
        (c.in_dtype, c.in_shape, c.in_bytes) for c in old
    ]
    assert new[0].in_shape == (64, 1024) and new[0].in_dtype == "bfloat16"
    module = parse_hlo_module(TUPLE_0_12)
    assert [u.name for u in module.users("fusion.17")] == ["all-gather.13"]
    assert str(module.shape_of("fusion.17#1")) == "f32[64,1024]"
    assert module.shape_of("fusion.17#2") is None


@pytest.mark.parametrize(
    "line",
    [
        "  ROOT %x = f32<4> multiply(%p, %p)",  # a shape written another way
        "  ROOT %x f32[4]{0} multiply(%p, %p)",  # no `=`
        "  ROOT %x = f32[4]{0}",  # no opcode
    ],
)
def test_an_unreadable_line_is_named_with_the_compiler_that_printed_it(line: str) -> None:
    text = "HloModule m\n\n/* a comment\n over two lines */\nENTRY %main (p: f32[4]) -> f32[4] {\n"
    text += "  %p = f32[4]{0} parameter(0)\n" + line + "\n}\n"
    with pytest.raises(HloParseError) as err:
        parse_hlo_module(text)
    message = str(err.value)
    assert message.startswith("parse_hlo_module, line 7: cannot read ")
    assert line.strip()[:40] in message
    assert compiler_versions() in message and "jax " in message
    assert "Fix: " in message


def _point(name: str, shape: tuple[int, ...], spec, sharding: str):
    from shardviz.model import ShardingOf

    return ShardingOf(name, "dot", "float32", shape, spec, sharding, "jit(f)/dot_general")


@pytest.mark.parametrize(
    ("shape", "old", "new", "elements"),
    [
        (
            (8, 16, 20, 128),
            "{devices=[1,2,1,1,4]<=[8] last_tile_dim_replicate}",
            "{mesh['data'=2,'model'=4], [{}, {'data'}, {}, {}]}",
            8 * 8 * 20 * 128,
        ),
        (
            (8, 256, 128),
            "{devices=[1,4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
            "{mesh['data'=2,'model'=4], [{}, {'model'}, {}]}",
            8 * 64 * 128,
        ),
        ((8, 256), "{replicated}", "{mesh['data'=2,'model'=4], replicated}", 8 * 256),
    ],
)
def test_a_reshard_points_tile_reads_the_same_in_both_forms(shape, old, new, elements) -> None:
    """Linking a collective to its reshard point compares per-device tiles (two backward dots
    of one line are told apart so): jax 0.12 prints the partitioner's input on the named mesh,
    jax 0.10.2 as a device array."""
    from shardviz.capture.hlo.collectives import _tile_elements

    spec = tuple(() for _ in shape)
    a, b = _point("a", shape, spec, old), _point("b", shape, spec, new)
    assert _tile_elements(a) == _tile_elements(b) == elements
