"""A device order as users pass it (``sv.reordered_mesh(mesh, order)``,
``sv.physical(report, order=...)``): read once, checked once, the same words everywhere.

An order lists the mesh's devices in the new row-major mesh order: a list, tuple, range or
iterator of device ids (Python or numpy integers) or of jax devices, or an integer array
(read row-major, whatever its shape). Strings and bytes (read digit by digit), sets and
mappings (no order), floats (ids are never rounded) and booleans are refused. No more than
one id past the mesh's device count is ever read from an iterator, and every check is linear
in the mesh's size. No jax is imported here.
"""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Set
from typing import Any

from shardviz.errors import MeshError, problem
from shardviz.model.arguments import shown

__all__ = ["device_order"]


def _example(ids: tuple[int, ...]) -> str:
    """``order=[7, 6, 5, 4, 3, 2, 1, 0]``: the mesh's ids reversed, cut short on a big mesh."""
    rev = ids[::-1]
    return "order=[" + ", ".join(str(i) for i in rev[:8]) + (", ...]" if len(rev) > 8 else "]")


def _ids_text(ids: Iterable[int], n: int = 8) -> str:
    items = list(itertools.islice(ids, n + 1))
    text = ", ".join(shown(i, 24) for i in items[:n])
    return text + (", …" if len(items) > n else "")


def _kind_fix(ids: tuple[int, ...]) -> str:
    return (
        f"pass the mesh's {len(ids)} device ids as a list, in the new row-major mesh order, "
        f"e.g. {_example(ids)}"
    )


def _refuse(where: str, what: str, ids: tuple[int, ...]) -> MeshError:
    return MeshError(problem(where, what, _kind_fix(ids)))


def _device_id(item: Any) -> int | None:
    """``item`` as a device id: an int, a numpy integer (not a boolean), or a jax device's
    ``id``; ``None`` when it is none of these (a float is never rounded)."""
    if isinstance(item, bool) or getattr(getattr(item, "dtype", None), "kind", "") == "b":
        return None
    try:
        return int(operator.index(item))
    except TypeError:
        pass
    number = getattr(item, "id", None)  # a jax device
    if number is None or isinstance(number, bool) or callable(number):
        return None
    try:
        return int(operator.index(number))
    except TypeError:
        return None


def _not_an_id(item: Any) -> str:
    """What an item of an order is, when it is not a device id."""
    kind = getattr(getattr(item, "dtype", None), "kind", "")
    if isinstance(item, bool) or kind == "b":
        return "a boolean"
    if isinstance(item, float) or kind == "f":
        return "a float: ids are never rounded"
    return f"a {type(item).__name__}, not a device id"


def _items(where: str, order: Any, ids: tuple[int, ...]) -> list[Any]:
    """At most ``len(ids) + 1`` items of ``order``, refusing what is not a list of ids."""
    what = f"order={shown(order)}"
    if isinstance(order, str):
        raise _refuse(where, f"{what} is a string, not a list of device ids", ids)
    if isinstance(order, bytes | bytearray | memoryview):
        raise _refuse(where, f"{what} is bytes, not a list of device ids", ids)
    if isinstance(order, Set | Mapping):
        kind = "a set" if isinstance(order, Set) else "a mapping"
        raise _refuse(where, f"{what} is {kind}: it has no order of devices", ids)
    dtype = getattr(order, "dtype", None)
    if dtype is not None and hasattr(order, "ravel"):  # a numpy (or jax) array
        kind = getattr(dtype, "kind", "")
        if getattr(order, "ndim", 1) == 0:
            raise _refuse(where, f"{what} is a single number, not a list of device ids", ids)
        if kind not in ("i", "u", "O"):
            raise _refuse(
                where, f"{what} is an array of {dtype}, not of whole-number device ids", ids
            )
        if getattr(order, "size", 0) > len(ids) + 1:
            return list(itertools.repeat(None, len(ids) + 1))  # too long: refused below
        return list(order.ravel().tolist())
    try:
        reader = iter(order)
    except TypeError:
        raise _refuse(where, f"{what} is not a list of device ids", ids) from None
    return list(itertools.islice(reader, len(ids) + 1))


def device_order(order: Any, ids: tuple[int, ...], where: str = "order") -> tuple[int, ...]:
    """``order`` as device ids, checked to be a permutation of ``ids`` (the mesh's, in mesh
    order).

    Raises:
      MeshError: ``order`` is a string, bytes, a set, a mapping, not iterable, holds a float,
        a boolean or anything else that is not a device id, or is not a permutation of
        ``ids`` (too few, too many, repeated or unknown ids); the message names ``order`` and
        what to pass.
    """
    items = _items(where, order, ids)
    n = len(ids)
    perm_fix = (
        f"list each of the mesh's {n} device ids once, in the new mesh order (row-major): "
        f"a permutation of {_ids_text(ids)}"
    )
    if len(items) > n:
        raise MeshError(
            problem(
                where,
                f"order is not a permutation of the mesh's devices (more than {n} ids for a "
                f"mesh of {n} devices)",
                perm_fix,
            )
        )
    got: list[int] = []
    for i, item in enumerate(items):
        number = _device_id(item)
        if number is None:
            kind = _not_an_id(item)
            raise _refuse(where, f"order[{i}]={shown(item)} is {kind}", ids)
        got.append(number)
    if len(got) == n and set(got) == set(ids):
        return tuple(got)
    counts = Counter(got)
    known = set(ids)
    why = [f"{len(got)} ids for a mesh of {n} devices"] if len(got) != n else []
    missing = sorted(known - counts.keys())
    extra = sorted(counts.keys() - known)
    twice = sorted(i for i, c in counts.items() if c > 1)
    if missing:
        why.append(f"missing {_ids_text(missing)}")
    if extra:
        why.append(f"not in the mesh: {_ids_text(extra)}")
    if twice:
        why.append(f"given twice: {_ids_text(twice)}")
    raise MeshError(
        problem(
            where,
            "order is not a permutation of the mesh's devices (" + "; ".join(why) + ")",
            perm_fix,
        )
    )
