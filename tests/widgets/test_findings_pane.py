"""The Findings pane's state without a widget or a browser: it syncs the findings' own view
object, and what each finding lights up points at what the shown report holds."""

from __future__ import annotations

import dataclasses
import json

import pytest

from shardviz.model import Finding, FindingCost, Findings, Fix, Where
from shardviz.model.findings import PROGRAM_FINDING_KINDS
from shardviz.render.findings.html import SEVERITY_COLORS
from shardviz.render.findings.view import check_rows, cost_str, count_str, where_rows
from shardviz.widgets.explorer.findings_pane import (
    FINDINGS_VERSION,
    NO_TRY_WORDS,
    NOT_DIAGNOSED_WORDS,
    error_json,
    findings_json,
    findings_pending,
    findings_state,
    fix_route,
    pending_json,
)
from shardviz.widgets.explorer.payload import report_payload
from tests.explainer.diagnose import planted
from tests.render.findings_fixtures import (
    findings,
    megatron_with_findings,
    nasty_findings,
    no_findings,
)
from tests.render.report_fixtures import NASTY, dp_report
from tests.without_jax import run_without_jax


def _items(state: dict) -> list[dict]:
    """Each finding of the pane: its view's words with its links (``route``, ``how``,
    ``highlight``) and its ``index``."""
    items = state["view"]["items"] if state["view"] else []
    return [
        {**item, **link, "index": i}
        for i, (item, link) in enumerate(zip(items, state["links"], strict=True))
    ]


def _pointing(**where) -> Finding:
    return Finding(
        kind="reshard-chain",
        severity="warning",
        title="dot.7 is moved there and back",
        why="because",
        cost=FindingCost("moved", 4096),
        where=Where(**where),
    )


def test_highlights_are_ledger_positions_array_ids_and_devices_the_report_has():
    # dp_report: 3 collectives, arguments params.w1 … batch.y, intermediates dot.1 … dot.9,
    # a 2x4 mesh of devices 0-7. #9, nope.1 and d99 are not in it: left out.
    f = _pointing(
        collectives=(1, 3, 9), values=("dot.7", "nope.1", "dot.9"), leaf="batch.x",
        devices=(3, 2, 99),
    )  # fmt: skip
    report = dataclasses.replace(dp_report(), findings=Findings("train_step", (f,)))
    (item,) = _items(findings_state(report))
    assert item["highlight"] == {
        "collectives": [0, 2],
        "leaf": "arg:batch.x",
        "values": ["mid:dot.7", "mid:dot.9"],
        "arrays": ["arg:batch.x", "mid:dot.7", "mid:dot.9"],
        "devices": [2, 3],
    }
    # The ids are the report payload's own, so the front end finds each one.
    ids = {a["id"] for a in report_payload(report)["arrays"]}
    assert set(item["highlight"]["arrays"]) <= ids


def test_a_leaf_that_names_a_value_points_at_the_intermediate():
    f = _pointing(leaf="dot.7", values=("dot.7",))
    report = dataclasses.replace(dp_report(), findings=Findings("train_step", (f,)))
    highlight = _items(findings_state(report))[0]["highlight"]
    assert highlight["leaf"] == "mid:dot.7" and highlight["arrays"] == ["mid:dot.7"]


def test_the_words_are_the_findings_views_words():
    report = megatron_with_findings()
    p = findings_state(report, generation=4, boxes=("w1",))
    assert p["version"] == FINDINGS_VERSION and p["generation"] == 4 and p["state"] == "done"
    view = p["view"]
    assert view["count"] == count_str(report.findings) == "3 findings: 1 error, 1 warning, 1 info"
    assert view["counts"] == [["error", 1], ["warning", 1], ["info", 1]]
    assert p["severity_colors"] == {s: list(c) for s, c in SEVERITY_COLORS.items()}
    assert view["notes"] == list(report.findings.notes)
    for i, (item, f) in enumerate(zip(_items(p), report.findings, strict=True)):
        assert item["index"] == i
        assert (item["kind"], item["severity"], item["title"], item["why"]) == (
            f.kind, f.severity, f.title, f.why,
        )  # fmt: skip
        assert item["cost"] == cost_str(f.cost)
        assert item["where"] == [{"label": r.label, "text": r.text} for r in where_rows(f.where)]
        if f.check is not None:
            rows = [
                {"key": r.key, "label": r.label, "before": r.before, "after": r.after}
                for r in check_rows(f.check)
            ]
            assert item["check"]["rows"] == rows
            assert item["check"]["verdict"] == f.check.verdict
    over_hbm, loop, idle = _items(p)
    assert over_hbm["cost"] == "memory per device: 21 GiB"
    assert over_hbm["fix"]["code"] == report.findings[0].fix.code
    # 21 GiB -> 9 GiB is the only figure the fix changed.
    changed = [r["key"] for r in over_hbm["check"]["rows"] if r["before"] != r["after"]]
    assert changed == ["peak"]
    assert over_hbm["check"]["word"] == "helps"
    assert (
        idle["fix"] is None and idle["check"] is None and idle["no_fix"].startswith("none offered")
    )
    assert idle["highlight"]["devices"] == [4, 5, 6, 7]


def test_each_fix_says_how_this_explorer_would_try_it():
    report = megatron_with_findings()
    without = _items(findings_state(report))
    assert [i["route"] for i in without if i["fix"]] == ["", ""]
    assert without[0]["how"] == NO_TRY_WORDS
    assert [i["how"] for i in without if not i["fix"]] == [""]
    # params/w1 has a box: its spec goes there; the loop's constraint is compiled as a program.
    boxed = _items(findings_state(report, boxes=("params/w1", "x")))
    assert boxed[0]["route"] == "box"
    assert boxed[0]["how"] == "sets the params/w1 box to the new spec and recompiles"
    assert boxed[1]["route"] == "program"


@pytest.mark.parametrize(
    ("fix", "boxes", "route"),
    [
        (Fix("spec", "d", "c", leaf="a", spec=((), ("model",))), ("a",), "box"),
        (Fix("spec", "d", "c", leaf="b", spec=((), ("model",))), ("a",), "program"),
        (Fix("mesh", "d", "c", mesh_shape=(1, 8)), ("a",), "mesh"),
        (Fix("mesh", "d", "c", mesh_shape=(1, 8)), (), "mesh"),
        (Fix("constraint", "d", "c", leaf="a", spec=((),)), ("a",), "program"),
        (Fix("drop-constraint", "d", "c", line="t.py:3"), ("a",), "program"),
        (Fix("spec", "d", "c", leaf="a", spec=((),)), None, ""),
        (Fix("mesh", "d", "c", mesh_shape=(1, 8)), None, ""),
    ],
)
def test_fix_route(fix, boxes, route):
    assert fix_route(fix, boxes) == route


def test_no_findings_not_diagnosed_pending_and_error():
    none_found = dataclasses.replace(dp_report(), findings=no_findings())
    p = findings_state(none_found)
    assert (p["state"], p["view"]["count"], p["view"]["items"]) == ("done", "no findings", [])
    assert p["view"]["checked"].startswith(f"checked for {len(PROGRAM_FINDING_KINDS)} kinds")
    assert p["checked"] == p["view"]["checked"] and p["links"] == []
    p = findings_state(dp_report())  # explained with diagnose=False
    assert (p["state"], p["words"], p["view"]) == ("none", NOT_DIAGNOSED_WORDS, None)
    p = json.loads(pending_json(7))
    assert (p["state"], p["generation"], p["view"], p["links"]) == ("pending", 7, None, [])
    p = json.loads(error_json(7, "CompileError: <b>"))
    assert p["state"] == "error" and p["words"].endswith("CompileError: <b>")


def test_user_strings_are_inert_json_and_come_back_unchanged():
    report = megatron_with_findings(nasty_findings())
    text = findings_json(report)
    assert "<" not in text and ">" not in text and "&" not in text
    (item,) = json.loads(text)["view"]["items"]
    assert item["title"] == f"title {NASTY}" and item["fix"]["code"] == f"code {NASTY}"
    assert json.loads(text)["view"]["notes"] == [f"note {NASTY}"]


def test_pending_means_fixes_not_tried_yet_and_the_pane_says_so():
    untried = Findings("mlp_block", items=(findings()[0],), untried=2, trial="t")
    assert findings_pending(untried)
    assert not findings_pending(findings()) and not findings_pending(None)
    state = findings_state(megatron_with_findings(untried))
    assert state["view"]["untried"].startswith("fixes not tried yet for 2 findings")
    assert not findings_pending(dataclasses.replace(untried, untried=0))


def test_the_pane_module_needs_no_jax():
    out = run_without_jax(
        """
        import json
        from tests.render.findings_fixtures import megatron_with_findings
        from shardviz.widgets.explorer.findings_pane import findings_json
        print(len(json.loads(findings_json(megatron_with_findings()))["view"]["items"]))
        """
    )
    assert out.strip() == "3"


# --------------------------------------------------------------------------------------------
# On planted mistakes, compiled for real


def test_a_reshard_chain_lights_up_its_two_moves_and_the_values_they_carry():
    report = planted.reshard_chain()
    items = _items(findings_state(report, boxes=("x",)))
    item = next(i for i in items if i["kind"] == "reshard-chain")
    f = report.findings.of("reshard-chain")[0]
    assert item["highlight"]["collectives"] == [n - 1 for n in f.where.collectives] == [0, 1]
    assert all(report.collectives[k].reshard for k in item["highlight"]["collectives"])
    assert item["highlight"]["values"] == [f"mid:{v}" for v in f.where.values]
    assert item["fix"]["kind"] == "drop-constraint" and item["route"] == "program"
    assert item["check"]["word"] == "helps"
    # The remat of the argument is fixed by its spec, which the x box can take.
    remat = next(i for i in items if i["highlight"]["leaf"] == "arg:x")
    assert remat["kind"] == "involuntary-remat" and remat["route"] == "box"


def test_an_idle_axis_is_tried_with_the_mesh_shape():
    report = planted.idle_axis()
    (item,) = _items(findings_state(report, boxes=("w", "x")))
    assert item["kind"] == "idle-axis" and item["route"] == "mesh"
    assert item["how"] == "sets the mesh shape to 1 x 8 and recompiles"


def test_a_word_changed_in_the_view_shows_in_the_text_the_html_and_the_pane(monkeypatch):
    """The findings' words are spelled once, in their view: reword one there and the text,
    the HTML and the Explorer's pane all say the new word."""
    import shardviz.render.findings.view as view_module
    from shardviz.render.findings.html import findings_html
    from shardviz.render.findings.text import findings_text

    report = megatron_with_findings()
    spelled = view_module.cost_str
    monkeypatch.setattr(view_module, "cost_str", lambda cost: "REWORDED " + spelled(cost))
    word = "REWORDED " + spelled(report.findings[0].cost)
    assert word in " ".join(findings_text(report.findings).split())
    assert word in findings_html(report.findings)
    assert _items(json.loads(findings_json(report)))[0]["cost"] == word
