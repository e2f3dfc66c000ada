"""Small programs whose findings the Explorer's "try this fix" can act on, one per route:
a spec box (a replicated weight), the mesh shape (an idle axis) and the fixed program
compiled (a constraint that moves a value there and back). Each returns ``(fn, args)``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from tests.diagnose.planted import mesh, put


def replicated_weight():
    """w3 left whole on every device while w1 and w2 are split over 'data': fixed in a box."""
    m = mesh((8,), ("data",))
    params = {
        "w1": put(m, jnp.ones((256, 256)), "data", None),
        "w2": put(m, jnp.ones((256, 256)), None, "data"),
        "w3": put(m, jnp.ones((256, 256)), None, None),
    }
    x = put(m, jnp.ones((64, 256)), "data", None)

    def forward(params, x):
        h = jnp.tanh(x @ params["w1"])
        h = jnp.tanh(h @ params["w2"])
        return h @ params["w3"]

    return forward, (params, x)


def idle_axis():
    """A (2, 4) mesh whose 'data' axis splits nothing: fixed by the mesh shape."""
    m = mesh()
    w = put(m, jnp.ones((128, 128)), None, None)
    x = put(m, jnp.ones((64, 128)), "model", None)

    def forward(w, x):
        return jnp.tanh(x @ w)

    return forward, (w, x)


def there_and_back():
    """A constraint moves a value to P(None, 'model') and the next one back: fixed by
    dropping the constraint, which no control can express (the fixed program is compiled)."""
    m = mesh()
    x = put(m, jnp.ones((16, 32)), "data", None)
    by_model = NamedSharding(m, P(None, "model"))

    def step(x):
        y = jnp.sin(x)
        y = jax.lax.with_sharding_constraint(y, by_model)
        z = y * 2
        z = jax.lax.with_sharding_constraint(z, NamedSharding(m, P("data", None)))
        return z.sum(0)

    return step, (x,)
