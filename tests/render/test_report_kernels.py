"""A program's kernels in the report's views: each counted one shown with its flops and how
they were found, each one not counted named in the cost, the estimate (no bound then) and
the HTML, never silent; every kernel string escaped."""

from __future__ import annotations

import dataclasses

from shardviz.render.report.html import report_html
from shardviz.render.report.sections import report_view
from shardviz.render.report.text import report_text

from .report_fixtures import (
    NASTY,
    QUOTES,
    dp_report,
    dp_v5e_report,
    kernels_report,
    kernels_v5e_report,
    nasty_kernels_report,
)
from .test_html import Doc
from .test_report_html import assert_offline

MISSING = (
    "3 calls of `splash_mha_bwd` not counted: flops and time for them are missing "
    "(its grid could not be read)"
)
COUNTED = "2 calls of `splash_mha_fwd` per step: counted from the kernel (blocks its mask computes)"


def _section(text: str, head: str) -> list[str]:
    """The lines of the text section that starts with ``head``."""
    block = next(b for b in text.split("\n\n") if b.startswith(head))
    return block.splitlines()


def test_cost_lists_every_kernel_and_names_the_one_not_counted() -> None:
    cost = _section(report_text(kernels_report()), "Cost per step")
    assert (
        "  kernels per device per step (1 not counted: the figures above leave its work out):"
        in cost
    )
    fwd = next(x for x in cost if x.startswith("    splash_mha_fwd"))
    assert "33.6 MFLOP · " + COUNTED in fwd
    assert "model flops 67.1 MFLOP" in fwd and "33.6 MFLOP added to the compiler's count" in fwd
    bwd = next(x for x in cost if x.startswith("    splash_mha_bwd"))
    assert bwd.endswith("not counted · " + MISSING)


def test_every_kernel_counted_says_they_are_in_the_figures() -> None:
    r = kernels_report()
    assert r.cost is not None
    counted = dataclasses.replace(r, cost=dataclasses.replace(r.cost, kernels=r.cost.kernels[:1]))
    text = report_text(counted)
    assert "kernels per device per step (their flops are in the figures above):" in text
    assert "not counted" not in text and "not a bound" not in text


def test_without_kernels_nothing_changes() -> None:
    assert "kernels" not in report_text(dp_report())
    v = report_view(dp_v5e_report())
    assert v.cost.kernels == () and v.cost.uncounted == ""
    assert v.estimate is not None and v.estimate.bounded


def test_the_estimate_says_it_is_not_a_bound_and_names_the_kernel() -> None:
    text = report_text(kernels_v5e_report())
    est = _section(text, "Estimate on ")
    assert est[0].endswith("(not a bound: 1 kernel not counted; not a measurement)")
    rows = {line.split()[0]: line for line in est[1:]}
    assert rows["step"].startswith("  step         144 µs (not a bound)")
    assert "0.651% (not a bound)" in rows["MFU"] and "≤" not in rows["MFU"]
    assert "≥" not in rows["step"]
    assert "without the uncounted kernels' flops and time" in rows["compute"]
    assert rows["kernels"].rstrip().endswith("not a bound              " + MISSING)
    # A bound as before where every kernel was counted.
    plain = _section(report_text(dp_v5e_report()), "Estimate on ")
    assert plain[0].endswith("(a lower bound, not a measurement)")
    assert not any("not a bound" in x for x in plain)


def test_html_shows_the_kernels_and_the_notice() -> None:
    out = report_html(kernels_v5e_report())
    doc = Doc(out)
    rows = doc.with_class("sv-kernel")
    assert [(r["data-kernel"], r["data-how"], r["data-counted"]) for r in rows] == [
        ("splash_mha_fwd", "counted", "1"),
        ("splash_mha_bwd", "not counted", "0"),
    ]
    assert [r["data-kernel"] for r in doc.with_class("sv-kernel-missing")] == ["splash_mha_bwd"]
    (section,) = doc.with_class("sv-estimate")
    assert section["data-bounded"] == "0"
    assert doc.with_class("sv-uncounted")
    assert f"not a bound: {MISSING}" in doc.all_text
    assert COUNTED in doc.all_text
    assert "144 µs (not a bound)" in doc.all_text
    assert "estimated step, communication-bound (not a bound: 1 kernel not counted)" in doc.all_text
    assert [a["data-part"] for a in doc.with_class("sv-est-row")][-2:] == ["kernels", "hbm"]
    # Every kernel counted, or none: no notice.
    plain = Doc(report_html(dp_v5e_report()))
    assert not plain.with_class("sv-uncounted") and not plain.with_class("sv-kernel")
    assert plain.with_class("sv-estimate")[0].get("data-bounded") is None


def test_kernel_strings_are_escaped() -> None:
    out = report_html(nasty_kernels_report())
    assert NASTY not in out and QUOTES not in out and "<script" not in out.lower()
    assert "`k&lt;script&gt;alert(1)&lt;/script&gt;a&quot;b&#x27;c&amp;d` not counted" in out
    assert 'data-kernel="k&lt;script&gt;alert(1)&lt;/script&gt;a&quot;b&#x27;c&amp;d"' in out
    assert "(why &lt;script&gt;alert(1)&lt;/script&gt; a&quot;b&#x27;c&amp;d)" in out
    doc = Doc(out)
    assert f"k{NASTY}{QUOTES}" in doc.all_text  # a reader sees the name as written
    assert_offline(out)
