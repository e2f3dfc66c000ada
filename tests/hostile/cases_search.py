"""The plan search's cases (``sv.suggest``, its rule sets): limits, budgets, mesh shapes and
arguments that are no numbers or hold nothing to place, and a plan over many leaves."""

from __future__ import annotations

from tests.hostile.battery import Cases

#: A tiny MLP step and its arguments (abstract: nothing is allocated), and a budget every
#: compile outlasts (the search compiles one plan and stops).
_MLP = (
    "P = {'w1': jax.ShapeDtypeStruct((16, 32), jnp.float32), "
    "'w2': jax.ShapeDtypeStruct((32, 8), jnp.float32)}\n"
    "B = jax.ShapeDtypeStruct((16, 16), jnp.float32)\n"
    "f = lambda p, b: jnp.mean(jnp.tanh(b @ p['w1']) @ p['w2'])\n"
    "M2 = sv.Mesh(range(8), (2, 4), ('data', 'model'))\n"
)


def _suggest(extra: str) -> str:
    return _MLP + f"sv.suggest(f, P, B, mesh=M2, budget_s=0.001, progress=False{extra})"


#: name -> (code run with ``sv``, ``jax``, ``jnp``, ``np``, ``M`` (an 8-device mesh) and
#: ``X`` (an (8, 4) array split over it) in scope; its last line's value is the outcome
#: unless it raises; expected: "True" or the error's class).
CASES: Cases = {
    "an infinite memory limit": (_suggest(", memory_limit=float('inf')"), "ArgumentError"),
    "a memory limit past any float": (_suggest(", memory_limit='1e400 GiB'"), "ArgumentError"),
    "a NaN memory limit": (_suggest(", memory_limit=float('nan')"), "ArgumentError"),
    "an infinite host memory limit": (
        _suggest(", host_memory_limit=float('inf')"),
        "ArgumentError",
    ),
    "a NaN budget": (_MLP + "sv.suggest(f, P, B, budget_s=float('nan'))", "ArgumentError"),
    "an infinite budget": (_MLP + "sv.suggest(f, P, B, budget_s=float('inf'))", "ArgumentError"),
    "a budget as a string": (_MLP + "sv.suggest(f, P, B, budget_s='60')", "ArgumentError"),
    "a numpy budget shorter than a compile gives one plan": (
        _MLP + "s = sv.suggest(f, P, B, mesh=M2, budget_s=np.float64(0.001), progress=False)\n"
        "s.tried == 1 and any('longer than the whole budget' in n for n in s.notes)",
        "True",
    ),
    "a fractional mesh size": (_suggest(", mesh_shapes=[(2, 4.5)]"), "ArgumentError"),
    "negative mesh sizes": (_suggest(", mesh_shapes=[(-2, -4)]"), "ArgumentError"),
    "mesh shapes as a string": (_suggest(", mesh_shapes='2x4'"), "ArgumentError"),
    "a mesh shape as a number": (_suggest(", mesh_shapes=[8]"), "ArgumentError"),
    "mesh shapes of another device count": (_suggest(", mesh_shapes=[(3, 3)]"), "ArgumentError"),
    "numpy mesh sizes": (
        _suggest(", mesh_shapes=[(np.int64(4), np.int64(2))]") + ".tried >= 1",
        "True",
    ),
    "a string to place": ("sv.suggest(lambda x: x, 'hello', progress=False)", "ArgumentError"),
    "None to place": ("sv.suggest(lambda x: x, None, progress=False)", "ArgumentError"),
    "an empty dict to place": ("sv.suggest(lambda x: x, {}, progress=False)", "ArgumentError"),
    "no arguments at all": ("sv.suggest(lambda x: x, progress=False)", "ArgumentError"),
    "a plan over many leaves says how in a short line": (
        "P = {f'k{i}': jax.ShapeDtypeStruct((64,), jnp.float32) for i in range(60)}\n"
        "B = jax.ShapeDtypeStruct((16, 64), jnp.float32)\n"
        "f = lambda params, batch: sum(jnp.sum(batch * v) for v in params.values())\n"
        "s = sv.suggest(f, P, B, budget_s=0.001, progress=False)\n"
        "all(len(p.how) <= 200 for p in s.plans) and 'more' in s.plans[0].how",
        "True",
    ),
    "a rule set kept in host memory named None": (
        "sv.RuleSet('x', 'x', host=None)",
        "ArgumentError",
    ),
    "a rule set's host as a list is kept hashable": (
        "hash(sv.RuleSet('x', 'x', host=['optimizer'])) is not None",
        "True",
    ),
    "a rule set's host naming gradients": (
        "sv.RuleSet('x', 'x', host=('grads',))",
        "ArgumentError",
    ),
}
