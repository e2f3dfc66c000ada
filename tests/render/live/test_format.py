"""The live view's numbers and short texts (sent ready-made: live.js formats nothing)."""

from __future__ import annotations

import math

import pytest

from shardviz.model.units import format_loss, format_ms
from shardviz.render.live.format import (
    json_loss,
    median_step_ms,
    progress_text,
    time_note,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.123456, "0.1235"), (2.0, "2"), (12345.6, "1.235e+04"), (None, "not finite")],
)
def test_format_loss_keeps_four_significant_digits(value, text):
    assert format_loss(value) == text


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_format_loss_of_a_non_finite_loss(value):
    assert format_loss(value) == "not finite"


@pytest.mark.parametrize(
    ("ms", "text"), [(0.4217, "0.42"), (9.999, "10.00"), (12.34, "12.3"), (812.4, "812")]
)
def test_format_ms_drops_decimals_as_times_grow(ms, text):
    assert format_ms(ms) == text


def test_median_step_ms_leaves_out_the_compile_step():
    assert median_step_ms([]) is None
    assert median_step_ms([500.0]) is None
    assert median_step_ms([500.0, 3.0, 1.0, 2.0]) == 2.0


def test_json_loss_turns_non_finite_into_none():
    assert json_loss(0.5) == 0.5
    assert json_loss(math.nan) is None and json_loss(math.inf) is None


def test_progress_text_with_and_without_a_known_total():
    assert progress_text(3, 100) == "step 3 / 100"
    assert progress_text(3, 0) == "step 3"


def test_time_note_sets_the_compile_step_apart():
    assert time_note([]) == "no step finished yet"
    assert time_note([812.4]) == "step 1 (compile): 812 ms"
    assert time_note([812.4, 2.5]) == "step 1 (compile): 812 ms · median 2.50 ms over step 2"
    assert time_note([812.4, 2.0, 4.0, 3.0]).endswith("median 3.00 ms over steps 2–4")
