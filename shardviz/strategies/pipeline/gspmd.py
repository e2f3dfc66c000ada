"""Pipeline parallelism in GSPMD's form: identical blocks stacked on a leading stage dim.

GSPMD turns a homogeneous pipeline into sharding: the zoo transformer's layers are stacked
into arrays with a leading ``[stages, layers_per_stage, ...]`` shape, that stage dim is split
over a ``stage`` mesh axis, and every stage applies its own layers at once (``vmap`` over the
stage dim). A state buffer ``[stages, microbatch, T, D]`` holds what each stage works on; after
each step it shifts one stage along (``jnp.roll`` on the split dim, which the partitioner turns
into a collective-permute from each stage's devices to the next's), stage 0 takes the next
microbatch, and the last stage's result is the output of the microbatch that entered
``stages - 1`` steps before. ``microbatches + stages - 1`` steps run everything through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from shardviz.errors import ShardvizError, problem
from shardviz.model.arguments import whole_number
from shardviz.model.schedule import schedule as make_schedule
from shardviz.strategies.pipeline.shard_map import pipelined_value_and_grad
from shardviz.strategies.pipeline.stages import STAGE_AXIS, stack_layers, stage_forward
from shardviz.strategies.transformer import Params, layer_norm

#: ``constrain(name, array)`` for the arrays with a leading stage dim: ``"stage_layers"`` (each
#: stacked layer parameter), ``"stage_state"`` (the state buffer, ``[S, mb, T, D]``) and
#: ``"stage_outputs"`` (the outputs buffer, ``[S, M, mb, T, D]``).
Constrain = Callable[[str, jax.Array], jax.Array]
STAGE_ARRAYS = ("stage_layers", "stage_state", "stage_outputs")


def _same(name: str, x: jax.Array) -> jax.Array:
    del name
    return x


def pipelined_forward(
    params: Params,
    inputs: jax.Array,
    *,
    stages: int,
    microbatches: int,
    constrain_stages: Constrain = _same,
    checkpoint: bool = False,
) -> jax.Array:
    """Logits ``[B, T, vocab]``, the same as :func:`shardviz.strategies.transformer.forward`,
    computed as a pipeline of ``stages`` over ``microbatches``.

    ``params["layers"]`` is the zoo's list of layers (stacked here) or already stacked by
    :func:`stack_layers` (then it can be placed split over the ``stage`` axis as it is kept,
    and nothing is resharded to stack it). ``constrain_stages(name, array)`` pins the sharding
    of every array with a leading stage dim (named in :data:`STAGE_ARRAYS`): give one that
    splits dim 0 over the ``stage`` axis to run the stages on their own devices. With
    ``checkpoint``, each stage keeps only its input for the backward pass and computes its
    layers again there (``jax.checkpoint``): less activation memory, more compute.

    Raises:
        ValueError: the layers or the batch do not split evenly.
    """
    batch, t = inputs.shape
    if microbatches < 1 or batch % microbatches:
        raise ValueError(
            f"a batch of {batch} cannot be split into {microbatches} microbatches: give a "
            "number of microbatches that divides the batch"
        )
    layers = params["layers"]
    stacked = stack_layers(layers, stages) if isinstance(layers, list) else layers
    staged = jax.tree.map(lambda a: constrain_stages("stage_layers", a), stacked)
    x = params["embed"][inputs] + params["pos"][:t]
    d = x.shape[-1]
    mb = batch // microbatches
    xs = x.reshape(microbatches, mb, t, d)
    state = constrain_stages("stage_state", jnp.zeros((stages, mb, t, d), x.dtype))
    # Each stage keeps the outputs it finishes in its own row (only the last stage's row is
    # ever written): no stage sends anything to collect them until the loop is over.
    outs = constrain_stages("stage_outputs", jnp.zeros((stages, *xs.shape), x.dtype))
    last = stages - 1
    stage_id = jax.lax.broadcasted_iota(jnp.int32, (stages, 1, 1, 1), 0)

    def step(i: jax.Array, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        state, outs = carry
        state = jnp.roll(state, 1, axis=0)  # each stage takes the previous stage's result
        entering = jax.lax.dynamic_index_in_dim(xs, jnp.minimum(i, microbatches - 1), 0, True)
        state = jnp.where((stage_id == 0) & (i < microbatches), entering, state)
        stage = jax.checkpoint(stage_forward) if checkpoint else stage_forward
        state = constrain_stages("stage_state", state)
        state = constrain_stages("stage_state", jax.vmap(stage)(staged, state))
        done = jnp.maximum(i - last, 0)  # the microbatch the last stage just finished
        kept = jax.lax.dynamic_index_in_dim(outs, done, 1, False)
        finished = (stage_id == last) & (i >= last)
        row = jnp.where(finished, state, kept)
        outs = jax.lax.dynamic_update_index_in_dim(outs, row, done, 1)
        return state, constrain_stages("stage_outputs", outs)

    _, outs = jax.lax.fori_loop(0, microbatches + last, step, (state, outs))
    outs = outs[last]  # the last stage's row, sent once
    h = layer_norm(params["ln_f"], outs.reshape(batch, t, d))
    return h @ params["unembed"]


def stage_constraint(mesh: Any) -> Constrain:
    """A ``constrain_stages`` that splits dim 0 of every stage array over ``mesh``'s
    ``stage`` axis."""
    from jax.sharding import NamedSharding, PartitionSpec

    def constrain(name: str, x: jax.Array) -> jax.Array:
        del name
        spec = PartitionSpec(STAGE_AXIS, *([None] * (x.ndim - 1)))
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, spec))

    return constrain


def pipelined_loss(
    params: Params,
    batch: dict[str, jax.Array],
    *,
    stages: int,
    microbatches: int,
    constrain_stages: Constrain = _same,
    checkpoint: bool = False,
) -> jax.Array:
    """The zoo transformer's next-token loss (:func:`shardviz.strategies.transformer.loss_fn`)
    computed through the pipeline: the same value, and through ``jax.grad`` the same gradients."""
    logits = pipelined_forward(
        params, batch["inputs"], stages=stages, microbatches=microbatches,
        constrain_stages=constrain_stages, checkpoint=checkpoint,
    ).astype(jnp.float32)  # fmt: skip
    logp = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, batch["targets"][..., None], axis=-1)
    return -jnp.mean(picked)


def pipelined_model(
    model: Any,
    *,
    stages: int,
    microbatches: int,
    checkpoint: bool = False,
    schedule: str | None = None,
) -> Any:
    """The zoo transformer (a :class:`~shardviz.strategies.zoo.ModelDef` whose parameters hold
    a ``layers`` list) trained as a pipeline, its layers kept stacked
    ``[stages, layers // stages, ...]``.

    With ``schedule=None``, GSPMD's form: its loss computed by :func:`pipelined_loss`, with
    the stage arrays passed to the activation hook (names :data:`STAGE_ARRAYS`) for a rule
    set to place. With ``"gpipe"`` or ``"1f1b"``, each stage's program written with
    ``shard_map`` and run in that order (:mod:`.shard_map`): the model computes its
    loss and gradients on the strategy's mesh (``value_and_grad_on``). ``model.loss`` is the
    same loss in both, which is what the one-device reference step runs.

    Raises:
        ArgumentError: ``stages`` or ``microbatches`` is not a whole number >= 1.
        ShardvizError: the model has no list of identical layers, or the layers or the
            batch do not split evenly.
    """
    from dataclasses import replace

    where = f"model {model.name!r}"
    stages = whole_number(where, "stages", stages, example=2)
    microbatches = whole_number(where, "microbatches", microbatches, example=4)
    shape = jax.eval_shape(model.init_params, jax.random.key(0))
    layers = shape.get("layers") if isinstance(shape, dict) else None
    if not isinstance(layers, list) or not layers:
        raise ShardvizError(
            problem(
                f"model {model.name!r}",
                "its parameters have no 'layers' list of identical blocks to stack",
                "pipeline the built-in 'transformer' (get_model('transformer', layers=...))",
            )
        )
    if len(layers) % stages:
        raise ShardvizError(
            problem(
                f"model {model.name!r}",
                f"its {len(layers)} layers cannot be split evenly over {stages} stages",
                "give a number of stages that divides the number of layers",
            )
        )

    batch_shape = jax.eval_shape(model.make_batch, jax.random.key(0))
    inputs = batch_shape.get("inputs") if isinstance(batch_shape, dict) else None
    batch = inputs.shape[0] if inputs is not None and inputs.shape else None
    if batch is not None and batch % microbatches:
        raise ShardvizError(
            problem(
                where,
                f"its batch of {batch} cannot be split into {microbatches} microbatches",
                "give a number of microbatches that divides the batch (or a batch that "
                "microbatches divides)",
            )
        )

    def init(key: jax.Array) -> Params:
        params = model.init_params(key)
        return {**params, "layers": stack_layers(params["layers"], stages)}

    def loss_with(params: Params, batch: dict, constrain: Constrain) -> jax.Array:
        return pipelined_loss(
            params, batch, stages=stages, microbatches=microbatches,
            constrain_stages=constrain, checkpoint=checkpoint,
        )  # fmt: skip

    by_hand = None
    if schedule is not None:
        order = make_schedule(schedule, stages, microbatches)

        def by_hand(params: Params, batch: dict, mesh: Any) -> tuple[jax.Array, Params]:
            data = "data" if "data" in mesh.axis_names else None
            return pipelined_value_and_grad(
                params, batch, mesh, schedule=order, checkpoint=checkpoint, data_axis=data
            )

    written = f"{schedule}, shard_map" if schedule else "GSPMD"
    return replace(
        model,
        init_params=init,
        loss=lambda params, batch: loss_with(params, batch, _same),
        loss_with_constraints=loss_with,
        value_and_grad_on=by_hand,
        activations=STAGE_ARRAYS,
        info={
            **model.info,
            "stages": stages,
            "microbatches": microbatches,
            "schedule": schedule,
            "checkpoint": checkpoint,
        },  # fmt: skip
        description=f"{model.description} (pipelined: {stages} stages x {microbatches} "
        f"microbatches, {written}{', checkpointed' if checkpoint else ''})",
    )
