"""Arguments as named leaves: paths, which leaves are arrays, shapes, specs on a mesh."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.capture.leaves import (
    first_named_mesh,
    from_leaves,
    is_placeable,
    leaf_shape,
    named_leaves,
    spec_on_mesh,
)
from shardviz.errors import SpecError


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("data", "model"))


def test_named_leaves_name_each_leaf_by_path_and_rebuild_the_tree():
    tree = {"params": {"w1": np.ones((2, 3)), "b1": np.zeros(3)}, "batch": [np.ones(2), "tag"]}
    leaves, treedef = named_leaves(tree)
    assert [p for p, _ in leaves] == ["batch/0", "batch/1", "params/b1", "params/w1"]
    rebuilt = from_leaves(treedef, [x for _, x in leaves])
    assert rebuilt["batch"][1] == "tag" and rebuilt["params"]["w1"] is tree["params"]["w1"]


def test_placeable_leaves_are_arrays_and_shape_structs_never_tracers():
    assert is_placeable(jnp.ones(2)) and is_placeable(np.ones(2))
    assert is_placeable(jax.ShapeDtypeStruct((4,), jnp.float32))
    assert not is_placeable(1.0) and not is_placeable("x") and not is_placeable(None)
    seen = []
    jax.jit(lambda x: seen.append(is_placeable(x)) or x)(jnp.ones(2))
    assert seen == [False]


def test_leaf_shape_of_arrays_and_shape_structs():
    assert leaf_shape(np.ones((2, 3))) == (2, 3)
    assert leaf_shape(jax.ShapeDtypeStruct((4, 5), jnp.float32)) == (4, 5)
    assert leaf_shape(np.float32(1)) == ()


def test_first_named_mesh_skips_unplaced_leaves(mesh):
    x = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("data")))
    assert first_named_mesh([np.ones(2), "tag", x]) is mesh
    assert first_named_mesh([np.ones(2)]) is None


def test_spec_on_mesh_reads_a_placed_leaf(mesh):
    x = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P(None, "model")))
    assert spec_on_mesh(x, mesh, "w") == ((), ("model",))
    other = jax.make_mesh((8,), ("data",))
    assert spec_on_mesh(x, other, "w") is None
    assert spec_on_mesh(np.ones((8, 8)), mesh, "w") is None


def test_spec_on_mesh_reads_unconstrained_as_not_split():
    auto = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    struct = jax.ShapeDtypeStruct(
        (8, 8), jnp.float32, sharding=NamedSharding(auto, P(P.UNCONSTRAINED, "data"))
    )
    assert spec_on_mesh(struct, auto, "w") == ((), ("data",))


def test_spec_on_mesh_checks_the_spec_and_names_the_leaf(mesh):
    struct = jax.ShapeDtypeStruct((6, 8), jnp.float32, sharding=NamedSharding(mesh, P("model")))
    with pytest.raises(SpecError, match="'params/w1'"):
        spec_on_mesh(struct, mesh, "params/w1")
