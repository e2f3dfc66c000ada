"""XLA flags a compile is made with: what a recipe sets in ``LIBTPU_INIT_ARGS``, per call.

MaxText's recipes start libtpu with dozens of flags (``--xla_tpu_enable_async_collective_
fusion=true``, ``--xla_tpu_scoped_vmem_limit_kib=98304``...) that change the schedule the
compiler makes. jax takes the same flags per compile as ``compiler_options``, so a plan can
be compiled with a recipe's flags without restarting anything::

    with sv.xla_flags("--xla_tpu_enable_async_collective_fusion=true"):
        sv.compare("llama3.1-8b", ["fsdp"], target="v6e:16x16")

A flag this compiler does not know makes the compile fail with a ``CompileError`` naming it
(:func:`known_flags` sorts a list into the ones it takes and the ones it does not).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from shardviz.errors import ShardvizError, problem

__all__ = ["current_flags", "known_flags", "parse_flags", "xla_flags"]

Flags = tuple[tuple[str, str], ...]

_FLAGS: contextvars.ContextVar[Flags] = contextvars.ContextVar("shardviz_xla_flags", default=())


def parse_flags(flags: str | Iterable[str] | Mapping[str, Any]) -> Flags:
    """``"--a=1 --b=true"``, ``["--a=1", "--b=true"]`` or ``{"a": 1, "b": True}`` ->
    ``(("a", "1"), ("b", "true"))``.

    Raises:
      ShardvizError: an item that is not ``--name=value``.
    """
    if isinstance(flags, Mapping):
        items = [(str(k).lstrip("-"), _text(v)) for k, v in flags.items()]
        return tuple(items)
    words = flags.split() if isinstance(flags, str) else list(flags)
    out = []
    for word in words:
        name, sep, value = str(word).lstrip("-").partition("=")
        if not name or not sep:
            raise ShardvizError(
                problem(
                    f"xla_flags({word!r})",
                    "a flag is written --name=value",
                    "write it as in LIBTPU_INIT_ARGS, e.g. "
                    "'--xla_tpu_enable_async_collective_fusion=true'",
                )
            )
        out.append((name, value))
    return tuple(out)


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@contextmanager
def xla_flags(flags: str | Iterable[str] | Mapping[str, Any]) -> Iterator[Flags]:
    """Compile every program inside the block with these XLA flags (added to any outer
    block's; a later value of the same flag wins)."""
    token = _FLAGS.set(_FLAGS.get() + parse_flags(flags))
    try:
        yield _FLAGS.get()
    finally:
        _FLAGS.reset(token)


def current_flags() -> dict[str, str]:
    """The flags of the enclosing :func:`xla_flags` blocks, as ``compiler_options``."""
    return dict(_FLAGS.get())


def known_flags(
    flags: str | Iterable[str] | Mapping[str, Any], lowered: Any
) -> tuple[Flags, Flags]:
    """(the flags this compiler takes, the ones it does not), each tried on ``lowered`` (a
    small program for the same platform: one compile per flag) beside the known ones before
    it, as the compiler takes them all at once: a flag may need an earlier one (libtpu's
    layer scheduler needs the SparseCore collective aggregator the recipes enable first)."""
    known: list[tuple[str, str]] = []
    unknown: list[tuple[str, str]] = []
    for name, value in parse_flags(flags):
        try:
            lowered.compile(compiler_options=dict(known) | {name: value})
        except Exception as err:  # the compiler's own INVALID_ARGUMENT names the option
            if "No such compile option" not in str(err):
                raise
            unknown.append((name, value))
        else:
            known.append((name, value))
    return tuple(known), tuple(unknown)
