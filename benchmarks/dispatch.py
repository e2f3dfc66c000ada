"""Dispatch cost per step: many controllers (jax.distributed) against one (as Pathways),
synchronous and pipelined, against the number of processes and the step's length.

For each number of processes (1, 2, 4; one CPU device each) a notebook cluster
(``sv.cluster``: ipyparallel engines joined by ``jax.distributed``) runs three step programs
four ways (:mod:`shardviz.launch.dispatch_timing`): each process running its own loop
(multi-controller), or this client sending every step to every process (single controller);
each waiting for every step (synchronous) or sending ahead (pipelined). Every shape runs once
per round in rotating order, ``--repeats`` rounds of ``--steps`` steps; medians per step.

The step programs: a tiny step (dispatching is all there is), a step that holds each device
20 ms while the host's cores stay free (a host callback that sleeps: what an accelerator's
kernels do), and a matmul that keeps the host's cores busy (what fake CPU devices do). The
survey's claims are checked on these figures by :meth:`DispatchTiming.claims`.

    .venv/bin/python benchmarks/dispatch.py [--steps 20] [--repeats 5] [--write]
"""

from __future__ import annotations

import argparse
import sys
import time

import _common as C

sys.path.insert(0, str(C.ROOT))

from shardviz.engines import Cluster  # noqa: E402
from shardviz.launch.dispatch_timing import MATMUL, TINY, WAIT, measure_dispatch  # noqa: E402
from shardviz.model.dispatch import SHAPE_NAMES, SHAPES, DispatchTiming  # noqa: E402
from shardviz.render.dispatch import dispatch_rows  # noqa: E402

PROCESSES = (1, 2, 4)
PROGRAMS = (TINY, WAIT, MATMUL)


def measure(steps: int, repeats: int, command: str) -> tuple[DispatchTiming, dict[int, float]]:
    """Every shape, program and number of processes; and how long each cluster took to start."""
    started: dict[int, float] = {}

    def start(n: int) -> Cluster:
        t = time.perf_counter()
        cluster = Cluster(n, 1, 120.0)
        started[n] = time.perf_counter() - t
        return cluster

    timing = measure_dispatch(
        start, PROCESSES, PROGRAMS, devices_per_process=1, steps=steps, repeats=repeats,
        command=command,
    )  # fmt: skip
    return timing, started


def markdown(timing: DispatchTiming, started: dict[int, float], steps: int, repeats: int) -> str:
    lines = C.preamble(timing.command, ("jax", "ipyparallel"))
    lines.append(
        f"1 fake CPU device per process; {steps} steps x {repeats} rounds per shape, every "
        "shape once per round in rotating order; medians of seconds per step. x = the shape's "
        "median over the floor (multi-controller pipelined: the steps back to back, nobody "
        "waiting). Clusters started in "
        + ", ".join(f"{s:.1f} s ({_procs(n)})" for n, s in started.items())
        + " (not in the figures)."
    )
    lines += ["", "| step | processes | " + " | ".join(SHAPE_NAMES[s] for s in SHAPES) + " |"]
    lines.append("|---|---:|" + "---:|" * len(SHAPES))
    for r in dispatch_rows(timing):
        cells = [f"{C.fmt_ms(s)} ms ({x:.2f}x)" for s, x in zip(r.per_step, r.ratios, strict=True)]
        lines.append(f"| {r.step} | {r.processes} | " + " | ".join(cells) + " |")
    lines += ["", "The survey's claims (and one limit), checked on these figures:", ""]
    for c in timing.claims():
        verdict = "**holds**" if c.holds else "**does not hold**"
        lines.append(f"- {verdict} ({c.source}): {c.statement}.")
        lines += [f"  - {e}" for e in c.evidence]
    lines += ["", _overlap(timing)]
    return "\n".join(lines)


def _procs(n: int) -> str:
    return f"{n} process" if n == 1 else f"{n} processes"


def _overlap(timing: DispatchTiming) -> str:
    """What pipelining hides on each longer step, by number of processes: the devices that
    leave the host's cores free against those that compute on them."""

    def shares(step: str) -> str:
        out = []
        for n in timing.process_counts:
            share = timing.hidden(n, step)
            out.append(f"{'n/a' if share is None else f'{100 * share:.0f}%'} ({_procs(n)})")
        return ", ".join(out)

    return (
        f"Share of the synchronous single controller's overhead that pipelining hides: on the "
        f"{WAIT.name} step {shares(WAIT.name)}; on the {MATMUL.name} step {shares(MATMUL.name)}. "
        "Overlap needs the dispatcher and the devices to be different resources, as a host CPU "
        "and its accelerators are; fake CPU devices compute on the cores the controller and "
        "the engines' Python need, so on the matmul step there is less idle time to send the "
        "next steps in. The milliseconds are this machine's Python messages (ipyparallel over "
        "local sockets), not a datacenter runtime's; the comparisons are what carry over."
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    a = ap.parse_args(argv)
    command = "benchmarks/dispatch.py" + (
        "" if (a.steps, a.repeats) == (20, 5) else f" --steps {a.steps} --repeats {a.repeats}"
    )
    timing, started = measure(a.steps, a.repeats, command + " --write")
    text = markdown(timing, started, a.steps, a.repeats)
    print(text)
    if a.write:
        C.replace_section(C.README, "dispatch", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
