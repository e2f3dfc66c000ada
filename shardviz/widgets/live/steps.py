"""The step-function convention of :func:`shardviz.live`: batches in, ``(*new_state, loss)`` out.

Pure helpers for the live run's thread: where each step's batch comes from, how a step's
output splits into the new state and the loss, and the checks on ``live()``'s arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from shardviz.errors import problem


class BatchesExhausted(Exception):
    """The batch iterator (or batch function) ran out: the run ends as done."""


def batch_source(batches: Any) -> Callable[[int], Any]:
    """``step index -> batch`` for the three accepted forms.

    An iterator (a generator, ``iter(list_of_batches)``) gives the next batch each step; a
    callable is called with the 0-based step index; anything else is one batch reused every
    step (so a dict, tuple or list is a batch, not a sequence of batches).
    """
    if isinstance(batches, Iterator):

        def following(i: int) -> Any:
            del i
            try:
                return next(batches)
            except StopIteration:
                raise BatchesExhausted from None

        return following
    if callable(batches):

        def called(i: int) -> Any:
            try:
                return batches(i)
            except StopIteration:
                raise BatchesExhausted from None

        return called
    return lambda i: batches


def split_output(out: Any, n_state: int) -> tuple[tuple, float]:
    """``(*new_state, loss)`` -> the new state items and the loss as a float.

    Raises:
        TypeError: the output does not follow the convention.
    """
    if not isinstance(out, tuple) or len(out) != n_state + 1:
        got = f"a tuple of {len(out)}" if isinstance(out, tuple) else f"a {type(out).__name__}"
        raise TypeError(
            problem(
                "live",
                f"step_fn returned {got}, not (new_state..., loss) with {n_state} state item(s) "
                "and the loss",
                f"return the {n_state} new state item(s) in the order they came in, then the "
                "scalar loss, e.g. `return params, opt_state, loss`",
            )
        )
    loss = np.asarray(out[-1])
    if loss.size != 1 or loss.dtype.kind not in "fiu":
        raise TypeError(
            problem(
                "live",
                f"step_fn's last output should be the scalar loss, got {loss.dtype}{list(loss.shape)}",
                "return the loss last, reduced to one number (e.g. jnp.mean)",
            )
        )
    return tuple(out[:-1]), float(loss.reshape(()))


def check_live_args(step_fn: Any, batches: Any, steps: int | None, every: int) -> None:
    """Refuse at once what :func:`shardviz.live` cannot run (the message says the fix).

    Raises:
        TypeError: ``step_fn`` is not callable.
        ValueError: ``steps`` or ``every`` is not a positive integer, or ``steps`` is missing
            for a batch or callable (which never run out).
    """
    if not callable(step_fn):
        raise TypeError(
            problem(
                "live",
                f"step_fn is a {type(step_fn).__name__}, not a function",
                "pass a function step_fn(*state, batch) -> (*new_state, loss)",
            )
        )
    for name, value in (("steps", steps), ("every", every)):
        if value is None and name == "steps":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                problem(
                    "live", f"{name}={value!r} is not an integer >= 1", f"pass {name}=N, N >= 1"
                )
            )
    if steps is None and not isinstance(batches, Iterator):
        raise ValueError(
            problem(
                "live",
                "steps is missing, and a single batch or a batch function never runs out",
                "pass steps=N, or an iterator of batches (e.g. iter(list_of_batches))",
            )
        )
