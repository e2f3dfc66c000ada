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

from shardviz.errors import ShardvizError, problem

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


class DecodeError(TypeError):
    """A document that does not fit the type it is read as; ``path`` says where
    (``collectives[3].kind``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or 'the document'}: {message}")
        self.path = path
        self.message = message


def _at(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)


def from_data(tp: Any, data: Any, path: str = "") -> Any:
    """Rebuild a value of type ``tp`` from what :func:`to_data` produced (raises
    :class:`DecodeError` naming where the data does not fit)."""
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
                return from_data(arg, data, path)
            except (TypeError, ValueError, KeyError) as err:
                errors.append(err)
        deepest = max(errors, key=lambda e: len(getattr(e, "path", "")), default=None)
        if isinstance(deepest, DecodeError) and deepest.path != path:
            raise deepest
        raise DecodeError(path, f"expected {_name(tp)}, got {_short(data)}")
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise DecodeError(path, f"{tp.__name__} expects an object, got {_short(data)}")
        hints = _hints(tp)
        required = [
            f.name
            for f in dataclasses.fields(tp)
            if f.init
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ]
        missing = [n for n in required if n not in data]
        if missing:
            raise DecodeError(path, f"{tp.__name__} lacks field(s) {', '.join(missing)}")
        kwargs = {
            f.name: from_data(hints[f.name], data[f.name], _at(path, f.name))
            for f in dataclasses.fields(tp)
            if f.init and f.name in data
        }
        try:
            return tp(**kwargs)
        except (TypeError, ValueError) as err:  # the class's own checks
            raise DecodeError(path, f"{tp.__name__}: {err}") from err
    if tp is slice:
        if not isinstance(data, list) or len(data) != 2:
            raise DecodeError(path, f"a slice is [start, stop], got {_short(data)}")
        start, stop = data
        return slice(start, stop)
    if origin is tuple:
        if not isinstance(data, list):
            raise DecodeError(path, f"expected a list, got {_short(data)}")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_data(args[0], v, _at(path, i)) for i, v in enumerate(data))
        if len(args) != len(data):
            raise DecodeError(path, f"expected {len(args)} items, got {len(data)}")
        return tuple(
            from_data(a, v, _at(path, i)) for i, (a, v) in enumerate(zip(args, data, strict=True))
        )
    if origin is dict:
        if not isinstance(data, dict):
            raise DecodeError(path, f"expected an object, got {_short(data)}")
        key_t, val_t = typing.get_args(tp)
        try:
            return {key_t(k): from_data(val_t, v, _at(path, k)) for k, v in data.items()}
        except ValueError as err:
            raise DecodeError(path, f"a key is not a {key_t.__name__}: {err}") from err
    if tp in (int, float, str, bool):
        if tp is float and isinstance(data, int) and not isinstance(data, bool):
            return float(data)
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise DecodeError(path, f"expected {tp.__name__}, got {_short(data)}")
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
            data = json.loads(text)
        except (TypeError, ValueError) as err:
            raise ShardvizError(problem(where, f"the text is not JSON ({err})", fix)) from err
        try:
            return from_data(cls, data)
        except DecodeError as err:
            raise ShardvizError(problem(where, str(err), fix)) from err
