"""One call to explain, read at the door: the function, its arguments and its options, in one
object that every later step takes.

``explain(fn, *args, kwargs=..., **jit_kwargs)`` hands the same four things to compiling, the
program cache, diagnosis and each fix's trial; before this object each step took them apart
again and worked out what it needed of them anew (the program's key twice a call). What the
steps need of a call is worked out here, once, and kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from shardviz.capture.calls import named_args
from shardviz.capture.user_names import mesh_of
from shardviz.explainer.cache import program_key

__all__ = ["Call"]


@dataclass(frozen=True, eq=False)
class Call:
    """``fn(*args, **kwargs)`` compiled with ``jax.jit(fn, **jit_kwargs)``.

    Attributes:
        fn: the function, a jitted one, or a jax stage of one.
        args: its positional arguments (arrays, ``ShapeDtypeStruct`` objects, pytrees).
        kwargs: its keyword arguments.
        jit_kwargs: the jit options (``in_shardings``, ``donate_argnums``, ...).
    """

    fn: Any
    args: tuple
    kwargs: dict = field(default_factory=dict)
    jit_kwargs: dict = field(default_factory=dict)

    @cached_property
    def key(self) -> Any:
        """What makes its program (:func:`~shardviz.explainer.cache.program_key`): the
        program cache's key, worked out once."""
        return program_key(self.fn, self.args, self.jit_kwargs, self.kwargs)

    def with_arguments(self, args: tuple, kwargs: dict) -> Call:
        """The same function and options on other arguments (a fix's trial: abstract ones)."""
        return Call(self.fn, args, kwargs, self.jit_kwargs)

    @cached_property
    def names(self) -> list[str]:
        """Each positional argument's name, as the report's leaf paths start
        (:func:`~shardviz.capture.calls.named_args`)."""
        return list(named_args(self.fn, self.args))

    @cached_property
    def mesh(self) -> Any:
        """The mesh the arguments are placed on (their first ``NamedSharding``'s), or
        ``None``."""
        return mesh_of(self.args)
