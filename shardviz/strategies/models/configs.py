"""Published decoder-only LLM architectures: their dims, and their exact parameter counts.

Each :class:`ArchConfig` holds the values of the model's released ``config.json`` (Hugging Face
names in brackets where they differ): ``layers`` [num_hidden_layers], ``d_model``
[hidden_size], ``heads`` [num_attention_heads], ``kv_heads`` [num_key_value_heads],
``head_dim``, ``ffn`` [intermediate_size], ``vocab`` [vocab_size], ``experts``
[num_local_experts], ``experts_per_token`` [num_experts_per_tok]. :func:`param_count` counts
the parameters by formula, with no jax, and matches the published totals (see
``published_params``).

This module needs no jax: a planner can size models without importing it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from shardviz.errors import ShardvizError, problem
from shardviz.model.arguments import whole_number

__all__ = [
    "ARCH_NAMES",
    "CONFIGS",
    "ArchConfig",
    "Llama3RopeScaling",
    "YarnScaling",
    "attention_weights",
    "get_config",
    "layer_weights",
    "mlp_weights",
    "param_count",
]


@dataclass(frozen=True)
class Llama3RopeScaling:
    """Llama 3.1's RoPE frequency scaling (``rope_scaling`` with ``rope_type: "llama3"``).

    Wavelengths shorter than ``original_context / high_freq_factor`` are kept, longer than
    ``original_context / low_freq_factor`` divided by ``factor``, and blended in between.
    """

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_context: int = 8192


@dataclass(frozen=True)
class YarnScaling:
    """YaRN's RoPE scaling (Peng et al., 2023), as DeepSeek-V3 trains with it.

    Frequencies whose wavelength fits ``beta_fast`` or more rotations in the original
    context are kept, those with ``beta_slow`` or fewer are divided by ``factor``, and a
    linear ramp over the dims between (their bounds rounded outwards) blends the two. The
    softmax scale is multiplied by ``(0.1 * mscale * ln(factor) + 1) ** 2`` (MaxText's MLA).
    """

    factor: float = 40.0
    original_context: int = 4096
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    mscale: float = 1.0

    @property
    def softmax_factor(self) -> float:
        """The factor on the softmax scale: the attention temperature YaRN prescribes."""
        m = 0.1 * self.mscale * math.log(self.factor) + 1.0
        return m * m


#: The dims an ArchConfig holds (each a whole number: >= 0 for those that may be 0, else >= 1).
_DIM_NAMES = (
    "layers", "d_model", "heads", "kv_heads", "head_dim", "ffn", "vocab", "experts",
    "experts_per_token", "sliding_window", "global_every", "q_lora_rank", "kv_lora_rank",
    "rope_head_dim", "v_head_dim", "dense_layers", "dense_ffn", "shared_experts", "moe_every",
    "nope_every", "attention_chunk",
)  # fmt: skip

#: The dims that may be 0 (a dense MLP, attention with no window, no latent attention...).
MAY_BE_ZERO = (
    "experts", "experts_per_token", "sliding_window", "global_every", "q_lora_rank",
    "kv_lora_rank", "rope_head_dim", "v_head_dim", "dense_layers", "dense_ffn",
    "shared_experts", "nope_every", "attention_chunk",
)  # fmt: skip

#: How an MoE router turns logits into the scores it picks by (and weights outputs with).
ROUTER_SCORES = ("softmax", "sigmoid")


@dataclass(frozen=True)
class ArchConfig:
    """A decoder-only transformer's architecture: pre-norm RMSNorm, RoPE, GQA or multi-head
    latent attention, SwiGLU or MoE.

    Attributes:
      name: the zoo name, e.g. ``"llama3.1-8b"``.
      layers, d_model, heads, kv_heads, head_dim, ffn, vocab: the dims (``ffn`` is each
        expert's hidden size in an MoE model).
      experts: experts per MoE layer (0: a dense SwiGLU MLP).
      experts_per_token: experts each token is routed to (top-k).
      tied_embeddings: the output head is the token embedding transposed (no extra matrix).
      qkv_bias: the q, k and v projections have biases (Qwen2).
      qk_norm: each query and key head is RMS-normalised over its width before RoPE, with a
        learned scale of ``head_dim`` per layer for each (Qwen3, Gemma 3).
      norm_eps: RMSNorm's epsilon.
      activation: the gate activation of the gated MLP (``"silu"``: SwiGLU).
      rope_theta: RoPE's base.
      rope_scaling: Llama 3.1's frequency scaling, or ``None``.
      router_aux_loss_coef: weight of the load-balancing loss of MoE routing.
      sliding_window: keys each query of a local layer sees, itself included (0: every
        layer attends to the whole causal prefix).
      global_every: with a ``sliding_window``, every ``global_every``-th layer (the last of
        each run of that many) attends globally and the others locally (Gemma 3: 6, five
        local to one global); 0: every layer is local.
      post_norms: an RMSNorm also after attention and after the MLP, before each residual
        add (Gemma's "sandwich" norms: four per layer).
      embed_scale: the embedded tokens are multiplied by ``sqrt(d_model)`` (Gemma).
      query_scale: the factor on the query before attention (0: ``head_dim ** -0.5``;
        Gemma 3 27B: ``(d_model / heads) ** -0.5``).
      local_rope_theta: RoPE's base in the local layers (0: ``rope_theta``).
      rope_linear_factor: the global layers' positions divided by this (linear RoPE scaling).
      q_lora_rank, kv_lora_rank: multi-head latent attention (DeepSeek-V2/V3, MLA) when
        ``kv_lora_rank`` > 0: keys and values come up from a ``kv_lora_rank``-wide latent,
        the query from a ``q_lora_rank``-wide one (0: a full query projection). Then
        ``head_dim`` is the query/key width (no-RoPE part plus ``rope_head_dim``) and
        ``kv_heads`` equals ``heads``.
      rope_head_dim: MLA's decoupled RoPE dims of each query/key head (the key's shared by
        every head).
      v_head_dim: each value head's width (0: ``head_dim``; MLA's differs).
      yarn: YaRN's RoPE scaling, or ``None``.
      dense_layers: an MoE model's first layers with a dense MLP instead (DeepSeek-V3: 3).
      dense_ffn: those layers' MLP width (0: ``ffn``).
      shared_experts: experts every token goes through besides its routed ones (one gated
        MLP ``shared_experts * ffn`` wide, as MaxText builds it).
      router: ``"softmax"`` (Mixtral, Qwen3) or ``"sigmoid"`` scores (DeepSeek-V3: chosen
        with a bias that balances the load, weighted without it, renormalised).
      router_bias: the router has a per-expert bias used to choose, not to weight.
      routed_scale: the routed experts' weights multiplied by this (DeepSeek-V3: 2.5).
      router_norm: the chosen experts' weights renormalised to sum to 1 (DeepSeek-V2 keeps
        its softmax's own scores).
      moe_every: after the ``dense_layers``, every ``moe_every``-th layer is a mixture of
        experts and the others a dense MLP (Llama 4 Maverick: 2).
      nope_every: every ``nope_every``-th layer uses no RoPE (0: all do), attends to the
        whole causal prefix, and scales its query by Llama 4's temperature (``log(floor((p
        + 1) / 8192) + 1) x 0.1 + 1`` at position ``p``).
      attention_chunk: the RoPE layers attend within chunks of this many positions (Llama 4:
        8192; 0: no chunks).
      qk_l2_norm: each RoPE layer's query and key heads are RMS-normalised after RoPE with
        no learned scale (Llama 4 Scout).
      context: the published context length (the default training sequence is capped by it).
      published_params: the parameter count the authors publish; ``None`` once scaled.
      published_active: a mixture of experts' published active parameters per token
        (``None``: dense, or not published, or scaled).
      published_non_embedding: the published count without the token embedding (what
        Gemma 3's report gives for the text decoder), or ``None``.
      source: where the dims come from.
    """

    name: str
    layers: int
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    experts: int = 0
    experts_per_token: int = 0
    tied_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    norm_eps: float = 1e-5
    activation: str = "silu"
    rope_theta: float = 10_000.0
    rope_scaling: Llama3RopeScaling | None = None
    router_aux_loss_coef: float = 0.0
    sliding_window: int = 0
    global_every: int = 0
    post_norms: bool = False
    embed_scale: bool = False
    query_scale: float = 0.0
    local_rope_theta: float = 0.0
    rope_linear_factor: float = 1.0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    v_head_dim: int = 0
    yarn: YarnScaling | None = None
    dense_layers: int = 0
    dense_ffn: int = 0
    shared_experts: int = 0
    router: str = "softmax"
    router_bias: bool = False
    routed_scale: float = 1.0
    router_norm: bool = True
    moe_every: int = 1
    nope_every: int = 0
    attention_chunk: int = 0
    qk_l2_norm: bool = False
    context: int = 4096
    published_params: float | None = None
    published_active: float | None = None
    published_non_embedding: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        where = f"ArchConfig {self.name!r}"
        for key in _DIM_NAMES:  # numpy integers are taken, and kept as Python ints
            low = 0 if key in MAY_BE_ZERO else 1
            object.__setattr__(self, key, whole_number(where, key, getattr(self, key), low=low))
        if self.heads % self.kv_heads:
            raise ShardvizError(
                problem(
                    where,
                    f"heads={self.heads} does not divide by kv_heads={self.kv_heads}",
                    "pick kv_heads dividing heads (grouped-query attention shares each kv "
                    "head among heads / kv_heads query heads)",
                )
            )
        if self.head_dim % 2:
            raise ShardvizError(
                problem(where, f"head_dim={self.head_dim} is odd", "pick an even head_dim (RoPE)")
            )
        if (self.experts == 0) != (self.experts_per_token == 0) or (
            self.experts_per_token > self.experts
        ):
            raise ShardvizError(
                problem(
                    where,
                    f"experts={self.experts}, experts_per_token={self.experts_per_token} "
                    "do not fit together",
                    "give both as 0 (a dense MLP), or 1 <= experts_per_token <= experts",
                )
            )

        self._check_latent(where)
        self._check_moe_extras(where)
        if self.global_every and not self.sliding_window:
            raise ShardvizError(
                problem(
                    where,
                    f"global_every={self.global_every} without a sliding_window",
                    "give the local layers' sliding_window (Gemma 3: 1024), or global_every=0",
                )
            )

    def _check_latent(self, where: str) -> None:
        """MLA's dims fit together: kv heads are the heads, RoPE's part is even and inside
        the head; no MLA dims without a kv latent."""
        if not self.kv_lora_rank:
            if self.q_lora_rank or self.rope_head_dim:
                raise ShardvizError(
                    problem(
                        where,
                        "q_lora_rank or rope_head_dim without a kv_lora_rank",
                        "give kv_lora_rank > 0 for multi-head latent attention, or set "
                        "q_lora_rank and rope_head_dim to 0",
                    )
                )
            return
        bad = []
        if self.nope_every:
            bad.append(f"nope_every={self.nope_every} (MLA ropes its decoupled dims in every "
                       "layer)")  # fmt: skip
        if self.kv_heads != self.heads:
            bad.append(f"kv_heads={self.kv_heads} differs from heads={self.heads}")
        if not 0 < self.rope_head_dim < self.head_dim or self.rope_head_dim % 2:
            bad.append(f"rope_head_dim={self.rope_head_dim} is not even and below "
                       f"head_dim={self.head_dim}")  # fmt: skip
        if bad:
            raise ShardvizError(
                problem(
                    where,
                    "; ".join(bad),
                    "MLA gives every query head its own key and value head (kv_heads = "
                    "heads) and ropes an even part of each head (DeepSeek-V3: 64 of 192)",
                )
            )

    def _check_moe_extras(self, where: str) -> None:
        """Dense layers, shared experts and the router's kind need an MoE model."""
        extras = {k: getattr(self, k) for k in ("dense_layers", "dense_ffn", "shared_experts")}
        extras |= {"moe_every": self.moe_every} if self.moe_every > 1 else {}
        extras |= {"router_bias": self.router_bias} if self.router_bias else {}
        given = [f"{k}={v}" for k, v in extras.items() if v]
        if given and not self.is_moe:
            raise ShardvizError(
                problem(
                    where,
                    f"{', '.join(given)} without experts",
                    "give experts and experts_per_token, or drop these",
                )  # fmt: skip
            )
        if self.dense_layers >= self.layers and self.is_moe:
            raise ShardvizError(
                problem(
                    where,
                    f"dense_layers={self.dense_layers} leaves no MoE layer of {self.layers}",
                    "give dense_layers below layers",
                )  # fmt: skip
            )
        if self.router not in ROUTER_SCORES:
            raise ShardvizError(
                problem(
                    where,
                    f"router={self.router!r} is not a router score",
                    f"use one of {', '.join(map(repr, ROUTER_SCORES))}",
                )  # fmt: skip
            )

    @property
    def latent(self) -> bool:
        """Whether attention is multi-head latent attention (MLA)."""
        return self.kv_lora_rank > 0

    @property
    def value_dim(self) -> int:
        """Each value head's width."""
        return self.v_head_dim or self.head_dim

    def is_moe_layer(self, layer: int) -> bool:
        """Whether layer ``layer`` (0-based) has the mixture of experts."""
        after = layer - self.dense_layers
        return self.is_moe and after >= 0 and (after + 1) % self.moe_every == 0

    def roped(self, layer: int) -> bool:
        """Whether layer ``layer`` (0-based) applies RoPE (Llama 4's NoPE layers do not)."""
        return not (self.nope_every and (layer + 1) % self.nope_every == 0)

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (0 in a dense model)."""
        return sum(map(self.is_moe_layer, range(self.layers)))

    @property
    def period(self) -> int:
        """Layers after the ``dense_layers`` repeat their kinds (window, RoPE, MLP) every this
        many: 1 when all are alike."""
        return math.lcm(
            self.global_every if self.windowed and self.global_every else 1,
            self.moe_every if self.is_moe else 1,
            self.nope_every or 1,
        )

    @property
    def windowed(self) -> bool:
        """Whether some layers attend within a sliding window only."""
        return self.sliding_window > 0

    def window_of(self, layer: int) -> int:
        """The sliding window of layer ``layer`` (0-based): 0 for a global layer."""
        if not self.sliding_window:
            return 0
        if self.global_every and (layer + 1) % self.global_every == 0:
            return 0
        return self.sliding_window

    @property
    def is_moe(self) -> bool:
        """Whether the MLPs are mixtures of experts."""
        return self.experts > 0

    @property
    def q_per_kv(self) -> int:
        """Query heads that share one key/value head (1: multi-head attention)."""
        return self.heads // self.kv_heads

    def scaled(self, **changes: Any) -> ArchConfig:
        """The same architecture with some dims changed (e.g. for tests): same structure,
        ``published_params`` dropped.

        Raises:
          ShardvizError: a field ArchConfig does not have, or dims that do not fit together.
        """
        fields = {f.name for f in dataclasses.fields(self)} - {
            "name", "published_params", "published_active", "published_non_embedding",
        }  # fmt: skip
        unknown = sorted(set(changes) - fields)
        if unknown:
            raise ShardvizError(
                problem(
                    f"{self.name}.scaled",
                    f"unknown field(s) {', '.join(unknown)}",
                    f"change only {', '.join(sorted(fields))}",
                )
            )
        if not changes:
            return self
        return dataclasses.replace(
            self, **changes, published_params=None, published_active=None,
            published_non_embedding=None,
        )  # fmt: skip


def attention_weights(config: ArchConfig) -> int:
    """One layer's attention matmul weights: q, k, v and o (GQA's narrower k and v); with
    MLA, the query's down and up projections (or one full one), the kv latent's down
    projection (with the shared RoPE key), its up projection to keys and values, and o."""
    c = config
    d, out = c.d_model, c.heads * c.value_dim * c.d_model
    if c.latent:
        q_up = c.heads * c.head_dim
        q = (d + q_up) * c.q_lora_rank if c.q_lora_rank else d * q_up
        nope = c.head_dim - c.rope_head_dim
        kv = d * (c.kv_lora_rank + c.rope_head_dim)
        kv += c.kv_lora_rank * c.heads * (nope + c.value_dim)
        return q + kv + out
    return d * c.head_dim * (c.heads + 2 * c.kv_heads) + out


def mlp_weights(config: ArchConfig, moe: bool, active: bool = True) -> int:
    """One layer's MLP matmul weights: a dense layer's gated MLP; an MoE layer's router,
    shared experts and routed experts (``active``: the ``experts_per_token`` a token uses)."""
    c = config
    if not moe:
        return 3 * c.d_model * (c.dense_ffn or c.ffn)
    routed = c.experts_per_token if active else c.experts
    return 3 * c.d_model * c.ffn * (routed + c.shared_experts) + c.d_model * c.experts


def layer_weights(config: ArchConfig, active: bool = True) -> int:
    """Every layer's attention and MLP matmul weights together: dense layers' gated MLPs,
    MoE layers' experts (``active``: the ``experts_per_token`` a token uses)."""
    c = config
    dense = c.layers - c.moe_layers
    mlp = dense * mlp_weights(c, False) + c.moe_layers * mlp_weights(c, True, active=active)
    return c.layers * attention_weights(c) + mlp


def param_count(config: ArchConfig, active: bool = False) -> int:
    """Parameters of ``config``, counted by formula (no arrays, no jax).

    Token embedding, output head unless tied, per layer: the attention's matmul weights
    (:func:`attention_weights`, with biases where ``qkv_bias``, q and k norm scales where
    ``qk_norm``, MLA's two latent norm scales), the MLP's (:func:`mlp_weights`: a gated MLP,
    or an MoE layer's router, its bias, shared and routed experts), two RMSNorm scales (four
    with ``post_norms``); and the final RMSNorm. ``active``: what one token uses,
    ``experts_per_token`` of the routed experts (router and shared experts whole), as the
    field counts a mixture of experts' active parameters.
    """
    c = config
    per_layer = (4 if c.post_norms else 2) * c.d_model  # RMSNorm scales
    if c.qkv_bias:
        per_layer += (c.heads + 2 * c.kv_heads) * c.head_dim
    if c.qk_norm:
        per_layer += 2 * c.head_dim
    if c.latent:
        per_layer += c.q_lora_rank + c.kv_lora_rank
    layers = layer_weights(c, active) + c.layers * per_layer
    layers += c.moe_layers * (c.experts if c.router_bias else 0)
    embeddings = c.vocab * c.d_model * (1 if c.tied_embeddings else 2)
    return embeddings + layers + c.d_model  # + final RMSNorm


_LLAMA31_ROPE = Llama3RopeScaling()

#: The published architectures, by zoo name.
CONFIGS: dict[str, ArchConfig] = {
    c.name: c
    for c in (
        ArchConfig(
            "llama2-7b", layers=32, d_model=4096, heads=32, kv_heads=32, head_dim=128,
            ffn=11008, vocab=32000, context=4096, published_params=6.74e9,
            source="meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023, table 1",
        ),
        ArchConfig(
            "llama2-70b", layers=80, d_model=8192, heads=64, kv_heads=8, head_dim=128,
            ffn=28672, vocab=32000, context=4096, published_params=68.98e9,
            source="meta-llama/Llama-2-70b-hf config.json",
        ),
        ArchConfig(
            "llama3.1-8b", layers=32, d_model=4096, heads=32, kv_heads=8, head_dim=128,
            ffn=14336, vocab=128256, rope_theta=500_000.0, rope_scaling=_LLAMA31_ROPE,
            context=131072, published_params=8.03e9,
            source="meta-llama/Llama-3.1-8B config.json; Llama 3 Herd of Models, table 3",
        ),
        ArchConfig(
            "llama3.1-70b", layers=80, d_model=8192, heads=64, kv_heads=8, head_dim=128,
            ffn=28672, vocab=128256, rope_theta=500_000.0, rope_scaling=_LLAMA31_ROPE,
            context=131072, published_params=70.6e9,
            source="meta-llama/Llama-3.1-70B config.json",
        ),
        ArchConfig(
            "llama3.1-405b", layers=126, d_model=16384, heads=128, kv_heads=8, head_dim=128,
            ffn=53248, vocab=128256, rope_theta=500_000.0, rope_scaling=_LLAMA31_ROPE,
            context=131072, published_params=405.9e9,
            source="meta-llama/Llama-3.1-405B config.json",
        ),
        ArchConfig(
            "mixtral-8x7b", layers=32, d_model=4096, heads=32, kv_heads=8, head_dim=128,
            ffn=14336, vocab=32000, experts=8, experts_per_token=2, rope_theta=1_000_000.0,
            router_aux_loss_coef=0.02, context=32768, published_params=46.7e9,
            published_active=12.9e9,
            source="mistralai/Mixtral-8x7B-v0.1 config.json; Jiang et al. 2024 (46.7B, "
            "12.9B active)",
        ),
        ArchConfig(
            "mixtral-8x22b", layers=56, d_model=6144, heads=48, kv_heads=8, head_dim=128,
            ffn=16384, vocab=32768, experts=8, experts_per_token=2, rope_theta=1_000_000.0,
            router_aux_loss_coef=0.001, context=65536, published_params=141e9,
            published_active=39e9,
            source="MaxText configs/models/mixtral-8x22b.yml; mistralai/Mixtral-8x22B-v0.1 "
            "model card (141B parameters, 39B active)",
        ),
        ArchConfig(
            "mistral-7b", layers=32, d_model=4096, heads=32, kv_heads=8, head_dim=128,
            ffn=14336, vocab=32000, rope_theta=1_000_000.0, context=32768,
            published_params=7.24e9,
            source="MaxText configs/models/mistral-7b.yml; Jiang et al. 2023 (7.24B with "
            "the 32000-token vocabulary)",
        ),
        ArchConfig(
            "qwen3-8b", layers=36, d_model=4096, heads=32, kv_heads=8, head_dim=128,
            ffn=12288, vocab=151936, qk_norm=True, norm_eps=1e-6, rope_theta=1_000_000.0,
            context=32768, published_params=8.2e9,
            source="MaxText configs/models/qwen3-8b.yml; Qwen/Qwen3-8B model card (8.2B)",
        ),
        ArchConfig(
            "qwen3-235b-a22b", layers=94, d_model=4096, heads=64, kv_heads=4, head_dim=128,
            ffn=1536, vocab=151936, experts=128, experts_per_token=8, qk_norm=True,
            norm_eps=1e-6, rope_theta=5_000_000.0, router_aux_loss_coef=0.001, context=32768,
            published_params=235e9, published_active=22e9,
            source="MaxText configs/models/qwen3-235b-a22b.yml; Qwen/Qwen3-235B-A22B model "
            "card (235B parameters, 22B activated)",
        ),
        ArchConfig(
            "deepseek3-671b", layers=61, d_model=7168, heads=128, kv_heads=128, head_dim=192,
            ffn=2048, vocab=129280, experts=256, experts_per_token=8, q_lora_rank=1536,
            kv_lora_rank=512, rope_head_dim=64, v_head_dim=128, yarn=YarnScaling(),
            dense_layers=3, dense_ffn=18432, shared_experts=1, router="sigmoid",
            router_bias=True, routed_scale=2.5, norm_eps=1e-6, router_aux_loss_coef=1e-4,
            context=163840, published_params=671e9, published_active=37e9,
            source="MaxText configs/models/deepseek3-671b.yml; DeepSeek-V3 technical report "
            "(671B parameters, 37B activated; the multi-token prediction module not "
            "planned)",
        ),
        ArchConfig(
            "deepseek2-16b", layers=27, d_model=2048, heads=16, kv_heads=16, head_dim=192,
            ffn=1408, vocab=102400, experts=64, experts_per_token=6, kv_lora_rank=512,
            rope_head_dim=64, v_head_dim=128, yarn=YarnScaling(mscale=0.707), dense_layers=1,
            dense_ffn=10944, shared_experts=2, router_norm=False, norm_eps=1e-6,
            router_aux_loss_coef=1e-3,
            context=163840, published_params=15.7e9, published_active=2.4e9,
            source="MaxText configs/models/deepseek2-16b.yml (DeepSeek-V2-Lite: no query "
            "latent); DeepSeek-V2 report, appendix B (15.7B parameters, 2.4B activated)",
        ),
        ArchConfig(
            "llama4-scout", layers=48, d_model=5120, heads=40, kv_heads=8, head_dim=128,
            ffn=8192, vocab=202048, experts=16, experts_per_token=1, shared_experts=1,
            router="sigmoid", router_norm=False, nope_every=4, attention_chunk=8192,
            qk_l2_norm=True, rope_theta=500_000.0, rope_scaling=_LLAMA31_ROPE,
            context=262144, published_params=109e9, published_active=17e9,
            source="MaxText configs/models/llama4-17b-16e.yml; meta-llama/Llama-4-Scout-17B-"
            "16E model card (17B active, 109B total with the vision encoder, not planned)",
        ),
        ArchConfig(
            "llama4-maverick", layers=48, d_model=5120, heads=40, kv_heads=8, head_dim=128,
            ffn=8192, vocab=202048, experts=128, experts_per_token=1, shared_experts=1,
            moe_every=2, dense_ffn=16384, router="sigmoid", router_norm=False, nope_every=4,
            attention_chunk=8192, rope_theta=500_000.0, context=262144,
            published_params=400e9, published_active=17e9,
            source="MaxText configs/models/llama4-17b-128e.yml (every other layer MoE, RoPE "
            "unscaled); meta-llama/Llama-4-Maverick-17B-128E model card (17B active, 400B "
            "total with the vision encoder, not planned)",
        ),
        ArchConfig(
            "gemma3-12b", layers=48, d_model=3840, heads=16, kv_heads=8, head_dim=256,
            ffn=15360, vocab=262144, tied_embeddings=True, qk_norm=True, norm_eps=1e-6,
            activation="gelu", sliding_window=1024, global_every=6, post_norms=True,
            embed_scale=True, rope_theta=1_000_000.0, local_rope_theta=10_000.0,
            rope_linear_factor=8.0, context=131072, published_non_embedding=10_759e6,
            source="MaxText configs/models/gemma3-12b.yml; Gemma 3 technical report, table 1 "
            "(10,759M non-embedding parameters; the vision encoder is not planned)",
        ),
        ArchConfig(
            "gemma3-27b", layers=62, d_model=5376, heads=32, kv_heads=16, head_dim=128,
            ffn=21504, vocab=262144, tied_embeddings=True, qk_norm=True, norm_eps=1e-6,
            activation="gelu", sliding_window=1024, global_every=6, post_norms=True,
            embed_scale=True, query_scale=168**-0.5, rope_theta=1_000_000.0,
            local_rope_theta=10_000.0, rope_linear_factor=8.0, context=131072,
            published_non_embedding=25_600e6,
            source="MaxText configs/models/gemma3-27b.yml (query scaled by (5376 / 32) ** "
            "-0.5, as MaxText's gemma3 layer does); Gemma 3 technical report, table 1 "
            "(25,600M non-embedding parameters)",
        ),
        ArchConfig(
            "qwen2.5-7b", layers=28, d_model=3584, heads=28, kv_heads=4, head_dim=128,
            ffn=18944, vocab=152064, qkv_bias=True, norm_eps=1e-6, rope_theta=1_000_000.0,
            context=131072, published_params=7.61e9,
            source="Qwen/Qwen2.5-7B config.json and model card (7.61B, 6.53B non-embedding)",
        ),
    )
}  # fmt: skip

#: The published architectures' names, in the order they are shown.
ARCH_NAMES: tuple[str, ...] = tuple(CONFIGS)


def get_config(name: str) -> ArchConfig:
    """The published architecture ``name``.

    Raises:
      ShardvizError: no architecture has this name (the message lists them).
    """
    if name not in CONFIGS:
        raise ShardvizError(
            problem(
                "get_config",
                f"there is no published architecture {name!r}",
                f"use one of {', '.join(map(repr, ARCH_NAMES))}, or build an ArchConfig",
            )
        )
    return CONFIGS[name]
