"""Fixes run as pasted: each fix's code names the mesh by the notebook's own variable (no
``jax.set_mesh`` needed) and reaches the leaf as the notebook does. Each case is a notebook
cell (a file of its own, run in a namespace of its own as Jupyter runs one); every fix
``sv.diagnose`` offers is pasted into that code, run without a mesh context, and the result
compiled."""

from __future__ import annotations

import textwrap
from pathlib import Path

import jax
import pytest
from jax.sharding import NamedSharding

import shardviz as sv
from shardviz.analysis.detect.fix_code import MESH_HINT, CodeNames, pasteable
from shardviz.model.findings import Fix

HEAD = """\
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
"""

#: name -> (the cell, the function, its arguments' variables, the fix kinds it must offer)
CASES = {
    "replicated": (
        """
        my_mesh = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
        put = lambda x, *spec: jax.device_put(x, NamedSharding(my_mesh, P(*spec)))
        params = {
            "w1": put(jnp.ones((256, 256)), "data", None),
            "w2": put(jnp.ones((256, 256)), None, "data"),
            "w3": put(jnp.ones((256, 256)), None, None),
        }
        batch = put(jnp.ones((64, 256)), "data", None)

        def forward(params, x):
            h = jnp.tanh(x @ params["w1"])
            h = jnp.tanh(h @ params["w2"])
            return h @ params["w3"]
        """,
        "forward", ("params", "batch"), {"spec"},
    ),
    "regather": (
        """
        m = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
        w = jax.device_put(jnp.ones((256, 256)), NamedSharding(m, P("data", None)))
        x = jax.device_put(jnp.ones((64, 256)), NamedSharding(m, P("data", None)))

        def step(w, x):
            def loss(w):
                layer = jax.checkpoint(lambda h: jnp.tanh(h @ w))
                h = x
                for _ in range(3):
                    h = layer(h)
                return h.sum()

            return jax.grad(loss)(w)
        """,
        "step", ("w", "x"), {"constraint"},
    ),
    "reshard_chain": (
        """
        mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
        x = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("data", None)))
        by_model = NamedSharding(mesh, P(None, "model"))

        def step(x):
            y = jnp.sin(x)
            y = jax.lax.with_sharding_constraint(y, by_model)
            z = y * 2
            z = jax.lax.with_sharding_constraint(z, NamedSharding(mesh, P("data", None)))
            return z.sum(0)
        """,
        "step", ("x",), {"drop-constraint"},
    ),
    "loop": (
        """
        mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
        h0 = jax.device_put(jnp.ones((64, 128)), NamedSharding(mesh, P("data", None)))
        w = jax.device_put(jnp.ones((128, 128)), NamedSharding(mesh, P()))
        by_model = NamedSharding(mesh, P(None, "model"))

        def layers(h, w):
            def body(i, h):
                h = jnp.tanh(h @ w)
                return jax.lax.with_sharding_constraint(h, by_model)

            return jax.lax.fori_loop(0, 4, body, h)
        """,
        "layers", ("h0", "w"), {"drop-constraint"},
    ),
    "idle_axis": (
        """
        devices = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
        w = jax.device_put(jnp.ones((128, 128)), NamedSharding(devices, P()))
        x = jax.device_put(jnp.ones((64, 128)), NamedSharding(devices, P("model", None)))

        def forward(w, x):
            return jnp.tanh(x @ w)
        """,
        "forward", ("w", "x"), {"mesh"},
    ),
}  # fmt: skip


def _cell(tmp_path: Path, name: str, body: str) -> tuple[Path, list[str]]:
    path = tmp_path / f"{name}.py"
    text = HEAD + textwrap.dedent(body)
    path.write_text(text)
    return path, text.splitlines()


def _run(path: Path, lines: list[str]) -> dict:
    """The cell run as Jupyter runs one: its own namespace, no mesh context."""
    ns: dict = {"__name__": "__main__"}
    exec(compile("\n".join(lines) + "\n", str(path), "exec"), ns)
    return ns


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _line_no(fix: Fix, path: Path) -> int:
    file, no = fix.line.rsplit(":", 1)
    assert file.endswith(path.name), (fix.line, path)
    return int(no) - 1


def _pasted(fix: Fix, path: Path, lines: list[str], fn: str) -> list[str]:
    """The cell's lines with the fix's code pasted where it says."""
    out = list(lines)
    if fix.kind == "drop-constraint":
        i = _line_no(fix, path)
        if fix.code.startswith("# delete:"):
            del out[i]
        else:
            out[i] = _indent(lines[i]) + fix.code
    elif fix.kind == "constraint" and fix.line:
        i = _line_no(fix, path)
        out.insert(i + 1, _indent(lines[i]) + fix.code)
    elif fix.kind == "constraint":
        i = next(k for k, line in enumerate(lines) if line.lstrip().startswith(f"def {fn}("))
        out.insert(i + 1, _indent(lines[i]) + "    " + fix.code)
    return out


def _args(ns: dict, names: tuple[str, ...]) -> list:
    return [ns[n] for n in names]


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_fix_runs_as_pasted_without_a_mesh_context(tmp_path, case):
    body, fn, arg_names, kinds = CASES[case]
    path, lines = _cell(tmp_path, case, body)
    ns = _run(path, lines)
    call = f"found = sv.diagnose({fn}, {', '.join(arg_names)}, run=False)"
    ns["sv"] = sv
    exec(compile(call, str(tmp_path / "diagnose.py"), "exec"), ns)
    fixes = [f.fix for f in ns["found"] if f.fix is not None]
    assert kinds <= {f.kind for f in fixes}, [f.kind for f in fixes]
    for fix in fixes:
        assert MESH_HINT not in fix.code  # the cell names its mesh: no hint needed
        if fix.kind in ("spec", "constraint", "mesh"):
            mesh_var = next(k for k, v in ns.items() if isinstance(v, jax.sharding.Mesh))
            assert mesh_var in fix.code
        fresh = _run(path, _pasted(fix, path, lines, fn))
        if fix.kind in ("spec", "mesh"):
            exec(fix.code, fresh)  # run in the notebook's namespace, as pasted
        if fix.kind == "mesh":
            new = fresh[mesh_var]
            assert isinstance(new, jax.sharding.Mesh) and new.axis_sizes == fix.mesh_shape
            for a in arg_names:
                fresh[a] = jax.device_put(fresh[a], NamedSharding(new, fresh[a].sharding.spec))
        if fix.kind == "spec":  # the leaf, reached by the cell's own variable, is re-placed
            assert fix.code.split(" = ", 1)[0].split("[", 1)[0] in arg_names
        jax.jit(fresh[fn]).lower(*_args(fresh, arg_names)).compile()


def test_unknown_mesh_says_what_mesh_is():
    fix = Fix(kind="spec", description="d", code="P('data')", leaf="params/w", spec=(("data",), ()))
    code = pasteable(fix, CodeNames()).code
    assert code.startswith(
        "params_w = jax.device_put(params_w, NamedSharding(mesh, P('data', None)))"
    )
    assert "jax.set_mesh(mesh)" in code
    named = pasteable(fix, CodeNames("m", {}, {"params/w": "state['w']"})).code
    assert named == "state['w'] = jax.device_put(state['w'], NamedSharding(m, P('data', None)))"
