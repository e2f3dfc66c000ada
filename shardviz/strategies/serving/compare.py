"""``sv.compare(model, strategies, mode="decode" | "prefill", ...)``: serving strategies side by
side, each compiled on the target, with the findings about them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from shardviz.analysis.detect.serving import serving_findings
from shardviz.capture.topology import Topology, topology
from shardviz.errors import ShardvizError, problem
from shardviz.model.hardware import Hardware, Target
from shardviz.model.hardware_presets import hardware
from shardviz.model.serving import (
    SERVING_MODES,
    ServingComparison,
    bytes_per_element,
    serving_dtype,
)
from shardviz.model.targets import target_for
from shardviz.strategies.models.configs import param_count
from shardviz.strategies.serving.layout import SERVING_STRATEGIES
from shardviz.strategies.serving.plan import arch_config, serve
from shardviz.strategies.zoo import ModelDef, get_model

__all__ = ["DEFAULT_STRATEGIES", "Where", "compare_serving", "dtypes_of", "where_to_serve"]

#: The strategies compared when none are named.
DEFAULT_STRATEGIES: tuple[str, ...] = ("tp", "dp+tp", "dp")

#: Devices to compile for, the chip's figures (``None``: no estimate), the target for the
#: collectives' estimate, and the name the views show.
Where = tuple[Sequence[Any], Hardware | None, Target | None, str]


def dtypes_of(dtype: Any, where: str) -> tuple[str, str]:
    """``"int8"`` -> weights and cache in int8; ``("int8", "bfloat16")`` -> (weights, cache).

    Raises:
      ShardvizError: a dtype that is not bfloat16, int8 or int4, or not one or two of them.
    """
    if isinstance(dtype, tuple | list):
        if len(dtype) != 2:
            raise ShardvizError(
                problem(
                    where,
                    f"dtype={dtype!r} is not one dtype or a (weights, cache) pair",
                    "pass dtype='int8' or dtype=('int8', 'bfloat16')",
                )
            )
        return serving_dtype(dtype[0], where), serving_dtype(dtype[1], where)
    name = serving_dtype(dtype, where)
    return name, name


def where_to_serve(target: Any) -> Where:
    """A topology (name or object): compiled for it there; a preset name or ``Hardware``:
    compiled on this machine's devices, estimated as that many of that chip; ``None``: this
    machine's devices, no estimate."""
    here = jax.devices()
    if target is None:
        return here, None, None, f"{len(here)} {here[0].platform} devices here"
    if isinstance(target, str) and ":" in target:
        target = topology(target)
    if isinstance(target, Topology):
        return target.devices, target.hardware, target.target, target.name
    hw = target if isinstance(target, Hardware) else hardware(target)
    t = target_for(hw, len(here))
    return here, hw, t, f"{t.name} (estimated; compiled on {len(here)} devices here)"


def _positive(where: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ShardvizError(
            problem(where, f"{name}={value!r} is not a positive whole number", f"pass {name}=8")
        )
    return value


def compare_serving(
    model: str | ModelDef,
    strategies: Sequence[str] | None,
    *,
    mode: str,
    target: Any = None,
    batch: int = 8,
    context: int | None = None,
    dtype: Any = "bfloat16",
    **sizes: Any,
) -> ServingComparison:
    """Serving strategies compiled side by side (see :func:`shardviz.compare`).

    Args:
      model: a published architecture's name (``"llama3.1-70b"``) or its ``ModelDef``.
      strategies: names in :data:`~.layout.SERVING_STRATEGIES`; ``None``: the defaults.
      mode: ``"decode"`` (one token per sequence, the cache full to ``context``) or
        ``"prefill"`` (a prompt of ``context`` tokens).
      target: a topology (``"v5e:4x2"``), a preset (``"v5e"``) or ``None`` (see
        :func:`where_to_serve`).
      batch, context: sequences and positions per sequence (``context``: the model's ``seq``).
      dtype: weights and cache, ``"bfloat16"``, ``"int8"``, ``"int4"`` or a pair.
      **sizes: the model's sizes (reduced dims), as ``get_model`` takes them.

    Raises:
      ShardvizError: an unknown mode, strategy, dtype or model, or a batch that does not
        divide over a strategy's data axis.
    """
    where = f"compare(mode={mode!r})"
    if mode not in SERVING_MODES:
        raise ShardvizError(
            problem(where, "not a serving mode", "use mode='decode', 'prefill' or 'train'")
        )
    names = list(DEFAULT_STRATEGIES if strategies is None else strategies)
    unknown = [s for s in names if s not in SERVING_STRATEGIES]
    if not names or unknown or isinstance(strategies, str):
        raise ShardvizError(
            problem(
                where,
                f"strategies={strategies!r} are not serving strategies",
                f"pass a list of {', '.join(map(repr, SERVING_STRATEGIES))}",
            )
        )
    m = get_model(model, **sizes) if isinstance(model, str) else model
    config = arch_config(m, where)
    ctx = _positive(where, "context", m.info.get("seq", 2048) if context is None else context)
    batch = _positive(where, "batch", batch)
    weight_dtype, cache_dtype = dtypes_of(dtype, where)
    devices, hw, target_obj, target_name = where_to_serve(target)
    results = tuple(
        serve(
            m, s, devices, mode=mode, batch=batch, context=ctx, weight_dtype=weight_dtype,
            cache_dtype=cache_dtype, hw=hw, target=target_obj, target_name=target_name,
        )
        for s in names
    )  # fmt: skip
    per_token = m.kv_bytes_per_token(cache_dtype)
    params = param_count(config)
    return ServingComparison(
        model=m.name,
        num_params=params,
        kv_bytes_per_token=per_token,
        weight_bytes_total=int(params * bytes_per_element(weight_dtype)),
        results=results,
        findings=serving_findings(results),
    )
