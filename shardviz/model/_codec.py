"""JSON round trip for the model's frozen dataclasses, driven by their type hints.

Kept generic so every model object (meshes, layouts, and the reports later issues add) gets
``to_json``/``from_json`` from one place. Only the standard library is used.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from functools import cache
from typing import Any, TypeVar

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


def from_data(tp: Any, data: Any) -> Any:
    """Rebuild a value of type ``tp`` from what :func:`to_data` produced."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return data
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return from_data(arg, data)
            except (TypeError, ValueError, KeyError) as err:
                errors.append(err)
        raise TypeError(f"no type of {tp} fits {data!r}: {errors}")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"{tp.__name__} expects an object, got {data!r}")
        hints = _hints(tp)
        kwargs = {
            f.name: from_data(hints[f.name], data[f.name])
            for f in dataclasses.fields(tp)
            if f.init and f.name in data
        }
        return tp(**kwargs)
    if tp is slice:
        start, stop = data
        return slice(start, stop)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_data(args[0], v) for v in data)
        return tuple(from_data(a, v) for a, v in zip(args, data, strict=True))
    if origin is dict:
        key_t, val_t = typing.get_args(tp)
        return {key_t(k): from_data(val_t, v) for k, v in data.items()}
    if tp in (int, float, str, bool):
        if tp is float and isinstance(data, int):
            return float(data)
        if not isinstance(data, tp):
            raise TypeError(f"expected {tp.__name__}, got {data!r}")
        return data
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if data not in allowed:
            raise TypeError(f"expected one of {allowed}, got {data!r}")
        return data
    if tp is type(None):
        if data is not None:
            raise TypeError(f"expected null, got {data!r}")
        return None
    raise TypeError(f"cannot decode type {tp!r}")


class JsonMixin:
    """Gives a frozen dataclass ``to_json()`` and ``from_json()``."""

    def to_json(self, indent: int | None = None) -> str:
        """This object as a JSON string (what widgets sync and files store)."""
        return json.dumps(to_data(self), indent=indent, sort_keys=False)

    @classmethod
    def from_json(cls: type[T], text: str) -> T:
        """Rebuild the object from :meth:`to_json`'s output."""
        return from_data(cls, json.loads(text))
