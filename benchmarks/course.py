"""The course as a learner runs it: each notebook top to bottom in a fresh kernel, then each
exercise answered wrong and then right, timed; what the facilitator page's timings rest on.

For each notebook given (default 10, 11 and 12) it runs every cell in a fresh ipykernel of
this interpreter (as ``make test`` does), records each code cell's seconds from the kernel's
own timestamps, any error and any stderr a cell showed, and the notebook's total. Then, in
this process, each exercise of those notebooks is checked with the first wrong answer its
judge lists and then with its solution, as a learner would (``shardviz.course.check``),
timed, with the verdict and whether a hint came.

``--write`` puts the table in benchmarks/README.md (section ``course``) and in the
facilitator page (docs/course/facilitator.md, section ``course-run``). The times are the
machine's: run it on an idle machine to state solo times.

    .venv/bin/python benchmarks/course.py [10 11 12] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import _common as C

NOTEBOOKS = C.ROOT / "notebooks"
FACILITATOR = C.ROOT / "docs" / "course" / "facilitator.md"
RESULTS = C.BENCH_DIR / "results" / "course.json"
#: A cell slower than this (seconds, solo) is over the course's limit (issue 40).
CELL_LIMIT = 60.0


def _seconds(cell: dict) -> float | None:
    """A code cell's wall time from the kernel's timestamps (nbclient records them)."""
    ex = cell.get("metadata", {}).get("execution", {})
    start, end = ex.get("iopub.execute_input"), ex.get("shell.execute_reply")
    if not start or not end:
        return None
    parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def _first_line(cell: dict) -> str:
    lines = [ln for ln in cell.get("source", "").splitlines() if ln.strip()]
    return (lines[0][:70] if lines else "").replace("|", "\\|")


def run_notebook(path: Path) -> dict:
    """Every cell's seconds, errors and stderr of one fresh run of ``path``."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "kernels" / "python3"
        spec.mkdir(parents=True)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(json.dumps({"argv": argv, "language": "python",
                                                      "display_name": "course run"}))  # fmt: skip
        os.environ["JUPYTER_PATH"] = os.pathsep.join([tmp, os.environ.get("JUPYTER_PATH", "")])
        os.environ["PYTHONPATH"] = os.pathsep.join([str(C.ROOT), os.environ.get("PYTHONPATH", "")])
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        start = time.perf_counter()
        client = nbclient.NotebookClient(
            nb, timeout=1800, kernel_name="python3", allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
        )  # fmt: skip
        client.execute()
        wall = time.perf_counter() - start
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        outs = cell.get("outputs", [])
        cells.append({
            "index": i,
            "first_line": _first_line(cell),
            "seconds": _seconds(cell),
            "errors": [o.get("ename", "") for o in outs if o.get("output_type") == "error"],
            "stderr": sum(1 for o in outs if o.get("output_type") == "stream"
                          and o.get("name") == "stderr"),
            "tags": list(cell.get("metadata", {}).get("tags", [])),
        })  # fmt: skip
    return {"notebook": path.name, "wall_seconds": wall, "cells": cells}


def run_exercises(prefixes: list[str]) -> list[dict]:
    """Each exercise of the notebooks answered wrong, then right, timed."""
    import shardviz as sv
    from shardviz.course import check, exercises
    from shardviz.course.solutions import solutions

    sv.use_cpu_devices(8)  # as every notebook's first cell does

    sols = solutions()
    out = []
    for key, ex in exercises().items():
        if key.split(".")[0] not in prefixes:
            continue
        row: dict = {"exercise": key}
        for label, answer in (("wrong", ex.wrong[0] if ex.wrong else None),
                              ("right", sols[key][0])):  # fmt: skip
            if label == "wrong" and answer is None:
                continue
            t0 = time.perf_counter()
            verdict = check(key, answer, progress=False)
            row[label] = {
                "seconds": time.perf_counter() - t0,
                "right": verdict.right,
                "hint": bool(verdict.hint),
            }
        out.append(row)
    return out


def table(result: dict) -> str:
    """The markdown the README and the facilitator page show."""
    lines = [
        "| notebook | run all | slowest cell | cells over 60 s | stderr cells | errors |",
        "|---|---|---|---|---|---|",
    ]
    for nb in result["notebooks"]:
        timed = [c for c in nb["cells"] if c["seconds"] is not None]
        slow = max(timed, key=lambda c: c["seconds"]) if timed else None
        over = sum(1 for c in timed if c["seconds"] > CELL_LIMIT)
        stderr = sum(1 for c in nb["cells"] if c["stderr"])
        errors = sum(1 for c in nb["cells"] if c["errors"])
        slowest = (f"{slow['seconds']:.0f} s (cell {slow['index']}: `{slow['first_line']}`)"
                   if slow else "—")  # fmt: skip
        lines.append(
            f"| {nb['notebook']} | {nb['wall_seconds'] / 60:.1f} min | {slowest} | {over} | "
            f"{stderr} | {errors} |"
        )
    lines += ["", "| exercise | wrong answer | right answer |", "|---|---|---|"]

    def verdict(v: dict | None, want: bool) -> str:
        if v is None:
            return "—"
        ok = "as expected" if v["right"] is want else "**unexpected**"
        hint = ", with a hint" if v["hint"] else ""
        return f"{v['seconds']:.1f} s, {ok}{hint}"

    for row in result["exercises"]:
        lines.append(
            f"| {row['exercise']} | {verdict(row.get('wrong'), False)} | "
            f"{verdict(row.get('right'), True)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=["10", "11", "12"])
    parser.add_argument("--write", action="store_true", help="update README and facilitator")
    parser.add_argument("--from-json", type=Path, default=None, help="a saved run")
    args = parser.parse_args()
    if args.from_json is not None:
        result = json.loads(args.from_json.read_text())
    else:
        paths = [p for n in args.notebooks for p in sorted(NOTEBOOKS.glob(f"{n}_*.ipynb"))]
        result = {
            "machine": C.machine_note(),
            "date": C.today(),
            "load": os.getloadavg()[0],
            "notebooks": [run_notebook(p) for p in paths],
            "exercises": run_exercises(args.notebooks),
        }
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    body = table(result)
    print(body)
    if args.write:
        head = C.preamble("benchmarks/course.py --write")
        note = (f"Load average when it started: {result['load']:.1f} "
                f"(near 0 means the times are solo).")  # fmt: skip
        C.replace_section(C.BENCH_DIR / "README.md", "course", "\n".join([*head, note, "", body]))
        page = (f"Measured {result['date']} on {result['machine']} "
                f"(load {result['load']:.1f} at the start), `benchmarks/course.py`:")  # fmt: skip
        C.replace_section(FACILITATOR, "course-run", page + "\n\n" + body)


if __name__ == "__main__":
    main()
