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

    .venv/bin/python benchmarks/report_size.py [--write]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from html.parser import HTMLParser
from typing import Any

import _common as C

sys.path.insert(0, str(C.ROOT))

import shardviz as sv  # noqa: E402

sv.use_cpu_devices(8)

import jax  # noqa: E402

from shardviz.widgets.explorer import payload as xp  # noqa: E402
from tests.fixtures import user_llama  # noqa: E402

KB, MB = 1_000, 1_000_000
HTML_BYTES, HTML_NODES, PAYLOAD_BYTES = 300 * KB, 15_000, 1 * MB


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    a = ap.parse_args(argv)
    r = measure()
    text = markdown(r)
    print(text)
    C.RESULTS.mkdir(exist_ok=True)
    out = C.RESULTS / "report_size.json"
    out.write_text(json.dumps(r, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out.relative_to(C.ROOT)}")
    if a.write:
        C.replace_section(C.README, "report_size", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
