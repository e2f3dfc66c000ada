"""Dispatch timing without a cluster: the model's arithmetic and claims on hand-made runs, the
view drawn from them, and the measurement code with a fake clock and fake engines (which run
the engine functions here, on this process's devices)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from shardviz.errors import ProcessError, ShardvizError
from shardviz.launch import dispatch_timing as dt
from shardviz.model.dispatch import SHAPES, DispatchRun, DispatchTiming, StepProgram
from shardviz.render.dispatch import DispatchView, dispatch_rows

TINY = StepProgram("tiny", rows=2, width=4)
LONG = StepProgram("long", rows=4, width=8, wait=0.04)


def _timing(per_step: dict[tuple[str, str, int, str], float], steps: int = 10) -> DispatchTiming:
    """Runs whose repeats are the given seconds per step x 0.9, x 1 and x 1.5 (median: x 1)."""
    runs = tuple(
        DispatchRun(controller=c, mode=m, processes=n, step=s, steps=steps,  # type: ignore[arg-type]
                    seconds=tuple(v * steps * f for f in (1.5, 0.9, 1.0)))
        for (c, m, n, s), v in per_step.items()
    )  # fmt: skip
    return DispatchTiming(programs=(TINY, LONG), runs=runs, devices_per_process=1, command="x")


def _as_survey_says() -> dict[tuple[str, str, int, str], float]:
    """Seconds per step shaped as the survey describes: a latency of 5 ms + 3 ms per process
    for a synchronous single controller, a sending cost of 2 ms per process when pipelined."""
    out = {}
    for n in (1, 2, 4):
        for step, floor in (("tiny", 0.0001 * n), ("long", 0.040)):
            out[("multi", "pipelined", n, step)] = floor
            out[("multi", "sync", n, step)] = floor + 0.0001
            out[("single", "sync", n, step)] = floor + 0.005 + 0.003 * n
            out[("single", "pipelined", n, step)] = max(floor, 0.002 * n)
    return out


def test_medians_floor_overhead_and_ratio() -> None:
    t = _timing(_as_survey_says())
    run = t.run("single", "sync", 2, "tiny")
    assert run.per_step == pytest.approx((0.0168, 0.01008, 0.0112))
    assert run.median == pytest.approx(0.0112)
    assert t.floor(2, "tiny") == pytest.approx(0.0002)
    assert t.overhead("single", "sync", 2, "tiny") == pytest.approx(0.011)
    assert t.ratio("single", "pipelined", 4, "long") == pytest.approx(1.0)
    assert t.process_counts == (1, 2, 4)


def test_a_missing_run_names_what_was_measured() -> None:
    t = _timing(_as_survey_says())
    with pytest.raises(ShardvizError, match=r"no single-controller sync run of 'tiny' on 8"):
        t.run("single", "sync", 8, "tiny")


def test_claims_hold_on_runs_shaped_as_the_survey_says() -> None:
    claims = _timing(_as_survey_says()).claims()
    assert [c.source for c in claims] == ["survey", "survey", "survey", "measured"]
    assert all(c.holds for c in claims), [c.evidence for c in claims]
    # one line per number of processes (the second claim: the growth first)
    assert [len(c.evidence) for c in claims] == [3, 4, 3, 3]
    assert claims[1].evidence[0] == (
        "tiny step, overhead per step by processes: 1: 8 ms, 2: 11 ms, 4: 17 ms"
    )
    assert claims[2].evidence == (
        "long step, 1 process: pipelined 40 ms, synchronous 48 ms, floor 40 ms per step, 100% "
        "of its overhead hidden",
        "long step, 2 processes: pipelined 40 ms, synchronous 51 ms, floor 40 ms per step, "
        "100% of its overhead hidden",
        "long step, 4 processes: pipelined 40 ms, synchronous 57 ms, floor 40 ms per step, "
        "100% of its overhead hidden",
    )


@pytest.mark.parametrize(
    ("change", "broken"),
    [
        # the multi-controller's own loop as slow as the controller's dispatch
        ({("multi", "sync", 2, "tiny"): 0.020}, 0),
        # the synchronous overhead smaller with 4 processes than with 1
        ({("single", "sync", 4, "tiny"): 0.0074}, 1),
        # pipelined dispatch slower than synchronous on the long step
        ({("single", "pipelined", 4, "long"): 0.060}, 2),
        # pipelined dispatch as fast as the floor on the tiny step
        ({("single", "pipelined", 1, "tiny"): 0.0001}, 3),
    ],
)
def test_each_claim_fails_when_its_comparison_does(change: dict, broken: int) -> None:
    claims = _timing({**_as_survey_says(), **change}).claims()
    assert [c.holds for c in claims] == [i != broken for i in range(4)]


def test_one_process_count_cannot_show_growth() -> None:
    only_one = {k: v for k, v in _as_survey_says().items() if k[2] == 1}
    assert not _timing(only_one).claims()[1].holds


def test_round_trip_through_json() -> None:
    t = _timing(_as_survey_says())
    back = DispatchTiming.from_json(t.to_json())
    assert back == t and back.programs[1].flops_per_device == 2 * 4 * 8 * 8


def test_view_text_and_html_read_the_same_rows() -> None:
    t = _timing(_as_survey_says())
    view = DispatchView(t)
    assert [(r.step, r.processes) for r in view.rows] == [
        (s, n) for s in ("tiny", "long") for n in (1, 2, 4)
    ]
    row = dispatch_rows(t)[4]  # long, 2 processes
    assert row.per_step == pytest.approx((0.0401, 0.040, 0.051, 0.040))
    assert row.ratios[2] == pytest.approx(0.051 / 0.040)
    text = str(view)
    assert "long  2" in re.sub(r" +", "  ", text) and "51 ms (1.3x)" in text
    assert text.count("[holds]") == 4 and "measured by: x" in text
    html = view._repr_html_()
    assert html.count("<rect ") == 4 * 6  # a bar per shape, number of processes and step
    assert html.count('class="sv-ok"') == 4 and "51 ms (1.3x)" in html
    assert view.page().startswith("<!doctype html>")


def test_view_escapes_names() -> None:
    odd = StepProgram("<b>", rows=1, width=1)
    runs = tuple(
        DispatchRun(controller=c, mode=m, processes=1, step="<b>", steps=1, seconds=(0.001,))
        for c, m in SHAPES
    )
    html = DispatchView(DispatchTiming(programs=(odd,), runs=runs, devices_per_process=1)).html()
    assert "<b>" not in html.replace("<b>", "", 0).split("</style>", 2)[-1]
    assert "&lt;b&gt; step" in html


# --- the measurement, with fake engines -------------------------------------------------------


class Clock:
    """A clock that advances by 1 s each time it is read."""

    def __init__(self) -> None:
        self.reads = itertools.count()

    def __call__(self) -> float:
        return float(next(self.reads))


@dataclass
class Answer:
    value: Any

    def get(self, timeout: float | None = None) -> Any:
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


@dataclass
class FakeView:
    """An ipyparallel view on one engine: this process (runs each function at once)."""

    sent: list[tuple[str, tuple]] = field(default_factory=list)

    def apply_async(self, fn: Any, *args: Any) -> Answer:
        self.sent.append((fn.__name__, args))
        return Answer(fn(*args))


@dataclass
class Process:
    engine: int


class FakeCluster:
    """One engine, this process: ``run`` calls the function here."""

    def __init__(self) -> None:
        self.processes = [Process(engine=7)]
        self.views: list[FakeView] = []
        self.ran: list[str] = []
        self.stopped = False

    @property
    def client(self) -> FakeCluster:
        return self

    def __getitem__(self, engines: list[int]) -> FakeView:
        assert engines == [7]
        self.views.append(FakeView())
        return self.views[-1]

    def run(self, fn: Any, *args: Any) -> list[Any]:
        self.ran.append(fn.__name__)
        return [fn(*args)]

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def prepared() -> None:
    assert dt.engine_prepare(2, 4, warmup=1) == 8  # this process's 8 devices


def test_engine_loop_times_its_steps_by_the_clock(prepared: None) -> None:
    before = dt._PROGRAM["x"]
    assert dt.engine_loop(3, block=True, clock=Clock()) == 1.0  # two reads: 0, then 1
    after = dt._PROGRAM["x"]
    assert after is not before and after.shape == (16, 4)
    assert after.sharding == before.sharding


def test_a_step_that_waits_on_its_devices_runs_the_host_callback_per_device() -> None:
    import numpy as np

    dt.engine_prepare(2, 4, wait=0.001, warmup=1)
    assert dt.engine_loop(2, block=False, clock=Clock()) == 1.0
    x = np.asarray(dt._PROGRAM["x"])
    assert x.shape == (16, 4) and np.allclose(x.mean(), 0.01, atol=1e-6)


def test_steps_run_in_order_on_the_queue_and_a_failure_surfaces_when_waited_for(
    prepared: None,
) -> None:
    ran: list[int] = []
    step = dt._PROGRAM["step"]

    def counted(x: Any, w: Any) -> Any:
        ran.append(len(ran))
        if len(ran) == 3:
            raise RuntimeError("step 3 failed")
        return step(x, w)

    dt._PROGRAM["step"] = counted
    dt.engine_step(block=False)
    dt.engine_step(block=True)
    assert ran == [0, 1]
    dt.engine_step(block=False)  # returns at once; the failure comes with the wait
    with pytest.raises(RuntimeError, match="step 3 failed"):
        dt.engine_block()


def test_synchronous_dispatch_waits_for_each_step(prepared: None) -> None:
    view = FakeView()
    assert dt.single_controller(view, 4, pipelined=False, clock=Clock()) == 1.0
    assert view.sent == [("engine_step", (True,))] * 4


def test_pipelined_dispatch_sends_every_step_then_waits_once(prepared: None) -> None:
    view = FakeView()
    assert dt.single_controller(view, 4, pipelined=True, clock=Clock()) == 1.0
    assert view.sent == [("engine_step", (False,))] * 4 + [("engine_block", ())]


def test_a_failed_step_is_a_process_error() -> None:
    class Failing(FakeView):
        def apply_async(self, fn: Any, *args: Any) -> Answer:
            return Answer(RuntimeError("engine died"))

    with pytest.raises(ProcessError, match="running a synchronous step: RuntimeError: engine died"):
        dt.single_controller(Failing(), 2, pipelined=False)


def test_measure_runs_every_shape_each_repeat() -> None:
    cluster = FakeCluster()
    timing = dt.measure_dispatch(
        lambda n: cluster, processes=(1,), programs=(TINY,), steps=2, repeats=3, command="c"
    )
    assert cluster.stopped and timing.command == "c" and timing.programs == (TINY,)
    assert [(r.controller, r.mode) for r in timing.runs] == list(SHAPES)
    assert all(r.processes == 1 and r.steps == 2 and len(r.seconds) == 3 for r in timing.runs)
    # prepared once, then each repeat the two multi-controller loops (in the turned order)
    assert cluster.ran == ["engine_prepare"] + ["engine_loop"] * 6
    steps = [name for v in cluster.views for name, _ in v.sent]
    assert steps.count("engine_step") == 2 * 2 * 3 and steps.count("engine_block") == 3


def test_measure_turns_the_order_of_shapes_each_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[tuple[str, bool]] = []
    monkeypatch.setattr(dt, "engine_prepare", lambda *args: 8)

    def multi(cluster: object, steps: int, pipelined: bool) -> float:
        order.append(("multi", pipelined))
        return 1.0

    def single(view: object, steps: int, pipelined: bool, clock: object) -> float:
        order.append(("single", pipelined))
        return 1.0

    monkeypatch.setattr(dt, "multi_controller", multi)
    monkeypatch.setattr(dt, "single_controller", single)
    dt.measure(FakeCluster(), (TINY,), steps=1, repeats=2)
    shapes = [(c, m == "pipelined") for c, m in SHAPES]
    assert order == shapes + shapes[1:] + shapes[:1]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_counts_must_be_positive_whole_numbers(bad: object) -> None:
    with pytest.raises(ProcessError, match="steps must be a positive whole number"):
        dt.measure(FakeCluster(), (TINY,), steps=bad)  # type: ignore[arg-type]


def test_the_step_that_hides_dispatch_is_the_last_that_waits_on_its_devices() -> None:
    cpu = StepProgram("cpu", rows=64, width=64)
    assert _timing(_as_survey_says()).hiding_program == LONG
    assert DispatchTiming((TINY, LONG, cpu), (), 1).hiding_program == LONG
    assert DispatchTiming((TINY, cpu), (), 1).hiding_program == cpu  # none waits: the last


def test_share_of_the_overhead_pipelining_hides() -> None:
    t = _timing({**_as_survey_says(), ("single", "pipelined", 2, "long"): 0.0455})
    assert t.hidden(2, "long") == pytest.approx((0.051 - 0.0455) / (0.051 - 0.040))  # 50%
    assert t.claims()[2].evidence[1].endswith("floor 40 ms per step, 50.0% of its overhead hidden")
    nothing = _timing({**_as_survey_says(), ("single", "sync", 1, "long"): 0.039})
    assert nothing.hidden(1, "long") is None
    assert nothing.claims()[2].evidence[0].endswith("floor 40 ms per step")
