"""Plans shipped with the package (issue 40: notebook 11's full-size Llama plan took 416 s of
CPU): a stored plan is what the live compare returns, it is read only for its own call and the
versions that made it (else compiled here), and the shipped file's figures hold together."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace

import pytest

from shardviz.errors import FileError
from shardviz.strategies import get_model
from shardviz.strategies.models.flops import training_flops
from shardviz.strategies.shipped_plans import (
    LLAMA_ON_POD,
    PACKAGE_MARK,
    PACKAGE_ROOT,
    PLAN_DIR,
    SHIPPED,
    PlanCall,
    compare_shipped,
    installed_versions,
    read_plan,
    shipped_plan,
    write_plan,
)

pytest.importorskip("libtpu")

#: Llama 3.1's architecture at toy size on a 2x2 slice: compiles in seconds.
TOY = dict(layers=2, d_model=128, heads=4, kv_heads=2, head_dim=32, ffn=256, vocab=512, seq=128)
SMALL = PlanCall.of("llama3.1-8b", ["fsdp"], "v5e:2x2", batch_per_device=1, **TOY)


def _as_compared(c) -> object:
    """``c`` as plain data less what differs from call to call: its last note (where it came
    from), the call site's frames (pytest, this file, the loader: any outside the package's
    models) and the findings' trial id."""
    models = str(PACKAGE_ROOT / "strategies")

    def strip(x):
        if isinstance(x, dict):
            out = {k: strip(v) for k, v in x.items() if k != "trial"}
            if "frames" in out:
                out["frames"] = [
                    f
                    for f in out["frames"]
                    if f["file"].startswith(models) and not f["file"].endswith("shipped_plans.py")
                ]
            return out
        return [strip(v) for v in x] if isinstance(x, list) else x

    return strip(json.loads(replace(c, notes=c.notes[:-1]).to_json()))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    directory = tmp_path_factory.mktemp("plans")
    return directory, write_plan(SMALL, directory, progress=False)


def test_a_stored_plan_equals_the_live_compare_at_a_reduced_size(written):
    directory, path = written
    shipped = compare_shipped(
        "llama3.1-8b", ["fsdp"], target="v5e:2x2", directory=directory, batch_per_device=1, **TOY
    )
    assert shipped.notes[-1].startswith("shipped plan: compiled ahead")
    live = compare_shipped(
        "llama3.1-8b", ["fsdp"], target="v5e:2x2", live=True, directory=directory,
        batch_per_device=1, **TOY,
    )  # fmt: skip
    assert live.notes[-1].startswith("compiled here (live=True)")
    assert _as_compared(shipped) == _as_compared(live)


def test_the_file_holds_the_call_and_the_versions_and_no_machine_path(written):
    _, path = written
    plan = read_plan(path)
    assert plan.call == SMALL and plan.versions == installed_versions()
    assert plan.cpu_seconds > 0 and plan.wall_seconds > 0
    text = gzip.decompress(path.read_bytes()).decode()
    assert str(PACKAGE_ROOT.parent) not in text, "no path of the machine that made it"
    assert PACKAGE_MARK in text, "sources inside the package are stored relative to it"


def test_a_plan_from_other_versions_is_refused_and_the_call_compiled_here(written, tmp_path):
    _, path = written
    record = json.loads(gzip.decompress(path.read_bytes()))
    record["versions"]["libtpu"] = "0.0.1"
    (tmp_path / path.name).write_bytes(gzip.compress(json.dumps(record).encode()))
    plan, why = shipped_plan(SMALL, tmp_path)
    assert plan is None and "libtpu 0.0.1 there" in why
    got = compare_shipped(
        "llama3.1-8b", ["fsdp"], target="v5e:2x2", directory=tmp_path, batch_per_device=1, **TOY
    )
    assert got.notes[-1].startswith("compiled here (the shipped plan was compiled by other")


def test_a_plan_for_another_call_is_refused(written, tmp_path):
    _, path = written
    other = replace(SMALL, target="v5e:2x4")
    (tmp_path / other.file_name).write_bytes(path.read_bytes())
    plan, why = shipped_plan(other, tmp_path)
    assert plan is None and why == "the shipped plan was made for another call"
    assert shipped_plan(replace(SMALL, target="v5e:4x4"), tmp_path) == (
        None,
        "no plan is shipped for this call",
    )


def test_a_file_that_is_not_a_plan_is_an_error_naming_the_fix(tmp_path):
    bad = tmp_path / SMALL.file_name
    bad.write_bytes(b"not gzip")
    with pytest.raises(FileError, match="make plans"):
        read_plan(bad)
    bad.write_bytes(gzip.compress(b'{"format": 99}'))
    with pytest.raises(FileError, match="not a plan of format 1"):
        read_plan(bad)


@pytest.mark.parametrize("call", SHIPPED, ids=lambda c: c.file_name)
def test_every_shipped_plan_is_in_the_package_for_its_call(call):
    path = PLAN_DIR / call.file_name
    plan = read_plan(path)
    assert plan.call == call
    text = gzip.decompress(path.read_bytes()).decode()
    assert "/work/" not in text and "/home/" not in text, "no path of the machine that made it"
    for k in ("jax", "jaxlib", "libtpu"):
        assert plan.versions[k], f"the {k} that compiled it is recorded"


def test_the_shipped_llama_plan_adds_up():
    """The figures notebook 11 shows from the shipped plan agree with each other and with
    what is known without compiling (the model's size, the flops formula, the chip's HBM)."""
    plan = read_plan(PLAN_DIR / LLAMA_ON_POD.file_name)
    c = plan.comparison
    (r,) = c.results
    config = get_model("llama3.1-8b").info["config"]
    assert c.num_params == get_model("llama3.1-8b").info["num_params"]
    assert r.strategy == "fsdp" and r.report.deviceless and not r.report.ran
    assert r.report.target is not None and r.report.target.name == "v5e:16x16"
    cost, e = r.report.cost, r.report.estimate
    assert cost is not None and e is not None
    # per step: every loop body counted as often as it runs, so more than the compiler's once
    assert all(lp.known for lp in cost.loops) and 32 in {lp.runs for lp in cost.loops}
    assert cost.flops_per_device > cost.compiler_flops_per_device
    formula = training_flops(config, tokens=4096, seq=4096)
    assert cost.model_flops_per_device == pytest.approx(formula.total, rel=1e-6)
    # the bound is the slowest part; fits is the peak against the chip's HBM
    assert e.step_seconds == max(e.compute_seconds, e.memory_seconds, e.collective_seconds)
    assert e.peak_bytes is not None and e.hbm_headroom_bytes == e.hbm_bytes - e.peak_bytes
    assert e.fits
    assert e.peak_bytes == r.memory.peak
    # the memory by component: arguments from the leaves add up
    m = r.memory
    assert m.params + m.optimizer + m.batch == m.arguments_from_leaves
    assert plan.cpu_seconds > 60, "the reason it is shipped: minutes of compiling"
