"""One serving strategy compiled on a set of devices and read into a ``ServingResult``.

The weights and the cache are ShapeDtypeStructs placed by the strategy's layout (nothing is
allocated: any size compiles, on this machine's CPU devices or a deviceless TPU/GPU
topology's). Per device weight and cache bytes come from their shard shapes (the compiler's
argument bytes are kept beside them, to check); working memory and the collectives come from
the compiled program; flops from the dims; the step from :mod:`.step_time`; a mixture of
experts' expert weights touched and read from :mod:`.experts`.

The model is a published architecture or your own decoder declaring its sizes
(:meth:`~shardviz.strategies.zoo.ModelDef.decoder_config`), dense or a mixture of experts.
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.errors import CompileError, ShardvizError, problem
from shardviz.explainer.explain import analyse_program, compile_program, estimated
from shardviz.model.hardware import Hardware, Target
from shardviz.model.program import Report
from shardviz.model.serving import (
    ExpertReads,
    ServingCollective,
    ServingResult,
    largest_batch,
    serving_bytes,
)
from shardviz.model.units import format_bytes
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.models.params import nest
from shardviz.strategies.serving.experts import expert_reads
from shardviz.strategies.serving.layout import AXES, ServingLayout, serving_layout
from shardviz.strategies.serving.step_time import StepTime, step_flops, step_time
from shardviz.strategies.serving.steps import (
    cache_shape,
    decode_step,
    moe_group,
    prefill_step,
    serving_weights,
)
from shardviz.strategies.zoo import ModelDef

__all__ = ["Served", "arch_config", "serve"]


def arch_config(model: ModelDef, where: str) -> ArchConfig:
    """The decoder ``model`` is served as: a published architecture's config, or the sizes
    your own model declares (:meth:`~shardviz.strategies.zoo.ModelDef.decoder_config`).

    Raises:
      ShardvizError: a size the serving steps need is missing (named), or they do not fit.
    """
    return model.decoder_config(where)


@dataclass(frozen=True)
class Served:
    """A strategy's arrays on its mesh: abstract arguments and per device bytes."""

    layout: ServingLayout
    mesh: Mesh
    weights: Any
    cache: Any
    weight_bytes: int
    kv_bytes: int
    weight_copies: int
    kv_copies: int
    expert_bytes: int = 0
    expert_ways: int = 1
    bytes_per_expert: int = 0


#: The leaves holding a mixture of experts' expert weights (not its router).
_EXPERT_LEAVES = ("layers/moe/w_gate", "layers/moe/w_up", "layers/moe/w_down")


def _bits(dtype: Any) -> float:
    name = jnp.dtype(dtype).name
    return 4.0 if name == "int4" else jnp.dtype(dtype).itemsize * 8.0


def _per_device(x: jax.ShapeDtypeStruct) -> float:
    shard = x.sharding.shard_shape(x.shape)
    return math.prod(shard) * _bits(x.dtype) / 8


def _whole(x: jax.ShapeDtypeStruct) -> float:
    return math.prod(x.shape) * _bits(x.dtype) / 8


def place(
    config: ArchConfig,
    strategy: str,
    devices: Sequence[Any],
    batch: int,
    context: int,
    weight_dtype: str,
    cache_dtype: str,
) -> Served:
    """The weights and caches of ``strategy`` as ShapeDtypeStructs on a mesh of ``devices``."""
    layout = serving_layout(strategy, len(devices), config, batch, context)
    mesh = Mesh(np.asarray(devices, dtype=object).reshape(layout.shape), AXES)
    flat = {}
    for path, x in _flat(serving_weights(config, weight_dtype)).items():
        flat[path] = jax.ShapeDtypeStruct(
            x.shape, x.dtype, sharding=NamedSharding(mesh, layout.weight_specs[path])
        )
    weights = nest(flat)
    sharding = NamedSharding(mesh, layout.cache_spec)
    one = jax.ShapeDtypeStruct(
        cache_shape(config, batch, context), jnp.dtype(cache_dtype), sharding=sharding
    )
    w_dev = sum(_per_device(x) for x in flat.values())
    w_all = sum(_whole(x) for x in flat.values())
    n = len(devices)
    experts = [flat[path] for path in _EXPERT_LEAVES if path in flat]
    return Served(
        layout=layout, mesh=mesh, weights=weights, cache=(one, one),
        weight_bytes=int(w_dev), kv_bytes=int(2 * _per_device(one)),
        weight_copies=max(1, round(w_dev * n / w_all)),
        kv_copies=max(1, round(_per_device(one) * n / _whole(one) / 1)),
        expert_bytes=int(sum(_per_device(x) for x in experts)),
        expert_ways=_ways(layout, layout.weight_specs[_EXPERT_LEAVES[0]][1]) if experts else 1,
        bytes_per_expert=int(sum(map(_whole, experts)) // max(1, config.layers * config.experts)),
    )  # fmt: skip


def _axes_of(entry: Any) -> tuple[str, ...]:
    """The mesh axes one partition spec entry splits a dim over (``None``: none)."""
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)


def _ways(layout: ServingLayout, entry: Any) -> int:
    """Devices one partition spec entry splits a dim over (``None``: 1)."""
    return math.prod(layout.size(a) for a in _axes_of(entry))


def _reads(config: ArchConfig, served: Served, mode: str, batch: int,
           context: int) -> ExpertReads | None:  # fmt: skip
    """A mixture of experts' expert weights touched and read in the step (``None``: dense)."""
    if not config.is_moe:
        return None
    entry = served.layout.weight_specs[_EXPERT_LEAVES[0]][1]
    return expert_reads(
        config, mode, batch, context, held_bytes=served.expert_bytes,
        bytes_per_expert=served.bytes_per_expert, expert_ways=served.expert_ways, data=served.layout.size("data"),
        experts_over_data="data" in _axes_of(entry),
    )  # fmt: skip


def _weights_read(served: Served, reads: ExpertReads | None) -> int:
    """The weight bytes one device reads in the step: all it holds but the idle experts."""
    return served.weight_bytes - (reads.held_bytes - reads.read_bytes if reads else 0)


def _flat(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        path = f"{prefix}{k}"
        out.update(_flat(v, path + "/") if isinstance(v, dict) else {path: v})
    return out


def _constrain(mesh: Mesh, layout: ServingLayout) -> Any:
    """Pin a layer's cache ``[B, S, N, K]`` and the decode scores ``[B, N, G, S]`` to the
    cache's split, so attention runs where the cache lies (softmax over a split context:
    small all-reduces) instead of gathering the cache.

    A mixture of experts' routing groups stay with their data shard; where the experts split
    over ``data`` too (``ep``), the tokens each expert takes are pinned first where they were
    routed, then where the expert lies (and its outputs the other way), so the compiler
    moves them as all-to-alls instead of gathering every token to every chip."""
    _, b, s, n, _ = tuple(layout.cache_spec) + (None,) * (5 - len(layout.cache_spec))
    specs: dict[str, tuple[P, ...]] = {
        "cache_layer": (P(b, s, n, None),),
        "scores": (P(b, n, None, s),),
    }
    if "layers/moe/w_gate" in layout.weight_specs:
        _, e, _, f = layout.weight_specs["layers/moe/w_gate"]
        routed, at_expert = P(None, b, None, None), P(e, None, None, None)
        moved = (routed, at_expert) if e is not None and e == b else (P(e, b, None, None),)
        specs |= {
            "moe_in": (P(b, None, None),),
            "dispatched": moved,
            "expert_hidden": (P(*moved[-1][:3], f),),
            "expert_out": moved[::-1],
            "mlp_out": (P(b, None, None),),
        }

    def constrain(name: str, x: jax.Array) -> jax.Array:
        for spec in specs.get(name, ()):
            x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))
        return x

    return constrain


def compile_step(config: ArchConfig, served: Served, mode: str, batch: int, context: int,
                 cache_dtype: str, target: Target | None) -> Report:  # fmt: skip
    """The step compiled (deviceless or on this machine's devices) and read into a report,
    estimated on ``target`` when given."""
    mesh, layout = served.mesh, served.layout
    constrain = _constrain(mesh, layout)
    data = layout.cache_spec[1]
    per_shard = batch // layout.size("data") * (1 if mode == "decode" else context)
    group = moe_group(per_shard)
    if mode == "decode":
        step = functools.partial(decode_step, config=config, constrain=constrain, group=group)
        args: tuple = (
            served.weights, *served.cache,
            jax.ShapeDtypeStruct((batch,), jnp.int32, sharding=NamedSharding(mesh, P(data))),
            jax.ShapeDtypeStruct((), jnp.int32, sharding=NamedSharding(mesh, P())),
        )  # fmt: skip
        jit_kwargs: dict[str, Any] = {"donate_argnums": (1, 2)}
    else:
        step = functools.partial(
            prefill_step, config=config, cache_dtype=cache_dtype, constrain=constrain, group=group
        )
        tokens = jax.ShapeDtypeStruct(
            (batch, context), jnp.int32, sharding=NamedSharding(mesh, P(data))
        )
        args, jit_kwargs = (served.weights, tokens), {}
    functools.update_wrapper(step, decode_step if mode == "decode" else prefill_step)
    try:
        comp = compile_program(step, args, jit_kwargs)
    except ShardvizError:
        raise
    except Exception as err:
        if "int4" in (served.cache[0].dtype.name, _weight_dtype(served)):
            raise ShardvizError(
                problem(
                    f"the {mode} step in int4",
                    f"this backend did not compile int4 ({type(err).__name__}: {err})",
                    "use dtype='int8', or compile for a TPU topology (target='v5e:2x2')",
                )
            ) from err
        raise
    return estimated(comp, analyse_program(step, args, comp), target)


def _weight_dtype(served: Served) -> str:
    return jnp.dtype(served.weights["layers"]["attn"]["wq"].dtype).name


def _collectives(report: Report, layers: int) -> tuple[tuple[ServingCollective, ...], str]:
    """Collectives by kind and mesh axes, loop trips counted (a trip count the compiler did
    not give is taken as the layer scan's)."""
    groups: dict[tuple[str, tuple[str, ...]], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0])
    guessed = False
    for c in report.collectives:
        trips = c.trips
        if trips is None:
            trips, guessed = layers, True
        g = groups[(c.kind, c.axes)]
        g[0] += trips
        g[1] += c.moved_bytes * trips
        if c.estimated_seconds is not None:
            g[2] += c.estimated_seconds * trips
            g[3] = 1
    out = tuple(
        ServingCollective(kind, axes, int(g[0]), int(g[1]), g[2] if g[3] else None)
        for (kind, axes), g in sorted(groups.items())
    )
    note = "collectives with no trip count were counted once per layer" if guessed else ""
    return out, note


def serve(
    model: ModelDef,
    strategy: str,
    devices: Sequence[Any],
    *,
    mode: str,
    batch: int,
    context: int,
    weight_dtype: str,
    cache_dtype: str,
    hw: Hardware | None,
    target: Target | None,
    target_name: str,
) -> ServingResult:
    """``strategy`` serving ``model`` on ``devices``: compiled, read and estimated on ``hw``."""
    config = arch_config(model, "compare(mode=...)")
    served = place(config, strategy, devices, batch, context, weight_dtype, cache_dtype)
    notes = list(served.layout.notes)
    report, why_not = None, _past_hbm(served, devices, hw)
    needed: int | None = None
    if not why_not:
        try:
            report = compile_step(config, served, mode, batch, context, cache_dtype, target)
        except CompileError as err:
            if "does not fit" not in str(err):
                raise
            why_not = _refusal(err)  # a TPU/GPU compiler refuses a program over HBM
            needed = _needed_bytes(str(err))
    collectives: tuple[ServingCollective, ...] = ()
    working: int | None = None
    arguments: int | None = None
    max_batch: int | None = None
    timed: StepTime | None = None
    n = len(devices)
    flops = step_flops(config, mode, batch, context) / n
    reads = _reads(config, served, mode, batch, context)
    hbm = hw.hbm_bytes if hw is not None else 0
    if report is not None:
        collectives, note = _collectives(report, config.layers)
        notes += [note] if note else []
        m = report.memory
        working = int(m.temp_bytes or dict(m.assigned).get("temp", 0))
        arguments = int(m.argument_bytes)
        if hw is not None:
            coll = sum(c.seconds or 0.0 for c in collectives)
            read = _weights_read(served, reads)
            timed = step_time(mode, hw, read, served.kv_bytes, flops, coll)
        if hbm:
            per_seq = served.kv_bytes / batch
            max_batch = largest_batch(
                hbm, served.weight_bytes, working, per_seq, served.layout.size("data")
            )
    tokens = batch if mode == "decode" else batch * context
    return ServingResult(
        strategy=strategy, mode=mode, target=target_name, chips=n, mesh=served.layout.sizes,
        batch=batch, context=context, weight_dtype=weight_dtype, cache_dtype=cache_dtype,
        weight_bytes=served.weight_bytes, kv_bytes=served.kv_bytes, working_bytes=working,
        argument_bytes=arguments, hbm_bytes=int(hbm),
        kv_copies=served.kv_copies, weight_copies=served.weight_copies,
        collectives=collectives, flops=flops,
        memory_seconds=timed.memory_seconds if timed else None,
        compute_seconds=timed.compute_seconds if timed else None,
        collective_seconds=timed.collective_seconds if timed else None,
        step_seconds=timed.step_seconds if timed else None,
        bound=timed.bound if timed else "",
        tokens_per_second_per_chip=tokens / timed.step_seconds / n if timed else None,
        latency_seconds=timed.step_seconds if timed else None,
        max_batch=max_batch, compiled=report is not None, notes=tuple(notes),
        sweep=_sweep(config, mode, served, batch, context, working, hw, timed, max_batch),
        context_sweep=_context_sweep(config, mode, served, batch, context, working, hw, timed),
        why_not_compiled=why_not, refused_bytes=needed, experts=reads,
    )  # fmt: skip


def _past_hbm(served: Served, devices: Sequence[Any], hw: Hardware | None) -> str:
    """Why the step is not handed to a TPU or GPU compiler (``""``: it is): its weights
    and cache alone are past the chip's HBM. That compiler would refuse it, and at sizes far
    past any HBM (a batch of 2**39 sequences) it aborts the process instead. A CPU compile
    (a preset target: compiled here, estimated there) has no HBM to refuse, so it runs."""
    if hw is None or not hw.hbm_bytes or getattr(devices[0], "platform", "cpu") == "cpu":
        return ""
    held = served.weight_bytes + served.kv_bytes
    if held <= hw.hbm_bytes:
        return ""
    return (
        f"its weights ({format_bytes(served.weight_bytes)}) and KV cache "
        f"({format_bytes(served.kv_bytes)}) alone take {format_bytes(held)} per chip, past "
        f"the {format_bytes(hw.hbm_bytes)} of HBM; the compiler refuses such a program, so it "
        "was not compiled"
    )


#: How XLA's memory refusals give the bytes a step needs: ``... for HLO temporaries (25.00G)
#: exceeds available HBM (15.75G)`` or ``Used 25.00G of 15.75G hbm``; its G is 2**30.
_NEEDED = (
    re.compile(r"\(([0-9.]+)([KMGTP]?)i?B?\) exceeds available"),
    re.compile(r"Used ([0-9.]+)([KMGTP]?)i?B? of [0-9.]+[KMGTP]?i?B? hbm"),
)
_SCALE = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


def _needed_bytes(text: str) -> int | None:
    """The per device bytes a compiler's memory refusal says the step needs, or ``None``."""
    for pattern in _NEEDED:
        found = pattern.search(text)
        if found:
            return int(float(found.group(1)) * _SCALE[found.group(2)])
    return None


def _refusal(err: CompileError) -> str:
    """The compiler's refusal in a line: ``the compiler ran out of HBM: the total memory
    required for HLO temporaries (25.00G) exceeds available HBM (15.75G)``."""
    text = str(err)
    found = re.search(r"RESOURCE_EXHAUSTED:\s*([^\n]*?)(?:\. Fix:|\n|$)", text)
    if found is None:
        return f"the compiler refused it ({text})"
    said = found.group(1).strip().rstrip(".")
    said = re.sub(r"^Ran out of memory on HBM,\s*", "", said)
    return f"the compiler ran out of HBM: {said}"


def _point(config: ArchConfig, mode: str, served: Served, hw: Hardware, timed: Any,
           working: int | None, b: int, ctx: int, scale: float) -> tuple[int, float]:  # fmt: skip
    """Bytes per device (:func:`~shardviz.model.serving.serving_bytes`, the cache scaled by
    ``scale`` from the compiled step) and tokens/s per chip at batch ``b`` and context
    ``ctx``: the flops counted again, the collectives' time kept."""
    n = math.prod(served.layout.shape)
    kv = int(served.kv_bytes * scale)
    flops = step_flops(config, mode, b, ctx) / n
    read = _weights_read(served, _reads(config, served, mode, b, ctx))
    t = step_time(mode, hw, read, kv, flops, timed.collective_seconds)
    tokens = b if mode == "decode" else b * ctx
    return serving_bytes(served.weight_bytes, working, kv), tokens / t.step_seconds / n


def _sweep(config: ArchConfig, mode: str, served: Served, batch: int, context: int,
           working: int | None, hw: Hardware | None, timed: Any, max_batch: int | None,
           ) -> tuple[tuple[int, int, float], ...]:  # fmt: skip
    """Bytes per device and tokens/s per chip at batches from one data group's worth up to
    twice the largest that fits (see :func:`_point`)."""
    if hw is None or timed is None:
        return ()
    top = max(batch, 2 * (max_batch or batch))
    out = []
    b = served.layout.size("data")
    while b <= top:
        out.append((b, *_point(config, mode, served, hw, timed, working, b, context, b / batch)))
        b *= 2
    return tuple(out)


def _context_sweep(config: ArchConfig, mode: str, served: Served, batch: int, context: int,
                   working: int | None, hw: Hardware | None, timed: Any,
                   ) -> tuple[tuple[int, int, float], ...]:  # fmt: skip
    """The same at the compiled batch for contexts from 1/16 of the compiled one to 4 times
    it, doubling (see :func:`_point`)."""
    if hw is None or timed is None:
        return ()
    out = []
    ctx = max(1, context // 16)
    while ctx <= 4 * context:
        scale = ctx / context
        out.append((ctx, *_point(config, mode, served, hw, timed, working, batch, ctx, scale)))
        ctx *= 2
    return tuple(out)
