"""Failure messages from hand-made results: which process, how, its last meaningful lines, and
jax's own messages explained."""

from __future__ import annotations

from shardviz.launch import LaunchResult, ProcessResult
from shardviz.launch.failure import failure_message, tail


def proc(index: int, returncode: int, lines: list[str], stopped: bool = False) -> ProcessResult:
    return ProcessResult(index=index, pid=100 + index, returncode=returncode,
                         output=tuple(("stderr", line) for line in lines), stopped=stopped)  # fmt: skip


def test_tail_leaves_out_native_stack_frames():
    lines = [
        "step 1",
        "    @     0x7f80  xla::Foo()",
        "*** Check failure stack trace: ***",
        "",
        "E1125 RAW: Dumping core",
        "W1125 03:58:30.578852   14137 preemption_notifier.cc:90] SIGTERM caught at 2026-11-25",
        "[Gloo] Rank [Gloo] Rank 5 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7",
        "6 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7",
        "step 2",
    ]
    assert tail(lines) == ["step 1", "step 2"]
    assert tail([str(i) for i in range(20)], 3) == ["17", "18", "19"]


def test_a_killed_process_is_named_with_its_last_output():
    result = LaunchResult(
        processes=(proc(0, -9, ["x"], stopped=True), proc(1, -9, ["ready", "    @ 0x1 f()"])),
        port=1,
        seconds=1.0,
        failed=1,
    )
    assert result.exit_code == 137 and not result.ok
    assert failure_message(result) == (
        "launch: process 1 died (signal 9, SIGKILL), so process 0 was stopped. Fix: something "
        "outside the program killed it (kill -9, or the system's out-of-memory killer); its last "
        "output is below.\nlast output of process 1:\n  [p1] ready"
    )


def test_a_collective_mismatch_is_explained_from_any_process():
    gloo = (
        "  what():  [enforce fail at pair.cc:459] 4 vs 2. Received data size doesn't match "
        "expected size. Is there a distributed collective mismatch in your code?"
    )
    result = LaunchResult(
        processes=(proc(0, 1, ["Terminating process because ..."]), proc(1, -6, [gloo])),
        port=1,
        seconds=1.0,
        failed=0,
    )
    message = failure_message(result)
    assert message is not None
    assert message.startswith(
        "launch: process 0 exited with code 1 (process 1 died (signal 6, SIGABRT) too). Cause: "
        "the processes ran different programs: one "
        "collective's sizes differ between them (jax aborted: gloo received a different number of "
        'bytes than it expected) (process 1 wrote "what():  [enforce fail at pair.cc:459] 4 vs 2.'
    )
    assert 'mismatch in your code?"). Fix: make every process build the same shapes' in message
    # Both are quoted: the one seen to fail first, and the one whose output holds the cause.
    assert message.endswith(
        "last output of process 0:\n  [p0] Terminating process because ...\n"
        f"last output of process 1:\n  [p1] {gloo}"
    )
    assert result.exit_code == 1


def test_a_timeout_names_the_processes_still_running():
    result = LaunchResult(
        processes=(
            proc(0, -9, ["summing"], stopped=True),
            proc(1, 0, ["done"]),
            proc(2, -9, [], stopped=True),
        ),
        port=1,
        seconds=20.0,
        timed_out=True,
        still_running=(0, 2),
    )
    message = failure_message(result, 20)
    assert message is not None
    assert message.startswith(
        "launch: process 0 and process 2 still ran after the 20 s timeout and were stopped "
        "(process 1 had finished)"
    )
    assert message.endswith("last output of process 0:\n  [p0] summing\nprocess 2 wrote nothing")
    assert result.exit_code == 124


def test_success_has_no_message():
    result = LaunchResult(processes=(proc(0, 0, []), proc(1, 0, [])), port=1, seconds=1.0)
    assert result.ok and result.exit_code == 0 and failure_message(result) is None
