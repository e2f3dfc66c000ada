"""Latest: background jobs where the newest request wins (fake jobs gated by threading.Event)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from shardviz.errors import CompileError, SpecError
from shardviz.explainer.background import Latest, Stage, Superseded, short_message

WAIT = 30  # seconds: a ceiling against hangs, never a timing assertion


class Recorder:
    """Collects what a Latest hands on, in order."""

    def __init__(self) -> None:
        self.results: list = []
        self.statuses: list[tuple[str, str]] = []

    def latest(self) -> Latest:
        return Latest(on_result=self.results.append, on_status=self._status)

    def _status(self, status: str, error: str) -> None:
        self.statuses.append((status, error))


def gated(result, gate: threading.Event, started: threading.Event | None = None):
    """A job that waits for ``gate`` before returning ``result``."""

    def job(stage: Stage):
        if started is not None:
            started.set()
        assert gate.wait(WAIT)
        return result

    return job


def failing(err: BaseException, gate: threading.Event | None = None):
    def job(stage: Stage):
        if gate is not None:
            assert gate.wait(WAIT)
        raise err

    return job


def test_a_result_goes_through_compiling_running_done():
    rec = Recorder()
    latest = rec.latest()

    def job(stage: Stage):
        stage("compiling")
        stage("running")
        return "report"

    assert latest.submit(job) == 1
    assert latest.wait(WAIT)
    assert rec.results == ["report"]
    assert [s for s, _ in rec.statuses] == ["compiling", "running", "done"]
    assert (latest.status, latest.error, latest.result) == ("done", "", "report")


def test_a_stale_result_never_overwrites_a_newer_one():
    rec = Recorder()
    latest = rec.latest()
    gate_a, gate_b = threading.Event(), threading.Event()
    latest.submit(gated("A", gate_a))
    latest.submit(gated("B", gate_b))
    gate_b.set()
    assert latest.wait(WAIT)
    assert rec.results == ["B"]
    gate_a.set()  # A finishes last...
    assert latest.join(WAIT)
    assert rec.results == ["B"]  # ...and is dropped
    assert latest.status == "done"
    assert rec.statuses[-1] == ("done", "")


def test_a_stale_error_is_dropped_too():
    rec = Recorder()
    latest = rec.latest()
    gate_a = threading.Event()
    latest.submit(failing(RuntimeError("old trouble"), gate_a))
    latest.submit(lambda stage: "B")
    assert latest.wait(WAIT)
    gate_a.set()
    assert latest.join(WAIT)
    assert rec.results == ["B"]
    assert all(status != "error" for status, _ in rec.statuses)


def test_the_newest_wins_even_when_it_finishes_first_and_the_old_one_reports_progress():
    rec = Recorder()
    latest = rec.latest()
    gate_a, started_a = threading.Event(), threading.Event()
    reached: list[str] = []

    def job_a(stage: Stage):
        started_a.set()
        assert gate_a.wait(WAIT)
        assert stage.stale
        stage("running")  # raises Superseded: the stale job stops here
        reached.append("after running")
        return "A"

    latest.submit(job_a)
    assert started_a.wait(WAIT)
    latest.submit(lambda stage: "B")
    assert latest.wait(WAIT)
    gate_a.set()
    assert latest.join(WAIT)
    assert reached == []
    assert rec.results == ["B"]
    assert [s for s, _ in rec.statuses].count("running") == 0


def test_wait_is_false_while_the_newest_is_still_running():
    latest = Latest()
    gate = threading.Event()
    latest.submit(gated("A", gate))
    assert latest.wait(0) is False
    gate.set()
    assert latest.wait(WAIT)
    assert latest.result == "A"


def test_wait_before_any_request_returns_at_once():
    assert Latest().wait(0) is True
    assert Latest().generation == 0


def test_a_shardviz_error_is_shown_as_is():
    rec = Recorder()
    latest = rec.latest()
    msg = "array 'w' (shape (8,)), dim 0: unknown mesh axis 'x'. Fix: name one of the axes."
    latest.submit(failing(SpecError(msg)))
    assert latest.wait(WAIT)
    assert rec.statuses[-1] == ("error", msg)
    assert (latest.status, latest.error) == ("error", msg)
    assert rec.results == []


def test_any_other_error_becomes_type_and_first_line():
    rec = Recorder()
    latest = rec.latest()
    latest.submit(failing(ValueError("bad shape\n  long traceback-ish detail\n more")))
    assert latest.wait(WAIT)
    assert rec.statuses[-1] == ("error", "ValueError: bad shape")


def test_a_later_good_request_clears_the_error():
    rec = Recorder()
    latest = rec.latest()
    latest.submit(failing(CompileError("it did not compile")))
    assert latest.wait(WAIT)
    assert latest.status == "error"
    latest.submit(lambda stage: "fixed")
    assert latest.wait(WAIT)
    assert (latest.status, latest.error) == ("done", "")
    assert rec.statuses[-1] == ("done", "")
    assert rec.results == ["fixed"]


def test_a_failing_display_becomes_an_error_status_not_an_exception():
    statuses: list[tuple[str, str]] = []

    def show(result):
        raise TypeError("cannot show this\nsecond line")

    latest = Latest(on_result=show, on_status=lambda s, e: statuses.append((s, e)))
    latest.submit(lambda stage: "report")
    assert latest.wait(WAIT)
    assert statuses[-1] == ("error", "TypeError: cannot show this")


def test_a_failing_status_display_does_not_stop_the_work():
    def on_status(status, error):
        raise RuntimeError("the widget is gone")

    results: list = []
    latest = Latest(on_result=results.append, on_status=on_status)
    latest.submit(lambda stage: "report")
    assert latest.wait(WAIT)
    assert results == ["report"]


def test_a_job_reports_only_compiling_or_running():
    latest = Latest()
    latest.submit(lambda stage: stage("done"))
    assert latest.wait(WAIT)
    assert latest.status == "error"
    assert "ValueError" in latest.error


def test_submit_reports_compiling_at_once_and_clears_an_old_error():
    rec = Recorder()
    latest = rec.latest()
    latest.submit(failing(RuntimeError("boom")))
    assert latest.wait(WAIT)
    gate = threading.Event()
    latest.submit(gated("x", gate))
    assert (latest.status, latest.error) == ("compiling", "")
    gate.set()
    assert latest.wait(WAIT)


@pytest.mark.parametrize(
    ("err", "expected"),
    [
        (SpecError("spec: wrong. Fix: right."), "spec: wrong. Fix: right."),
        (KeyError("w1"), "KeyError: 'w1'"),
        (RuntimeError(""), "RuntimeError"),
        (ValueError("  first  \nsecond"), "ValueError: first"),
        (Superseded("x"), "Superseded: x"),
    ],
)
def test_short_message(err, expected):
    assert short_message(err) == expected


def test_close_supersedes_the_running_job_and_waits_for_it():
    started, release = threading.Event(), threading.Event()
    stopped = []

    def job(stage):
        started.set()
        release.wait(5)
        try:
            stage("running")
        except Exception as err:
            stopped.append(type(err).__name__)
            raise
        return "shown"

    latest = Latest()
    latest.submit(job)
    assert started.wait(5)
    threading.Timer(0.2, release.set).start()
    assert latest.close(timeout=5)
    assert stopped == ["Superseded"] and latest.result is None


def test_supersede_makes_the_running_job_stale_at_once_without_waiting_for_it():
    rec = Recorder()
    latest = rec.latest()
    started, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def job(stage: Stage):
        started.set()
        assert release.wait(WAIT)  # a compile in progress: supersede cannot interrupt it
        seen.append(stage.stale)
        return "A"

    latest.submit(job)
    assert started.wait(WAIT)
    latest.supersede()  # returns while the job still waits (it would hang here otherwise)
    assert latest.wait(0)  # nothing left to show
    release.set()
    assert latest.join(WAIT)
    assert seen == [True] and rec.results == [] and latest.result is None


def test_a_script_with_work_in_progress_exits_cleanly_after_it(tmp_path):
    # A daemon thread still inside a compile when the interpreter shuts down aborted the
    # process; at exit shardviz now waits for its background jobs.
    done = tmp_path / "done"
    script = (
        "import time\n"
        "from shardviz.explainer.background import Latest\n"
        "def job(stage):\n"
        "    time.sleep(1.0)\n"
        f"    open({str(done)!r}, 'w').write('ok')\n"
        "Latest().submit(job)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert done.read_text() == "ok"
