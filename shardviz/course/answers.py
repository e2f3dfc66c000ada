"""Reading a learner's answer into the form a judge runs: a collective's kind, a number of
bytes, one spec per named array.

Learners write answers in many spellings (``"allreduce"``, ``"All-Reduce"``, ``"psum"``;
``P("data")`` or ``("data",)``). These helpers accept the reasonable ones and raise
``ValueError`` (which :func:`shardviz.course.check` turns into "wrong form", with the
exercise's prompt) for anything else, so a judge only ever sees clean input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from shardviz.model.program import COLLECTIVE_KINDS, collective_kind_named
from shardviz.model.units import format_bytes

#: jax's names for the same collectives (what a shard_map program calls them).
_JAX_NAMES = {
    "psum": "all-reduce",
    "pmean": "all-reduce",
    "all_gather": "all-gather",
    "psum_scatter": "reduce-scatter",
    "all_to_all": "all-to-all",
    "ppermute": "collective-permute",
}


def collective_kind(answer: Any) -> str:
    """``"all-reduce"`` for ``"all-reduce"``, ``"AllReduce"``, ``"all_reduce"`` or ``"psum"``.

    Raises:
        ValueError: the answer names no collective.
    """
    if not isinstance(answer, str):
        raise ValueError(f"name a collective as a string, e.g. 'all-gather'; got {answer!r}")
    text = answer.strip().lower()
    if text in _JAX_NAMES:
        return _JAX_NAMES[text]
    kind = collective_kind_named(text)
    if kind is None:
        raise ValueError(
            f"{answer!r} is not a collective; the compiler's are {', '.join(COLLECTIVE_KINDS)}"
        )
    return kind


def collective_kinds(answer: Any) -> frozenset[str]:
    """The kinds named by one string or by a list/set/tuple of strings (``"none"`` or an
    empty list: no collective at all)."""
    if isinstance(answer, str):
        if answer.strip().lower() in ("none", "nothing", ""):
            return frozenset()
        return frozenset({collective_kind(answer)})
    if isinstance(answer, Iterable) and not isinstance(answer, Mapping):
        return frozenset(collective_kind(a) for a in answer)
    raise ValueError(f"name the collectives as a string or a list of strings; got {answer!r}")


def byte_count(answer: Any) -> float:
    """A number of bytes (an int or a float, not a string or a bool).

    Raises:
        ValueError: the answer is not a non-negative number.
    """
    if isinstance(answer, bool) or not isinstance(answer, int | float):
        raise ValueError(f"give a number of bytes, e.g. 1_048_576; got {answer!r}")
    if answer < 0:
        raise ValueError(f"a number of bytes is not negative; got {answer!r}")
    return float(answer)


def whole_number(answer: Any, what: str, low: int = 1, high: int | None = None) -> int:
    """``answer`` as an int from ``low`` to ``high`` (a whole float is fine; a bool or a
    string is not).

    Raises:
        ValueError: not a whole number in the range; the message names ``what`` was asked.
    """
    ok = isinstance(answer, int | float) and not isinstance(answer, bool)
    if not ok or answer != int(answer) or answer < low or (high is not None and answer > high):
        span = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise ValueError(f"give {what}, a whole number {span}; got {answer!r}")
    return int(answer)


def specs_for(answer: Any, names: Iterable[str]) -> dict[str, Any]:
    """The learner's dict of specs, checked to name exactly ``names`` (values are left to
    ``sv.mark_sharding``, whose own errors say what is wrong with a spec).

    Raises:
        ValueError: the answer is not a dict, or names other arrays than ``names``.
    """
    names = tuple(names)
    if not isinstance(answer, Mapping):
        raise ValueError(f"give a dict with one spec per array: {{{', '.join(names)}}}")
    missing = [n for n in names if n not in answer]
    extra = [str(k) for k in answer if k not in names]
    if missing or extra:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown {', '.join(extra)}"] if extra else []
        )
        raise ValueError(f"the dict must have exactly {', '.join(names)}: {'; '.join(parts)}")
    return {n: answer[n] for n in names}


def bytes_verdict(got: float, right: bool, truth: int, what: str, context: str = "") -> str:
    """A number-of-bytes answer judged like with like: right, ``what`` with its figure and
    ``context`` (how it comes about); wrong, the learner's own figure and whether ``what``
    is more or less, and no other figure (one would give half the answer away)."""
    said = format_bytes(int(got), exact=True)
    if right:
        return f"{what}: {format_bytes(truth, exact=True)}, as you said" + (
            f"; {context}" if context else ""
        )
    return f"you said {said}; {what} is {'more' if truth > got else 'less'} than that"
