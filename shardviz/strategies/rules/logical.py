"""Logical axis rules: strategies as tables from logical axis names to mesh axes.

As in MaxText and Flax (``logical_axis_rules``), a strategy is a table ``(logical name,
mesh axes)``: a parameter or activation whose dims are named, say, ``("embed", "mlp")`` is
split as ``P("fsdp", "tensor")`` under ``fsdp+tp``. Each strategy has two tables, one for
parameters and one for activations, because the same name is split differently in each:
FSDP splits a weight's ``embed`` dim but an activation's ``batch`` dim over ``fsdp``.

Rules are strict: a dim whose name no rule maps, two dims of one array on one mesh axis, a
mesh axis the mesh lacks and a dim that does not divide by its mesh axes are each a
:class:`~shardviz.errors.ShardvizError` saying what to change. :func:`logical_rule_set`
turns a strategy into a :class:`~shardviz.strategies.rules.RuleSet`, so
``strategy_step`` and ``compare`` run these models under it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from shardviz.errors import ShardvizError, problem
from shardviz.strategies.models.axes import (
    ACTIVATION_AXES,
    LOGICAL_AXES,
    STORED_AXES,
    Constrain,
    SpecConstrain,
)
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.models.params import nest, param_table
from shardviz.strategies.rules import RuleSet

__all__ = [
    "LOGICAL_STRATEGIES",
    "STRATEGY_RULES",
    "LogicalRules",
    "activation_constrainer",
    "batch_specs",
    "get_logical_rules",
    "logical_rule_set",
    "logical_to_spec",
    "make_mesh",
    "param_shardings",
    "param_specs",
]

#: A rule table: ``(logical axis name, mesh axes it splits over)``; ``()`` keeps it whole.
Table = tuple[tuple[str, tuple[str, ...]], ...]

#: Logical axes split by another's rule where a table has none of their own.
_FALLBACKS = {"embed_no_exp": "embed"}

#: The logical axes of the batch's ``inputs`` and ``targets``.
BATCH_AXES = ("batch", "sequence")


@dataclass(frozen=True)
class LogicalRules:
    """A strategy as logical axis rules.

    Attributes:
      name: the strategy's name, e.g. ``"fsdp+tp"``.
      mesh_axes: the mesh axes it uses, in mesh order.
      params: the rule table for parameters (and gradients and optimizer state).
      activations: the rule table for activations and the batch.
      description: one line on what it splits.
    """

    name: str
    mesh_axes: tuple[str, ...]
    params: Table
    activations: Table
    description: str = ""

    def __post_init__(self) -> None:
        for kind, table in (("params", self.params), ("activations", self.activations)):
            names = [n for n, _ in table]
            for n in sorted({n for n in names if names.count(n) > 1}):
                raise ShardvizError(
                    problem(
                        f"logical rules {self.name!r} ({kind})",
                        f"logical axis {n!r} has more than one rule",
                        "keep one rule per logical axis",
                    )
                )
            for n, axes in table:
                stray = [a for a in axes if a not in self.mesh_axes]
                if stray:
                    raise ShardvizError(
                        problem(
                            f"logical rules {self.name!r} ({kind})",
                            f"logical axis {n!r} maps to mesh axes {tuple(stray)} that are "
                            f"not among the strategy's mesh axes {self.mesh_axes}",
                            "add them to mesh_axes, or map the axis to mesh_axes only",
                        )
                    )

    def mesh_shape(self, devices: int) -> tuple[int, ...]:
        """The default mesh over ``devices``: all on one axis; with two, 2 x n/2 (as the
        built-in strategies' default meshes)."""
        if len(self.mesh_axes) == 1:
            return (devices,)
        first = 2 if devices % 2 == 0 and devices > 1 else 1
        return (first, devices // first) + (1,) * (len(self.mesh_axes) - 2)


def _table(**splits: tuple[str, ...]) -> Table:
    """Every logical axis, whole unless ``splits`` maps it. MLA's latents, the input dim of
    their up projections, split as ``embed`` is (as MaxText's ``q_lora`` and ``kv_lora``
    rules do): FSDP then splits every weight; so does the experts' width (``embed_no_exp``)
    unless ``splits`` says otherwise."""
    embed = splits.get("embed", ())
    latent = {"q_lora": embed, "kv_lora": embed, "embed_no_exp": embed}
    splits = latent | splits
    return tuple((name, splits.get(name, ())) for name in LOGICAL_AXES)


_TP = {"heads": ("tensor",), "kv_heads": ("tensor",), "mlp": ("tensor",), "vocab": ("tensor",)}

#: The built-in strategies for the published architectures, by name.
STRATEGY_RULES: dict[str, LogicalRules] = {
    r.name: r
    for r in (
        LogicalRules(
            "fsdp", ("fsdp",),
            params=_table(embed=("fsdp",)),
            activations=_table(batch=("fsdp",), expert_group=("fsdp",)),
            description="FSDP / ZeRO-3: weights split on their embed dim, the batch split, "
            "over 'fsdp'; each layer's weights are gathered when used",
        ),
        LogicalRules(
            "fsdp+tp", ("fsdp", "tensor"),
            params=_table(embed=("fsdp",), **_TP),
            activations=_table(batch=("fsdp",), expert_group=("fsdp",), **_TP),
            description="FSDP over 'fsdp' and Megatron tensor parallelism over 'tensor' "
            "(heads, MLP hidden and vocabulary split)",
        ),
        LogicalRules(
            "tp", ("tensor",),
            params=_table(**_TP),
            activations=_table(**_TP),
            description="Megatron tensor parallelism: heads, MLP hidden and vocabulary split "
            "over 'tensor'; every device sees the whole batch",
        ),
        LogicalRules(
            "dp+fsdp", ("data", "fsdp"),
            params=_table(embed=("fsdp",)),
            activations=_table(batch=("data", "fsdp"), expert_group=("data", "fsdp")),
            description="FSDP within 'fsdp', data parallel (replicas) across 'data' (HSDP)",
        ),
        LogicalRules(
            "sp", ("fsdp", "sequence"),
            params=_table(embed=("fsdp", "sequence")),
            activations=_table(
                batch=("fsdp",), sequence=("sequence",), expert_group=("fsdp",)
            ),
            description="sequence (context) parallel: activations split along the sequence "
            "over 'sequence', weights split FSDP-style over both axes",
        ),
        LogicalRules(
            "ep", ("fsdp", "expert"),
            params=_table(embed=("fsdp", "expert"), embed_no_exp=("fsdp",), expert=("expert",)),
            activations=_table(
                batch=("fsdp", "expert"), expert=("expert",), expert_group=("fsdp",)
            ),
            description="expert parallel: experts split over 'expert' (tokens reach them by "
            "all-to-all), their width over 'fsdp'; every other weight split over both axes, "
            "as the batch is outside the MoE layers (MaxText's rules)",
        ),
        LogicalRules(
            "pp", ("stage", "fsdp"),
            params=_table(layers=("stage",), embed=("fsdp",)),
            activations=_table(batch=("fsdp",), expert_group=("fsdp",)),
            description="the stacked layers split over 'stage' (layer i's weights live on "
            "stage i * stages / layers, fetched when the scan reaches it), FSDP over 'fsdp'; "
            "a pipeline schedule is strategies.pipeline's",
        ),
    )
}  # fmt: skip

#: The built-in strategies' names.
LOGICAL_STRATEGIES: tuple[str, ...] = tuple(STRATEGY_RULES)


def get_logical_rules(strategy: str | LogicalRules) -> LogicalRules:
    """A built-in strategy by name, or the user's own :class:`LogicalRules` as it is."""
    if isinstance(strategy, LogicalRules):
        return strategy
    if strategy not in STRATEGY_RULES:
        raise ShardvizError(
            problem(
                f"strategy {strategy!r}",
                "no logical-rules strategy has this name",
                f"use one of {', '.join(map(repr, LOGICAL_STRATEGIES))}, or pass LogicalRules",
            )
        )
    return STRATEGY_RULES[strategy]


def logical_to_spec(
    axes: Sequence[str | None],
    table: Table,
    *,
    what: str = "array",
    shape: Sequence[int] | None = None,
    mesh_sizes: Mapping[str, int] | None = None,
) -> PartitionSpec:
    """The PartitionSpec of an array whose dims have logical names ``axes`` (``None``: whole).

    With ``shape`` and ``mesh_sizes`` each split dim is checked to divide evenly, and each mesh
    axis to exist.

    Raises:
      ShardvizError: a name no rule maps, two dims on one mesh axis, a mesh without a named
        axis, or a dim that does not divide by its mesh axes.
    """
    rules = dict(table)
    used: dict[str, str] = {}
    entries: list[Any] = []
    for d, name in enumerate(axes):
        if name is None:
            entries.append(None)
            continue
        if name not in rules and name in _FALLBACKS and _FALLBACKS[name] in rules:
            name = _FALLBACKS[name]
        if name not in rules:
            raise ShardvizError(
                problem(
                    f"{what}, logical axis {name!r}",
                    f"no rule maps it (the rules map {', '.join(map(repr, rules))})",
                    f"add a rule ({name!r}, ()) to keep it whole, or ({name!r}, (mesh_axis,)) "
                    "to split it",
                )
            )
        mesh_axes = rules[name]
        for a in mesh_axes:
            if a in used:
                raise ShardvizError(
                    problem(
                        what,
                        f"logical axes {used[a]!r} and {name!r} of one array (axes "
                        f"{tuple(axes)}) both map to mesh axis {a!r}",
                        f"map one of {used[a]!r}, {name!r} to another mesh axis, or to () to "
                        "keep it whole",
                    )
                )
            used[a] = name
        if mesh_sizes is not None:
            _check_fits(what, name, mesh_axes, None if shape is None else shape[d], mesh_sizes)
        entries.append(
            None if not mesh_axes else mesh_axes[0] if len(mesh_axes) == 1 else mesh_axes
        )
    return PartitionSpec(*entries)


def _check_fits(
    what: str, name: str, mesh_axes: tuple[str, ...], size: int | None, mesh: Mapping[str, int]
) -> None:
    missing = [a for a in mesh_axes if a not in mesh]
    if missing:
        raise ShardvizError(
            problem(
                f"{what}, logical axis {name!r}",
                f"its rule splits it over mesh axes {mesh_axes}, but the mesh has {tuple(mesh)}",
                "use a mesh with those axes (make_mesh(rules) builds one), or change the rule",
            )
        )
    ways = math.prod(mesh[a] for a in mesh_axes)
    if size is not None and size % ways:
        sizes = " x ".join(f"{a}={mesh[a]}" for a in mesh_axes)
        raise ShardvizError(
            problem(
                f"{what}, logical axis {name!r}",
                f"{name}={size} does not divide over mesh axes {sizes} ({ways} ways)",
                f"pick {name} a multiple of {ways}, or a mesh with fewer devices on "
                f"{', '.join(map(repr, mesh_axes))}",
            )
        )


def mesh_sizes(mesh: Mesh) -> dict[str, int]:
    """``{axis name: size}`` of a jax mesh."""
    return dict(zip(mesh.axis_names, mesh.devices.shape, strict=True))


def make_mesh(
    strategy: str | LogicalRules,
    devices: Sequence[Any] | None = None,
    shape: Sequence[int] | None = None,
) -> Mesh:
    """A mesh with the strategy's axes (Auto axes: the compiler completes the shardings).

    Args:
      strategy: a built-in name or :class:`LogicalRules`.
      devices: default all of jax's.
      shape: default :meth:`LogicalRules.mesh_shape` of the device count.
    """
    rules = get_logical_rules(strategy)
    pool = list(devices) if devices is not None else jax.devices()
    shape = tuple(shape) if shape is not None else rules.mesh_shape(len(pool))
    if len(shape) != len(rules.mesh_axes) or math.prod(shape) > len(pool):
        raise ShardvizError(
            problem(
                f"make_mesh({rules.name!r})",
                f"shape {shape} does not fit axes {rules.mesh_axes} on {len(pool)} devices",
                f"give one size per axis, {len(pool)} devices at most in all",
            )
        )
    grid = np.array(pool[: math.prod(shape)], dtype=object).reshape(shape)
    return Mesh(grid, rules.mesh_axes)


def param_specs(
    config: ArchConfig, strategy: str | LogicalRules, mesh: Mesh | Mapping[str, int] | None = None
) -> dict[str, Any]:
    """The parameter tree of ``config`` with each leaf's PartitionSpec (checked against
    ``mesh``, a jax mesh or ``{axis: size}``, if given)."""
    rules = get_logical_rules(strategy)
    sizes = mesh_sizes(mesh) if isinstance(mesh, Mesh) else mesh
    return nest(
        {
            path: logical_to_spec(
                info.axes, rules.params, what=f"param {path}", shape=info.shape, mesh_sizes=sizes
            )
            for path, info in param_table(config).items()
        }
    )


def param_shardings(config: ArchConfig, strategy: str | LogicalRules, mesh: Mesh) -> Any:
    """The parameter tree of ``config`` with each leaf's NamedSharding on ``mesh``."""
    specs = param_specs(config, strategy, mesh)
    return jax.tree.map(
        lambda s: NamedSharding(mesh, s), specs, is_leaf=lambda x: isinstance(x, PartitionSpec)
    )


def batch_specs(
    strategy: str | LogicalRules,
    mesh: Mesh | Mapping[str, int] | None = None,
    *,
    batch: int | None = None,
    seq: int | None = None,
) -> dict[str, PartitionSpec]:
    """The specs of the batch's ``inputs`` and ``targets`` ``[batch, sequence]``, checked
    against ``mesh`` when it and the sizes are given."""
    rules = get_logical_rules(strategy)
    sizes = mesh_sizes(mesh) if isinstance(mesh, Mesh) else mesh
    shape = None if batch is None or seq is None else (batch, seq)
    return {
        key: logical_to_spec(
            BATCH_AXES, rules.activations, what=f"batch {key}", shape=shape, mesh_sizes=sizes
        )
        for key in ("inputs", "targets")
    }


def activation_constrainer(strategy: str | LogicalRules, mesh: Mesh) -> Constrain:
    """The decoder's ``constrain(name, x)`` hook: ``with_sharding_constraint`` of each named
    activation by the strategy's activation rules (:data:`shardviz.strategies.models.axes.ACTIVATION_AXES`)."""
    rules = get_logical_rules(strategy)
    sizes = mesh_sizes(mesh)

    def spec(name: str, shape: tuple[int, ...]) -> PartitionSpec:
        axes, table = _named_axes(name, rules)
        return logical_to_spec(
            axes, table, what=f"activation {name!r}", shape=shape, mesh_sizes=sizes
        )

    return SpecConstrain(mesh, spec)


def _named_axes(name: str, rules: LogicalRules) -> tuple[tuple[str | None, ...], Table]:
    """A name the model gives its ``constrain`` hook: its logical axes and the table that
    splits them (the activations'; the parameters' for a weight as stored,
    :data:`shardviz.strategies.models.axes.STORED_AXES`)."""
    if name in STORED_AXES:
        return STORED_AXES[name], rules.params
    return ACTIVATION_AXES[name], rules.activations


def _config_of(model: Any) -> ArchConfig:
    """The ArchConfig of a config, a DecoderModel or a zoo ModelDef of a published model."""
    if isinstance(model, ArchConfig):
        return model
    config = getattr(model, "config", None)
    if config is None:
        config = getattr(model, "info", {}).get("config")
    if not isinstance(config, ArchConfig):
        raise ShardvizError(
            problem(
                "logical_rule_set",
                f"{type(model).__name__} {getattr(model, 'name', '')!r} is not a published "
                "architecture (it has no ArchConfig)",
                "pass an ArchConfig, a DecoderModel, or get_model('<published name>')",
            )
        )
    return config


def logical_rule_set(strategy: str | LogicalRules, model: Any) -> RuleSet:
    """A :class:`~shardviz.strategies.rules.RuleSet` doing ``strategy`` on ``model``'s leaves.

    Args:
      strategy: a name in :data:`LOGICAL_STRATEGIES` or :class:`LogicalRules`.
      model: an :class:`ArchConfig`, a ``DecoderModel`` or ``get_model(<published name>)``.

    Returns:
      A RuleSet with one rule per parameter path, the batch's and every named activation's
      specs from the rules (checked against the mesh when the step is built); pass it to
      ``strategy_step`` or ``compare`` as a strategy.
    """
    rules = get_logical_rules(strategy)
    config = _config_of(model)

    def spec_fn(axes: tuple[str | None, ...], table: Table, what: str):
        def spec(shape: tuple[int, ...], sizes: dict[str, int]) -> tuple:
            return tuple(logical_to_spec(axes, table, what=what, shape=shape, mesh_sizes=sizes))

        return spec

    params = tuple(
        (f"^{re.escape(path)}$", spec_fn(info.axes, rules.params, f"param {path}"))
        for path, info in param_table(config).items()
    )
    batch = (("^(inputs|targets)$", spec_fn(BATCH_AXES, rules.activations, "batch")),)
    activations = tuple(
        (re.escape(name), spec_fn(*_named_axes(name, rules), f"activation {name!r}"))
        for name in (*ACTIVATION_AXES, *STORED_AXES)
    )
    return RuleSet(
        rules.name,
        f"{rules.name} (logical axis rules)",
        params=params,
        batch=batch,
        activations=activations,
        axes=rules.mesh_axes,
        description=rules.description,
        strict=True,
        extra={"logical_rules": rules},
    )
