"""The compiler's C++ log lines (fd 2) are copied into the report and still reach the
terminal, never a notebook's cell."""

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.capture.hlo import compiler_log as cl

LINE = (
    "W1124 23:19:09.253453    7881 spmd_partitioner.cc:656] [SPMD] Involuntary full "
    "rematerialization. The compiler cannot go from sharding {devices=[2,1,4]<=[8] "
    "last_tile_dim_replicate} to {devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate} "
    "efficiently for HLO operation %param = f32[8,16]{1,0} parameter(0), "
    'sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}, metadata={op_name="a"}. As the '
    "last resort, SPMD will replicate the tensor and then partition it to obtain the target "
    "sharding, which is inefficient.\n"
)


def test_what_is_written_to_fd2_is_kept_and_passed_on(capfd):
    with cl.compiler_log() as log:
        os.write(2, b"from C++\n")
    assert log.text == "from C++\n"
    assert capfd.readouterr().err == "from C++\n"


def test_under_a_kernel_the_log_goes_to_the_terminal_not_into_the_cell(capfd, monkeypatch):
    # As ipykernel 7 sets a process up: fd 2 is a pipe into the cell (here pytest's capture),
    # and sys.stderr.fileno() is the kernel's copy of the terminal it was started from.
    import tempfile

    class KernelStream:
        def __init__(self, fd: int) -> None:
            self.fd = fd

        def fileno(self) -> int:
            return self.fd

        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            pass

    with tempfile.TemporaryFile() as terminal:
        monkeypatch.setattr("sys.stderr", KernelStream(terminal.fileno()))
        with cl.compiler_log() as log:
            os.write(2, b"E0000 libtpu_init_utils.cc] unexpected worker hostname\n")
        monkeypatch.undo()
        terminal.seek(0)
        assert terminal.read() == b"E0000 libtpu_init_utils.cc] unexpected worker hostname\n"
    assert "unexpected worker hostname" in log.text
    assert capfd.readouterr().err == ""  # nothing reached the cell


def test_a_second_copy_at_the_same_time_leaves_fd2_alone(capfd):
    with cl.compiler_log() as outer, cl.compiler_log() as inner:
        os.write(2, b"once\n")
    assert inner.text == "" and outer.text == "once\n"
    assert capfd.readouterr().err == "once\n"


def test_a_copy_on_another_thread_waits_and_both_logs_are_whole(capfd):
    import threading

    started, logs = threading.Event(), {}

    def other() -> None:
        started.wait()
        with cl.compiler_log() as log:  # waits for the main thread's copy to end
            os.write(2, b"second\n")
        logs["second"] = log.text

    thread = threading.Thread(target=other)
    thread.start()
    with cl.compiler_log() as first:
        started.set()
        os.write(2, b"first\n")
        thread.join(0.2)  # the other thread is blocked while this copy lasts
        assert thread.is_alive()
    thread.join()
    assert first.text == "first\n" and logs["second"] == "second\n"
    assert capfd.readouterr().err == "first\nsecond\n"


def test_the_partitioners_warning_is_read():
    (r,) = cl.full_rematerializations("other line\n" + LINE + "more\n")
    assert r.source_sharding == "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"
    assert r.target_sharding == "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"
    assert (r.instruction, r.op_name) == ("param", "a")
    assert cl.full_rematerializations("nothing here\n") == ()


def test_explain_reports_an_involuntary_full_rematerialization(capfd):
    """The issue's example: `a` placed P('data', None), the output P(None, 'model')."""
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    a = jax.device_put(jnp.ones((16, 16)), NamedSharding(mesh, P("data", None)))
    f = jax.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P(None, "model")))
    sv.clear_cache()
    report = sv.explain(f, a, run=False)
    (note,) = [n for n in report.notes if "full rematerialization" in n]
    assert "'a'" in note and "sharding constraint" in note
    assert "Involuntary full rematerialization" in capfd.readouterr().err  # still on stderr
