"""How big the views of a user's own Llama-style training step are, at 274 state leaves.

The program is the issue's: a Llama-style decoder in plain jax (RMSNorm, RoPE, SwiGLU, grouped
KV heads, 8 layers as a list of per-layer dicts: 91 parameter leaves, 274 with Adam's state),
FSDP x TP on a ('data', 'model') 2 x 4 mesh of 8 fake CPU devices, ``jax.jit(train_step,
donate_argnums=0)`` with ``optax.adam`` (``tests/fixtures/user_llama.py``, its ``BENCH``
config). ``sv.explain(step, state, batch, run=False)`` once, then the sizes of what it shows:

- ``str(report)`` (what ``print`` writes): UTF-8 bytes and lines;
- ``report._repr_html_()`` (what a notebook receives): UTF-8 bytes and DOM elements (start
  tags counted with ``html.parser.HTMLParser``, SVG elements included);
- the Explorer's synced ``payload`` trait (``payload.report_json(report)``): UTF-8 bytes, and
  its largest keys;
- the ledger (collectives) rows and the findings, which the views list.

Targets (issue): the HTML <= 300 KB and <= 15k DOM nodes; the synced payload <= 1 MB (KB and
MB read as 1,000 and 1,000,000 bytes). Measure only: nothing here changes what shardviz shows.

Two more runs, each its own README section (``--runs``):

- ``8b``: the report HTML of shardviz's deviceless plan of Llama 3.1 8B on a TPU v6e 16x16
  slice (``benchmarks/fidelity.py``'s ``8b`` run, one ``sv.compare`` at full size: about 90 s
  here): bytes, DOM elements and the bytes of each section. Target: <= 400 KB.
- ``notebook``: the notebook a user has for the 274-leaf step: cells that build it, show
  ``sv.explain(step, state, batch)`` and ``sv.Explorer(step, state, batch)``, run headless by
  nbclient in a fresh kernel with the widget state stored (as a saved notebook keeps it), then
  written by nbformat: the file's bytes and which outputs and widget models carry them.
  Target: <= 3 MB.

    .venv/bin/python benchmarks/report_size.py [--runs views,8b,notebook] [--write]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time
from html.parser import HTMLParser
from typing import Any

import _common as C

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")  # the 8B plan's TPU topology
sys.path.insert(0, str(C.ROOT))

import shardviz as sv  # noqa: E402

sv.use_cpu_devices(8)

import jax  # noqa: E402

from shardviz.widgets.explorer import payload as xp  # noqa: E402
from tests.fixtures import user_llama  # noqa: E402

KB, MB = 1_000, 1_000_000
HTML_BYTES, HTML_NODES, PAYLOAD_BYTES = 300 * KB, 15_000, 1 * MB
PLAN_HTML_BYTES, NOTEBOOK_BYTES = 400 * KB, 3 * MB


class _TagCounter(HTMLParser):
    """Counts start tags (``<g/>`` too: HTMLParser reads it as a start and an end) by name."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: collections.Counter[str] = collections.Counter()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1


def dom_tags(html: str) -> collections.Counter[str]:
    """Element counts by tag name in ``html``."""
    parser = _TagCounter()
    parser.feed(html)
    parser.close()
    return parser.tags


def measure() -> dict[str, Any]:
    """Build the BENCH step, explain it once, and size its views."""
    cfg = user_llama.BENCH
    step, state, batch = user_llama.make(cfg)
    start = time.perf_counter()
    report = sv.explain(step, state, batch, run=False)
    explain_s = time.perf_counter() - start
    text = str(report)
    html = report._repr_html_()
    tags = dom_tags(html)
    payload = xp.report_json(report)
    parts = xp.report_payload(report)
    key_bytes = {k: len(xp.dumps(v).encode()) for k, v in parts.items()}
    findings = report.findings or ()
    return {
        "config": vars(cfg),
        "param_leaves": len(jax.tree.leaves(state["params"])),
        "state_leaves": len(jax.tree.leaves(state)),
        "explain_s": explain_s,
        "text_bytes": len(text.encode()),
        "text_chars": len(text),
        "text_lines": len(text.splitlines()),
        "html_bytes": len(html.encode()),
        "html_nodes": sum(tags.values()),
        "html_top_tags": dict(tags.most_common(8)),
        "payload_bytes": len(payload.encode()),
        "payload_chars": len(payload),
        "payload_top_keys": dict(sorted(key_bytes.items(), key=lambda kv: -kv[1])[:6]),
        "default_array_bytes": len(xp.array_json(report, xp.default_array(report)).encode()),
        "ledger_rows": len(report.collectives),
        "findings": len(findings),
        "finding_kinds": list(getattr(findings, "kinds", ())),
        "arguments": len(report.arguments.leaves),
        "outputs": len(report.outputs.leaves),
        "intermediates": len(report.intermediates),
    }


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def markdown(r: dict[str, Any]) -> str:
    """The README section: preamble, the table with targets, and what is largest."""
    cfg = r["config"]
    rows = [
        (
            "`print(report)`",
            f"{r['text_bytes']:,} B ({C.fmt_bytes(r['text_bytes'])}; {r['text_chars']:,} characters)",
            "-",
        ),
        ("`print(report)` lines", f"{r['text_lines']:,}", "-"),
        (
            "HTML (`_repr_html_`)",
            f"{r['html_bytes']:,} B ({C.fmt_bytes(r['html_bytes'])})",
            f"<= 300 KB: {_verdict(r['html_bytes'] <= HTML_BYTES)} "
            f"({r['html_bytes'] / HTML_BYTES:.1f}x)",
        ),
        (
            "HTML DOM elements",
            f"{r['html_nodes']:,}",
            f"<= 15k: {_verdict(r['html_nodes'] <= HTML_NODES)} "
            f"({r['html_nodes'] / HTML_NODES:.1f}x)",
        ),
        (
            "Explorer synced payload",
            f"{r['payload_bytes']:,} B ({C.fmt_bytes(r['payload_bytes'])})",
            f"<= 1 MB: {_verdict(r['payload_bytes'] <= PAYLOAD_BYTES)} "
            f"({r['payload_bytes'] / PAYLOAD_BYTES:.2f}x)",
        ),
        ("ledger rows (collectives)", f"{r['ledger_rows']:,}", "-"),
        ("findings", f"{r['findings']} ({', '.join(r['finding_kinds']) or 'none'})", "-"),
    ]
    lines = [
        *C.preamble("benchmarks/report_size.py --write"),
        f"8 fake CPU devices, ('data', 'model') 2 x 4 mesh; `user_llama.BENCH`: vocab "
        f"{cfg['vocab']}, d_model {cfg['d_model']}, {cfg['n_layers']} layers, {cfg['n_heads']} "
        f"heads / {cfg['n_kv_heads']} KV heads of {cfg['head_dim']}, d_ff {cfg['d_ff']}, seq "
        f"{cfg['seq']}, batch {cfg['batch']}; {r['param_leaves']} parameter leaves, "
        f"{r['state_leaves']} state leaves. `explain(run=False)` took {r['explain_s']:.1f} s; "
        f"the report lists {r['arguments']} argument and {r['outputs']} output leaves and "
        f"{r['intermediates']:,} intermediates.",
        "",
        "| view | size | target |",
        "|---|---:|---|",
        *(f"| {a} | {b} | {c} |" for a, b, c in rows),
        "",
        "Largest parts: HTML elements "
        + ", ".join(f"`{t}` {n:,}" for t, n in r["html_top_tags"].items())
        + "; payload keys "
        + ", ".join(f"`{k}` {C.fmt_bytes(n)}" for k, n in r["payload_top_keys"].items())
        + f". The default array's tiles (the `array` trait) are {C.fmt_bytes(r['default_array_bytes'])} more.",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# The 8B plan's report


def html_sections(html: str) -> dict[str, int]:
    """Bytes of each part of a report's HTML, cut at its ``<h4>`` headings and the collapsed
    argument and output trees; what comes before the first heading is ``style, header``."""
    cuts = [(m.start(), m.group(1) or "Arguments and outputs (collapsed)")
            for m in re.finditer(r'<h4>([^<]*)|<details class="sv-trees"', html)]  # fmt: skip
    starts = [(0, "style, header"), *cuts, (len(html), "")]
    out: dict[str, int] = {}
    for (a, name), (b, _) in zip(starts, starts[1:], strict=False):
        key = name.strip()
        out[key] = out.get(key, 0) + len(html[a:b].encode())
    return out


def measure_8b() -> dict[str, Any]:
    """Plan the 8B run as ``fidelity.py`` does (deviceless, full size) and size its report."""
    import fidelity

    from shardviz.render.report.html import report_html

    run = next(r for r in fidelity.RUNS if r.key == "8b")
    start = time.perf_counter()
    c = sv.compare(run.model, [run.strategy], target=run.topology,
                   batch_per_device=run.batch_per_device, seq=run.seq, remat=run.remat)  # fmt: skip
    plan_s = time.perf_counter() - start
    report = c.results[0].report
    html = report_html(report)
    tags = dom_tags(html)
    C.RESULTS.mkdir(exist_ok=True)
    (C.RESULTS / "report_size_8b.html").write_text(html, encoding="utf-8")
    return {
        "run": f"{run.model} on {run.topology}, SL {run.seq}, batch {run.batch_per_device}/device, "
        f"remat {run.remat}, {run.strategy}",
        "plan_s": plan_s,
        "html_bytes": len(html.encode()),
        "html_nodes": sum(tags.values()),
        "html_top_tags": dict(tags.most_common(8)),
        "sections": html_sections(html),
        "collectives": len(report.collectives),
        "intermediates": len(report.intermediates),
        "arguments": len(report.arguments.leaves),
        "outputs": len(report.outputs.leaves),
    }


def markdown_8b(r: dict[str, Any]) -> str:
    """The README section of the 8B plan's report."""
    b = r["html_bytes"]
    sections = sorted(r["sections"].items(), key=lambda kv: -kv[1])
    return "\n".join([
        *C.preamble("benchmarks/report_size.py --runs 8b --write", ("jax", "libtpu")),
        f"{r['run']}: `sv.compare(..., target=...)` took {r['plan_s']:.0f} s; the report lists "
        f"{r['collectives']} collectives, {r['intermediates']:,} intermediates, "
        f"{r['arguments']} argument and {r['outputs']} output leaves.",
        "",
        "| view | size | target |",
        "|---|---:|---|",
        f"| HTML (`report_html`) | {b:,} B ({C.fmt_bytes(b)}) | <= 400 KB: "
        f"{_verdict(b <= PLAN_HTML_BYTES)} ({b / PLAN_HTML_BYTES:.2f}x) |",
        f"| HTML DOM elements | {r['html_nodes']:,} | - |",
        "",
        "By section: " + ", ".join(f"{k} {C.fmt_bytes(n)}" for k, n in sections)
        + "; elements " + ", ".join(f"`{t}` {n:,}" for t, n in r["html_top_tags"].items()) + ".",
    ])  # fmt: skip


# --------------------------------------------------------------------------------------------
# The saved notebook

#: The cells of a user's notebook for the 274-leaf step (BENCH size).
NOTEBOOK_CELLS = (
    "import shardviz as sv\n\nsv.use_cpu_devices(8)\n\nfrom tests.fixtures import user_llama",
    "step, state, batch = user_llama.make(user_llama.BENCH)",
    "report = sv.explain(step, state, batch)\nreport",
    "sv.Explorer(step, state, batch)",
)
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def run_notebook(cells: tuple[str, ...]) -> Any:
    """``cells`` run top to bottom by nbclient in a fresh kernel of this interpreter (the repo
    importable), the widget state stored in the notebook's metadata as Jupyter saves it."""
    import nbclient
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(C.ROOT), os.environ.get(
        "PYTHONPATH", "")]), "JAX_PLATFORMS": "cpu"}  # fmt: skip
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", store_widget_state=True,
        resources={"metadata": {"path": str(C.ROOT)}},
    )  # fmt: skip
    client.execute(env=env)
    return nb


def _size(x: Any) -> int:
    """Bytes of ``x`` as JSON indented as nbformat writes it (its splitting of strings into
    lines left out: a close estimate of the part's share of the file)."""
    return len(json.dumps(x, ensure_ascii=False, indent=1).encode())


def _models(nb: Any) -> dict[str, Any]:
    """The notebook's stored widget models by id."""
    return nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


def output_parts(nb: Any) -> list[tuple[str, int]]:
    """``(what, bytes)`` for each output's mime types and the widget models of each kind,
    largest first: ``cell 3 text/plain`` or ``839 LayoutModel``."""
    parts = [
        (f"cell {i} {mime}", _size(data))
        for i, cell in enumerate(nb.cells, 1)
        for out in cell.get("outputs", [])
        for mime, data in out.get("data", {}).items()
    ]
    count: collections.Counter[str] = collections.Counter()
    size: collections.Counter[str] = collections.Counter()
    for model in _models(nb).values():
        count[model.get("model_name", "?")] += 1
        size[model.get("model_name", "?")] += _size(model)
    parts += [(f"{count[name]} {name}", n) for name, n in size.items()]
    return sorted(parts, key=lambda kv: -kv[1])


def anywidget_keys(nb: Any) -> dict[str, int]:
    """Bytes of each synced trait of the notebook's anywidget models (the Explorer's view):
    ``payload``, ``_esm``, ``_css``, ..., largest first."""
    size: collections.Counter[str] = collections.Counter()
    for model in _models(nb).values():
        if model.get("model_name") == "AnyModel":
            for key, value in model.get("state", {}).items():
                size[key] += _size(value)
    return dict(size.most_common(5))


def without(nb: Any, plain_over: int | None = None, only_anywidget: bool = False) -> int:
    """The file's bytes with text/plain outputs over ``plain_over`` characters cut to one line,
    and, with ``only_anywidget``, only the anywidget models' state kept: what those parts
    cost, measured on the same run."""
    import copy

    import nbformat

    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            plain = out.get("data", {}).get("text/plain")
            if plain_over is not None and plain is not None and len(plain) > plain_over:
                out["data"]["text/plain"] = plain.split("(", 1)[0] + "(...)"
    if only_anywidget:
        models = _models(nb)
        for key in [k for k, m in models.items() if m.get("model_name") != "AnyModel"]:
            del models[key]
    return len(nbformat.writes(nb).encode())


def measure_notebook() -> dict[str, Any]:
    """Run the notebook, write it with its outputs, and size the file and its parts."""
    import nbformat

    start = time.perf_counter()
    nb = run_notebook(NOTEBOOK_CELLS)
    run_s = time.perf_counter() - start
    C.RESULTS.mkdir(exist_ok=True)
    path = C.RESULTS / "report_size_notebook.ipynb"
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    errors = [o.get("ename") for c in nb.cells for o in c.get("outputs", [])
              if o.get("output_type") == "error"]  # fmt: skip
    return {
        "cells": list(NOTEBOOK_CELLS),
        "run_s": run_s,
        "file_bytes": path.stat().st_size,
        "errors": errors,
        "outputs_bytes": sum(_size(c.get("outputs", [])) for c in nb.cells),
        "widget_state_bytes": _size(nb.metadata.get("widgets", {})),
        "widget_models": len(_models(nb)),
        "top_parts": output_parts(nb)[:10],
        "anywidget_keys": anywidget_keys(nb),
        "without_long_plain": without(nb, plain_over=1000),
        "without_long_plain_and_controls": without(nb, plain_over=1000, only_anywidget=True),
    }


def markdown_notebook(r: dict[str, Any]) -> str:
    """The README section of the saved notebook."""
    b = r["file_bytes"]
    code = "\n\n".join(r["cells"])
    cut1, cut2 = r["without_long_plain"], r["without_long_plain_and_controls"]
    return "\n".join([
        *C.preamble("benchmarks/report_size.py --runs notebook --write", ("jax", "nbclient")),
        f"The cells (run headless by nbclient, `store_widget_state=True`, in {r['run_s']:.0f} s"
        + (f"; errors: {', '.join(r['errors'])}" if r["errors"] else "") + "):",
        "",
        "```python",
        code,
        "```",
        "",
        "| part | size | target |",
        "|---|---:|---|",
        f"| notebook file (nbformat) | {b:,} B ({C.fmt_bytes(b)}) | <= 3 MB: "
        f"{_verdict(b <= NOTEBOOK_BYTES and not r['errors'])} ({b / NOTEBOOK_BYTES:.2f}x) |",
        f"| cell outputs | {C.fmt_bytes(r['outputs_bytes'])} | - |",
        f"| widget state ({r['widget_models']:,} models) | "
        f"{C.fmt_bytes(r['widget_state_bytes'])} | - |",
        f"| the file with long `text/plain` outputs cut to one line | {cut1:,} B "
        f"({C.fmt_bytes(cut1)}) | {_verdict(cut1 <= NOTEBOOK_BYTES)} ({cut1 / NOTEBOOK_BYTES:.2f}x) |",
        f"| ... and only the anywidget models' state kept | {cut2:,} B ({C.fmt_bytes(cut2)}) | "
        f"{_verdict(cut2 <= NOTEBOOK_BYTES)} ({cut2 / NOTEBOOK_BYTES:.2f}x) |",
        "",
        "Largest parts (JSON as nbformat indents it): "
        + ", ".join(f"{k} {C.fmt_bytes(n)}" for k, n in r["top_parts"])
        + "; the anywidget models' traits: "
        + ", ".join(f"`{k}` {C.fmt_bytes(n)}" for k, n in r["anywidget_keys"].items()) + ".",
    ])  # fmt: skip


# --------------------------------------------------------------------------------------------

#: Each run: what it measures, its README section and results file, and its markdown.
RUNS = {
    "views": (measure, "report_size", markdown),
    "8b": (measure_8b, "report_size_8b", markdown_8b),
    "notebook": (measure_notebook, "report_size_notebook", markdown_notebook),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="views", help="comma-separated: " + ",".join(RUNS))
    ap.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    a = ap.parse_args(argv)
    for key in a.runs.split(","):
        run, section, md = RUNS[key]
        r = run()
        text = md(r)
        print(text)
        C.RESULTS.mkdir(exist_ok=True)
        out = C.RESULTS / f"{section}.json"
        out.write_text(json.dumps(r, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {out.relative_to(C.ROOT)}")
        if a.write:
            C.replace_section(C.README, section, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
