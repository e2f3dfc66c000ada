"""Axis names the XLA compiler cannot take (non-ASCII, control characters) are refused
where they enter, with the fix; before, any compile aborted the whole process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import shardviz as sv
from shardviz.capture.mesh import mesh_layout
from shardviz.errors import MeshError
from shardviz.widgets.config_checks import parse_axis_names

BAD = ["données", "tab\there", "new\nline", "模型", "\x00"]


@pytest.mark.parametrize("name", BAD)
def test_mesh_refuses_names_the_compiler_cannot_take(name) -> None:
    with pytest.raises(MeshError, match="XLA compiler cannot take") as err:
        sv.Mesh(range(8), (2, 4), (name, "model"))
    assert "rename it" in str(err.value)


def test_the_fix_suggests_an_ascii_spelling() -> None:
    with pytest.raises(MeshError, match="'donnees'"):
        sv.Mesh(range(8), (2, 4), ("données", "model"))


def test_a_jax_mesh_with_such_a_name_is_refused_before_compiling() -> None:
    jm = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("données", "model"))
    with pytest.raises(MeshError, match="données"):
        mesh_layout(jm)


def test_the_explorers_axis_box_refuses_them_too() -> None:
    with pytest.raises(MeshError, match="XLA compiler cannot take"):
        parse_axis_names("données, model", (2, 4))
    assert parse_axis_names("data, model", (2, 4)) == ("data", "model")


@pytest.mark.parametrize(
    ("shape", "ids", "words"),
    [((2.5, 4), range(8), "not a whole number"), ((2, 4), [0.5] * 8, "not a whole number"),
     ((), [], "no device ids"), (("2", 4), range(8), "not a number")],
)  # fmt: skip
def test_sizes_and_ids_are_never_truncated(shape, ids, words) -> None:
    with pytest.raises(MeshError, match=words):
        sv.Mesh(ids, shape)


def test_explaining_on_a_bad_jax_mesh_fails_cleanly_in_a_child_process() -> None:
    """The process survives: the error is raised before the compiler sees the name."""
    code = textwrap.dedent(
        """
        import shardviz as sv
        sv.use_cpu_devices(8)
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import NamedSharding, PartitionSpec as P
        jm = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("données", "model"))
        x = jax.device_put(jnp.ones((8, 8)), NamedSharding(jm, P("données")))
        try:
            sv.explain(lambda a: a * 2, x)
        except sv.ShardvizError as err:
            print("REFUSED", type(err).__name__)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert "REFUSED" in out.stdout
