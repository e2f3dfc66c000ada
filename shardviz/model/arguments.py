"""The one set of rules for the numbers, sizes and dtypes users pass to shardviz's calls.

``compare``, ``smallest_slice``, ``suggest``, the serving API and the pipeline builders read
their arguments through these functions, so one number is accepted (or refused, with the same
words) everywhere. numpy and jax scalars are taken where a Python one is (``np.int64(8)``, a
0-d integer array), dtype objects where a name is (``jnp.bfloat16``, ``np.dtype("int8")``);
booleans, NaN and infinities never are. No jax is imported here.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any

from shardviz.errors import ArgumentError, problem

__all__ = [
    "MAX_BYTES",
    "byte_size",
    "dtype_name",
    "finite_number",
    "flag",
    "shown",
    "whole_number",
]

#: The largest size in bytes any argument may name: 2**63 - 1 (an exbibyte is 2**60; far past
#: any machine's memory, and still an int every array library and JSON reader can hold).
MAX_BYTES = 2**63 - 1

_SIZE_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
}  # fmt: skip

_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*")


def _is_bool(value: Any) -> bool:
    """``True``, ``np.True_`` or a boolean 0-d array: a flag, never a count."""
    return isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b"


def whole_number(
    where: str,
    name: str,
    value: Any,
    *,
    low: int = 1,
    high: int | None = None,
    example: int | None = None,
) -> int:
    """``value`` as a Python int in ``[low, high]``: an int, a numpy integer or a 0-d integer
    array (anything with ``__index__`` that is not a boolean).

    Raises:
      ArgumentError: a boolean, a float (even ``8.0``), a string, or a whole number out of
        range; the message names ``name`` and a value to pass instead.
    """
    try:
        number = None if _is_bool(value) else operator.index(value)
    except TypeError:
        number = None
    ok = number is not None and number >= low and (high is None or number <= high)
    if not ok:
        span = f">= {low}" if high is None else f"from {low} to {high}"
        hint = example if example is not None else max(low, 1) if high is None else low
        raise ArgumentError(
            problem(
                where,
                f"{name}={shown(value)} is not a whole number {span}",
                f"pass {name}={hint}",
            )
        )
    assert number is not None
    return int(number)


def flag(where: str, name: str, value: Any) -> bool:
    """``value`` as a Python bool: ``True``/``False`` or a numpy boolean (``np.True_``).

    Raises:
      ArgumentError: anything else (``"yes"``, ``1``, ``None``): a flag is never guessed.
    """
    if not _is_bool(value) or getattr(value, "ndim", 0) != 0:
        raise ArgumentError(
            problem(where, f"{name}={shown(value)} is not True or False", f"pass {name}=True")
        )
    return bool(value)


def finite_number(
    where: str, name: str, value: Any, *, positive: bool = True, example: float = 1.0
) -> float:
    """``value`` as a finite Python float (``> 0`` when ``positive``, else ``>= 0``): an int,
    a float, a numpy scalar or a 0-d array.

    Raises:
      ArgumentError: a boolean, a string, NaN, an infinity, or a number out of range.
    """
    number: float | None
    try:
        number = None if _is_bool(value) or isinstance(value, str) else float(value)
    except (TypeError, ValueError, OverflowError):
        number = None
    ok = (
        number is not None
        and math.isfinite(number)
        and (number > 0 or (not positive and number == 0))
    )
    if not ok:
        sign = "positive" if positive else "non-negative"
        raise ArgumentError(
            problem(
                where,
                f"{name}={shown(value)} is not a finite {sign} number",
                f"pass {name}={example:g}",
            )
        )
    assert number is not None
    return number


def byte_size(value: Any, name: str = "memory_limit") -> int | None:
    """A size in bytes (``None`` stays ``None``): a positive whole or finite number, or a
    string such as ``"2 GiB"``, ``"512MiB"``, ``"1.5 GB"`` (KiB/MiB/GiB are powers of 1024,
    KB/MB/GB of 1000), at most :data:`MAX_BYTES`.

    Raises:
      ArgumentError: not a size, zero or negative, NaN, infinite, or past :data:`MAX_BYTES`.
    """
    if value is None:
        return None
    size = _size_of(value)
    if size is None or not 1 <= size <= MAX_BYTES:
        raise ArgumentError(
            problem(
                f"{name}={shown(value)}",
                "it is not a size in bytes from 1 B to 8 EiB",
                "give bytes per device as an int, or a string like '2 GiB', '512 MiB' or '1.5 GB'",
            )
        )
    return int(size)


def _size_of(value: Any) -> int | None:
    """A size's whole bytes (a fraction rounds down; 0.5 B is 0), or ``None`` for what is no
    size (a flag, NaN, an infinity, an unknown unit)."""
    if _is_bool(value):
        return None
    if isinstance(value, str):
        match = _SIZE.fullmatch(value)
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _SIZE_UNITS:
            return None
        number = float(match.group(1)) * _SIZE_UNITS[unit]
    else:
        try:
            return operator.index(value)
        except TypeError:
            pass
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            return None
    return int(number) if math.isfinite(number) else None


def dtype_name(dtype: Any) -> str:
    """The lower-case name of a dtype given as a string (``"bf16"`` stays as given), a numpy
    dtype, a scalar type (``np.int8``, ``jnp.bfloat16``) or an array (its dtype): the words
    callers look up in their own tables."""
    if isinstance(dtype, str):
        return dtype.strip().lower()
    inner = getattr(dtype, "dtype", None)  # an array, or jax's scalar types (jnp.bfloat16)
    name = getattr(inner, "name", None) if inner is not None else getattr(dtype, "name", None)
    if isinstance(name, str):
        return name.lower()
    try:
        import numpy as np

        return np.dtype(dtype).name.lower()
    except TypeError:
        return str(dtype).lower()


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: a message never quotes a 400-digit number
    or a whole document back."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."
