"""Serving under hostile or unlucky input: a compile the compiler refused is never "fits" nor
0 bytes; batch and context go through one set of rules (numpy integers taken, 0, -8 and 0.5
refused, naming the argument); a strategy that was not compiled says so in every view, with
no step or tokens/s; a batch that does not fit is a finding that never advises a larger one.

Reduced models only (two layers, small dims): each compile here takes about a second."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache

import jax.numpy as jnp
import numpy as np
import pytest

import shardviz as sv
from shardviz.analysis.detect.serving import serving_findings
from shardviz.errors import ArgumentError, ShardvizError
from shardviz.model.serving import (
    ServingCollective,
    ServingComparison,
    ServingResult,
    serving_dtype,
)
from shardviz.strategies.serving import slices
from shardviz.strategies.zoo import get_model

GiB = 1024**3
#: A reduced Llama 3.1 70B: 1.84M parameters, 2,048 B of bfloat16 cache per token.
SMALL = dict(layers=2, d_model=256, heads=8, kv_heads=8, head_dim=32, ffn=512, vocab=1024)


@cache
def _refused(batch: int = 16, context: int = 2**20) -> ServingComparison:
    """Batch 16 x 2**20 tokens: 4 GiB of cache per chip on v5e:2x4 by the byte count, but
    the TPU compiler wants 24-28 GiB of temporaries for the step and refuses it."""
    return sv.compare("llama3.1-70b", ["tp", "dp"], mode="decode", target="v5e:2x4",
                      batch=np.int64(batch), context=context, **SMALL)  # fmt: skip


# -- 1. a refused compile is never "fits" -----------------------------------------------------


def test_a_slice_whose_compile_is_refused_does_not_fit_and_counts_no_zero_bytes():
    fits, words = slices._compiled_fit(
        get_model("llama3.1-70b", **SMALL), "v5e:2x4", 16, 2**20, "bfloat16", "bfloat16"
    )
    assert fits is False
    assert "not compiled" in words and "ran out of HBM" in words
    assert words.endswith("does not fit") and "0 B" not in words


def test_smallest_slice_moves_past_a_refused_slice_and_says_why(monkeypatch):
    """32 GiB of cache: the byte count lets v5e:2x2 through first; its compile is refused
    (an uncompiled result), so v5e:2x4 is tried, and the choice's words carry the refusal."""
    refused = _refused().results[0]
    compiled = replace(refused, compiled=True, why_not_compiled="", refused_bytes=None,
                       working_bytes=GiB, argument_bytes=5 * GiB)  # fmt: skip

    def serve(m, strategy, devices, **kw):
        return refused if kw["target_name"] == "v5e:2x2" else compiled

    monkeypatch.setattr(slices, "serve", serve)
    s = sv.smallest_slice("llama3.1-70b", "v5e", batch=16, context=2**20, **SMALL)
    assert s.slice == "v5e:2x4"
    first, second = s.checked.split("; ")
    assert "v5e:2x2" in first and "not compiled" in first and first.endswith("does not fit")
    assert "ran out of HBM" in first and "0 B" not in first
    assert "v5e:2x4" in second and second.endswith(": fits")


def test_smallest_slice_with_every_compile_refused_is_an_error_naming_the_compiler(monkeypatch):
    monkeypatch.setattr(
        slices, "_compiled_fit", lambda m, name, *a: (False, f"{name}: not compiled: refused")
    )
    with pytest.raises(ShardvizError, match="the compiled decode step fits none") as err:
        sv.smallest_slice("llama3.1-70b", "v5e", batch=8, context=128, **SMALL)
    assert "Fix:" in str(err.value)


# -- 2. one set of rules for batch, context and dtype -----------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [("batch", 0), ("batch", -8), ("batch", True), ("batch", 8.0), ("batch", "8"),
     ("context", -1), ("context", 0.5), ("context", 0)],
)  # fmt: skip
def test_smallest_slice_and_compare_refuse_a_bad_batch_or_context_naming_it(name, value):
    with pytest.raises(ArgumentError, match=rf"{name}=.* is not a whole number >= 1") as err:
        sv.smallest_slice("llama3.1-70b", "v5e", check=False, **{name: value}, **SMALL)
    assert f"Fix: pass {name}=" in str(err.value)
    with pytest.raises(ArgumentError, match=rf"{name}=.* is not a whole number >= 1"):
        sv.compare("llama3.1-70b", ["tp"], mode="decode", **{name: value}, **SMALL)


def test_numpy_and_jax_integers_and_dtype_objects_are_taken():
    s = sv.smallest_slice(
        "llama3.1-70b", "v5e", batch=np.int64(8), context=np.int32(1024), dtype=jnp.bfloat16,
        check=False, **SMALL,
    )  # fmt: skip
    assert (s.batch, s.context, s.weight_dtype) == (8, 1024, "bfloat16")
    assert type(s.batch) is int and type(s.context) is int
    json.loads(s.to_json())  # plain ints: the choice still writes as JSON
    m = get_model("llama3.1-8b")
    assert m.kv_bytes_per_token(jnp.bfloat16) == m.kv_bytes_per_token("bfloat16") == 131_072
    assert m.kv_bytes_per_token(np.dtype("int8")) == 65_536
    assert m.kv_bytes_per_token(jnp.int4) == 32_768
    assert serving_dtype(jnp.zeros(2, jnp.int8)) == "int8"
    with pytest.raises(ArgumentError, match="not a serving dtype"):
        m.kv_bytes_per_token(jnp.float32)


def test_a_cache_past_what_any_array_holds_is_refused_before_any_compile():
    with pytest.raises(ArgumentError, match="the largest size shardviz counts"):
        sv.smallest_slice("llama3.1-70b", "v5e", batch=2**40, context=2**40, **SMALL)


def test_strategies_as_a_string_and_several_targets_have_their_own_words():
    with pytest.raises(ArgumentError, match=r"is a string.*strategies=\['tp'\]"):
        sv.compare("llama3.1-70b", "tp", mode="decode", **SMALL)
    with pytest.raises(ArgumentError, match="not a serving strategy"):
        sv.compare("llama3.1-70b", ["tp", "fsdp"], mode="decode", **SMALL)
    with pytest.raises(ArgumentError, match=r"names 2 targets.*target='v5e'") as err:
        sv.compare("llama3.1-70b", ["tp"], mode="decode", target=["v5e", "h100"], **SMALL)
    assert "no preset" not in str(err.value)


# -- 3. an uncompiled strategy is shown as such, everywhere -----------------------------------


def _no_figures(r: ServingResult) -> None:
    assert not r.compiled and r.why_not_compiled
    assert r.step_seconds is None and r.tokens_per_second_per_chip is None
    assert r.working_bytes is None and r.max_batch is None and r.sweep == ()
    assert r.fits is False


def test_a_refused_strategy_has_no_step_and_every_view_says_not_compiled():
    c = _refused()
    for r in c.results:
        _no_figures(r)
        assert type(r.batch) is int and r.batch == 16  # np.int64(16) taken as 16
        assert r.refused_bytes and r.refused_bytes > r.hbm_bytes
    for view in (c, ServingComparison.from_json(c.to_json())):
        text = str(view)
        assert "not compiled" in text and "ran out of HBM" in text
        assert " ms " not in text and "tokens/s" not in text.split("Notes")[1]
        html = view._repr_html_()
        assert html.count("<td>not compiled</td>") == 2 * 4  # working, collectives, step, tok/s
        assert "no chart: tp: not compiled" in html
    fig = c.figure()
    words = [a.text for a in fig.layout.annotations if a.name == "empty"]
    assert words and "not compiled" in words[0] and "name a target" not in words[0]
    # the findings: each strategy over HBM, by the compiler's figure, never "raise the batch"
    assert [f.kind for f in c.findings] == ["over-hbm", "over-hbm"]
    assert all(f.cost.bytes > 0 for f in c.findings)
    assert "raise the batch" not in text


def test_a_mixed_comparison_draws_lines_for_the_compiled_and_names_the_other():
    base = _refused().results[0]
    compiled = replace(
        base, strategy="dp", compiled=True, why_not_compiled="", refused_bytes=None,
        working_bytes=GiB, argument_bytes=5 * GiB, step_seconds=0.01, memory_seconds=0.01,
        compute_seconds=0.001, collective_seconds=0.0, bound="memory",
        tokens_per_second_per_chip=100.0, latency_seconds=0.01, max_batch=32,
        sweep=((8, 5 * GiB, 50.0), (16, 6 * GiB, 100.0)), context_sweep=((1024, 5 * GiB, 99.0),),
    )  # fmt: skip
    c = ServingComparison("m", 1_443_072, 2048.0, 3 << 20, (base, compiled))
    text = str(c)
    assert "(1.44M parameters" in text and "0.0 B parameters" not in text
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("tp "))
    assert row.count("not compiled") == 4 and "none" not in row
    html = c._repr_html_()
    assert 'sv-not-compiled">&#9633; tp: not compiled (no line)' in html
    assert html.count("<polyline") == 4  # dp's lines only
    fig = c.figure()
    assert [a.name for a in fig.layout.annotations if a.name == "not-compiled"]
    assert not [t for t in fig.data if getattr(t, "meta", None) and t.meta["strategy"] == "tp"]
    mpl = c.matplotlib_figure()
    assert any("tp: not compiled" in t.get_text() for t in mpl.texts)


# -- 3b. a batch that does not fit --------------------------------------------------------------


def test_a_batch_far_past_hbm_is_not_compiled_and_the_findings_say_it_does_not_fit():
    """batch=2**40: the TPU compiler aborts the process on such arrays, so the step is not
    handed over; every strategy is over HBM and no finding advises a larger batch."""
    c = _refused(batch=2**40, context=128)
    for r in c.results:
        _no_figures(r)
        assert "alone take" in r.why_not_compiled
    assert {f.kind for f in c.findings} == {"over-hbm"}
    assert all(f.severity == "error" for f in c.findings)
    assert "raise the batch" not in str(c)


def test_a_compiled_batch_over_hbm_is_an_error_finding_and_no_larger_batch_is_advised():
    r = _refused().results[0]
    over = replace(
        r, compiled=True, why_not_compiled="", working_bytes=50 * 2**50, bound="collectives",
        step_seconds=9.0, collective_seconds=9.0, memory_seconds=1.0, compute_seconds=1.0,
        collectives=(ServingCollective("all-reduce", ("tensor",), 4, GiB, 9.0),),
        max_batch=0, tokens_per_second_per_chip=1.0,
    )  # fmt: skip
    found = serving_findings([over])
    assert [f.kind for f in found] == ["over-hbm", "collective-bound"]
    assert found[0].severity == "error" and "does not fit" in found[0].title
    assert all("raise the batch" not in (f.unfixed or "") for f in found)
