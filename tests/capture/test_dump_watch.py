"""Work on the sharding dumps started during the compile is used only for the final texts."""

import threading
import time
from pathlib import Path

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from shardviz.capture import hlo
from shardviz.capture.compile import EarlyResults
from shardviz.capture.dump_watch import PARTITIONED as PARTITIONED_PATTERN
from shardviz.capture.dump_watch import PROPAGATED as PROPAGATED_PATTERN
from shardviz.capture.dump_watch import YIELDING_NICE, DumpWatch
from shardviz.explainer import explain as ex

PROPAGATED = "module_0001.f.0000.x.after_dce.before_spmd-partitioning.txt"
PARTITIONED = "module_0001.f.0001.x.after_spmd-partitioning.before_dce.txt"
SHARDINGS = (PROPAGATED_PATTERN, PARTITIONED_PATTERN)
MODULE = "HloModule m\n\nENTRY %main () -> f32[] {\n  ROOT %c = f32[] constant(1)\n}\n"


def _watch_until_read(folder: Path, work) -> tuple[DumpWatch, threading.Event]:
    """A started watch whose work signals when it has run."""
    ran = threading.Event()

    def signalling(propagated: str, partitioned: str):
        try:
            return work(propagated, partitioned)
        finally:
            ran.set()

    return DumpWatch(str(folder), [(SHARDINGS, signalling)]).start(), ran


def test_the_work_runs_on_the_texts_once_the_partitioned_dump_is_whole(tmp_path):
    (tmp_path / PROPAGATED).write_text("before " + MODULE)
    (tmp_path / PARTITIONED).write_text("after " + MODULE)
    watch, ran = _watch_until_read(tmp_path, lambda a, b: (a[:6], b[:5]))
    assert ran.wait(10)
    assert watch.finish() == [("before", "after")]
    assert watch.finish() == [("before", "after")]  # finishing again gives the same


def test_a_yielding_watch_runs_below_the_compile(tmp_path):
    """A yielding watch works at a lower priority than the compile (nice on its own thread
    alone), another at the caller's, and the caller's is kept."""
    import os

    (tmp_path / PROPAGATED).write_text(MODULE)
    (tmp_path / PARTITIONED).write_text(MODULE)
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def nice(*texts):
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    for yielding, want in ((True, min(before + YIELDING_NICE, 19)), (False, before)):
        watch = DumpWatch(str(tmp_path), [(SHARDINGS, nice)], yielding).start()
        deadline = time.monotonic() + 10
        while watch._done[0] is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert watch.finish() == [want]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before  # ours kept


def test_a_cpu_compile_yields_and_a_tpu_compile_does_not():
    from shardviz.capture.compile import _yields
    from shardviz.capture.topology import topology

    def f(x):
        return x * 2

    x = jax.numpy.ones((8,))
    assert _yields(jax.jit(f).lower(x))
    chips = np.array(topology("v5e:2x2").devices)
    mesh = jax.sharding.Mesh(chips, ("d",))
    spec = jax.ShapeDtypeStruct((8,), x.dtype, sharding=NamedSharding(mesh, P()))
    assert not _yields(jax.jit(f).lower(spec))


def test_a_result_for_texts_that_changed_since_is_dropped(tmp_path):
    (tmp_path / PROPAGATED).write_text(MODULE)
    (tmp_path / PARTITIONED).write_text(MODULE)
    watch, ran = _watch_until_read(tmp_path, lambda a, b: "read")
    assert ran.wait(10)
    (tmp_path / PARTITIONED).write_text(MODULE + "\n// more, written after the read\n}\n")
    assert watch.finish() == [None]


def test_an_unfinished_module_is_not_read(tmp_path):
    (tmp_path / PROPAGATED).write_text(MODULE)
    (tmp_path / PARTITIONED).write_text(MODULE[:40])  # no closing brace yet
    calls = []
    watch = DumpWatch(str(tmp_path), [(SHARDINGS, lambda a, b: calls.append(b))]).start()
    watch._stop.wait(0.05)
    assert watch.finish() == [None] and calls == []


def test_no_dump_or_failing_work_gives_nothing(tmp_path):
    assert DumpWatch(str(tmp_path), [(SHARDINGS, lambda a, b: "never")]).start().finish() == [None]
    (tmp_path / PROPAGATED).write_text(MODULE)
    (tmp_path / PARTITIONED).write_text(MODULE)

    def fails(a, b):
        raise ValueError("a format the work cannot read")

    watch, ran = _watch_until_read(tmp_path, fails)
    assert ran.wait(10)
    assert watch.finish() == [None]


def _program():
    mesh = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices()[:8])
    w = jax.device_put(np.ones((16, 32), np.float32), NamedSharding(mesh, P(None, "model")))
    x = jax.device_put(np.ones((8, 16), np.float32), NamedSharding(mesh, P("data", None)))

    def step(w, x):
        return jax.grad(lambda w: ((x @ w) ** 2).mean())(w)

    return step, (w, x)


def test_a_report_read_early_is_the_report_read_after_the_compile():
    step, args = _program()
    comp = ex.compile_program(step, args, {})
    work = ex._early_reading(comp.lowered)
    assert work is not None
    early = work.shardings(comp.propagated_text, comp.partitioned_text)
    assert early.intermediates and early.global_cost
    comp.early = EarlyResults(shardings=early)
    read_early = ex.analyse_program(step, args, comp)
    comp.early = EarlyResults()
    read_after = ex.analyse_program(step, args, comp)
    assert read_early.intermediates == read_after.intermediates
    assert read_early.collectives == read_after.collectives
    assert read_early.cost == read_after.cost and read_early.cost.ops == read_after.cost.ops
    assert read_early.cost == read_after.cost


def test_an_early_reading_for_another_device_order_is_not_used():
    step, args = _program()
    comp = ex.compile_program(step, args, {})
    early = ex._early_reading(comp.lowered).shardings(comp.propagated_text, "")
    comp.early = EarlyResults(
        shardings=ex._EarlyReading(
            mesh=early.mesh,
            device_ids=tuple(reversed(early.device_ids)),
            partitioned=(),
            global_cost={"flops": -1.0},
        )
    )
    report = ex.analyse_program(step, args, comp)
    assert report.intermediates and report.cost.flops_global != -1.0


def test_a_cpu_programs_final_module_is_read_while_llvm_compiles(monkeypatch):
    """The CPU compiler dumps its final module before LLVM compiles the kernels (most of a
    CPU compile): the ledger, every collective's reason and the per-op cost are worked out
    on the thread meanwhile, and are what reading after the compile gives.

    Whether the thread (at a lower priority) gets there before the compile ends depends on
    the machine's load (CI once ran it out), so here the watch lets it finish its stages
    before stopping it: what is checked is what the thread computes, not the race."""
    from shardviz.capture.compile import _stages
    from shardviz.capture.jax_compat import cpu_final_dump

    finish = DumpWatch.finish

    def after_the_last_stage(self, read=None):
        if self._results is None:
            self._thread.join(timeout=120)  # ends after its last stage: every file is written
        return finish(self, read)

    monkeypatch.setattr(DumpWatch, "finish", after_the_last_stage)
    step, args = _program()
    comp = ex.compile_program(step, args, {})
    stages = dict(_stages(comp.lowered, ex._early_reading(comp.lowered)))
    if cpu_final_dump() is None:  # jax 0.12: the CPU's dump is not its compiled module
        assert list(stages) == ["shardings"]
        return
    assert list(stages) == ["shardings", "final"]
    final = comp.early.final
    assert final is not None and final.final and final.reasoned is not None
    assert comp.early.cost is not None and comp.early.cost.ops  # the per-op cost too
    # The dumped module is the compiled one (its backend configs' keys in another order).
    assert hlo.collectives(comp.compiled.as_text()) == hlo.collectives(comp.hlo_text)
    assert final.whole  # a CPU program: the thread's ledger is the report's
    read_early = ex.analyse_program(step, args, comp)
    assert read_early.collectives is final.reasoned
    assert read_early.intermediates is comp.early.shardings.lines
    comp.early = EarlyResults()
    comp._module = None
    read_after = ex.analyse_program(step, args, comp)
    assert [c.why for c in read_early.collectives] == [c.why for c in read_after.collectives]
    assert read_early.collectives == read_after.collectives
    assert read_early.intermediates == read_after.intermediates
    assert read_early.cost == read_after.cost and read_early.cost.ops == read_after.cost.ops
