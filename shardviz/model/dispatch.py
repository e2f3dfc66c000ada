"""Dispatch cost per step, measured: many controllers against one, each synchronous and
pipelined (no jax; :mod:`shardviz.launch.dispatch_timing` measures, :mod:`shardviz.render.dispatch`
draws).

Two ways to run the same multi-process program:

- **multi-controller** (``jax.distributed``): every process runs the training loop itself and
  dispatches its own steps to its own devices; nothing outside the processes takes part;
- **single controller** (as Pathways does): one client sends every step to every process and
  the processes only execute what they are sent.

Each one **synchronous** (the dispatcher waits for a step to finish before it sends the next)
or **pipelined** (it sends steps ahead and waits once, at the end: asynchronous dispatch).

A :class:`DispatchRun` is one of the four shapes for one step program on one number of
processes: the wall time of ``steps`` steps, once per repeat. Its cost per step is the median
over the repeats of ``seconds / steps``. The **floor** of a step program on a number of
processes is the multi-controller pipelined cost (the devices run the steps back to back, no
host waits between them); a shape's **overhead** is its cost per step less the floor: what
dispatching adds. :meth:`DispatchTiming.claims` sets those figures against the survey's
statements about the two runtimes.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Literal

from shardviz.errors import ShardvizError, problem
from shardviz.model._codec import JsonMixin
from shardviz.model.units import format_percent, format_seconds

Controller = Literal["multi", "single"]
Mode = Literal["sync", "pipelined"]
#: Where a claim comes from: the distribution survey, or these measurements.
Source = Literal["survey", "measured"]

#: The four shapes, in the order the views list them.
SHAPES: tuple[tuple[Controller, Mode], ...] = (
    ("multi", "sync"),
    ("multi", "pipelined"),
    ("single", "sync"),
    ("single", "pipelined"),
)
#: How the views name a shape.
SHAPE_NAMES: dict[tuple[str, str], str] = {
    ("multi", "sync"): "multi-controller, synchronous",
    ("multi", "pipelined"): "multi-controller, pipelined",
    ("single", "sync"): "single controller, synchronous",
    ("single", "pipelined"): "single controller, pipelined",
}


@dataclass(frozen=True)
class StepProgram(JsonMixin):
    """One step program the processes run: a matmul per device, an optional wait on the
    device, then an all-reduce across every process.

    Attributes:
        name: how the views call it (``"tiny"``, ``"20 ms on device"``, ...).
        rows: rows of the activations per device.
        width: the activations' width (and the weight's ``width x width``).
        wait: seconds each device is held per step without using the host's cores (a host
            callback that sleeps: what an accelerator's kernels do, while fake CPU devices
            compute on the host's own cores).
        flops_per_device: the matmul's flops per device and step (``2 x rows x width^2``).
    """

    name: str
    rows: int
    width: int
    wait: float = 0.0

    @property
    def flops_per_device(self) -> int:
        return 2 * self.rows * self.width * self.width


@dataclass(frozen=True)
class DispatchRun(JsonMixin):
    """``steps`` steps of one program dispatched one way on ``processes`` processes.

    Attributes:
        controller: ``"multi"`` (each process dispatches its own steps) or ``"single"`` (one
            client dispatches every step to every process).
        mode: ``"sync"`` (wait for each step) or ``"pipelined"`` (send ahead, wait at the end).
        processes: how many jax processes ran the program.
        step: the :attr:`StepProgram.name` of the program.
        steps: steps per repeat.
        seconds: the wall time of the ``steps`` steps, one per repeat (multi-controller: the
            slowest process's own loop; single controller: the client's, from the first send
            to the last step's answer).
    """

    controller: Controller
    mode: Mode
    processes: int
    step: str
    steps: int
    seconds: tuple[float, ...]

    @property
    def per_step(self) -> tuple[float, ...]:
        """Seconds per step, one per repeat."""
        return tuple(s / self.steps for s in self.seconds)

    @property
    def median(self) -> float:
        """The median over the repeats of the seconds per step."""
        return statistics.median(self.per_step)


@dataclass(frozen=True)
class Claim(JsonMixin):
    """One statement of the survey and whether these measurements bear it out.

    Attributes:
        source: ``"survey"`` (a statement of the distribution survey) or ``"measured"``
            (what these runs show beside it).
        statement: the claim, in words.
        holds: whether every comparison below it goes the way the claim says.
        evidence: the comparisons, one line each, with their numbers.
    """

    source: Source
    statement: str
    holds: bool
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class DispatchTiming(JsonMixin):
    """Every shape measured for every step program and number of processes.

    Attributes:
        programs: the step programs, shortest first.
        runs: one :class:`DispatchRun` per shape, program and number of processes.
        devices_per_process: CPU devices in each process.
        command: how the numbers were made (for the record).
    """

    programs: tuple[StepProgram, ...]
    runs: tuple[DispatchRun, ...]
    devices_per_process: int
    command: str = ""

    @property
    def process_counts(self) -> tuple[int, ...]:
        """The numbers of processes measured, smallest first."""
        return tuple(sorted({r.processes for r in self.runs}))

    @property
    def hiding_program(self) -> StepProgram:
        """The step program that can show dispatch hidden behind the step: the last one whose
        devices wait without using the host's cores (else the last one)."""
        waiting = [p for p in self.programs if p.wait > 0]
        return (waiting or list(self.programs))[-1]

    def run(self, controller: str, mode: str, processes: int, step: str) -> DispatchRun:
        """The run of one shape, or a ShardvizError naming what was measured."""
        for r in self.runs:
            if (r.controller, r.mode, r.processes, r.step) == (controller, mode, processes, step):
                return r
        raise ShardvizError(
            problem(
                "dispatch timing",
                f"no {controller}-controller {mode} run of {step!r} on {_procs(processes)}",
                f"ask for one of processes {list(self.process_counts)} and steps "
                f"{[p.name for p in self.programs]}",
            )
        )

    def per_step(self, controller: str, mode: str, processes: int, step: str) -> float:
        """Median seconds per step of one shape."""
        return self.run(controller, mode, processes, step).median

    def floor(self, processes: int, step: str) -> float:
        """The step program's cost with no dispatch in the way: the multi-controller pipelined
        median (each process queues its steps back to back)."""
        return self.per_step("multi", "pipelined", processes, step)

    def overhead(self, controller: str, mode: str, processes: int, step: str) -> float:
        """What this way of dispatching adds to each step: its median less the floor (may be
        slightly negative within the noise)."""
        return self.per_step(controller, mode, processes, step) - self.floor(processes, step)

    def ratio(self, controller: str, mode: str, processes: int, step: str) -> float:
        """The shape's median per step over the floor."""
        return self.per_step(controller, mode, processes, step) / self.floor(processes, step)

    def hidden(self, processes: int, step: str) -> float | None:
        """The share of the synchronous single controller's overhead that pipelining hides:
        ``(sync - pipelined) / (sync - floor)``; None when synchronous dispatch added nothing
        to hide (its median at or below the floor)."""
        floor = self.floor(processes, step)
        sync = self.per_step("single", "sync", processes, step)
        if sync <= floor:
            return None
        return (sync - self.per_step("single", "pipelined", processes, step)) / (sync - floor)

    def claims(self) -> tuple[Claim, ...]:
        """The survey's statements about the two runtimes, each checked on these runs, and
        the limit the runs show beside them.

        Dispatch latency is what the shortest program isolates (its floor is near zero), and
        hiding it behind the step is what a longer step can show when its devices leave the
        host's cores free, as accelerators do (:attr:`hiding_program`); so:

        1. Multi-controller dispatch is cheap: on the shortest program, each process's own
           synchronous loop costs less per step than the single controller's synchronous
           dispatch, at every number of processes.
        2. Synchronous single-controller dispatch accumulates latency: on the shortest
           program its overhead per step is larger with the most processes than with the
           fewest (this needs two counts or more; the counts between are shown, not compared,
           as the machine's noise is of their order) and larger than the step itself (the
           floor) at every count.
        3. Asynchronous dispatch solves it: on :attr:`hiding_program`, pipelined
           single-controller dispatch costs less per step than synchronous dispatch at every
           number of processes (the evidence says how much of the synchronous overhead it
           hides).
        4. (Measured, not the survey's.) Pipelining does not make a step cheaper than the
           controller's own cost of sending it: on the shortest program the pipelined single
           controller stays above the floor, at every number of processes.
        """
        counts = self.process_counts
        shortest, longest = self.programs[0].name, self.hiding_program.name
        ms = format_seconds

        first = []
        for n in counts:
            multi = self.per_step("multi", "sync", n, shortest)
            single = self.per_step("single", "sync", n, shortest)
            first.append(
                (
                    multi < single,
                    f"{shortest} step, {_procs(n)}: multi-controller {ms(multi)}, single "
                    f"{ms(single)} per step ({_times(single, multi)})",
                )
            )
        over = [self.overhead("single", "sync", n, shortest) for n in counts]
        second = [
            (
                len(counts) > 1 and over[-1] > over[0],
                f"{shortest} step, overhead per step by processes: "
                + ", ".join(f"{n}: {ms(o)}" for n, o in zip(counts, over, strict=True)),
            )
        ]
        for n, o in zip(counts, over, strict=True):
            floor = self.floor(n, shortest)
            second.append(
                (o > floor, f"{shortest} step, {_procs(n)}: overhead {ms(o)}, step {ms(floor)}")
            )
        third = []
        for n in counts:
            floor = self.floor(n, longest)
            sync = self.per_step("single", "sync", n, longest)
            piped = self.per_step("single", "pipelined", n, longest)
            share = self.hidden(n, longest)
            hidden = (
                f", {format_percent(share)} of its overhead hidden" if share is not None else ""
            )
            third.append(
                (
                    piped < sync,
                    f"{longest} step, {_procs(n)}: pipelined {ms(piped)}, synchronous "
                    f"{ms(sync)}, floor {ms(floor)} per step{hidden}",
                )
            )
        fourth = []
        for n in counts:
            piped = self.per_step("single", "pipelined", n, shortest)
            floor = self.floor(n, shortest)
            fourth.append(
                (
                    piped > floor,
                    f"{shortest} step, {_procs(n)}: pipelined {ms(piped)} per step, floor "
                    f"{ms(floor)} ({_times(piped, floor)})",
                )
            )
        statements: tuple[tuple[Source, str], ...] = (
            ("survey", "Multi-controller dispatch is cheap: each host dispatches its own steps, "
             "with no round trip to a client"),
            ("survey", "A single controller that dispatches synchronously accumulates latency: "
             "more with more hosts, and more than a short step itself"),
            ("survey", "Asynchronous (pipelined) dispatch solves the single controller's "
             "latency: sent ahead, steps keep the hosts busy"),
            ("measured", "Pipelining does not make a step cheaper than the controller's own "
             "cost of sending it: a shorter step is limited by the controller"),
        )  # fmt: skip
        return tuple(
            Claim(source=source, statement=text, holds=all(ok for ok, _ in checks),
                  evidence=tuple(line for _, line in checks))
            for (source, text), checks in zip(statements, (first, second, third, fourth),
                                              strict=True)
        )  # fmt: skip


def _procs(n: int) -> str:
    return f"{n} process" if n == 1 else f"{n} processes"


def _times(a: float, b: float) -> str:
    """``a`` as a multiple of ``b``: ``12.3x``."""
    return f"{a / b:.1f}x" if b > 0 else "n/a"
