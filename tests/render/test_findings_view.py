"""One view of the findings, computed once: the text, the HTML and the Explorer's pane read
the same :class:`FindingsView`, so a finding's words cannot differ between them."""

from __future__ import annotations

import dataclasses

from shardviz.model import Findings
from shardviz.render.findings.html import findings_html
from shardviz.render.findings.text import findings_text
from shardviz.render.findings.view import findings_view
from shardviz.widgets.findings_payload import findings_payload
from tests.render.findings_fixtures import findings, megatron_with_findings


def test_text_and_html_render_the_view_they_are_given():
    found = findings()
    view = findings_view(found)
    assert findings_text(view) == findings_text(found)
    assert findings_html(view) == findings_html(found)
    # A view changed by hand shows up in both: they read nothing else.
    renamed = dataclasses.replace(view, count="COUNT WORDS")
    assert "COUNT WORDS" in findings_text(renamed) and "COUNT WORDS" in findings_html(renamed)


def test_the_panes_words_are_the_views():
    report = megatron_with_findings()
    view = findings_view(report.findings)
    payload = findings_payload(report)
    assert payload["count_text"] == view.count
    assert payload["counts"] == [[s, n] for s, n in view.counts]
    for item, f in zip(payload["items"], view.items, strict=True):
        assert (item["title"], item["cost"], item["no_fix"]) == (f.title, f.cost, f.no_fix)
        assert item["where"] == [[r.label, r.text] for r in f.where]
        if f.check is not None:
            assert item["check"]["rows"] == [
                [r.key, r.label, r.before, r.after, r.before != r.after] for r in f.check.rows
            ]


def test_untried_fixes_are_said_the_same_way_everywhere():
    (first, *_) = findings()
    untried = Findings(
        "f", (dataclasses.replace(first, fix=None, check=None, untried=True),), untried=1
    )
    view = findings_view(untried)
    assert view.untried and view.items[0].no_fix.startswith("not tried yet")
    text = " ".join(findings_text(untried).split())  # as words: the text view wraps lines
    assert view.untried in text and view.items[0].no_fix in text
    payload = findings_payload(megatron_with_findings(untried))
    assert payload["notes"][0] == view.untried
    assert payload["items"][0]["no_fix"] == view.items[0].no_fix
