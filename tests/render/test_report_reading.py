"""Reports that read well (issue 12, section 4): intermediates folded to the reshard points,
specs on one line, the source line's code beside file:line, a ``?`` that says why, and one
cost figure for a one-device program. Both views, on hand-built reports."""

from __future__ import annotations

import dataclasses
import re

from shardviz.model import Cost, Report
from shardviz.render.report.html import report_html
from shardviz.render.report.text import report_text
from shardviz.render.report.view import (
    FOLD_ABOVE,
    folded_intermediates,
    no_source_words,
    on_one_device,
    source_words,
)

from .fixtures import make_mesh
from .report_fixtures import dp_report, large_report, megatron_report
from .test_html import Doc

LINE = 'y = h @ params["w2"] + b2'


def _with_line(report: Report, i: int = 0, text: str = LINE) -> Report:
    c = report.collectives[i]
    c = dataclasses.replace(c, source=dataclasses.replace(c.source, text=text))
    return dataclasses.replace(
        report, collectives=(*report.collectives[:i], c, *report.collectives[i + 1 :])
    )


def _rows(html: str) -> list[dict[str, str | None]]:
    return Doc(html).with_class("sv-intermediate")


# --------------------------------------------------------------------------------------------
# 1. Intermediates folded to the reshard points


def test_html_shows_the_reshard_points_first_and_the_rest_one_click_away() -> None:
    report = dp_report()
    assert len(report.intermediates) > FOLD_ABOVE
    out = report_html(report)
    table, rest = out.split('<details class="sv-irest">', 1)
    first = _rows(table[table.index("<h4>Intermediates") :])
    assert first and all(r.get("data-reshard") == "1" for r in first)
    assert len(first) == len(report.reshards)
    folded = _rows(rest.split("</details>", 1)[0])
    assert len(first) + len(folded) == len(report.intermediates)
    assert not any(r.get("data-reshard") for r in folded)
    ids = [r["id"] for r in _rows(out)]
    assert len(set(ids)) == len(ids) == len(report.intermediates)  # every anchor once
    # the folded rows keep their numbers in program order
    shown, others = folded_intermediates(report)
    assert [j for j, _ in others] == sorted(j for j, _ in others)
    kept = [item[0] for item in shown if not isinstance(item, int)]
    assert sorted(kept + [j for j, _ in others]) == list(range(1, len(report.intermediates) + 1))
    assert f"the other {len(others)} intermediates, without a reshard" in Doc(out).all_text


def test_a_few_intermediates_all_show_and_a_huge_list_keeps_its_gaps() -> None:
    small = megatron_report()
    assert len(small.intermediates) <= FOLD_ABOVE
    assert '<details class="sv-irest"' not in report_html(small)
    assert folded_intermediates(small)[1] == []
    big = large_report()
    shown, rest = folded_intermediates(big)
    assert rest == [] and any(isinstance(x, int) for x in shown)
    assert '<details class="sv-irest"' not in report_html(big)


def test_the_text_view_still_lists_every_intermediate() -> None:
    report = dp_report()
    text = report_text(report)
    for s in report.intermediates:
        assert s.name in text


def test_specs_never_wrap() -> None:
    out = report_html(dp_report())
    specs = Doc(out).with_class("sv-spec")
    assert len(specs) == len(dp_report().intermediates)
    assert re.search(r"\.sv-report code\.sv-spec[^{]*\{white-space:nowrap\}", out)
    assert "P('data', None)" in out or "P(&#x27;data&#x27;, None)" in out


# --------------------------------------------------------------------------------------------
# 3. The source line's code, and why a source is missing


def test_the_line_shows_in_the_ledger_row_and_its_details() -> None:
    report = _with_line(dp_report())
    out = report_html(report)
    row = re.search(r'<details class="sv-collective".*?</details>', out, re.S).group(0)
    summary = row.split("</summary>", 1)[0]
    assert 'class="sv-srcline"' in summary
    assert "y = h @ params[&quot;w2&quot;] + b2" in summary
    details = row.split("</summary>", 1)[1]
    assert "<br><code>y = h @ params[&quot;w2&quot;] + b2</code></li>" in details
    assert source_words(report.collectives[0].source).endswith(f" · {LINE}")
    assert f"line: {LINE}" in report_text(report)


def test_no_line_no_words() -> None:
    out = report_html(dp_report())
    assert 'class="sv-srcline"' not in out
    assert "line: " not in report_text(dp_report())


def test_a_question_mark_says_why() -> None:
    report = dp_report()
    c = dataclasses.replace(report.collectives[0], source=None)
    s = dataclasses.replace(report.intermediates[0], source=None)
    report = dataclasses.replace(
        report,
        collectives=(c, *report.collectives[1:]),
        intermediates=(s, *report.intermediates[1:]),
    )
    out = report_html(report)
    why = no_source_words()
    assert why == "no source: the compiler made this collective without a line"
    row = re.search(r'<details class="sv-collective".*?</details>', out, re.S).group(0)
    assert row.count(why) >= 2  # the row's cell and its details
    assert no_source_words("value") in out
    text = report_text(report)
    assert why in text
    assert f"  ?: {no_source_words('value')}" in text
    assert source_words(None) == why


def test_the_line_round_trips_through_json() -> None:
    report = _with_line(dp_report())
    back = Report.from_json(report.to_json())
    assert back == report and back.collectives[0].source.text == LINE
    assert report_html(back) == report_html(report)


# --------------------------------------------------------------------------------------------
# 4. One cost figure on one device


def _one_device(report: Report) -> Report:
    mesh = make_mesh(("data",), (1,))
    return dataclasses.replace(
        report,
        mesh=mesh,
        collectives=(),
        intermediates=(),
        cost=Cost(
            flops_per_device=42.5e6,
            bytes_accessed_per_device=1.5e6,
            flops_global=42.4e6,
            bytes_accessed_global=1.4e6,
        ),
    )


def test_one_device_shows_one_figure() -> None:
    report = _one_device(dp_report())
    assert on_one_device(report)
    out = report_html(report)
    cost = out[out.index("<h4>Cost") :]
    cost = cost[: cost.index("</table>")]
    assert "42.5 MFLOP" in cost and "42.4" not in cost and "global" not in cost
    assert "on the one device" in cost
    text = report_text(report)
    assert "42.5 MFLOP on the one device" in text and "42.4" not in text
    no_mesh = dataclasses.replace(report, mesh=None)
    assert on_one_device(no_mesh) and "42.4" not in report_text(no_mesh)


def test_one_device_without_a_per_device_figure_gives_the_global_one() -> None:
    report = _one_device(dp_report())
    report = dataclasses.replace(
        report, cost=dataclasses.replace(report.cost, flops_per_device=None)
    )
    assert "42.4 MFLOP on the one device" in report_text(report)


def test_many_devices_keep_both_figures() -> None:
    report = dp_report()
    assert not on_one_device(report)
    assert "global" in report_text(report)
