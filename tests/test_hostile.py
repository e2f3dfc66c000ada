"""The battery of hostile and unusual calls, run in a process of its own: every case ends in
the right answer or a ShardvizError, and none kills the process (a name the compiler cannot
take used to abort it inside XLA). Each case says what it expects; the child prints one
line per case, so a case that kills it is named by the last line it started."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

#: name -> (code run with ``sv``, ``jax``, ``jnp``, ``np``, ``M`` (an 8-device mesh) and
#: ``X`` (an (8, 4) array split over it) in scope; its last line's value is the outcome
#: unless it raises; expected: "True" or the error's class).
CASES: dict[str, tuple[str, str]] = {
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

CHILD = textwrap.dedent(
    """
    import json, sys
    import shardviz as sv
    sv.use_cpu_devices(8)
    import jax, jax.numpy as jnp, numpy as np
    M = sv.Mesh(range(8), (8,), ("data",))
    X = sv.mark_sharding(jnp.arange(32.0).reshape(8, 4) / 7, M, ("data", None))
    cases = json.loads(sys.argv[1])
    for name, code in cases.items():
        print("START", name, flush=True)
        *body, last = code.split("\\n")
        scope = dict(sv=sv, jax=jax, jnp=jnp, np=np, M=M, X=X)
        try:
            exec("\\n".join(body), scope)
            outcome = str(eval(last, scope))
        except sv.ShardvizError as err:
            outcome = type(err).__name__
            if not str(err).strip() or "Fix:" not in str(err):
                outcome += " without a fix"
        except BaseException as err:
            outcome = f"raw {type(err).__name__}: {str(err)[:200]}"
        print("OUTCOME", json.dumps([name, outcome]), flush=True)
    print("DONE", flush=True)
    """
)


def test_no_hostile_call_kills_the_process_and_each_ends_as_expected() -> None:
    code = {name: c for name, (c, _) in CASES.items()}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(code)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    started = [ln[6:] for ln in lines if ln.startswith("START ")]
    assert done.returncode == 0 and "DONE" in lines, (
        f"the process died (exit {done.returncode}) in case {started[-1:]!r}: {done.stderr[-1500:]}"
    )
    outcomes = dict(json.loads(ln[8:]) for ln in lines if ln.startswith("OUTCOME "))
    wrong = {
        name: (outcomes.get(name), want)
        for name, (_, want) in CASES.items()
        if outcomes.get(name) != want and not _is_subclass(outcomes.get(name), want)
    }
    assert not wrong, wrong


def _is_subclass(got: str | None, want: str) -> bool:
    """A MeshError or CompileError where a ShardvizError is expected is right too."""
    import shardviz.errors as errors

    cls = getattr(errors, got or "", None)
    base = getattr(errors, want, None)
    return isinstance(cls, type) and isinstance(base, type) and issubclass(cls, base)
