"""The decoder-only LLM as a jax function over a parameter pytree, as training code writes it.

- Layers are stacked (:mod:`.params`) and run by one ``jax.lax.scan``, its body wrapped in
  ``jax.checkpoint`` by the ``remat`` policy (:data:`REMAT_POLICIES`).
- Mixed precision: float32 master weights, cast to the compute dtype (bf16) inside the loss;
  norms, RoPE, softmax and the cross-entropy run in float32.
- Gemma 3's local and global layers (:attr:`.configs.ArchConfig.global_every`): the scan runs
  over blocks of that many layers, each block's layers unrolled with their own static window
  and RoPE base, and the layers left over (62 = 10 x 6 + 2) in a second scan, as MaxText's
  scannable block does.
- Each block is pre-norm: ``x + attn(rms_norm(x))``, then ``x + mlp(rms_norm(x))`` (with
  ``post_norms``, each branch's output normed again before the add), with RoPE
  and GQA attention computed blockwise, in jax (:mod:`.attention`) or as Pallas TPU kernels
  that keep the score blocks on chip (:mod:`.attention_pallas`, run per shard; see
  :data:`ATTENTION_KINDS`), a SwiGLU MLP (:mod:`.gated_mlp`) or
  Mixtral's top-k MoE (:mod:`.experts`); the loss is a chunked cross-entropy (:mod:`.loss`).
- Every named activation goes through ``constrain(name, x)``; :mod:`shardviz.strategies.rules.logical` makes it a
  ``with_sharding_constraint`` from the strategy's logical axis rules
  (:data:`.axes.ACTIVATION_AXES`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

from shardviz.errors import ShardvizError, problem
from shardviz.strategies.memory_space import to_device
from shardviz.strategies.models.attention import blockwise_attention
from shardviz.strategies.models.attention_pallas import pallas_attention
from shardviz.strategies.models.axes import (
    Constrain,
    SpecConstrain,
    no_constraint,
    per_shard,
    platform_of,
)
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.models.experts import moe_mlp
from shardviz.strategies.models.fp8 import matmul
from shardviz.strategies.models.gated_mlp import gated_mlp
from shardviz.strategies.models.loss import chunked_cross_entropy
from shardviz.strategies.models.norm import head_norm, rms_norm
from shardviz.strategies.models.remat import custom_policy, custom_settings
from shardviz.strategies.models.rope import apply_rope, rope_frequencies

__all__ = [
    "ATTENTION_KINDS",
    "LAYER_INPUT",
    "MOE_KINDS",
    "REMAT_POLICIES",
    "WEIGHT_PLACES",
    "DecoderOptions",
    "decoder_loss",
    "final_hidden",
    "is_remat",
    "remat_policy",
]

#: How attention is computed, with what each means. Both compute every block, masked or not.
ATTENTION_KINDS: dict[str, str] = {
    "auto": "Pallas kernels when the mesh is on TPU (real or deviceless) and the sequence is "
    "not split, else blockwise in jax: what production TPU training runs",
    "blockwise": "blockwise in jax (online softmax, hand-written FlashAttention-2 backward): "
    "runs everywhere; XLA writes each score block to HBM",
    "pallas": "Pallas TPU kernels (FlashAttention-2) run on each device's shard: score blocks "
    "stay in VMEM; interpreted on CPU devices, not available on GPU",
}

#: The name ``checkpoint_name`` gives each decoder layer's input (what "offload" sends to host).
LAYER_INPUT = "decoder_layer_input"

#: Remat policies of the layer scan, with what each keeps for the backward pass.
REMAT_POLICIES: dict[str, str] = {
    "none": "no rematerialisation: every layer keeps all its activations",
    "full": "keep only each layer's input; recompute the layer in the backward pass",
    "save_matmuls": "keep the outputs of matmuls with no batch dims (the weight projections; "
    "jax.checkpoint_policies.dots_with_no_batch_dims_saveable), recompute the rest",
    "offload": f"keep only each layer's input ({LAYER_INPUT!r}), offloaded to pinned host "
    "memory (save_and_offload_only_these_names), as MaxText does for Llama 70B",
}
# Besides these, MaxText's custom policy, tensor by tensor (:func:`.remat.custom_remat`):
# "custom:decoder_layer_input=offload,query_proj=offload" keeps nothing on the device,
# offloads those two and recomputes the rest. suggest tries only the named ones above.


#: How an MoE layer's experts compute, with what each means.
MOE_KINDS: dict[str, str] = {
    "capacity": "each expert takes at most capacity_factor times its share of a routing "
    "group's picks, into slots reached by one-hot dispatch and combine einsums (GShard); "
    "picks past an expert's slots are dropped",
    "dropless": "every pick computed: the picks sorted by expert through grouped matmuls "
    "(megablox on TPU, tokamax's in fp8, jax.lax.ragged_dot elsewhere), as MaxText's "
    "sparse_matmul",
}

#: Where the master weights may live, with how the decoder reads them.
WEIGHT_PLACES: dict[str, str] = {
    "device": "in HBM: the layer scan reads each layer's weights there",
    "host": "in pinned host memory: the layer scan brings each layer's weights to HBM when "
    "it reaches them (and again in the backward pass), as ZeRO-Inference streams them",
}


@dataclass(frozen=True)
class DecoderOptions:
    """How the decoder is computed (not what it is): precision, remat and block sizes.

    Attributes:
      remat: one of :data:`REMAT_POLICIES`, or a custom policy in MaxText's words
        (:func:`~.remat.custom_remat`).
      compute_dtype: the dtype of the matmuls (the weights are cast to it in the loss).
      attention: one of :data:`ATTENTION_KINDS`.
      attention_block: query and key/value block size of the attention.
      loss_chunk: positions per chunk of the cross-entropy.
      moe_group: tokens per routing group of an MoE layer.
      capacity_factor: MoE expert capacity factor (``>= experts / top_k`` drops nothing).
      moe: how the experts compute, one of :data:`MOE_KINDS` (``"dropless"``: no capacity).
      weights: where the master weights live between steps, one of :data:`WEIGHT_PLACES`
        (``"host"``: each layer's weights are brought to HBM when the scan reaches them).
      quantization: ``""`` or ``"fp8"``: the layers' weight matmuls in fp8, forward and
        backward (:data:`.fp8.QUANTIZATIONS`).
    """

    remat: str = "full"
    compute_dtype: str = "bfloat16"
    attention: str = "auto"
    attention_block: int = 512
    loss_chunk: int = 1024
    moe_group: int = 1024
    capacity_factor: float = 1.25
    moe: str = "capacity"
    weights: str = "device"
    quantization: str = ""


def is_remat(name: object) -> bool:
    """Whether ``name`` is a remat policy: one of :data:`REMAT_POLICIES`, or a custom one in
    MaxText's words (:func:`~.remat.custom_remat`; a malformed one raises, saying why)."""
    return name in REMAT_POLICIES or custom_settings(name) is not None  # type: ignore[arg-type]


def remat_policy(name: str) -> Any:
    """The ``jax.checkpoint`` policy of remat ``name`` (``None`` for "none": no checkpoint;
    a custom policy, tensor by tensor, as MaxText's)."""
    settings = custom_settings(name)
    if settings is not None:
        return custom_policy(settings)
    policies = jax.checkpoint_policies
    return {
        "none": None,
        "full": policies.nothing_saveable,
        "save_matmuls": policies.dots_with_no_batch_dims_saveable,
        "offload": policies.save_and_offload_only_these_names(
            names_which_can_be_saved=[],
            names_which_can_be_offloaded=[LAYER_INPUT],
            offload_src="device",
            offload_dst="pinned_host",
        ),
    }[name]


#: The stacked layers' subtrees (each run by a scan, a layer's weights cast as it comes).
_STACKS = ("dense_layers", "layers")


def _split(spec: Any, rank: int) -> tuple[Any, ...]:
    return tuple(spec) + (None,) * (rank - len(tuple(spec)))


def _kernel_refusal(constrain: Constrain, platform: str, q: jax.Array, k: jax.Array) -> str | None:
    """Why the Pallas kernels cannot run per shard here, or ``None``: on GPU, or a split
    sequence (each shard would attend to its own positions only), or query and key/value
    heads split differently (a shard's query heads would not find their kv heads)."""
    if platform == "gpu":
        return "the Pallas attention kernels are TPU kernels; the mesh is on GPU"
    if not isinstance(constrain, SpecConstrain):
        return None  # no mesh: the kernels see whole arrays
    specs = {n: constrain.spec(n, tuple(x.shape)) for n, x in (("query", q), ("key", k),
             ("value", k), ("attn_heads", q))}  # fmt: skip
    unplaced = [n for n, s in specs.items() if s is None]
    if unplaced:
        return f"no rule places activation(s) {', '.join(map(repr, unplaced))}"
    sq, sk = _split(specs["query"], 4), _split(specs["key"], 4)
    if sq[1] is not None:
        return f"the sequence is split over {sq[1]!r}; the kernels need whole sequences"
    if sq[2] != sk[2]:
        return f"query heads are split over {sq[2]!r} but kv heads over {sk[2]!r}"
    return None


def _attend(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    block: int,
    kind: str,
    constrain: Constrain,
    window: int = 0,
    chunk: int = 0,
) -> jax.Array:
    """Causal GQA attention of ``kind`` (:data:`ATTENTION_KINDS`); with a sliding
    ``window`` (or a ``chunk``: keys of the query's own chunk), each kind visits only the
    band of blocks along the diagonal it reaches."""
    platform = platform_of(constrain)
    refusal = _kernel_refusal(constrain, platform, q, k) if kind != "blockwise" else None
    if kind == "pallas" and refusal is not None:
        raise ShardvizError(
            problem("attention='pallas'", refusal, "use attention='blockwise' (or 'auto')")
        )
    use_kernel = kind == "pallas" or (kind == "auto" and refusal is None and platform == "tpu")
    if not use_kernel:
        return blockwise_attention(
            q, k, v, block_q=block, block_kv=block, window=window, chunk=chunk
        )
    interpret = platform != "tpu"

    def local(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return pallas_attention(
            q, k, v, block_q=block, block_kv=block, interpret=interpret, window=window,
            chunk=chunk,
        )  # fmt: skip

    return per_shard(constrain, local, ("query", "key", "value"), "attn_heads", q, k, v)


def _self_attention(
    p: dict[str, Any],
    x: jax.Array,
    config: ArchConfig,
    inv_freq: np.ndarray | None,
    block: int,
    constrain: Constrain,
    kind: str = "auto",
    einsum: Any = jnp.einsum,
    window: int = 0,
    chunk: int = 0,
) -> jax.Array:
    """RoPE GQA self-attention of ``x: [B, S, embed]``, causal (within ``window`` keys, or
    the query's ``chunk``, if given), blockwise (``kind``); the projections through
    ``einsum`` (:func:`.fp8.matmul`). ``inv_freq`` ``None``: a NoPE layer (Llama 4's every
    fourth)."""

    def project(w: str, b: str) -> jax.Array:
        y = einsum("bsd,dnk->bsnk", x, p[w])
        return head_norm(y + p[b] if config.qkv_bias else y, p, w, config)

    q, k = project("wq", "bq"), project("wk", "bk")
    if inv_freq is not None:
        q, k = apply_rope(q, inv_freq), apply_rope(k, inv_freq)
        if config.qk_l2_norm:  # Llama 4 Scout: after RoPE, with no learned scale
            q, k = (rms_norm(y, jnp.ones(()), config.norm_eps) for y in (q, k))
    elif config.nope_every:  # Llama 4's NoPE layers: the temperature grows with position
        q = q * _temperature(q.shape[1]).astype(q.dtype)
    if config.query_scale:  # the kernels scale by head_dim ** -0.5: the rest is done here
        q = q * jnp.asarray(config.query_scale * config.head_dim**0.5, q.dtype)
    v = project("wv", "bv")
    return _attention_out(p, q, k, v, block, constrain, kind, einsum, window, chunk)


def _temperature(seq: int) -> jax.Array:
    """Llama 4's query scale in its NoPE layers, ``[S, 1, 1]``: ``log(floor((p + 1) / 8192)
    + 1) x 0.1 + 1`` at position ``p`` (1 below position 8191)."""
    positions = jnp.arange(seq, dtype=jnp.float32)
    scale = jnp.log(jnp.floor((positions + 1.0) / 8192.0) + 1.0) * 0.1 + 1.0
    return scale[:, None, None]


def _attention_out(
    p: dict[str, Any],
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    block: int,
    constrain: Constrain,
    kind: str,
    einsum: Any,
    window: int = 0,
    chunk: int = 0,
) -> jax.Array:
    """Attention of the projected ``q``, ``k``, ``v``, then the output projection: each
    named as MaxText names them, for its remat vocabulary (:mod:`.remat`), and pinned."""
    q = constrain("query", checkpoint_name(q, "query_proj"))
    k = constrain("key", checkpoint_name(k, "key_proj"))
    v = constrain("value", checkpoint_name(v, "value_proj"))
    heads = checkpoint_name(_attend(q, k, v, block, kind, constrain, window, chunk), "context")
    heads = constrain("attn_heads", heads)
    out = checkpoint_name(einsum("bsnk,nkd->bsd", heads, p["wo"]), "out_proj")
    return constrain("attn_out", out)


def _latent_attention(
    p: dict[str, Any],
    x: jax.Array,
    config: ArchConfig,
    inv_freq: np.ndarray | None,
    block: int,
    constrain: Constrain,
    kind: str = "auto",
    einsum: Any = jnp.einsum,
    window: int = 0,
    chunk: int = 0,
) -> jax.Array:
    """DeepSeek-V3's multi-head latent attention of ``x: [B, S, embed]``, causal (within
    ``window`` keys, or the query's ``chunk``, if given).

    The query comes up from a normed low-rank latent (or from ``x`` directly); keys' no-RoPE
    part and values come up from one normed latent per token, and each key's RoPE part is
    one ``rope_head_dim`` vector per token shared by every head. Query and key heads are
    ``head_dim`` wide, value heads ``value_dim``. The latents are named as MaxText names
    them (``mla_q``, ``mla_kv``), for its remat vocabulary.
    """
    c = config
    assert inv_freq is not None  # MLA has no NoPE layers (ArchConfig refuses nope_every)
    eps, nope, latent = c.norm_eps, c.head_dim - c.rope_head_dim, c.kv_lora_rank
    if c.q_lora_rank:
        low_q = einsum("bsd,dr->bsr", x, p["wq_a"])
        low_q = checkpoint_name(rms_norm(low_q, p["q_a_norm"], eps), "mla_q")
        q = einsum("bsr,rnk->bsnk", low_q, p["wq_b"])
    else:
        q = einsum("bsd,dnk->bsnk", x, p["wq"])
    q = jnp.concatenate([q[..., :nope], apply_rope(q[..., nope:], inv_freq)], axis=-1)
    if c.yarn is not None:  # YaRN's temperature; the kernels scale by head_dim ** -0.5
        q = q * jnp.asarray(c.yarn.softmax_factor, q.dtype)
    low_kv = einsum("bsd,dr->bsr", x, p["wkv_a"])
    low_kv_main = checkpoint_name(rms_norm(low_kv[..., :latent], p["kv_a_norm"], eps), "mla_kv")
    k_rope = apply_rope(low_kv[..., None, latent:], inv_freq)  # [B, S, 1, rope]: every head's
    kv = einsum("bsr,rnk->bsnk", low_kv_main, p["wkv_b"])
    b, s, h = kv.shape[:3]
    k = jnp.concatenate(
        [kv[..., :nope], jnp.broadcast_to(k_rope, (b, s, h, c.rope_head_dim))], axis=-1
    )
    v = kv[..., nope:]
    return _attention_out(p, q, k, v, block, constrain, kind, einsum, window, chunk)


def _frequencies(config: ArchConfig, window: int) -> np.ndarray:
    """RoPE's inverse frequencies of a layer: a local layer's own base where the config
    gives one, unscaled; a global layer's base with its scaling. MLA ropes only each head's
    ``rope_head_dim`` dims."""
    if window and config.local_rope_theta:
        return rope_frequencies(config.head_dim, config.local_rope_theta)
    return rope_frequencies(
        config.rope_head_dim or config.head_dim,
        config.rope_theta,
        config.rope_scaling,
        config.rope_linear_factor,
        config.yarn,
    )


def _layer_fn(
    config: ArchConfig,
    options: DecoderOptions,
    seq: int,
    constrain: Constrain,
    window: int = 0,
    moe: bool | None = None,
    rope: bool = True,
):
    """The scan body ``(x, layer_params) -> (x, aux_loss)``, checkpointed per ``remat``;
    ``window``: the layer's sliding window (0: global). A local layer keeps its own RoPE base
    even when the window spans the sequence (then its attention is the causal mask alone).
    ``moe``: whether the layer's MLP is the mixture of experts (``None``: the config's);
    ``rope``: whether it applies RoPE (Llama 4's NoPE layers: no)."""
    moe = config.is_moe if moe is None else moe
    chunk = config.attention_chunk if rope and config.attention_chunk < seq else 0
    inv_freq = _frequencies(config, window) if rope else None
    window = window if window < seq else 0
    block = min(options.attention_block, seq)
    attention = options.attention
    group = min(options.moe_group, seq)
    eps = config.norm_eps

    stream = options.weights == "host"
    dtype = jnp.dtype(options.compute_dtype)
    einsum = matmul(options.quantization)

    def layer(x: jax.Array, p: dict[str, Any]) -> tuple[jax.Array, jax.Array]:
        if stream:  # this layer's master weights, from host memory, cast on the device
            p = jax.tree.map(lambda w: w.astype(dtype), to_device(p))
        x = checkpoint_name(x, LAYER_INPUT)
        h = constrain("attn_in", rms_norm(x, p["attn_norm"]["scale"], eps))
        attend = _latent_attention if config.latent else _self_attention
        a = attend(
            p["attn"], h, config, inv_freq, block, constrain, attention, einsum, window, chunk
        )
        if config.post_norms:
            a = rms_norm(a, p["attn_post_norm"]["scale"], eps)
        x = constrain("residual", x + a)
        h = constrain("mlp_in", rms_norm(x, p["mlp_norm"]["scale"], eps))
        if moe:
            y, aux = moe_mlp(
                p["moe"],
                h,
                top_k=config.experts_per_token,
                capacity_factor=options.capacity_factor,
                group=group,
                activation=config.activation,
                constrain=constrain,
                einsum=einsum,
                scores=config.router,
                scale=config.routed_scale,
                normalize=config.router_norm,
                dropless=options.moe == "dropless",
                quantization=options.quantization,
            )
        else:
            y = gated_mlp(p["mlp"], h, config.activation, constrain, einsum)
            aux = jnp.zeros(())
        if config.post_norms:
            y = rms_norm(y, p["mlp_post_norm"]["scale"], eps)
        return constrain("residual", x + y), aux.astype(jnp.float32)

    policy = remat_policy(options.remat)
    if options.remat == "none":
        return layer
    return jax.checkpoint(layer, policy=policy, prevent_cse=False)


def final_hidden(
    params: dict[str, Any],
    tokens: jax.Array,
    config: ArchConfig,
    options: DecoderOptions,
    constrain: Constrain = no_constraint,
) -> tuple[jax.Array, jax.Array]:
    """``tokens: int [B, S]`` -> (final-normed hidden ``[B, S, embed]``, per-layer MoE aux
    losses ``[layers]``), with ``params`` already in the compute dtype."""
    x = jnp.take(params["embed"]["embedding"], tokens, axis=0)
    if config.embed_scale:
        x = x * jnp.asarray(config.d_model**0.5, x.dtype)
    x = constrain("embedded", x)
    x, aux = _layers(x, params, config, options, tokens.shape[1], constrain)
    return constrain("final", rms_norm(x, params["final_norm"]["scale"], config.norm_eps)), aux


@dataclass(frozen=True)
class _Kind:
    """What sets a layer's computation apart: its MLP, its window, whether it ropes."""

    moe: bool
    window: int
    rope: bool


def _kind(config: ArchConfig, layer: int) -> _Kind:
    return _Kind(config.is_moe_layer(layer), config.window_of(layer), config.roped(layer))


def _layers(
    x: jax.Array,
    params: dict[str, Any],
    config: ArchConfig,
    options: DecoderOptions,
    seq: int,
    constrain: Constrain,
) -> tuple[jax.Array, jax.Array]:
    """Every layer over ``x``, from the stacks :mod:`.params` keeps (an MoE model's dense
    layers apart): its first ``dense_layers`` in a scan; then one scan when the rest are
    alike, else a scan over blocks of :attr:`~.configs.ArchConfig.period` layers (Gemma 3's
    5 local and 1 global, Llama 4's RoPE and NoPE, dense and MoE layers), each unrolled with
    its static kind, and the layers left over (62 = 10 x 6 + 2) after it."""
    stacks = {k: v for k, v in params.items() if k in _STACKS}
    first = config.dense_layers if config.is_moe else 0
    auxes = []
    if first:
        dense = _layer_fn(config, options, seq, constrain, moe=False)
        x, aux = jax.lax.scan(dense, x, _rows(stacks, "dense_layers", 0, first))
        auxes.append(aux)
    kinds = [_kind(config, i) for i in range(first, config.layers)]
    taken = {name: first if name == "dense_layers" else 0 for name in stacks}
    period = min(config.period, len(kinds))
    if all(k == kinds[0] for k in kinds):
        period = 1
    blocks = len(kinds) // period
    if period == 1:
        name = _stack_of(config, kinds[0])
        layer = _kind_fn(config, options, seq, constrain, kinds[0])
        x, aux = jax.lax.scan(layer, x, _rows(stacks, name, taken[name], None))
        return x, jnp.concatenate([*auxes, aux]) if auxes else aux
    x, aux = _block_scan(x, stacks, taken, kinds[:period], blocks, config, options, seq, constrain)
    auxes.append(aux)
    left = kinds[blocks * period :]
    if left and all(k == left[0] for k in left):
        name = _stack_of(config, left[0])
        layer = _kind_fn(config, options, seq, constrain, left[0])
        x, aux = jax.lax.scan(layer, x, _rows(stacks, name, taken[name], None))
        auxes.append(aux)
    else:
        for kind in left:  # mixed kinds: unrolled
            name = _stack_of(config, kind)
            p = jax.tree.map(lambda w, i=taken[name]: w[i], stacks[name])
            taken[name] += 1
            x, aux = _kind_fn(config, options, seq, constrain, kind)(x, p)
            auxes.append(aux[None])
    return x, jnp.concatenate(auxes)


def _block_scan(
    x: jax.Array,
    stacks: dict[str, Any],
    taken: dict[str, int],
    kinds: list[_Kind],
    blocks: int,
    config: ArchConfig,
    options: DecoderOptions,
    seq: int,
    constrain: Constrain,
) -> tuple[jax.Array, jax.Array]:
    """``blocks`` blocks of layers of ``kinds`` in one scan, each block's layers unrolled;
    the stacks' rows it reads are marked ``taken``."""
    names = [_stack_of(config, k) for k in kinds]
    per_block = {n: names.count(n) for n in dict.fromkeys(names)}
    xs = {}
    for n, count in per_block.items():
        rows = _rows(stacks, n, taken[n], taken[n] + blocks * count)
        xs[n] = jax.tree.map(lambda w, c=count: w.reshape(blocks, c, *w.shape[1:]), rows)
        taken[n] += blocks * count
    fns = [_kind_fn(config, options, seq, constrain, k) for k in kinds]

    def block(x: jax.Array, p: dict[str, Any]) -> tuple[jax.Array, jax.Array]:
        seen = dict.fromkeys(per_block, 0)
        auxes = []
        for n, fn in zip(names, fns, strict=True):
            x, aux = fn(x, jax.tree.map(lambda w, i=seen[n]: w[i], p[n]))
            seen[n] += 1
            auxes.append(aux)
        return x, jnp.stack(auxes)

    x, aux = jax.lax.scan(block, x, xs)
    return x, aux.reshape(blocks * len(kinds))


def _rows(stacks: dict[str, Any], name: str, start: int, stop: int | None) -> Any:
    """Layers ``start:stop`` of stack ``name`` (the stack itself when that is all of it)."""
    stack = stacks[name]
    size = jax.tree.leaves(stack)[0].shape[0]
    if start == 0 and stop in (None, size):
        return stack
    return jax.tree.map(lambda w: w[start:stop], stack)


def _stack_of(config: ArchConfig, kind: _Kind) -> str:
    """The stack a layer of ``kind`` keeps its parameters in."""
    return "dense_layers" if config.is_moe and not kind.moe else "layers"


def _kind_fn(
    config: ArchConfig, options: DecoderOptions, seq: int, constrain: Constrain, kind: _Kind
):
    return _layer_fn(config, options, seq, constrain, kind.window, kind.moe, kind.rope)


def decoder_loss(
    params: dict[str, Any],
    batch: dict[str, jax.Array],
    config: ArchConfig,
    options: DecoderOptions,
    constrain: Constrain = no_constraint,
) -> jax.Array:
    """Mean next-token cross-entropy (+ the weighted MoE load-balancing loss), float32.

    ``params`` are the float32 master weights; they are cast to ``options.compute_dtype``
    here, so the gradients come back in float32.
    """
    dtype = jnp.dtype(options.compute_dtype)
    if options.weights == "host":  # the layers are cast one at a time, once on the device
        stacks = {k: v for k, v in params.items() if k in _STACKS}
        rest = to_device({k: v for k, v in params.items() if k not in _STACKS})
        cast = jax.tree.map(lambda w: w.astype(dtype), rest) | stacks
    else:
        cast = jax.tree.map(lambda w: w.astype(dtype), params)
    hidden, aux = final_hidden(cast, batch["inputs"], config, options, constrain)
    unembed = cast["embed"]["embedding"].T if config.tied_embeddings else cast["unembed"]
    loss = chunked_cross_entropy(hidden, unembed, batch["targets"], options.loss_chunk, constrain)
    if config.is_moe and config.router_aux_loss_coef:  # the mean over the MoE layers
        loss = loss + config.router_aux_loss_coef * jnp.sum(aux) / config.moe_layers
    return loss
