"""Notebook 10's numbers add up and its words match what the library prints (issue 40).

Without running the notebook: its prose is read from the file, and the programs of sections 2
and 3 are compiled at the notebook's sizes (8 fake CPU devices), so that the totals the prose
explains are checked against their parts (the check cells check the same in the notebook)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.model.findings import PROGRAM_FINDING_KINDS
from tests.explainer.diagnose.planted import regather_program, replicated_program

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "10_debugging_a_spec.ipynb"


def _cells() -> list[tuple[str, str]]:
    """(cell type, source) of every cell."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return [(c["cell_type"], "".join(c["source"])) for c in cells]


def _prose() -> str:
    return "\n".join(s for kind, s in _cells() if kind == "markdown")


def _code() -> str:
    return "\n".join(s for kind, s in _cells() if kind == "code")


def test_the_recap_names_every_kind_of_finding_and_no_count_goes_stale() -> None:
    recap = next(s for kind, s in _cells() if kind == "markdown" and s.startswith("## Recap"))
    kinds_bullet = next(b for b in recap.split("\n- ") if "kinds of finding" in b.lower())
    named = set(re.findall(r"`([a-z-]+)`", kinds_bullet))
    assert named == set(PROGRAM_FINDING_KINDS)
    # The printed list says how many kinds it checked for; the prose names no count of its own.
    assert not re.search(r"(ten|\d+) kinds it checked for", _prose())


def test_the_capped_search_is_capped_as_the_prose_says() -> None:
    prose, code = _prose(), _code()
    said = re.search(r"capped at\s+(\w+) plans \(`max_plans=(\d+)`\)", prose)
    assert said is not None
    words = {"ten": 10, "twelve": 12, "eight": 8}
    assert words[said.group(1)] == int(said.group(2))
    assert f"max_plans={said.group(2)}," in code
    # Section 13's first search has a cap too, so both try the same plans on any machine.
    assert code.count("max_plans=") == 2


def test_every_time_the_prose_states_was_filled_in() -> None:
    assert "TIME_" not in _prose()
    intro = _cells()[0][1]
    assert re.search(r"about \d+ s together on a 2-core laptop", " ".join(intro.split()))


def test_section_2s_flops_are_the_last_matmul_whole_then_an_eighth() -> None:
    forward, (params, x) = replicated_program()
    m = params["w3"].sharding.mesh
    split = {**params, "w3": jax.device_put(params["w3"], NamedSharding(m, P("data", None)))}
    before = sv.explain(forward, params, x, run=False)
    after = sv.explain(forward, split, x, run=False)
    matmul, eighth = 2 * 64 * 256 * 256, 2 * 64 * 256 * 256 // 8
    assert before.cost.flops_per_device == matmul + 2 * eighth
    assert after.cost.flops_per_device == 3 * eighth + 64 * 256  # + the all-reduce's adds
    # The bytes moved: a gather of h (56 KiB) gives way to an all-reduce of the output (112 KiB).
    kinds = [(c.kind, c.moved_bytes) for c in before.collectives]
    assert ("all-reduce", 112 * 1024) in [(c.kind, c.moved_bytes) for c in after.collectives]
    assert kinds.count(("all-gather", 56 * 1024)) == 2
    moved = [sum(c.moved_bytes for c in r.collectives) for r in (before, after)]
    assert moved[1] - moved[0] == (112 - 56) * 1024


def test_section_3s_trade_off_is_its_ledgers_sums() -> None:
    step, (w, x) = regather_program()
    (regather,) = sv.diagnose(step, w, x).of("regather")
    b, a = regather.check.before, regather.check.after
    m = w.sharding.mesh

    def gathered_once(w, x):
        return step(jax.lax.with_sharding_constraint(w, NamedSharding(m, P(None, None))), x)

    fixed = sv.explain(gathered_once, w, x, run=False)
    # The verdict's totals are the fixed program's ledger and memory, summed.
    assert a.moved_bytes == sum(c.moved_bytes * (c.trips or 1) for c in fixed.collectives)
    assert a.peak_bytes == fixed.memory.peak_bytes
    assert Counter(c.kind for c in fixed.collectives) == {"all-gather": 1, "all-reduce": 3}
    # ... and its percentages are those totals' changes.
    moved = f"({a.moved_bytes / b.moved_bytes - 1:+.2%})"
    peak = f"({a.peak_bytes / b.peak_bytes - 1:+.1%})"
    assert regather.check.verdict.endswith(peak) and moved in regather.check.verdict
    assert "at the cost of peak" in regather.check.verdict
