"""The ops of a real profile: jax's profiler output read back as per-op time per step.

``jax.profiler.trace(folder)`` writes ``plugins/profile/<run>/<host>.trace.json.gz`` (a Chrome
trace, what Perfetto opens) beside ``<host>.xplane.pb`` (XProf's own file; a profile captured
by XProf or TensorBoard from a TPU pod may hold only that one). Each op the device ran is an
event naming the HLO op (``hlo_op``), its module (``hlo_module``), the device
(``device_ordinal``) and the run (``run_id``): in the Chrome trace a complete event (``"ph":
"X"``) with those in its ``args``, in the XSpace an event with those stats (read through
``jax.profiler.ProfileData``). Here they are added up per op and divided by the runs traced
(one run: one step on one device), giving each op's seconds per step on one device, what
:func:`shardviz.op_profile` sets beside the prediction.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
from collections import defaultdict
from collections.abc import Iterator

import jax

from shardviz.errors import FileError, problem
from shardviz.model.op_profile import MeasuredOp

__all__ = ["measured_ops", "trace_files"]

_WHERE = "shardviz.op_profile(trace=...)"


#: What a profile folder may hold, in the order looked for.
_PATTERNS = ("*.trace.json.gz", "*.trace.json", "*.xplane.pb")


def trace_files(path: str | os.PathLike[str]) -> list[str]:
    """The profile files at ``path``: the file itself, or every ``*.trace.json.gz`` (else
    ``*.trace.json``, else XProf's ``*.xplane.pb``) under the folder, newest run last.

    Raises:
        FileError: nothing there to read.
    """
    path = os.fspath(path)
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise FileError(problem(_WHERE, f"{path!r} is neither a trace file nor a folder",
                      "pass the folder given to jax.profiler.trace, or one .trace.json.gz "
                      "or .xplane.pb in it"))  # fmt: skip
    for pattern in _PATTERNS:
        found = sorted(glob.glob(os.path.join(path, "**", pattern), recursive=True))
        if found:
            return found
    raise FileError(problem(_WHERE, f"no *.trace.json.gz or *.xplane.pb under {path!r}",
                  "profile the step inside `with jax.profiler.trace(path):` first"))  # fmt: skip


#: One op event: its module, op, microseconds, run and device.
_Event = tuple[str, str, float, str, str]


def _chrome_events(file: str) -> Iterator[_Event]:
    opener = gzip.open if file.endswith(".gz") else open
    try:
        with opener(file, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as err:
        raise FileError(problem(_WHERE, f"{file!r} is not a readable Chrome trace ({err})",
                      "pass a .trace.json.gz that jax.profiler.trace wrote")) from err  # fmt: skip
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    for e in events:
        if not isinstance(e, dict):
            continue
        args = e.get("args") or {}
        op = args.get("hlo_op")
        if e.get("ph") != "X" or not op:
            continue
        yield (str(args.get("hlo_module", "")), str(op), float(e.get("dur", 0.0)),
               str(args.get("run_id", "")), str(args.get("device_ordinal", "")))  # fmt: skip


def _xspace_events(file: str) -> Iterator[_Event]:
    """The op events of an XSpace (``.xplane.pb``), through jax's own reader of XProf's
    protobuf (``jax.profiler.ProfileData``); a device plane (``/device:TPU:3``) names the device where its events do not."""
    try:
        data = jax.profiler.ProfileData.from_file(file)
        planes = list(data.planes)
    except Exception as e:  # a protobuf parse error has no common class to name
        raise FileError(problem(_WHERE, f"{file!r} is not a readable XProf profile ({e})",
                      "pass an .xplane.pb that jax.profiler.trace or XProf wrote")) from e  # fmt: skip
    for plane in planes:
        ordinal = plane.name.rsplit(":", 1)[-1] if plane.name.startswith("/device:") else ""
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                op = stats.get("hlo_op")
                if not op:
                    continue
                yield (str(stats.get("hlo_module", "")), str(op), event.duration_ns * 1e-3,
                       str(stats.get("run_id", "")),
                       str(stats.get("device_ordinal", ordinal)))  # fmt: skip


def _events(file: str) -> Iterator[_Event]:
    return _xspace_events(file) if file.endswith(".xplane.pb") else _chrome_events(file)


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
    for module, op, us, run, device in _events(file):
        total[module][op] += us
        count[module][op] += 1
        runs[module].add((run, device))
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
