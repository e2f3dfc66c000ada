"""The first battery's cases: explain, meshes, layouts, compare and reports."""

from __future__ import annotations

from tests.hostile.battery import Cases

#: name -> (code run with ``sv``, ``jax``, ``jnp``, ``np``, ``M`` (an 8-device mesh) and
#: ``X`` (an (8, 4) array split over it) in scope; its last line's value is the outcome
#: unless it raises; expected: "True" or the error's class).
CASES: Cases = {
    "grad is checked against grad": (
        "sv.explain(jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)), X, steps=1).check.matches",
        "True",
    ),
    "vmap of scan is checked against itself": (
        "sv.explain(jax.vmap(lambda r: jax.lax.scan(lambda c, v: (c + v, c), 0.0, r)[1]), X, "
        "steps=1).check.matches",
        "True",
    ),
    "NaN against zeros mismatches": (
        "not sv.explain(lambda a: a * jnp.nan, X, reference=lambda a: a * 0, "
        "steps=1).check.matches",
        "True",
    ),
    "complex is compared whole": (
        "sv.explain(lambda c: c * (1 + 2j), X.astype(jnp.complex64), steps=1).check.matches",
        "True",
    ),
    "int4 runs": (
        "sv.explain(lambda q: q.astype(jnp.float32).sum(), X.astype(jnp.int4), steps=1).ran",
        "True",
    ),
    "an unregistered dataclass holding arrays": (
        "import dataclasses\n"
        "P = dataclasses.make_dataclass('P', ['w'])\n"
        "sv.explain(lambda p: p.w * 2, P(X))",
        "ShardvizError",
    ),
    "a program that ignores its sharded argument keeps the mesh": (
        "sv.explain(lambda a: None, X, steps=1).mesh is not None",
        "True",
    ),
    "a non-ASCII axis name": ("sv.Mesh(range(8), (2, 4), ('données', 'model'))", "MeshError"),
    "a control character in an axis name": ("sv.Mesh(range(8), (8,), ('a\\tb',))", "MeshError"),
    "a jax mesh with a non-ASCII name, explained": (
        "jm = jax.sharding.Mesh(np.array(jax.devices()), ('données',))\n"
        "x = jax.device_put(jnp.ones((8, 2)), jax.sharding.NamedSharding(jm, "
        "jax.sharding.PartitionSpec('données')))\n"
        "sv.explain(lambda a: a * 2, x)",
        "MeshError",
    ),
    "steps as a string": ("sv.explain(lambda a: a, X, steps='5')", "ShardvizError"),
    "steps as a fraction": ("sv.explain(lambda a: a, X, steps=2.5)", "ShardvizError"),
    "kwargs as a list": ("sv.explain(lambda a: a, X, kwargs=[1, 2])", "ShardvizError"),
    "diagnose of a number": ("sv.diagnose(42)", "ShardvizError"),
    "a negative size in a layout triple": (
        "sv.layout(((8, -1), 'float32', jax.sharding.NamedSharding(M.jax_mesh, "
        "jax.sharding.PartitionSpec())))",
        "ShardvizError",
    ),
    "a numpy array on a deviceless mesh": (
        "t = sv.Mesh(sv.topology('v5e:2x4').devices, (2, 4), ('a', 'b'))\n"
        "sv.mark_sharding(np.ones((8, 8)), t, ('a', None))",
        "MeshError",
    ),
    "a donated argument": (
        "gone = X + 0\njax.jit(lambda a: a * 2, donate_argnums=0)(gone)\n"
        "sv.explain(lambda a: a, gone)",
        "ShardvizError",
    ),
    "a fractional mesh size": ("sv.Mesh(range(8), (2.5, 4))", "MeshError"),
    "a mesh of no devices": ("sv.Mesh([], ())", "MeshError"),
    "compare with no strategies": ("sv.compare('mlp', [])", "ShardvizError"),
    "a report from garbage": ("sv.Report.from_json('{\"function\": 3')", "ShardvizError"),
    "a report from another object's JSON": (
        "sv.Report.from_json(sv.Mesh(range(8), (8,), ('d',)).layout.to_json())",
        "ShardvizError",
    ),
}
