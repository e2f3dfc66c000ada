"""The explorer's controls: pure helpers, then the widget checking fields as the user types."""

from __future__ import annotations

import math

import pytest

from shardviz.errors import MeshError, ShardvizError, SpecError
from shardviz.widgets.config_checks import (
    AS_GIVEN,
    factorisations,
    fit_spec,
    invalid_words,
    parse_axis_names,
    rename_spec,
    strategies_for,
    unused_axes_note,
    validate_spec,
)
from shardviz.widgets.controls import INVALID_COLOR, Config, Controls

# --- factorisations -------------------------------------------------------------------------


def test_factorisations_of_8_leave_out_size_1_axes():
    assert factorisations(8) == [(8,), (2, 4), (4, 2), (2, 2, 2)]


def test_factorisations_with_ones():
    shapes = factorisations(8, max_rank=2, ones=True)
    assert shapes == [(8,), (1, 8), (2, 4), (4, 2), (8, 1)]


@pytest.mark.parametrize("n", [1, 2, 6, 7, 12, 16])
@pytest.mark.parametrize("max_rank", [1, 2, 3, 4])
def test_factorisations_multiply_to_n_without_repeats(n, max_rank):
    shapes = factorisations(n, max_rank)
    assert shapes[0] == (n,)
    assert len(set(shapes)) == len(shapes)
    assert all(math.prod(s) == n and len(s) <= max_rank for s in shapes)


def test_factorisations_of_one_device_and_of_a_prime():
    assert factorisations(1) == [(1,)]
    assert factorisations(7) == [(7,)]


def test_factorisations_refuse_zero_devices():
    with pytest.raises(MeshError, match="Fix:"):
        factorisations(0)


# --- validate_spec --------------------------------------------------------------------------

MESH, NAMES = (2, 4), ("data", "model")


def test_validate_spec_accepts_a_fitting_spec():
    assert validate_spec("params/w1", (64, 256), (None, "model"), MESH, NAMES) is None
    assert validate_spec("params/w1", (64, 256), (("data", "model"), None), MESH, NAMES) is None


@pytest.mark.parametrize(
    ("shape", "spec", "parts"),
    [
        (
            (64, 256),
            ("modle", None),
            ["dim 0", "unknown mesh axis 'modle'", "did you mean 'model'"],
        ),
        ((64, 256), ("data", "data"), ["dim 1", "'data' is used twice"]),
        ((64,), ("data", None), ["rank 1", "drop the extra entries"]),
        ((6, 256), ("model", None), ["dim 0", "size 6 does not divide", "'model' (4)"]),
    ],
)
def test_validate_spec_names_array_dim_axis_and_fix(shape, spec, parts):
    with pytest.raises(SpecError) as info:
        validate_spec("params/w1", shape, spec, MESH, NAMES)
    msg = str(info.value)
    assert "'params/w1'" in msg and "Fix:" in msg
    for part in parts:
        assert part in msg


# --- axis names and strategies --------------------------------------------------------------


def test_parse_axis_names():
    assert parse_axis_names("data, model", (2, 4)) == ("data", "model")
    assert parse_axis_names("'data','model',", (2, 4)) == ("data", "model")


@pytest.mark.parametrize(
    ("text", "why"),
    [("data", "1 name"), ("data, data", "named twice"), ("data, , model", "empty name")],
)
def test_parse_axis_names_refuses(text, why):
    with pytest.raises(MeshError, match=why) as info:
        parse_axis_names(text, (2, 4))
    assert "Fix:" in str(info.value)


def test_strategies_fit_the_axis_names():
    assert strategies_for(("data",)) == (AS_GIVEN, "dp", "zero1", "zero2", "zero3", "fsdp")
    two = strategies_for(("data", "model"))
    assert {"tp", "2d", "sp", "dp"} <= set(two) and "ep" not in two
    assert "ep" in strategies_for(("data", "expert"))
    assert strategies_for(("x",)) == (AS_GIVEN,)


def test_rename_spec_renames_only_the_named_axes():
    spec = (None, "model", ("data", "model"))
    assert rename_spec(spec, {"model": "tp", "data": "dp"}) == (None, "tp", ("dp", "tp"))
    assert rename_spec(spec, {"seq": "s"}) == spec


@pytest.mark.parametrize(
    ("spec", "shape", "mesh", "names", "fitted"),
    [
        ((None, "model"), (64, 256), (8,), ("data",), (None, None)),  # axis gone
        (("data", None), (6, 4), (4, 2), ("data", "model"), (None, None)),  # 6 over 4: no
        ((("data", "model"), None), (16, 4), (2, 4), ("data", "model"), (("data", "model"), None)),
        ((("data", "model"), None), (4, 4), (2, 4), ("data", "model"), ("data", None)),
        (("data", "data"), (8, 8), (8,), ("data",), ("data", None)),  # an axis used twice
        (("data", None, None), (8,), (8,), ("data",), ("data",)),  # longer than the rank
    ],
)
def test_fit_spec_keeps_what_fits_and_drops_the_rest(spec, shape, mesh, names, fitted):
    assert fit_spec(spec, shape, mesh, names) == fitted
    validate_spec("x", shape, fitted, mesh, names)  # what it proposes always fits


def test_unused_axes_note_says_what_an_idle_axis_costs():
    note = unused_axes_note("fsdp", (2, 4), ("data", "model"))
    assert "'model' (4 devices) is unused" in note
    assert "copied 4 times" in note and "4x the memory" in note
    assert "pick mesh shape 8" in note
    assert unused_axes_note("fsdp", (8, 1), ("data", "model")) == ""  # size 1 costs nothing
    assert unused_axes_note("tp", (2, 4), ("data", "model")) == ""
    assert unused_axes_note(AS_GIVEN, (2, 4), ("data", "model")) == ""


def test_invalid_words_name_the_fields_and_the_first_problem():
    assert invalid_words({}) == ""
    one = {"params/w1": "array 'params/w1', dim 0: unknown mesh axis 'modle'. Fix: did you mean"}
    assert invalid_words(one) == "fix params/w1: unknown mesh axis 'modle'"
    two = {**one, "batch/x": "array 'batch/x': never closed. Fix: close it"}
    assert invalid_words(two).startswith("fix params/w1 and batch/x: unknown")


# --- the widget -----------------------------------------------------------------------------

SHAPES = {"params/w1": (64, 256), "params/b1": (256,), "batch/x": (32, 64)}
INITIAL = Config(
    (2, 4), ("data", "model"), AS_GIVEN,
    {"params/w1": (None, "model"), "params/b1": ("model",), "batch/x": ("data", None)},
)  # fmt: skip


def fake_strategy_specs(mesh_shape, axis_names, strategy):
    if strategy == "tp" and "model" not in axis_names:
        raise ShardvizError("strategy 'tp': needs 'model'. Fix: name an axis 'model'.")
    return {"params/w1": ("data", None), "params/b1": (), "batch/x": ("data",)}


@pytest.fixture
def controls():
    c = Controls(SHAPES, INITIAL, devices=8, strategy_specs=fake_strategy_specs)
    c.received = []
    c.on_change(c.received.append)
    return c


def test_controls_start_valid_with_the_initial_config(controls):
    assert controls.valid
    assert controls.config == INITIAL
    assert controls.received == []  # nothing changed yet
    assert controls.spec_boxes["params/w1"].value == "P(None, 'model')"
    assert [v for _, v in controls.mesh_shape.options] == [(8,), (2, 4), (4, 2), (2, 2, 2)]
    assert controls.axis_names.value == "data, model"
    assert controls.spec_boxes["params/w1"].continuous_update


def test_a_mesh_the_user_has_stays_offered():
    c = Controls(SHAPES, Config((1, 8), ("data", "model"), AS_GIVEN, {}), devices=8)
    assert c.mesh_shape.value == (1, 8)
    assert c.valid


def test_an_invalid_spec_is_flagged_as_you_type_and_fires_nothing(controls):
    box, message = controls.spec_boxes["params/w1"], controls.spec_messages["params/w1"]
    box.value = "modle, None"
    assert not controls.valid
    assert "unknown mesh axis 'modle'" in message.value
    assert "did you mean" in message.value
    assert box.style.text_color == INVALID_COLOR
    assert "shardviz-invalid" in box._dom_classes
    assert controls.config is None
    assert controls.received == []


def test_bad_syntax_is_flagged_too(controls):
    controls.spec_boxes["batch/x"].value = "(data"
    assert "never closed" in controls.spec_messages["batch/x"].value
    assert controls.received == []


def test_fixing_a_spec_clears_the_message_and_fires_a_config(controls):
    box, message = controls.spec_boxes["params/w1"], controls.spec_messages["params/w1"]
    box.value = "modle, None"
    box.value = "model, None"
    assert message.value == ""
    assert message.layout.display == "none"
    assert box.style.text_color is None
    assert "shardviz-invalid" not in box._dom_classes
    (config,) = controls.received
    assert config.specs["params/w1"] == ("model", None)
    assert config.specs["batch/x"] == ("data", None)
    assert (config.mesh_shape, config.axis_names, config.strategy) == (
        (2, 4), ("data", "model"), AS_GIVEN,
    )  # fmt: skip


def test_the_same_config_spelt_differently_does_not_fire_again(controls):
    controls.spec_boxes["params/w1"].value = "model, None"
    controls.spec_boxes["params/w1"].value = "P('model', None)"
    controls.spec_boxes["params/w1"].value = "('model', None)"
    assert len(controls.received) == 1


def test_a_spec_longer_than_the_rank_is_flagged(controls):
    controls.spec_boxes["params/b1"].value = "model, None"
    assert "rank 1" in controls.spec_messages["params/b1"].value


def test_wrong_axis_name_count_is_flagged(controls):
    controls.axis_names.value = "data"
    assert "1 name(s)" in controls.axis_message.value
    assert controls.axis_names.style.text_color == INVALID_COLOR
    assert controls.received == []
    controls.axis_names.value = "data, data"
    assert "named twice" in controls.axis_message.value
    controls.axis_names.value = "data, model"
    assert controls.axis_message.value == ""
    assert controls.received == []  # back to the config already handed on


def test_renaming_the_axes_carries_the_rename_into_the_specs(controls):
    """Regression (issue 12): "dp, tp" used to leave 'data' and 'model' in the boxes."""
    controls.axis_names.value = "dp, tp"
    assert controls.valid, controls.errors
    assert controls.spec_boxes["params/w1"].value == "P(None, 'tp')"
    assert controls.spec_boxes["batch/x"].value == "P('dp', None)"
    assert all(m.value == "" for m in controls.spec_messages.values())
    assert "'data' → 'dp'" in controls.note.value and "'model' → 'tp'" in controls.note.value
    config = controls.received[-1]
    assert config.axis_names == ("dp", "tp") and config.specs["params/b1"] == ("tp",)


def test_typing_a_rename_letter_by_letter_ends_with_the_new_names(controls):
    for text in ("data, t", "data, te", "data, ten", "data, tensor"):
        controls.axis_names.value = text
    assert controls.spec_boxes["params/w1"].value == "P(None, 'tensor')"
    assert controls.received[-1].axis_names == ("data", "tensor")


def test_a_spec_with_a_typo_keeps_its_text_through_a_rename(controls):
    controls.spec_boxes["params/w1"].value = "(None, 'model'"
    controls.axis_names.value = "data, tensor"
    assert controls.spec_boxes["params/w1"].value == "(None, 'model'"
    assert "never closed" in controls.spec_messages["params/w1"].value


def test_a_rank_1_mesh_proposes_specs_that_fit(controls):
    """Regression (issue 12): the mesh "8" used to leave 3 red errors."""
    controls.mesh_shape.value = (8,)
    assert controls.axis_names.value == "data"
    assert controls.valid, controls.errors
    assert controls.spec_boxes["params/w1"].value == "P(None, None)"
    assert controls.spec_boxes["batch/x"].value == "P('data', None)"  # still fits: kept
    assert "fitted to the 8 mesh" in controls.note.value
    assert "params/w1 P(None, 'model') → P(None, None)" in controls.note.value
    assert controls.received[-1].mesh_shape == (8,)
    controls.spec_boxes["params/w1"].value = "None, data"  # an edit clears the note
    assert controls.note.value == ""
    controls.mesh_shape.value = (2, 2, 2)
    assert controls.axis_names.value == "data, model, expert"


def test_a_mesh_change_that_no_longer_divides_proposes_a_spec_that_does():
    c = Controls({"x": (6, 4)}, Config((2, 4), ("data", "model"), AS_GIVEN, {"x": ("data",)}))
    assert c.valid
    c.mesh_shape.value = (4, 2)  # same names, 'data' now 4 ways: 6 does not divide
    assert c.spec_boxes["x"].value == "P(None,)"
    assert c.valid and c.config.specs["x"] == (None,)


def test_the_unused_axis_of_a_strategy_is_said_plainly(controls):
    controls.strategy.value = "fsdp"
    assert "'model' (4 devices) is unused" in controls.strategy_message.value
    assert INVALID_COLOR not in controls.strategy_message.value  # a note, not an error
    assert controls.valid
    controls.strategy.value = AS_GIVEN
    assert controls.strategy_message.value == ""


def test_error_listeners_hear_when_a_field_goes_wrong_and_right_again(controls):
    heard = []
    controls.on_errors(heard.append)
    controls.spec_boxes["params/w1"].value = "modle, None"
    controls.spec_boxes["params/w1"].value = "model2, None"
    controls.spec_boxes["params/w1"].value = "model, None"
    assert [list(e) for e in heard] == [["params/w1"], ["params/w1"], []]
    assert "modle" in heard[0]["params/w1"] and "model2" in heard[1]["params/w1"]
    controls.on_errors(heard.append, remove=True)


def test_invalid_error_names_the_box_and_its_problem(controls):
    controls.spec_boxes["params/w1"].value = "modle, None"
    err = controls.invalid_error("Explorer.train")
    assert isinstance(err, SpecError)
    assert "Explorer.train: the 'params/w1' box is invalid" in str(err)
    assert "unknown mesh axis 'modle'" in str(err)
    controls.spec_boxes["params/w1"].value = "model, None"
    controls.axis_names.value = "data"
    assert isinstance(controls.invalid_error("Explorer.train"), MeshError)


def test_strategy_options_follow_the_axis_names(controls):
    assert "tp" in controls.strategy.options
    controls.axis_names.value = "data, seq"
    assert "tp" not in controls.strategy.options
    assert "dp" in controls.strategy.options


def test_a_strategy_fills_read_only_boxes_and_fires(controls):
    controls.strategy.value = "dp"
    box = controls.spec_boxes["params/w1"]
    assert box.disabled
    assert box.value == "P('data', None)"
    config = controls.received[-1]
    assert config.strategy == "dp"
    assert config.specs["params/w1"] == ("data", None)


def test_back_to_as_given_restores_what_was_typed(controls):
    controls.spec_boxes["params/w1"].value = "model, None"
    controls.strategy.value = "dp"
    controls.strategy.value = AS_GIVEN
    box = controls.spec_boxes["params/w1"]
    assert not box.disabled
    assert box.value == "model, None"
    assert controls.received[-1].strategy == AS_GIVEN
    assert controls.received[-1].specs["params/w1"] == ("model", None)


def test_a_strategy_that_does_not_fit_says_why():
    def refuse(mesh_shape, axis_names, strategy):
        raise SpecError("params leaf w1: does not divide. Fix: pick another mesh.")

    c = Controls(SHAPES, INITIAL, strategy_specs=refuse)
    received = []
    c.on_change(received.append)
    c.strategy.value = "dp"
    assert "does not divide" in c.strategy_message.value
    assert not c.valid
    assert received == []


def test_a_strategy_without_a_spec_source_hands_on_empty_specs():
    c = Controls(SHAPES, INITIAL)
    received = []
    c.on_change(received.append)
    c.strategy.value = "fsdp"
    assert received[-1] == Config((2, 4), ("data", "model"), "fsdp", {})


def test_a_strategy_no_longer_fitting_falls_back_to_as_given(controls):
    controls.strategy.value = "tp"
    controls.axis_names.value = "data, seq"
    assert controls.strategy.value == AS_GIVEN


def test_a_failing_change_handler_is_shown_not_raised(controls):
    def broken(config):
        raise RuntimeError("explorer gone")

    controls.on_change(broken)
    controls.spec_boxes["params/w1"].value = "model, None"
    assert "RuntimeError: explorer gone" in controls.message.value
    controls.on_change(broken, remove=True)
    controls.spec_boxes["params/w1"].value = "None, model"
    assert controls.message.value == ""
