"""One training step as the live view runs it: jitted once, blocked on, compiled for its inputs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.capture.train_step import (
    abstract_arrays,
    call_blocking,
    compile_step,
    jitted_step,
)


def step(w, x):
    return w - 0.1 * x, jnp.sum(w * x)


def test_a_plain_step_is_jitted_and_a_jitted_one_kept():
    jitted = jitted_step(step)
    assert hasattr(jitted, "lower") and jitted is not step
    donating = jax.jit(step, donate_argnums=0)
    assert jitted_step(donating) is donating


def test_call_blocking_returns_the_computed_result():
    w, loss = call_blocking(jitted_step(step), (jnp.ones(4), jnp.ones(4)))
    np.testing.assert_allclose(np.asarray(w), 0.9)
    assert float(loss) == 4.0


def test_abstract_arrays_keep_shape_dtype_and_sharding_and_leave_the_rest():
    mesh = jax.make_mesh((8,), ("data",))
    x = jax.device_put(jnp.ones((16, 2)), NamedSharding(mesh, P("data")))
    specs = abstract_arrays({"x": x, "lr": 0.1})
    assert isinstance(specs["x"], jax.ShapeDtypeStruct)
    assert (specs["x"].shape, specs["x"].dtype, specs["x"].sharding) == (
        x.shape,
        x.dtype,
        x.sharding,
    )
    assert specs["lr"] == 0.1


def test_compile_step_compiles_for_the_abstract_arguments():
    args = (jnp.ones(4), jnp.ones(4))
    compiled = compile_step(jitted_step(step), abstract_arrays(args))
    assert compiled.memory_analysis() is not None
    w, loss = compiled(*args)
    assert float(loss) == 4.0
