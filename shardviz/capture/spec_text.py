"""Partition specs as people type them in a text box, read with a tiny tokenizer (never ``eval``).

:func:`parse_spec_text` reads ``'data', None``, ``P('data', None)``, ``(('data', 'model'), None)``
and friends into spec entries; :func:`format_spec_text` writes entries back in jax's spelling.
Checking the entries against a shape and a mesh is :func:`shardviz.capture.spec.normalize_spec`'s
job. No jax import: this works on text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from shardviz.errors import SpecError, problem
from shardviz.model import format_spec

__all__ = ["SpecEntries", "format_spec_text", "parse_spec_text"]

#: One entry per dim: None, an axis name or index, or a tuple of those.
SpecEntries = tuple

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'[^'\\]*'|\"[^\"\\]*\")|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)"
    r"|(?P<int>\d+)|(?P<punct>[(),\[\]]))"
)
_WRAPPERS = {"P", "PartitionSpec", "jax.sharding.PartitionSpec", "sharding.PartitionSpec"}
_CLOSE = {"(": ")", "[": "]"}
_HOW = (
    "type one entry per dim, separated by commas: an axis name, None, or a tuple of axes; "
    "e.g. data, None or ('data', 'model'), None or P('data', None); empty means replicated"
)


class _Bad(Exception):
    """A syntax problem in a spec box (becomes a SpecError naming the array)."""


def _tokens(text: str) -> list[tuple[str, Any]]:
    """The text as ``(kind, value)`` tokens: quoted axes, names, ``None``, indices, brackets."""
    out: list[tuple[str, Any]] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            rest = text[pos:].strip()
            if rest[:1] in ("'", '"'):
                raise _Bad(f"the quote {rest[:12]!r} is never closed")
            raise _Bad(f"{rest[:12]!r} is not an axis name, None or punctuation")
        pos = m.end()
        if m["str"] is not None:
            out.append(("axis", m["str"][1:-1]))
        elif m["name"] is not None:
            out.append(("none", None) if m["name"] == "None" else ("name", m["name"]))
        elif m["int"] is not None:
            out.append(("axis", int(m["int"])))
        else:
            out.append((m["punct"], m["punct"]))
    return out


def _closing(tokens: list[tuple[str, Any]], start: int) -> int:
    """Index of the bracket closing the one at ``start``."""
    depth = 0
    for i in range(start, len(tokens)):
        if tokens[i][0] in _CLOSE:
            depth += 1
        elif tokens[i][0] in (")", "]"):
            depth -= 1
            if depth == 0:
                return i
    raise _Bad(f"a {tokens[start][0]!r} is never closed")


def _items(tokens: list[tuple[str, Any]], inner: bool) -> tuple[list[Any], bool]:
    """Comma-separated entries (axes only when ``inner``); also whether a comma trailed."""
    items: list[Any] = []
    i, trailing = 0, False
    while i < len(tokens):
        kind, value = tokens[i]
        if kind in _CLOSE:
            if inner:
                raise _Bad("a tuple of axes cannot hold another tuple")
            j = _closing(tokens, i)
            if tokens[j][0] != _CLOSE[kind]:
                raise _Bad(f"{kind!r} is closed by {tokens[j][0]!r}")
            axes, _ = _items(tokens[i + 1 : j], inner=True)
            if not axes:
                raise _Bad("an empty tuple () is not an entry; write None for a dim not split")
            items.append(axes[0] if len(axes) == 1 else tuple(axes))
            i = j + 1
        elif kind == "none":
            if inner:
                raise _Bad("None cannot be inside a tuple of axes")
            items.append(None)
            i += 1
        elif kind in ("name", "axis"):
            if kind == "name" and value in _WRAPPERS:
                raise _Bad(f"{value}(...) must wrap the whole spec")
            items.append(value)
            i += 1
        else:
            raise _Bad(f"unexpected {value!r}")
        if i < len(tokens):
            if tokens[i][0] != ",":
                raise _Bad(f"expected a comma before {tokens[i][1]!r}")
            i += 1
            trailing = i == len(tokens)
            if not trailing and tokens[i][0] == ",":
                raise _Bad("two commas in a row")
    return items, trailing


def parse_spec_text(text: str, *, name: str = "array") -> SpecEntries:
    """Read a spec as typed in a box, with a tiny tokenizer (never ``eval``).

    Accepts ``'data', None``, ``data, None`` (bare axis names), ``('data', None)``,
    ``(('data', 'model'), None)``, ``P('data', None)``, ``PartitionSpec(...)``, ``None`` and
    ``""`` (both: replicated, ``()``). Brackets follow Python: ``(a, b)`` around the whole text
    is the spec itself, ``((a, b),)`` one dim split over two axes.

    Raises:
        SpecError: the text cannot be read; the message says what to type.
    """
    try:
        tokens = _tokens(text)
        if not tokens or tokens == [("none", None)]:
            return ()
        kind, value = tokens[0]
        wrapped = kind == "name" and value in _WRAPPERS
        if wrapped:
            if len(tokens) < 3 or tokens[1][0] != "(" or _closing(tokens, 1) != len(tokens) - 1:
                raise _Bad(f"{value}(...) must wrap the whole spec")
            items, _ = _items(tokens[2:-1], inner=False)
            return tuple(items)
        if kind in _CLOSE and _closing(tokens, 0) == len(tokens) - 1:
            if tokens[-1][0] != _CLOSE[kind]:
                raise _Bad(f"{kind!r} is closed by {tokens[-1][0]!r}")
            inner = tokens[1:-1]
            items, trailing = _items(inner, inner=False)
            if len(items) == 1 and not trailing and isinstance(items[0], tuple):
                return items[0]  # ((a, b)) is (a, b) in Python: two dims
            return tuple(items)
        items, _ = _items(tokens, inner=False)
        return tuple(items)
    except _Bad as why:
        raise SpecError(
            problem(f"spec for {name!r}", f"cannot read {text.strip()!r}: {why}", _HOW)
        ) from None


def format_spec_text(spec: Sequence[Any]) -> str:
    """Spec entries in jax's spelling (``P('data', None)``), as :func:`parse_spec_text` reads."""
    entries = tuple(
        () if e is None else tuple(e) if isinstance(e, tuple | list) else (e,) for e in spec
    )
    return format_spec(entries)
