"""Pipeline parallelism written by hand with ``shard_map``: a GPipe or 1F1B schedule, run.

Where the GSPMD form (:mod:`.gspmd`) leaves the order of work to autodiff of one loop, here
each stage is a device program that follows a :class:`~shardviz.model.schedule.Schedule`
tick by tick (:mod:`.plan`): at each tick it runs the forward or the backward of one
microbatch, or nothing, and then every stage passes what it made along: activations to the next
stage and gradients to the previous one (two collective-permutes). A forward keeps what its
backward needs (the residuals of ``jax.vjp``; with ``checkpoint``, the stage runs under
``jax.checkpoint``, so only its input is kept and the backward computes the stage again) in a
buffer with as many slots as the schedule keeps microbatches in flight: ``microbatches`` for GPipe, at most ``stages`` for 1F1B, which is what
the compiler's temp bytes then show.

The first stage embeds its microbatch's tokens and the last computes the head and the loss
right after its forward, so 1F1B can start backwards early. Gradients are summed over the
microbatches on each device and reduced over ``data`` (and the stages, for the replicated
embedding and head) once at the end. The loss and gradients equal the unpipelined model's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from shardviz.model.schedule import Schedule
from shardviz.strategies.pipeline.plan import BACKWARD, FORWARD, Plan, plan
from shardviz.strategies.pipeline.stages import STAGE_AXIS, stage_forward
from shardviz.strategies.transformer import Params, layer_norm

#: The parameters the first stage uses (embedding) and the last (head); ``layers`` is staged.
EMBED_KEYS = ("embed", "pos")
HEAD_KEYS = ("ln_f", "unembed")


def _embed(p: Params, tokens: jax.Array) -> jax.Array:
    return p["embed"][tokens] + p["pos"][: tokens.shape[-1]]


def _head_loss(p: Params, h: jax.Array, targets: jax.Array, tokens: int) -> jax.Array:
    """This microbatch's share of the mean next-token loss over ``tokens`` tokens in all."""
    logits = (layer_norm(p["ln_f"], h) @ p["unembed"]).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, targets[..., None], axis=-1)
    return -jnp.sum(picked) / tokens


def _zeros(tree: Any) -> Any:
    return jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), tree)


def _residuals(vjp: Any, params: Params) -> tuple[list[Any], Any, list[int | None]]:
    """``vjp``'s leaves that are not the stage's parameters, its tree, and for each leaf
    the index of the parameter leaf it is (None for a residual to keep)."""
    leaves, tree = jax.tree.flatten(vjp)
    p_leaves = jax.tree.leaves(params)
    where: list[int | None] = []
    kept = []
    for leaf in leaves:
        i = next((j for j, q in enumerate(p_leaves) if leaf is q), None)
        where.append(i)
        if i is None:
            kept.append(leaf)
    return kept, tree, where


def _rows(table: np.ndarray, tick: jax.Array, stage: jax.Array) -> jax.Array:
    return jnp.asarray(table)[tick, stage]


def _put(buf: jax.Array, slot: jax.Array, value: jax.Array) -> jax.Array:
    """``buf[slot] = value`` when ``slot >= 0``; unchanged otherwise."""
    i = jnp.maximum(slot, 0)
    kept = jax.lax.dynamic_index_in_dim(buf, i, 0, keepdims=False)
    return jax.lax.dynamic_update_index_in_dim(buf, jnp.where(slot >= 0, value, kept), i, 0)


def _take(buf: jax.Array, slot: jax.Array) -> jax.Array:
    return jax.lax.dynamic_index_in_dim(buf, jnp.maximum(slot, 0), 0, keepdims=False)


def _stage_fn(checkpoint: bool) -> Callable[[Params, jax.Array], jax.Array]:
    """One stage's layers; with ``checkpoint``, under ``jax.checkpoint``, so that what its
    ``jax.vjp`` keeps is only the stage's input and the backward computes the layers again."""
    return jax.checkpoint(stage_forward) if checkpoint else stage_forward


class _Device(NamedTuple):
    """What one device's program works on: its stage (an index), its stage's layers, the
    embedding and head, its rows as microbatches, the activations' shape, and its stage's
    forward (keeping residuals) and backward (from them)."""

    stage: jax.Array
    layers: Params
    emb: Params
    head: Params
    ins: jax.Array
    tgs: jax.Array
    x_shape: Any
    res_shapes: Any
    forward: Callable[[jax.Array], tuple[jax.Array, list[jax.Array]]]
    backward: Callable[[list[jax.Array], jax.Array], tuple[Params, jax.Array]]
    tokens: int


def _stage_passes(
    layers: Params, x_shape: Any, checkpoint: bool
) -> tuple[Callable[..., Any], Callable[..., Any], Any]:
    """The stage's forward (its output and the residuals its backward needs), its backward
    (from those residuals and the output's gradient) and the residuals' shapes."""
    stage_fn = _stage_fn(checkpoint)

    def forward(x: jax.Array) -> tuple[jax.Array, list[jax.Array]]:
        y, vjp = jax.vjp(stage_fn, layers, x)
        return y, _residuals(vjp, layers)[0]

    def backward(kept: list[jax.Array], dy: jax.Array) -> tuple[Params, jax.Array]:
        # The pullback's structure, from tracing the stage once more (its values are
        # unused and compiled away), refilled with the kept residuals and the layers.
        _, like = jax.vjp(stage_fn, layers, jnp.zeros(x_shape.shape, x_shape.dtype))
        _, tree, where = _residuals(like, layers)
        p_leaves = jax.tree.leaves(layers)
        it = iter(kept)
        leaves = [next(it) if i is None else p_leaves[i] for i in where]
        d_layers, dx = jax.tree.unflatten(tree, leaves)(dy)
        return d_layers, dx

    _, res_shapes = jax.eval_shape(forward, x_shape)
    return forward, backward, res_shapes


def _device(
    pl: Plan, params: Params, inputs: jax.Array, targets: jax.Array, checkpoint: bool, tokens: int
) -> _Device:
    """This device's share: its stage's layers and its rows split into the microbatches."""
    M = pl.schedule.microbatches
    layers = jax.tree.map(lambda a: a[0], params["layers"])  # this stage's [L/S, ...]
    emb = {k: params[k] for k in EMBED_KEYS}
    mb = inputs.shape[0] // M
    ins = inputs.reshape(M, mb, *inputs.shape[1:])
    x_shape = jax.eval_shape(_embed, emb, ins[0])
    forward, backward, res_shapes = _stage_passes(layers, x_shape, checkpoint)
    return _Device(
        stage=jax.lax.axis_index(STAGE_AXIS), layers=layers, emb=emb,
        head={k: params[k] for k in HEAD_KEYS}, ins=ins,
        tgs=targets.reshape(M, mb, *targets.shape[1:]), x_shape=x_shape,
        res_shapes=res_shapes, forward=forward, backward=backward, tokens=tokens,
    )  # fmt: skip


def _empty_carry(pl: Plan, dev: _Device) -> tuple:
    """The loop's state before the first tick: the residual, activation and gradient
    buffers (as many slots as the schedule keeps in flight), zero gradients, zero loss."""
    x = dev.x_shape
    return (
        [jnp.zeros((pl.residual_slots, *r.shape), r.dtype) for r in dev.res_shapes],
        jnp.zeros((max(pl.activation_slots, 1), *x.shape), x.dtype),
        jnp.zeros((max(pl.gradient_slots, 1), *x.shape), x.dtype),
        _zeros(dev.layers), _zeros(dev.emb), _zeros(dev.head),
        jnp.zeros((), jnp.float32),
    )  # fmt: skip


def _forward_tick(pl: Plan, dev: _Device, t: jax.Array, act_buf: jax.Array, m: jax.Array) -> tuple:
    """A forward of microbatch ``m`` at tick ``t``: the first stage embeds its tokens, the
    others read the activation that arrived; the last stage also seeds the backward with the
    loss's gradient. Gives ``(y, residuals kept, loss, head grads, dy)``."""
    last = pl.schedule.stages - 1
    x = jax.lax.cond(
        dev.stage == 0,
        lambda: _embed(dev.emb, _micro(dev.ins, m)).astype(dev.x_shape.dtype),
        lambda: _take(act_buf, _rows(pl.act_read, t, dev.stage)),
    )
    y, kept = dev.forward(x)

    def seed() -> tuple:
        value, (dh, dy) = jax.value_and_grad(_head_loss, argnums=(0, 1))(
            dev.head, y, _micro(dev.tgs, m), dev.tokens
        )
        return value.astype(jnp.float32), dh, dy.astype(y.dtype)

    def no_seed() -> tuple:
        return jnp.zeros((), jnp.float32), _zeros(dev.head), jnp.zeros_like(y)

    value, dh, dy = jax.lax.cond(dev.stage == last, seed, no_seed)
    return y, kept, value, dh, dy


def _backward_tick(
    pl: Plan, dev: _Device, t: jax.Array, res_bufs: list, grad_buf: jax.Array, m: jax.Array
) -> tuple:
    """A backward of microbatch ``m`` at tick ``t``, from its kept residuals and the
    gradient that arrived; the first stage also takes the embedding's gradient. Gives
    ``(layer grads, dx, embedding grads)``."""
    res_slot = _rows(pl.residual, t, dev.stage)
    kept = [_take(b, res_slot) for b in res_bufs]
    dl, dx = dev.backward(kept, _take(grad_buf, _rows(pl.grad_read, t, dev.stage)))
    tok = _micro(dev.ins, m)
    de = jax.lax.cond(
        dev.stage == 0,
        lambda: jax.vjp(lambda e: _embed(e, tok).astype(dx.dtype), dev.emb)[1](dx)[0],
        lambda: _zeros(dev.emb),
    )
    return dl, dx, de


def _micro(rows: jax.Array, m: jax.Array) -> jax.Array:
    return jax.lax.dynamic_index_in_dim(rows, m, 0, keepdims=False)


def _tick(pl: Plan, dev: _Device, t: jax.Array, carry: tuple) -> tuple:
    """One tick of the schedule on this device: its forward or backward (or nothing), the
    results kept in the buffers, then activations passed to the next stage and gradients to
    the previous one."""
    res_bufs, act_buf, grad_buf, d_layers, d_emb, d_head, loss = carry
    S, stage, x = pl.schedule.stages, dev.stage, dev.x_shape
    ph = _rows(pl.phase, t, stage)
    m = jnp.maximum(_rows(pl.micro, t, stage), 0)

    def no_fwd(_: None) -> tuple:
        y = jnp.zeros(x.shape, x.dtype)
        return y, _zeros(dev.res_shapes), jnp.zeros((), jnp.float32), _zeros(dev.head), y

    y, kept, value, dh, dy_seed = jax.lax.cond(
        ph == FORWARD, lambda _: _forward_tick(pl, dev, t, act_buf, m), no_fwd, None
    )
    res_slot = jnp.where(ph == FORWARD, _rows(pl.residual, t, stage), -1)
    res_bufs = [_put(b, res_slot, k) for b, k in zip(res_bufs, kept, strict=True)]

    def no_bwd(_: None) -> tuple:
        return _zeros(dev.layers), jnp.zeros(x.shape, x.dtype), _zeros(dev.emb)

    dl, dx, de = jax.lax.cond(
        ph == BACKWARD, lambda _: _backward_tick(pl, dev, t, res_bufs, grad_buf, m), no_bwd, None
    )
    add = partial(jax.tree.map, jnp.add)
    d_layers, d_emb, d_head = add(d_layers, dl), add(d_emb, de), add(d_head, dh)
    if S > 1:
        got_y = jax.lax.ppermute(y, STAGE_AXIS, [(i, i + 1) for i in range(S - 1)])
        got_dx = jax.lax.ppermute(dx, STAGE_AXIS, [(i + 1, i) for i in range(S - 1)])
    else:
        got_y, got_dx = y, dx
    act_buf = _put(act_buf, _rows(pl.act_write, t, stage), got_y)
    arriving = jnp.where(stage == S - 1, dy_seed, got_dx)
    grad_buf = _put(grad_buf, _rows(pl.grad_write, t, stage), arriving)
    return res_bufs, act_buf, grad_buf, d_layers, d_emb, d_head, loss + value


def _stage_program(
    pl: Plan, *, checkpoint: bool, tokens: int, data_axis: str | None
) -> Callable[..., tuple[jax.Array, Params]]:
    """The per-device program: local params and batch rows in, summed loss and grads out
    (:func:`_tick` for each tick of the schedule, then the sums over stages and data)."""

    def program(params: Params, inputs: jax.Array, targets: jax.Array) -> tuple[Any, Params]:
        dev = _device(pl, params, inputs, targets, checkpoint, tokens)
        out = jax.lax.fori_loop(0, pl.ticks, partial(_tick, pl, dev), _empty_carry(pl, dev))
        _, _, _, d_layers, d_emb, d_head, loss = out
        everywhere = (STAGE_AXIS, data_axis) if data_axis else (STAGE_AXIS,)
        loss = jax.lax.psum(loss, everywhere)
        d_emb, d_head = jax.lax.psum((d_emb, d_head), everywhere)
        if data_axis:
            d_layers = jax.lax.psum(d_layers, data_axis)
        grads = {**d_emb, **d_head, "layers": jax.tree.map(lambda a: a[None], d_layers)}
        return loss, grads

    return program


def pipelined_value_and_grad(
    params: Params,
    batch: dict[str, jax.Array],
    mesh: Any,
    *,
    schedule: Schedule,
    checkpoint: bool = False,
    data_axis: str | None = None,
) -> tuple[jax.Array, Params]:
    """The zoo transformer's loss and gradients (as ``jax.value_and_grad(loss_fn)`` gives
    them, the layers stacked ``[stages, layers // stages, ...]``), computed by running
    ``schedule`` on ``mesh``'s ``stage`` axis, each microbatch's rows split over
    ``data_axis`` when given.

    Raises:
        ValueError: the batch does not split into the microbatches (and data shards).
    """
    b, t = batch["inputs"].shape
    shards = mesh.shape[data_axis] if data_axis else 1
    m = schedule.microbatches
    if b % (m * shards):
        raise ValueError(
            f"a batch of {b} rows cannot be split into {m} microbatches"
            + (f" over {shards} data shards" if shards > 1 else "")
            + ": give a number of microbatches that divides the batch"
        )
    pl = plan(schedule)
    program = _stage_program(pl, checkpoint=checkpoint, tokens=b * t, data_axis=data_axis)
    rows = P(data_axis) if data_axis else P()
    p_specs = {k: (jax.tree.map(lambda _: P(STAGE_AXIS), v) if k == "layers" else
                   jax.tree.map(lambda _: P(), v)) for k, v in params.items()}  # fmt: skip
    run = jax.shard_map(
        program, mesh=mesh, in_specs=(p_specs, rows, rows), out_specs=(P(), p_specs),
        check_vma=False,
    )  # fmt: skip
    return run(params, batch["inputs"], batch["targets"])


def residual_bytes(
    params_shape: Params, inputs_shape: Any, microbatches: int, checkpoint: bool, shards: int = 1
) -> int:
    """Bytes one stage keeps for the backward of one microbatch in flight: ``jax.vjp``'s
    residuals of its layers (without the layers themselves), or its input when checkpointed.
    ``params_shape`` has the stacked ``[stages, ...]`` layers; ``shards`` splits the rows."""
    layers = jax.tree.map(
        lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype), params_shape["layers"]
    )
    emb = {k: params_shape[k] for k in EMBED_KEYS}
    b, t = inputs_shape.shape
    tokens = jax.ShapeDtypeStruct((b // (microbatches * shards), t), inputs_shape.dtype)
    x = jax.eval_shape(_embed, emb, tokens)

    def kept(layers: Params, x: jax.Array) -> list[jax.Array]:
        return _residuals(jax.vjp(_stage_fn(checkpoint), layers, x)[1], layers)[0]

    shapes = jax.eval_shape(kept, layers, x)
    return int(sum(np.prod(s.shape) * np.dtype(s.dtype).itemsize for s in shapes))
