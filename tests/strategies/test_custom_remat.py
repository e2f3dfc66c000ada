"""MaxText's custom remat policy, tensor by tensor, as the recipes write it.

Checked against hand counts on a Llama small enough to compile deviceless for a TPU v5e 2x2
in seconds: what is offloaded goes over the host link byte for byte, and what is kept or
offloaded is no longer recomputed (its projection's flops leave the recomputed count),
while the model flops stay the same.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import shardviz as sv
from shardviz.errors import ShardvizError
from shardviz.strategies.models.remat import REMAT_TENSORS, custom_settings, offloads
from shardviz.strategies.search.inputs import SearchInputs
from shardviz.strategies.zoo import get_model

DIMS = {"layers": 2, "d_model": 128, "heads": 4, "kv_heads": 2, "head_dim": 32, "ffn": 256,
        "vocab": 512, "seq": 128, "batch": 8}  # fmt: skip
DEVICES = 4  # v5e:2x2, FSDP over all four

#: Llama 3.1 8B's recipe on v6e-256 (tpu-recipes, training/trillium/Llama3.1-8B-MaxText).
RECIPE = dict(decoder_layer_input="offload", query_proj="offload", key_proj="offload",
              value_proj="offload", out_proj="offload")  # fmt: skip


def test_a_custom_policy_is_one_string_in_maxtexts_words():
    assert sv.custom_remat(**RECIPE) == (
        "custom:decoder_layer_input=offload,query_proj=offload,key_proj=offload,"
        "value_proj=offload,out_proj=offload"
    )
    # MaxText keeps the layer input on the device unless told otherwise; the rest is remat.
    assert sv.custom_remat(mlpwo="device") == "custom:decoder_layer_input=device,mlpwo=device"
    settings = custom_settings("custom: query_proj = offload , mlpwo=device")
    assert settings is not None and set(settings) == set(REMAT_TENSORS)
    assert (settings["query_proj"], settings["mlpwo"], settings["decoder_layer_input"]) == (
        "offload", "device", "device",
    )  # fmt: skip
    assert settings["context"] == "remat"
    assert custom_settings("full") is None
    assert offloads("offload") and offloads(sv.custom_remat(query_proj="offload"))
    assert not offloads("full") and not offloads(sv.custom_remat(mlpwo="device"))


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda: sv.custom_remat(qkv="offload"), "not a tensor MaxText's custom policy names"),
        (lambda: sv.custom_remat(query_proj="host"), "query_proj='host' is not a place"),
        (lambda: custom_settings("custom:query_proj"), "has no '='"),
        (lambda: custom_settings("custom:mlpwi=device"), "'mlpwi' is not a tensor"),
        (lambda: sv.custom_remat(decoder_layer_input="remat"), "cannot be recomputed"),
    ],
)
def test_a_bad_custom_policy_names_the_tensor_and_the_fix(call, said):
    with pytest.raises(ShardvizError) as err:
        call()
    assert said in str(err.value) and "Fix:" in str(err.value)


def test_a_bad_remat_name_points_to_the_custom_policy():
    with pytest.raises(ShardvizError, match="custom_remat"):
        sv.compare("llama3.1-8b", ["fsdp"], remat="minimal", **DIMS)


@pytest.fixture(scope="module")
def plans():
    out = {}
    for name, remat in {
        "offload": "offload",
        "recipe": sv.custom_remat(**RECIPE),
        "keep": sv.custom_remat(query_proj="device", mlpwi_0="device"),
    }.items():
        c = sv.compare("llama3.1-8b", ["fsdp"], target="v5e:2x2", remat=remat, **DIMS)
        out[name] = c.results[0]
    return out


def test_the_recipes_offload_moves_each_named_tensor_over_the_host_link(plans):
    tokens = DIMS["batch"] // DEVICES * DIMS["seq"]  # per device
    bf16 = 2
    layer_input = tokens * DIMS["d_model"] * bf16
    q = tokens * DIMS["heads"] * DIMS["head_dim"] * bf16
    kv = tokens * DIMS["kv_heads"] * DIMS["head_dim"] * bf16
    per_layer = layer_input + q + 2 * kv + layer_input  # input, q, k, v, out_proj
    recipe = plans["recipe"]
    assert recipe.to_host_bytes == recipe.to_device_bytes == DIMS["layers"] * per_layer
    assert plans["offload"].to_host_bytes == DIMS["layers"] * layer_input
    assert plans["keep"].to_host_bytes == 0


def test_what_is_kept_or_offloaded_is_not_recomputed(plans):
    tokens = DIMS["batch"] // DEVICES * DIMS["seq"]
    d, hd = DIMS["d_model"], DIMS["head_dim"]
    q_w, kv_w, o_w = d * DIMS["heads"] * hd, d * DIMS["kv_heads"] * hd, DIMS["heads"] * hd * d
    gate_w = d * DIMS["ffn"]
    cost = {k: r.report.cost for k, r in plans.items()}
    base = cost["offload"].recomputed_flops_per_device  # the whole layer again
    # Offloaded q, k, v and the output projection: their forward matmuls are not run again.
    saved = 2 * tokens * (q_w + 2 * kv_w + o_w) * DIMS["layers"]
    assert base - cost["recipe"].recomputed_flops_per_device == pytest.approx(saved)
    # Kept on device: the query and the MLP's gate projection.
    saved = 2 * tokens * (q_w + gate_w) * DIMS["layers"]
    assert base - cost["keep"].recomputed_flops_per_device == pytest.approx(saved)
    models = {c.model_flops_per_device for c in cost.values()}
    assert len(models) == 1  # the same model, however it is rematerialised
    kept = plans["keep"].memory.peak - plans["offload"].memory.peak
    assert kept != 0  # the kept tensors change what HBM holds


def test_suggest_keeps_trying_the_models_own_custom_policy():
    model = get_model("llama3.1-8b", remat=sv.custom_remat(**RECIPE), **DIMS)
    inputs = SimpleNamespace(model=model)  # what remat_policies reads
    tried, own = SearchInputs.remat_policies(inputs, offload=True)  # type: ignore[arg-type]
    assert own == sv.custom_remat(**RECIPE) and own in tried
    assert "full" in tried and "offload" in tried  # besides the named ones
    assert own not in SearchInputs.remat_policies(inputs, offload=False)[0]  # type: ignore[arg-type]
