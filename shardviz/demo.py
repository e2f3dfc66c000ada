"""The main job behind ``make demo``: an MLP placed several ways, its training step explained,
then strategies compared side by side.

Runs on whatever devices jax has; ``python -m shardviz demo`` first sets up fake CPU devices.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp

from shardviz.capture.layout import layout, layout_tree
from shardviz.capture.mesh import Mesh, mark_sharding
from shardviz.explainer.explain import explain
from shardviz.model import TreeLayout
from shardviz.model.units import format_bytes
from shardviz.render.html import page
from shardviz.strategies import mlp
from shardviz.strategies.runner import compare

#: Parameter specs per placement, for the MLP ``relu(x @ w1 + b1) @ w2 + b2``.
PLACEMENTS: dict[str, tuple[str, dict[str, tuple]]] = {
    "data parallel": (
        "Every device holds all parameters; the batch is split over 'data'.",
        {"w1": (), "b1": (), "w2": (), "b2": ()},
    ),
    "FSDP (ZeRO-3) over data": (
        "Parameters are split over 'data' too: each device holds half of each weight and "
        "gathers the rest when it needs it.",
        {"w1": ("data", None), "b1": (), "w2": ("data", None), "b2": ()},
    ),
    "Megatron tensor parallel": (
        "w1 split by columns and w2 by rows over 'model', so the hidden layer never needs "
        "gathering; one all-reduce per block sums the partial outputs.",
        {"w1": (None, "model"), "b1": ("model",), "w2": ("model", None), "b2": ()},
    ),
    "2-D: FSDP x tensor parallel": (
        "Both: the hidden dim over 'model' and the other dim over 'data'. Each device holds "
        "1/8 of each weight.",
        {"w1": ("data", "model"), "b1": ("model",), "w2": ("model", "data"), "b2": ()},
    ),
}


@dataclass(frozen=True)
class DemoSizes:
    batch: int = 256
    d_model: int = 512
    d_hidden: int = 2048
    seq: int = 64
    heads: int = 8

    def fit(self, rows: int, cols: int) -> DemoSizes:
        """Round the sizes up so every placement divides evenly on a rows x cols mesh."""

        def up(v: int, k: int) -> int:
            return -(-v // k) * k

        return DemoSizes(
            batch=up(self.batch, rows),
            d_model=up(self.d_model, rows),
            d_hidden=up(self.d_hidden, math.lcm(rows, cols)),
            seq=self.seq,
            heads=up(self.heads, cols),
        )


def demo_mesh(n: int) -> Mesh:
    """A ('data', 'model') mesh: 2 x n/2 when n is even (2 x 4 on 8 devices), else 1 x n."""
    rows = 2 if n % 2 == 0 and n > 1 else 1
    return Mesh(range(n), (rows, n // rows), ("data", "model"))


def _placed_tree(mesh: Mesh, specs: dict[str, tuple], sizes: DemoSizes) -> dict:
    params = mlp.init_params(jax.random.key(0), sizes.d_model, sizes.d_hidden)
    batch = mlp.make_batch(jax.random.key(1), sizes.batch, sizes.d_model)
    return {
        "params": {k: mark_sharding(v, mesh, specs[k], name=k) for k, v in params.items()},
        "batch": {k: mark_sharding(v, mesh, ("data", None), name=k) for k, v in batch.items()},
    }


#: The placements whose training step the demo compiles, runs and explains.
EXPLAINED = ("data parallel", "FSDP (ZeRO-3) over data", "Megatron tensor parallel")


def _explain_section(title: str, tree: dict) -> tuple[list[str], list[str]]:
    report = explain(mlp.train_step, tree["params"], tree["batch"], steps=3)
    return [f"== One training step, {title} ==", str(report), ""], [
        f"<h2>One training step: {html.escape(title)}</h2>",
        report._repr_html_(),
    ]


#: The strategies the demo ends with, run for real on the zoo's MLP with Adam.
COMPARED = ("dp", "zero1", "zero3", "tp", "2d")


def _comparison_section(n: int) -> tuple[list[str], list[str]]:
    # Sizes divisible on any device count the demo accepts (see DemoSizes.fit).
    rows = 2 if n % 2 == 0 and n > 1 else 1
    sizes = DemoSizes(batch=64, d_model=128, d_hidden=512).fit(rows, n // rows)
    sizes = sizes.fit(n, n)  # one-axis strategies split over all n devices
    comparison = compare(
        "mlp", COMPARED, steps=3, d_model=sizes.d_model, d_hidden=sizes.d_hidden,
        batch=sizes.batch,
    )  # fmt: skip
    return [f"== {len(COMPARED)} strategies compared, for real ==", str(comparison), ""], [
        f"<h2>{len(COMPARED)} strategies compared: one Adam training step each</h2>",
        comparison._repr_html_(),
    ]


def run_demo(
    out: str | Path = "shardviz-demo.html", sizes: DemoSizes | None = None
) -> tuple[Path, str]:
    """Place the MLP every way in :data:`PLACEMENTS`, write the HTML report, return it and a summary."""
    n = jax.device_count()
    mesh = demo_mesh(n)
    sizes = (sizes or DemoSizes()).fit(*mesh.mesh_shape)
    mesh_view = mesh.layout
    lines = [
        f"shardviz demo: an MLP ({sizes.d_model} -> {sizes.d_hidden} -> {sizes.d_model}) and a "
        f"batch of {sizes.batch}, on {n} {jax.default_backend()} device(s)",
        "",
        str(mesh_view),
        "",
    ]
    sections = [
        f"<p>A small MLP (<code>relu(x @ w1 + b1) @ w2 + b2</code>, d_model={sizes.d_model}, "
        f"d_hidden={sizes.d_hidden}) and a training batch of {sizes.batch}, placed four ways on "
        f"{n} {html.escape(jax.default_backend())} device(s). Hover over a tile for its devices, "
        "index, shape and bytes.</p><h2>The mesh</h2>",
        mesh_view._repr_html_(),
    ]
    summary_rows = []
    explained: list[tuple[str, dict]] = []
    for title, (blurb, specs) in PLACEMENTS.items():
        placed = _placed_tree(mesh, specs, sizes)
        tree: TreeLayout = layout_tree(placed)
        per_dev = max(tree.bytes_per_device.values())
        summary_rows.append((title, per_dev, tree.global_bytes))
        lines += [f"== {title} ==", blurb, str(tree), ""]
        sections += [
            f"<h2>{html.escape(title)}</h2><p>{html.escape(blurb)}</p>",
            tree._repr_html_(),
            tree["params/w1"]._repr_html_(),
            tree["params/w2"]._repr_html_(),
        ]
        if title in EXPLAINED:
            explained.append((title, placed))
    act = jax.ShapeDtypeStruct(
        (sizes.batch, sizes.seq, sizes.heads, 64),
        jnp.bfloat16,
        sharding=jax.sharding.NamedSharding(
            mesh.jax_mesh, jax.sharding.PartitionSpec("data", None, "model", None)
        ),
    )
    act_view = layout(act, name="attention activations (batch, seq, heads, head_dim)")
    sections += [
        "<h2>An N-D array</h2><p>A 4-D activation, batch over 'data' and heads over 'model': "
        "the two split dims go on the page, the others are listed beside it.</p>",
        act_view._repr_html_(),
    ]
    lines += [
        "== An N-D array ==",
        str(act_view),
        "",
        "Bytes per device (params + batch), the largest device:",
    ]
    lines += [
        f"  {t:<30} {format_bytes(b):>10}   (global {format_bytes(g)})" for t, b, g in summary_rows
    ]
    for title, placed in explained:
        text, parts = _explain_section(title, placed)
        lines += text
        sections += parts
    text, parts = _comparison_section(n)
    lines += text
    sections += parts
    path = Path(out)
    path.write_text(page("shardviz demo", sections), encoding="utf-8")
    lines += ["", f"Report written to {path.resolve()}"]
    return path, "\n".join(lines)
