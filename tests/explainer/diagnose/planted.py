"""Planted mistakes, one per finding kind: small programs that make each problem for real.

Each returns the report of ``sv.explain`` with its fixes tried (``report.try_fixes()``); the
line the finding must point at is found by a ``# planted:<kind>`` marker in this file, so the
tests never hard-code line numbers.
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv


def marker_line(kind: str) -> str:
    """``file:line`` of the ``# planted:<kind>`` comment."""
    path = inspect.getsourcefile(marker_line)
    lines = inspect.getsourcelines(inspect.getmodule(marker_line))[0]
    for i, text in enumerate(lines, 1):
        if text.rstrip().endswith(f"# planted:{kind}"):
            return f"{path}:{i}"
    raise LookupError(kind)


def mesh(shape=(2, 4), axes=("data", "model")):
    return jax.make_mesh(shape, axes, axis_types=(AxisType.Auto,) * len(axes))


def put(m, x, *spec):
    return jax.device_put(x, NamedSharding(m, P(*spec)))


def involuntary_remat():
    """The issue's example: a value placed P('data', None) must come out P(None, 'model')."""
    m = mesh()
    a = put(m, jnp.ones((16, 32)), "data", None)
    out = NamedSharding(m, P(None, "model"))
    f = jax.jit(lambda a: a * 2, out_shardings=out)  # planted:involuntary-remat
    return sv.explain(f, a, run=False).try_fixes()


def replicated():
    """An FSDP-style model with one large weight left replicated."""
    forward, args = replicated_program()
    return sv.explain(forward, *args, run=False).try_fixes()


def replicated_program():
    """:func:`replicated`'s function and arguments."""
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


def replicated_partner_program():
    """Issue 29's MLP forward with w1 split by columns over 'model' and its partner w2
    (1 MiB) left whole on every device."""
    m = mesh()
    x = put(m, jnp.ones((64, 128)), "data", None)
    w1 = put(m, jnp.ones((128, 2048)), None, "model")
    w2 = put(m, jnp.ones((2048, 128)), None, None)

    def mlp(x, w1, w2):
        return jnp.tanh(x @ w1) @ w2

    return mlp, (x, w1, w2)


def regather():
    """One weight used by three checkpointed layers: gathered again for each."""
    step, args = regather_program()
    return sv.explain(step, *args, run=False).try_fixes()


def regather_program():
    """:func:`regather`'s function and arguments (notebook 10's section 3)."""
    m = mesh((8,), ("data",))
    w = put(m, jnp.ones((256, 256)), "data", None)
    x = put(m, jnp.ones((64, 256)), "data", None)

    def step(w, x):
        def loss(w):
            layer = jax.checkpoint(lambda h: jnp.tanh(h @ w))  # planted:regather
            h = x
            for _ in range(3):
                h = layer(h)
            return h.sum()

        return jax.grad(loss)(w)

    return step, (w, x)


def reshard_chain():
    """A constraint asks for P(None, 'model') and the next one for P('data', None) again."""
    step, args = reshard_chain_program()
    return sv.explain(step, *args, run=False).try_fixes()


def reshard_chain_program():
    """:func:`reshard_chain`'s function and arguments."""
    m = mesh()
    x = put(m, jnp.ones((16, 32)), "data", None)

    by_model = NamedSharding(m, P(None, "model"))

    def step(x):
        y = jnp.sin(x)
        y = jax.lax.with_sharding_constraint(y, by_model)  # planted:reshard-chain
        z = y * 2
        z = jax.lax.with_sharding_constraint(z, NamedSharding(m, P("data", None)))
        return z.sum(0)

    return step, (x,)


def uneven():
    """Ten rows constrained over four devices."""
    m = mesh()
    x = put(m, jnp.ones((10, 64)), None, None)

    rows = NamedSharding(m, P("model", None))

    def step(x):
        y = jnp.sin(x)
        y = jax.lax.with_sharding_constraint(y, rows)  # planted:uneven
        return y * 2

    return sv.explain(step, x, run=False).try_fixes()


def loop_collective():
    """A loop over layers whose body constrains the carried value to another form: every
    trip moves it back."""
    m = mesh()
    h = put(m, jnp.ones((64, 128)), "data", None)
    w = put(m, jnp.ones((128, 128)), None, None)
    by_model = NamedSharding(m, P(None, "model"))

    def layers(h, w):
        def body(i, h):
            h = jnp.tanh(h @ w)  # planted:loop-collective
            return jax.lax.with_sharding_constraint(h, by_model)  # planted:loop-constraint

        return jax.lax.fori_loop(0, 4, body, h)

    return sv.explain(layers, h, w, run=False).try_fixes()


def loop_accumulation():
    """Gradient accumulation that all-reduces the gradient on every microbatch (no spec
    change avoids it: the carried sum is replicated)."""
    m = mesh((8,), ("data",))
    w = put(m, jnp.ones((128, 128)), None, None)
    x = put(m, jnp.ones((4, 64, 128)), None, "data", None)

    def step(w, x):
        def loss(w, xb):
            return jnp.tanh(xb @ w).sum()  # planted:loop-accumulation

        def body(acc, xb):
            return acc + jax.grad(loss)(w, xb), None

        g, _ = jax.lax.scan(body, jnp.zeros_like(w), x)
        return g

    return sv.explain(step, w, x, run=False).try_fixes()


def idle_axis():
    """A (2, 4) mesh whose 'data' axis nothing is split over."""
    forward, args = idle_axis_program()
    return sv.explain(forward, *args, run=False).try_fixes()


def idle_axis_program():
    """:func:`idle_axis`'s function and arguments."""
    m = mesh()
    w = put(m, jnp.ones((128, 128)), None, None)
    x = put(m, jnp.ones((64, 128)), "model", None)

    def forward(w, x):
        return jnp.tanh(x @ w)

    return forward, (w, x)


def over_hbm():
    """16 GiB of replicated weights, explained for a v5e (16 GiB of HBM per chip)."""
    m = mesh((8,), ("data",))
    shape = jax.ShapeDtypeStruct
    params = {
        "w": shape((65536, 32768), jnp.float32, sharding=NamedSharding(m, P())),
        "v": shape((65536, 32768), jnp.float32, sharding=NamedSharding(m, P())),
    }
    x = shape((64, 65536), jnp.float32, sharding=NamedSharding(m, P("data", None)))

    def forward(params, x):
        return (x @ params["w"]) @ params["v"].T

    return sv.explain(forward, params, x, target="v5e").try_fixes()


def full_reduce():
    """ZeRO-2 style: gradients wanted split over 'data', computed from a data-split batch."""
    m = mesh((8,), ("data",))
    w = put(m, jnp.ones((128, 128)), None, None)
    x = put(m, jnp.ones((64, 128)), "data", None)

    def step(w, x):
        g = jax.grad(lambda w: jnp.tanh(x @ w).sum())(w)  # planted:full-reduce
        return jax.lax.with_sharding_constraint(g, NamedSharding(m, P("data", None)))

    return sv.explain(step, w, x, run=False).try_fixes()
