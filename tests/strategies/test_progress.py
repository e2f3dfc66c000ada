"""Progress on long waits (shardviz/strategies/progress.py): the reporter's three places (a
notebook bar replaced by a line at the end, a terminal line, nothing), its delay and ticking
thread, nested work; and that compare, the serving comparison and smallest_slice report one
step per compile, with the right counts and names, and write nothing to a stderr that is not
a terminal."""

from __future__ import annotations

import contextvars
import fcntl
import io
import os
import select
import struct
import termios
import threading
import time

import pytest

import shardviz as sv
from shardviz.strategies import progress
from shardviz.strategies.progress import (
    Bar,
    Line,
    Nested,
    QuietSteps,
    Reporter,
    stepping,
    steps_for,
)
from shardviz.strategies.serving.slices import slice_sizes


class Clock:
    """A clock the test moves by hand (no timing in the tests)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """A :class:`~shardviz.strategies.progress.Steps` that keeps what it was told."""

    def __init__(self) -> None:
        self.starts: list[tuple[int, int, str]] = []
        self.finished: list[str] = []

    def start(self, k: int, n: int, what: str) -> None:
        self.starts.append((k, n, what))

    def finish(self, words: str) -> None:
        self.finished.append(words)


class Shown:
    """IPython's display as the bar uses it: what was shown, and what replaced it."""

    def __init__(self) -> None:
        self.shown: list[object] = []
        self.updates: list[dict] = []

    def __call__(self, obj: object, display_id: bool = False) -> Shown:
        assert display_id, "the bar keeps a handle to replace itself at the end"
        self.shown.append(obj)
        return self

    def update(self, bundle: dict, raw: bool = False) -> None:
        assert raw
        self.updates.append(bundle)


class Surface:
    """A surface that keeps what it showed (and the context it was shown in)."""

    def __init__(self, seen: threading.Event | None = None) -> None:
        self.lines: list[tuple[float, str]] = []
        self.ended: list[str] = []
        self.seen = seen
        self.context: list[object] = []

    def show(self, fraction: float, line: str) -> None:
        self.lines.append((fraction, line))
        self.context.append(MARK.get())
        if self.seen is not None:
            self.seen.set()

    def end(self, line: str) -> None:
        self.ended.append(line)


MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="none")


# --- the reporter --------------------------------------------------------------------------


def test_the_notebook_bar_appears_after_the_delay_and_is_replaced_by_a_line_at_the_end():
    clock, shown = Clock(), Shown()
    bars: list[Bar] = []

    def make() -> Bar:
        bars.append(Bar(shown, "shardviz.compare", "working"))
        return bars[-1]

    r = Reporter(make, delay_s=2.0, ticking=False, clock=clock)
    r.start(1, 2, "compiling dp for v5e:2x4")
    assert shown.shown == []  # quick so far: nothing in the cell
    clock.now += 3
    r.tick()
    (bar,) = bars
    assert shown.shown == [bar.box]
    assert bar.bar.value == 0.0
    assert bar.label.value == "step 1 of 2: compiling dp for v5e:2x4, 3 s"
    clock.now += 9
    r.start(2, 2, "compiling <tp> for v5e:2x4")
    assert bar.bar.value == pytest.approx(0.5)
    assert bar.label.value == "step 2 of 2: compiling <tp> for v5e:2x4, 12 s"
    assert shown.updates == []
    r.finish("2 strategies compiled for v5e:2x4 in 12 s")
    assert bar.bar.value == 1.0 and bar.bar.bar_style == "success"
    # The widget's output becomes the last line, as text and escaped HTML (no kernel needed).
    (bundle,) = shown.updates
    assert bundle["text/plain"] == "shardviz.compare: 2 strategies compiled for v5e:2x4 in 12 s"
    assert bundle["text/html"] == f"<div>{bundle['text/plain']}</div>"
    assert len(shown.shown) == 1


def test_the_bar_escapes_what_it_shows_in_html():
    shown = Shown()
    Bar(shown, "shardviz.check", "checking").end("exercise <b>1</b> & done")
    assert shown.updates[0]["text/html"] == (
        "<div>shardviz.check: exercise &lt;b&gt;1&lt;/b&gt; &amp; done</div>"
    )


def test_quick_work_shows_nothing_at_all():
    clock, shown = Clock(), Shown()
    r = Reporter(lambda: Bar(shown, "t", "working"), ticking=False, clock=clock)
    r.start(1, 3, "compiling dp")
    clock.now += progress.DELAY_S / 2
    r.start(2, 3, "compiling tp")
    r.finish("done in 1 s")
    assert shown.shown == [] and shown.updates == []


def test_the_terminal_line_is_rewritten_in_place_and_ended_once():
    clock, out = Clock(), io.StringIO()
    r = Reporter(lambda: Line(out, "shardviz.compare"), delay_s=0, ticking=False, clock=clock)
    r.start(1, 2, "compiling a long strategy name")
    clock.now += 5
    r.start(2, 2, "compiling tp")
    r.finish("2 strategies run here in 5 s")
    text = out.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n") and text.count("\n") == 1
    assert "\rshardviz.compare: step 2 of 2: compiling tp, 5 s" in text
    # the shorter line covers the longer one it replaces
    last = text.rsplit("\r", 1)[1]
    assert last.startswith("shardviz.compare: 2 strategies run here in 5 s")
    assert len(last.rstrip("\n")) >= len("shardviz.compare: step 1 of 2: compiling a long st")


def test_one_step_reads_as_what_it_does():
    clock, s = Clock(), Surface()
    r = Reporter(lambda: s, delay_s=0, ticking=False, clock=clock)
    r.start(1, 1, "checking 11.2…")
    clock.now += 48
    r.tick()
    assert s.lines[-1] == (0.0, "checking 11.2…, 48 s")


def test_progress_is_quiet_when_asked_off_a_terminal_and_off_the_main_thread(monkeypatch):
    assert isinstance(steps_for(False, "t"), QuietSteps)
    assert isinstance(steps_for(True, "t", terminal=io.StringIO()), QuietSteps)
    mine = Recorder()
    assert steps_for(mine, "t") is mine
    # A worker thread's progress is its owner's to show, even in a notebook.
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(steps_for(True, "t")))
    worker.start()
    worker.join()
    assert isinstance(got[0], QuietSteps)


def test_in_a_notebook_the_reporter_is_a_bar_and_never_a_stderr_line(monkeypatch, capfd):
    import IPython.display

    shown = Shown()
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", shown)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    r = steps_for(True, "shardviz.compare")
    assert isinstance(r, Reporter)
    r.start(1, 1, "compiling dp")
    r.finish("1 strategy run here in 0 s")
    assert isinstance(shown.shown[0], object) and len(shown.updates) == 1
    assert capfd.readouterr().err == ""


class Terminal(io.StringIO):
    """A terminal without a descriptor."""

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_reporter_is_a_line(monkeypatch):
    out = Terminal()
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    r = steps_for(True, "shardviz.smallest_slice", terminal=out)
    r.start(1, 4, "compiling the decode step for v5e:2x2 (strategy 'tp')")
    r.finish("v5e:2x2 holds it in 3 s")
    assert "\rshardviz.smallest_slice: step 1 of 4: compiling the decode step" in out.getvalue()
    text = out.getvalue()
    assert text.endswith("\n") and text.rstrip().endswith("v5e:2x2 holds it in 3 s")


def read_until(fd: int, wait_s: float = 30.0) -> str:
    """What a pty has received up to the end of the line: one read may hold only the first write."""
    text = ""
    deadline = time.monotonic() + wait_s
    while not text.endswith("\n") and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            text += os.read(fd, 4096).decode()
    return text


def test_a_real_terminal_gets_the_line_on_its_own_descriptor(monkeypatch):
    # The line goes to a copy of the terminal's descriptor taken before any compile: while
    # XLA runs, shardviz copies fd 2 into the compiler's log.
    main, side = os.openpty()
    tty = os.fdopen(side, "w")
    try:
        monkeypatch.setattr(progress, "DELAY_S", 0.0)
        r = steps_for(True, "shardviz.compare", terminal=tty)
        r.start(1, 2, "compiling dp")
        r.finish("2 strategies run here in 1 s")
        text = read_until(main)
        assert "shardviz.compare: step 1 of 2: compiling dp, 0 s" in text
        assert "2 strategies run here in 1 s" in text
        # A line wider than the terminal is cut to it (a wrapped line cannot be rewritten).
        fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 30, 0, 0))
        r = steps_for(True, "shardviz.compare", terminal=tty)
        r.start(1, 2, "compiling dp")
        r.finish("done")
        cut = read_until(main).split("\r")[1]
        assert cut.startswith("shardviz.compare: step 1") and cut.endswith("…")
        assert len(cut) == 29  # one column left free, so the cursor never wraps
    finally:
        tty.close()
        os.close(main)


def test_the_seconds_tick_on_a_thread_in_the_callers_context_stopped_at_the_end():
    seen = threading.Event()
    s = Surface(seen)
    MARK.set("the cell's")
    r = Reporter(lambda: s, delay_s=0, tick_s=0.01)
    assert seen.wait(30), "the ticking thread showed nothing"
    assert s.context[0] == "the cell's"  # a notebook bar lands in the cell that asked
    r.finish("done")
    assert r._thread is not None and not r._thread.is_alive()
    shown = len(s.lines)
    r.tick()
    assert len(s.lines) == shown and s.ended == ["done"]


def test_a_failing_surface_fails_at_the_end_not_in_the_thread():
    class Broken(Surface):
        def show(self, fraction: float, line: str) -> None:
            raise RuntimeError("no widgets here")

    r = Reporter(Broken, delay_s=0, tick_s=0.01)
    r._thread.join(30)  # type: ignore[union-attr]
    with pytest.raises(RuntimeError, match="no widgets"):
        r.finish("done")


def test_nested_work_shows_in_the_outer_line():
    clock, s = Clock(), Surface()
    outer = Reporter(lambda: s, delay_s=0, ticking=False, clock=clock)
    with stepping(outer, "shardviz.check", 1, "exercise 11.2 checked") as step:
        step("checking 11.2…")
        inner = steps_for(True, "shardviz.compare")
        assert isinstance(inner, Nested)
        with stepping(True, "shardviz.compare", 2, "2 strategies") as compiling:
            compiling("compiling zero1 for v5e:16x16")
            assert s.lines[-1][1] == "checking 11.2… · compiling zero1 for v5e:16x16 (1 of 2), 0 s"
        assert s.lines[-1][1] == "checking 11.2…, 0 s"
    assert s.ended and s.ended[0].startswith("exercise 11.2 checked in ")
    # An outer reporter that is not a bar keeps nested work quiet.
    with stepping(Recorder(), "t", 1, "done"):
        assert isinstance(steps_for(True, "shardviz.compare"), QuietSteps)
    assert progress._current.get() is None


@pytest.mark.parametrize(
    ("error", "words"),
    [(KeyboardInterrupt(), "interrupted at step 1 of 3: compiling dp"),
     (ValueError("bad"), "stopped by ValueError at step 1 of 3: compiling dp")],
)  # fmt: skip
def test_an_interrupt_or_error_ends_the_progress_and_goes_on(error, words):
    seen = Recorder()
    with pytest.raises(type(error)), stepping(seen, "t", 3, "done") as step:
        step("compiling dp")
        raise error
    assert seen.finished == [words]


# --- who reports -----------------------------------------------------------------------------


def test_compare_here_reports_each_compile_and_each_run():
    seen = Recorder()
    sv.compare("mlp", ["dp", "tp"], steps=1, progress=seen)
    assert seen.starts == [
        (1, 4, "compiling dp"),
        (2, 4, "compiling tp"),
        (3, 4, "running dp and checking it against one device"),
        (4, 4, "running tp and checking it against one device"),
    ]
    (words,) = seen.finished
    assert words.startswith("2 strategies run here in ")


def test_compare_for_topologies_reports_each_strategy_on_each():
    seen = Recorder()
    sv.compare("mlp", ["dp", "tp"], target=["v5e:2x4", "v5e:2x2"], progress=seen)
    assert seen.starts == [
        (1, 4, "compiling dp for v5e:2x4"),
        (2, 4, "compiling tp for v5e:2x4"),
        (3, 4, "compiling dp for v5e:2x2"),
        (4, 4, "compiling tp for v5e:2x2"),
    ]
    assert seen.finished[0].startswith("2 strategies compiled for v5e:2x4, v5e:2x2 in ")


def test_compare_on_a_topologys_mesh_reports_its_compiles():
    seen = Recorder()
    mesh = sv.Mesh(sv.topology("v5e:2x4").devices, (2, 4), ("data", "model"))
    sv.compare("mlp", ["dp"], mesh=mesh, progress=seen)
    assert seen.starts == [(1, 1, "compiling dp for v5e:2x4")]
    assert seen.finished[0].startswith("1 strategy compiled for v5e:2x4 in ")


SMALL = {"layers": 2, "d_model": 128, "heads": 4, "kv_heads": 2, "head_dim": 32, "ffn": 256,
         "vocab": 512}  # fmt: skip


def test_the_serving_comparison_reports_each_strategy():
    seen = Recorder()
    c = sv.compare(
        "llama3.1-8b", ["tp", "dp"], mode="decode", batch=8, context=64, progress=seen, **SMALL
    )
    where = c.results[0].target
    assert seen.starts == [
        (1, 2, f"compiling the decode step under 'tp' for {where}"),
        (2, 2, f"compiling the decode step under 'dp' for {where}"),
    ]
    assert seen.finished[0].startswith(f"2 decode steps compiled for {where} in ")


def test_smallest_slice_reports_the_slices_it_checks_and_nothing_without_a_check():
    seen = Recorder()
    s = sv.smallest_slice("llama3.1-70b", "v5e", batch=1, context=1024, progress=seen, **SMALL)
    need = s.weight_bytes + s.kv_bytes  # each slice the byte count lets through is a step
    counted = sum(-(-need // chips) <= s.hbm_bytes_per_chip for _, chips in slice_sizes("v5e"))
    assert counted > 1
    assert seen.starts == [(1, counted, f"compiling the decode step for {s.slice} (strategy 'tp')")]
    assert seen.finished[0].startswith(f"{s.slice} holds it")
    quiet = Recorder()
    sv.smallest_slice("llama3.1-70b", "v5e", batch=1, context=1024, check=False, progress=quiet)
    assert quiet.starts == [] and quiet.finished == []


def test_nothing_reaches_stderr_when_it_is_not_a_terminal(capfd, monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)  # shown at once, were it anywhere
    sv.compare("mlp", ["dp"], steps=1)
    err = capfd.readouterr().err
    assert "shardviz.compare" not in err and "\r" not in err
