"""Numbers become words in one place (``shardviz.model.units``): every figure a view prints as
text is in its HTML too, written the same way, and no view uses decimal byte units or "us"."""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

import pytest

from shardviz.model import units
from tests.render import compare_fixtures, report_fixtures
from tests.render.findings_fixtures import findings

#: A figure with its unit: ``1.5 MiB``, ``98,304 B``, ``407 µs``, ``2.15 GFLOP``.
FIGURE = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)? ?"
    r"(?:B|KiB|MiB|GiB|TiB|PiB|s|ms|µs|ns|kFLOP|MFLOP|GFLOP|TFLOP|PFLOP|FLOP)(?![\w])"
)
#: What one report must never print: decimal byte units, or microseconds as "us".
FOREIGN = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)? ?(?:kB|MB|GB|TB|us)(?![\w])")


def _figures(text: str) -> set[str]:
    return set(FIGURE.findall(text))


def _html_text(fragment: str) -> str:
    """The HTML's words and its attributes' (hover titles), styles left out."""
    return html.unescape(re.sub(r"<style>.*?</style>", " ", fragment, flags=re.S))


REPORTS = [
    "dp_report",
    "fsdp_report",
    "megatron_report",
    "compile_only_report",
    "profile_report",
    "dp_v5e_report",
    "fsdp_h100_report",
    "deviceless_v5e_report",
]


@pytest.mark.parametrize("name", REPORTS)
def test_a_reports_text_and_html_show_the_same_figures(name: str) -> None:
    report = getattr(report_fixtures, name)()
    text, page = str(report), _html_text(report._repr_html_())
    shown = _figures(text)
    assert shown, "the fixture prints figures"
    assert shown <= _figures(page), sorted(shown - _figures(page))
    assert not FOREIGN.findall(text) and not FOREIGN.findall(page)


@pytest.mark.parametrize(
    "shown",
    [compare_fixtures.comparison(), compare_fixtures.comparison_targets(), findings()],
    ids=["comparison", "comparison on targets", "findings"],
)
def test_comparisons_and_findings_show_the_same_figures_in_both(shown) -> None:
    text, page = str(shown), _html_text(shown._repr_html_())
    assert _figures(text) <= _figures(page), sorted(_figures(text) - _figures(page))
    assert not FOREIGN.findall(text) and not FOREIGN.findall(page)


@pytest.mark.parametrize(
    ("n", "words"),
    [
        (512, "512 B"),
        (1536, "1.5 KiB"),
        (64 * 2**20, "64 MiB"),
        (21.34 * 2**30, "21.3 GiB"),
        (16 * 2**30, "16 GiB"),
        (1535.6, "1.5 KiB"),
    ],
)
def test_bytes_are_binary_with_one_decimal(n: float, words: str) -> None:
    assert units.format_bytes(n) == words


def test_seconds_flops_and_percentages() -> None:
    assert [units.format_seconds(s) for s in (2.5, 1.04e-3, 3.77e-4, 1.2e-8, 0)] == [
        "2.5 s",
        "1.04 ms",
        "377 µs",
        "12 ns",
        "0 s",
    ]
    assert units.format_flops(2.15e9) == "2.15 GFLOP" and units.format_flops(None) == "n/a"
    assert [units.format_percent(x) for x in (0.455, 0.0307, 1.0, 0)] == [
        "45.5%",
        "3.07%",
        "100%",
        "0%",
    ]


#: ``format_*`` functions elsewhere: they write structures (a spec, an index, a shape), not
#: numbers, so they live with what they write.
STRUCTURE_WORDS = {
    "model/array.py": {"format_spec", "format_index"},
    "capture/spec_text.py": {"format_spec_text"},
    "render/geometry.py": {"format_shape"},
}


def test_no_module_but_units_defines_a_number_formatter() -> None:
    """Every ``format_*`` function that turns a number into words is in ``units.py``: one
    place to read how a loss, a step time, an MFU or a byte count is written."""
    package = Path(units.__file__).parents[1]
    strays = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        if where == "model/units.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            name = getattr(node, "name", "")
            allowed = STRUCTURE_WORDS.get(where, set())
            if (
                isinstance(node, ast.FunctionDef)
                and name.startswith("format_")
                and name not in allowed
            ):
                strays.append(f"{where}: {name}")
    assert strays == []


def test_losses_step_times_mfus_and_differences() -> None:
    assert [units.format_loss(v) for v in (2.345678, None, float("nan"))] == [
        "2.346", "not finite", "not finite",
    ]  # fmt: skip
    assert [units.format_ms(v) for v in (0.4217, 12.34, 812.4)] == ["0.42", "12.3", "812"]
    assert [units.format_mfu(v) for v in (0.455, None)] == ["45.5%", "unknown"]
    assert [units.format_diff(v) for v in (0.0, 1.19e-07)] == ["0", "1.19e-07"]
    assert [units.format_float_bytes(v) for v in (1536.4, None)] == ["1.5 KiB", "n/a"]
