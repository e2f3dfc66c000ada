"""The dropless MoE layer: each token's picks sorted by expert through grouped matmuls.

What MaxText runs with ``sparse_matmul: True`` (and ``megablox: True`` on TPU), and what the
published DeepSeek-V3, Llama 4 and Mixtral recipes trained with: no capacity, no slot ever
padded or dropped. On each device's shard of the tokens (``shard_map``), the ``T x k`` picks
are sorted by expert, each pick's token row gathered, and the experts' three weight matmuls
run as grouped matmuls over the sorted rows (``group_sizes``: the rows of each expert); the
rows go back to token order and are summed by their gates. On TPU the grouped matmuls are
megablox's Pallas kernels (``gmm``, with ``tgmm`` for the weights' gradient), in fp8
tokamax's (what MaxText's fp8 MoE recipes call), elsewhere ``jax.lax.ragged_dot``.

Sharding, as MaxText's ``sparse_matmul`` does it without ragged all-to-alls:
- the weights enter the shard map split as they are stored and are gathered inside over
  their FSDP axes (``all_gather``), still split over 'expert' and over the MLP dim's axes
  ('tensor'): autodiff then reduce-scatters their gradients back to that split, where a
  weight the compiler gathered at the shard map's edge has its gradient summed whole (an
  all-reduce of every expert's weights, kept in full on every device);
- a device with part of the MLP dim computes its part of every pick, and the partial
  outputs are summed over those axes (``psum``);
- with the experts split, each device gathers the tokens of its expert group
  (``all_gather`` over the expert axes), computes the picks of its own experts (the rest are
  sorted past its groups and come out zero), and the partial outputs are summed back to each
  device's own tokens (``psum_scatter``).
The routing itself (router logits, top-k, the load-balancing loss) is computed outside, as
the capacity layer computes it (:func:`shardviz.strategies.moe.pick`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name
from jax.sharding import PartitionSpec

from shardviz.errors import ShardvizError, problem
from shardviz.strategies.models.axes import Constrain, SpecConstrain, platform_of
from shardviz.strategies.models.fp8 import fp8_ragged_dot
from shardviz.strategies.models.gated_mlp import ACTIVATIONS

__all__ = ["dropless_experts", "grouped_matmul"]

#: The grouped matmuls' largest tiles on TPU (rows, contracted, output), MaxText's defaults
#: (``tile_batch_seq``, ``tile_embed_dim``, ``tile_mlp_dim``).
TILES = (512, 1024, 1024)

Grouped = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


def _tile(size: int, most: int) -> int:
    """The largest power of two at most ``most`` that divides ``size`` (``size`` if none
    above 1 does)."""
    t = most
    while t > 1 and size % t:
        t //= 2
    return t if t > 1 else size


def grouped_matmul(platform: str, quantization: str = "", device: Any = None) -> Grouped:
    """``(rows [M, K], weights [G, K, N], group_sizes [G]) -> [M, N]``, each row against its
    group's weights (rows past the groups: zeros): megablox's ``gmm`` on TPU (compiled,
    never interpreted: a deviceless TPU target too), ``jax.lax.ragged_dot`` elsewhere, and
    on TPU for widths whose common tile is under the 128 lanes a kernel block needs.
    ``quantization="fp8"``: fp8 operands (:func:`_fp8_grouped`); ``device``: one of the
    mesh's devices (a deviceless TPU's, for the fp8 kernels)."""
    if quantization == "fp8":
        return _fp8_grouped(platform, device)
    if platform != "tpu":
        return jax.lax.ragged_dot

    from jax.experimental.pallas.ops.tpu.megablox import gmm

    def tpu(rows: jax.Array, w: jax.Array, sizes: jax.Array) -> jax.Array:
        width = _width(rows, w)
        if width % 128:
            return jax.lax.ragged_dot(rows, w, sizes)
        out = gmm(rows, w, sizes, rows.dtype, (_tile(rows.shape[0], TILES[0]), width, width),
                  None, None, False, False)  # fmt: skip
        return out.astype(rows.dtype)

    return tpu


def _width(rows: jax.Array, w: jax.Array) -> int:
    """The tile of K and N: one for both, as the backward runs the transposed weights with
    the same tiling."""
    return _tile(math.gcd(w.shape[1], w.shape[2]), min(TILES[1:]))


def _quiet_cache_misses(record: logging.LogRecord) -> bool:
    """Leaves out tokamax's warning that it has no tuned tiles for a shape (a warning for
    every kernel traced, with the whole key): it then takes its heuristics' tiles, as a run
    without a tuning cache does, and the plan says nothing it does not."""
    return not (
        "tokamax" in record.pathname and str(record.msg).startswith("Autotuning cache miss")
    )


def _fp8_grouped(platform: str, device: Any) -> Grouped:
    """fp8 grouped matmuls, as the recipes' ``fp8_full`` MoE runs ran them: on TPU tokamax's
    (MaxText's ``use_tokamax_gmm``, its operands quantised by qwix in tiles, forward and
    both gradients in E4M3; megablox's ``gmm`` takes bfloat16 or float32 only), elsewhere
    and for widths under a kernel block :func:`.fp8.fp8_ragged_dot`.

    tokamax checks the default device is a TPU when it traces each kernel, its gradients'
    too, so on a deviceless TPU those traces run with ``device`` as the default."""
    if platform != "tpu":
        return fp8_ragged_dot
    try:
        import tokamax
        from tokamax._src.ops.ragged_dot.pallas_mosaic_tpu import PallasMosaicTpuRaggedDot
    except ImportError as e:
        raise ShardvizError(
            problem(
                "the dropless MoE layer in fp8 on TPU",
                f"its grouped matmuls are tokamax's kernels, and tokamax is not installed ({e})",
                "pip install 'shardviz[tpu]' (it brings tokamax), or plan it with "
                "moe='capacity' or quantization=''",
            )
        ) from e
    from absl import flags  # tokamax's own dependency

    # tokamax reads its options from absl flags, parsing the process's argv first if nothing
    # has: a notebook kernel's or pytest's arguments, which absl refuses. Its defaults are
    # what a plan wants, so the flags are taken as parsed, as they stand.
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    logging.getLogger("absl").addFilter(_quiet_cache_misses)
    kernel = PallasMosaicTpuRaggedDot(qdtype="float8_e4m3fn")
    gradients = kernel.vjp
    assert gradients is not None  # set by the kernel's own __post_init__

    def on_device(*args: Any, **kwargs: Any) -> Any:
        with jax.default_device(device):
            return gradients(*args, **kwargs)

    kernel = dataclasses.replace(kernel, vjp=on_device)

    def tpu(rows: jax.Array, w: jax.Array, sizes: jax.Array) -> jax.Array:
        if _width(rows, w) % 128 or rows.shape[0] < 128:  # under one kernel block
            return fp8_ragged_dot(rows, w, sizes)
        with jax.default_device(device):
            out = tokamax.ragged_dot(rows, w, sizes, preferred_element_type=rows.dtype,
                                     implementation=(kernel,))  # fmt: skip
        return out.astype(rows.dtype)

    return tpu


def _axes(entry: Any) -> tuple[str, ...]:
    """The mesh axes of one PartitionSpec entry."""
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def _local(
    x: jax.Array,
    experts: jax.Array,
    gates: jax.Array,
    w_gate: jax.Array,
    w_up: jax.Array,
    w_down: jax.Array,
    *,
    activation: str,
    grouped: Grouped,
    expert_axes: tuple[str, ...],
    mlp_axes: tuple[str, ...],
    gathered: bool,
    gather_in: Gathers = (),
    gather_out: Gathers = (),
) -> jax.Array:
    """One device's picks through its experts: ``x [B, S, D]``, ``experts``/``gates``
    ``[B, S, k]``, weights ``[E_local, D, F_local]`` / ``[E_local, F_local, D]`` once
    gathered over ``gather_in`` / ``gather_out`` (:func:`_gathers`); ``gathered``: the
    tokens are split over the expert axes too (else each device of an expert group has them
    all)."""
    w_gate, w_up = _gather(w_gate, gather_in), _gather(w_up, gather_in)
    w_down = _gather(w_down, gather_out)
    if gathered:  # the tokens of this device's expert group
        gather = partial(jax.lax.all_gather, axis_name=expert_axes, axis=0, tiled=True)
        x, experts, gates = gather(x), gather(experts), gather(gates)
    b, s, d = x.shape
    k = experts.shape[-1]
    local = w_gate.shape[0]
    first = jax.lax.axis_index(expert_axes) * local if expert_axes else 0
    flat = experts.reshape(-1) - first  # [T k]: this device's expert of each pick
    mine = (flat >= 0) & (flat < local)
    key = jnp.where(mine, flat, local)  # others' picks sort past this device's groups
    order = jnp.argsort(key, stable=True)
    sizes = jnp.sum(jax.nn.one_hot(key, local + 1, dtype=jnp.int32), axis=0)[:local]
    rows = jnp.take(x.reshape(b * s, d), order // k, axis=0)  # [T k, D], sorted by expert
    gate = checkpoint_name(grouped(rows, w_gate, sizes), "mlpwi_0")
    up = checkpoint_name(grouped(rows, w_up, sizes), "mlpwi_1")
    out = checkpoint_name(grouped(ACTIVATIONS[activation](gate) * up, w_down, sizes), "mlpwo")
    if expert_axes:  # rows past this device's groups: zeros, whatever the kernel leaves there
        out = jnp.where(jnp.arange(out.shape[0])[:, None] < jnp.sum(sizes), out, 0)
    back = jnp.take(out, jnp.argsort(order), axis=0).reshape(b * s, k, d)  # token order
    y = jnp.einsum("tkd,tk->td", back, gates.reshape(b * s, k).astype(back.dtype))
    y = y.reshape(b, s, d)
    if mlp_axes:  # each device computed its part of the hidden dim
        y = jax.lax.psum(y, mlp_axes)
    if gathered:  # each expert's part, summed back to the tokens' own device
        y = jax.lax.psum_scatter(y, expert_axes, scatter_dimension=0, tiled=True)
    elif expert_axes:
        y = jax.lax.psum(y, expert_axes)
    return y


def dropless_experts(
    p: dict[str, Any],
    x: jax.Array,
    experts: jax.Array,
    gates: jax.Array,
    *,
    activation: str,
    constrain: Constrain,
    quantization: str = "",
) -> jax.Array:
    """``x [B, S, D]`` through each token's picked experts (``experts``, ``gates``:
    ``[B, S, k]``), weighted and summed: ``[B, S, D]`` (see the module doc);
    ``quantization``: the grouped matmuls' (:func:`grouped_matmul`)."""
    weights = (p["w_gate"], p["w_up"], p["w_down"])
    mesh = constrain.mesh if isinstance(constrain, SpecConstrain) else None
    device = mesh.devices.flat[0] if mesh is not None else None
    grouped = grouped_matmul(platform_of(constrain), quantization, device)
    if not isinstance(constrain, SpecConstrain):
        return _local(x, experts, gates, *weights, activation=activation, grouped=grouped,
                      expert_axes=(), mlp_axes=(), gathered=False)  # fmt: skip
    tokens = constrain.spec("moe_tokens", tuple(x.shape))
    w_in = constrain.spec("expert_w_in", tuple(p["w_gate"].shape))
    w_out = constrain.spec("expert_w_out", tuple(p["w_down"].shape))
    if tokens is None or w_in is None or w_out is None:
        raise ShardvizError(
            problem(
                "the dropless MoE layer",
                "the strategy places no spec on its tokens or its experts' weights "
                "(activations 'moe_tokens', 'expert_w_in', 'expert_w_out'), and the layer's "
                "shard map needs them",
                "give those activations rules, or use moe='capacity'",
            )
        )
    expert_axes = _axes(w_in[0])
    in_spec, gather_in = _taken(constrain.spec("expert_w_in_stored", weights[0].shape), w_in)
    out_spec, gather_out = _taken(constrain.spec("expert_w_out_stored", weights[2].shape), w_out)
    body = partial(
        _local, activation=activation, grouped=grouped, expert_axes=expert_axes,
        mlp_axes=_axes(w_in[2]), gathered=_gathered(tokens, expert_axes), gather_in=gather_in,
        gather_out=gather_out,
    )  # fmt: skip
    picks = PartitionSpec(*tokens[:2], None)
    local = jax.shard_map(
        body, mesh=constrain.mesh, in_specs=(tokens, picks, picks, in_spec, in_spec, out_spec),
        out_specs=tokens, check_vma=False,
    )  # fmt: skip
    return local(x, experts, gates, *weights)


#: Per dim of a weight, the mesh axes it is gathered over inside the shard map.
Gathers = tuple[tuple[str, ...], ...]


def _taken(stored: PartitionSpec | None, used: PartitionSpec) -> tuple[PartitionSpec, Gathers]:
    """How the shard map takes a weight its grouped matmuls read split as ``used``: as it is
    stored (``stored``, the rule set's spec of the parameter), gathered inside over the axes
    :func:`_gathers` names, so that autodiff reduce-scatters its gradient back to that
    split; else (no stored spec, or one not gathered into ``used`` in place) as ``used``,
    the compiler resharding it at the edge (its gradient then summed whole: an all-reduce
    of every expert's weights)."""
    if stored is None or (gathers := _gathers(stored, used)) is None:
        return used, ()
    return stored, gathers


def _gathers(stored: PartitionSpec, used: PartitionSpec) -> Gathers | None:
    """Per dim, the mesh axes that take a weight split as ``stored`` to split as ``used``
    by tiled all-gathers: each dim's ``used`` axes must lead its ``stored`` ones, the
    gathered axes being the minor ones (``None`` otherwise)."""
    rank = max(len(stored), len(used))
    pad = (None,) * rank
    out = []
    for s, u in zip((*stored, *pad)[:rank], (*used, *pad)[:rank], strict=True):
        s_axes, u_axes = _axes(s), _axes(u)
        if s_axes[: len(u_axes)] != u_axes:
            return None
        out.append(s_axes[len(u_axes) :])
    return tuple(out)


def _gather(w: jax.Array, gathers: Gathers) -> jax.Array:
    """``w`` gathered whole along each dim over that dim's axes in ``gathers``."""
    for dim, axes in enumerate(gathers):
        if axes:
            w = jax.lax.all_gather(w, axes, axis=dim, tiled=True)
    return w


def _gathered(tokens: PartitionSpec, expert_axes: tuple[str, ...]) -> bool:
    """Whether each device gathers its expert group's tokens: the tokens' batch is split
    over every expert axis (``False``: over none, each device has them all).

    Raises:
      ShardvizError: the tokens split over some of the expert axes only, or over their
        sequence dim.
    """
    batch, sequence = _axes(tokens[0]), _axes(tokens[1])
    if set(expert_axes) <= set(batch) and expert_axes:
        return True
    if set(expert_axes) & set(batch + sequence):
        raise ShardvizError(
            problem(
                f"the dropless MoE layer (tokens {tokens}, experts over {expert_axes})",
                "the tokens are split over some of the experts' mesh axes but not all of "
                "them, or over their sequence dim",
                "split the tokens' batch over all the expert axes, or over none of them",
            )
        )
    return False
