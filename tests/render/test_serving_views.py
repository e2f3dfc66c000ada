"""Serving views on hand-built model objects: text and HTML agree, user strings escaped,
the chart draws the HBM line."""

from __future__ import annotations

from dataclasses import replace

from shardviz.analysis.detect.serving import by_hand
from shardviz.model.findings import Finding, FindingCost, Where
from shardviz.model.serving import (
    ServingCollective,
    ServingComparison,
    ServingResult,
    SliceChoice,
    SliceTried,
)

GiB = 1024**3

RESULT = ServingResult(
    strategy="tp", mode="decode", target="v5e:2x4", chips=8,
    mesh=(("data", 1), ("sequence", 1), ("tensor", 8)), batch=32, context=8192,
    weight_dtype="int8", cache_dtype="int8", weight_bytes=8 * GiB, kv_bytes=5 * GiB,
    working_bytes=GiB // 2, argument_bytes=13 * GiB, hbm_bytes=16 * GiB, kv_copies=1,
    weight_copies=1, collectives=(ServingCollective("all-reduce", ("tensor",), 161, 147 << 20, 1e-3),),
    flops=1e12, memory_seconds=0.0175, compute_seconds=0.003, collective_seconds=0.001,
    step_seconds=0.0175, bound="memory", tokens_per_second_per_chip=228.3,
    latency_seconds=0.0175, max_batch=49,
    sweep=((1, 9 * GiB, 10.0), (32, 13 * GiB, 228.0), (64, 18 * GiB, 300.0)),
    context_sweep=((512, 8 * GiB, 300.0), (8192, 13 * GiB, 228.0)),
)  # fmt: skip
COMPARISON = ServingComparison(
    model="<llama>", num_params=70_553_706_496, kv_bytes_per_token=163_840,
    weight_bytes_total=70_553_706_496,
    results=(RESULT, replace(RESULT, strategy="dp", kv_copies=2, weight_bytes=70 * GiB)),
    findings=(Finding("kv-replicated", "warning", "cache <copied>", "why", FindingCost("memory", GiB),
                      Where(leaf="KV cache", strategy="<dp>"), unfixed=by_hand("use 'tp'")),),
)  # fmt: skip


def test_text_shows_each_strategys_figures_and_the_findings():
    text = str(COMPARISON)
    assert "KV cache 163,840 B per token" in text
    assert "8 GiB" in text and "5 GiB" in text and "512 MiB" in text
    assert "17.5 ms" in text and "228" in text and "49" in text
    assert "161 (147 MiB)" in text
    assert "(x2 copies)" in text
    # the findings as print(report.findings) draws a program's, the strategy named
    assert "1. warning · kv-replicated · cache <copied>" in text
    assert "strategy     <dp>" in text and "memory per device: 1 GiB" in text
    assert "fix          none offered: make it by hand" in text  # wrapped under 100 columns:
    assert "use 'tp'" in " ".join(text.split())


def test_html_escapes_user_strings_and_marks_the_row_over_hbm():
    html = COMPARISON._repr_html_()
    assert "&lt;llama&gt;" in html and "<llama>" not in html
    assert "cache &lt;copied&gt;" in html and "&lt;dp&gt;" in html and "<dp>" not in html
    assert 'class="sv-finding' in html and 'data-kind="kv-replicated"' in html
    rows = html.split('class="sv-serving-row"')[1:]
    assert "fde2e1" not in rows[0] and "fde2e1" in rows[1]  # dp: 70 GiB of weights > 16 GiB


def test_the_chart_draws_one_line_per_strategy_and_the_hbm_line():
    html = COMPARISON._repr_html_()
    # two strategies x (bytes, tokens/s) x (against batch, against context)
    assert html.count("<polyline") == 8
    assert html.count('class="sv-hbm"') == 2 and "HBM 16 GiB" in html
    assert "bytes per device against context" in html
    # the largest batch that fits, one dot per strategy on memory against batch
    assert html.count('class="sv-max-batch"') == 2 and "largest batch that fits 49" in html


def test_slice_choice_text_and_html():
    s = SliceChoice(
        model="llama3.1-70b", chip="v5e", slice="v5e:2x4", chips=8, weight_dtype="int8",
        cache_dtype="int8", batch=1, context=8192, weight_bytes=70 * 10**9, kv_bytes=10**9,
        hbm_bytes_per_chip=16 * GiB, room_sequences=49,
        tried=(SliceTried("v5e:2x2", 4, 18 * 10**9, 16 * GiB),
               SliceTried("v5e:2x4", 8, 9 * 10**9, 16 * GiB)),
        checked="decode step compiled for v5e:2x4: fits",
    )  # fmt: skip
    text = str(s)
    assert "v5e:2x4 (8 chips)" in text and "room for 49 sequences" in text
    assert "tried v5e:2x2" in text and "too small" in text and "holds it" in text
    assert "compiled for v5e:2x4: fits" in s._repr_html_()


def test_a_serving_comparison_round_trips_through_json():
    assert ServingComparison.from_json(COMPARISON.to_json()) == COMPARISON


def test_html_cells_hold_one_figure_each_and_every_mark_is_keyed():
    """At 1280 px with the file browser open (a 794 px output column) no cell wraps: the HBM
    every row shares is in the total's header, cells never wrap; the pink row and the chart's
    dashed line and dots are said in words where they appear."""
    html = COMPARISON._repr_html_()
    assert "total of HBM 16\u00a0GiB" in html and "/ 16 GiB" not in html
    assert "white-space:nowrap}" in html.split(".sv-serving td{", 1)[1].split("</style>")[0]
    assert "its total does not fit one chip's HBM" in html  # dp's row is pink
    assert "HBM 16 GiB per device" in html and "the largest batch that fits it" in html
    fits = replace(COMPARISON, results=COMPARISON.results[:1])
    assert "does not fit one chip" not in fits._repr_html_()
    # Two HBM sizes: each total names its own.
    mixed = replace(COMPARISON, results=(RESULT, replace(RESULT, strategy="dp", hbm_bytes=GiB)))
    assert "/ 16 GiB" in mixed._repr_html_() and "/ 1 GiB" in mixed._repr_html_()


def test_chart_labels_stay_inside_their_panel_and_clear_of_the_dots():
    """The notebook's sweeps (batch to 2,048, context to 32,768) once drew '204(' and '3276'
    cut at the panel's edge, and the dots over the 'HBM 16 GiB' label. Widths are taken at
    0.61 em a character, wider than the sans-serif the chart uses."""
    import re

    wide = replace(
        RESULT,
        max_batch=2048,
        sweep=tuple((2**k, (9 + k) * GiB // 2, 10.0 * k) for k in range(12)),
        context_sweep=tuple((2**k, 13 * GiB, 228.0) for k in range(9, 16)),
    )
    html = replace(COMPARISON, results=(wide,))._repr_html_()
    panels = re.findall(r"<svg[^>]*>.*?</svg>", html)
    assert len(panels) == 4
    for svg in panels:
        width = float(re.search(r'width="([\d.]+)"', svg).group(1))
        for x, text in re.findall(r'<text x="([\d.]+)"[^>]*text-anchor="middle">([^<]+)<', svg):
            half = len(text) * 10 * 0.61 / 2
            assert float(x) - half >= 0 and float(x) + half <= width, (text, x, width)
        label = re.search(r'class="sv-hbmlabel[^"]*" x="([\d.]+)" y="([\d.]+)">([^<]+)<', svg)
        if label is None:
            continue
        lx, ly, words = float(label.group(1)), float(label.group(2)), label.group(3)
        right = lx + len(words) * 10 * 0.61
        for cx, cy in re.findall(r'class="sv-max-batch" cx="([\d.]+)" cy="([\d.]+)"', svg):
            apart_x = float(cx) + 3.5 < lx or float(cx) - 3.5 > right
            apart_y = float(cy) - 3.5 > ly or float(cy) + 3.5 < ly - 10
            assert apart_x or apart_y, (words, cx, cy)


def test_a_mixture_of_experts_reads_and_all_to_alls_are_said_in_text_html_and_json():
    from shardviz.model.serving import ExpertReads

    reads = ExpertReads(experts=8, experts_per_token=2, tokens=8, touched=7.2, layers=2,
                        bytes_per_expert=48 << 20, experts_per_device=1, tokens_per_expert=8,
                        touched_per_device=0.9, held_bytes=GiB, read_bytes=9 * GiB // 10)  # fmt: skip
    ep = replace(RESULT, strategy="ep", experts=reads, collectives=(
        ServingCollective("all-to-all", ("data",), 64, 3 << 20, 1e-4),))  # fmt: skip
    moe = replace(COMPARISON, model="<moe>", results=(ep,), findings=())
    text = str(moe)
    said = " ".join(text.split())
    assert "8 x (1 - (1 - 2/8)^8) = 7.2 of the 8 experts" in said
    # 7.2 touched x 2 layers x 48 MiB each, of 8 x 2 x 48 MiB
    assert "each 48 MiB of weights: 691.2 MiB read per step over 2 layers, of 768 MiB" in said
    assert (
        "ep: 1 expert per layer, each seeing 8 tokens: 0.9 touched, 921.6 MiB of the 1 GiB" in said
    )
    assert "64 all-to-all over data (3 MiB) per step" in said
    assert all(len(line) < 100 for line in text.split("\n") if "expert" in line)
    html = moe._repr_html_()
    assert 'class="sv-experts"' in html and "64 all-to-all over data (3 MiB)" in html
    assert "&lt;moe&gt;" in html and "<moe>" not in html
    back = ServingComparison.from_json(moe.to_json())
    assert back.results[0].experts == reads
    assert "expert" not in str(COMPARISON)  # a dense model says nothing of experts
