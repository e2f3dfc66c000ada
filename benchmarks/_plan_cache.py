"""Finished full-size plans kept on disk, and plans run in worker processes.

A plan of a published run is a function of three things: the run's definition (model, slice,
sizes, options), shardviz's own code, and the compiler (jax, jaxlib, libtpu). The key is a
hash of all three, so a rerun of unchanged runs reads its figures back in milliseconds,
and any change to the code or the compiler plans again. Entries are JSON files in
``benchmarks/results/plans/`` (ignored by git).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import _common as C

FOLDER = C.BENCH_DIR / "results" / "plans"


def code_version() -> str:
    """A hash of every shardviz source file and the compiler's versions."""
    h = hashlib.sha256()
    package = C.ROOT / "shardviz"
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".js", ".css") and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(package)).encode())
            h.update(path.read_bytes())
    h.update(json.dumps(C.versions("jax", "jaxlib", "libtpu"), sort_keys=True).encode())
    return h.hexdigest()


def key_of(fields: dict[str, Any], version: str) -> str:
    """The entry's name: the run's fields and the code and compiler version, hashed."""
    text = json.dumps({"run": fields, "version": version}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def load(key: str, folder: Path = FOLDER) -> dict[str, Any] | None:
    path = folder / f"{key}.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # a half-written or damaged entry: plan again
        return None


def save(key: str, result: dict[str, Any], folder: Path = FOLDER) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(result, sort_keys=True))
    tmp.replace(folder / f"{key}.json")  # whole or absent, even with workers side by side


def workers(jobs: int | None) -> int:
    """Plans at once: ``jobs``, else one per two cores (each compile uses two)."""
    return max(1, jobs if jobs is not None else (os.cpu_count() or 2) // 2)


def run_all(
    items: Iterable[tuple[str, dict[str, Any]]],
    plan: Callable[[str], dict[str, Any]],
    jobs: int | None = None,
    folder: Path = FOLDER,
    fresh: bool = False,
) -> dict[str, tuple[dict[str, Any], bool]]:
    """Each item's result, by name: ``(result, from_cache)``. ``items`` are (name, the fields
    that define it); ``plan(name)`` computes one, run in ``workers(jobs)`` fresh processes
    (``spawn``: jax in the parent is not copied into them) when more than one is needed.
    ``fresh``: plan every item again (and keep the new results)."""
    version = code_version()
    out: dict[str, tuple[dict[str, Any], bool]] = {}
    todo: dict[str, str] = {}
    for name, fields in items:
        key = key_of(fields, version)
        hit = None if fresh else load(key, folder)
        if hit is not None:
            out[name] = (hit, True)
        else:
            todo[name] = key

    def keep(name: str, result: dict[str, Any]) -> None:
        if "error" not in result:  # a failure is said, not kept: the next run tries again
            save(todo[name], result, folder)
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
