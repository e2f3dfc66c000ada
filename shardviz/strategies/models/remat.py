"""MaxText's remat vocabulary: a ``custom`` policy that says, tensor by tensor, what the
backward pass gets: the tensor kept on the device, offloaded to host, or recomputed.

MaxText names the activations of a decoder layer with ``checkpoint_name`` (its
``decoder_layer_input``, the attention's ``query_proj``, ``key_proj``, ``value_proj``,
``context`` and ``out_proj``, the MLP's ``mlpwi_0``, ``mlpwi_1`` and ``mlpwo``) and, under
``remat_policy: custom``, reads one setting per name: ``device``, ``offload`` or ``remat``
(the default; ``decoder_layer_input`` defaults to ``device``). The recipes publish their runs
in these words (Llama 3.1 8B on v6e-256: ``decoder_layer_input``, ``query_proj``,
``key_proj``, ``value_proj`` and ``out_proj`` offloaded), and the decoder here names its
activations the same way, so a run is planned as its recipe ran it.

A custom policy travels as one string, wherever a remat name is taken (``compare``,
``suggest``, ``get_model(remat=...)``): ``"custom:decoder_layer_input=offload,
query_proj=offload"``; :func:`custom_remat` writes it from keywords.
"""

from __future__ import annotations

from typing import Any

import jax

from shardviz.errors import ShardvizError, problem

__all__ = ["REMAT_TENSORS", "TENSOR_PLACES", "custom_remat", "custom_settings", "offloads"]

#: The activations a custom policy names, as MaxText names them, with what each is here.
REMAT_TENSORS: dict[str, str] = {
    "decoder_layer_input": "each layer's input (the scan's carry)",
    "query_proj": "the queries, projected and rotated",
    "key_proj": "the keys, projected and rotated",
    "value_proj": "the values, projected",
    "context": "the attention's output, before the output projection",
    "out_proj": "the attention's output projection",
    "mlpwi_0": "the MLP's (experts') gate projection",
    "mlpwi_1": "the MLP's (experts') up projection",
    "mlpwo": "the MLP's (experts') down projection",
}

#: Where a custom policy puts a tensor for the backward pass.
TENSOR_PLACES: dict[str, str] = {
    "device": "kept in HBM",
    "offload": "moved to pinned host memory and back",
    "remat": "recomputed from the layer's input",
}

_PREFIX = "custom:"


def _refuse(what: str, fix: str, name: str = "") -> ShardvizError:
    return ShardvizError(problem(f"remat={name!r}" if name else "custom_remat", what, fix))


def custom_remat(**tensors: str) -> str:
    """A custom remat policy in MaxText's words, as the string every remat argument takes:
    ``custom_remat(decoder_layer_input="offload", query_proj="offload")``. Tensors not named
    are recomputed (``remat``), but ``decoder_layer_input``, which MaxText keeps on the
    device unless told otherwise.

    Raises:
      ShardvizError: a tensor name not in :data:`REMAT_TENSORS` or a place not in
        :data:`TENSOR_PLACES`.
    """
    for tensor, place in tensors.items():
        if tensor not in REMAT_TENSORS:
            raise _refuse(
                f"{tensor!r} is not a tensor MaxText's custom policy names",
                f"use any of {', '.join(REMAT_TENSORS)}",
            )
        if place not in TENSOR_PLACES:
            raise _refuse(
                f"{tensor}={place!r} is not a place",
                f"use one of {', '.join(map(repr, TENSOR_PLACES))}",
            )
    if tensors.get("decoder_layer_input") == "remat":
        raise _refuse(
            "decoder_layer_input cannot be recomputed: the backward pass recomputes a layer "
            "from it (MaxText refuses it too)",
            "keep it on the 'device' or 'offload' it",
        )
    settings = {"decoder_layer_input": "device", **tensors}
    named = [f"{t}={settings[t]}" for t in REMAT_TENSORS if settings.get(t, "remat") != "remat"]
    return _PREFIX + ",".join(named)


def custom_settings(name: str) -> dict[str, str] | None:
    """Each tensor's place under the custom policy ``name`` (every tensor of
    :data:`REMAT_TENSORS`), or ``None`` when ``name`` is not a custom policy.

    Raises:
      ShardvizError: a custom policy with a malformed setting, an unknown tensor or place.
    """
    if not isinstance(name, str) or not name.startswith(_PREFIX):
        return None
    given: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in name[len(_PREFIX) :].split(","))):
        tensor, sep, place = (s.strip() for s in item.partition("="))
        if not sep:
            raise _refuse(
                f"{item!r} has no '='",
                "write each setting as tensor=place, e.g. 'custom:query_proj=offload'",
                name,
            )
        given[tensor] = place
    try:
        canonical = custom_remat(**given)
    except ShardvizError as err:
        raise _refuse(str(err).split(": ", 1)[-1], "see shardviz.custom_remat", name) from err
    settings = dict.fromkeys(REMAT_TENSORS, "remat")
    for item in canonical[len(_PREFIX) :].split(","):
        if item:
            tensor, _, place = item.partition("=")
            settings[tensor] = place
    return settings


def offloads(name: str | None) -> bool:
    """Whether remat ``name`` sends anything to host memory."""
    if name == "offload":
        return True
    settings = custom_settings(name) if name else None
    return settings is not None and "offload" in settings.values()


def custom_policy(settings: dict[str, str]) -> Any:
    """The ``jax.checkpoint`` policy of a custom policy's settings: MaxText's own,
    ``save_and_offload_only_these_names`` with the tensors kept and offloaded."""
    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[t for t, p in settings.items() if p == "device"],
        names_which_can_be_offloaded=[t for t, p in settings.items() if p == "offload"],
        offload_src="device",
        offload_dst="pinned_host",
    )
