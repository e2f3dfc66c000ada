"""One training step as the live view runs it: jitted, called with its result blocked on.

The live view's thread calls these, so the widgets never touch jax: :func:`jitted_step` jits a
step unless it already is a jitted function, :func:`call_blocking` makes a call's time the real
one, and :func:`abstract_arrays` / :func:`compile_step` compile the step again for its inputs'
shapes and shardings (safe after a donating step, whose inputs are gone).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax


def jitted_step(step_fn: Callable[..., Any]) -> Any:
    """``step_fn`` itself when it is already jitted (it has ``lower``), else ``jax.jit(step_fn)``."""
    return step_fn if hasattr(step_fn, "lower") else jax.jit(step_fn)


def call_blocking(fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    """``fn(*args)``, returned only once every array of the result is computed."""
    return jax.block_until_ready(fn(*args))


def abstract_arrays(tree: Any) -> Any:
    """jax arrays -> ``ShapeDtypeStruct`` with their sharding (safe after a donating step)."""

    def one(x: Any) -> Any:
        if isinstance(x, jax.Array):
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)
        return x

    return jax.tree.map(one, tree)


def compile_step(jitted: Any, specs: Sequence[Any]) -> Any:
    """The compiled program of a jitted step for arguments ``specs`` (from :func:`abstract_arrays`)."""
    return jitted.lower(*specs).compile()
