"""Every figure the Explorer shows of a report is one the report's text or HTML shows, written
the same way (issue 43): a number the widget spells differently, or that only the widget
has, is a second computation of it. Checked on every fixture report the render tests draw,
over the whole of the Explorer's state (tooltips included)."""

from __future__ import annotations

import html
import json
import re

import pytest

from shardviz.model.units import format_bytes
from shardviz.render.report.html import report_html
from shardviz.render.report.text import report_text
from shardviz.widgets.explorer.payload import report_payload
from tests.render.report_fixtures import REPORTS
from tests.render.test_units_agree import FIGURE

#: A byte count written exactly (``17,179,869,184 B``), the hover form of a figure the views
#: round (``16 GiB``).
EXACT = re.compile(r"^([\d,]+) B$")


def _stray(shown: set[str], static: set[str]) -> list[str]:
    """The figures of ``shown`` the static views do not show, the exact form of a byte
    count they show rounded aside."""
    out = []
    for figure in sorted(shown - static):
        exact = EXACT.match(figure)
        if exact and format_bytes(int(exact.group(1).replace(",", ""))) in static:
            continue
        out.append(figure)
    return out


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_every_figure_the_explorer_shows_is_in_the_reports_text_or_html(name: str) -> None:
    report = REPORTS[name]()
    shown = set(FIGURE.findall(json.dumps(report_payload(report), ensure_ascii=False)))
    static = set(FIGURE.findall(report_text(report)))
    static |= set(FIGURE.findall(html.unescape(report_html(report))))
    assert shown and _stray(shown, static) == []


def test_the_check_sees_a_figure_only_the_widget_has() -> None:
    assert _stray({"1.5 KiB", "3 ms"}, {"1.5 KiB"}) == ["3 ms"]
    assert _stray({"1,536 B", "2,000,000 B"}, {"1.5 KiB"}) == ["2,000,000 B"]
