"""``sv.compare(model, strategies, mode="decode" | "prefill", ...)``: serving strategies side by
side, each compiled on the target, with the findings about them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from shardviz.analysis.detect.serving import serving_findings
from shardviz.capture.topology import Topology, topology
from shardviz.errors import ArgumentError, problem
from shardviz.model.arguments import MAX_BYTES, shown, whole_number
from shardviz.model.hardware import Hardware, Target
from shardviz.model.hardware_presets import hardware
from shardviz.model.serving import (
    SERVING_MODES,
    ServingComparison,
    bytes_per_element,
    serving_dtype,
)
from shardviz.model.targets import target_for
from shardviz.model.units import format_bytes
from shardviz.strategies.models.configs import param_count
from shardviz.strategies.progress import Steps, stepping
from shardviz.strategies.serving.layout import SERVING_STRATEGIES
from shardviz.strategies.serving.plan import arch_config, serve
from shardviz.strategies.zoo import ModelDef, get_model

__all__ = [
    "DEFAULT_STRATEGIES",
    "MOE_STRATEGIES",
    "Where",
    "compare_serving",
    "dtypes_of",
    "one_target",
    "serving_sizes",
    "strategy_names",
    "where_to_serve",
]

#: The strategies compared when none are named; for a mixture of experts, ``ep`` in place of
#: ``dp`` (the experts split over the batch's axis instead of copied on every chip).
DEFAULT_STRATEGIES: tuple[str, ...] = ("tp", "dp+tp", "dp")
MOE_STRATEGIES: tuple[str, ...] = ("tp", "dp+tp", "ep")

#: Devices to compile for, the chip's figures (``None``: no estimate), the target for the
#: collectives' estimate, and the name the views show.
Where = tuple[Sequence[Any], Hardware | None, Target | None, str]


def dtypes_of(dtype: Any, where: str) -> tuple[str, str]:
    """``"int8"`` -> weights and cache in int8; ``("int8", "bfloat16")`` -> (weights, cache).

    Raises:
      ArgumentError: a dtype that is not bfloat16, int8 or int4, or not one or two of them.
    """
    if isinstance(dtype, tuple | list):
        if len(dtype) != 2:
            raise ArgumentError(
                problem(
                    where,
                    f"dtype={shown(dtype)} is not one dtype or a (weights, cache) pair",
                    "pass dtype='int8' or dtype=('int8', 'bfloat16')",
                )
            )
        return serving_dtype(dtype[0], where), serving_dtype(dtype[1], where)
    name = serving_dtype(dtype, where)
    return name, name


def one_target(target: Any, where: str) -> Any:
    """The one target serving compiles for: a list or tuple of one is that one.

    Raises:
      ArgumentError: a list of several (serving compares strategies on one target).
    """
    if not isinstance(target, list | tuple):
        return target
    if len(target) == 1:
        return target[0]
    first = shown(target[0]) if target else "'v5e:2x4'"
    raise ArgumentError(
        problem(
            where,
            f"target={shown(target)} names {len(target)} targets; serving compiles its "
            "strategies for one target at a time",
            f"pass one target, e.g. target={first}, and compare each other target in a call "
            "of its own",
        )
    )


def where_to_serve(target: Any, where: str = "compare(mode='decode')") -> Where:
    """A topology (name or object): compiled for it there; a preset name or ``Hardware``:
    compiled on this machine's devices, estimated as that many of that chip; ``None``: this
    machine's devices, no estimate. A list of one target is that target.

    Raises:
      ArgumentError: a list of several targets.
      HardwareError: an unknown topology or preset.
    """
    target = one_target(target, where)
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


def strategy_names(strategies: Any, where: str) -> list[str]:
    """The serving strategies named (``None``: :data:`DEFAULT_STRATEGIES`).

    Raises:
      ArgumentError: a string (not a list), an empty list, or a name that is not in
        :data:`~.layout.SERVING_STRATEGIES`.
    """
    known = ", ".join(map(repr, SERVING_STRATEGIES))
    if strategies is None:
        return list(DEFAULT_STRATEGIES)
    if isinstance(strategies, str):
        raise ArgumentError(
            problem(
                where,
                f"strategies={shown(strategies)} is a string; strategies is a list of names",
                f"pass a list, e.g. strategies=[{strategies!r}]"
                if strategies in SERVING_STRATEGIES
                else f"pass a list of {known}, e.g. ['tp']",
            )
        )
    try:
        names = list(strategies)
    except TypeError:
        names = None
    if not names:
        raise ArgumentError(
            problem(
                where,
                f"strategies={shown(strategies)} is not a list of serving strategies",
                f"pass a list of one or more of {known}, e.g. ['tp', 'dp+tp']",
            )
        )
    unknown = [s for s in names if not isinstance(s, str) or s not in SERVING_STRATEGIES]
    if unknown:
        raise ArgumentError(
            problem(
                where,
                f"{', '.join(shown(s) for s in unknown)} in strategies "
                f"{'is' if len(unknown) == 1 else 'are'} not a serving strategy",
                f"use names from {known}",
            )
        )
    return names


def serving_sizes(where: str, batch: Any, context: Any, per_token: float) -> tuple[int, int]:
    """``batch`` and ``context`` as Python ints (numpy and jax integers taken), checked
    once for every serving call.

    Raises:
      ArgumentError: not a whole number >= 1 (``0``, ``-8``, ``0.5``, ``True``, ``"8"``), or
        a cache of ``batch x context`` tokens past the largest size an array can have.
    """
    b = whole_number(where, "batch", batch, example=8)
    ctx = whole_number(where, "context", context, example=8192)
    if b * ctx * per_token > MAX_BYTES:
        raise ArgumentError(
            problem(
                where,
                f"batch={b:,} x context={ctx:,} tokens of cache take "
                f"{format_bytes(b * ctx * per_token)}, past {format_bytes(MAX_BYTES)}, the "
                "largest size shardviz counts (and far past any slice's HBM)",
                "serve a smaller batch or context (no chip holds a cache near this size)",
            )
        )
    return b, ctx


def compare_serving(
    model: str | ModelDef,
    strategies: Sequence[str] | None,
    *,
    mode: str,
    target: Any = None,
    batch: int = 8,
    context: int | None = None,
    dtype: Any = "bfloat16",
    progress: bool | Steps = True,
    **sizes: Any,
) -> ServingComparison:
    """Serving strategies compiled side by side (see :func:`shardviz.compare`).

    Args:
      model: a published architecture's name (``"llama3.1-70b"``) or a ``ModelDef``: the
        zoo's, or your own declaring its decoder's sizes in ``info`` (layers, d_model,
        heads, kv_heads, head_dim, ffn, vocab; experts and experts_per_token for a mixture
        of experts: :meth:`~shardviz.strategies.zoo.ModelDef.decoder_config`).
      strategies: names in :data:`~.layout.SERVING_STRATEGIES`; ``None``: the defaults
        (:data:`DEFAULT_STRATEGIES`, :data:`MOE_STRATEGIES` for a mixture of experts).
      mode: ``"decode"`` (one token per sequence, the cache full to ``context``) or
        ``"prefill"`` (a prompt of ``context`` tokens).
      target: a topology (``"v5e:4x2"``), a preset (``"v5e"``) or ``None`` (see
        :func:`where_to_serve`).
      batch, context: sequences and positions per sequence (``context``: the model's ``seq``).
      dtype: weights and cache, ``"bfloat16"``, ``"int8"``, ``"int4"`` or a pair.
      progress: each strategy's compile as a step of a bar in a notebook or a line on a
        terminal, once the work has taken 2 s (see :func:`shardviz.compare`); ``False``
        shows nothing.
      **sizes: the model's sizes (reduced dims), as ``get_model`` takes them.

    Raises:
      ArgumentError: an unknown mode, strategy or dtype, strategies given as a string, a
        list of several targets, or a batch or context that is not a whole number >= 1.
      ShardvizError: an unknown model, a model that does not declare a decoder's sizes
        (naming the missing ones), ``ep`` for a dense model, or a batch that does not divide
        over a strategy's data axis.
    """
    where = f"compare(mode={mode!r})"
    if not isinstance(mode, str) or mode not in SERVING_MODES:
        raise ArgumentError(
            problem(where, "not a serving mode", "use mode='decode', 'prefill' or 'train'")
        )
    names = strategy_names(strategies, where)
    one_target(target, where)  # a list of several fails before any work
    m = get_model(model, **sizes) if isinstance(model, str) else model
    config = arch_config(m, where)
    if strategies is None and config.is_moe:
        names = list(MOE_STRATEGIES)
    weight_dtype, cache_dtype = dtypes_of(dtype, where)
    default = m.info.get("seq", 2048) if context is None else context
    batch, ctx = serving_sizes(where, batch, default, m.kv_bytes_per_token(cache_dtype))
    devices, hw, target_obj, target_name = where_to_serve(target, where)
    done = f"{len(names)} {mode} step{'s' if len(names) != 1 else ''} compiled for {target_name}"
    with stepping(progress, "shardviz.compare", len(names), done) as step:
        served = []
        for s in names:
            step(f"compiling the {mode} step under {s!r} for {target_name}")
            one = serve(
                m, s, devices, mode=mode, batch=batch, context=ctx, weight_dtype=weight_dtype,
                cache_dtype=cache_dtype, hw=hw, target=target_obj, target_name=target_name,
            )  # fmt: skip
            served.append(one)
    results = tuple(served)
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
