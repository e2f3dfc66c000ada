"""Logical axis rules: the specs they give, and each mistake named with its fix."""

from __future__ import annotations

import jax
import pytest
from jax.sharding import PartitionSpec as P

from shardviz.errors import ShardvizError
from shardviz.strategies.models import (
    CONFIGS,
    LOGICAL_AXES,
    LOGICAL_STRATEGIES,
    STRATEGY_RULES,
    LogicalRules,
    batch_specs,
    get_logical_rules,
    logical_rule_set,
    logical_to_spec,
    make_mesh,
    param_specs,
)
from shardviz.strategies.step import strategy_step
from shardviz.strategies.zoo import get_model
from tests.strategies.models.small import small

LLAMA = CONFIGS["llama3.1-8b"]
MIXTRAL = CONFIGS["mixtral-8x7b"]


def test_the_strategies_and_their_tables() -> None:
    assert LOGICAL_STRATEGIES == ("fsdp", "fsdp+tp", "tp", "dp+fsdp", "sp", "ep", "pp")
    for rules in STRATEGY_RULES.values():  # every logical axis has a rule in every table
        assert [n for n, _ in rules.params] == list(LOGICAL_AXES)
        assert [n for n, _ in rules.activations] == list(LOGICAL_AXES)


def test_param_specs_at_full_size() -> None:
    sizes = {"fsdp": 16, "tensor": 8}
    specs = param_specs(LLAMA, "fsdp+tp", sizes)
    assert specs["embed"]["embedding"] == P("tensor", "fsdp")
    assert specs["layers"]["attn"]["wq"] == P(None, "fsdp", "tensor", None)
    assert specs["layers"]["attn"]["wk"] == P(None, "fsdp", "tensor", None)  # 8 kv heads / 8
    assert specs["layers"]["attn"]["wo"] == P(None, "tensor", None, "fsdp")
    assert specs["layers"]["mlp"]["w_down"] == P(None, "tensor", "fsdp")
    assert specs["layers"]["attn_norm"]["scale"] == P(None, "fsdp")
    assert specs["unembed"] == P("fsdp", "tensor")
    # ep as MaxText's rules: the experts over 'expert', their width over 'fsdp' only
    # (embed_no_exp), every other weight's width over both axes, the router's experts whole.
    ep = param_specs(MIXTRAL, "ep", {"fsdp": 4, "expert": 8})
    assert ep["layers"]["moe"]["w_down"] == P(None, "expert", None, "fsdp")
    assert ep["layers"]["moe"]["w_gate"] == P(None, "expert", "fsdp", None)
    assert ep["layers"]["moe"]["router"] == P(None, ("fsdp", "expert"), None)
    assert ep["layers"]["attn"]["wq"] == P(None, ("fsdp", "expert"), None, None)
    assert ep["embed"]["embedding"] == P(None, ("fsdp", "expert"))
    assert param_specs(LLAMA, "pp", {"stage": 4, "fsdp": 2})["layers"]["mlp"]["w_up"] == P(
        "stage", "fsdp", None
    )
    assert batch_specs("dp+fsdp")["inputs"] == P(("data", "fsdp"), None)
    assert batch_specs("sp")["targets"] == P("fsdp", "sequence")


def test_make_mesh_shapes() -> None:
    assert dict(make_mesh("fsdp").shape) == {"fsdp": 8}
    assert dict(make_mesh("fsdp+tp").shape) == {"fsdp": 2, "tensor": 4}
    assert dict(make_mesh("ep", shape=(4, 2)).shape) == {"fsdp": 4, "expert": 2}
    with pytest.raises(ShardvizError, match=r"shape \(4, 4\) does not fit.*Fix:"):
        make_mesh("ep", shape=(4, 4))


def test_unknown_strategy_lists_the_known_ones() -> None:
    with pytest.raises(ShardvizError, match="'zero9'.*Fix: use one of 'fsdp', 'fsdp\\+tp'"):
        get_logical_rules("zero9")


def test_the_experts_width_takes_embeds_rule_where_a_table_has_none() -> None:
    """A table written before ``embed_no_exp`` (the user's own) splits the experts' width as
    it splits ``embed``."""
    table = (("expert", ("expert",)), ("embed", ("fsdp",)), ("mlp", ()))
    spec = logical_to_spec(("expert", "embed_no_exp", "mlp"), table)
    assert spec == P("expert", "fsdp", None)


def test_a_logical_axis_no_rule_maps() -> None:
    partial = LogicalRules(
        "mine", ("fsdp",), params=(("embed", ("fsdp",)), ("layers", ())), activations=()
    )
    with pytest.raises(ShardvizError) as err:
        param_specs(LLAMA, partial)
    message = str(err.value)
    assert "logical axis 'vocab'" in message and "no rule maps it" in message
    assert "the rules map 'embed', 'layers'" in message
    assert "Fix: add a rule ('vocab', ())" in message


def test_a_rule_that_puts_two_dims_of_one_array_on_one_mesh_axis() -> None:
    table = tuple((n, ("fsdp",) if n in ("embed", "mlp") else ()) for n in LOGICAL_AXES)
    clash = LogicalRules("clash", ("fsdp",), params=table, activations=table)
    with pytest.raises(ShardvizError) as err:
        param_specs(LLAMA, clash)
    message = str(err.value)
    assert "param layers/mlp/w_gate" in message
    assert "logical axes 'embed' and 'mlp'" in message and "mesh axis 'fsdp'" in message
    assert "Fix: map one of 'embed', 'mlp' to another mesh axis, or to ()" in message


@pytest.mark.parametrize(
    ("strategy", "mesh", "batch", "seq", "match"),
    [
        ("fsdp", {"fsdp": 8}, 6, 64, "batch=6 does not divide over mesh axes fsdp=8"),
        ("dp+fsdp", {"data": 2, "fsdp": 4}, 4, 64, r"batch=4 .* data=2 x fsdp=4 \(8 ways\)"),
        ("sp", {"fsdp": 2, "sequence": 4}, 8, 30, "sequence=30 does not divide over .*sequence=4"),
    ],
)
def test_batch_or_sequence_not_divisible(strategy, mesh, batch, seq, match) -> None:
    with pytest.raises(ShardvizError, match=match + ".*Fix: pick"):
        batch_specs(strategy, mesh, batch=batch, seq=seq)


def test_a_batch_the_mesh_does_not_divide_fails_when_the_step_is_built() -> None:
    model = get_model("llama3.1-8b", **small("llama3.1-8b", batch=4))
    with pytest.raises(ShardvizError, match="batch=4 does not divide.*fsdp=8.*Fix: pick batch"):
        strategy_step(model, logical_rule_set("fsdp", model))


def test_a_mesh_without_the_rules_axes() -> None:
    with pytest.raises(ShardvizError, match=r"mesh axes \('tensor',\), but the mesh has.*Fix"):
        param_specs(LLAMA, "fsdp+tp", {"fsdp": 8})


def test_rules_naming_a_mesh_axis_the_strategy_lacks() -> None:
    with pytest.raises(ShardvizError, match="mesh axes \\('model',\\) that are not among"):
        LogicalRules("bad", ("fsdp",), params=(("embed", ("model",)),), activations=())


def test_logical_to_spec_leaves_unnamed_dims_whole() -> None:
    table = STRATEGY_RULES["fsdp+tp"].activations
    assert logical_to_spec(("batch", None, "heads"), table) == P("fsdp", None, "tensor")


def test_rule_set_for_a_model_that_is_not_published() -> None:
    with pytest.raises(ShardvizError, match="not a published architecture.*Fix"):
        logical_rule_set("fsdp", get_model("mlp"))


def test_the_rule_set_covers_every_leaf_and_activation() -> None:
    rule_set = logical_rule_set("fsdp+tp", MIXTRAL)
    assert rule_set.axes == ("fsdp", "tensor") and rule_set.strict
    shapes = jax.eval_shape(get_model("mixtral-8x7b").init_params, jax.random.key(0))
    assert len(rule_set.params) == len(jax.tree.leaves(shapes))
