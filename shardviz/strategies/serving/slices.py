"""``sv.smallest_slice(model, chip, ...)``: the smallest slice of a chip whose HBM holds the
weights and the KV cache, checked by compiling the decode step for it (deviceless).

Slices are tried by chip count, powers of two up to the chip's pod, each in the shape the
chip's slices take (:func:`~shardviz.model.targets.standard_shape`: v5e 8 chips is ``2x4``,
the scaling book's ``4x2``). A slice holds the model when the weights and the cache, split
evenly, fit each chip's HBM, as the scaling book counts; with ``check`` the decode step is
then compiled for that slice under strategy ``"tp"`` and the compiler's per chip bytes
(arguments + scratch) must fit too, or the next slice is tried.
"""

from __future__ import annotations

import math
from typing import Any

from shardviz.capture.topology import CompilerUnavailable, TopologyError, topology
from shardviz.errors import CompileError, ShardvizError, problem
from shardviz.model.arguments import flag, shown
from shardviz.model.hardware_presets import hardware, preset_key
from shardviz.model.serving import SliceChoice, SliceTried, bytes_per_element
from shardviz.model.targets import standard_shape
from shardviz.model.units import format_bytes
from shardviz.strategies.models.configs import param_count
from shardviz.strategies.progress import Steps, stepping
from shardviz.strategies.serving.compare import dtypes_of, serving_sizes
from shardviz.strategies.serving.plan import arch_config, serve
from shardviz.strategies.zoo import ModelDef, get_model

__all__ = ["slice_sizes", "smallest_slice"]


def slice_sizes(chip: str) -> list[tuple[str, int]]:
    """``(name, chips)`` of the slices tried for ``chip``, smallest first."""
    hw = hardware(chip)
    key = preset_key(chip) or chip
    pod = math.prod(hw.pod_shape) if hw.pod_shape else hw.devices_per_host
    out, n = [], 1
    while n <= pod:
        shape = standard_shape(hw, n)
        out.append((f"{key}:{'x'.join(map(str, shape))}", n))
        n *= 2
    return out


def smallest_slice(
    model: str | ModelDef,
    chip: str,
    *,
    dtype: Any = "bfloat16",
    batch: int = 1,
    context: int = 8192,
    check: bool = True,
    progress: bool | Steps = True,
    **sizes: Any,
) -> SliceChoice:
    """The smallest slice of ``chip`` that holds ``model``'s weights and its KV cache.

    Args:
      model: a published architecture's name (``"llama3.1-70b"``) or a ``ModelDef`` (your
        own declaring its decoder's sizes in ``info``, dense or a mixture of experts: see
        :meth:`~shardviz.strategies.zoo.ModelDef.decoder_config`).
      chip: a preset name (``"v5e"``, ``"v6e"``, ``"v5p"``, ``"h100"``, ``"a100"``...);
        GPU slices are one host's GPUs (``"h100:1x8"``), compiled by the CUDA plugin.
      dtype: weights and cache (``"bfloat16"``, ``"int8"``, ``"int4"``) or a pair.
      batch, context: the sequences to hold and their length.
      check: compile the decode step for the slice found (deviceless) and require the
        compiler's per chip bytes to fit as well.
      progress: with ``check``, each slice's compile as a step of a bar in a notebook or a
        line on a terminal, once the work has taken 2 s (the steps counted are the slices
        the byte count lets through: the first that fits ends the search); ``False`` shows
        nothing.
      **sizes: the model's sizes (reduced dims), as ``get_model`` takes them.

    Raises:
      ArgumentError: a batch or context that is not a whole number >= 1, an unknown dtype,
        or a ``check`` that is not a bool.
      ShardvizError: an unknown chip, a model and cache no slice of the chip's pod holds
        (by the byte count, or, with ``check``, by the compiled step; naming what would),
        or ``check`` for a chip whose compiler cannot be loaded here (naming its extra, or
        ``check=False``).
    """
    where = f"smallest_slice({shown(chip)})"
    hw = hardware(chip)
    check = flag(where, "check", check)
    m = get_model(model, **sizes) if isinstance(model, str) else model
    config = arch_config(m, where)
    weight_dtype, cache_dtype = dtypes_of(dtype, where)
    per_token = m.kv_bytes_per_token(cache_dtype)
    batch, context = serving_sizes(where, batch, context, per_token)
    weights = int(param_count(config) * bytes_per_element(weight_dtype))
    per_seq = per_token * context
    kv = int(per_seq * batch)
    tried: list[SliceTried] = []
    rejected: list[str] = []  # what the compiler said of slices the count let through
    slices = slice_sizes(chip)
    # With check, each slice the byte count lets through may be compiled: a step each.
    counted = sum(-(-(weights + kv) // chips) <= hw.hbm_bytes for _, chips in slices)
    title = "shardviz.smallest_slice"
    with stepping(progress if check else False, title, counted, "no slice holds it") as step:
        for name, chips in slices:
            need = -(-(weights + kv) // chips)
            tried.append(SliceTried(name, chips, need, hw.hbm_bytes))
            if need > hw.hbm_bytes:
                continue
            checked = ""
            if check:
                step(f"compiling the decode step for {name} (strategy 'tp')")
                fits, checked = _compiled_fit(m, name, batch, context, weight_dtype, cache_dtype)
                if not fits:
                    rejected.append(checked)
                    continue
            room = int((chips * hw.hbm_bytes - weights) // per_seq)
            step.done = f"{name} holds it (the compiled step fits)"
            return SliceChoice(
                model=m.name, chip=hw.preset or chip, slice=name, chips=chips,
                weight_dtype=weight_dtype, cache_dtype=cache_dtype, batch=batch,
                context=context, weight_bytes=weights, kv_bytes=kv,
                hbm_bytes_per_chip=hw.hbm_bytes, room_sequences=room, tried=tuple(tried),
                checked="; ".join([*rejected, checked]),
            )  # fmt: skip
    biggest = tried[-1]
    what = (
        f"{m.name} in {weight_dtype} with {batch:,} x {context:,} tokens of {cache_dtype} "
        f"cache needs {format_bytes(weights + kv)}"
    )
    if rejected:
        what += (
            f"; by the byte count {len(rejected)} slice(s) hold it, but the compiled decode "
            f"step fits none of them ({rejected[-1]})"
        )
    else:
        what += (
            f"; the largest slice {biggest.name} holds {format_bytes(biggest.chips * hw.hbm_bytes)}"
        )
    raise ShardvizError(
        problem(
            where,
            what,
            "quantise (dtype='int8' or 'int4'), serve a smaller batch or context, or use a "
            "chip with more HBM (e.g. 'v5p')",
        )
    )


def _compiled_fit(
    m: ModelDef, name: str, batch: int, context: int, weight_dtype: str, cache_dtype: str
) -> tuple[bool, str]:
    """Compile the decode step (strategy ``tp``) for slice ``name``: does it fit, and what
    the compiler said. A slice smaller than one host (``v5e:1x1``) cannot be made without
    devices; it is then taken on the byte count alone, and the words say so. A chip whose
    compiler cannot be loaded here (``shardviz[gpu]`` not installed) is a ShardvizError
    naming the extra and ``check=False``."""
    try:
        topo = topology(name)
    except CompilerUnavailable as err:
        raise ShardvizError(
            problem(
                f"smallest_slice({name.partition(':')[0]!r}, check=True)",
                f"checking {name} compiles its decode step without the hardware, and that "
                f"compiler cannot be loaded here (the shardviz[{err.extra}] extra is not "
                "installed, or its plugin made no devices)",
                f"pip install -U 'shardviz[{err.extra}]' (then restart the kernel), or pass "
                "check=False to choose the slice on the byte count alone",
            )
        ) from err
    except TopologyError:
        return True, (
            f"{name} not compiled: jax makes no deviceless slice smaller than one host, so the "
            "byte count alone says it fits"
        )
    try:
        r = serve(
            m, "tp", topo.devices, mode="decode", batch=batch, context=context,
            weight_dtype=weight_dtype, cache_dtype=cache_dtype, hw=topo.hardware,
            target=topo.target, target_name=topo.name,
        )  # fmt: skip
    except CompileError as err:
        if "does not fit" not in str(err):
            raise
        return (
            False,
            f"decode step compiled for {name} (strategy 'tp'): the compiler ran out of HBM",
        )
    if not r.compiled or r.argument_bytes is None or r.working_bytes is None:
        why = r.why_not_compiled or "the compiler gave no memory figures"
        return False, f"decode step for {name} (strategy 'tp') not compiled: {why}: does not fit"
    used = r.argument_bytes + r.working_bytes
    fits = used <= r.hbm_bytes
    verdict = "fits" if fits else "does not fit"
    return fits, (
        f"decode step compiled for {name} (strategy 'tp'): {format_bytes(used)} per chip "
        f"(arguments {format_bytes(r.argument_bytes)} + scratch "
        f"{format_bytes(r.working_bytes)}) of {format_bytes(r.hbm_bytes)} HBM: {verdict}"
    )
