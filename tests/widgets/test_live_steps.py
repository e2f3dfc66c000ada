"""The step-function convention of shardviz.live: where batches come from, what a step returns."""

from __future__ import annotations

import numpy as np
import pytest

from shardviz.widgets.live.steps import (
    BatchesExhausted,
    batch_source,
    check_live_args,
    split_output,
)


def test_an_iterator_gives_the_next_batch_until_it_runs_out():
    next_batch = batch_source(iter(["a", "b"]))
    assert [next_batch(0), next_batch(7)] == ["a", "b"]
    with pytest.raises(BatchesExhausted):
        next_batch(2)


def test_a_callable_gets_the_step_index_and_may_stop():
    def batches(i: int) -> int:
        if i == 2:
            raise StopIteration
        return i * 10

    next_batch = batch_source(batches)
    assert [next_batch(0), next_batch(1)] == [0, 10]
    with pytest.raises(BatchesExhausted):
        next_batch(2)


def test_anything_else_is_one_batch_reused():
    batch = {"x": [1, 2]}
    next_batch = batch_source(batch)
    assert next_batch(0) is batch and next_batch(99) is batch
    pair = ("x", "y")
    assert batch_source(pair)(1) is pair  # a tuple is a batch, not a sequence of batches


def test_split_output_gives_the_new_state_and_a_float_loss():
    state, loss = split_output(("p", "o", np.float32(0.25)), 2)
    assert state == ("p", "o") and loss == 0.25 and type(loss) is float
    assert split_output(("p", np.array([3])), 1)[1] == 3.0


@pytest.mark.parametrize(
    ("out", "why"),
    [
        ("p", "returned a str"),
        (("p",), "returned a tuple of 1"),
        (("p", np.zeros(3)), "scalar loss"),
        (("p", np.array("x")), "scalar loss"),
    ],
)
def test_split_output_says_what_to_return(out, why):
    with pytest.raises(TypeError, match=why) as info:
        split_output(out, 1)
    assert "Fix:" in str(info.value)


def test_check_live_args_accepts_a_run_that_can_end():
    check_live_args(len, "batch", 3, 1)
    check_live_args(len, iter([]), None, 2)


@pytest.mark.parametrize(
    ("args", "error", "why"),
    [
        (("step", "batch", 3, 1), TypeError, "not a function"),
        ((len, "batch", 0, 1), ValueError, "steps=0"),
        ((len, "batch", True, 1), ValueError, "steps=True"),
        ((len, "batch", 3, 1.5), ValueError, "every=1.5"),
        ((len, "batch", None, 1), ValueError, "steps is missing"),
        ((len, lambda i: i, None, 1), ValueError, "steps is missing"),
    ],
)
def test_check_live_args_refuses_with_the_fix(args, error, why):
    with pytest.raises(error, match=why) as info:
        check_live_args(*args)
    assert "Fix:" in str(info.value)
