"""The model zoo: small, real models with Adam training steps, and the way to bring your own.

A :class:`ModelDef` is four functions and some facts: ``init_params(key)``, ``make_batch(key)``,
``loss(params, batch)``, the sizes in ``info``. Parameters are nested dicts (and lists) of
arrays, so leaf paths such as ``layers/0/attn/wq`` are stable names for sharding rules.

Built-in models (:func:`get_model`):

- ``"mlp"``: the two-layer MLP of :mod:`shardviz.strategies.mlp`;
- ``"transformer"``: a decoder-only transformer (:mod:`shardviz.strategies.transformer`);
- ``"moe"``: a GShard-style top-2 mixture-of-experts layer (:mod:`shardviz.strategies.moe`).

Published LLM architectures (:data:`ARCH_NAMES`: Llama 2 and 3.1, Mixtral 8x7B, Qwen2.5 7B) come
at their real dims by default, and take reduced sizes and training options as overrides
(:mod:`shardviz.strategies.models`); their ``info["config"]`` is the ``ArchConfig``.

Default sizes keep every dimension divisible by 8, so each way of factoring 8 devices into a
mesh splits every array evenly, and a train step compiles in well under two seconds on CPU.
The built-ins' ``init_params`` and ``make_batch`` are jitted (one compile instead of one per
operation); wrap them in ``jax.jit(..., out_shardings=...)`` to create sharded state on device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
import optax

from shardviz.errors import ShardvizError, problem
from shardviz.model.arguments import finite_number, whole_number
from shardviz.model.serving import bytes_per_element
from shardviz.strategies import mlp, moe, transformer
from shardviz.strategies.accounting import count_params
from shardviz.strategies.models import build as published
from shardviz.strategies.models.axes import ACTIVATION_AXES
from shardviz.strategies.models.configs import ARCH_NAMES, ArchConfig
from shardviz.strategies.models.gated_mlp import ACTIVATIONS
from shardviz.strategies.transformer import Constrain

__all__ = [
    "ARCH_NAMES",
    "DECODER_FIELDS",
    "MODEL_NAMES",
    "ModelDef",
    "default_sizes",
    "get_model",
    "init_train_state",
    "make_train_step",
]

Params = Any
Batch = Any
TrainStep = Callable[[Params, Any, Batch], tuple[Params, Any, jax.Array]]


@dataclass(frozen=True)
class ModelDef:
    """A model to train and shard: how to make its parameters and batches, and its loss.

    Attributes:
      name: a short name, shown in reports.
      init_params: ``key -> params`` (a pytree of arrays).
      make_batch: ``key -> batch`` (a pytree of arrays).
      loss: ``(params, batch) -> scalar``.
      info: sizes and derived facts (``num_params`` always; built-ins add their sizes).
      description: one line on what the model is.
      activations: names the model passes to a ``constrain(name, array)`` hook, if it has one.
      loss_with_constraints: ``(params, batch, constrain) -> scalar`` for models with the hook;
        use :meth:`constrained` rather than calling it directly.
      value_and_grad_on: ``(params, batch, mesh) -> (loss, grads)`` for a model that computes
        its gradients itself on the strategy's mesh (a pipeline written with ``shard_map``);
        ``None``: the train step takes ``jax.value_and_grad(loss)``.
    """

    name: str
    init_params: Callable[[jax.Array], Params]
    make_batch: Callable[[jax.Array], Batch]
    loss: Callable[[Params, Batch], jax.Array]
    info: dict[str, Any] = field(default_factory=dict, compare=False)
    description: str = ""
    activations: tuple[str, ...] = ()
    loss_with_constraints: Callable[[Params, Batch, Constrain], jax.Array] | None = field(
        default=None, repr=False
    )
    value_and_grad_on: Callable[[Params, Batch, Any], tuple[jax.Array, Params]] | None = field(
        default=None, repr=False
    )

    def constrained(self, constrain: Constrain) -> ModelDef:
        """This model with ``constrain(name, array)`` called on its named activations.

        The hook typically applies ``jax.lax.with_sharding_constraint`` for some names (say
        ``"residual"`` for sequence parallelism) and returns the others unchanged.

        Raises:
          ShardvizError: the model has no activation hook (e.g. ``"mlp"`` or a custom model).
        """
        if self.loss_with_constraints is None:
            raise ShardvizError(
                problem(
                    f"model {self.name!r}",
                    "this model has no activation hook to constrain",
                    "use the 'transformer' or 'moe' model, or call "
                    "jax.lax.with_sharding_constraint inside your own loss",
                )
            )
        with_hook = self.loss_with_constraints

        def loss(params: Params, batch: Batch) -> jax.Array:
            return with_hook(params, batch, constrain)

        return replace(self, loss=loss)

    def kv_bytes_per_token(self, dtype: Any = "bfloat16") -> float:
        """Bytes of KV cache one token takes: 2 (keys and values) x layers x KV heads x
        head dim x bytes per element (bfloat16 2, int8 1, int4 0.5).

        What a serving batch's cache costs per position of every sequence; LLaMA 3 70B in
        int8: 2 x 80 x 8 x 128 x 1 = 163,840 bytes. ``dtype`` is a name (``"int8"``,
        ``"bf16"``) or a dtype object (``jnp.bfloat16``, ``np.dtype("int8")``). The sizes come
        from a published architecture's config, or from ``info`` for your own model
        (``ModelDef.custom(..., info={"layers": 2, "kv_heads": 4, "head_dim": 64})``; without
        ``kv_heads``, ``heads``: every head keeps its keys and values).

        Raises:
          ShardvizError: the model declares no layers, KV heads or head dim (an MLP, or a
            custom model without them in ``info``), naming what is missing.
          ArgumentError: ``dtype`` is not bfloat16, int8 or int4.
        """
        where = f"{self.name}.kv_bytes_per_token"
        config = self.info.get("config")
        if isinstance(config, ArchConfig):
            _refuse_unserved(config, where)
            layers, kv_heads, head_dim = config.layers, config.kv_heads, config.head_dim
        else:
            sizes = {k: self.info[k] for k in ("layers", "kv_heads", "head_dim") if k in self.info}
            if "kv_heads" not in sizes and "heads" in self.info:
                sizes["kv_heads"] = self.info["heads"]  # multi-head attention
            missing = [k for k in ("layers", "kv_heads", "head_dim") if k not in sizes]
            if missing:
                raise ShardvizError(
                    problem(
                        where,
                        f"model {self.name!r} has no attention layers shardviz knows the sizes "
                        f"of: its info declares no {_listed(missing)}",
                        "declare them, e.g. ModelDef.custom(name, params, loss, batch, info="
                        "{'layers': 2, 'kv_heads': 4, 'head_dim': 64, ...}), or use a "
                        "published architecture (e.g. 'llama3.1-70b')",
                    )
                )
            layers, kv_heads, head_dim = (
                whole_number(where, k, sizes[k]) for k in ("layers", "kv_heads", "head_dim")
            )
        return 2 * layers * kv_heads * head_dim * bytes_per_element(dtype, where)

    def decoder_config(self, where: str = "serving") -> ArchConfig:
        """The decoder architecture this model declares, for the serving steps.

        A published architecture's ``info["config"]``; for your own decoder, the sizes in
        ``info`` (:data:`DECODER_FIELDS`: layers, d_model, heads, kv_heads, head_dim, ffn,
        vocab; ``experts`` and ``experts_per_token`` for a mixture of experts; ``d_ff`` is
        taken for ``ffn``; optional ``tied_embeddings``, ``qkv_bias``, ``qk_norm``, ``norm_eps``,
        ``rope_theta``, ``context``). Serving compiles its own steps for a decoder of these
        sizes (pre-norm RMSNorm, RoPE, grouped-query attention, SwiGLU MLP or top-k experts),
        not the model's loss: the bytes, flops and collectives are those of that structure.

        Raises:
          ShardvizError: a size is missing (naming it and how to declare it), the sizes do
            not fit together (``heads`` not a multiple of ``kv_heads``, ``experts`` without
            ``experts_per_token``), or an activation the steps do not have.
        """
        config = self.info.get("config")
        if isinstance(config, ArchConfig):
            _refuse_unserved(config, where)
            return config
        sizes = dict(self.info)
        if "ffn" not in sizes and "d_ff" in sizes:
            sizes["ffn"] = sizes["d_ff"]
        missing = [k for k in DECODER_FIELDS if k not in sizes]
        if missing:
            raise ShardvizError(
                problem(
                    where,
                    f"model {self.name!r} does not declare {_listed(missing)} in its info "
                    f"({'; '.join(f'{k}: {DECODER_FIELDS[k]}' for k in missing)})",
                    "declare the decoder's sizes, e.g. ModelDef.custom(name, params, loss, "
                    "batch, info={'layers': 2, 'd_model': 256, 'heads': 8, 'kv_heads': 4, "
                    "'head_dim': 32, 'ffn': 512, 'vocab': 512, 'experts': 8, "
                    "'experts_per_token': 2}) (experts: 0 or left out for a dense MLP)",
                )
            )
        activation = sizes.get("activation", "silu")
        if not isinstance(activation, str) or activation not in ACTIVATIONS:
            raise ShardvizError(
                problem(
                    where,
                    f"model {self.name!r} declares activation={activation!r}, which the "
                    "serving steps do not have",
                    f"declare one of {', '.join(map(repr, ACTIVATIONS))} (the gated MLP's "
                    "gate), or leave it out for 'silu' (SwiGLU)",
                )
            )
        keep = set(DECODER_FIELDS) | set(_DECODER_OPTIONS)
        return ArchConfig(name=self.name, **{k: v for k, v in sizes.items() if k in keep})

    @classmethod
    def custom(
        cls,
        name: str,
        params_or_init: Params | Callable[[jax.Array], Params],
        loss: Callable[[Params, Batch], jax.Array],
        batch_or_make_batch: Batch | Callable[[jax.Array], Batch],
        *,
        description: str = "",
        info: Mapping[str, Any] | None = None,
    ) -> ModelDef:
        """Bring your own model: any parameter pytree and a loss function.

        Args:
          name: a short name for reports.
          params_or_init: a pytree of arrays, or a function ``key -> params``.
          loss: ``(params, batch) -> scalar``, differentiable in ``params``.
          batch_or_make_batch: a pytree of arrays, or a function ``key -> batch``.
          description: one line on what the model is.
          info: extra facts to keep (``num_params`` is added).

        Returns:
          A :class:`ModelDef`; the loss has been traced once (abstractly) to check it returns
          a scalar.

        Raises:
          ShardvizError: the loss is not callable, fails to trace, or does not return a scalar.
        """
        where = f"ModelDef.custom({name!r})"
        if not callable(loss):
            raise ShardvizError(
                problem(
                    where,
                    f"loss is a {type(loss).__name__}, not a function",
                    "pass loss as a function (params, batch) -> scalar",
                )
            )
        init = params_or_init if callable(params_or_init) else _constant(params_or_init)
        make_batch = (
            batch_or_make_batch if callable(batch_or_make_batch) else _constant(batch_or_make_batch)
        )
        key = jax.random.key(0)
        try:
            params = jax.eval_shape(init, key)
            batch = jax.eval_shape(make_batch, key)
            out = jax.eval_shape(loss, params, batch)
        except Exception as err:  # the user's code: say where it failed, keep the cause
            raise ShardvizError(
                problem(
                    where,
                    f"tracing init, batch and loss failed ({type(err).__name__}: {err})",
                    "check that init and make_batch take a PRNG key and that "
                    "loss(params, batch) runs on them",
                )
            ) from err
        if not hasattr(out, "shape") or out.shape != ():
            raise ShardvizError(
                problem(
                    where,
                    f"loss returns {getattr(out, 'shape', type(out).__name__)}, not a scalar",
                    "reduce the loss to one number, e.g. with jnp.mean",
                )
            )
        facts = {**(info or {}), "num_params": count_params(params)}
        return cls(
            name=name,
            init_params=init,
            make_batch=make_batch,
            loss=loss,
            info=facts,
            description=description or "a user model",
        )

    @classmethod
    def from_nnx(
        cls,
        name: str,
        model: Any,
        loss: Callable[[Any, Batch], jax.Array],
        batch: Batch,
        *,
        description: str = "",
    ) -> ModelDef:
        """A Flax NNX module as a :class:`ModelDef` (its current values are the start).

        The parameters are the module's ``nnx.Param`` values as a nested dict (leaf paths
        such as ``l1/kernel``, for sharding rules), copied to the host so each strategy
        places them itself; the rest of its state (batch statistics, RNG keys) is kept as
        it is, outside training. The three lines it stands for::

            graphdef, params, rest = nnx.split(model, nnx.Param, ...)
            params = nnx.to_pure_dict(params)
            ModelDef.custom(name, params, lambda p, b: loss(nnx.merge(graphdef, p, rest), b), batch)

        Args:
          name: a short name for reports.
          model: an ``nnx.Module``.
          loss: ``(model, batch) -> scalar``.
          batch: a pytree of arrays, or a function ``key -> batch``.
        """
        from flax import nnx  # optional: only for NNX models

        graphdef, params, rest = cast(Any, nnx.split(model, nnx.Param, ...))
        host = jax.tree.map(np.asarray, nnx.to_pure_dict(params))

        def model_loss(p: Params, b: Batch) -> jax.Array:
            return loss(nnx.merge(graphdef, p, rest), b)

        return cls.custom(
            name, host, model_loss, _host(batch), description=description or "a Flax NNX model"
        )

    @classmethod
    def from_equinox(
        cls,
        name: str,
        model: Any,
        loss: Callable[[Any, Batch], jax.Array],
        batch: Batch,
        *,
        description: str = "",
    ) -> ModelDef:
        """An Equinox module as a :class:`ModelDef` (its current values are the start).

        The parameters are the module's array leaves (leaf paths such as ``layers/0/weight``),
        copied to the host; its other leaves (activation functions, sizes) are kept aside and
        put back for the loss. The three lines it stands for::

            params, static = eqx.partition(model, eqx.is_array)
            ModelDef.custom(name, params, lambda p, b: loss(eqx.combine(p, static), b), batch)

        Args:
          name: a short name for reports.
          model: an ``eqx.Module``.
          loss: ``(model, batch) -> scalar``.
          batch: a pytree of arrays, or a function ``key -> batch``.
        """
        import equinox as eqx  # optional: only for Equinox models

        params, static = eqx.partition(model, eqx.is_array)
        host = jax.tree.map(np.asarray, params)

        def model_loss(p: Params, b: Batch) -> jax.Array:
            return loss(eqx.combine(p, static), b)

        # _constant: a module is callable, and custom() would take it for an init function
        return cls.custom(
            name,
            _constant(host),
            model_loss,
            _host(batch),
            description=description or "an Equinox model",
        )


def _host(tree: Any) -> Any:
    """A pytree of arrays copied to the host (a function is kept: it makes the tree)."""
    return tree if callable(tree) else jax.tree.map(np.asarray, tree)


def _constant(tree: Any) -> Callable[[jax.Array], Any]:
    def same(key: jax.Array) -> Any:
        del key
        return tree

    return same


def _refuse_unserved(config: ArchConfig, where: str) -> None:
    """Serving's steps and KV-cache figures are those of global grouped-query attention over
    uniform layers: a model whose local layers keep only a window of keys (Gemma 3), whose
    cache is a latent (MLA), or whose layers differ (DeepSeek-V3's dense first layers and
    shared experts, Llama 4's NoPE layers) would be planned wrong, so it is refused rather
    than miscounted."""
    reasons = []
    if config.windowed:
        reasons.append(f"sliding-window layers (window {config.sliding_window}), whose cache "
                       "the steps would keep whole")  # fmt: skip
    if config.latent:
        reasons.append(f"multi-head latent attention, whose cache is a {config.kv_lora_rank}"
                       "-wide latent per token, not keys and values per head")  # fmt: skip
    if config.dense_layers or config.shared_experts or config.moe_every > 1 or config.nope_every:
        reasons.append("dense layers among MoE ones, shared experts or layers without RoPE, "
                       "which the serving steps do not build")  # fmt: skip
    if reasons:
        raise ShardvizError(
            problem(
                where,
                f"{config.name!r} has {'; and '.join(reasons)}: the serving steps and "
                "KV-cache figures cover uniform layers of global grouped-query attention",
                "plan its training with compare or suggest; for serving, use a model "
                "with global grouped-query attention",
            )
        )


def _listed(names: list[str]) -> str:
    """``['a', 'b', 'c']`` -> ``"a, b or c"``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


#: What a ``ModelDef``'s ``info`` declares for serving your own decoder, and what each is.
DECODER_FIELDS: dict[str, str] = {
    "layers": "decoder layers",
    "d_model": "the residual width",
    "heads": "query heads",
    "kv_heads": "key/value heads (grouped-query attention; = heads without it)",
    "head_dim": "each head's width",
    "ffn": "the MLP's hidden size (each expert's in a mixture of experts)",
    "vocab": "the vocabulary",
}
#: Sizes and options an ``info`` may add (an ArchConfig's fields; experts: 0 = dense).
_DECODER_OPTIONS = (
    "experts", "experts_per_token", "tied_embeddings", "qkv_bias", "qk_norm", "norm_eps",
    "rope_theta", "context", "activation",
)  # fmt: skip


_DEFAULTS: dict[str, dict[str, Any]] = {
    "mlp": {"d_model": 128, "d_hidden": 512, "batch": 64, "dtype": jnp.float32},
    "transformer": {
        "vocab": 256,
        "d_model": 128,
        "heads": 8,
        "d_ff": 512,
        "layers": 2,
        "seq": 64,
        "batch": 16,
        "dtype": jnp.float32,
    },
    "moe": {
        "d_model": 128,
        "d_ff": 256,
        "experts": 8,
        "top_k": 2,
        "capacity_factor": 1.25,
        "batch": 16,
        "seq": 64,
        "group_size": 64,
        "aux_weight": 0.01,
        "dtype": jnp.float32,
    },
}

#: The built-in model names, in the order they are shown.
MODEL_NAMES: tuple[str, ...] = tuple(_DEFAULTS)

#: The sizes that are real numbers, and whether each must be positive (else non-negative);
#: every other size is a whole number >= 1.
_REAL_SIZES = {"capacity_factor": True, "aux_weight": False}


def default_sizes(name: str) -> dict[str, Any]:
    """The default sizes of built-in model ``name`` (a copy: change it freely)."""
    _check_name(name)
    if name in ARCH_NAMES:
        return published.default_overrides(name)
    return dict(_DEFAULTS[name])


def get_model(name: str, **sizes: Any) -> ModelDef:
    """A built-in model, with any of its sizes changed.

    Args:
      name: ``"mlp"``, ``"transformer"`` or ``"moe"``, or a published architecture in
        :data:`ARCH_NAMES` (e.g. ``"llama3.1-8b"``).
      **sizes: sizes to change from :func:`default_sizes` (and ``dtype``), e.g.
        ``get_model("transformer", layers=4, d_model=256)`` or
        ``get_model("llama3.1-8b", layers=2, d_model=256, seq=512, remat="full")``.

    Returns:
      A :class:`ModelDef` whose ``info`` holds every size, derived sizes and ``num_params``.

    Raises:
      ShardvizError: an unknown name or size, or sizes that do not fit together.
    """
    _check_name(name)
    if name in ARCH_NAMES:
        return _build_published(name, sizes)
    where = f"get_model({name!r})"
    defaults = _DEFAULTS[name]
    unknown = sorted(set(sizes) - set(defaults))
    if unknown:
        raise ShardvizError(
            problem(
                where,
                f"unknown size(s) {', '.join(unknown)}",
                f"use only {', '.join(defaults)}",
            )
        )
    s = {**defaults, **sizes}
    for key, value in s.items():
        if key == "dtype":
            s[key] = published.float_dtype(where, key, value)
        elif key in _REAL_SIZES:  # capacity_factor > 0, aux_weight >= 0
            positive = _REAL_SIZES[key]
            s[key] = finite_number(where, key, value, positive=positive, example=defaults[key])
        else:
            s[key] = whole_number(where, key, value, example=defaults[key])
    return _BUILDERS[name](where, s)


def _check_name(name: str) -> None:
    if name not in _DEFAULTS and name not in ARCH_NAMES:
        raise ShardvizError(
            problem(
                "get_model",
                f"there is no built-in model {name!r}",
                f"use one of {', '.join(repr(n) for n in MODEL_NAMES)}, "
                f"a published architecture ({', '.join(repr(n) for n in ARCH_NAMES)}), "
                "or ModelDef.custom(name, params, loss, batch) for your own",
            )
        )


def _require(where: str, ok: bool, what: str, fix: str) -> None:
    if not ok:
        raise ShardvizError(problem(where, what, fix))


def _info(init: Callable[[jax.Array], Params], sizes: dict[str, Any], **derived: Any) -> dict:
    info = {k: (str(v) if k == "dtype" else v) for k, v in sizes.items()}
    info.update(derived)
    info["num_params"] = count_params(jax.eval_shape(init, jax.random.key(0)))
    return info


def _build_mlp(where: str, s: dict[str, Any]) -> ModelDef:
    del where
    init = jax.jit(
        functools.partial(_mlp_init, d_model=s["d_model"], d_hidden=s["d_hidden"], dtype=s["dtype"])
    )
    make_batch = jax.jit(
        functools.partial(_mlp_batch, batch=s["batch"], d_model=s["d_model"], dtype=s["dtype"])
    )
    return ModelDef(
        name="mlp",
        init_params=init,
        make_batch=make_batch,
        loss=mlp.loss_fn,
        info=_info(init, s),
        description="two-layer MLP, relu(x @ w1 + b1) @ w2 + b2, mean squared error",
    )


def _mlp_init(key: jax.Array, *, d_model: int, d_hidden: int, dtype: Any) -> Params:
    return mlp.init_params(key, d_model, d_hidden, dtype)


def _mlp_batch(key: jax.Array, *, batch: int, d_model: int, dtype: Any) -> Batch:
    return mlp.make_batch(key, batch, d_model, dtype)


def _build_transformer(where: str, s: dict[str, Any]) -> ModelDef:
    _require(
        where,
        s["d_model"] % s["heads"] == 0,
        f"d_model={s['d_model']} does not divide by heads={s['heads']}",
        "pick d_model as a multiple of heads",
    )
    dims = {k: s[k] for k in ("vocab", "d_model", "heads", "d_ff", "layers", "seq")}
    init = jax.jit(functools.partial(transformer.init_params, **dims, dtype=s["dtype"]))
    make_batch = jax.jit(
        functools.partial(transformer.make_batch, batch=s["batch"], seq=s["seq"], vocab=s["vocab"])
    )
    return ModelDef(
        name="transformer",
        init_params=init,
        make_batch=make_batch,
        loss=transformer.loss_fn,
        info=_info(init, s, head_dim=s["d_model"] // s["heads"], tokens=s["batch"] * s["seq"]),
        description=(
            f"{s['layers']}-layer decoder-only transformer (causal attention, MLP, pre-norm), "
            "next-token cross-entropy"
        ),
        activations=tuple(transformer.ACTIVATIONS),
        loss_with_constraints=transformer.loss_fn,
    )


def _build_moe(where: str, s: dict[str, Any]) -> ModelDef:
    tokens = s["batch"] * s["seq"]
    _require(
        where,
        tokens % s["group_size"] == 0,
        f"batch * seq = {tokens} tokens do not divide into groups of group_size={s['group_size']}",
        "pick group_size dividing batch * seq (the default is one group per sequence)",
    )
    _require(
        where,
        s["top_k"] <= s["experts"],
        f"top_k={s['top_k']} is more than experts={s['experts']}",
        "pick top_k <= experts (GShard uses 2)",
    )
    init = jax.jit(
        functools.partial(
            moe.init_params,
            d_model=s["d_model"],
            d_ff=s["d_ff"],
            experts=s["experts"],
            dtype=s["dtype"],
        )
    )
    make_batch = jax.jit(
        functools.partial(
            moe.make_batch, batch=s["batch"], seq=s["seq"], d_model=s["d_model"], dtype=s["dtype"]
        )
    )
    routing = {k: s[k] for k in ("top_k", "capacity_factor", "group_size", "aux_weight")}
    loss_with_constraints = _moe_loss_with_constraints(routing)
    capacity = moe.expert_capacity(s["group_size"], s["experts"], s["top_k"], s["capacity_factor"])
    return ModelDef(
        name="moe",
        init_params=init,
        make_batch=make_batch,
        loss=functools.partial(moe.loss_fn, **routing),
        info=_info(init, s, tokens=tokens, groups=tokens // s["group_size"], capacity=capacity),
        description=(
            f"mixture of {s['experts']} expert MLPs, top-{s['top_k']} routing with capacity "
            f"factor {s['capacity_factor']} (GShard), regression loss + load-balancing loss"
        ),
        activations=tuple(moe.ACTIVATIONS),
        loss_with_constraints=loss_with_constraints,
    )


def _moe_loss_with_constraints(routing: dict[str, Any]) -> Callable:
    def loss(params: Params, batch: Batch, constrain: Constrain) -> jax.Array:
        return moe.loss_fn(params, batch, **routing, constrain=constrain)

    return loss


def _build_published(name: str, sizes: dict[str, Any]) -> ModelDef:
    """A published architecture (:func:`~.models.build.decoder_model`) as a ModelDef."""
    return _published_def(name, published.decoder_model(name, **sizes))


def with_decoder_options(model: ModelDef, where: str, **options: Any) -> ModelDef:
    """A published architecture's ``model`` built again with decoder options changed
    (``remat="offload"``, ``weights="host"``): the same dims, run sizes and other options.

    Raises:
      ShardvizError: ``model`` is not a published architecture (its layers are not the
        decoder's scan, so these options mean nothing to it).
    """
    config = model.info.get("config")
    if not isinstance(config, ArchConfig):
        raise ShardvizError(
            problem(
                where,
                f"it needs a published architecture's decoder ({', '.join(options)}="
                f"{', '.join(map(repr, options.values()))}), and {model.name!r} is not one",
                "use a published architecture, e.g. get_model('llama3.1-8b', layers=2, "
                "d_model=256), or write your own RuleSet without it",
            )
        )
    if all(model.info.get(k) == v for k, v in options.items()):
        return model
    keep = {k: model.info[k] for k in published.RUN_DEFAULTS if k in model.info}
    return _published_def(model.name, published.decoder_model(config, **(keep | options)))


def _published_def(name: str, model: published.DecoderModel) -> ModelDef:
    return ModelDef(
        name=name,
        init_params=jax.jit(model.init_params),
        make_batch=jax.jit(model.make_batch),
        loss=model.loss,
        info=model.info(),
        description=model.description(),
        activations=tuple(ACTIVATION_AXES),
        loss_with_constraints=model.loss,
    )


_BUILDERS: dict[str, Callable[[str, dict[str, Any]], ModelDef]] = {
    "mlp": _build_mlp,
    "transformer": _build_transformer,
    "moe": _build_moe,
}


def make_train_step(
    model: ModelDef, optimizer: optax.GradientTransformation | None = None
) -> TrainStep:
    """One training step: forward, backward, optimizer update.

    Args:
      model: the model whose ``loss`` to minimise.
      optimizer: an optax optimizer; ``optax.adam(1e-3)`` by default.

    Returns:
      ``step(params, opt_state, batch) -> (params, opt_state, loss)``, not jitted: wrap it in
      ``jax.jit`` with the shardings of a strategy. ``opt_state`` comes from
      :func:`init_train_state` with the same optimizer.
    """
    opt = optax.adam(1e-3) if optimizer is None else optimizer

    def train_step(params: Params, opt_state: Any, batch: Batch) -> tuple[Params, Any, jax.Array]:
        loss, grads = jax.value_and_grad(model.loss)(params, batch)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return train_step


def init_train_state(
    model: ModelDef, key: jax.Array, optimizer: optax.GradientTransformation | None = None
) -> tuple[Params, Any, Batch]:
    """Fresh parameters, optimizer state and one batch for ``model``.

    Args:
      model: the model.
      key: a jax PRNG key (split into one for the parameters and one for the batch).
      optimizer: the optimizer :func:`make_train_step` uses; ``optax.adam(1e-3)`` by default.

    Returns:
      ``(params, opt_state, batch)``. Under ``jax.eval_shape`` this gives the abstract state
      without allocating it, for compile-only runs of large sizes.
    """
    opt = optax.adam(1e-3) if optimizer is None else optimizer
    k_params, k_batch = jax.random.split(key)
    params = model.init_params(k_params)
    return params, opt.init(params), model.make_batch(k_batch)
