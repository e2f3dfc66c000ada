"""The ledger's words are computed once per collective (:class:`LedgerRow`) and read by the
text, the HTML and the Explorer's payload: a row's words cannot differ between them."""

from __future__ import annotations

import dataclasses

from shardviz.render.report import view
from shardviz.widgets.explorer import payload
from tests.render.report_fixtures import dp_v5e_report, fsdp_report


def test_text_html_and_payload_print_the_rows_words(monkeypatch):
    real = view.ledger_row

    def marked(index, c, hosts):
        row = real(index, c, hosts)
        return dataclasses.replace(row, operand=f"OPERAND{index}", moved=f"MOVED{index}")

    monkeypatch.setattr(view, "ledger_row", marked)
    report = fsdp_report()
    text, html = str(report), report._repr_html_()
    items = payload.report_payload(report)["collectives"]
    for i in range(1, len(report.collectives) + 1):
        for words in (f"OPERAND{i}", f"MOVED{i}"):
            assert words in text and words in html, words
        assert items[i - 1]["operand"] == f"OPERAND{i}"
        assert items[i - 1]["moved_bytes_text"] == f"MOVED{i}"


def test_a_row_holds_what_its_collective_says():
    report = dp_v5e_report()
    rows = [row for group in view.axes_groups(report) for row in group.ledger]
    assert [r.index for r in rows] == sorted(r.index for r in rows)
    assert sorted(r.index for r in rows) == list(range(1, len(report.collectives) + 1))
    for r in rows:
        c = report.collectives[r.index - 1]
        assert r.collective is c
        assert r.estimate == view.estimate_seconds_str(c.estimated_seconds)
        assert r.across_hosts == "" and r.hosts == ""  # one host
