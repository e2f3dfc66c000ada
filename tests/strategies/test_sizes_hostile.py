"""Model sizes, training dtypes, pipeline stages and compare's numbers: each refused value is
an ArgumentError naming the argument and a value to pass, read by model/arguments.py's rules
(numpy integers taken as ints); a published model's ``pp`` takes ``stages=``."""

from __future__ import annotations

import numpy as np
import pytest

import shardviz as sv
from shardviz.errors import ArgumentError, ShardvizError
from shardviz.strategies.models.configs import CONFIGS
from shardviz.strategies.rules.pipeline import pipeline_rules
from shardviz.strategies.runner import rule_set_for
from shardviz.strategies.step import strategy_step
from shardviz.strategies.zoo import get_model

#: A Llama small enough to build in a moment; 4 layers, so 4 pipeline stages fit.
LLAMA = {"layers": 4, "d_model": 64, "heads": 2, "kv_heads": 1, "head_dim": 32, "ffn": 128,
         "vocab": 256, "seq": 32, "batch": 8}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "sizes", "words"),
    [
        ("transformer", {"layers": 0}, "layers=0 is not a whole number >= 1. Fix: pass layers=2."),
        ("llama3.1-8b", {"layers": 0}, "layers=0 is not a whole number >= 1. Fix: pass layers=32."),
        ("mlp", {"d_model": 64.0}, "d_model=64.0 is not a whole number >= 1. Fix: pass d_model=128."),
        ("mixtral-8x7b", {"experts": -1}, "experts=-1 is not a whole number >= 0"),
        ("moe", {"capacity_factor": float("nan")}, "capacity_factor=nan is not a finite positive"),
        ("moe", {"aux_weight": -1}, "aux_weight=-1 is not a finite non-negative number"),
    ],
)  # fmt: skip
def test_a_size_out_of_range_names_itself_and_a_value(name, sizes, words) -> None:
    with pytest.raises(ArgumentError) as err:
        get_model(name, **sizes)
    assert words in str(err.value)
    assert f"get_model({name!r})" in str(err.value)


def test_an_arch_config_refuses_a_dim_in_a_whole_sentence() -> None:
    with pytest.raises(ArgumentError, match=r"layers=0 is not a whole number >= 1\. Fix: pass "):
        CONFIGS["llama3.1-8b"].scaled(layers=0)


def test_numpy_sizes_are_taken_as_ints() -> None:
    m = get_model("llama3.1-8b", **{**LLAMA, "layers": np.int64(2), "batch": np.int32(8)})
    assert m.info["layers"] == 2 and type(m.info["layers"]) is int
    assert type(m.info["config"].layers) is int
    assert type(get_model("mlp", d_model=np.int16(64)).info["d_model"]) is int


@pytest.mark.parametrize(
    ("name", "sizes", "key"),
    [
        ("mlp", {"dtype": "int8"}, "dtype"),
        ("transformer", {"dtype": np.int8}, "dtype"),
        ("llama3.1-8b", {"layers": 2, "dtype": "int8"}, "dtype"),
        ("llama3.1-8b", {"layers": 2, "compute_dtype": "int32"}, "compute_dtype"),
    ],
)
def test_training_refuses_weights_that_are_not_float_up_front(name, sizes, key) -> None:
    with pytest.raises(ArgumentError) as err:
        get_model(name, **sizes)
    text = str(err.value)
    assert f"{key}=int" in text and "not a float dtype" in text
    assert f"Fix: pass {key}='bfloat16' or {key}='float32'" in text


def test_a_custom_model_with_an_integer_parameter_is_refused_naming_it() -> None:
    import jax.numpy as jnp

    m = sv.ModelDef.custom(
        "counts", {"w": jnp.ones(8), "n": jnp.ones(8, jnp.int32)},
        lambda p, b: (p["w"] * b).sum() + p["n"].sum(), jnp.ones(8),
    )  # fmt: skip
    with pytest.raises(ArgumentError, match="its parameter n is int32.*Fix: make the parameters"):
        sv.compare(m, ["dp"])


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"stages": 0}, "stages=0 is not a whole number >= 1. Fix: pass stages=2."),
        ({"stages": -2}, "stages=-2 is not a whole number >= 1. Fix: pass stages=2."),
        ({"stages": "2"}, "stages='2' is not a whole number"),
        ({"microbatches": 0}, "microbatches=0 is not a whole number >= 1. Fix: pass microbatches=4."),
        ({"steps": 0}, "steps=0 is not a whole number >= 1. Fix: pass steps=3."),
        ({"seed": -1}, "seed=-1 is not a whole number >= 0. Fix: pass seed=0."),
        ({"batch_per_device": 0}, "batch_per_device=0 is not a whole number >= 1"),
    ],
)  # fmt: skip
def test_compare_refuses_counts_it_cannot_use(options, words) -> None:
    with pytest.raises(ArgumentError) as err:
        sv.compare("transformer", ["pp"], **options)
    assert words in str(err.value)
    assert "mesh_shape" not in str(err.value)


def test_microbatches_that_do_not_divide_the_batch_are_refused_before_tracing() -> None:
    with pytest.raises(ShardvizError, match="batch of 16 cannot be split into 3 microbatches"):
        sv.compare("transformer", ["pp"], microbatches=3)


def test_pipeline_rules_check_their_counts() -> None:
    with pytest.raises(ArgumentError, match=r"pipeline_rules\('pp'\): stages=0"):
        pipeline_rules("pp", stages=0)
    with pytest.raises(ArgumentError, match="microbatches=2.5 is not a whole number"):
        pipeline_rules("pp+dp", microbatches=2.5)
    assert pipeline_rules("pp", stages=np.int64(4)).extra["stages"] == 4


def test_a_published_pp_takes_stages_as_its_stage_axis() -> None:
    m = get_model("llama3.1-8b", **LLAMA)
    assert strategy_step(m, rule_set_for(m, "pp", {})).mesh.devices.shape == (2, 4)
    built = strategy_step(m, rule_set_for(m, "pp", {"stages": 4}))
    assert dict(zip(built.mesh.axis_names, built.mesh.devices.shape, strict=True)) == {
        "stage": 4,
        "fsdp": 2,
    }


def test_a_published_pp_of_more_stages_than_devices_is_refused() -> None:
    m = get_model("llama3.1-8b", **LLAMA)
    with pytest.raises(ArgumentError, match="stages=16 needs 16 devices.*there are 8.*Fix: "):
        sv.compare(m, ["pp"], stages=16)


def test_a_published_pp_refuses_a_microbatch_schedule() -> None:
    m = get_model("llama3.1-8b", **LLAMA)
    with pytest.raises(ArgumentError, match="microbatches=4, schedule='1f1b' are for the zoo"):
        sv.compare(m, ["pp"], microbatches=4, schedule="1f1b")


def test_numpy_counts_run_a_comparison() -> None:
    c = sv.compare("mlp", ["dp"], steps=np.int64(1), seed=np.int32(0), batch_per_device=np.int8(2))
    (r,) = c.results
    assert r.loss_matches
    batch = next(leaf for leaf in r.report.arguments.leaves if leaf.name.endswith("x"))
    assert batch.shape[0] == 16  # 2 per device x 8 devices
