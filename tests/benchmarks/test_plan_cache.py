"""benchmarks/_plan_cache.py: finished plans kept on disk by run, code and compiler, and
planned in worker processes. A stand-in plan function counts what is planned."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import _plan_cache as PC  # noqa: E402

CALLS: list[str] = []


def _plan(name: str) -> dict:
    CALLS.append(name)
    return {"run": name, "seconds": len(name) * 1.5, "parts": [1, 2]}


def test_the_key_changes_with_the_run_and_with_the_code_or_compiler():
    fields = {"model": "llama3.1-8b", "topology": "v6e:16x16", "seq": 8192}
    assert PC.key_of(fields, "v1") == PC.key_of(dict(reversed(fields.items())), "v1")
    assert PC.key_of(fields, "v1") != PC.key_of({**fields, "seq": 4096}, "v1")
    assert PC.key_of(fields, "v1") != PC.key_of(fields, "v2")
    version = PC.code_version()
    assert len(version) == 64 and version == PC.code_version()


def test_a_rerun_reads_unchanged_plans_back_and_fresh_plans_again(tmp_path):
    CALLS.clear()
    items = [("8b", {"seq": 8192}), ("70b", {"seq": 8192, "remat": "offload"})]
    first = PC.run_all(items, _plan, jobs=1, folder=tmp_path)
    assert CALLS == ["8b", "70b"] and not any(hit for _, hit in first.values())
    again = PC.run_all(items, _plan, jobs=1, folder=tmp_path)
    assert CALLS == ["8b", "70b"]  # nothing planned twice
    assert {k: r for k, (r, _) in again.items()} == {k: r for k, (r, _) in first.items()}
    assert all(hit for _, hit in again.values())
    changed = [("8b", {"seq": 4096}), items[1]]
    PC.run_all(changed, _plan, jobs=1, folder=tmp_path)
    assert CALLS == ["8b", "70b", "8b"]  # only the run whose definition changed
    PC.run_all(items, _plan, jobs=1, folder=tmp_path, fresh=True)
    assert CALLS[3:] == ["8b", "70b"]


def test_a_damaged_entry_is_planned_again(tmp_path):
    CALLS.clear()
    items = [("8b", {"seq": 8192})]
    PC.run_all(items, _plan, jobs=1, folder=tmp_path)
    (entry,) = tmp_path.glob("*.json")
    entry.write_text('{"run": "8b", "seco')  # cut off mid-write
    PC.run_all(items, _plan, jobs=1, folder=tmp_path)
    assert CALLS == ["8b", "8b"]


def test_plans_run_in_worker_processes(tmp_path, monkeypatch):
    """Two workers, each a fresh (spawned) process: their results come back and are kept."""
    module = tmp_path / "stand_in_plan.py"
    module.write_text(
        textwrap.dedent(
            """
            import os

            def plan(name):
                return {"run": name, "pid": os.getpid()}
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import stand_in_plan  # type: ignore[import-not-found]

    folder = tmp_path / "plans"
    items = [(n, {"n": n}) for n in ("a", "b", "c")]
    done = PC.run_all(items, stand_in_plan.plan, jobs=2, folder=folder)
    import os

    assert sorted(done) == ["a", "b", "c"]
    assert all(r["pid"] != os.getpid() for r, _ in done.values())
    assert len(list(folder.glob("*.json"))) == 3


@pytest.mark.parametrize(("jobs", "cores", "want"), [(None, 2, 1), (None, 16, 8), (3, 2, 3)])
def test_one_worker_per_two_cores_unless_told(jobs, cores, want, monkeypatch):
    monkeypatch.setattr(PC.os, "cpu_count", lambda: cores)
    assert PC.workers(jobs) == want


def test_a_run_that_cannot_be_planned_says_why_and_is_tried_again(tmp_path):
    """One failing plan (memory, a refused topology) leaves the others planned and kept;
    its reason comes back in place of figures, and nothing is kept for it."""
    CALLS.clear()

    def plan(name: str) -> dict:
        CALLS.append(name)
        if name == "405b":
            raise MemoryError("RESOURCE_EXHAUSTED: 300 GiB\nmore detail")
        return _plan(name)

    items = [("405b", {"model": "405b"}), ("8b", {"model": "8b"})]
    done = PC.run_all(items, plan, jobs=1, folder=tmp_path)
    assert done["405b"] == ({"error": "MemoryError: RESOURCE_EXHAUSTED: 300 GiB"}, False)
    assert done["8b"][0]["run"] == "8b"
    assert len(list(tmp_path.glob("*.json"))) == 1
    again = PC.run_all(items, plan, jobs=1, folder=tmp_path)
    assert again["8b"][1] and not again["405b"][1]
    assert CALLS.count("405b") == 2


def _with_report(name: str) -> dict:
    CALLS.append(name)
    return {"run": name, "seconds": 2.0, "report": '{"ops": ["' + name * 2000 + '"]}'}


def test_a_report_is_kept_gzipped_beside_its_entry_and_read_back_with_it(tmp_path):
    CALLS.clear()
    items = [("8b", {"seq": 8192})]
    first = PC.run_all(items, _with_report, jobs=1, folder=tmp_path)
    (report,) = tmp_path.glob("*.report.json.gz")
    (entry,) = [p for p in tmp_path.glob("*.json")]
    assert report.stat().st_size < 200 < entry.stat().st_size + 200  # compressed
    again = PC.run_all(items, _with_report, jobs=1, folder=tmp_path)
    assert CALLS == ["8b"] and again["8b"][1]
    assert again["8b"][0]["report"] == first["8b"][0]["report"]
    kept = again["8b"][0]
    assert kept["commit"] and kept["version"] == PC.code_version()
    assert kept["run_key"] == PC.run_key({"seq": 8192}) and kept["planned_at"] > 0
    report.write_bytes(b"\x1f\x8b damaged")  # a damaged report: the entry is planned again
    PC.run_all(items, _with_report, jobs=1, folder=tmp_path)
    assert CALLS == ["8b", "8b"]


def test_reuse_takes_the_newest_plan_at_older_code_and_only_of_the_same_run(tmp_path, monkeypatch):
    """After a code change a run is planned again, unless ``reuse``: then its newest entry at
    any code that kept a report is taken; another run's entry never is."""
    CALLS.clear()
    items = [("8b", {"seq": 8192})]
    monkeypatch.setattr(PC, "code_version", lambda: "v1")
    PC.run_all(items, _with_report, jobs=1, folder=tmp_path)
    monkeypatch.setattr(PC, "code_version", lambda: "v2")
    PC.run_all(items, _with_report, jobs=1, folder=tmp_path, fresh=True)
    monkeypatch.setattr(PC, "code_version", lambda: "v3")
    done = PC.run_all(items, _with_report, jobs=1, folder=tmp_path, reuse=True)
    assert CALLS == ["8b", "8b"] and done["8b"][1] and done["8b"][0]["version"] == "v2"
    other = PC.run_all([("8b-16", {"seq": 4096})], _with_report, jobs=1, folder=tmp_path,
                       reuse=True)  # fmt: skip
    assert CALLS[-1] == "8b-16" and not other["8b-16"][1]
    CALLS.clear()  # an entry without a report (figures only) is not reused
    PC.run_all([("a", {"n": 1})], _plan, jobs=1, folder=tmp_path)
    monkeypatch.setattr(PC, "code_version", lambda: "v4")
    PC.run_all([("a", {"n": 1})], _plan, jobs=1, folder=tmp_path, reuse=True)
    assert CALLS == ["a", "a"]


def test_without_planning_a_run_with_no_plan_says_so(tmp_path):
    CALLS.clear()
    done = PC.run_all([("8b", {"seq": 1})], _plan, jobs=1, folder=tmp_path, plan_missing=False)
    assert CALLS == [] and done["8b"] == ({"error": PC.NOT_PLANNED}, False)


def test_a_table_made_without_planning_says_why_a_run_last_failed(tmp_path):
    """A failed plan is not kept, but its reason is, for ``plan_missing=False``; a later
    plan that succeeds clears it."""
    outcome = {"fail": True}

    def plan(name: str) -> dict:
        if outcome["fail"]:
            raise MemoryError("RESOURCE_EXHAUSTED: 39.25G of HBM")
        return _plan(name)

    items = [("70b-32", {"seq": 8192})]
    PC.run_all(items, plan, jobs=1, folder=tmp_path)
    done = PC.run_all(items, plan, jobs=1, folder=tmp_path, plan_missing=False)
    error = done["70b-32"][0]["error"]
    assert error.startswith("MemoryError: RESOURCE_EXHAUSTED: 39.25G of HBM (at ")
    outcome["fail"] = False
    PC.run_all(items, plan, jobs=1, folder=tmp_path)
    assert PC.last_failure({"seq": 8192}, tmp_path) is None


def test_on_disk_is_what_reuse_would_read_an_entry_a_reported_one_or_a_failure(tmp_path):
    """A run is on this disk when ``run_all`` with ``reuse`` would read something of it: its
    entry at this code, an entry at older code that kept its report, or its last failure;
    not an older entry of figures only, nor another run's."""
    fields = {"seq": 8192}
    assert not PC.on_disk(fields, "v1", tmp_path)
    PC.save(PC.key_of(fields, "v0"), {"run_key": PC.run_key(fields), "x": 1}, tmp_path)
    assert not PC.on_disk(fields, "v1", tmp_path)  # figures only, at other code
    PC.save(PC.key_of(fields, "v1"), {"run_key": PC.run_key(fields)}, tmp_path)
    assert PC.on_disk(fields, "v1", tmp_path)
    assert not PC.on_disk({"seq": 4096}, "v1", tmp_path)
    PC.save(PC.key_of(fields, "v0"), {"run_key": PC.run_key(fields), "report": "{}"}, tmp_path)
    assert PC.on_disk(fields, "v2", tmp_path)
    (tmp_path / f"{PC.run_key({'seq': 1})}.failed").write_text('{"error": "x"}')
    assert PC.on_disk({"seq": 1}, "v2", tmp_path)
