"""The activation specs a plan's weights imply, on a published decoder.

A published architecture constrains its named activations (``query``, ``mlp_hidden``,
``logits``...), as MaxText does, and ``compare`` runs each strategy with its logical table
for them. A plan found by the search has only leaf specs; compiled without activation
constraints, the partitioner is left to guess from the weights, and on a decoder it often
guesses badly (a weight split on ``embed`` spreads onto the activations: every device then
repeats work). So each plan gets the table its own specs imply, the way the logical rules
pair them:

- ``batch`` over the plan's batch axes;
- ``heads``, ``kv_heads``, ``mlp``, ``vocab`` over the mesh axes the plan puts on that dim of
  the largest weight that has it (Megatron's activations follow its weights), less any axis
  the batch holds;
- ``embed``, ``sequence`` and ``head_dim`` whole on activations (weights split on ``embed``
  are gathered where they are used: FSDP).

Activations with other logical axes (an MoE layer's ``expert``, ``expert_group``,
``capacity``) are left to the compiler.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from shardviz.model import Spec
from shardviz.strategies.models.axes import ACTIVATION_AXES
from shardviz.strategies.models.configs import ArchConfig
from shardviz.strategies.models.params import param_table

__all__ = ["activation_specs"]

#: Logical axes an activation takes from the weights that have them.
FROM_WEIGHTS = ("heads", "kv_heads", "mlp", "vocab")
#: Logical axes kept whole on activations.
WHOLE = ("embed", "sequence", "head_dim")


def _from_weights(config: ArchConfig, specs: Mapping[str, Spec]) -> dict[str, tuple[str, ...]]:
    """Logical axis -> the mesh axes the plan puts on it, read from the largest parameter
    with that dim (``params/<path>`` in ``specs``)."""
    out: dict[str, tuple[str, ...]] = {}
    largest: dict[str, int] = {}
    for path, info in param_table(config).items():
        spec = specs.get(f"params/{path}")
        if spec is None:
            continue
        size = math.prod(info.shape)
        for name, entry in zip(info.axes, spec, strict=False):
            if name in FROM_WEIGHTS and size > largest.get(name, -1):
                largest[name] = size
                out[name] = tuple(entry)
    return out


def activation_specs(
    config: ArchConfig, specs: Mapping[str, Spec], batch: tuple[str, ...]
) -> dict[str, Spec]:
    """Activation name -> spec for a plan with leaf ``specs`` and its data split over
    ``batch`` (see the module's rule); activations it leaves to the compiler are absent."""
    table: dict[str, tuple[str, ...]] = {name: () for name in WHOLE}
    table["batch"] = tuple(batch)
    for name, axes in _from_weights(config, specs).items():
        table[name] = tuple(a for a in axes if a not in batch)
    out: dict[str, Spec] = {}
    for activation, names in ACTIVATION_AXES.items():
        if any(n is not None and n not in table for n in names):
            continue
        used: set[str] = set()
        spec = []
        for n in names:
            axes = () if n is None else table[n]  # None: a dim kept whole
            entry = tuple(a for a in axes if a not in used)  # one mesh axis per array
            used |= set(entry)
            spec.append(entry)
        out[activation] = tuple(spec)
    return out
