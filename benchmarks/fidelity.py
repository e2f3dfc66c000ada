"""shardviz's figures for published training runs, against what those runs measured.

tpu-recipes (AI-Hypercomputer/tpu-recipes: each recipe's README prints MaxText's log line of a
measured step, TFLOP/s and tokens/s a device; Ironwood's in one table, per chip) and MaxText's
tiering table (docs/reference/models/tiering.md: MFU and tokens/s) publish measured runs. For
each run the zoo's model (same dims, sequence and per-device batch, remat as the recipe ran
it, the recipe's XLA flags this libtpu takes) is planned compile-only for the same slice with
``sv.compare(..., target=<topology>)`` and set against it:

- parameters vs the published count;
- model flops per device per step (shardviz's count of the compiled program's matmuls,
  recomputation once) vs MaxText's own formula (``training_flops``: 6 x weights x tokens +
  attention in full, x3);
- the MFU at MaxText's measured step (tokens per device per step / published tokens/s)
  vs the published MFU;
- the estimated lower bound and the predicted step vs the measured step;
- the compiler's HBM peak vs the chip's HBM;
- the plan's wall time vs a bare compile of the same lowered program.

Full-size compiles: minutes each on this 2-core machine, never run by the tests (which
compile the same code at reduced sizes).

    .venv/bin/python benchmarks/fidelity.py [--runs 8b,70b,mixtral] [--jobs N] [--fresh] [--write]

Each finished plan is kept on disk (``benchmarks/_plan_cache.py``: keyed by the run, shardviz's
code and the compiler's versions), so a rerun of unchanged runs reads them back; plans to
make run in worker processes, one per two cores unless ``--jobs`` says otherwise. Each run's
newest figures are also kept in git (``fidelity_figures.json``, written by every invocation),
so the table can be written again on a machine that has not made every plan: ``--reuse``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _common as C
import _plan_cache as PC

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
sys.path.insert(0, str(C.ROOT))

import shardviz as sv  # noqa: E402

sv.use_cpu_devices(8)

import shardviz.explainer.explain as explain_module  # noqa: E402
from shardviz.model.units import format_percent  # noqa: E402
from shardviz.strategies.models.configs import get_config, param_count  # noqa: E402
from shardviz.strategies.models.flops import training_flops  # noqa: E402


@dataclass(frozen=True)
class Run:
    """A published run: model, slice, sequence, per-device batch, remat, and what it measured."""

    key: str
    model: str
    topology: str
    seq: int
    batch_per_device: int
    remat: str
    strategy: str
    mfu: float
    tokens_per_second: float
    note: str = ""
    capacity_factor: float | None = None
    #: The layers' weight matmuls in fp8 (the recipe's ``quantization: fp8_full``).
    quantization: str = ""
    #: Where the measured step is published (tpu-recipes or MaxText, path in the repository).
    source: str = ""
    #: The strategy's mesh shape over the slice's devices (``None``: the strategy's default,
    #: every device on its one axis): Maverick's ici_fsdp 32 x ici_tensor 4.
    mesh: tuple[int, ...] | None = None
    #: How the MoE layers compute (``DecoderOptions.moe``; ``""``: the default, capacity):
    #: ``"dropless"`` where the recipe ran megablox (``sparse_matmul``, ``megablox``).
    moe: str = ""
    #: Whether the run's published TFLOP/s count causal attention's matmuls at half: the
    #: MaxText the recipe names does where its TFLOP/s over its tokens/s is the formula with
    #: attention halved (Ironwood's table, the v5p Scout and DeepSeek logs, Gemma 3's);
    #: the earlier Trillium and v5p recipes' MaxText counts them in full.
    causal_half: bool = False
    #: The recipe's attention block (``sa_block_q``/``sa_block_kv``), where it names one.
    attention_block: int | None = None
    #: The master weights' dtype (MaxText's ``weight_dtype``; its default float32), and so
    #: the optimizer state's and the gradients'.
    weight_dtype: str = "float32"
    #: Adam's first moment's dtype where the recipe sets one (MaxText's ``mu_dtype``): the
    #: Ironwood recipes of Llama 3.1 and DeepSeek-V3 keep it in bfloat16. ``"float32"``: not
    #: set, the moment in the weights' dtype (MaxText's default and optax's).
    mu_dtype: str = "float32"

    @property
    def step_seconds(self) -> float:
        return self.batch_per_device * self.seq / self.tokens_per_second


#: The recipes' remat, tensor by tensor (tpu-recipes, training/trillium/Llama3.1-8B-MaxText/
#: v6e-256/README.md and Llama3.1-70B-MaxText/v6e-256/README.md, "Workload Details").
RECIPE_8B = sv.custom_remat(
    decoder_layer_input="offload", query_proj="offload", key_proj="offload",
    value_proj="offload", out_proj="offload",
)  # fmt: skip
RECIPE_70B = sv.custom_remat(
    decoder_layer_input="offload", query_proj="offload", key_proj="offload",
    value_proj="offload",
)  # fmt: skip

RECIPE_70B_7X = sv.custom_remat(
    decoder_layer_input="device", context="device", query_proj="device", key_proj="device",
    value_proj="device",
)  # fmt: skip
#: tpu-recipes, training/trillium/Llama2-70B-MaxText: MaxText's ``qkv_proj_offloaded``.
RECIPE_QKV_OFFLOADED = sv.custom_remat(
    query_proj="offload", key_proj="offload", value_proj="offload"
)
#: tpu-recipes, training/v5p/Llama3.1-405B-MaxText.
RECIPE_405B_V5P = sv.custom_remat(context="offload", mlpwo="offload")
#: tpu-recipes, training/ironwood/llama3.1-405b (bf16 and fp8_full).
RECIPE_405B_7X = sv.custom_remat(
    decoder_layer_input="offload", mlpwo="offload", key_proj="device", value_proj="device",
)  # fmt: skip
RECIPE_405B_7X_FP8 = sv.custom_remat(decoder_layer_input="offload")

#: tpu-recipes, training/v5p/Llama4-Scout-17B-16E-Maxtext and training/ironwood/deepseek3-671b.
RECIPE_LAYER_INPUT = sv.custom_remat(decoder_layer_input="offload")
#: tpu-recipes, training/v5p/DeepSeek3-671B-MaxText (MaxText's deepseek3_671b_v5p_1024).
RECIPE_DEEPSEEK_V5P = sv.custom_remat(decoder_layer_input="offload", out_proj="offload")
#: tpu-recipes, training/trillium/Gemma3-12B-MaxText (the layer input kept, q, k, v recomputed).
RECIPE_GEMMA3 = sv.custom_remat(decoder_layer_input="device")

#: MaxText's default logical rules with tensor parallelism (base.yml: activation_embed ->
#: tensor): fsdp+tp with the activations' embed dim, the residual stream between layers, split
#: over 'tensor' too, which shardviz's fsdp+tp keeps whole.
MAXTEXT_TP = "fsdp+tp, MaxText's activation rules"

#: MaxText's ``fsdp_shard_on_exp`` (the DeepSeek-V3 Ironwood recipes): fsdp with the routed
#: experts split on their own dim over 'fsdp' (256 experts, one a device), their width
#: whole, so a layer's experts are gathered, and their gradients reduce-scattered, along the
#: expert dim, the major one, with no transposing copy of either.
EXPERTS_ON_FSDP = "fsdp, the experts split over fsdp (MaxText's fsdp_shard_on_exp)"
_ON_EXP = "fsdp_shard_on_exp: the experts' own dim split over fsdp; Adam's mu in bf16"

_TRILLIUM = "tpu-recipes training/trillium/"
_V5P = "tpu-recipes training/v5p/"
_DROPLESS = "dropless, megablox's grouped matmuls as the recipe ran them"
_DROPLESS_FP8 = (
    "dropless, tokamax's grouped matmuls in fp8 (qwix's tiles; MaxText's use_tokamax_gmm), "
    "forward and both gradients"
)
_IRONWOOD = "tpu-recipes training/ironwood/README.md"


_SLICES = r"^\d+x(?=[a-z])"  # "2xv6e": two v6e slices


def chip_of(run: Run) -> str:
    """The run's chip, as ``sv.hardware`` names it (``"v6e"`` for ``2xv6e:16x16``)."""
    return re.sub(_SLICES, "", run.topology.split(":")[0])


def _recipe(
    chip: str,
    key: str,
    model: str,
    shape: str,
    seq: int,
    batch: int,
    remat: str,
    tflops: float,
    tokens: float,
    source: str,
    note: str = "",
    strategy: str = "fsdp",
    **more: Any,
) -> Run:
    """A published run as its recipe prints it: TFLOP/s and tokens/s a chip (its MFU: that
    TFLOP/s over the chip's bf16 peak, whatever the precision; tokens per jax device: a
    TPU7x chip is two)."""
    hw = sv.hardware(re.sub(_SLICES, "", chip))
    more.setdefault("causal_half", chip == "tpu7x")
    return Run(key, model, f"{chip}:{shape}", seq, batch, remat, strategy,
               tflops * 1e12 / hw.peak_flops_bf16, tokens / hw.devices_per_chip, note,
               source=source, **more)  # fmt: skip


_GEMMA3 = (
    "the layer input kept, the rest recomputed; 5 of 6 layers attend within 1,024 "
    "positions, the kernels over the window's band of blocks (the recipe: splash "
    "attention's sliding-window mask, its block sizes per kernel)"
)
_8B = "the recipe's custom remat: layer input and q, k, v and output projections offloaded"
_70B = "the recipe's custom remat: layer input and q, k, v projections offloaded"
_7X = "the recipe keeps the layer input and q, k, v and attention context on the device"

RUNS: tuple[Run, ...] = (
    _recipe("v6e", "8b", "llama3.1-8b", "16x16", 8192, 4, RECIPE_8B, 417.397, 7207.336,
            _TRILLIUM + "Llama3.1-8B-MaxText/v6e-256/README.md", _8B),
    _recipe("v6e", "70b", "llama3.1-70b", "16x16", 8192, 5, RECIPE_70B, 462.297, 960.248,
            _TRILLIUM + "Llama3.1-70B-MaxText/v6e-256/README.md", _70B),
    Run("mixtral", "mixtral-8x7b", "v5p:8x4x4", 4096, 8, "full", "fsdp", 0.5256, 2909,
        "per-device batch assumed 8 (the table gives MFU and tokens/s; the MFU at the "
        "measured step does not depend on it); dropless, megablox as MaxText's base.yml "
        "runs an MoE by default (sparse_matmul, megablox, capacity_factor -1)",
        moe="dropless", source="MaxText docs/reference/models/tiering.md"),
    # Ironwood: 64 chips (4x4x4), 128 jax devices, per-device batch 2, SL 8192.
    _recipe("tpu7x", "70b-7x", "llama3.1-70b", "4x4x4", 8192, 2, RECIPE_70B_7X, 1207.05,
            2686.98, _IRONWOOD, "bf16; " + _7X, mu_dtype="bfloat16"),
    _recipe("tpu7x", "70b-7x-fp8", "llama3.1-70b", "4x4x4", 8192, 2, RECIPE_70B_7X, 1854.19,
            4127.56, _IRONWOOD, "fp8_full: the weight matmuls in fp8 at the fp8 peak",
            quantization="fp8", mu_dtype="bfloat16"),
    # The same recipes on the smaller slices they publish.
    *(
        _recipe("v6e", f"8b-{chips}", "llama3.1-8b", shape, 8192, batch, RECIPE_8B, tf, tok,
                _TRILLIUM + f"Llama3.1-8B-MaxText/v6e-{chips}/README.md", _8B)
        for chips, shape, batch, tf, tok in (
            (8, "2x4", 3, 413.433, 7138.89), (16, "4x4", 3, 419.485, 7243.378),
            (32, "4x8", 3, 407.225, 7031.689), (64, "8x8", 5, 419.701, 7247.111),
            (128, "8x16", 4, 412.319, 7119.648),
        )
    ),
    *(
        _recipe("v6e", f"70b-{chips}", "llama3.1-70b", shape, 8192, batch, RECIPE_70B, tf, tok,
                _TRILLIUM + f"Llama3.1-70B-MaxText/v6e-{chips}/README.md", _70B + words,
                weight_dtype=dtype)
        for chips, shape, batch, tf, tok, dtype, words in (
            (32, "4x8", 2, 443.385, 920.965, "bfloat16", "; weights in bf16 (weight_dtype)"),
            (64, "8x8", 2, 422.091, 876.736, "float32", ""),
            (128, "8x16", 4, 453.5, 941.976, "float32", ""),
        )
    ),
    _recipe("v6e", "mistral-7b", "mistral-7b", "2x4", 8192, 6, RECIPE_8B, 431.981, 7776.813,
            _TRILLIUM + "Mistral-7B-MaxText/README.md", _8B),
    _recipe("v6e", "mixtral-v6e", "mixtral-8x7b", "16x16", 4096, 12, RECIPE_8B, 302.311,
            3645.203, _TRILLIUM + "Mixtral-8x7B-MaxText/README.md",
            "dropped at capacity factor 1.25; " + _8B, capacity_factor=1.25),
    _recipe("v6e", "llama2-70b", "llama2-70b", "16x16", 4096, 2, RECIPE_QKV_OFFLOADED, 402.274,
            905.021, _TRILLIUM + "Llama2-70B-MaxText/README.md",
            "per-device batch 2, as the log line's total_weights (2,097,152 = 256 x 2 x 4096) "
            "and tokens/s say (the config printed beside it says 3); MaxText's "
            "qkv_proj_offloaded; the recipe's mesh axis is fsdp_transpose, planned as fsdp"),
    _recipe("v5p", "405b-v5p", "llama3.1-405b", "8x8x8", 8192, 2, RECIPE_405B_V5P, 314.53,
            124.618, "tpu-recipes training/v5p/Llama3.1-405B-MaxText/README.md",
            "the recipe's custom remat: attention context and MLP output offloaded",
            causal_half=True),
    # Today's MoE architectures: the recipes ran megablox (dropless), and so do the plans.
    _recipe("v5p", "maverick-v5p", "llama4-maverick", "4x4x8", 8192, 4, RECIPE_8B, 160.005,
            1321.725, _V5P + "Llama4-Maverick-17B-128E-Maxtext/README.md",
            _DROPLESS + "; " + _8B + "; fsdp 32 x tensor 4, the activations' embed dim split "
            "over tensor as MaxText's rules do", moe="dropless", strategy=MAXTEXT_TP,
            mesh=(32, 4)),
    _recipe("v5p", "scout-v5p", "llama4-scout", "8x8x8", 8192, 8, RECIPE_LAYER_INPUT, 225.491,
            2070.487, _V5P + "Llama4-Scout-17B-16E-Maxtext/README.md",
            _DROPLESS + "; the layer input offloaded; 512 devices, as the log's "
            "total_weights (33,554,432 = 512 x 8 x 8192) says", moe="dropless",
            causal_half=True),
    _recipe("v5p", "deepseek-v5p", "deepseek3-671b", "8x8x8", 8192, 6, RECIPE_DEEPSEEK_V5P,
            152.415, 542.108, _V5P + "DeepSeek3-671B-MaxText/README.md",
            _DROPLESS + "; the layer input and output projection offloaded",
            moe="dropless", causal_half=True),
    _recipe("tpu7x", "deepseek-7x", "deepseek3-671b", "4x4x8", 4096, 8, RECIPE_LAYER_INPUT,
            607.53, 2425.75, _IRONWOOD, "bf16; " + _DROPLESS + "; the layer input offloaded; "
            + _ON_EXP, moe="dropless", strategy=EXPERTS_ON_FSDP, mu_dtype="bfloat16"),
    _recipe("tpu7x", "deepseek-7x-fp8", "deepseek3-671b", "4x4x8", 4096, 8, RECIPE_LAYER_INPUT,
            730.60, 2917.15, _IRONWOOD, "fp8_full; " + _DROPLESS_FP8 + "; the layer input "
            "offloaded; " + _ON_EXP, moe="dropless", quantization="fp8",
            strategy=EXPERTS_ON_FSDP, mu_dtype="bfloat16"),
    # Gemma 3 12B at SL 32768 on one, two and four v6e-256 slices (MaxText's num_slices:
    # the slices data parallel over the data-centre network, FSDP within each).
    *(
        _recipe(chip, key, "gemma3-12b", "16x16", 32768, 1, RECIPE_GEMMA3, tf, tok,
                _TRILLIUM + f"Gemma3-12B-MaxText/{where}/README.md", note, strategy=strategy,
                mesh=mesh, causal_half=True, attention_block=1024)
        for chip, key, where, tf, tok, strategy, mesh, note in (
            ("v6e", "gemma3-12b", "v6e-256", 349.442, 4477.768, "fsdp", None, _GEMMA3),
            ("2xv6e", "gemma3-12b-2x", "2x-v6e-256", 328.139, 4204.799, "dp+fsdp", (2, 256),
             _GEMMA3 + "; 2 slices, data parallel over DCN"),
            ("4xv6e", "gemma3-12b-4x", "4x-v6e-256", 304.788, 3905.572, "dp+fsdp", (4, 256),
             _GEMMA3 + "; 4 slices, data parallel over DCN"),
        )
    ),
    # Llama 3.1 405B on two v6e-256 slices, FSDP over all 512 chips (ici_fsdp 256 x dcn_fsdp 2:
    # one axis, the slices outermost), and Mixtral 8x22B dropped at 1.25 on one.
    _recipe("2xv6e", "405b-v6e", "llama3.1-405b", "16x16", 8192, 1, RECIPE_LAYER_INPUT,
            392.454, 149.482, _TRILLIUM + "Llama3.1-405B-MaxText/README.md",
            "the layer input offloaded; FSDP over both slices (dcn_fsdp 2), the weights "
            "gathered over the data-centre network too"),
    _recipe("v6e", "mixtral-8x22b", "mixtral-8x22b", "16x16", 4096, 8, RECIPE_8B, 332.463,
            1326.307, _TRILLIUM + "Mixtral-8x22B-MaxText/README.md",
            "dropped at capacity factor 1.25; fsdp 64 x expert 4 (the recipe's "
            "hybrid_ring_64x4 mesh); " + _8B + "; its config as MaxText added it (commit "
            "449b4fe5, benchmarks/maxtext_trillium_model_configs.py), weights in bf16 "
            "(weight_dtype); every weight but the experts' split over fsdp and expert, the "
            "experts' width over fsdp (MaxText's embed and embed_no_exp rules)", strategy="ep",
            mesh=(64, 4), capacity_factor=1.25, weight_dtype="bfloat16"),
    # Qwen3-235B-A22B on 256 Ironwood chips: dropless (sparse_matmul with tokamax's grouped
    # matmul; in bf16 planned with megablox's, which tokamax's TPU kernel derives from),
    # random routing (balanced), FSDP over all 512 devices.
    *(
        _recipe("tpu7x", key, "qwen3-235b-a22b", "4x8x8", 4096, 16, RECIPE_LAYER_INPUT, tf, tok,
                _IRONWOOD, note + "; the layer input offloaded", moe="dropless", **more)
        for key, tf, tok, note, more in (
            ("qwen3-7x", 629.79, 4245.89, "bf16; " + _DROPLESS, {}),
            ("qwen3-7x-fp8", 702.60, 4736.72, "fp8_full; " + _DROPLESS_FP8,
             {"quantization": "fp8"}),
        )
    ),
    # Ironwood, 256 chips (4x8x8), 512 jax devices.
    _recipe("tpu7x", "70b-7x-256", "llama3.1-70b", "4x8x8", 8192, 2, RECIPE_70B_7X, 1199.67,
            2670.55, _IRONWOOD, "bf16; " + _7X, mu_dtype="bfloat16"),
    _recipe("tpu7x", "70b-7x-256-fp8", "llama3.1-70b", "4x8x8", 8192, 2, RECIPE_70B_7X,
            1851.25, 4121.02, _IRONWOOD, "fp8_full; " + _7X, quantization="fp8",
            mu_dtype="bfloat16"),
    _recipe("tpu7x", "405b-7x", "llama3.1-405b", "4x8x8", 8192, 3, RECIPE_405B_7X, 1261.40,
            499.77, _IRONWOOD, "bf16; the layer input and MLP output offloaded, k and v kept",
            mu_dtype="bfloat16"),
    _recipe("tpu7x", "405b-7x-fp8", "llama3.1-405b", "4x8x8", 8192, 3, RECIPE_405B_7X_FP8,
            1927.15, 763.54, _IRONWOOD, "fp8_full; the layer input offloaded",
            quantization="fp8", mu_dtype="bfloat16"),
)  # fmt: skip


RUN_BY_KEY = {r.key: r for r in RUNS}

#: Runs this jax's TPU compiler cannot compile (libtpu 0.0.42.1 crashes, SIGSEGV in its
#: convolution emitter, on both Qwen3 Ironwood steps), planned by the current-jax leg's
#: (``make test-current``'s ``.venv-current``: ``.venv-current/bin/python
#: benchmarks/fidelity.py --runs qwen3-7x``) and taken into the table from the figures kept in
#: git, the row naming the compiler that planned them.
OTHER_COMPILER = frozenset({"qwen3-7x", "qwen3-7x-fp8"})

#: Each run's XLA flags, as its recipe starts libtpu (``benchmarks/recipe_flags.json``).
RECIPE_FLAGS: dict[str, list[str]] = json.loads((C.BENCH_DIR / "recipe_flags.json").read_text())[
    "runs"
]


def sorted_flags(run: Run) -> tuple[tuple, tuple]:
    """(the run's flags this libtpu takes, the ones it does not): each tried on a small
    program for the run's topology (``sv.known_flags``)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    devices = sv.topology(run.topology).devices
    mesh = jax.sharding.Mesh(np.array(devices), ("d",))
    spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
    x = jax.ShapeDtypeStruct((8 * len(devices), 128), jnp.bfloat16, sharding=spec)
    lowered = jax.jit(lambda a: (a * 2).sum()).lower(x)
    return sv.known_flags(RECIPE_FLAGS.get(run.key, []), lowered)


def plan(run: Run, baseline: bool = True) -> dict:
    """Compile the run's step for its slice, timing the compiler's own part of it
    (``"compile"``: what the plan would take if shardviz added nothing); the compiled
    program is kept for a bare recompile of the same lowered module, done unless
    ``baseline`` is false (then ``"bare"`` is ``None``: half the time per run)."""
    import jax

    kept: dict = {}
    real, real_compile = explain_module.program_cost, jax.stages.Lowered.compile
    compiling: list[float] = []

    def keep(comp, *a):
        kept["comp"] = comp
        return real(comp, *a)

    def timed_compile(lowered, *a, **k):
        t = time.perf_counter()
        try:
            return real_compile(lowered, *a, **k)
        finally:
            compiling.append(time.perf_counter() - t)

    known, unknown = sorted_flags(run)
    explain_module.program_cost = keep
    jax.stages.Lowered.compile = timed_compile  # type: ignore[method-assign,assignment]
    try:
        t0 = time.perf_counter()
        extra = plan_options(run)
        with sv.xla_flags(dict(known)):
            c = sv.compare(
                run.model, [_strategy(run)], target=run.topology,
                batch_per_device=run.batch_per_device, seq=run.seq, remat=run.remat, **extra,
            )  # fmt: skip
        wall = time.perf_counter() - t0
    finally:
        explain_module.program_cost = real
        jax.stages.Lowered.compile = real_compile  # type: ignore[method-assign]
    bare = None
    if baseline:
        t0 = time.perf_counter()
        kept["comp"].lowered.compile(compiler_options=dict(known))
        bare = time.perf_counter() - t0
    return {
        "comparison": c, "wall": wall, "compile": sum(compiling), "bare": bare,
        "flags": (known, unknown),
    }  # fmt: skip


def plan_options(run: Run) -> dict[str, Any]:
    """The options ``compare`` takes for the run beside its model, slice and sizes."""
    extra: dict[str, Any] = {}
    if run.capacity_factor is not None:
        extra["capacity_factor"] = run.capacity_factor
    if run.quantization:
        extra["quantization"] = run.quantization
    if run.moe:
        extra["moe"] = run.moe
    if run.attention_block:
        extra["attention_block"] = run.attention_block
    if run.weight_dtype != "float32":
        extra["dtype"] = run.weight_dtype
    if run.mu_dtype != "float32":  # Adam's first moment narrower (the default: adam(1e-3))
        import optax

        extra["optimizer"] = optax.adam(1e-3, mu_dtype=run.mu_dtype)
    if run.mesh is not None:
        extra["mesh"] = _mesh(run)
    return extra


def _strategy(run: Run) -> Any:
    """The run's strategy: a built-in name, MaxText's tensor-parallel rules, or its
    experts-on-fsdp ones."""
    if run.strategy not in (MAXTEXT_TP, EXPERTS_ON_FSDP):
        return run.strategy
    from shardviz.strategies.rules.logical import STRATEGY_RULES, LogicalRules, logical_rule_set
    from shardviz.strategies.zoo import get_model

    if run.strategy == MAXTEXT_TP:
        base = STRATEGY_RULES["fsdp+tp"]
        activations = tuple((n, ("tensor",) if n == "embed" else a) for n, a in base.activations)
        rules = LogicalRules(MAXTEXT_TP, base.mesh_axes, base.params, activations)
    else:
        base = STRATEGY_RULES["fsdp"]
        split = {"expert": ("fsdp",), "embed_no_exp": ()}
        params = tuple((n, split.get(n, a)) for n, a in base.params)
        rules = LogicalRules(EXPERTS_ON_FSDP, base.mesh_axes, params, base.activations)
    return logical_rule_set(rules, get_model(run.model))


def _mesh(run: Run):
    """The run's mesh: its slice's devices in the strategy's mesh axes, shaped ``run.mesh``."""
    import numpy as np
    from jax.sharding import Mesh

    from shardviz.strategies.models import get_logical_rules

    devices = np.array(sv.topology(run.topology).devices).reshape(run.mesh)
    name = {MAXTEXT_TP: "fsdp+tp", EXPERTS_ON_FSDP: "fsdp"}.get(run.strategy, run.strategy)
    return Mesh(devices, get_logical_rules(name).mesh_axes)


def plan_fields(run: Run) -> dict:
    """What defines the run's plan (its cache key): every field but the words about it."""
    fields = dataclasses.asdict(run)
    del fields["note"], fields["source"]
    for name in ("weight_dtype", "mu_dtype"):  # the defaults: the keys of plans made before
        if fields[name] == "float32":
            del fields[name]
    return fields | {"xla_flags": RECIPE_FLAGS.get(run.key, [])}


def measure(key: str, baseline: bool = True) -> dict:
    """The run planned: its figures, how long the plan took, the flags it took, and the
    compiled program's report as JSON (a worker process's result, cached on disk), from
    which :func:`current` works the figures out again with later code."""
    run = RUN_BY_KEY[key]
    p = plan(run, baseline)
    r = p["comparison"].results[0].report
    return {
        **figures(run, r),
        "wall": p["wall"],
        "bare": p["bare"],
        "compile": p["compile"],
        "flags_applied": len(p["flags"][0]),
        "flags_unknown": [name for name, _ in p["flags"][1]],
        "report": r.to_json(),
    }


def current(run: Run, entry: dict, version: str) -> dict:
    """``entry``'s figures, worked out again from its report by today's estimate and today's
    chip figures where it was planned at other code than ``version`` (its own figures where
    it kept no report: entries made before reports were kept)."""
    kept = {k: v for k, v in entry.items() if k != "report"}
    if not isinstance(entry.get("report"), str) or entry.get("version") == version:
        return kept
    return kept | figures(run, restored(entry)) | {"estimated_again": True}


#: Each run's newest figures, without its report, kept in git. A plan's report (about 2 MB
#: gzipped) stays in the disk cache of the machine that made it, and the whole table is hours
#: of plans; a table written on another machine (``--reuse``) takes the figures of a run it
#: has nothing of from here, as they were estimated where it was planned.
FIGURES = C.BENCH_DIR / "fidelity_figures.json"


def read_figures(path: Path = FIGURES) -> dict[str, dict]:
    """The figures git keeps, by run key (none kept: empty)."""
    return json.loads(path.read_text()) if path.exists() else {}


def from_git(chosen: list[Run], kept: dict[str, dict], folder: Path = PC.FOLDER) -> dict[str, dict]:
    """The kept figures of each run of ``chosen`` that this disk knows nothing of, where they
    are of the run as it is defined now (the same fields, at the same compiler)."""
    version, here = PC.code_version(), PC.compiler_versions()
    out = {}
    for run in chosen:
        fields, entry = plan_fields(run), kept.get(run.key)
        if entry is None:
            continue
        at = entry.get("versions", here)
        of_this_run = entry["run_key"] == PC.run_key(fields, at)
        if at != here:  # planned by another compiler: only where this one cannot plan it
            if of_this_run and run.key in OTHER_COMPILER:
                out[run.key] = entry | {"kept_in_git": True}
        elif of_this_run and not PC.on_disk(fields, version, folder):
            out[run.key] = entry | {"kept_in_git": True}
    return out


def updated_figures(
    kept: dict[str, dict], chosen: list[Run], results: list[dict], estimated_at: str
) -> dict[str, dict]:
    """``kept`` with each run's result worked out here (planned, or read from this disk) in
    place of its entry, which says the commit that estimated it; a run with nothing here
    keeps its entry."""
    out, here = dict(kept), PC.compiler_versions()
    for run, m in zip(chosen, results, strict=True):
        if m.get("kept_in_git") or m.get("error") == PC.NOT_PLANNED:
            continue
        entry = {k: v for k, v in m.items() if k not in ("report", "version", "estimated_again")}
        entry["run_key"] = PC.run_key(plan_fields(run), here)
        entry["versions"] = here
        if "error" not in m:
            entry["estimated_at"] = estimated_at if m.get("estimated_again") else m.get("commit")
        out[run.key] = entry
    return dict(sorted(out.items()))


def write_figures(kept: dict[str, dict], path: Path = FIGURES) -> None:
    """Keep ``kept`` in git's file: one run a line block, sorted, so a diff shows what moved."""
    path.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")


def disagreeing(readme: str, kept: dict[str, dict]) -> list[str]:
    """The runs whose row in ``readme``'s table was planned at the commit their figures kept
    in git were, yet shows other figures (the cell saying what estimated them aside)."""
    table = readme.split("<!-- fidelity:begin -->")[1].split("<!-- fidelity:end -->")[0]

    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    rows = {tuple(cells(line)[:2]): cells(line) for line in table.splitlines() if "|" in line}
    out = []
    for key, entry in kept.items():
        if "error" in entry or key not in RUN_BY_KEY:
            continue
        written = section([{**entry, "run": key, "kept_in_git": True}], "").splitlines()
        model = RUN_BY_KEY[key].model
        ours = next(cells(line) for line in written if line.startswith(f"| {model} on "))
        theirs = rows.get(tuple(ours[:2]))
        if theirs is None or len(theirs) < 13 or theirs[12].split(",")[0] != entry.get("commit"):
            continue  # not written, or written from a plan at other code
        if ours[:12] + ours[13:] != theirs[:12] + theirs[13:]:
            out.append(key)
    return out


def restored(entry: dict) -> Any:
    """The report ``entry`` kept, estimated by today's code on its chip's figures as they are
    now (the preset's, where the target came from one)."""
    from shardviz.analysis.estimate.step import with_estimate
    from shardviz.model import Report
    from shardviz.model.hardware_presets import hardware

    report = Report.from_json(entry["report"])
    trips = {c.hlo_name: c.trips for c in report.collectives}
    target = report.target
    if target is not None and target.hardware.preset:
        target = dataclasses.replace(target, hardware=hardware(target.hardware.preset))
    return with_estimate(report, target, trip_counts=trips)


#: The runs TPU v6e's matmul efficiency (``Hardware.matmul_efficiency``) is fitted on: at
#: most three, named (issue 42); three models on one slice size. Every other run's error is
#: reported apart from theirs.
FIT_RUNS = ("8b", "70b", "gemma3-12b")


def predicted_at(report: Any, efficiency: float) -> float:
    """The report's predicted step with its matmuls at ``efficiency`` times the peak."""
    from shardviz.analysis.estimate.predict import predict_with, rates_of

    rates = dataclasses.replace(rates_of(report.target), efficiency=efficiency)
    trips = {c.hlo_name: c.trips for c in report.collectives}
    p = predict_with(report.cost.ops, report.collectives, trips, rates)
    assert p is not None
    return p.seconds


def fit_efficiency(pairs: list[tuple[Run, Any]]) -> float:
    """The efficiency, from 0.300 to 1.000 in steps of 0.001, whose predicted steps have the
    least mean absolute error against the runs' measured steps (``pairs``: each run with its
    estimated report)."""

    def error(eta: float) -> float:
        return sum(abs(predicted_at(r, eta) / run.step_seconds - 1) for run, r in pairs)

    return min((k / 1000 for k in range(300, 1001)), key=error)


def fit(keys: list[str]) -> str:
    """Fit the efficiency on ``FIT_RUNS`` (their newest plans with a report), and say what
    each run of their chip with a report would need alone, and its error at the fit."""
    pairs = {}
    chip = chip_of(RUN_BY_KEY[FIT_RUNS[0]])
    for run in RUNS:
        entry = PC.latest(plan_fields(run)) if chip_of(run) == chip else None
        if entry is not None:
            pairs[run.key] = (run, restored(entry))
    missing = [k for k in FIT_RUNS if k not in pairs]
    if missing:
        raise SystemExit(f"no plan with a report for {', '.join(missing)}: plan them first")
    eta = fit_efficiency([pairs[k] for k in FIT_RUNS])
    lines = [f"fitted on {', '.join(FIT_RUNS)}: matmul efficiency {eta:.3f}"]
    for key, (run, report) in pairs.items():
        if keys and key not in keys:
            continue
        alone = fit_efficiency([(run, report)])
        at = predicted_at(report, eta) / run.step_seconds - 1
        at_peak = predicted_at(report, 1.0) / run.step_seconds - 1
        role = "fitted on" if key in FIT_RUNS else "held out"
        lines.append(
            f"{key} ({role}): at the peak {at_peak:+.1%}, at {eta:.3f} {at:+.1%}; "
            f"alone it would take {alone:.3f}"
        )
    return "\n".join(lines)


def figures(run: Run, r: Any) -> dict:
    """What the table shows of the run's report ``r`` (JSON-ready)."""
    e, cost = r.estimate, r.cost
    assert e is not None and cost is not None
    config = get_config(run.model)
    tokens = run.batch_per_device * run.seq
    formula = training_flops(config, tokens=tokens, seq=run.seq).total
    peak_per_device = r.target.hardware.peak_flops_bf16 / r.target.devices_per_chip
    return {
        "run": run.key,
        "params": param_count(config),
        "published_params": config.published_params,
        "model_flops": cost.model_flops_per_device,
        "hardware_flops": cost.flops_per_device,
        "formula": formula,
        # In the recipes' terms: model flops over the chip's bf16 peak, whatever the matmuls'
        # precision (the same as e.mfu_at for a program without fp8 matmuls).
        "mfu_at": (cost.model_flops_per_device or 0.0) / (peak_per_device * run.step_seconds),
        "mfu_own_peak_at": e.mfu_at(run.step_seconds),
        "formula_mfu_at": formula / (peak_per_device * run.step_seconds),
        "bound": e.step_seconds,
        "bound_by": e.bound,
        "parts": (e.compute_seconds, e.memory_seconds, e.collective_seconds),
        "peak": r.memory.peak_bytes,
        "hbm": e.hbm_bytes,
        "lower_bound": e.lower_bound,
        "predicted": e.predicted_seconds,
        "exposed": e.predicted_exposed_seconds,
        "exposed_top": e.predicted_exposed[:3],
        "hbm_ops_bytes": sum(o.hbm_bytes * o.runs for o in cost.ops if not o.transfer),
        "transfer_bytes": sum(
            (o.hbm_bytes + o.host_bytes) * o.runs for o in cost.ops if o.transfer
        ),
        "xla_bytes": cost.bytes_accessed_per_device,
        "loops": len(cost.loops),
    }


def _against_bare(m: dict) -> str:
    """The plan's wall time against the compiler's time inside it (what shardviz adds is
    the difference), and against a bare recompile of the same module where one was timed.
    A plan made before the compile was timed shows the bare recompile alone."""
    if m.get("compile"):
        text = (
            f"{m['wall']:.0f} s / {m['compile']:.0f} s compiling = {m['wall'] / m['compile']:.2f}"
        )
        return text + (f"; bare recompile {m['bare']:.0f} s" if m.get("bare") else "")
    if not m.get("bare"):
        return f"{m['wall']:.0f} s / not timed"
    return f"{m['wall']:.0f} s / {m['bare']:.0f} s = {m['wall'] / m['bare']:.2f}"


def recipe_mfu(run: Run, m: dict) -> tuple[float, float]:
    """The MFU at the measured step in the recipe's terms, shardviz's and the formula's:
    shardviz's model flops (attention in full), less the half the formula leaves out where
    the recipe halves causal attention, over the bf16 peak; and the formula's own, halved
    or not as the recipe's."""
    if not run.causal_half:
        return m["mfu_at"], m["formula_mfu_at"]
    config = get_config(run.model)
    tokens = run.batch_per_device * run.seq
    half = training_flops(config, tokens=tokens, seq=run.seq, causal_half=True).total
    peak_seconds = m["model_flops"] / m["mfu_at"]
    return (m["model_flops"] - (m["formula"] - half)) / peak_seconds, half / peak_seconds


def _params(run: Run, m: dict) -> str:
    """The plan's parameters and the published count: the total, or where only the count
    without the token embedding is published (Gemma 3), that one, said so."""
    config = get_config(run.model)
    if m["published_params"] is not None:
        return f"{m['params'] / 1e9:.2f} B ({m['published_params'] / 1e9:.2f} B)"
    if config.published_non_embedding is not None:
        inner = config.d_model * config.vocab
        return (
            f"{m['params'] / 1e9:.2f} B; {(m['params'] - inner) / 1e9:.2f} B without the "
            f"embedding ({config.published_non_embedding / 1e9:.2f} B)"
        )
    return f"{m['params'] / 1e9:.2f} B (not published)"


def _dominant(m: dict) -> str:
    """What most of the predicted step is: the ops one after another, or the transfers the
    ops beside them do not hide (with the largest of those). The step's bound, and what
    bounds it, is the table's column before."""
    ops = m["predicted"] - m["exposed"]
    if m["exposed"] > ops:
        top = m["exposed_top"][0][0] if m["exposed_top"] else "transfers"
        return f"exposed transfers {m['exposed']:.3g} s (largest {top})"
    return f"ops one after another {ops:.3g} s"


def _flags(run: Run, m: dict) -> str:
    """How many of the recipe's XLA flags the plan was compiled with, and the ones this
    libtpu does not know (not applied)."""
    given = len(RECIPE_FLAGS.get(run.key, []))
    if "flags_applied" not in m:  # planned before the flags were applied
        return f"none applied (of {given})"
    unknown = m["flags_unknown"]
    rest = f"; not known here: {', '.join(unknown)}" if unknown else ""
    return f"{m['flags_applied']} of {given} applied{rest}"


def _planned_at(m: dict) -> str:
    """Which commit's code compiled the run's program, and whether today's estimate worked
    its figures out again from the report kept (``PC.run_all``'s ``reuse``)."""
    commit = m.get("commit", "before commits were recorded")
    at, versions = commit, m.get("versions")
    if versions and versions != PC.compiler_versions():
        at += f", with jax {versions['jax']} and libtpu {versions['libtpu']}"
    if m.get("kept_in_git"):  # figures as the commit that estimated them worked them out
        again = m.get("estimated_at", commit)
        return f"{at}, estimated again at {again}" if again != commit else at
    return f"{at}, estimated again" if m.get("estimated_again") else at


def errors_summary(rows: list[tuple[Run, dict]]) -> tuple[float, float, str]:
    """Mean absolute and worst relative error of the predicted step, and the worst run."""
    errs = [(abs(m["predicted"] / run.step_seconds - 1), run.key) for run, m in rows]
    worst = max(errs)
    return sum(e for e, _ in errs) / len(errs), worst[0], worst[1]


def section(results: list[dict], command: str) -> str:
    lines = C.preamble(command, ("jax", "libtpu"))
    lines += [
        "| run | source | predicted step (error) | measured | bound | what dominates | "
        "MFU at the measured step (published) | params (published) | model flops / device "
        "(MaxText formula) | HBM peak / capacity | plan / its compile | the recipe's XLA "
        "flags | planned at | as the recipe ran, not reproduced |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    checks, planned, failed = [], [], []
    for m in results:
        run = RUN_BY_KEY[m["run"]]
        name = (
            f"{run.model} on {run.topology}, SL {run.seq}, batch {run.batch_per_device}/device, "
            f"remat {run.remat}{', ' + run.quantization if run.quantization else ''}"
        )
        if "error" in m:
            failed.append(run.key)
            lines.append(
                f"| {name} | {run.source} | not planned here: {m['error']} | "
                f"{run.step_seconds:.3g} s | | | | | | | | | | {run.note} |"
            )
            continue
        mfu, formula_mfu = recipe_mfu(run, m)
        m = {**m, "mfu_at": mfu, "formula_mfu_at": formula_mfu}
        planned.append((run, m))
        error = m["predicted"] / run.step_seconds - 1
        points = 100 * (m["mfu_at"] - run.mfu)
        lines.append(
            f"| {name} | {run.source} | {m['predicted']:.3g} s ({error:+.0%}) | "
            f"{run.step_seconds:.3g} s | {m['bound']:.3g} s {m['bound_by']} | {_dominant(m)} | "
            f"{format_percent(m['mfu_at'])} ({format_percent(run.mfu)}) | "
            f"{_params(run, m)} | "
            f"{m['model_flops']:.3g} ({m['formula']:.3g}) | "
            f"{m['peak'] / 2**30:.1f} / {m['hbm'] / 2**30:.0f} GiB | "
            f"{_against_bare(m)} | "
            f"{_flags(run, m)} | {_planned_at(m)} | {run.note} |"
        )
        c, mem, comm = m["parts"]
        checks += [
            (abs(points) <= 2,
             f"{run.key}: MFU at the measured step within 2 points of the published "
             f"({format_percent(m['mfu_at'])} vs {format_percent(run.mfu)}, {points:+.1f}; "
             f"with MaxText's formula {format_percent(m['formula_mfu_at'])})"),
            (m["bound"] <= run.step_seconds,
             f"{run.key}: the bound not above the measured step ({m['bound']:.3g} s, "
             f"{m['bound_by']}-bound: compute {c:.3g} s, memory {mem:.3g} s, communication "
             f"{comm:.3g} s; measured {run.step_seconds:.3g} s)"),
            (abs(error) <= 0.10,
             f"{run.key}: predicted step within 10% of the measured ({error:+.0%}: "
             f"{m['predicted']:.3g} s vs {run.step_seconds:.3g} s; ops "
             f"{m['predicted'] - m['exposed']:.3g} s, exposed transfers {m['exposed']:.3g} s, "
             "largest " + ", ".join(f"{n} {t:.3g} s" for n, t in m["exposed_top"])
             + f"; HBM bytes of the ops {m['hbm_ops_bytes']:.3g}, of async copies "
             f"{m['transfer_bytes']:.3g}, XLA's count {m['xla_bytes']:.3g})"),
            (m["peak"] <= m["hbm"],
             f"{run.key}: fits ({m['peak'] / 2**30:.1f} GiB of {m['hbm'] / 2**30:.0f} GiB)"),
        ]  # fmt: skip
        if m.get("compile"):
            checks.append((m["wall"] <= 1.1 * m["compile"],
                           f"{run.key}: plan within 1.1x of the compile it makes ({m['wall']:.0f} "
                           f"s vs {m['compile']:.0f} s)"))  # fmt: skip
        elif m.get("bare"):
            checks.append((m["wall"] <= 1.1 * m["bare"],
                           f"{run.key}: plan within 1.1x of its bare compile ({m['wall']:.0f} s "
                           f"vs {m['bare']:.0f} s)"))  # fmt: skip
    head = []
    if planned:
        mae, worst, worst_key = errors_summary(planned)
        head = [
            (mae <= 0.05 and worst <= 0.10,
             f"predicted step over {len(planned)} runs: mean absolute error {mae:.1%} "
             f"(goal 5%), worst {worst:.0%} ({worst_key}; goal 10%)"),
        ]  # fmt: skip
        held = [(run, m) for run, m in planned if run.key not in FIT_RUNS]
        if held and len(held) < len(planned):
            mae, worst, worst_key = errors_summary(held)
            head.append(
                (mae <= 0.05 and worst <= 0.10,
                 f"held out (runs the matmul efficiency was not fitted on: {len(held)}): "
                 f"mean absolute error {mae:.1%}, worst {worst:.0%} ({worst_key})")
            )  # fmt: skip
    if failed:
        head.append((False, f"not planned here: {', '.join(failed)} (reasons in the table)"))
    lines += ["", "Targets:", ""]
    lines += [f"- {'PASS' if ok else 'FAIL'}: {text}" for ok, text in head + checks]
    return "\n".join(lines)


def cold_time(results: list[dict]) -> str:
    """What the table's plans took to compile when each was made: the sum of their recorded
    wall times (one worker each; made over several sessions, so never one stretch of time)."""
    walls = sorted(m["wall"] for m in results if "error" not in m and m.get("wall"))
    if not walls:
        return ""
    return (
        f" Cold, its {len(walls)} plans took {sum(walls) / 60:.0f} min to make, one after "
        f"another on one worker (each plan's own wall time, recorded when it was made: "
        f"{walls[0]:.0f} s to {walls[-1]:.0f} s, median {walls[len(walls) // 2]:.0f} s)."
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default=",".join(r.key for r in RUNS))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--jobs", type=int, default=None,
                    help="plans at once (default: one per two cores)")  # fmt: skip
    ap.add_argument("--fresh", action="store_true", help="plan again, ignoring the disk cache")
    ap.add_argument("--reuse", action="store_true",
                    help="a run not planned at this code takes its newest plan at older code, "
                         "estimated again from its report, or where this disk has none, its "
                         "figures kept in git (the table says which commit)")  # fmt: skip
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip each new plan's bare recompile (the plan / bare column)")  # fmt: skip
    ap.add_argument("--no-plan", action="store_true",
                    help="plan nothing: the table from the plans kept (with --reuse, at any "
                         "code); a run with none says so")  # fmt: skip
    ap.add_argument("--fit", action="store_true",
                    help="fit TPU v6e's matmul efficiency on FIT_RUNS' kept reports and say "
                         "each run's error at it (no plan is made)")  # fmt: skip
    a = ap.parse_args()
    keys = a.runs.split(",")
    if a.fit:
        print(fit(keys if "--runs" in sys.argv else []))
        return
    chosen = [r for r in RUNS if r.key in keys]
    t0 = time.perf_counter()
    kept = read_figures()
    git = from_git(chosen, kept) if a.reuse and not a.fresh else {}
    items = ((r.key, plan_fields(r)) for r in chosen if r.key not in git)
    work = functools.partial(measure, baseline=not a.no_baseline)
    done = PC.run_all(items, work, a.jobs, fresh=a.fresh, reuse=a.reuse, plan_missing=not a.no_plan)
    done |= {key: (entry, "error" not in entry) for key, entry in git.items()}
    version = PC.code_version()
    results = [{"run": r.key, **current(r, done[r.key][0], version)} for r in chosen]
    write_figures(updated_figures(kept, chosen, results, PC.commit()))
    wall = time.perf_counter() - t0
    cached = sum(1 for r in chosen if done[r.key][1])
    older = sum(1 for m in results if m.get("estimated_again") or m.get("kept_in_git"))
    failed = sum(1 for r in chosen if "error" in done[r.key][0])
    flags = "".join(f" --{f}" for f, on in (("reuse", a.reuse), ("no-plan", a.no_plan)) if on)
    body = section(results, f"benchmarks/fidelity.py --runs {a.runs}{flags} --write")
    body += (
        f"\n\nThis table: {len(chosen) - cached - failed} plan(s) compiled, {cached} read from "
        f"the disk cache (keyed by the run, shardviz's code and the compiler's versions) or, "
        f"for {len(git)}, from the figures kept in git ({FIGURES.name}); {older} of them "
        f"planned at older code and estimated again, from their reports or where they were "
        f"planned), "
        f"{failed} not planned; {PC.workers(a.jobs)} worker(s); wall time {wall:.1f} s."
        + cold_time(results)
    )
    print(body)
    if a.write:
        C.replace_section(C.README, "fidelity", body)


if __name__ == "__main__":
    main()
