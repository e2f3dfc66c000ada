"""Mistakes in the calls themselves: each a ShardvizError naming the argument and the fix,
never a raw TypeError or a misleading 'running it failed'."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pytest

import shardviz as sv
from shardviz.errors import ShardvizError


def f(a):
    return a * 2


X = jnp.ones((8, 4))


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"steps": "5"}, "steps='5' is not a whole number"),
        ({"steps": 2.5}, "steps=2.5 is not a whole number"),
        ({"steps": 0}, "steps=0 is not a whole number"),
        ({"steps": True}, "steps=True is not a whole number"),
        ({"kwargs": [1, 2]}, "kwargs=\\[1, 2\\] is not a dict"),
        ({"kwargs": {1: 2}}, "is not a dict of keyword arguments"),
    ],
)
def test_explain_refuses_options_it_cannot_use(options, words) -> None:
    with pytest.raises(ShardvizError, match=words) as err:
        sv.explain(f, X, **options)
    assert "Fix:" in str(err.value)


def test_explain_of_something_that_is_not_a_function() -> None:
    with pytest.raises(ShardvizError, match="is not a function"):
        sv.explain(42, X)


def test_diagnose_of_something_that_is_neither_a_report_nor_a_function() -> None:
    with pytest.raises(ShardvizError, match="neither a report, a function nor a jax stage"):
        sv.diagnose(42)


@pytest.mark.parametrize("strategies", [[], (), "dp"])
def test_compare_needs_a_list_of_strategies(strategies) -> None:
    with pytest.raises(ShardvizError, match="is not a list of strategies"):
        sv.compare("mlp", strategies)


MESH = sv.Mesh(range(8), (8,), ("data",))


def sharded():
    return sv.mark_sharding(jnp.ones((8, 4)), MESH, ("data", None))


@dataclasses.dataclass
class Params:
    w: object
    scale: float = 1.0


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Registered:
    w: jax.Array


def test_an_object_jax_cannot_see_into_holding_arrays_is_refused_not_baked_in() -> None:
    with pytest.raises(ShardvizError, match="argument 0: a Params holds arrays in w") as err:
        sv.explain(lambda p: p.w * p.scale, Params(sharded()))
    assert "register_dataclass" in str(err.value)
    # Registered, it is an ordinary pytree argument, sharded.
    r = sv.explain(lambda p: p.w * 2, Registered(sharded()), steps=1, diagnose=False)
    assert r.mesh is not None and r.arguments.leaves


def test_a_program_that_ignores_its_sharded_argument_is_still_on_its_mesh() -> None:
    r = sv.explain(lambda a: None, sharded(), steps=1, diagnose=False)
    assert r.mesh is not None and r.mesh.axis_names == ("data",)
    assert "one device" not in str(r).splitlines()[1]


def test_a_donated_argument_is_named_before_anything_runs() -> None:
    gone = sharded()
    jax.jit(lambda a: a * 2, donate_argnums=0)(gone)
    with pytest.raises(ShardvizError, match="argument 1: the float32\\[8, 4\\] array was deleted"):
        sv.explain(lambda a, b: a + b, sharded(), gone)


def test_real_arrays_cannot_go_on_a_deviceless_mesh() -> None:
    import numpy as np

    mesh = sv.Mesh(sv.topology("v5e:2x4").devices, (2, 4), ("data", "model"))
    with pytest.raises(ShardvizError, match="jax.ShapeDtypeStruct\\(\\(8, 8\\), 'float32'\\)"):
        sv.mark_sharding(np.ones((8, 8)), mesh, ("data", None))


@pytest.mark.parametrize(
    ("shape", "words"), [((8, -1), "dim 1 of shape \\(8, -1\\) is -1"), ((8, 2.5), "is 2.5")]
)
def test_a_layout_triple_with_a_bad_shape_names_the_dim(shape, words) -> None:
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    with pytest.raises(ShardvizError, match=words):
        sv.layout((shape, "float32", NamedSharding(MESH.jax_mesh, P())))
