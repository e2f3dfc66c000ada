"""sv.xla_flags: a recipe's XLA flags applied to the compiles inside a block, per call."""

from __future__ import annotations

import importlib.util
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardviz as sv
from shardviz.capture.xla_flags import current_flags, parse_flags
from shardviz.errors import CompileError, ShardvizError

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
needs_tpu = pytest.mark.skipif(
    importlib.util.find_spec("libtpu") is None, reason="the shardviz[tpu] extra is not installed"
)

RECIPE = "--xla_tpu_enable_async_collective_fusion=true --xla_tpu_scoped_vmem_limit_kib=98304"


def test_flags_are_read_as_libtpu_init_args_writes_them() -> None:
    want = (("xla_tpu_enable_async_collective_fusion", "true"),
            ("xla_tpu_scoped_vmem_limit_kib", "98304"))  # fmt: skip
    assert parse_flags(RECIPE) == want
    assert parse_flags(RECIPE.split()) == want
    assert parse_flags({"xla_tpu_enable_async_collective_fusion": True,
                        "xla_tpu_scoped_vmem_limit_kib": 98304}) == want  # fmt: skip
    with pytest.raises(ShardvizError, match="--name=value"):
        parse_flags(["--xla_tpu_enable_async_collective_fusion"])


def test_blocks_nest_and_end() -> None:
    assert current_flags() == {}
    with sv.xla_flags("--a=1 --b=2"):
        with sv.xla_flags({"b": 3}):
            assert current_flags() == {"a": "1", "b": "3"}
        assert current_flags() == {"a": "1", "b": "2"}
    assert current_flags() == {}


def _step(x):
    return (x @ x.T).sum()


def test_a_flag_the_compiler_does_not_know_is_an_error_naming_it() -> None:
    x = jnp.ones((64, 64))
    with sv.xla_flags("--xla_no_such_flag_here=true"), pytest.raises(CompileError) as err:
        sv.explain(_step, x, run=False)
    assert "xla_no_such_flag_here" in str(err.value) and "sv.known_flags" in str(err.value)
    assert sv.explain(_step, x, run=False).collectives == ()  # the process goes on


@needs_tpu
def test_known_flags_sorts_a_recipe_and_the_block_changes_the_program() -> None:
    topo = sv.topology("v6e:2x2")
    mesh = jax.sharding.Mesh(np.array(topo.devices), ("d",))
    spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16, sharding=spec)
    lowered = jax.jit(_step).lower(x)
    known, unknown = sv.known_flags(RECIPE + " --xla_no_such_flag_here=1", lowered)
    assert [n for n, _ in known] == ["xla_tpu_enable_async_collective_fusion",
                                     "xla_tpu_scoped_vmem_limit_kib"]  # fmt: skip
    assert unknown == (("xla_no_such_flag_here", "1"),)
    plain = sv.explain(_step, x, run=False)
    with sv.xla_flags("--xla_tpu_scoped_vmem_limit_kib=98304"):
        flagged = sv.explain(_step, x, run=False)
    assert flagged is not plain  # compiled again, not served from the cache
    assert sv.explain(_step, x, run=False) is plain  # outside the block: the cached one


@needs_tpu
def test_a_flag_that_needs_an_earlier_one_is_tried_beside_it() -> None:
    """Ironwood's layer scheduler refuses to run without the SparseCore collective
    aggregator (the DeepSeek-V3 recipe enables both, the aggregator first): tried alone it
    fails; beside the flags known before it, both are known."""
    topo = sv.topology("tpu7x:2x2x1")
    mesh = jax.sharding.Mesh(np.array(topo.devices), ("d",))
    spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
    lowered = jax.jit(_step).lower(jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16, sharding=spec))
    scheduler = ("xla_tpu_enable_latency_hiding_layer_scheduler", "true")
    with pytest.raises(Exception, match="collective aggregator"):
        lowered.compile(compiler_options=dict([scheduler]))
    recipe = "--xla_tpu_enable_sparse_core_collective_aggregator=true --" + "=".join(scheduler)
    known, unknown = sv.known_flags(recipe, lowered)
    assert known == (("xla_tpu_enable_sparse_core_collective_aggregator", "true"), scheduler)
    assert unknown == ()
