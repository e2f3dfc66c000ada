"""The spec controls for hundreds of leaves (issue 27, section 3): folders by module path with
the parameters first, optimizer state that follows the parameters, a filter that sets many
boxes at once, logical rules, and boxes wide enough for a spec."""

from __future__ import annotations

import re

import pytest

from shardviz.errors import SpecError
from shardviz.widgets.controls import AS_GIVEN, Config, Controls
from shardviz.widgets.spec_folds import BOX_WIDTH, LABEL_WIDTH
from shardviz.widgets.spec_tree import mirrors
from tests.widgets.spec_shapes import llama_shapes

MESH = ((2, 4), ("data", "model"))


def placed(shapes, spec_of=None) -> Config:
    """Every matrix ``P('data', 'model')`` (mu and nu like their parameter), the rest whole."""

    def default(path, shape):
        return ("data", "model") if len(shape) == 2 and "batch" not in path else ()

    spec_of = spec_of or default
    return Config(*MESH, AS_GIVEN, {p: spec_of(p, s) for p, s in shapes.items()})


@pytest.fixture
def shapes():
    return llama_shapes(8)


@pytest.fixture
def controls(shapes):
    return Controls(shapes, placed(shapes), devices=8)


def seen(controls) -> list[Config]:
    configs: list[Config] = []
    controls.on_change(configs.append)
    return configs


def test_mirrors_follow_their_parameters_with_one_box_each(controls, shapes):
    followers = mirrors(shapes)
    assert controls.follow.value and controls.following == set(followers)
    assert set(controls.spec_boxes) == set(shapes) - set(followers)
    config = controls.config
    assert config is not None
    assert set(config.specs) == set(shapes)  # the followers are placed too
    assert all(config.specs[m] == config.specs[p] for m, p in followers.items())


def test_an_edit_of_a_parameter_moves_its_mirrors(controls):
    configs = seen(controls)
    controls.spec_boxes["state/params/layers/3/wq"].value = "model, data"
    (config,) = configs
    for path in ("state/params/layers/3/wq", "state/opt/0/mu/layers/3/wq"):
        assert config.specs[path] == ("model", "data")
    assert config.specs["state/opt/0/nu/layers/3/wq"] == ("model", "data")
    assert config.specs["state/opt/0/mu/layers/2/wq"] == ("data", "model")


def test_unticking_follow_gives_each_mirror_its_own_box_holding_the_parameters_spec(controls):
    controls.spec_boxes["state/params/embed"].value = "model, None"
    controls.follow.value = False
    mu = controls.spec_boxes["state/opt/0/mu/embed"]
    assert mu.value == "model, None"  # the parameter's text, as typed
    configs = seen(controls)
    mu.value = "data, None"
    assert configs[-1].specs["state/opt/0/mu/embed"] == ("data", None)
    assert configs[-1].specs["state/params/embed"] == ("model", None)
    controls.follow.value = True  # back: the mirror follows again
    assert "state/opt/0/mu/embed" not in controls.spec_boxes
    assert configs[-1].specs["state/opt/0/mu/embed"] == ("model", None)


def test_a_state_placed_unlike_its_parameters_keeps_those_boxes(shapes):
    def spec_of(path, shape):
        if path == "state/opt/0/nu/embed":
            return (None, "model")
        return ("data", "model") if len(shape) == 2 and "batch" not in path else ()

    controls = Controls(shapes, placed(shapes, spec_of), devices=8)
    assert "state/opt/0/nu/embed" in controls.spec_boxes  # not silently re-placed
    assert controls.config.specs["state/opt/0/nu/embed"] == (None, "model")
    assert "state/opt/0/mu/embed" not in controls.spec_boxes


def test_folders_parameters_first_open_and_layers_closed(controls):
    titles = [fold.title for fold in controls.tree.children]
    assert titles[0].startswith("state/params · 25 leaves (+50 optimizer leaves follow)")
    assert [t.split(" ·")[0] for t in titles] == ["state/params", "state/opt/0", "batch"]
    params = controls.folds["state/params"]
    assert params.expanded and params.header.description.startswith("▾ state/params")
    layers = controls.folds["state/params/layers"]
    assert not layers.expanded and layers.header.description.startswith("▸ layers · 24 leaves")
    layers.header.click()
    assert layers.expanded
    assert not controls.folds["state/params/layers/3"].expanded


def test_a_small_program_shows_every_box():
    shapes = {"params/w1": (8, 4), "params/w2": (4, 8), "batch/x": (8, 8)}
    controls = Controls(shapes, placed(shapes), devices=8)
    assert all(fold.expanded for fold in controls.folds.values())


def test_boxes_are_wide_enough_for_a_spec_and_labelled_by_leaf_name(controls):
    box = controls.spec_boxes["state/params/layers/3/wq"]
    assert ">wq</span>" in box.description and "state/params/layers/3/wq: shape" in box.description
    assert box.tooltip.startswith("state/params/layers/3/wq: shape (32, 32)")
    width = int(BOX_WIDTH.removesuffix("px")) - int(LABEL_WIDTH.removesuffix("px"))
    assert width >= 220 and box.layout.min_width == BOX_WIDTH


def test_the_filter_lists_the_matching_boxes_and_counts_the_followers(controls):
    controls.filter.value = "layers/*/wq"
    assert controls.tree.layout.display == "none" and controls.matches.layout.display == ""
    assert len(controls.matches.children) == 8
    assert "8 of " in controls.bulk_message.value
    assert "16 optimizer leaves follow them" in controls.bulk_message.value
    assert controls.bulk_button.disabled  # nothing to set yet
    controls.bulk_spec.value = "model, data"
    assert not controls.bulk_button.disabled
    assert controls.bulk_button.description == "set on the 8 matches"
    controls.filter.value = ""
    assert controls.tree.layout.display == "" and controls.matches.layout.display == "none"


def test_the_button_sets_every_match_in_one_change(controls):
    configs = seen(controls)
    controls.filter.value = "layers/*/wq"
    controls.bulk_spec.value = "model, data"
    controls.bulk_button.click()
    (config,) = configs  # one recompile, not eight
    wq = [p for p in config.specs if re.search(r"layers/\d/wq$", p)]
    assert len(wq) == 24 and all(config.specs[p] == ("model", "data") for p in wq)
    assert config.specs["state/params/layers/0/wo"] == ("data", "model")
    assert "set P('model', 'data') on 8 leaves matching 'layers/*/wq'" in controls.note.value


def test_a_spec_that_fits_only_some_matches_changes_nothing_and_names_one(controls):
    configs = seen(controls)
    before = {p: b.value for p, b in controls.spec_boxes.items()}
    controls.filter.value = "layers/*/*"  # norms are rank 1
    controls.bulk_spec.value = "model, data"
    controls.bulk_button.click()
    assert configs == [] and before == {p: b.value for p, b in controls.spec_boxes.items()}
    assert "attn_norm" in controls.bulk_message.value
    with pytest.raises(SpecError, match="no spec box matches 'nothing'"):
        controls.set_matching("nothing", "data")


def test_set_matching_under_a_strategy_types_the_other_boxes(shapes):
    def strategy_specs(shape, names, strategy):
        return {p: ("data",) + (None,) * (len(s) - 1) if s else () for p, s in shapes.items()}

    initial = Config(*MESH, "dp", {})
    controls = Controls(shapes, initial, devices=8, strategy_specs=strategy_specs)
    controls.set_matching("wo", "model, None")
    assert controls.strategy.value == AS_GIVEN
    assert controls.config.specs["state/params/layers/0/wo"] == ("model", None)
    assert controls.config.specs["state/params/layers/0/wq"] == ("data", None)
    assert "keep strategy 'dp'" in controls.note.value


def test_logical_rules_set_every_named_leaf(shapes):
    logical = {"layers/*/wq": ("embed", "heads"), "layers/*/wo": ("heads", "embed")}
    controls = Controls(shapes, placed(shapes), devices=8, logical_axes=logical)
    configs = seen(controls)
    controls.rules.value = "embed=data, heads=model"
    controls.rules_button.click()
    (config,) = configs
    assert config.specs["state/params/layers/5/wq"] == ("data", "model")
    assert config.specs["state/params/layers/5/wo"] == ("model", "data")
    assert config.specs["state/opt/0/nu/layers/5/wo"] == ("model", "data")  # followers too
    controls.rules.value = "embed=model, heads=None"
    controls.rules_button.click()
    assert configs[-1].specs["state/params/layers/0/wq"] == ("model", None)
    controls.apply_rules("embed=data")
    assert "no rule for heads: kept whole" in controls.note.value


def test_logical_rules_say_what_is_wrong(controls, shapes):
    with pytest.raises(SpecError, match="logical_axes="):
        controls.apply_rules("embed=data")
    assert controls.rules.layout is not None
    logical = {"layers/*/wq": ("embed", "heads")}
    with_rules = Controls(shapes, placed(shapes), devices=8, logical_axes=logical)
    with_rules.rules.value = "embed=modle"
    with_rules.rules_button.click()
    assert "unknown mesh axis 'modle'" in with_rules.rules_message.value
    with_rules.rules.value = "embed"
    with_rules.rules_button.click()
    assert "name=axis" in with_rules.rules_message.value


def test_a_fix_for_a_follower_says_to_set_its_parameter(controls):
    with pytest.raises(SpecError, match="it follows 'state/params/embed'"):
        controls.apply_spec("state/opt/0/mu/embed", ("model", None))


def test_a_mesh_reshape_fits_the_followers_without_listing_them(controls):
    controls.mesh_shape.value = (8,)
    note = controls.note.value
    assert "state/params/layers/0/wq" in note and "/mu/" not in note
    config = controls.config
    assert config.specs["state/opt/0/mu/layers/0/wq"] == config.specs["state/params/layers/0/wq"]


def test_leaf_names_are_escaped_in_labels_and_the_filtered_list():
    shapes = {"params/<b>x</b>/w": (8, 4), "params/v": (8,)}
    controls = Controls(shapes, placed(shapes), devices=8)
    label = controls.spec_boxes["params/<b>x</b>/w"].description
    assert "<b>" not in label and "&lt;b&gt;x&lt;/b&gt;" in label
    controls.filter.value = "w"
    (row,) = controls.matches.children
    where = row.children[0].children[0].value
    assert "<b>" not in where and "&lt;b&gt;" in where


def _widgets_made(shapes) -> tuple[Controls, int]:
    from ipywidgets.widgets import widget

    before = len(widget._instances)  # every widget model the kernel syncs (and saves)
    controls = Controls(shapes, placed(shapes), devices=8)
    return controls, len(widget._instances) - before


def test_a_closed_folders_boxes_are_not_made_until_it_opens(shapes):
    controls, made = _widgets_made(shapes)
    assert set(controls._made) == {"state/params/embed"}  # the open folder's own leaf
    _, made_for_32_layers = _widgets_made(llama_shapes(32))
    assert made_for_32_layers == made  # the widgets do not grow with the leaves
    controls.folds["state/params/layers"].header.click()
    controls.folds["state/params/layers/4"].header.click()
    assert {p for p in controls._made if "/4/" in p} == {
        f"state/params/layers/4/{n}" for n in ("attn_norm", "wq", "wo")
    }
    assert len(controls.spec_boxes) == 27  # every box can still be asked for by path


def test_a_wrong_box_is_red_alone_and_its_folder_opens(controls):
    controls.mesh_shape.value = (2, 4)
    controls.axis_names.value = "data, model"
    controls.apply_spec("state/params/layers/6/wo", ("modle", None))
    box = controls.spec_boxes["state/params/layers/6/wo"]
    assert controls.folds["state/params/layers/6"].expanded  # shown where it is wrong
    assert "modle" in controls.spec_messages["state/params/layers/6/wo"].value
    assert box.style.text_color is not None
    assert controls.spec_boxes["state/params/embed"].style.text_color is None
    controls.apply_spec("state/params/layers/6/wo", ("model", None))
    assert box.style.text_color is None and controls.valid
