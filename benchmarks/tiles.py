"""Tile views side by side: shardviz vs jax's text view vs treescope, at 8, 512, 2048 devices.

One 2-D array, float32 (4096, 8192), split over both axes of a (2, N/2) mesh ('data', 'model')
with P('data', 'model'). Nothing is allocated: every tool starts from the shape and the
sharding. For each device count a fresh process (the fake-device count is fixed once jax's
backend starts) times, alternating in rounds:

- shardviz:  ``sv.layout(ShapeDtypeStruct)`` + ``layout._repr_html_()`` (both fresh each round);
- jax text:  ``jax.debug.visualize_sharding(shape, sharding)``, printed by rich into a
  StringIO with colour on, as in a colour terminal (jax's default when colour is available);
  the no-colour variant is timed too and reported alongside;
- treescope: ``render_array_sharding``'s work for a hypothetical array (the same
  ``render_sharding_info`` call it makes, fed the ``ShardingInfo`` its jax adapter builds),
  turned into the HTML a notebook receives (``figure._repr_html_()``).

Usage (from the repo root):

    .venv/bin/python benchmarks/tiles.py                 # 8, 512, 2048 devices; print a table
    .venv/bin/python benchmarks/tiles.py --write         # ... and update benchmarks/README.md
    .venv/bin/python benchmarks/tiles.py --devices 512 --json   # one child run, JSON out

jax's text view needs ``rich`` and treescope is ``treescope``: both are in the dev extra only.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as common  # noqa: E402

SHAPE = (4096, 8192)
DTYPE = "float32"
DEFAULT_COUNTS = (8, 512, 2048)
DEFAULT_ROUNDS = 15
#: Targets from the issue.
MAX_RATIO_AT_512 = 1.0
MAX_HTML_AT_2048 = 300 * 1000  # bytes; 1 KB = 1000 bytes, the stricter reading
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


# --------------------------------------------------------------------------------------------
# Child: one device count, one process


def _colour_env() -> None:
    """Make rich render colour into a StringIO as it would in a colour terminal."""
    os.environ.pop("NO_COLOR", None)
    os.environ["FORCE_COLOR"] = "1"
    os.environ["COLORTERM"] = "truecolor"
    os.environ["TERM"] = "xterm-256color"


def _readability(layout: Any, html: str) -> dict[str, Any]:
    """How the view copes with many tiles: summarised (elided) or not, what is labelled."""
    out: dict[str, Any] = {
        "distinct_tiles": layout.num_distinct_tiles,
        "svg": "<svg" in html,
        "rects": html.count("<rect"),
        "texts": html.count("<text"),
        "tile_labels": html.count('class="sv-lbl"'),
    }
    try:  # the shared geometry says what the view draws
        from shardviz.render.geometry import array_grid

        grid = array_grid(layout)
        cells = list(grid.cells())
        out.update(
            summarised=bool(grid.elided),
            cells_drawn=len(cells),
            rows_shown=sum(not b.elided for b in grid.rows.bands),
            cols_shown=sum(not b.elided for b in grid.cols.bands),
            rows_hidden=grid.rows.hidden,
            cols_hidden=grid.cols.hidden,
        )
    except ImportError:  # geometry moved: fall back to what the HTML shows
        out["summarised"] = out["rects"] < layout.num_distinct_tiles
    return out


def run_child(n: int, rounds: int, results_dir: Path | None) -> dict[str, Any]:
    _colour_env()
    import shardviz as sv

    sv.use_cpu_devices(n)  # first: fixes the fake device count before jax's backend starts

    import jax
    import numpy as np
    import treescope
    from jax.sharding import NamedSharding, PartitionSpec
    from treescope import ndarray_adapters
    from treescope._internal.api.arrayviz import render_sharding_info

    if n % 2:
        raise SystemExit(f"--devices {n}: the mesh is (2, N/2), so N must be even")
    mesh = jax.sharding.Mesh(np.asarray(jax.devices()).reshape(2, n // 2), ("data", "model"))
    sharding = NamedSharding(mesh, PartitionSpec("data", "model"))
    shape = SHAPE
    sds = jax.ShapeDtypeStruct(shape, np.dtype(DTYPE), sharding=sharding)

    last: dict[str, Any] = {}

    def shardviz_view() -> None:
        layout = sv.layout(sds)
        last["shardviz"] = (layout, layout._repr_html_())

    def jax_text(use_color: bool = True) -> str:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            jax.debug.visualize_sharding(shape, sharding, use_color=use_color)
        return buf.getvalue()

    def jax_text_colour() -> None:
        last["jax_text"] = jax_text(True)

    def jax_text_mono() -> None:
        last["jax_text_mono"] = jax_text(False)

    def treescope_view() -> None:
        # What treescope's jax adapter builds for a jax.Array (treescope/external/jax_support.py)
        info = ndarray_adapters.ShardingInfo(
            shard_shape=sharding.shard_shape(shape),
            device_index_to_shard_slices={
                d.id: s for d, s in sharding.devices_indices_map(shape).items()
            },
            device_type=next(iter(sharding.device_set)).platform.upper(),
            fully_replicated=sharding.is_fully_replicated,
        )
        axes = tuple(ndarray_adapters.PositionalAxisInfo(i, s) for i, s in enumerate(shape))
        figure = render_sharding_info(array_axis_info=axes, sharding_info=info)
        last["treescope"] = figure._repr_html_()

    units = {
        "shardviz": shardviz_view,
        "jax_text": jax_text_colour,
        "jax_text_mono": jax_text_mono,
        "treescope": treescope_view,
    }
    times = common.time_rounds(units, rounds=rounds, warmup=1)

    layout, sv_html = last["shardviz"]
    text = last["jax_text"]
    if not _ANSI.search(text):
        raise SystemExit(
            "jax's text view came out without colour: the timing would be the mono one"
        )
    if len(text.splitlines()) < 2:
        raise SystemExit("jax's text view printed nothing: rich's console did not render")
    ts_html = last["treescope"]
    if n <= 8:  # the hypothetical-array path gives treescope's own output for a real array
        real = jax.jit(lambda: jax.numpy.zeros(shape, DTYPE), out_shardings=sharding)()
        same = treescope.render_array_sharding(real)._repr_html_()
        ids = re.compile(r"treescope_out_[0-9a-f]+")
        if ids.sub("", same) != ids.sub("", ts_html):
            raise SystemExit("treescope's view of a hypothetical array differs from a real one")

    html_file = None
    if results_dir is not None:
        results_dir.mkdir(parents=True, exist_ok=True)
        html_file = results_dir / f"tiles_{n}.html"
        from shardviz.render.html import page

        html_file.write_text(page(f"shardviz tiles, {n} devices", [sv_html]), encoding="utf-8")

    med = {k: common.median(v) for k, v in times.items()}
    return {
        "devices": n,
        "mesh": [2, n // 2],
        "shape": list(shape),
        "dtype": DTYPE,
        "spec": "P('data', 'model')",
        "rounds": rounds,
        "times_s": times,
        "median_s": med,
        "ratio_shardviz_over_jax_text": med["shardviz"] / med["jax_text"],
        "ratio_shardviz_over_jax_text_mono": med["shardviz"] / med["jax_text_mono"],
        "ratio_shardviz_over_treescope": med["shardviz"] / med["treescope"],
        "bytes": {
            "shardviz_html": len(sv_html.encode()),
            "treescope_html": len(ts_html.encode()),
            "jax_text": len(text.encode()),
            "jax_text_plain": len(_ANSI.sub("", text).encode()),
            "jax_text_mono": len(last["jax_text_mono"].encode()),
        },
        "readability": _readability(layout, sv_html),
        "html_file": str(html_file.relative_to(common.ROOT)) if html_file else None,
        "versions": common.versions("jax", "rich", "treescope", "shardviz"),
    }


# --------------------------------------------------------------------------------------------
# Parent: one child per device count, then the table


def run_parent(counts: list[int], rounds: int) -> list[dict[str, Any]]:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    rows = []
    for n in counts:
        print(f"tiles: {n} devices ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, __file__, "--devices", str(n), "--json", "--rounds", str(rounds)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=common.ROOT)
        if proc.returncode:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"tiles: the {n}-device run failed (exit {proc.returncode})")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return rows


def targets(rows: list[dict[str, Any]]) -> list[tuple[str, bool | None, str]]:
    """Each target: what it asks, passed (None if not measured), and the numbers."""
    by_n = {r["devices"]: r for r in rows}
    out: list[tuple[str, bool | None, str]] = []
    r = by_n.get(512)
    if r:
        ratio = r["ratio_shardviz_over_jax_text"]
        out.append(
            (
                "512 devices: shardviz view built no slower than jax's text view (ratio <= 1.0)",
                ratio <= MAX_RATIO_AT_512,
                f"ratio {ratio:.2f} ({common.fmt_ms(r['median_s']['shardviz'])} ms vs "
                f"{common.fmt_ms(r['median_s']['jax_text'])} ms); vs the no-colour text view "
                f"{r['ratio_shardviz_over_jax_text_mono']:.2f}",
            )
        )
        b = r["bytes"]
        out.append(
            (
                "512 devices: shardviz HTML no larger than treescope's",
                b["shardviz_html"] <= b["treescope_html"],
                f"{common.fmt_bytes(b['shardviz_html'])} vs {common.fmt_bytes(b['treescope_html'])}",
            )
        )
    else:
        out.append(("512 devices: ratio and HTML size", None, "not run"))
    r = by_n.get(2048)
    if r:
        b = r["bytes"]["shardviz_html"]
        out.append(
            (
                "2048 devices: shardviz HTML <= 300 KB",
                b <= MAX_HTML_AT_2048,
                f"{common.fmt_bytes(b)} ({b:,} bytes)",
            )
        )
        rd = r["readability"]
        readable = rd["svg"] and (
            rd.get("summarised", False) or rd["texts"] >= rd["distinct_tiles"]
        )
        detail = (
            f"{rd['distinct_tiles']} distinct tiles; "
            + (
                f"summarised: {rd.get('cells_drawn', '?')} cells drawn "
                f"({rd.get('rows_shown', '?')} rows x {rd.get('cols_shown', '?')} columns shown, "
                f"{rd.get('rows_hidden', 0)} rows and {rd.get('cols_hidden', 0)} columns elided: a dashed gap "
                "plus a note giving the count)"
                if rd.get("summarised")
                else "not summarised"
            )
            + f"; {rd['tile_labels']} tile labels naming the holding devices, "
            f"{rd['texts']} SVG text elements in all"
        )
        out.append(
            ("2048 devices: still readable (tiles labelled or summarised)", readable, detail)
        )
    else:
        out.append(("2048 devices: HTML size and readability", None, "not run"))
    return out


def markdown(rows: list[dict[str, Any]], rounds: int, counts: list[int]) -> str:
    """The README section: table, targets, how to reproduce."""
    count_flag = (
        "" if tuple(counts) == DEFAULT_COUNTS else f" --counts {','.join(map(str, counts))}"
    )
    round_flag = "" if rounds == DEFAULT_ROUNDS else f" --rounds {rounds}"
    v = rows[0]["versions"] if rows else {}
    lines = [
        f"Measured {common.today()} on {common.machine_note()}; jax {v.get('jax')}, rich "
        f"{v.get('rich')}, treescope {v.get('treescope')}. The machine is small and noisy: "
        "read the medians and ratios, not single timings.",
        "",
        "Reproduce from the repo root:",
        "",
        "```sh",
        f".venv/bin/python benchmarks/tiles.py{count_flag}{round_flag} --write",
        "```",
        "",
        f"Array float32 {SHAPE}, spec `P('data', 'model')` on a (2, N/2) mesh; medians of "
        f"{rounds} rounds (warm-up round excluded), the three tools alternating in each round.",
        "",
        "| devices | shardviz ms | jax text ms (colour / none) | treescope ms | shardviz / jax text "
        "(colour / none) | shardviz HTML | treescope HTML | jax text (with ANSI / plain) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        m, b = r["median_s"], r["bytes"]
        lines.append(
            f"| {r['devices']} | {common.fmt_ms(m['shardviz'])} | {common.fmt_ms(m['jax_text'])} / "
            f"{common.fmt_ms(m['jax_text_mono'])} | {common.fmt_ms(m['treescope'])} | "
            f"{r['ratio_shardviz_over_jax_text']:.2f} / {r['ratio_shardviz_over_jax_text_mono']:.2f} | "
            f"{common.fmt_bytes(b['shardviz_html'])} | {common.fmt_bytes(b['treescope_html'])} | "
            f"{common.fmt_bytes(b['jax_text'])} / {common.fmt_bytes(b['jax_text_plain'])} |"
        )
    lines += ["", "Targets:", ""]
    for what, ok, detail in targets(rows):
        mark = "not measured" if ok is None else ("PASS" if ok else "**MISSED**")
        lines.append(f"- {mark}: {what}. {detail}.")
    files = [r["html_file"] for r in rows if r.get("html_file")]
    if files:
        lines += [
            "",
            "The shardviz HTML of each run is written to "
            + ", ".join(f"`{f}`" for f in files)
            + " (open in a browser; not committed).",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", type=int, help="child mode: run one device count")
    ap.add_argument("--json", action="store_true", help="child mode: print one JSON line")
    ap.add_argument(
        "--counts",
        default=",".join(map(str, DEFAULT_COUNTS)),
        help="device counts, one process each (default 8,512,2048)",
    )
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="timed rounds (default 15)")
    ap.add_argument(
        "--write", action="store_true", help="update the tiles section of benchmarks/README.md"
    )
    ap.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    ap.add_argument(
        "--no-html", action="store_true", help="child mode: do not write the HTML view to results/"
    )
    args = ap.parse_args(argv)

    if args.devices is not None:
        result = run_child(args.devices, args.rounds, None if args.no_html else common.RESULTS)
        if args.json:
            print(json.dumps(result))
        else:
            print(markdown([result], args.rounds, [args.devices]))
        return 0

    counts = [int(c) for c in args.counts.split(",") if c.strip()]
    rows = run_parent(counts, args.rounds)
    common.RESULTS.mkdir(parents=True, exist_ok=True)
    (common.RESULTS / "tiles.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    text = markdown(rows, args.rounds, counts)
    print(text)
    if args.write:
        common.replace_section(common.README, "tiles", text)
        print(f"\nupdated {common.README.relative_to(common.ROOT)}", file=sys.stderr)
    missed = [t for t in targets(rows) if t[1] is False]
    return 1 if missed and args.strict else 0


if __name__ == "__main__":
    raise SystemExit(main())
