"""An MoE's routing recognised from HLO text (:mod:`shardviz.capture.hlo.routing`): a dot
against a one-hot is a dispatch, the expert matmul after it reads slots, and the slots' fill
is top_k x tokens / (experts x capacity); a causal mask and a dense matmul are neither."""

from __future__ import annotations

from shardviz.capture.hlo.routing import moe_dots, slot_fill
from shardviz.capture.hlo.text import parse_hlo_module

#: Tokens [S=8, D=4] dispatched by a one-hot of the top-2 experts into E x C = 4 x 5 slots,
#: then an expert matmul on the slots, then the combine back to tokens.
MOE = """HloModule m

ENTRY %e (x: f32[8,4], logits: f32[8,4], w: f32[20,4,4]) -> f32[8,4] {
  %x = f32[8,4] parameter(0)
  %logits = f32[8,4] parameter(1)
  %w = f32[20,4,4] parameter(2)
  %top = (f32[8,2], s32[8,2]) custom-call(%logits), custom_call_target="TopK", metadata={op_name="jit(f)/top_k"}
  %index = s32[8,2] get-tuple-element(%top), index=1
  %first = s32[8,1] slice(%index), slice={[0:8], [0:1]}
  %flat = s32[8] reshape(%first)
  %idx = s32[8,20] broadcast(%flat), dimensions={0}
  %iota = s32[20] iota(), iota_dimension=0
  %slots = s32[8,20] broadcast(%iota), dimensions={1}
  %eq = pred[8,20] compare(%idx, %slots), direction=EQ
  %mask = f32[8,20] convert(%eq)
  %disp = f32[20,4] dot(%mask, %x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %h = f32[20,4] tanh(%disp)
  %h3 = f32[20,1,4] reshape(%h)
  %exp = f32[20,1,4] dot(%h3, %w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  %out = f32[20,4] reshape(%exp)
  ROOT %comb = f32[8,4] dot(%mask, %out), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

#: Causal attention scores masked with iota >= iota, then a matmul: no routing.
CAUSAL = """HloModule m

ENTRY %e (q: f32[8,4], k: f32[8,4], v: f32[8,4]) -> f32[8,4] {
  %q = f32[8,4] parameter(0)
  %k = f32[8,4] parameter(1)
  %v = f32[8,4] parameter(2)
  %s = f32[8,8] dot(%q, %k), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %i = s32[8,8] iota(), iota_dimension=0
  %j = s32[8,8] iota(), iota_dimension=1
  %c = pred[8,8] compare(%i, %j), direction=GE
  %z = f32[] constant(0)
  %zs = f32[8,8] broadcast(%z), dimensions={}
  %m = f32[8,8] select(%c, %s, %zs)
  %p = f32[8,8] exponential(%m)
  ROOT %o = f32[8,4] dot(%p, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_a_one_hot_dispatch_and_combine_are_data_movement() -> None:
    dots = moe_dots(parse_hlo_module(MOE))
    assert dots.dispatch == {"disp", "comb"}
    assert dots.slots == {"exp"}


def test_the_slots_fill_is_top_k_tokens_over_experts_times_capacity() -> None:
    # 2 x 8 tokens over 20 slots.
    assert slot_fill(parse_hlo_module(MOE)) == 0.8


def test_a_causal_mask_is_not_routing() -> None:
    module = parse_hlo_module(CAUSAL)
    assert moe_dots(module).dispatch == frozenset() and moe_dots(module).slots == frozenset()
    assert slot_fill(module) is None


def test_data_selected_by_a_one_hot_is_not_a_mask() -> None:
    # where(one_hot, x, 0) selects data (a gather's transpose), not a routing mask.
    text = MOE.replace(
        "%mask = f32[8,20] convert(%eq)",
        "%xs = f32[8,20] parameter(3)\n  %zero = f32[8,20] constant(0)\n"
        "  %mask = f32[8,20] select(%eq, %xs, %zero)",
    ).replace("w: f32[20,4,4])", "w: f32[20,4,4], xs: f32[8,20])")
    assert "disp" not in moe_dots(parse_hlo_module(text)).dispatch
