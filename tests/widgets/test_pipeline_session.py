"""PipelineSession and PipelineConnection with ``compare`` replaced by a fake: what runs when,
what is kept, and where results, progress and errors go. (test_pipeline_explorer.py runs the
real comparison.)"""

from __future__ import annotations

import threading
from dataclasses import replace
from types import SimpleNamespace

import pytest

from shardviz.errors import CompileError, ShardvizError
from shardviz.model.compare import Comparison, MemoryBreakdown, StrategyResult
from shardviz.model.mesh import Device, MeshLayout
from shardviz.model.schedule import gpipe
from shardviz.model.schedule import schedule as make_schedule
from shardviz.widgets.pipeline import session as pipeline_session
from shardviz.widgets.pipeline.checks import PipelineConfig
from shardviz.widgets.pipeline.session import CACHE_SIZE, PipelineConnection, PipelineSession

SMALL = {"layers": 4, "batch": 16, "d_model": 32, "seq": 16, "d_ff": 64, "heads": 2, "vocab": 64}
WAIT = 60


def fake_result(strategy: str, schedule, step: float) -> StrategyResult:
    memory = MemoryBreakdown(0, 0, 0, 0, 0, 0, 0, temp=100, output=0, alias=0, peak=200)
    stages = schedule.stages if schedule is not None else 1
    mesh = MeshLayout(("stage",), (stages,), tuple(Device(i) for i in range(stages)))
    report = SimpleNamespace(target=None, platform="cpu")  # what a result's labels read
    return StrategyResult(
        strategy=strategy, title=f"{strategy} title", description="", mesh=mesh,
        report=report, memory=memory, collectives=(), step_seconds=step, schedule=schedule,  # type: ignore[arg-type]
    )  # fmt: skip


class FakeCompare:
    """Records each call; returns a comparison whose pipelines carry the asked-for schedule
    and a step time of 1 ms per microbatch. ``fail`` makes the next call raise it."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.fail: Exception | None = None
        self.gate: threading.Event | None = None

    def __call__(self, model, strategies, **kwargs):
        self.calls.append({"model": model, "strategies": strategies, **kwargs})
        if self.gate is not None:
            self.gate.wait(WAIT)
        if self.fail is not None:
            err, self.fail = self.fail, None
            raise err
        s, m = kwargs["stages"], kwargs["microbatches"]
        sched = make_schedule(kwargs["schedule"] or "gpipe", s, m)
        results = tuple(
            fake_result(name, sched if name.startswith("pp") else None, 0.001 * m)
            for name in strategies
        )
        return Comparison(model="transformer", num_params=0, param_dtype="float32", results=results)


@pytest.fixture
def fake(monkeypatch):
    made = FakeCompare()
    monkeypatch.setattr(pipeline_session, "compare", made)
    return made


class FakeExplorer:
    """The explorer's interface the connection uses; records what it was shown."""

    def __init__(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self.selected_strategy = comparison.labels[0]
        self.shown: list[Comparison] = []
        self.status = self.error = self.stale = self.fixed = ""

    def show(self, comparison: Comparison) -> None:
        self.shown.append(comparison)
        self.comparison = comparison


def test_the_session_reads_the_models_batch_and_layers(fake):
    session = PipelineSession("transformer", ["pp"], **SMALL)
    assert (session.batch, session.layers, session.devices) == (16, 4, 8)
    assert session.initial_config() == PipelineConfig(2, 4)
    odd = PipelineSession("transformer", ["pp"], **{**SMALL, "layers": 3, "batch": 6})
    assert odd.initial_config() == PipelineConfig(3, 3)  # 2 does not divide 3; 4 not 6
    assert fake.calls == []  # nothing runs until asked


def test_sizes_go_to_the_model_and_everything_to_compare(fake):
    session = PipelineSession("transformer", ["pp", "dp"], steps=2, seed=7, **SMALL)
    session.run(PipelineConfig(4, 8, "1f1b", True))
    call = fake.calls[-1]
    assert call["strategies"] == ["pp", "dp"]
    assert (call["stages"], call["microbatches"], call["schedule"], call["checkpoint"]) == (
        4, 8, "1f1b", True,
    )  # fmt: skip
    assert (call["steps"], call["seed"]) == (2, 7)
    assert {k: call[k] for k in SMALL} == SMALL


def test_runs_are_kept_and_the_sweep_outlives_the_cache(fake):
    session = PipelineSession("transformer", ["pp"], **SMALL)
    first = session.run(PipelineConfig(2, 4))
    assert session.run(PipelineConfig(2, 4)) is first and session.calls == 1
    for m in (1, 2, 8, 16):
        session.run(PipelineConfig(2, m))
    runs = session.runs(PipelineConfig(2, 16), "pp")
    assert sorted(runs) == [1, 2, 4, 8, 16]
    assert runs[8].step_seconds == pytest.approx(0.008)
    assert runs[8].bubble == gpipe(2, 8).schedule_bubble_fraction
    assert session.runs(PipelineConfig(4, 4), "pp") == {}  # other stage counts apart
    assert session.runs(PipelineConfig(2, 4, "1f1b"), "pp") == {}  # other schedules apart
    for k in range(CACHE_SIZE):  # push the first ones out of the cache
        session.run(
            PipelineConfig(1, 16, checkpoint=bool(k % 2), schedule=("gpipe", "1f1b", None)[k % 3])
        )
    assert session.cached(PipelineConfig(2, 4)) is None
    assert sorted(session.runs(PipelineConfig(2, 4), "pp")) == [1, 2, 4, 8, 16]


def test_a_strategy_without_schedule_gets_a_pointer_not_a_chart(fake):
    session = PipelineSession("transformer", ["pp", "dp"], **SMALL)
    comparison = session.run(PipelineConfig(2, 4))
    text = session.pane(comparison, PipelineConfig(2, 4), "dp")
    assert "dp is not a pipeline: pick pp above the panes" in text
    assert "sv-schedule" not in text
    assert "sv-schedule" in session.pane(comparison, PipelineConfig(2, 4), "pp")


def test_no_pipeline_or_no_layers_is_refused(fake):
    with pytest.raises(ShardvizError, match=r"strategies \('dp', 'tp'\) hold no pipeline"):
        PipelineSession("transformer", ["dp", "tp"])
    with pytest.raises(ShardvizError, match="no 'batch' and 'layers' sizes"):
        PipelineSession("mlp", ["pp"])
    with pytest.raises(ShardvizError, match="published architecture pipelines as 'pp'") as err:
        PipelineSession("llama3.1-8b", ["pp"], layers=2, d_model=64)
    assert "sv.compare('llama3.1-8b', ['pp'], stages=4)" in str(err.value)


def connected(fake, strategies=("pp",)):
    session = PipelineSession("transformer", list(strategies), **SMALL)
    start = PipelineConfig(2, 4)
    explorer = FakeExplorer(session.run(start))
    controls = session.controls(start)
    return PipelineConnection(explorer, controls, session, start), explorer, controls


def test_a_slider_change_runs_once_and_shows_the_new_schedule(fake):
    connection, explorer, controls = connected(fake)
    assert (
        "sv-schedule" in connection.pane.value and 'data-microbatches="4"' in connection.pane.value
    )
    controls.microbatches.value = 8
    assert connection.wait(WAIT)
    assert [c["microbatches"] for c in fake.calls] == [4, 8]
    assert len(explorer.shown) == 1
    assert explorer.comparison.results[0].schedule.microbatches == 8
    assert 'data-microbatches="8"' in connection.pane.value
    assert (explorer.status, explorer.error) == ("done", "")
    assert "showing 2 stages × 8 microbatches" in controls.status.value


def test_only_the_newest_change_is_shown_and_a_superseded_one_never_compiles(fake):
    connection, explorer, controls = connected(fake)
    fake.gate = threading.Event()  # the first rerun waits inside compare
    controls.microbatches.value = 8
    for _ in range(WAIT * 100):  # until the rerun for 8 is inside compare
        if len(fake.calls) == 2:
            break
        threading.Event().wait(0.01)
    controls.microbatches.value = 16  # waits for the first: superseded before it compiles
    controls.microbatches.value = 2
    fake.gate.set()
    assert connection.wait(WAIT)
    assert connection.latest.join(WAIT)
    assert [c["microbatches"] for c in fake.calls] == [4, 8, 2]
    assert [c.results[0].schedule.microbatches for c in explorer.shown] == [2]


def test_an_invalid_combination_marks_the_panes_stale_and_runs_nothing(fake):
    connection, explorer, controls = connected(fake, ("pp", "pp+dp"))
    controls.schedule.value = "1f1b"
    assert connection.wait(WAIT)
    calls = len(fake.calls)
    controls.microbatches.value = 8  # pp+dp: 2 rows per microbatch over 'data' of 4
    assert explorer.stale.startswith("fix microbatches: a microbatch of 2 rows")
    assert connection.wait(WAIT) and len(fake.calls) == calls
    controls.microbatches.value = 4
    assert explorer.stale == ""


def test_a_failed_run_shows_its_message_and_the_kernel_goes_on(fake):
    connection, explorer, controls = connected(fake)
    fake.fail = CompileError("compare: it broke. Fix: pick another count.")
    controls.microbatches.value = 8
    assert connection.wait(WAIT)  # nothing was raised here
    assert explorer.status == "error"
    assert explorer.error == "compare: it broke. Fix: pick another count."
    assert "failed: compare: it broke" in controls.status.value
    assert explorer.shown == []  # the panes keep what ran
    controls.microbatches.value = 2
    assert connection.wait(WAIT)
    assert (explorer.status, explorer.error) == ("done", "")


def test_the_pane_follows_the_explorers_strategy(fake):
    session = PipelineSession("transformer", ["pp", "pp+dp"], **SMALL)
    start = PipelineConfig(2, 4)
    explorer = FakeExplorer(session.run(start))
    connection = PipelineConnection(explorer, session.controls(start), session, start)
    assert 'data-strategy="pp"' in connection.pane.value
    explorer.selected_strategy = "pp+dp"
    connection.refresh_pane()  # the real explorer's trait observer calls this
    assert 'data-strategy="pp+dp"' in connection.pane.value
    explorer.comparison = replace(explorer.comparison, results=())
    connection.refresh_pane()
    assert connection.pane.value == ""
