"""The one set of rules for users' numbers, sizes and dtypes (``shardviz.model.arguments``)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardviz.errors import ArgumentError, ShardvizError
from shardviz.model.arguments import (
    MAX_BYTES,
    byte_size,
    dtype_name,
    finite_number,
    flag,
    shown,
    whole_number,
)


@pytest.mark.parametrize("value", [8, np.int64(8), np.int32(8), np.uint8(8), np.array(8)])
def test_whole_numbers_of_every_integer_type_are_taken_as_python_ints(value) -> None:
    got = whole_number("f()", "batch", value)
    assert got == 8 and type(got) is int


@pytest.mark.parametrize(
    "value",
    [True, False, np.True_, np.array(True), 8.0, 8.5, "8", None, [8], 0, -8, float("nan")],
)
def test_anything_else_is_refused_naming_the_argument_and_a_value_to_pass(value) -> None:
    with pytest.raises(ArgumentError) as err:
        whole_number("smallest_slice('v5e')", "batch", value)
    text = str(err.value)
    assert text.startswith("smallest_slice('v5e'): batch=") and "Fix: pass batch=1." in text
    assert isinstance(err.value, ShardvizError) and isinstance(err.value, ValueError)


def test_a_range_is_named_in_the_message() -> None:
    assert whole_number("w", "stages", 4, low=2, high=4) == 4
    with pytest.raises(ArgumentError, match="stages=5 is not a whole number from 2 to 4"):
        whole_number("w", "stages", 5, low=2, high=4)
    with pytest.raises(ArgumentError, match="Fix: pass stages=4"):
        whole_number("w", "stages", 0, example=4)


@given(st.integers(min_value=-(10**30), max_value=10**30))
@settings(max_examples=200, deadline=None)
def test_whole_number_takes_exactly_the_integers_in_range(n: int) -> None:
    if n >= 1:
        assert whole_number("w", "n", n) == n
    else:
        with pytest.raises(ArgumentError):
            whole_number("w", "n", n)


@pytest.mark.parametrize("value", [1, 2.5, np.float32(2.5), np.array(3.0), 10**30])
def test_finite_numbers(value) -> None:
    got = finite_number("w", "budget_s", value)
    assert type(got) is float and math.isfinite(got)


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), -float("inf"), 0, -1, True, "5", None, 10**400]
)
def test_nan_infinite_boolean_and_non_positive_numbers_are_refused(value) -> None:
    with pytest.raises(ArgumentError, match="budget_s=.* is not a finite positive number"):
        finite_number("suggest", "budget_s", value)


def test_zero_is_taken_where_the_number_may_be_zero() -> None:
    assert finite_number("w", "x", 0, positive=False) == 0.0
    with pytest.raises(ArgumentError, match="non-negative"):
        finite_number("w", "x", -0.5, positive=False)


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (2**30, 2**30),
        (np.int64(1024), 1024),
        (1.5e9, 1_500_000_000),
        ("2 GiB", 2 * 2**30),
        ("512MiB", 512 * 2**20),
        ("1.5 GB", 1_500_000_000),
        ("1e3 kb", 10**6),
        ("  7 b ", 7),
        (MAX_BYTES, MAX_BYTES),
    ],
)
def test_sizes_in_bytes(value, size) -> None:
    assert byte_size(value) == size


@pytest.mark.parametrize(
    "value",
    [
        float("inf"),
        float("nan"),
        "1e400 GiB",
        10**400,
        MAX_BYTES + 1,
        0,
        -5,
        0.5,
        True,
        "two GiB",
        "2 GiBs",
        "",
        [1],
    ],
)
def test_sizes_that_no_machine_has_are_refused_naming_the_argument(value) -> None:
    with pytest.raises(ArgumentError) as err:
        byte_size(value, "host_memory_limit")
    text = str(err.value)
    assert text.startswith("host_memory_limit=") and "'2 GiB'" in text
    assert len(text) < 300  # a 400-digit number is not quoted back whole


def test_no_size_stays_none() -> None:
    assert byte_size(None) is None


@pytest.mark.parametrize(
    ("dtype", "name"),
    [
        ("BF16", "bf16"),
        (" int8", "int8"),
        (np.int8, "int8"),
        (np.dtype("float32"), "float32"),
        (ml_dtypes.bfloat16, "bfloat16"),
        (ml_dtypes.int4, "int4"),
        (np.zeros(2, np.int8), "int8"),
    ],
)
def test_dtype_names_from_strings_types_dtypes_and_arrays(dtype, name) -> None:
    assert dtype_name(dtype) == name


def test_jax_scalar_types_name_their_dtype() -> None:
    import jax.numpy as jnp

    assert dtype_name(jnp.bfloat16) == "bfloat16"
    assert dtype_name(jnp.int4) == "int4"
    assert dtype_name(jnp.ones(2, jnp.bfloat16)) == "bfloat16"


def test_shown_cuts_long_values() -> None:
    assert shown(8) == "8"
    assert len(shown(10**400)) == 60 and shown(10**400).endswith("...")


@pytest.mark.parametrize("value", [True, False, np.True_, np.array(False)])
def test_flags_are_booleans_of_any_kind(value) -> None:
    got = flag("smallest_slice('v5e')", "check", value)
    assert type(got) is bool and got == bool(value)


@pytest.mark.parametrize("value", [1, 0, "yes", None, np.array([True])])
def test_a_flag_is_never_guessed(value) -> None:
    with pytest.raises(ArgumentError, match=r"check=.* is not True or False\. Fix: pass check"):
        flag("smallest_slice('v5e')", "check", value)
