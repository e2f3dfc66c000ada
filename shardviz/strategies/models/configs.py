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
from dataclasses import dataclass
from typing import Any

from shardviz.errors import ShardvizError, problem
from shardviz.model.arguments import whole_number

__all__ = [
    "ARCH_NAMES",
    "CONFIGS",
    "ArchConfig",
    "Llama3RopeScaling",
    "get_config",
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


#: The dims an ArchConfig holds (each a whole number: >= 0 for the experts', else >= 1).
_DIM_NAMES = (
    "layers", "d_model", "heads", "kv_heads", "head_dim", "ffn", "vocab", "experts",
    "experts_per_token", "sliding_window", "global_every",
)  # fmt: skip

#: The dims that may be 0 (a dense MLP, attention with no window).
_MAY_BE_ZERO = ("experts", "experts_per_token", "sliding_window", "global_every")


@dataclass(frozen=True)
class ArchConfig:
    """A decoder-only transformer's architecture: pre-norm RMSNorm, RoPE, GQA, SwiGLU or MoE.

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
    context: int = 4096
    published_params: float | None = None
    published_active: float | None = None
    published_non_embedding: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        where = f"ArchConfig {self.name!r}"
        for key in _DIM_NAMES:  # numpy integers are taken, and kept as Python ints
            low = 0 if key in _MAY_BE_ZERO else 1
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

        if self.global_every and not self.sliding_window:
            raise ShardvizError(
                problem(
                    where,
                    f"global_every={self.global_every} without a sliding_window",
                    "give the local layers' sliding_window (Gemma 3: 1024), or global_every=0",
                )
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


def param_count(config: ArchConfig, active: bool = False) -> int:
    """Parameters of ``config``, counted by formula (no arrays, no jax).

    Token embedding, output head unless tied, per layer: q/k/v/o projections (with GQA's
    smaller k and v, biases where ``qkv_bias``, q and k norm scales where ``qk_norm``), a
    SwiGLU MLP (gate, up, down) or ``experts`` of them plus the router, two RMSNorm scales
    (four with ``post_norms``); and the final RMSNorm. ``active``: what one token uses,
    ``experts_per_token`` of the experts (the router whole), as the field counts a mixture of
    experts' active parameters.
    """
    c = config
    d, q_width, kv_width = c.d_model, c.heads * c.head_dim, c.kv_heads * c.head_dim
    attention = d * q_width + 2 * d * kv_width + q_width * d
    if c.qkv_bias:
        attention += q_width + 2 * kv_width
    if c.qk_norm:
        attention += 2 * c.head_dim
    mlp = 3 * d * c.ffn
    if c.is_moe:
        used = c.experts_per_token if active else c.experts
        mlp = used * mlp + d * c.experts  # experts + router
    per_layer = attention + mlp + (4 if c.post_norms else 2) * d  # RMSNorm scales
    embeddings = c.vocab * d * (1 if c.tied_embeddings else 2)
    return embeddings + c.layers * per_layer + d  # + final RMSNorm


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
