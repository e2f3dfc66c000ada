"""Finished full-size plans kept on disk, and plans run in worker processes.

A plan of a published run is a function of three things: the run's definition (model, slice,
sizes, options), shardviz's own code, and the compiler (jax, jaxlib, libtpu). The key is a
hash of all three, so a rerun of unchanged runs reads its figures back in milliseconds,
and any change to the code or the compiler plans again. Entries are JSON files in
``benchmarks/results/plans/`` (ignored by git).

A full-size plan takes minutes and the whole table hours, longer than the code stays
unchanged. So each entry also says which run it is at which compiler (``run_key``), the
commit it was planned at and when, and a result may carry the compiled program's whole
report (``"report"``, its JSON; kept beside the entry, gzipped): ``reuse`` then takes the
newest entry of a run planned at any code, for a caller that works its figures out again
from that report with today's code and says which commit the program came from.
"""

from __future__ import annotations

import concurrent.futures
import gzip
import hashlib
import json
import multiprocessing
import os
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import _common as C

FOLDER = C.BENCH_DIR / "results" / "plans"


def compiler_versions() -> dict[str, str]:
    """The compiler's versions (jax, jaxlib, libtpu): part of every key."""
    return C.versions("jax", "jaxlib", "libtpu")


def code_version() -> str:
    """A hash of every shardviz source file and the compiler's versions."""
    h = hashlib.sha256()
    package = C.ROOT / "shardviz"
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".js", ".css") and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(package)).encode())
            h.update(path.read_bytes())
    h.update(json.dumps(compiler_versions(), sort_keys=True).encode())
    return h.hexdigest()


def key_of(fields: dict[str, Any], version: str) -> str:
    """The entry's name: the run's fields and the code and compiler version, hashed."""
    text = json.dumps({"run": fields, "version": version}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def run_key(fields: dict[str, Any], versions: dict[str, str] | None = None) -> str:
    """The run at a compiler (this one, or ``versions``), whatever shardviz's code: what
    ``reuse`` matches."""
    at = compiler_versions() if versions is None else versions
    return key_of(fields, json.dumps(at, sort_keys=True))


def commit() -> str:
    """The commit the code is at (``+changes`` when shardviz's files differ from it)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=C.ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--", "shardviz") else "")


def load(key: str, folder: Path = FOLDER) -> dict[str, Any] | None:
    """The entry ``key``, its report read back in with it where one was kept."""
    path = folder / f"{key}.json"
    if not path.exists():
        return None
    try:
        entry = json.loads(path.read_text())
        report = folder / f"{key}.report.json.gz"
        if entry.get("report") == report.name:
            entry["report"] = gzip.decompress(report.read_bytes()).decode()
        return entry
    except (OSError, ValueError, EOFError):  # a half-written or damaged entry: plan again
        return None


def save(key: str, result: dict[str, Any], folder: Path = FOLDER) -> None:
    """Keep ``result`` as the entry ``key``: its report, when it has one, in a file beside it,
    written first, so an entry is never there without the report it names."""
    folder.mkdir(parents=True, exist_ok=True)
    result = dict(result)
    if isinstance(result.get("report"), str):
        name = f"{key}.report.json.gz"
        _replace(folder / name, gzip.compress(result["report"].encode(), compresslevel=6))
        result["report"] = name
    _replace(folder / f"{key}.json", json.dumps(result, sort_keys=True).encode())


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)  # whole or absent, even with workers side by side


def last_failure(fields: dict[str, Any], folder: Path = FOLDER) -> str | None:
    """Why the run's last plan failed, at which commit (``None``: none failed, or a plan
    has been kept since)."""
    path = folder / f"{run_key(fields)}.failed"
    try:
        failed = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return f"{failed['error']} (at {failed.get('commit', 'an earlier commit')})"


def _reported(fields: dict[str, Any], folder: Path) -> list[tuple[float, str]]:
    """(when planned, entry key) of each entry of the run ``fields`` at this compiler, at
    any code, that kept its report; read from the entries' heads, not their reports."""
    want = run_key(fields)
    found: list[tuple[float, str]] = []
    for path in folder.glob("*.json"):
        try:
            head = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if head.get("run_key") == want and head.get("report"):
            found.append((float(head.get("planned_at", 0.0)), path.stem))
    return found


def latest(fields: dict[str, Any], folder: Path = FOLDER) -> dict[str, Any] | None:
    """The newest entry of the run ``fields`` at this compiler, planned at any code, that
    kept its report (an entry without one has only the figures of its own code)."""
    for _, key in sorted(_reported(fields, folder), reverse=True):
        entry = load(key, folder)
        if entry is not None:
            return entry
    return None


def on_disk(fields: dict[str, Any], version: str, folder: Path = FOLDER) -> bool:
    """Whether this disk has what :func:`run_all` with ``reuse`` reads for the run: its
    entry at this code (``version``), one at any code with its report, or its last failure."""
    return (
        (folder / f"{key_of(fields, version)}.json").exists()
        or (folder / f"{run_key(fields)}.failed").exists()
        or bool(_reported(fields, folder))
    )


#: What a run with no plan says when planning was not asked for.
NOT_PLANNED = "no plan kept for it yet (plan it with --runs and this run's key)"


def workers(jobs: int | None) -> int:
    """Plans at once: ``jobs``, else one per two cores (each compile uses two)."""
    return max(1, jobs if jobs is not None else (os.cpu_count() or 2) // 2)


def run_all(
    items: Iterable[tuple[str, dict[str, Any]]],
    plan: Callable[[str], dict[str, Any]],
    jobs: int | None = None,
    folder: Path = FOLDER,
    fresh: bool = False,
    reuse: bool = False,
    plan_missing: bool = True,
) -> dict[str, tuple[dict[str, Any], bool]]:
    """Each item's result, by name: ``(result, from_cache)``. ``items`` are (name, the fields
    that define it); ``plan(name)`` computes one, run in ``workers(jobs)`` fresh processes
    (``spawn``: jax in the parent is not copied into them) when more than one is needed.
    ``fresh``: plan every item again (and keep the new results). ``reuse``: a run with no
    entry at this code takes its newest one at older code (:func:`latest`) rather than being
    planned. ``plan_missing=False``: plan nothing; a run with no entry gets ``{"error":
    why}``. Every result kept says its ``run_key``, ``commit``, code ``version`` and
    ``planned_at``."""
    version = code_version()
    out: dict[str, tuple[dict[str, Any], bool]] = {}
    todo: dict[str, str] = {}
    fields_of: dict[str, dict[str, Any]] = {}
    for name, fields in items:
        key = key_of(fields, version)
        fields_of[name] = fields
        hit = None if fresh else load(key, folder)
        if hit is None and reuse and not fresh:
            hit = latest(fields, folder)
        if hit is not None:
            out[name] = (hit, True)
        elif not plan_missing:
            out[name] = ({"error": last_failure(fields, folder) or NOT_PLANNED}, False)
        else:
            todo[name] = key
    stamp = {"commit": commit(), "version": version}

    def keep(name: str, result: dict[str, Any]) -> None:
        if "error" not in result:  # a failure is said, not kept: the next run tries again
            result = {
                **result, **stamp, "run_key": run_key(fields_of[name]), "planned_at": time.time(),
            }  # fmt: skip
            save(todo[name], result, folder)
            (folder / f"{result['run_key']}.failed").unlink(missing_ok=True)
        else:  # but remembered, for a table made without planning
            folder.mkdir(parents=True, exist_ok=True)
            text = json.dumps({"error": result["error"], **stamp}).encode()
            _replace(folder / f"{run_key(fields_of[name])}.failed", text)
        out[name] = (result, False)
        print(name, result.get("error", "planned"), flush=True)

    n = min(workers(jobs), len(todo))
    if n <= 1:
        for name in todo:
            keep(name, attempt(plan, name))
        return out
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(n, mp_context=context) as pool:
        futures = {pool.submit(attempt, plan, name): name for name in todo}
        for future in concurrent.futures.as_completed(futures):
            try:
                result = future.result()
            except Exception as err:  # the worker itself died (e.g. killed for memory)
                result = {"error": f"the worker process died: {type(err).__name__}: {err}"}
            keep(futures[future], result)
    return out


def attempt(plan: Callable[[str], dict[str, Any]], name: str) -> dict[str, Any]:
    """``plan(name)``, or ``{"error": why}`` when it raises: one run that cannot be planned
    here (memory, a topology the compiler refuses) does not stop the others."""
    try:
        return plan(name)
    except Exception as err:
        return {"error": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
