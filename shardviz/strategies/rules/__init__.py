"""Parallelism strategies as sharding rules over real pytrees: every rule set's one home.

This module holds :class:`RuleSet` and the built-in strategies (:data:`BUILTIN`, the offload
ones in :data:`OFFLOAD`); beside it, the other ways a rule set is made: :mod:`.logical`
(MaxText's logical axis rules, for the published architectures), :mod:`.pipeline` (``"pp"``
and ``"pp+dp"``), :mod:`.plans` (a searched plan's specs) and :mod:`.named` (one lookup by
name for them all: :func:`~.named.get_rule_set`).

A rule maps leaf paths (``params/layers/0/mlp/w_in``, matched with ``re.search``) to a spec;
the first rule that matches a leaf wins and leaves no rule matches are replicated. A rule set
gives rules for the parameters, gradients, optimizer state, batch and (for models with an
activation hook) named activations. Users write their own :class:`RuleSet` the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from shardviz.capture.spec import normalize_spec
from shardviz.errors import ArgumentError, ShardvizError, SpecError, problem
from shardviz.model.arguments import shown
from shardviz.model.compare import STRATEGY_ALIASES

SpecLike = tuple  # a spec in shardviz/jax spelling: one entry per dim
#: A rule's spec: a fixed spec, or a function of (leaf shape, mesh axis sizes) -> spec.
SpecFn = Callable[[tuple[int, ...], dict[str, int]], SpecLike]
Rule = tuple[str, Union[SpecLike, SpecFn]]  # noqa: UP007 (a runtime alias)


def shard_largest(axis: str, *, taken: SpecLike = ()) -> SpecFn:
    """Split the largest dim that ``axis`` divides (ZeRO's flat partitioning, per leaf).

    ``taken`` is a spec already placed (e.g. tensor-parallel); its split dims are skipped.
    A leaf no dim of which divides stays as ``taken`` (replicated over ``axis``).
    """

    def spec(shape: tuple[int, ...], axes: dict[str, int]) -> SpecLike:
        out = list(taken) + [None] * (len(shape) - len(taken))
        size = axes[axis]
        best = None
        for d, n in enumerate(shape):
            if out[d] is None and n % size == 0 and n >= size and (best is None or n > shape[best]):
                best = d
        if best is not None:
            out[best] = axis
        return tuple(out)

    spec.__name__ = f"shard_largest({axis!r})"
    return spec


#: The trees a strategy may keep in pinned host memory between steps.
HOST_TREES: tuple[str, ...] = ("params", "optimizer")


@dataclass(frozen=True)
class RuleSet:
    """A strategy: sharding rules for every tree a training step touches.

    ``grads`` and ``optimizer`` default to the parameter rules (as in FSDP); ``activations``
    apply through the model's ``constrain`` hook (by activation name, ``re.fullmatch``).
    With ``strict``, a rule that matches no leaf is an error (it is probably a typo).

    Offload: ``host`` names the trees kept in pinned host memory between steps
    (``"optimizer"``: ZeRO-Offload's optimizer state, moved to HBM for its update and back;
    ``"params"``: the weights, streamed to HBM one layer at a time, as ZeRO-Inference does).
    ``remat`` replaces a published architecture's remat policy (``"offload"`` saves each
    decoder layer's input to host memory, as MaxText's Llama 70B recipe does; a custom one
    in MaxText's words, tensor by tensor: :func:`shardviz.custom_remat`).
    """

    name: str
    title: str
    params: tuple[Rule, ...] = ()
    grads: tuple[Rule, ...] | None = None
    optimizer: tuple[Rule, ...] | None = None
    batch: tuple[Rule, ...] = ((".*", ("data",)),)
    activations: tuple[Rule, ...] = ()
    axes: tuple[str, ...] = ("data",)
    description: str = ""
    #: (kind, axis, what it carries) for each collective the textbook form implies.
    expects: tuple[tuple[str, str, str], ...] = ()
    strict: bool = True
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    host: tuple[str, ...] = ()
    remat: str | None = None

    def __post_init__(self) -> None:
        # Any iterable of tree names (a list, a set) is kept as a tuple in HOST_TREES order,
        # so the rule set stays hashable; anything else is refused here, not when used.
        host = self.host
        names = None
        if not isinstance(host, str | bytes) and isinstance(host, Iterable):
            names = tuple(host)
        if names is None or any(not isinstance(t, str) or t not in HOST_TREES for t in names):
            raise ArgumentError(
                problem(
                    f"strategy {self.name!r}",
                    f"host={shown(host)} is not a tuple of trees that can live in host memory "
                    f"(they are {', '.join(map(repr, HOST_TREES))})",
                    "pass host=('optimizer',), host=('params',), both, or host=() for none",
                )
            )
        object.__setattr__(self, "host", tuple(t for t in HOST_TREES if t in names))

    def rules_for(self, what: str) -> tuple[Rule, ...]:
        if what == "grads":
            return self.params if self.grads is None else self.grads
        if what == "optimizer":
            return self.params if self.optimizer is None else self.optimizer
        return getattr(self, what)


def _resolve(spec: Any, shape: tuple[int, ...], axes: dict[str, int]) -> SpecLike:
    return tuple(spec(shape, axes)) if callable(spec) else tuple(spec)


def spec_for_leaf(
    path: str, shape: tuple[int, ...], rules: Sequence[Rule], axes: dict[str, int], what: str
) -> tuple[tuple, int | None]:
    """The spec the first matching rule gives a leaf (checked), and that rule's index."""
    for i, (pattern, spec) in enumerate(rules):
        if re.search(pattern, path):
            entries = _resolve(spec, shape, axes)
            normalize_spec(
                entries, shape, tuple(axes), tuple(axes.values()), name=f"{what} leaf {path}"
            )
            return entries, i
    return (), None


def check_rules_used(rules: Sequence[Rule], used: set[int], paths: Sequence[str], what: str):
    """Raise for a rule that matched no leaf (strict rule sets only)."""
    for i, (pattern, _) in enumerate(rules):
        if i not in used:
            sample = ", ".join(paths[:6]) + (" ..." if len(paths) > 6 else "")
            raise SpecError(
                problem(
                    f"{what} rule {pattern!r}",
                    f"it matches no {what} leaf (leaves are: {sample})",
                    "fix the pattern (it is matched with re.search against these paths) or "
                    "drop the rule",
                )
            )


def axes_needed(rule_set: RuleSet, mesh_axes: Sequence[str]) -> None:
    """Raise if the mesh lacks an axis the strategy needs."""
    missing = [a for a in rule_set.axes if a not in mesh_axes]
    if missing:
        raise ShardvizError(
            problem(
                f"strategy {rule_set.name!r}",
                f"it needs mesh axes {rule_set.axes} but the mesh has {tuple(mesh_axes)}",
                f"give a mesh with axes named {', '.join(map(repr, rule_set.axes))}, or leave "
                "mesh=None for the default",
            )
        )


# --- Built-in rule sets -------------------------------------------------------------------

_REPLICATED: tuple[Rule, ...] = ()
_DATA_FSDP: tuple[Rule, ...] = ((".*", shard_largest("data")),)

# Megatron: first matmul split by columns (its output dim), second by rows (its input dim);
# attention split by heads. Paths of the zoo's mlp, transformer and moe models.
_MEGATRON: tuple[Rule, ...] = (
    (r"(^|/)w1$", (None, "model")),
    (r"(^|/)b1$", ("model",)),
    (r"(^|/)w2$", ("model", None)),
    (r"attn/w[qkv]$", (None, "model", None)),
    (r"attn/wo$", ("model", None, None)),
    (r"mlp/w_in$", (None, "model")),
    (r"mlp/w_out$", ("model", None)),
    (r"moe/w_in$", (None, None, "model")),
    (r"moe/w_out$", (None, "model", None)),
)


def _with_data(rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """Each Megatron rule plus an FSDP split over 'data' on another dim; others FSDP."""
    out: list[Rule] = [(p, shard_largest("data", taken=s)) for p, s in rules]  # type: ignore[arg-type]
    out.append((".*", shard_largest("data")))
    return tuple(out)


_RESIDUAL = ("embed", "attn_in", "attn_out", "residual", "mlp_in", "mlp_out", "final")

BUILTIN: dict[str, RuleSet] = {
    "dp": RuleSet(
        "dp", "data parallel", params=_REPLICATED, grads=_REPLICATED, optimizer=_REPLICATED,
        description="every device holds the whole model and optimizer state; the batch is "
        "split over 'data'; gradients are all-reduced over 'data'",
        expects=(("all-reduce", "data", "gradients"),), strict=False,
    ),
    "zero1": RuleSet(
        "zero1", "ZeRO-1", params=_REPLICATED, grads=_REPLICATED, optimizer=_DATA_FSDP,
        description="optimizer state split over 'data'; each device updates its share, then "
        "the updated parameters are gathered",
        expects=(("all-reduce", "data", "gradients"), ("all-gather", "data", "parameters")),
        strict=False,
    ),
    "zero2": RuleSet(
        "zero2", "ZeRO-2", params=_REPLICATED, grads=_DATA_FSDP, optimizer=_DATA_FSDP,
        description="optimizer state and gradients split over 'data': gradients are "
        "reduce-scattered instead of all-reduced",
        expects=(("reduce-scatter", "data", "gradients"), ("all-gather", "data", "parameters")),
        strict=False,
    ),
    "zero3": RuleSet(
        "zero3", "ZeRO-3 / FSDP", params=_DATA_FSDP,
        description="parameters, gradients and optimizer state all split over 'data'; "
        "parameters are gathered when used, gradients reduce-scattered",
        expects=(("all-gather", "data", "parameters"), ("reduce-scatter", "data", "gradients")),
        strict=False,
    ),
    "tp": RuleSet(
        "tp", "Megatron tensor parallel", params=_MEGATRON, axes=("data", "model"),
        description="MLPs split at the hidden dim and attention by heads over 'model' (one "
        "all-reduce per block); the batch split over 'data'",
        expects=(("all-reduce", "model", "activations"),), strict=False,
    ),
    "2d": RuleSet(
        "2d", "2-D: FSDP x tensor parallel", params=_with_data(_MEGATRON),
        axes=("data", "model"),
        description="Megatron's split over 'model' and FSDP's over 'data' on the other dim",
        expects=(("all-reduce", "model", "activations"), ("all-gather", "data", "parameters")),
        strict=False,
    ),
    "sp": RuleSet(
        "sp", "sequence parallel", params=_MEGATRON, axes=("data", "model"),
        activations=tuple((name, ("data", "model", None)) for name in _RESIDUAL),
        description="tensor parallel, with the residual stream (layer norms, residual adds) "
        "split along the sequence over 'model'; in the textbook form each all-reduce becomes "
        "an all-gather + reduce-scatter pair (the notes say what this compiler chose)",
        expects=(("all-gather", "model", "activations"),
                 ("reduce-scatter", "model", "activations")), strict=False,
    ),
    "ep": RuleSet(
        "ep", "expert parallel",
        params=((r"moe/w_(in|out)$", ("expert", None, None)),),
        batch=((".*", (("data", "expert"),)),),
        activations=(
            ("dispatched|expert_hidden|expert_out", ("expert", "data", None, None)),
        ),
        axes=("data", "expert"),
        description="experts split over 'expert'; tokens go to their experts' devices and "
        "back with all-to-all",
        expects=(("all-to-all", "expert", "tokens"),), strict=False,
    ),
}  # fmt: skip
for _alias, _name in STRATEGY_ALIASES.items():
    BUILTIN[_alias] = BUILTIN[_name]

#: Strategies that keep state in host memory (ZeRO-Offload, activation offload, weights
#: streamed per layer as in ZeRO-Inference): FSDP-style splits plus ``host`` / ``remat``.
#: A published architecture gets the same offload on its logical ``fsdp`` rules.
OFFLOAD_WHAT: dict[str, str] = {
    "zero-offload": "the optimizer state in host memory: each device's share comes to HBM "
    "for its update and goes back, over the host link every step",
    "act-offload": "each decoder layer's input saved to host memory by the remat policy and "
    "brought back for the backward pass (MaxText's Llama 70B recipe)",
    "weight-stream": "the weights in host memory, each layer's share brought to HBM when the "
    "layer scan reaches it (again in the backward pass), as ZeRO-Inference streams them",
}
OFFLOAD: dict[str, RuleSet] = {
    "zero-offload": RuleSet(
        "zero-offload", "ZeRO-Offload", params=_REPLICATED, grads=_DATA_FSDP,
        optimizer=_DATA_FSDP, host=("optimizer",),
        description=f"ZeRO-2, with {OFFLOAD_WHAT['zero-offload']}",
        expects=(("all-gather", "data", "parameters"),), strict=False,
    ),
    "act-offload": RuleSet(
        "act-offload", "activation offload", params=_DATA_FSDP, remat="offload",
        description=f"FSDP, with {OFFLOAD_WHAT['act-offload']}",
        expects=(("all-gather", "data", "parameters"),), strict=False,
    ),
    "weight-stream": RuleSet(
        "weight-stream", "weights streamed from host", params=_DATA_FSDP, host=("params",),
        description=f"FSDP, with {OFFLOAD_WHAT['weight-stream']}",
        expects=(("all-gather", "data", "parameters"),), strict=False,
    ),
}  # fmt: skip
OFFLOAD_NAMES: tuple[str, ...] = tuple(OFFLOAD)

#: The GSPMD pipeline's strategies (built by :func:`.pipeline.pipeline_rules`).
PIPELINE_NAMES = ("pp", "pp+dp")
STRATEGY_NAMES = ("dp", "zero1", "zero2", "zero3", "fsdp", "tp", "2d", "sp", "ep", *PIPELINE_NAMES)


def default_mesh_shape(rule_set: RuleSet, devices: int) -> tuple[int, ...]:
    """One axis strategies use all devices on it; two-axis ones 2 x n/2 (1 x n if n is odd);
    a pipeline of S stages (``extra["stages"]``) S devices, or S x n/S with data parallel."""
    stages = rule_set.extra.get("stages")
    if stages:
        return (stages,) if len(rule_set.axes) == 1 else (stages, max(1, devices // stages))
    if len(rule_set.axes) == 1:
        return (devices,)
    first = 2 if devices % 2 == 0 and devices > 1 else 1
    return (first, devices // first) + (1,) * (len(rule_set.axes) - 2)


def ways(spec: SpecLike, axes: dict[str, int]) -> int:
    """How many pieces a spec cuts a leaf into."""
    names = [a for e in spec if e is not None for a in (e if isinstance(e, tuple) else (e,))]
    return math.prod(axes[a] for a in names)
