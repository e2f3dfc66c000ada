"""A published architecture set up for training: sizes, batch, options, and its functions.

:func:`decoder_model` takes a name from :data:`~.configs.ARCH_NAMES` (or an
:class:`~.configs.ArchConfig`) and overrides, e.g. ``decoder_model("llama3.1-8b", layers=2,
d_model=256, seq=512, batch=8)`` for a reduced model of the same structure, and checks them.
The zoo wraps the result in a ``ModelDef`` (``get_model("llama3.1-8b", ...)``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NoReturn

import jax
import jax.numpy as jnp

from shardviz.errors import ArgumentError, ShardvizError, problem
from shardviz.model.arguments import finite_number, shown, whole_number
from shardviz.strategies.models.axes import Constrain, no_constraint
from shardviz.strategies.models.configs import MAY_BE_ZERO, ArchConfig, get_config, param_count
from shardviz.strategies.models.decoder import (
    ATTENTION_KINDS,
    MOE_KINDS,
    REMAT_POLICIES,
    WEIGHT_PLACES,
    DecoderOptions,
    decoder_loss,
    is_remat,
)
from shardviz.strategies.models.fp8 import QUANTIZATIONS
from shardviz.strategies.models.params import init_params, param_axes
from shardviz.strategies.transformer import make_batch as counting_batch

__all__ = [
    "RUN_DEFAULTS",
    "DecoderModel",
    "decoder_model",
    "default_overrides",
    "float_dtype",
]

#: Run sizes and options beside the architecture's dims, with their defaults (``seq``:
#: 8192 capped at the published context).
RUN_DEFAULTS: dict[str, Any] = {
    "batch": 8,
    "seq": 8192,
    "dtype": "float32",
    **{f.name: f.default for f in dataclasses.fields(DecoderOptions)},
}

_DIMS = (
    "layers",
    "d_model",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "vocab",
    "experts",
    "experts_per_token",
    "sliding_window",
    "q_lora_rank",
    "kv_lora_rank",
    "rope_head_dim",
    "v_head_dim",
    "dense_layers",
    "dense_ffn",
    "shared_experts",
    "moe_every",
    "nope_every",
    "attention_chunk",
)


@dataclass(frozen=True)
class DecoderModel:
    """A decoder-only LLM ready to train: architecture, batch shape, options, functions.

    Attributes:
      config: the architecture.
      batch, seq: the global batch (sequences) and sequence length.
      options: precision, remat and block sizes.
      param_dtype: the master weights' dtype (float32).
    """

    config: ArchConfig
    batch: int
    seq: int
    options: DecoderOptions = field(default_factory=DecoderOptions)
    param_dtype: str = "float32"

    @property
    def name(self) -> str:
        return self.config.name

    def init_params(self, key: jax.Array) -> dict[str, Any]:
        """Fresh master weights (see :mod:`.params`); not jitted."""
        return init_params(key, self.config, jnp.dtype(self.param_dtype))

    def make_batch(self, key: jax.Array) -> dict[str, jax.Array]:
        """``{"inputs", "targets"}: int32 [batch, seq]``, counting sequences (learnable)."""
        return counting_batch(key, batch=self.batch, seq=self.seq, vocab=self.config.vocab)

    def loss(
        self,
        params: dict[str, Any],
        batch: dict[str, jax.Array],
        constrain: Constrain = no_constraint,
    ) -> jax.Array:
        """The training loss (:func:`.decoder.decoder_loss`)."""
        return decoder_loss(params, batch, self.config, self.options, constrain)

    def param_axes(self) -> dict[str, Any]:
        """The parameter tree with each leaf's logical axis names."""
        return param_axes(self.config)

    def abstract(self, seed: int = 0) -> tuple[Any, Any]:
        """``(params, batch)`` as ShapeDtypeStructs, nothing allocated (any size)."""
        key = jax.random.key(seed)
        return jax.eval_shape(self.init_params, key), jax.eval_shape(self.make_batch, key)

    @property
    def num_params(self) -> int:
        return param_count(self.config)

    def info(self) -> dict[str, Any]:
        """Sizes and facts for reports: every dim, run size and option, ``num_params``."""
        c = self.config
        facts: dict[str, Any] = {k: getattr(c, k) for k in _DIMS}
        facts.update(
            batch=self.batch,
            seq=self.seq,
            dtype=self.param_dtype,
            **dataclasses.asdict(self.options),
            tokens=self.batch * self.seq,
            num_params=self.num_params,
            published_params=c.published_params,
            arch=c.name,
            config=c,
        )
        return facts

    def description(self) -> str:
        c = self.config
        glu = "GeGLU" if c.activation == "gelu" else "SwiGLU"
        mlp = f"{c.experts} {glu} experts, top-{c.experts_per_token}" if c.is_moe else f"{glu} MLP"
        if c.is_moe and self.options.moe == "dropless":
            mlp += " (dropless: grouped matmuls)"
        if c.shared_experts:
            mlp += f" and {c.shared_experts} shared"
        if c.is_moe and c.dense_layers:
            mlp += f" (the first {c.dense_layers} layer(s) a dense MLP)"
        if c.is_moe and c.moe_every > 1:
            mlp += f" in every {c.moe_every}th layer, a dense MLP in the others"
        if c.nope_every:
            mlp += f"; every {c.nope_every}th layer without RoPE"
        attention = (
            f"{c.heads}-head latent attention (kv latent {c.kv_lora_rank})"
            if c.latent
            else f"{c.heads} query / {c.kv_heads} kv heads causal attention"
        )
        if c.windowed:
            every = c.global_every
            mlp += f"; local layers attend within {c.sliding_window} tokens" + (
                f", every {every}th layer globally" if every else ""
            )
        return (
            f"{c.name}: {c.layers} scanned decoder layers (RMSNorm, RoPE, {attention} "
            f"({self.options.attention}), {mlp}), "
            f"{self.options.compute_dtype} "
            f"compute over {self.param_dtype} weights"
            + (", fp8 weight matmuls" if self.options.quantization == "fp8" else "")
            + f", remat {self.options.remat!r}, chunked next-token cross-entropy"
        )


def default_overrides(name: str) -> dict[str, Any]:
    """Every size and option :func:`decoder_model` takes, at its value for ``name``."""
    c = get_config(name)
    out: dict[str, Any] = {k: getattr(c, k) for k in _DIMS}
    out.update(RUN_DEFAULTS)
    out["seq"] = min(RUN_DEFAULTS["seq"], c.context)
    return out


def decoder_model(name: str | ArchConfig, **overrides: Any) -> DecoderModel:
    """A published architecture (or ``config``) with any dims, run sizes or options changed.

    Args:
      name: a name in :data:`~.configs.ARCH_NAMES`, or an :class:`ArchConfig`.
      **overrides: dims (``layers``, ``d_model``, ``heads``, ``kv_heads``, ``head_dim``,
        ``ffn``, ``vocab``, ``experts``, ``experts_per_token``), run sizes (``batch``,
        ``seq``, ``dtype`` of the master weights) and :class:`DecoderOptions` fields
        (``remat``, ``compute_dtype``, ``attention``, ``attention_block``, ``loss_chunk``,
        ``moe_group``, ``capacity_factor``, ``moe``, ``weights``).

    Raises:
      ShardvizError: an unknown name or override, or sizes that do not fit together.
    """
    base = name if isinstance(name, ArchConfig) else get_config(name)
    where = f"get_model({base.name!r})"
    defaults = {k: getattr(base, k) for k in _DIMS} | RUN_DEFAULTS
    defaults["seq"] = min(RUN_DEFAULTS["seq"], base.context)
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ShardvizError(
            problem(
                where, f"unknown size(s) {', '.join(unknown)}", f"use only {', '.join(defaults)}"
            )
        )
    s = {**defaults, **overrides}
    for key in (*_DIMS, "batch", "seq", "attention_block", "loss_chunk", "moe_group"):
        low = 0 if key in MAY_BE_ZERO else 1
        s[key] = whole_number(where, key, s[key], low=low, example=max(low, defaults[key]))
    s["capacity_factor"] = finite_number(
        where, "capacity_factor", s["capacity_factor"], example=defaults["capacity_factor"]
    )
    config = base.scaled(**{k: s[k] for k in _DIMS if s[k] != getattr(base, k)})
    if not is_remat(s["remat"]):
        _fail(
            where,
            f"remat={s['remat']!r} is not a remat policy",
            f"use one of {', '.join(map(repr, REMAT_POLICIES))}, or MaxText's custom policy "
            "tensor by tensor: shardviz.custom_remat(decoder_layer_input='offload', ...)",
        )
    if s["quantization"] not in QUANTIZATIONS:
        _fail(
            where,
            f"quantization={s['quantization']!r} is not one the decoder has",
            f"use one of {', '.join(map(repr, QUANTIZATIONS))}",
        )
    if s["weights"] not in WEIGHT_PLACES:
        _fail(
            where,
            f"weights={s['weights']!r} is not a place for the weights",
            f"use one of {', '.join(map(repr, WEIGHT_PLACES))}",
        )
    if s["attention"] not in ATTENTION_KINDS:
        _fail(
            where,
            f"attention={s['attention']!r} is not a kind of attention",
            f"use one of {', '.join(map(repr, ATTENTION_KINDS))}",
        )
    if s["moe"] not in MOE_KINDS:
        _fail(
            where,
            f"moe={s['moe']!r} is not a way the experts compute",
            f"use one of {', '.join(map(repr, MOE_KINDS))}",
        )
    for key in ("dtype", "compute_dtype"):
        s[key] = float_dtype(where, key, s[key]).name
    seq = s["seq"]
    pieces = {
        "attention_block": "attention blocks",
        "loss_chunk": "loss chunks",
        "moe_group": "MoE routing groups",
    }
    for key, what in pieces.items():
        size = min(s[key], seq)
        if seq % size:
            _fail(
                where,
                f"seq={seq} does not divide into {what} of {size}",
                f"pick {key} dividing seq (or at least seq: one piece)",
            )
    options = DecoderOptions(**{f.name: s[f.name] for f in dataclasses.fields(DecoderOptions)})
    return DecoderModel(config, s["batch"], seq, options, s["dtype"])


def _fail(where: str, what: str, fix: str) -> NoReturn:
    raise ShardvizError(problem(where, what, fix))


def float_dtype(where: str, key: str, value: Any) -> jnp.dtype:
    """``value`` as a float dtype for training: the master weights' (``dtype``) or the
    matmuls' (``compute_dtype``).

    Raises:
      ArgumentError: not a dtype, or not a float one (``"int8"``: gradients and the
        optimizer's updates need float weights; quantised weights are for serving).
    """
    try:
        dtype = jnp.dtype(value)
    except TypeError as err:
        raise ArgumentError(
            problem(where, f"{key}={shown(value)} is not a dtype", f"pass e.g. {key}='bfloat16'")
        ) from err
    if not jnp.issubdtype(dtype, jnp.floating):
        raise ArgumentError(
            problem(
                where,
                f"{key}={dtype.name} is not a float dtype, and training takes gradients and "
                "updates of the weights in it",
                f"pass {key}='bfloat16' or {key}='float32' (int8 and int4 weights are for "
                "serving: compare(..., mode='decode', dtype='int8'))",
            )
        )
    return dtype
