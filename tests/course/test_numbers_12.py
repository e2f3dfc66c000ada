"""Notebook 12's numbers agree with one another, at the notebook's own sizes.

The offload comparison of section 6 (a Llama 3.1 8B cut to 2 layers of width 128, compiled
deviceless for a v5e 2x2) and the decode comparison of section 3 (4 layers, 4 KV heads, on a
v5e 2x4): every total the notebook shows is the sum of the parts it shows beside it, the
memory bars are drawn as tall as their peak labels, the host link is said in one unit system
and hides under the part of the step that is actually longest, and no callout names the
machine's path to the library. The notebook's check cells assert the same at run time; this
test keeps them true without running the notebook.
"""

from __future__ import annotations

import os

import pytest

import shardviz as sv
from shardviz.model.units import format_bytes
from shardviz.render.compare.host import host_views, roles_str
from shardviz.render.compare.view import comparison_view, memory_parts
from shardviz.render.serving.view import columns, result_row, shared_hbm
from shardviz.strategies import get_model

#: Section 6's model, as the notebook's cell builds it.
TINY = dict(layers=2, d_model=128, heads=4, kv_heads=2, head_dim=32, ffn=256, vocab=512)
OFFLOAD = ["fsdp", "zero-offload", "act-offload", "weight-stream"]
KiB = 2**10


@pytest.fixture(scope="module")
def offload():
    return sv.compare("llama3.1-8b", OFFLOAD, target="v5e:2x2", seq=128, batch=8, **TINY)


@pytest.fixture(scope="module")
def decode():
    model = get_model("llama3.1-8b", layers=4, kv_heads=4)
    return sv.compare(
        model, ["tp", "dp+tp", "dp"], mode="decode", batch=16, context=8192,
        target="v5e:2x4",
    )  # fmt: skip


def _roles(m) -> dict[str, int]:
    return {
        "params": m.host_params, "optimizer": m.host_optimizer, "outputs": m.host_outputs,
        "offloaded": m.host_scratch, "layout padding": m.host_padding,
    }  # fmt: skip


def test_host_memory_is_the_sum_of_its_roles(offload):
    """The issue's 2,894,848 B of host memory beside roles adding to 2,300,676 B."""
    for r, h in zip(offload.results, host_views(offload), strict=True):
        roles = _roles(r.memory)
        assert sum(roles.values()) == r.memory.host, r.strategy
        # The words say the same bytes, every role with bytes and no other.
        shown = [f"{k} {format_bytes(v)}" for k, v in roles.items() if v]
        assert roles_str(h) == (" · ".join(shown) or "—")
    zoff, act = offload.result("zero-offload"), offload.result("act-offload")
    # zero-offload keeps its optimizer share on host; the plan donates it (a training loop
    # does), so the new share takes the old one's buffers: no second copy as an output.
    assert zoff.memory.host_optimizer == zoff.memory.optimizer > 0
    assert zoff.memory.host_outputs == 0 and zoff.memory.alias > 0
    # act-offload holds on host what it sends there, once (not its host temp twice).
    assert act.memory.host == act.to_host_bytes == 128 * KiB


def test_the_memory_bars_are_as_tall_as_their_peak_labels(offload):
    """The issue's bars of 6.3 MiB against a '5 MiB peak' and 9.6 against 8.7."""
    view = comparison_view(offload)
    for r, s in zip(offload.results, view.strategies, strict=True):
        parts = memory_parts(r.memory)
        assert sum(b for _, b in parts) == r.memory.peak == s.memory_total == s.peak, r.strategy
        assert all(b >= 0 for _, b in parts)
    html = offload._repr_html_()
    assert "peak (black tick)" not in html  # no bar overshoots, so no tick to explain


def test_the_host_link_reads_in_one_unit_and_hides_under_the_longest_part(offload):
    """'15 GB/s' as the hardware sheet and the notebook say it, and a communication-bound
    step hides its transfers under its communication, not 'under compute'."""
    for r in offload.results[1:]:
        e = r.report.estimate
        assert "at 15 GB/s each way" in e.host_text and "GiB/s" not in e.host_text
        parts = {"compute": e.compute_seconds, "memory": e.memory_seconds,
                 "communication": e.collective_seconds}  # fmt: skip
        assert max(parts, key=lambda k: parts[k]) == "communication"  # every step here
        assert "can hide under the step's communication" in e.host_text
        assert "under compute" not in e.host_text
        assert e.host_under == "the step's communication" and e.host_exposed_seconds == 0
    assert offload.result("act-offload").report.estimate.bound == "communication"


def test_the_reconciled_badge_says_why_and_paths_are_the_packages(offload):
    view = comparison_view(offload)
    for s in view.strategies:
        # The TPU pads small arrays to its tiles: the same surplus for all four strategies.
        assert not s.reconciled and "tiles" in s.reconcile_line
    diffs = {r.memory.arguments_from_compiler - r.memory.arguments_from_leaves
             for r in offload.results}  # fmt: skip
    assert len(diffs) == 1 and diffs.pop() > 0
    html = offload._repr_html_()
    root = os.path.dirname(os.path.dirname(os.path.abspath(sv.__file__)))
    assert root + os.sep + "shardviz" not in html
    assert "shardviz/strategies/models/decoder.py:" in html


def test_the_decode_table_totals_are_the_sum_of_their_parts(decode):
    hbm = shared_hbm(decode)
    assert hbm == 16 * 2**30 and "total of HBM 16\u00a0GiB" in columns(decode)
    for r in decode.results:
        assert r.total_bytes == r.weight_bytes + r.kv_bytes + r.working_bytes
        cells = result_row(r, hbm_in_header=True).cells
        assert cells[5] == format_bytes(r.total_bytes)  # one figure, the HBM in the header
        assert r.tokens_per_second_per_chip == r.batch / r.step_seconds / r.chips
