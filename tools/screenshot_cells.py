# The cells tools/screenshots.py runs in JupyterLab to take the README's pictures.
#
# Each "# %% <name>" starts a cell. "# %% setup" runs first; every other cell is a picture:
# "# %% shot: <file stem> | ready: <CSS selector>" is screenshotted into assets/<stem>.png once
# <selector> is drawn in its output; "| width: <px>" sets the viewport's starting width (1100).
# Shot cells only use what setup defines, so any subset runs.
# This file also runs as a plain script (python tools/screenshot_cells.py) to check the code.

# %% setup
import numpy as np

import shardviz as sv

sv.use_cpu_devices(8)
import jax  # noqa: E402

from shardviz.strategies import mlp  # noqa: E402

mesh = sv.Mesh(range(8), (2, 4), ("data", "model"))
# Megatron: w1 split by columns, w2 by rows, over 'model'
megatron = {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()}


def placed(d_model: int, d_hidden: int, batch: int) -> tuple[dict, dict]:
    """The MLP's params placed Megatron-style and a batch split over 'data'."""
    weights = mlp.init_params(jax.random.key(0), d_model, d_hidden)
    params = {k: sv.mark_sharding(v, mesh, megatron[k]) for k, v in weights.items()}
    data = mlp.make_batch(jax.random.key(1), batch, d_model)
    data = {k: sv.mark_sharding(v, mesh, ("data", None)) for k, v in data.items()}
    return params, data


# %% shot: mesh-and-tiles | ready: [data-device]
# A weight split over 'model' only: each tile is held by the 2 devices of a 'data' column.
w1 = sv.mark_sharding(np.zeros((512, 2048), np.float32), mesh, (None, "model"))
sv.MeshView(sv.layout(mesh), sv.layout(w1), selected_device=5)

# %% shot: ledger | ready: table
params, data = placed(512, 2048, 256)
report = sv.explain(mlp.forward, params, data["x"])  # one all-reduce over 'model', at w2
report

# %% shot: compare | ready: svg
sv.compare("transformer", ["dp", "fsdp", "tp", "2d"])

# %% shot: live | ready: .sv-l-status-done | width: 940
params, data = placed(128, 512, 64)
run = sv.live(mlp.train_step, params, data, steps=30, title="mlp.train_step")
run.wait(300)
run

# %% shot: explorer | ready: .sv-x-root[data-prefetch="done"]
params, data = placed(128, 512, 64)
explorer = sv.Explorer(mlp.train_step, params, data, selected_device=2, selected_collective=0)
explorer
