"""Per-device bytes of model state (parameters, gradients, optimizer state) at any scale.

The accounting follows ZeRO (Rajbhandari et al., 2020) for mixed-precision Adam: each
parameter costs ``param_bytes`` (2, an fp16/bf16 copy), ``grad_bytes`` (2) and
``optimizer_bytes`` (12: an fp32 master copy, momentum and variance), 16 bytes in all.

- stage 0: plain data parallelism, every data-parallel rank holds all three;
- stage 1: the optimizer state is split over the data-parallel ranks;
- stage 2: the gradients are split too;
- stage 3: the parameters are split too.

Tensor parallelism splits all three by its degree. Each component is rounded up to whole
bytes on its own. Activations, temporaries and communication buffers are not included.

This module needs no jax (``count_params`` imports it only when given a pytree it cannot walk).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

from shardviz.errors import ShardvizError, problem
from shardviz.model.projection import ProjectionRow

__all__ = [
    "ProjectionRow",
    "StateBytes",
    "count_params",
    "model_state_bytes",
    "projection_table",
]

ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class StateBytes:
    """Bytes of model state held by one device."""

    params: int
    grads: int
    optimizer: int
    total: int


def _count(where: str, name: str, value: Any, minimum: int) -> int:
    """``value`` as an int >= minimum; whole floats such as ``7.5e9`` are accepted."""
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        value = int(cast(float, value)) if float(value).is_integer() else value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ShardvizError(
            problem(
                where,
                f"{name}={value!r} is not an integer >= {minimum}",
                f"pass {name} as a whole number, at least {minimum}",
            )
        )
    return int(value)


def _bytes_per_param(where: str, name: str, value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
        raise ShardvizError(
            problem(
                where,
                f"{name}={value!r} is not a number of bytes >= 0",
                f"pass {name} as bytes per parameter, e.g. 2 for bf16, 4 for fp32",
            )
        )
    return Fraction(cast(float, value))  # a Real: int, float, Fraction, numpy scalar


def model_state_bytes(
    num_params: float,
    *,
    zero_stage: int,
    data_parallel: int,
    tensor_parallel: int = 1,
    param_bytes: float = 2,
    grad_bytes: float = 2,
    optimizer_bytes: float = 12,
) -> StateBytes:
    """Per-device bytes of parameters, gradients and optimizer state under ZeRO.

    Args:
      num_params: parameters in the whole model (a whole number; ``7.5e9`` is fine).
      zero_stage: 0 (plain data parallel), 1 (split optimizer state), 2 (+ gradients),
        3 (+ parameters) over the ``data_parallel`` ranks.
      data_parallel: number of data-parallel ranks (ZeRO's N_d).
      tensor_parallel: tensor-parallel degree; divides all three components.
      param_bytes, grad_bytes, optimizer_bytes: bytes per parameter of each component
        (ZeRO's mixed-precision Adam: 2, 2 and K = 12).

    Returns:
      A :class:`StateBytes`, each component rounded up to whole bytes.

    Raises:
      ShardvizError: a stage outside 0..3, a count below 1, or a negative byte size.
    """
    where = "model_state_bytes"
    if zero_stage not in ZERO_STAGES or isinstance(zero_stage, bool):
        raise ShardvizError(
            problem(
                where,
                f"zero_stage={zero_stage!r} is not a ZeRO stage",
                "pass zero_stage=0 (plain data parallel), 1, 2 or 3",
            )
        )
    n = _count(where, "num_params", num_params, 0)
    dp = _count(where, "data_parallel", data_parallel, 1)
    tp = _count(where, "tensor_parallel", tensor_parallel, 1)
    per_param = {
        "params": _bytes_per_param(where, "param_bytes", param_bytes),
        "grads": _bytes_per_param(where, "grad_bytes", grad_bytes),
        "optimizer": _bytes_per_param(where, "optimizer_bytes", optimizer_bytes),
    }
    split_from_stage = {"optimizer": 1, "grads": 2, "params": 3}
    sizes = {}
    for part, b in per_param.items():
        divisor = tp * (dp if zero_stage >= split_from_stage[part] else 1)
        sizes[part] = math.ceil(n * b / divisor)
    return StateBytes(**sizes, total=sum(sizes.values()))


def projection_table(
    model_sizes: Iterable[float],
    device_counts: Iterable[int],
    *,
    zero_stages: Sequence[int] = ZERO_STAGES,
    tensor_parallel: int = 1,
    hbm_bytes: int | None = None,
    param_bytes: float = 2,
    grad_bytes: float = 2,
    optimizer_bytes: float = 12,
) -> list[ProjectionRow]:
    """:func:`model_state_bytes` over every model size x device count x ZeRO stage.

    Each device count is split as ``tensor_parallel`` x ``data_parallel``, so it must divide
    by ``tensor_parallel``.

    Args:
      model_sizes: parameter counts, e.g. ``[1e6, 1e9, 1e12]``.
      device_counts: total devices, e.g. ``[8, 64, 1024, 4096]``.
      zero_stages: stages to include.
      tensor_parallel: tensor-parallel degree for every row.
      hbm_bytes: per-device memory capacity; sets each row's ``fits``.
      param_bytes, grad_bytes, optimizer_bytes: as in :func:`model_state_bytes`.

    Returns:
      Rows ordered by model size, then device count, then stage.
    """
    where = "projection_table"
    sizes = [_count(where, "model size", s, 0) for s in model_sizes]
    counts = [_count(where, "device count", d, 1) for d in device_counts]
    tp = _count(where, "tensor_parallel", tensor_parallel, 1)
    if hbm_bytes is not None:
        hbm_bytes = _count(where, "hbm_bytes", hbm_bytes, 0)
    uneven = [d for d in counts if d % tp]
    if uneven:
        raise ShardvizError(
            problem(
                where,
                f"device counts {uneven} do not divide by tensor_parallel={tp}",
                f"use device counts that are multiples of {tp}, or a smaller tensor_parallel",
            )
        )
    rows = []
    for n in sizes:
        for devices in counts:
            for stage in zero_stages:
                b = model_state_bytes(
                    n,
                    zero_stage=stage,
                    data_parallel=devices // tp,
                    tensor_parallel=tp,
                    param_bytes=param_bytes,
                    grad_bytes=grad_bytes,
                    optimizer_bytes=optimizer_bytes,
                )
                rows.append(
                    ProjectionRow(
                        num_params=n,
                        devices=devices,
                        data_parallel=devices // tp,
                        tensor_parallel=tp,
                        zero_stage=stage,
                        params=b.params,
                        grads=b.grads,
                        optimizer=b.optimizer,
                        total=b.total,
                        hbm_bytes=hbm_bytes,
                        fits=None if hbm_bytes is None else b.total <= hbm_bytes,
                    )
                )
    return rows


def _leaf_size(leaf: Any) -> int:
    shape = getattr(leaf, "shape", None)
    if shape is None:
        return 1  # a Python scalar
    return math.prod(int(d) for d in shape)


def count_params(params: Any) -> int:
    """Number of scalars in a pytree of arrays (or ``ShapeDtypeStruct`` objects).

    Nested dicts, lists and tuples are walked directly; anything else (a registered pytree
    such as an optax state) is flattened with jax. ``None`` leaves count as nothing.
    """
    if params is None:
        return 0
    if isinstance(params, Mapping):
        return sum(count_params(v) for v in params.values())
    if isinstance(params, list | tuple) and not hasattr(params, "_fields"):
        return sum(count_params(v) for v in params)
    if hasattr(params, "shape") or isinstance(params, numbers.Number):
        return _leaf_size(params)
    import jax  # only for pytrees this module cannot walk on its own

    return sum(_leaf_size(leaf) for leaf in jax.tree.leaves(params))
