"""The spec tree's rules (issue 27, section 3): folders by module path with the parameters
first, optimizer leaves that mirror a parameter, patterns and logical rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardviz.errors import SpecError
from shardviz.model.roles import leaf_role
from shardviz.widgets.spec_tree import (
    group_tree,
    logical_specs,
    matches,
    mirrors,
    parse_rules,
    sections,
)
from tests.widgets.spec_shapes import LAYER, llama_shapes


def test_adams_moments_mirror_the_parameters_and_count_mirrors_nothing():
    shapes = llama_shapes(3)
    found = mirrors(shapes)
    params = [p for p in shapes if p.startswith("state/params/")]
    assert len(found) == 2 * len(params)
    assert found["state/opt/0/mu/layers/2/wq"] == "state/params/layers/2/wq"
    assert found["state/opt/0/nu/embed"] == "state/params/embed"
    assert "state/opt/0/count" not in found
    assert not any(p in found for p in params)  # a parameter mirrors nothing


def test_a_mirror_needs_the_same_shape_and_an_optimizer_path():
    shapes = {"params/w": (4, 4), "opt_state/mu/w": (4, 2), "batch/w": (4, 4)}
    assert mirrors(shapes) == {}  # mu has another shape; batch/w is not optimizer state
    shapes["opt_state/nu/w"] = (4, 4)
    assert mirrors(shapes) == {"opt_state/nu/w": "params/w"}


def test_roles_come_from_the_first_component_that_names_them():
    assert leaf_role("state/params/layers/0/wq") == "params"
    assert leaf_role("state/opt/0/mu/layers/0/wq") == "optimizer"
    assert leaf_role("opt_state/0/mu/params/w") == "optimizer"
    assert leaf_role("batch/tokens") == "batch"
    assert leaf_role("model/l1/kernel/value") == "params"


def test_folders_by_module_path_with_the_parameters_first_and_layers_in_number_order():
    shapes = llama_shapes(12)
    controlled = [p for p in shapes if p not in mirrors(shapes)]
    tops = sections(group_tree(controlled))
    assert [g.name for g in tops] == ["state/params", "state/opt/0", "batch"]
    params = tops[0]
    assert params.leaves == ["state/params/embed"]
    (layers,) = params.children
    assert [c.name for c in layers.children] == [str(i) for i in range(12)]  # 10 after 9
    assert layers.children[3].leaves == [f"state/params/layers/3/{n}" for n in LAYER]
    assert sorted(p for g in tops for p in g.all_leaves()) == sorted(controlled)


def test_the_batch_before_the_parameters_in_the_arguments_still_shows_second():
    tops = sections(group_tree(["batch/x", "params/w1", "params/w2"]))
    assert [g.name for g in tops] == ["params", "batch"]


def test_single_child_folders_are_joined():
    tops = sections(group_tree(["a/b/c/w", "a/b/c/v", "x"]))
    assert [g.name for g in tops] == ["a/b/c", "arguments"]


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("layers/*/wq", "state/params/layers/3/wq", True),
        ("layers/*/wq", "state/opt/0/mu/layers/3/wq", True),
        ("layers/*/wq", "state/params/layers/3/wo", False),
        ("wq", "state/params/layers/3/wq", True),
        ("q", "state/params/layers/3/wq", False),  # whole names, not substrings
        ("w*", "state/params/layers/3/wo", True),
        ("params/**/wq", "state/params/layers/3/wq", True),
        ("mu/**", "state/opt/0/mu/layers/3/wq", True),
        ("LAYERS/*/WQ", "state/params/layers/3/wq", True),
        ("", "anything", True),
    ],
)
def test_patterns_match_the_end_of_a_path_name_by_name(pattern, path, hit):
    assert matches(pattern, path) is hit


names = st.text(alphabet="abcxyz_0123", min_size=1, max_size=6)


@given(st.lists(names, min_size=1, max_size=6))
def test_a_path_matches_itself_every_ending_and_stars(parts):
    path = "/".join(parts)
    assert matches(path, path)
    for start in range(len(parts)):
        assert matches("/".join(parts[start:]), path)
        assert matches("/".join("*" for _ in parts[start:]), path)


def test_rules_parse_with_several_axes_and_none():
    rules = parse_rules("embed=data, mlp = model; heads=(model, seq)\nnorm=None")
    assert rules == {"embed": ("data",), "mlp": ("model",), "heads": ("model", "seq"), "norm": ()}


@pytest.mark.parametrize(("text", "words"), [("embed", "not a rule"), ("a=x, a=y", "two rules")])
def test_a_wrong_rule_says_how_to_write_it(text, words):
    with pytest.raises(SpecError, match=words):
        parse_rules(text)


def test_logical_names_give_specs_and_say_the_names_no_rule_maps():
    logical = {
        "layers/*/wq": ("embed", "heads"),
        "layers/*/attn_norm": ("embed",),
        "embed": ("vocab", "embed"),
    }
    paths = llama_shapes(2)
    specs, unmapped = logical_specs(paths, logical, {"embed": ("data",), "heads": ("model",)})
    assert specs["state/params/layers/1/wq"] == ("data", "model")
    assert specs["state/opt/0/nu/layers/0/wq"] == ("data", "model")
    assert specs["state/params/layers/0/attn_norm"] == ("data",)
    assert specs["state/params/embed"] == (None, "data")
    assert unmapped == ["vocab"]
    assert "state/params/layers/0/wo" not in specs  # no pattern names it
