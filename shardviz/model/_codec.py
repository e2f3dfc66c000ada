"""JSON round trip for the model's frozen dataclasses, driven by their type hints.

Kept generic so every model object (meshes, layouts, and the reports later issues add) gets
``to_json``/``from_json`` from one place. Only the standard library is used.

A document read back is checked before anything is drawn from it, each problem naming its
field (``results[2].weight_bytes``):

- it nests at most :data:`MAX_DEPTH` lists and objects (checked before it is parsed);
- every whole number is within :data:`MAX_INT` either way (what a float, numpy and the
  views can hold: ``10**400`` bytes would overflow every view that formats it);
- every float is finite and within :data:`MAX_FLOAT` (JSON from Python may hold ``NaN`` and
  ``Infinity``, and ``1e400`` reads as infinity), except in the fields a class names in its
  ``NON_FINITE`` (a measured loss can be NaN);
- the counts and sizes a class names in its ``DOCUMENT_LIMITS`` (a ``ClassVar`` mapping a
  field, or a dotted path such as ``target.chips``, to its most, or to ``(least, most)``;
  a list or mapping is measured by its length) are within them: a schedule of a million
  stages is refused instead of drawn for minutes.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from shardviz.errors import DecodeError, ShardvizError, problem

#: The deepest nesting of lists and objects a document may have (the model's own documents
#: nest about a dozen deep: a comparison's result's report's collectives' groups).
MAX_DEPTH = 64
#: The largest whole number, either way, a document may hold: 2**63 - 1 (an exbibyte is
#: 2**60; still exact as an int64, and a float holds it).
MAX_INT = 2**63 - 1
#: The largest float, either way, a document may hold where it is a figure: 2**100 (about
#: 1.3e30; a step's flops are below 1e20), so that views multiplying two figures stay finite.
MAX_FLOAT = 2.0**100

#: Fields that may hold NaN or an infinity, for classes of modules this codec does not
#: own (by ``module.qualname``); a class of its own says so in its ``NON_FINITE``.
_NON_FINITE_ELSEWHERE: dict[str, frozenset[str]] = {
    # A sharded output NaN where the reference is not: the difference is NaN or inf.
    "shardviz.model.program.Check": frozenset({"max_abs_diff", "max_rel_diff", "leaf_diff"}),
}

T = TypeVar("T")


def to_data(obj: Any) -> Any:
    """Turn a model object into plain JSON data (dicts, lists, numbers, strings, None)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, slice):
        return [obj.start, obj.stop]
    if isinstance(obj, tuple | list):
        return [to_data(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cannot encode {type(obj).__name__} as JSON")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _whole(data: int, path: str) -> int:
    if -MAX_INT <= data <= MAX_INT:
        return data
    digits = len(str(abs(data)))
    number = str(data) if digits <= 30 else f"a whole number of {digits} digits"
    raise DecodeError(
        path, f"{number} is past the largest a document may hold (2**63 - 1)", limit=True
    )


def _finite(data: float, path: str, non_finite: bool) -> float:
    if non_finite or -MAX_FLOAT <= data <= MAX_FLOAT:
        return data
    what = (
        "is not a finite number"
        if not math.isfinite(data)
        else "is past the largest a document may hold (2**100 either way)"
    )
    raise DecodeError(path, f"{data} {what}", limit=True)


def _check_any(data: Any, path: str) -> Any:
    """A value of type ``Any``: every whole number in it within :data:`MAX_INT` (its depth
    is the document's, already checked)."""
    todo = [(data, path)]
    while todo:
        value, at = todo.pop()
        if isinstance(value, int) and not isinstance(value, bool):
            _whole(value, at)
        elif isinstance(value, list):
            todo.extend((v, _at(at, i)) for i, v in enumerate(value))
        elif isinstance(value, dict):
            todo.extend((v, _at(at, str(k))) for k, v in value.items())
    return data


def _rules(tp: type) -> tuple[Mapping[str, Any], frozenset[str]]:
    """``tp``'s :data:`DOCUMENT_LIMITS` and its fields that may be NaN or infinite."""
    limits = getattr(tp, "DOCUMENT_LIMITS", None) or {}
    non_finite = frozenset(getattr(tp, "NON_FINITE", ()))
    non_finite |= _NON_FINITE_ELSEWHERE.get(f"{tp.__module__}.{tp.__qualname__}", frozenset())
    return limits, non_finite


def _measure(value: Any) -> int | None:
    """A whole number as itself, a list, mapping or string by its length; else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, list | tuple | dict | str):
        return len(value)
    return None


_MISSING = object()


def _raw(data: Any, dotted: str) -> Any:
    """The value at ``dotted`` in the raw document ``data`` (``_MISSING``: not there as a
    key, e.g. a property of the object built)."""
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return _MISSING
        data = data[part]
    return data


def _built(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def _check_limit(value: Any, dotted: str, bound: Any, path: str) -> None:
    n = _measure(value)
    if n is None:
        return
    least, most = bound if isinstance(bound, tuple) else (None, bound)
    if (most is None or n <= most) and (least is None or n >= least):
        return
    if least is not None:
        what = f"{_short(value)} is outside what a document may hold ({least:,} to {most:,})"
    elif isinstance(value, list | tuple | dict | str):
        what = f"{n:,} items, more than the {most:,} a document may hold"
    else:
        what = f"{_short(value)} is more than the {most:,} a document may hold"
    raise DecodeError(_at(path, dotted), what, limit=True)


def _at(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)


def from_data(tp: Any, data: Any, path: str = "", non_finite: bool = False) -> Any:
    """Rebuild a value of type ``tp`` from what :func:`to_data` produced (raises
    :class:`DecodeError` naming where the data does not fit, or where it is past what a
    document may hold). ``non_finite``: a float here may be NaN or infinite."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return _check_any(data, path)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return from_data(arg, data, path, non_finite)
            except (TypeError, ValueError, KeyError) as err:
                errors.append(err)
        limits = [e for e in errors if isinstance(e, DecodeError) and e.limit]
        deepest = max(limits or errors, key=lambda e: len(getattr(e, "path", "")), default=None)
        if isinstance(deepest, DecodeError) and (deepest.path != path or deepest.limit):
            raise deepest
        raise DecodeError(path, f"expected {_name(tp)}, got {_short(data)}")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_from(tp, data, path)
    if tp is slice:
        if not isinstance(data, list) or len(data) != 2:
            raise DecodeError(path, f"a slice is [start, stop], got {_short(data)}")
        for i, end in enumerate(data):
            if end is not None and (not isinstance(end, int) or isinstance(end, bool)):
                raise DecodeError(_at(path, i), f"expected int or null, got {_short(end)}")
            if end is not None:
                _whole(end, _at(path, i))
        start, stop = data
        return slice(start, stop)
    if origin is tuple:
        if not isinstance(data, list):
            raise DecodeError(path, f"expected a list, got {_short(data)}")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(
                from_data(args[0], v, _at(path, i), non_finite) for i, v in enumerate(data)
            )
        if len(args) != len(data):
            raise DecodeError(path, f"expected {len(args)} items, got {len(data)}")
        return tuple(
            from_data(a, v, _at(path, i), non_finite)
            for i, (a, v) in enumerate(zip(args, data, strict=True))
        )
    if origin is dict:
        if not isinstance(data, dict):
            raise DecodeError(path, f"expected an object, got {_short(data)}")
        key_t, val_t = typing.get_args(tp)
        out = {}
        for k, v in data.items():
            try:
                key = key_t(k)
            except ValueError as err:
                raise DecodeError(path, f"a key is not a {key_t.__name__}: {err}") from err
            if isinstance(key, int) and not isinstance(key, bool):
                _whole(key, _at(path, k))
            out[key] = from_data(val_t, v, _at(path, k), non_finite)
        return out
    if tp in (int, float, str, bool):
        if tp is float and isinstance(data, int) and not isinstance(data, bool):
            return float(_whole(data, path))
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise DecodeError(path, f"expected {tp.__name__}, got {_short(data)}")
        if tp is int:
            return _whole(data, path)
        if tp is float:
            return _finite(data, path, non_finite)
        return data
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if data not in allowed:
            raise DecodeError(path, f"expected one of {allowed}, got {_short(data)}")
        return data
    if tp is type(None):
        if data is not None:
            raise DecodeError(path, f"expected null, got {_short(data)}")
        return None
    raise DecodeError(path, f"cannot decode type {tp!r}")


def _dataclass_from(tp: type, data: Any, path: str) -> Any:
    """A dataclass ``tp`` from its object in the document: its limits checked on the raw
    data before its fields are decoded (dotted ones reaching a property, after)."""
    if not isinstance(data, dict):
        raise DecodeError(path, f"{tp.__name__} expects an object, got {_short(data)}")
    limits, non_finite = _rules(tp)
    later = []
    for dotted, bound in limits.items():
        value = _raw(data, dotted)
        if value is _MISSING:
            later.append((dotted, bound))
        else:
            _check_limit(value, dotted, bound, path)
    obj = _build(tp, data, path, non_finite)
    for dotted, bound in later:
        _check_limit(_built(obj, dotted), dotted, bound, path)
    return obj


def _build(tp: type, data: dict[str, Any], path: str, non_finite: frozenset[str]) -> Any:
    hints = _hints(tp)
    required = [
        f.name
        for f in dataclasses.fields(tp)
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [n for n in required if n not in data]
    if missing:
        raise DecodeError(path, f"{tp.__name__} lacks field(s) {', '.join(missing)}")
    kwargs = {
        f.name: from_data(hints[f.name], data[f.name], _at(path, f.name), f.name in non_finite)
        for f in dataclasses.fields(tp)
        if f.init and f.name in data
    }
    try:
        return tp(**kwargs)
    except (TypeError, ValueError, OverflowError) as err:  # the class's own checks
        raise DecodeError(path, f"{tp.__name__}: {err}") from err


def _name(tp: Any) -> str:
    return " or ".join(
        getattr(a, "__name__", str(a)) for a in typing.get_args(tp) if a is not type(None)
    )


def _short(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 60 else text[:57] + "..."


class JsonMixin:
    """Gives a frozen dataclass ``to_json()`` and ``from_json()``."""

    def to_json(self, indent: int | None = None) -> str:
        """This object as a JSON string (what widgets sync and files store)."""
        return json.dumps(to_data(self), indent=indent, sort_keys=False)

    @classmethod
    def from_json(cls: type[T], text: str) -> T:
        """Rebuild the object from :meth:`to_json`'s output.

        Raises:
            ShardvizError: the text is not JSON, or not this object's JSON (naming the field
                that does not fit)."""
        where = f"{cls.__name__}.from_json"
        fix = f"pass the text {cls.__name__}.to_json() wrote, unchanged"
        try:
            if isinstance(text, bytes | bytearray):
                text = bytes(text).decode("utf-8")
            depth = nesting(text) if isinstance(text, str) else 0
            if depth > MAX_DEPTH:
                raise DecodeError(
                    "",
                    f"it nests lists and objects {depth:,} deep, past the {MAX_DEPTH} levels a "
                    "document may have",
                )
            data = json.loads(text)
        except DecodeError as err:
            raise ShardvizError(problem(where, str(err), fix)) from err
        except (TypeError, ValueError, RecursionError) as err:
            raise ShardvizError(
                problem(where, f"the text is not JSON ({_clip(str(err))})", fix)
            ) from err
        try:
            return from_data(cls, data)
        except DecodeError as err:
            raise ShardvizError(problem(where, str(err), fix)) from err
        except RecursionError as err:  # past the depth checked: never, but not a traceback
            raise ShardvizError(problem(where, "it nests too deep", fix)) from err


#: A JSON string (its brackets are not structure), and anything but a bracket.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting(text: str) -> int:
    """How many lists and objects deep the JSON ``text`` nests at most (0 for a number),
    counted without parsing it: in one pass of C-level loops, so a document of 10,000
    brackets is measured before :func:`json.loads` recurses into it."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
