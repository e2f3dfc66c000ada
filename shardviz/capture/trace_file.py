"""The ops of a real profile: jax's profiler output read back as per-op time per step.

``jax.profiler.trace(folder)`` writes ``plugins/profile/<run>/<host>.trace.json.gz`` (a Chrome
trace, what XProf and Perfetto open) beside the ``.xplane.pb``. Each op the device ran is a
complete event (``"ph": "X"``) whose ``args`` name the HLO op (``hlo_op``), its module
(``hlo_module``), the device (``device_ordinal``) and the run (``run_id``). Here they are added
up per op and divided by the runs traced (one run: one step on one device), giving each op's
seconds per step on one device, what :func:`shardviz.op_profile` sets beside the prediction.
Plain files in, model out: no jax.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
from collections import defaultdict

from shardviz.errors import FileError, problem
from shardviz.model.op_profile import MeasuredOp

__all__ = ["measured_ops", "trace_files"]

_WHERE = "shardviz.op_profile(trace=...)"


def trace_files(path: str | os.PathLike[str]) -> list[str]:
    """The Chrome-trace files at ``path``: the file itself, or every ``*.trace.json.gz``
    (else ``*.trace.json``) under the folder, newest run last.

    Raises:
        FileError: nothing there to read.
    """
    path = os.fspath(path)
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise FileError(problem(_WHERE, f"{path!r} is neither a trace file nor a folder",
                      "pass the folder given to jax.profiler.trace, or one .trace.json.gz in it"))  # fmt: skip
    found = sorted(glob.glob(os.path.join(path, "**", "*.trace.json.gz"), recursive=True))
    found = found or sorted(glob.glob(os.path.join(path, "**", "*.trace.json"), recursive=True))
    if not found:
        raise FileError(problem(_WHERE, f"no *.trace.json.gz under {path!r}",
                      "profile the step inside `with jax.profiler.trace(path):` first"))  # fmt: skip
    return found


def _events(file: str) -> list[dict]:
    opener = gzip.open if file.endswith(".gz") else open
    try:
        with opener(file, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise FileError(problem(_WHERE, f"{file!r} is not a readable Chrome trace ({e})",
                      "pass a .trace.json.gz that jax.profiler.trace wrote")) from e  # fmt: skip
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    return [e for e in events if isinstance(e, dict)]


def measured_ops(
    path: str | os.PathLike[str], names: frozenset[str] | None = None
) -> tuple[MeasuredOp, ...]:
    """Each HLO op's seconds per step on one device in the profile at ``path`` (a trace file or
    the folder given to ``jax.profiler.trace``; its newest run).

    A profile may hold several compiled modules (the step, its initialisation, small helper
    jits): the one kept is the module with the most ops in ``names`` (the compiled step's op
    names), else the one with the most events.

    Raises:
        FileError: no file, or no op event in it.
    """
    file = trace_files(path)[-1]
    # module -> op -> total microseconds; module -> the (run, device) pairs seen
    total: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    count: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    runs: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for e in _events(file):
        args = e.get("args") or {}
        op = args.get("hlo_op")
        if e.get("ph") != "X" or not op:
            continue
        module = str(args.get("hlo_module", ""))
        total[module][str(op)] += float(e.get("dur", 0.0))
        count[module][str(op)] += 1
        runs[module].add((str(args.get("run_id", "")), str(args.get("device_ordinal", ""))))
    if not total:
        raise FileError(problem(_WHERE, f"{file!r} has no HLO op events",
                      "trace a run of the compiled step (not only its compile)"))  # fmt: skip

    def score(module: str) -> tuple[int, int]:
        ops = total[module]
        return (len(names & ops.keys()) if names else 0, sum(count[module].values()))

    module = max(total, key=score)
    n = max(1, len(runs[module]))
    return tuple(
        MeasuredOp(op, us * 1e-6 / n, count[module][op] / n)
        for op, us in sorted(total[module].items())
    )
