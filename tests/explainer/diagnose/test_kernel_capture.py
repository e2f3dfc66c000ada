"""The partitioner's warning reaches the report inside a Jupyter kernel too (its stderr goes
to the terminal that started Jupyter, not to the cell), run for real through nbclient."""

from __future__ import annotations

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from tests.course.test_notebooks import _kernel_env  # noqa: E402

CELLS = [
    "import shardviz as sv\nsv.use_cpu_devices(8)",
    """import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
a = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("data", None)))
f = jax.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P(None, "model")))""",
    """report = sv.explain(f, a, run=False).try_fixes()
(finding,) = report.findings.of("involuntary-remat")
print(finding.kind, finding.where.line.rsplit(":", 1)[-1], finding.fix.leaf, finding.check.helps)""",
]


def test_the_warning_is_captured_in_a_kernel(tmp_path, monkeypatch) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    for key, value in _kernel_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    out = "".join(o.get("text", "") for o in nb.cells[2].outputs if o.output_type == "stream")
    # The cell's own line 5 (the jit with out_shardings) is where the value is used.
    assert out.split() == ["involuntary-remat", "5", "a", "True"]
