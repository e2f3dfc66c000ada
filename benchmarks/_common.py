"""Helpers shared by the benchmark scripts: timing in alternating rounds, machine notes, and
rewriting a marked section of benchmarks/README.md.

Benchmarks measure the tools they compare side by side, in one process and one run, so that
the machine's noise hits all of them alike. Report medians and ratios, not single timings.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
README = BENCH_DIR / "README.md"
RESULTS = BENCH_DIR / "results"


def time_rounds(
    units: dict[str, Callable[[], Any]], rounds: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Run every unit once per round, rotating the order each round; return seconds per unit.

    The ``warmup`` first rounds run the same way but are not recorded (imports, caches).
    """
    names = list(units)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(warmup + rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            units[name]()
            elapsed = time.perf_counter() - start
            if r >= warmup:
                times[name].append(elapsed)
    return times


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def fmt_bytes(n: int) -> str:
    """Bytes in binary units (KiB = 1024 bytes), as shardviz's views print them."""
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.2f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def machine_note() -> str:
    """One line about where the numbers come from."""
    cores = os.cpu_count()
    return (
        f"{platform.system()} {platform.machine()}, {cores} CPU core(s), Python "
        f"{platform.python_version()}"
    )


def today() -> str:
    return _dt.date.today().isoformat()


def versions(*modules: str) -> dict[str, str]:
    """Installed versions of the named distributions (``"?"`` if unknown)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for m in modules:
        try:
            out[m] = version(m)
        except PackageNotFoundError:
            out[m] = "?"
    return out


def replace_section(path: Path, name: str, body: str) -> None:
    """Replace the text between ``<!-- name:begin -->`` and ``<!-- name:end -->`` in ``path``."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no section {begin} ... {end} to replace; add the two markers")
    new = pattern.sub(lambda _: f"{begin}\n{body.strip()}\n{end}", text, count=1)
    path.write_text(new, encoding="utf-8")


def python_cmd() -> str:
    """How to spell this interpreter in a reproduce command (relative to the repo if inside)."""
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(ROOT))
    except ValueError:
        return str(exe)


def preamble(command: str, versions_of: tuple[str, ...] = ("jax",)) -> list[str]:
    """The opening lines of a results section: when, where, and the command to reproduce."""
    v = versions(*versions_of)
    return [
        f"Measured {today()} on {machine_note()}; "
        + ", ".join(f"{m} {v[m]}" for m in versions_of)
        + ". Noisy 2-core machine: read the medians and ratios.",
        "",
        "Reproduce from the repo root:",
        "",
        "```sh",
        f"{python_cmd()} {command}",
        "```",
        "",
    ]


def fresh(f: Callable) -> Callable:
    """A new function object with f's name: jax caches lowering and compiling per function
    object, so without this every round after the first would time a cache hit."""

    @functools.wraps(f)
    def g(*a: Any) -> Any:
        return f(*a)

    return g
