"""The text and HTML views of a plan search, on hand-built searches (no jax)."""

from __future__ import annotations

import re

import pytest

from shardviz.model import display
from shardviz.model.search import Plan, Search
from shardviz.render.search.html import search_html, search_page
from shardviz.render.search.text import search_text
from tests.without_jax import run_without_jax

from .fixtures import mesh_2x4
from .report_fixtures import NASTY, dp_report, megatron_report

KiB = 1024


def _plan(label: str, how: str, report, **kw) -> Plan:
    specs = {
        "batch/x": (("data",), ()),
        "params/w1": ((), ("model",)),
        "opt_state/0/mu/w1": (("data",), ("model",)),
        "opt_state/0/count": (),
    }
    base = dict(
        label=label, how=how, specs=kw.pop("specs", specs), report=report,
        peak_bytes=300 * KiB, moved_bytes=96 * KiB, flops_per_device=110.0, flops_global=800.0,
        fits=True, found_seconds=1.25,
    )  # fmt: skip
    base.update(kw)
    return Plan(**base)


def search(**kw) -> Search:
    plans = (
        _plan("#2", "from #1: 'model' on every dim of size 512 (off the batch)", megatron_report()),
        _plan(
            "#1", "parameters replicated, batch split over every axis it divides", dp_report(),
            peak_bytes=2 * 1024 * KiB, moved_bytes=3 * 1024 * KiB, flops_per_device=100.0,
            specs={"batch/x": (("data", "model"), ()), "params/w1": ((), ())},
        ),
        _plan("#3", "from #2: w1 -> P('data', None)", megatron_report(), fits=False,
              peak_bytes=900 * KiB, estimated_seconds=None),
        _plan("#4", "from #2: w2 -> P(None, 'data')", None, error="the compiler rejected it",
              peak_bytes=None, moved_bytes=None),
    )  # fmt: skip
    base = dict(
        function="mlp train step", mesh=mesh_2x4(), plans=plans,
        ranking="ranked by the fewest bytes moved", memory_limit=512 * KiB,
        budget_seconds=60.0, elapsed_seconds=12.5, budget_ran_out=False, skipped=2,
        roles={"params": "params", "opt_state": "optimizer", "batch": "batch"},
        notes=("2 assignments not compiled: their arguments alone need more than 512 KiB",),
    )  # fmt: skip
    base.update(kw)
    return Search(**base)


def test_the_views_are_registered_with_the_model() -> None:
    assert display.find_view(Search, "text") is search_text
    assert display.find_view(Search, "html") is search_html
    assert display.find_view(Search, "page") is search_page
    s = search()
    assert str(s) == search_text(s)
    assert s._repr_html_() == search_html(s)


def test_best_is_the_first_plan_that_compiled_and_fits() -> None:
    s = search()
    assert s.best is s.plans[0] and s.tried == 4
    assert s.plan("#3").fits is False and s.plan("3") is s.plan("#3")
    assert search(plans=search().plans[2:]).best is None  # the first does not fit
    with pytest.raises(KeyError):
        s.plan("#9")


def test_work_ratio_is_per_device_flops_over_an_even_split() -> None:
    p = search().plans[0]
    assert p.devices == 8
    assert p.work_ratio == pytest.approx(110.0 * 8 / 800.0)
    assert _plan("#9", "", None, flops_global=None).work_ratio is None


def test_text_lists_every_plan_best_first_with_its_figures() -> None:
    text = search_text(search())
    lines = text.splitlines()
    assert lines[0] == "Plan search · mlp train step"
    assert max(len(x) for x in lines) < 100  # a notebook wraps longer lines mid-word
    flat = " ".join(x.strip() for x in lines)  # long status lines wrap at words
    assert (
        "4 plans compiled (compile-only) in 12.5 s; stopped: no move from the best plans "
        "ranked better (converged)" in flat
    )
    assert "  memory limit 512 KiB per device (peak); no target" in lines
    assert (
        "best: #2, found after 1.2 s: from #1: 'model' on every dim of size 512 "
        "(off the batch)" in flat
    )
    rows = [x for x in lines if re.match(r"\s+\d+\s+#\d", x)]
    assert [r.split()[1] for r in rows] == ["#2", "#1", "#3", "#4"]
    assert rows[0].split()[:8] == ["1", "#2", "300", "KiB", "yes", "96", "KiB", "1.10x"]
    assert rows[1].split()[2:8] == ["2", "MiB", "yes", "3", "MiB", "1.00x"]
    assert " no " in rows[2]
    assert "(failed: the compiler rejected it)" in " ".join(text.split("#4", 1)[1].split())


def test_text_shows_the_best_plans_specs_and_its_optimizer_state_where_it_differs() -> None:
    text = search_text(search())
    specs = text.split("Best plan #2: the specs")[1].split("Notes")[0]
    assert re.search(r"params/w1\s+P\(None, 'model'\)\s+P\('data', 'model'\)", specs)
    assert re.search(r"batch/x\s+P\('data', None\)\s+like the leaf", specs)
    assert "opt_state" not in specs
    assert text.endswith("2 assignments not compiled: their arguments alone need more than 512 KiB")


def test_text_says_when_the_budget_ran_out_and_when_nothing_was_compiled() -> None:
    assert "stopped: the budget of 60 s ran out" in search_text(search(budget_ran_out=True))
    empty = search_text(search(plans=()))
    assert "0 plans compiled" in empty and "nothing was left to compile" in empty
    assert "best: none" in empty and "Best plan" not in empty


def test_text_folds_plans_past_the_shown_ones() -> None:
    text = search_text(search(), shown=2)
    assert "  … 2 more plans (search.plans lists all)" in text


def test_html_marks_the_best_row_and_carries_each_plans_figures() -> None:
    html = search_html(search())
    rows = re.findall(
        r'<tr class="([^"]*)" data-plan="([^"]*)" data-rank="(\d+)" '
        r'data-fits="([^"]*)" data-peak="([^"]*)" data-moved="([^"]*)"',
        html,
    )
    assert [r[1] for r in rows] == ["#2", "#1", "#3", "#4"]
    assert rows[0][0] == "sv-plan sv-best" and rows[0][3:] == ("1", str(300 * KiB), str(96 * KiB))
    assert "sv-unfit" in rows[2][0] and rows[2][3] == "0"
    assert rows[3][4:] == ("", "")
    assert 'data-leaf="params/w1"' in html
    assert html.count('class="sv-search-note"') == 1
    assert '<details class="sv-search-report">' in html


def test_html_folds_plans_past_the_shown_ones() -> None:
    html = search_html(search(), shown=3)
    more = html.split('<details class="sv-search-more">')[1]
    assert "<summary>1 more plan</summary>" in more and 'data-plan="#4"' in more


def test_every_string_from_the_model_is_escaped() -> None:
    nasty = search(function=NASTY, notes=(NASTY,), ranking=NASTY)
    nasty = Search(**{**nasty.__dict__, "plans": (
        _plan("#1", NASTY, megatron_report(), specs={f"params/{NASTY}": ((),)}),
    )})  # fmt: skip
    html = search_html(nasty)
    assert "<script>" not in html
    assert html.count("&lt;script&gt;") >= 4
    page = search_page(nasty)
    assert page.startswith("<!doctype html>") and "<script>" not in page


def test_the_views_work_with_jax_blocked() -> None:
    out = run_without_jax(
        """
        import sys
        from tests.render.test_search_views import search
        s = search()
        assert str(s) and s._repr_html_()
        assert not any(m == "jax" or m.startswith("jax.") for m in sys.modules), "jax imported"
        print("ok")
        """
    )
    assert out.strip() == "ok"
