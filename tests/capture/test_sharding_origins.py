"""Where a value's sharding came from (:mod:`shardviz.analysis.sharding_origins`): checked
against Shardy's own record (``sdy.sharding_origins``, which jax 0.10.2 writes when the dump's
pass regex contains ``shardy-verbose``) on live compiles, and on pure text."""

from __future__ import annotations

import glob
import re
import tempfile

import jax
import pytest
from jax.sharding import PartitionSpec as P

from shardviz.analysis.sharding_origins import ShardingGraph, leaf_path, reshape_pairs
from shardviz.capture.hlo.text import parse_hlo_module
from shardviz.model import MeshLayout
from shardviz.model.mesh import Device

from .test_collective_why import _megatron_args, _mesh_2x4, _put, make_chain, megatron


def _with_shardy_origins(fn, *args):
    """The propagated HLO text and Shardy's after-propagation MLIR with its origins."""
    with tempfile.TemporaryDirectory() as tmp:
        jax.jit(fn).lower(*args).compile(
            compiler_options={
                "xla_dump_to": tmp,
                "xla_dump_hlo_as_text": True,
                "xla_dump_hlo_pass_re": "shardy-verbose|^spmd-partitioning$",
            }
        )
        (hlo,) = glob.glob(f"{tmp}/*before_spmd-partitioning.txt")
        (mlir,) = glob.glob(f"{tmp}/shardy/*/02.after_propagation.mlir")
        return open(hlo).read(), open(mlir).read()


_SDY_OP = re.compile(r"= stablehlo\.(\w+) .*sdy\.sharding_origins = \[\{([^}]*)\}\]")
_HLO_OP = {"dot": "dot", "multiply": "multiply", "maximum": "maximum", "add": "add"}


def _shardy_origins(mlir: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for m in _SDY_OP.finditer(mlir):
        if m.group(1) in _HLO_OP:
            pairs = re.findall(r'(\w+) = "([^"]+)"', m.group(2))
            out.append((m.group(1), dict(pairs)))
    return out


@pytest.mark.parametrize(
    "case",
    ["megatron", "chain"],
)
def test_roots_agree_with_shardy_sharding_origins(case):
    mesh = _mesh_2x4()
    fn, args = (megatron, _megatron_args(mesh)) if case == "megatron" else (
        make_chain(mesh), (_put(mesh, (32, 64), P()),)
    )  # fmt: skip
    hlo, mlir = _with_shardy_origins(fn, *args)
    module = parse_hlo_module(hlo)
    layout = MeshLayout(("data", "model"), (2, 4), tuple(Device(i) for i in range(8)))
    program = ShardingGraph(module, layout, [d.id for d in mesh.devices.flat], ())
    computed = [i for i in module.entry.instructions if i.opcode in _HLO_OP.values()]
    # Tiled: jax 0.10.2 prints `{devices=[2,4]<=[8]}`, jax 0.12 `{mesh['data'=2,'model'=4], ...}`.
    computed = [
        i for i in computed if i.sharding and ("devices=" in i.sharding or "mesh[" in i.sharding)
    ]
    expected = _shardy_origins(mlir)
    assert expected, "Shardy wrote no sharding_origins (did the shardy-verbose switch change?)"
    params = {
        int(i.operand_text): i.name for i in module.entry.instructions if i.opcode == "parameter"
    }
    constraints = [i.name for i in module.entry.instructions if "sharding_constraint" in i.op_name]
    checked = 0
    for ins, (op, origins) in zip(computed, [e for e in expected if e[1]], strict=False):
        assert ins.opcode == _HLO_OP[op]
        for axis, origin in origins.items():
            if origin.startswith("input: "):
                want = params[int(origin.removeprefix("input: "))]
            elif origin.startswith("constraint_"):
                want = constraints[int(origin.removeprefix("constraint_"))]
            else:
                continue
            assert [r.name for r, _ in program.roots(ins.name, axis)] == [want], (ins.name, axis)
            checked += 1
    assert checked >= 2


def test_leaf_paths_from_parameter_names():
    assert leaf_path("params['w1']") == "params/w1"
    assert leaf_path("params[\\'w1\\']") == "params/w1"
    assert leaf_path('batch["x"][0]') == "batch/x/0"
    assert leaf_path("state.mu['w']") == "state/mu/w"
    assert leaf_path("x") == "x"
    assert leaf_path("weird name (1)") == "weird name (1)"


def test_reshape_keeps_whole_dims_only():
    assert reshape_pairs((128,), (1, 1, 128)) == ((0, 2),)
    assert reshape_pairs((16, 64, 8, 16), (16, 64, 128)) == ((0, 0), (1, 1))
    assert reshape_pairs((8, 4), (4, 8)) == ()
