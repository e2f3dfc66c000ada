"""The logical axes: one name for every dim of every parameter and activation.

Sharding is written against these names, never against positions (MaxText's and Flax's
``logical_axis_rules``): a strategy maps each name to mesh axes
(:mod:`shardviz.strategies.rules.logical`), and the model names each activation it pins.

The activations the decoder passes to its ``constrain(name, array)`` hook, with their
logical axes, are :data:`ACTIVATION_AXES`; the parameters' axes are in
:mod:`shardviz.strategies.models.params`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = [
    "ACTIVATION_AXES",
    "LOGICAL_AXES",
    "STORED_AXES",
    "Constrain",
    "SpecConstrain",
    "no_constraint",
    "per_shard",
    "platform_of",
]

#: Every logical axis name, with what the dim is.
LOGICAL_AXES: dict[str, str] = {
    "batch": "sequences of the batch (or token groups of an MoE layer)",
    "sequence": "positions within a sequence (or tokens within an MoE group)",
    "embed": "the model width, d_model",
    "mlp": "the MLP's hidden width (each expert's, in an MoE layer)",
    "heads": "query heads",
    "kv_heads": "key/value heads (fewer than query heads under GQA)",
    "head_dim": "each head's width; attention contracts it, so it stays whole",
    "vocab": "the vocabulary (embedding rows, output logits)",
    "expert": "the experts of an MoE layer",
    "embed_no_exp": "the model width in an MoE layer's expert weights (MaxText's "
    "embed_no_exp): split as 'embed' is, less the mesh axes that split the experts; "
    "'embed''s rule where a table has none",
    "layers": "the stacked decoder layers (the dim the layer scan runs over)",
    "expert_group": "token groups in tensors that also have an expert dim (MaxText's "
    "activation_batch_no_exp): apart from 'batch' so 'expert' can split both",
    "capacity": "an expert's slots for tokens in one group",
    "q_lora": "MLA's query latent where the up projection reads it (split as 'embed' is)",
    "kv_lora": "MLA's key/value latent where the up projection reads it (split as 'embed' is)",
    "q_lora_out": "MLA's query latent where the down projection writes it (kept whole)",
    "kv_lora_out": "MLA's key/value latent and shared RoPE key where the down projection "
    "writes them (kept whole)",
}

#: Activation name -> its logical axes. The decoder calls ``constrain(name, x)`` on each.
ACTIVATION_AXES: dict[str, tuple[str | None, ...]] = {
    "embedded": ("batch", "sequence", "embed"),
    "attn_in": ("batch", "sequence", "embed"),
    "query": ("batch", "sequence", "heads", "head_dim"),
    "key": ("batch", "sequence", "kv_heads", "head_dim"),
    "value": ("batch", "sequence", "kv_heads", "head_dim"),
    "attn_heads": ("batch", "sequence", "heads", "head_dim"),
    "attn_out": ("batch", "sequence", "embed"),
    "residual": ("batch", "sequence", "embed"),
    "mlp_in": ("batch", "sequence", "embed"),
    "mlp_hidden": ("batch", "sequence", "mlp"),
    "mlp_out": ("batch", "sequence", "embed"),
    "moe_in": ("batch", "sequence", "embed"),
    "dispatched": ("expert", "expert_group", "capacity", "embed"),
    # The experts' slots of each group on the group's own devices (the experts whole):
    # the dispatch einsum's output and the combine's input, so that a strategy splitting
    # 'expert' moves them to and from "dispatched"/"expert_out" by all-to-all (GShard's).
    "expert_slots": (None, "batch", "capacity", "embed"),
    "expert_hidden": ("expert", "expert_group", "capacity", "mlp"),
    "expert_out": ("expert", "expert_group", "capacity", "embed"),
    # The dropless MoE layer's tokens (their width whole) and its experts' weights as its
    # grouped matmuls read them (gathered over FSDP): :mod:`.dropless`'s shard map.
    "moe_tokens": ("batch", "sequence", None),
    "expert_w_in": ("expert", None, "mlp"),
    "expert_w_out": ("expert", "mlp", None),
    "final": ("batch", "sequence", "embed"),
    # The output table [embed, vocab] as the chunked loss reads it: gathered over FSDP before
    # its chunk loop (as MaxText's vocabulary tiling gathers it), so the table is gathered
    # and its gradient reduced once a step, not once a chunk.
    "unembed_gathered": (None, "vocab"),
    "logits": ("batch", "sequence", "vocab"),
}

#: The routed experts' weights as the parameters store them (their logical axes: the
#: parameter table's), by the names under which a rule set tells the dropless layer their
#: stored specs: its shard map takes them so and gathers them inside, so that their gradients
#: leave it reduce-scattered, not all-reduced whole (:mod:`.dropless`).
STORED_AXES: dict[str, tuple[str, ...]] = {
    "expert_w_in_stored": ("expert", "embed_no_exp", "mlp"),
    "expert_w_out_stored": ("expert", "mlp", "embed_no_exp"),
}

Constrain = Callable[[str, jax.Array], jax.Array]


def no_constraint(name: str, x: jax.Array) -> jax.Array:
    """The default hook: ``x`` unchanged."""
    del name
    return x


@dataclass(frozen=True)
class SpecConstrain:
    """A ``constrain(name, x)`` hook pinning each named activation to a spec on a mesh
    (``with_sharding_constraint``); ``spec_of(name, shape)`` gives the spec, ``None`` for an
    activation left to the compiler. Beside the hook it tells the mesh, each activation's
    spec and the platform, so a kernel the compiler cannot partition (a Pallas kernel) can
    run per shard (:func:`per_shard`)."""

    mesh: Mesh
    spec_of: Callable[[str, tuple[int, ...]], PartitionSpec | None]

    def spec(self, name: str, shape: tuple[int, ...]) -> PartitionSpec | None:
        return self.spec_of(name, shape)

    @property
    def platform(self) -> str:
        """The mesh's devices' platform (``tpu`` for deviceless TPU devices too)."""
        return str(self.mesh.devices.flat[0].platform)

    def __call__(self, name: str, x: jax.Array) -> jax.Array:
        spec = self.spec_of(name, tuple(x.shape))
        if spec is None:
            return x
        return jax.lax.with_sharding_constraint(x, NamedSharding(self.mesh, spec))


def platform_of(constrain: Constrain) -> str:
    """The platform the hook's mesh is on (``tpu``, ``gpu``, ``cpu``); without a mesh,
    jax's default backend."""
    return constrain.platform if isinstance(constrain, SpecConstrain) else jax.default_backend()


def per_shard(
    constrain: Constrain,
    fn: Callable[..., jax.Array],
    names: tuple[str, ...],
    out: str,
    *xs: jax.Array,
) -> jax.Array:
    """``fn(*xs)`` run on each device's shard of ``xs`` (activations ``names``), giving
    activation ``out`` (shaped as ``xs[0]``): how a kernel the compiler cannot partition (a
    Pallas kernel) runs in a sharded program. Without a mesh (the default hook) ``fn`` sees
    the whole arrays."""
    if not isinstance(constrain, SpecConstrain):
        return fn(*xs)
    in_specs = tuple(constrain.spec(n, tuple(x.shape)) for n, x in zip(names, xs, strict=True))
    out_spec: Any = constrain.spec(out, tuple(xs[0].shape))
    local = jax.shard_map(
        fn, mesh=constrain.mesh, in_specs=in_specs, out_specs=out_spec, check_vma=False
    )
    return local(*xs)
