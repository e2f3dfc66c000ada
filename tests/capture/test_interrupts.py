"""Ctrl-C between compiles, never inside one; no compiler dump folder outlives its process.

The subprocess tests synchronise on lines the child prints, never on time: the child's compile
hook says when a compile started (and raises SIGINT itself where the test needs it inside one).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from shardviz.capture import compile as compile_mod
from shardviz.capture.interrupts import interrupts_deferred
from tests.hostile.battery import default_sigint

#: Runs ``sv.compare`` rounds with every compiler dump folder in argv[1]; argv[2] says who
#: sends the SIGINT: "self" (raised from inside the first compile, then handled, then one
#: more compare) or "parent" (sent once the child prints STARTED; not handled).
CHILD = textwrap.dedent(
    """
    import contextlib, signal, sys
    import shardviz as sv
    sv.use_cpu_devices(8)
    from shardviz.capture import compile as compile_mod
    scratch, who = sys.argv[1], sys.argv[2]
    compile_mod.scratch_dir = lambda: scratch
    real_log, first = compile_mod.compiler_log, [True]

    @contextlib.contextmanager
    def hooked():
        with real_log() as log:
            if first[0]:
                first[0] = False
                print("STARTED", flush=True)
                if who == "self":
                    signal.raise_signal(signal.SIGINT)
                    print("SIGNALLED", flush=True)
            yield log
        print("COMPILED", flush=True)

    compile_mod.compiler_log = hooked
    try:
        for _ in range(50):
            sv.compare("mlp", ["dp", "fsdp"], steps=1)
    except KeyboardInterrupt:
        if who != "self":
            raise
        print("INTERRUPTED", flush=True)
    sv.compare("mlp", ["dp"], steps=1)
    print("OK", flush=True)
    """
)


class _Child:
    """The child process, its stdout read line by line (its stderr goes to a file: a pipe
    left unread could fill and stop it); killed if it runs past a generous limit."""

    def __init__(self, scratch: Path, who: str, logs: Path) -> None:
        self.err_path = logs / f"{who}.stderr"
        with self.err_path.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", CHILD, str(scratch), who],
                stdout=subprocess.PIPE, stderr=err, text=True, preexec_fn=default_sigint,
            )  # fmt: skip
        self.watchdog = threading.Timer(300, self.proc.kill)
        self.watchdog.start()
        self.lines: list[str] = []

    def wait_for(self, word: str) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            if line.strip() == word:
                return
        raise AssertionError(f"the child ended before {word}: {self.finish()[1][-2000:]}")

    def finish(self) -> tuple[list[str], str]:
        assert self.proc.stdout is not None
        self.lines += [line.strip() for line in self.proc.stdout]
        self.proc.wait()
        self.watchdog.cancel()
        return self.lines, self.err_path.read_text()


def test_a_ctrl_c_inside_a_compile_comes_after_it_and_the_process_goes_on(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    child = _Child(scratch, "self", tmp_path)
    lines, err = child.finish()
    assert child.proc.returncode == 0, err[-2000:]
    # The compile the signal came in finished before the KeyboardInterrupt was raised.
    assert lines[:4] == ["STARTED", "SIGNALLED", "COMPILED", "INTERRUPTED"], (lines, err[-2000:])
    assert lines[-1] == "OK"
    assert not list(scratch.iterdir())


def test_an_unhandled_ctrl_c_during_compare_exits_cleanly_and_leaves_no_dump(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    child = _Child(scratch, "parent", tmp_path)
    child.wait_for("STARTED")
    child.proc.send_signal(signal.SIGINT)
    _, err = child.finish()
    assert "Fatal Python error" not in err, err[-3000:]
    # Python ends a process whose KeyboardInterrupt was not caught by SIGINT itself.
    assert child.proc.returncode == -signal.SIGINT, (child.proc.returncode, err[-3000:])
    assert "Traceback" in err and "KeyboardInterrupt" in err.split(), err[-3000:]
    assert not list(scratch.iterdir())


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler for the test, as a terminal's Python has it (a harness run
    in the background may start the test process with SIGINT ignored)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("python_sigint")
def test_a_held_ctrl_c_is_raised_when_the_block_ends():
    before = signal.getsignal(signal.SIGINT)
    reached = []
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        signal.raise_signal(signal.SIGINT)
        reached.append("after the signal")
    assert reached == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.usefixtures("python_sigint")
def test_a_second_ctrl_c_is_not_held():
    reached = []
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        signal.raise_signal(signal.SIGINT)
        reached.append("held")
        signal.raise_signal(signal.SIGINT)
        reached.append("not reached")
    assert reached == ["held"]


def test_the_previous_handler_gets_the_held_signal():
    got: list[int] = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        with interrupts_deferred():
            signal.raise_signal(signal.SIGINT)
            assert not got
        assert got == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, before)


def test_off_the_main_thread_it_changes_nothing():
    seen = []

    def run() -> None:
        with interrupts_deferred():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [signal.getsignal(signal.SIGINT)]


def test_a_compile_leaves_no_dump_folder_even_when_it_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_mod, "scratch_dir", lambda: str(tmp_path))
    compile_mod.lower_and_compile(jax.jit(lambda x: x * 2), (jnp.ones(4),), {}, "double")
    with pytest.raises(KeyboardInterrupt), compile_mod.dump_folder() as folder:
        (Path(folder) / "module.txt").write_text("HloModule m")
        raise KeyboardInterrupt
    assert not list(tmp_path.iterdir())
    assert not compile_mod._LEFT
