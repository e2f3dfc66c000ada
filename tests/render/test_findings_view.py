"""One view of the findings, computed once: the text, the HTML and the Explorer's pane read
the same :class:`FindingsView`, so a finding's words cannot differ between them."""

from __future__ import annotations

import dataclasses
import json

from shardviz.model import Findings
from shardviz.model._codec import to_data
from shardviz.render.findings.html import findings_html
from shardviz.render.findings.text import findings_text
from shardviz.render.findings.view import FindingsView, findings_view
from shardviz.widgets.explorer.findings_pane import findings_state
from tests.render.findings_fixtures import findings, megatron_with_findings


def test_text_and_html_render_the_view_they_are_given():
    found = findings()
    view = findings_view(found)
    assert findings_text(view) == findings_text(found)
    assert findings_html(view) == findings_html(found)
    # A view changed by hand shows up in both: they read nothing else.
    renamed = dataclasses.replace(view, count="COUNT WORDS")
    assert "COUNT WORDS" in findings_text(renamed) and "COUNT WORDS" in findings_html(renamed)


def test_the_pane_syncs_the_view_itself():
    report = megatron_with_findings()
    view = findings_view(report.findings)
    state = findings_state(report)
    assert state["view"] == to_data(view)
    assert FindingsView.from_json(json.dumps(state["view"])) == view
    assert len(state["links"]) == len(view.items) and state["words"] == ""


def test_untried_fixes_are_said_the_same_way_everywhere():
    (first, *_) = findings()
    untried = Findings(
        "f", (dataclasses.replace(first, fix=None, check=None, untried=True),), untried=1
    )
    view = findings_view(untried)
    assert view.untried and view.items[0].no_fix.startswith("not tried yet")
    text = " ".join(findings_text(untried).split())  # as words: the text view wraps lines
    assert view.untried in text and view.items[0].no_fix in text
    state = findings_state(megatron_with_findings(untried))
    assert state["view"]["untried"] == view.untried
    assert state["view"]["items"][0]["no_fix"] == view.items[0].no_fix
