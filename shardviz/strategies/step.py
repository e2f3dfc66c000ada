"""A strategy's training step: every leaf's sharding from a rule set, and the jitted step.

:func:`strategy_step` builds, for a model, an optimizer and a :class:`~.rules.RuleSet` on a
mesh, the Adam-style train step ``(params, opt_state, batch) -> (params, opt_state, loss)``
jitted with the strategy's shardings (the gradients constrained as the strategy says, named
activations too), and its arguments as ``ShapeDtypeStruct`` objects: what :func:`~.runner.compare`
compiles and runs, and what a planner compiles for a topology without allocating anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax.sharding import NamedSharding, PartitionSpec

from shardviz.capture.compile import is_compile_only
from shardviz.capture.layout import layout_of
from shardviz.capture.mesh import Mesh, as_jax_mesh, mesh_has_memory
from shardviz.errors import ArgumentError, problem
from shardviz.strategies.memory_space import HOST_KIND, to_device, to_host
from shardviz.strategies.models.axes import SpecConstrain
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.rules import (
    RuleSet,
    axes_needed,
    check_rules_used,
    default_mesh_shape,
    spec_for_leaf,
)
from shardviz.strategies.zoo import ModelDef, with_decoder_options


@dataclass(frozen=True)
class StrategyStep:
    """A strategy's jitted train step and what it compiles from.

    Attributes:
        step: the jitted ``(params, opt_state, batch) -> (params, opt_state, loss)``.
        abstract: its arguments as ``ShapeDtypeStruct`` objects carrying the strategy's shardings.
        shardings: the ``(params, opt_state, batch)`` shardings (to place real arrays).
        mesh: the jax mesh it runs on.
        params_shape: the parameters' shapes and dtypes.
        grad_specs: the gradients' partition specs.
    """

    step: Any
    abstract: tuple
    shardings: tuple
    mesh: jax.sharding.Mesh
    params_shape: Any
    grad_specs: Any
    #: What the step could not do as the rule set asks (a memory kind the devices lack).
    notes: tuple[str, ...] = ()

    @cached_property
    def grad_bytes(self) -> int:
        """Bytes of the gradients on the device holding the most, as the strategy shards them."""
        return _grad_bytes(self.params_shape, self.grad_specs, self.mesh)


def strategy_step(
    model: ModelDef,
    rule_set: RuleSet,
    mesh: Any = None,
    *,
    seed: int = 0,
    optimizer: optax.GradientTransformation | None = None,
    devices: Sequence[Any] | None = None,
    donate: bool | None = None,
) -> StrategyStep:
    """``model``'s train step placed by ``rule_set`` on ``mesh``, nothing allocated.

    Args:
        model: the model (its init, batch and loss).
        rule_set: where each leaf goes (params, gradients, optimizer state, batch,
            activations).
        mesh: a mesh with the axes the rule set names; default: one over ``devices`` (default
            all of jax's) shaped by the rule set.
        seed: the key the shapes are traced with.
        optimizer: default Adam (1e-3).
        donate: donate the params and optimizer state, as a training loop does. Default:
            on a deviceless mesh (a plan for chips that are not here, which never runs:
            its memory is the training loop's, where the new state takes the old one's
            buffers), off where the step runs here (a run keeps its inputs to check against).

    Raises:
        ShardvizError: a rule that does not fit a leaf, or a mesh without the rule set's axes.
    """
    opt = optimizer or optax.adam(1e-3)
    model = _offload_model(model, rule_set)
    jm = _mesh_for(rule_set, mesh, devices)
    if donate is None:
        donate = is_compile_only(jm.devices.flat[0])
    axes = dict(zip(jm.axis_names, jm.devices.shape, strict=True))
    key_p, key_b = jax.random.split(jax.random.key(seed))
    params_shape = jax.eval_shape(model.init_params, key_p)
    _check_trainable(model, params_shape)
    batch_shape = jax.eval_shape(model.make_batch, key_b)
    opt_shape = jax.eval_shape(opt.init, params_shape)
    strict = rule_set.strict
    p_specs = tree_specs(params_shape, rule_set.params, axes, "params", strict)
    g_specs = tree_specs(params_shape, rule_set.rules_for("grads"), axes, "grads", strict)
    o_specs = _optimizer_specs(
        opt_shape, params_shape, rule_set.rules_for("optimizer"), axes, strict
    )
    b_specs = tree_specs(batch_shape, rule_set.batch, axes, "batch", strict)
    params_host, opt_host = "params" in rule_set.host, "optimizer" in rule_set.host
    p_sh = _shardings(jm, p_specs, HOST_KIND if params_host else None)
    o_sh = _shardings(jm, o_specs, HOST_KIND if opt_host else None)
    b_sh, g_sh = _shardings(jm, b_specs), _shardings(jm, g_specs)
    # A published decoder streams host weights one layer at a time; any other model has
    # them brought to HBM whole at the start of the step.
    streamed = params_host and model.info.get("weights") == "host"
    notes = _host_kind_notes(rule_set, jm)

    constrained = model
    if rule_set.activations:
        rules = rule_set.activations

        def spec_of(name: str, shape: tuple[int, ...]) -> PartitionSpec | None:
            for pattern, spec in rules:
                if re.fullmatch(pattern, name):
                    return PartitionSpec(*(spec(shape, axes) if callable(spec) else spec))
            return None

        constrained = model.constrained(SpecConstrain(jm, spec_of))

    def train_step(params, opt_state, batch):
        used = params if streamed or not params_host else to_device(params)
        if model.value_and_grad_on is not None:  # the model computes them on the mesh itself
            loss, grads = model.value_and_grad_on(used, batch, jm)
        else:
            loss, grads = jax.value_and_grad(constrained.loss)(used, batch)
        if params_host:  # a streamed layer's gradient comes back where its weights live
            grads, params = to_device(grads), to_device(params)
        grads = jax.lax.with_sharding_constraint(grads, g_sh)
        if opt_host:  # ZeRO-Offload: the state comes to HBM for its update and goes back
            opt_state = to_device(opt_state)
        updates, opt_state = opt.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (
            to_host(params) if params_host else params,
            to_host(opt_state) if opt_host else opt_state,
            loss,
        )

    train_step.__qualname__ = f"train_step[{model.name}, {rule_set.name}]"
    step = jax.jit(
        train_step, in_shardings=(p_sh, o_sh, b_sh),
        out_shardings=(p_sh, o_sh, NamedSharding(jm, PartitionSpec())),
        donate_argnums=_donated(donate, params_host, opt_host, mesh_has_memory(jm, HOST_KIND)),
    )  # fmt: skip
    abstract = _abstract((params_shape, opt_shape, batch_shape), (p_sh, o_sh, b_sh))
    return StrategyStep(
        step=step, abstract=abstract, shardings=(p_sh, o_sh, b_sh), mesh=jm,
        params_shape=params_shape, grad_specs=g_specs, notes=notes,
    )  # fmt: skip


def _donated(donate: bool, params_host: bool, opt_host: bool, host_memory: bool) -> tuple[int, ...]:
    """The step's donated arguments: params (0) and optimizer state (1). State a rule set
    keeps in host memory is donated only where the devices have host memory: without it (a
    deviceless GPU on jax 0.10.2) the state stays in HBM and the step writes its new value
    out, and aliasing the two would add transfers."""
    if not donate:
        return ()
    return tuple(
        i for i, on_host in ((0, params_host), (1, opt_host)) if host_memory or not on_host
    )


def _check_trainable(model: ModelDef, params_shape: Any) -> None:
    """Refuse parameters a train step cannot differentiate (jax's ``grad`` takes floats only)
    before anything is traced, naming the first such leaf."""
    for path, leaf in jax.tree_util.tree_flatten_with_path(params_shape)[0]:
        if not jnp.issubdtype(leaf.dtype, jnp.inexact):
            raise ArgumentError(
                problem(
                    f"model {model.name!r}",
                    f"its parameter {_path(path) or 'params'} is {jnp.dtype(leaf.dtype).name}, "
                    "and a training step takes gradients and optimizer updates of every "
                    "parameter in its own dtype",
                    "make the parameters float (dtype='bfloat16' or dtype='float32'); keep "
                    "integer tables in the batch, or close over them in the loss",
                )
            )


def _host_kind_notes(rule_set: RuleSet, mesh: jax.sharding.Mesh) -> tuple[str, ...]:
    """A note when the devices lack the host memory the rule set asks for: a deviceless GPU
    topology's devices list no memories (jax 0.10.2), so jax drops ``memory_kind=
    "pinned_host"`` from their shardings and those arguments compile into HBM. Values the
    step itself sends to host (its outputs, offloaded activations) still go."""
    if not rule_set.host or mesh_has_memory(mesh, HOST_KIND):
        return ()
    return (
        f"the devices have no {HOST_KIND} memory for arguments (a deviceless GPU topology "
        f"lists none in jax 0.10.2): the {' and '.join(rule_set.host)} come in as HBM "
        "arguments; only what the step sends to host (its outputs, offloaded activations) "
        "is in host memory",
    )


def _offload_model(model: ModelDef, rule_set: RuleSet) -> ModelDef:
    """``model`` with the decoder options the rule set's offload needs: its remat policy,
    and weights streamed from host when a published decoder keeps them there."""
    options: dict[str, Any] = {}
    if rule_set.remat is not None:
        options["remat"] = rule_set.remat
    if "params" in rule_set.host and isinstance(model.info.get("config"), ArchConfig):
        options["weights"] = "host"
    if not options:
        return model
    return with_decoder_options(model, f"strategy {rule_set.name!r}", **options)


def _mesh_for(rule_set: RuleSet, mesh: Any, devices: Sequence[Any] | None = None):
    """The mesh a strategy runs on: ``mesh``, else one over ``devices`` (default: all of
    jax's) with the axes the strategy names."""
    if mesh is None:
        pool = list(devices) if devices is not None else jax.devices()
        stages = rule_set.extra.get("stages")
        if stages and stages > len(pool):
            raise ArgumentError(
                problem(
                    f"strategy {rule_set.name!r}",
                    f"stages={stages} needs {stages} devices on its 'stage' axis, and there "
                    f"are {len(pool)}",
                    f"pass stages= at most {len(pool)}, or compile for a topology with more "
                    "devices (target='v5e:4x4')",
                )
            )
        shape = default_mesh_shape(rule_set, len(pool))
        pool = pool[: math.prod(shape)]  # a pipeline of fewer stages than devices uses some
        return Mesh(pool, shape, rule_set.axes).jax_mesh
    jm = as_jax_mesh(mesh)
    axes_needed(rule_set, jm.axis_names)
    return jm


def _path(p: tuple) -> str:
    return jax.tree_util.keystr(p, simple=True, separator="/")


def tree_specs(tree: Any, rules: Sequence, axes: dict[str, int], what: str, strict: bool):
    """A PartitionSpec per leaf of ``tree`` from ``rules`` (first match; unmatched replicate)."""
    flat, treedef = jax.tree_util.tree_flatten_with_path(tree)
    used: set[int] = set()
    specs = []
    for p, leaf in flat:
        spec, i = spec_for_leaf(_path(p), tuple(leaf.shape), rules, axes, what)
        if i is not None:
            used.add(i)
        specs.append(PartitionSpec(*spec))
    if strict:
        check_rules_used(rules, used, [_path(p) for p, _ in flat], what)
    return jax.tree_util.tree_unflatten(treedef, specs)


def _optimizer_specs(opt_shape: Any, params_shape: Any, rules, axes, strict: bool):
    """Optimizer leaves that mirror a parameter (Adam's mu, nu) get that parameter's spec from
    the optimizer rules; the rest (step counters) are replicated."""
    param_specs = tree_specs(params_shape, rules, axes, "optimizer", strict)
    by_path = {
        _path(p): s
        for p, s in jax.tree_util.tree_flatten_with_path(
            param_specs, is_leaf=lambda x: isinstance(x, PartitionSpec)
        )[0]
    }
    flat, treedef = jax.tree_util.tree_flatten_with_path(opt_shape)
    specs = []
    for p, _ in flat:
        path = _path(p)
        match = next((s for k, s in by_path.items() if path == k or path.endswith("/" + k)), None)
        specs.append(match if match is not None else PartitionSpec())
    return jax.tree_util.tree_unflatten(treedef, specs)


def _shardings(mesh: jax.sharding.Mesh, specs: Any, memory_kind: str | None = None) -> Any:
    return jax.tree.map(
        lambda s: NamedSharding(mesh, s, memory_kind=memory_kind),
        specs,
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )


def _grad_bytes(params_shape: Any, grad_specs: Any, mesh: jax.sharding.Mesh) -> int:
    total = 0
    for leaf, spec in zip(
        jax.tree.leaves(params_shape),
        jax.tree.leaves(grad_specs, is_leaf=lambda x: isinstance(x, PartitionSpec)),
        strict=True,
    ):
        lay = layout_of(leaf.shape, leaf.dtype, NamedSharding(mesh, spec))
        total += lay.max_bytes_per_device
    return total


def _abstract(shapes: Any, shardings: Any) -> tuple:
    """``ShapeDtypeStruct`` objects with shardings: what a program compiles from before any array
    exists."""
    return tuple(
        jax.tree.map(lambda x, sh: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sh), t, s)
        for t, s in zip(shapes, shardings, strict=True)
    )
