"""The ZeRO projection's views: text (golden), HTML fits colouring, the plotly and matplotlib
figures with the HBM capacity line.

Rewrite the goldens after an intended change with ``SHARDVIZ_UPDATE_GOLDEN=1 pytest
tests/render`` and read the diff before committing.
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path

import pytest

from shardviz.render.projection import (
    capacity,
    fits_from,
    log_byte_ticks,
    projection_html,
    projection_text,
)
from shardviz.strategies.accounting import projection_table

from .test_html import Doc
from .test_report_html import assert_offline

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE = os.environ.get("SHARDVIZ_UPDATE_GOLDEN") == "1"
GiB = 1 << 30
HBM = 80 * GiB


def rows_7p5b(hbm: int | None = HBM):
    """ZeRO's own example: 7.5B parameters, here on 8, 64 and 1024 devices, stages 0-3."""
    return projection_table([7.5e9], [8, 64, 1024], hbm_bytes=hbm)


def rows_scale():
    """A million to a trillion parameters on 8 to 4096 devices, no capacity in the rows."""
    return projection_table([1e6, 1e9, 7.5e9, 175e9, 1e12], [8, 512, 4096])


CASES = {
    "7p5b": lambda: projection_text(rows_7p5b()),
    "scale_hbm": lambda: projection_text(rows_scale(), hbm_bytes=HBM),
    "scale": lambda: projection_text(rows_scale()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_projection_text(name: str) -> None:
    text = CASES[name]() + "\n"
    path = GOLDEN / f"projection_{name}.txt"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with SHARDVIZ_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_no_stale_projection_golden_files() -> None:
    names = {p.stem.removeprefix("projection_") for p in GOLDEN.glob("projection_*.txt")}
    assert names <= set(CASES), f"goldens without a case: {sorted(names - set(CASES))}"


def test_text_has_every_stage_at_64_devices_with_zero_paper_totals() -> None:
    text = projection_text(rows_7p5b())
    rows = [line.split() for line in text.splitlines() if line.strip().startswith("7.5B  ")]
    at64 = [r for r in rows if r[1] == "64"]
    assert [r[5] for r in at64] == ["0", "1", "2", "3"]  # "7.5B 64 64 × 1 <stage>"
    # ZeRO (Rajbhandari et al.) Figure 1: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB per device.
    want_gb = [120, 31.4, 16.6, 1.9]
    got = [r.total / 1e9 for r in rows_7p5b() if r.devices == 64]
    assert [round(g, 1) for g in got] == [round(w, 1) for w in want_gb]
    assert [r[-1] for r in at64] == ["no", "yes", "yes", "yes"]
    assert "HBM capacity 80 GiB" in text
    assert "7.5B: stage 0 never · stage 1 from 8 devices" in text


def test_capacity_argument_wins_over_the_rows() -> None:
    rows = rows_7p5b(hbm=None)
    assert capacity(rows) is None
    assert capacity(rows, 16 * GiB) == 16 * GiB
    assert capacity(rows_7p5b()) == HBM
    assert capacity(rows_7p5b(), 16 * GiB) == 16 * GiB
    text = projection_text(rows)
    assert "HBM" not in text and "of HBM" not in text
    assert {line.split()[-1] for line in text.splitlines() if line.startswith("    7.5B")} == {"—"}


def test_html_cells_flag_fits() -> None:
    rows = rows_7p5b()
    out = projection_html(rows)
    cells = Doc(out).with_class("sv-prj-cell")
    assert len(cells) == len(rows)
    for a in cells:
        total = int(a["data-bytes"])
        assert a["data-fits"] == ("1" if total <= HBM else "0")
    at64 = sorted(
        (int(a["data-stage"]), a["data-fits"]) for a in cells if a["data-devices"] == "64"
    )
    assert at64 == [(0, "0"), (1, "1"), (2, "1"), (3, "1")]
    assert_offline(out)
    assert "<script" not in out.lower()


def test_html_fits_follow_the_capacity_argument() -> None:
    rows = rows_7p5b(hbm=None)
    assert {a["data-fits"] for a in Doc(projection_html(rows)).with_class("sv-prj-cell")} == {""}
    small = Doc(projection_html(rows, hbm_bytes=2 * GiB)).with_class("sv-prj-cell")
    fitting = {(a["data-devices"], a["data-stage"]) for a in small if a["data-fits"] == "1"}
    assert fitting == {("64", "3"), ("1024", "3")}


def test_html_one_table_per_model_size() -> None:
    out = projection_html(rows_scale(), hbm_bytes=HBM)
    doc = Doc(out)
    tables = [a for tag, a in doc.elements if tag == "table"]
    assert [int(a["data-params"]) for a in tables] == [
        10**6,
        10**9,
        75 * 10**8,
        175 * 10**9,
        10**12,
    ]
    assert len(doc.with_class("sv-prj-cell")) == 5 * 3 * 4


def test_fits_from_and_log_ticks() -> None:
    found = {s: d for n, _tp, s, d in fits_from(rows_scale(), HBM) if n == 175 * 10**9}
    assert found == {0: None, 1: None, 2: None, 3: 512}
    assert fits_from(rows_scale(), None) == []
    for lo, hi in [(1, 2), (1000, 3e6), (3.8e3, 2.5e13), (2**30, 2**30)]:
        ticks = log_byte_ticks(lo, hi)
        assert ticks[0] <= lo and ticks[-1] >= hi
        assert len(ticks) <= 8
        assert all(t & (t - 1) == 0 for t in ticks)  # powers of two


# --------------------------------------------------------------------------------------------
# Figures


def test_plotly_lines_and_hbm_line() -> None:
    pytest.importorskip("plotly")
    from shardviz.render.projection import projection_figure

    rows = rows_7p5b()
    fig = projection_figure(rows)
    assert len(fig.data) == 4
    assert [t.name for t in fig.data] == ["ZeRO 0", "ZeRO 1", "ZeRO 2", "ZeRO 3"]
    by_stage = {s: [r for r in rows if r.zero_stage == s] for s in range(4)}
    for s, t in enumerate(fig.data):
        assert list(t.x) == [r.devices for r in by_stage[s]]
        assert list(t.y) == [r.total for r in by_stage[s]]
        assert list(t.marker.symbol) == ["circle" if r.total <= HBM else "x" for r in by_stage[s]]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(lines) == 1
    assert lines[0].y0 == lines[0].y1 == HBM and lines[0].line.dash == "dash"
    label = [a for a in fig.layout.annotations if "HBM" in a.text]
    assert len(label) == 1 and "80 GiB" in label[0].text
    assert math.isclose(label[0].y, math.log10(HBM))
    assert "ZeRO 3" in fig.data[3].hovertemplate


def test_plotly_facets_per_model_size_and_user_capacity() -> None:
    pytest.importorskip("plotly")
    from shardviz.render.projection import projection_figure

    fig = projection_figure(rows_scale(), hbm_bytes=40 * GiB)
    assert len(fig.data) == 5 * 4
    assert sum(t.showlegend for t in fig.data) == 4  # one legend entry per stage
    assert len({t.xaxis for t in fig.data}) == 5  # one panel per model size
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(lines) == 5 and {s.y0 for s in lines} == {40 * GiB}
    assert projection_figure(rows_7p5b(hbm=None)).layout.shapes == ()


def test_matplotlib_lines_and_hbm_line() -> None:
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    from shardviz.render.projection import projection_mpl

    rows = rows_7p5b()
    fig = projection_mpl(rows)
    (ax,) = fig.axes
    data = [ln for ln in ax.get_lines() if ln.get_gid() != "hbm"]
    assert len(data) == 4
    assert [list(ln.get_ydata()) for ln in data] == [
        [r.total for r in rows if r.zero_stage == s] for s in range(4)
    ]
    hbm = [ln for ln in ax.get_lines() if ln.get_gid() == "hbm"]
    assert len(hbm) == 1 and set(hbm[0].get_ydata()) == {HBM}
    assert any("HBM 80 GiB" in t.get_text() for t in ax.texts)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=50)
    assert buf.getvalue()[:4] == b"\x89PNG"

    many = projection_mpl(rows_scale(), hbm_bytes=HBM)
    visible = [a for a in many.axes if a.get_visible()]
    assert len(visible) == 5
    assert all(len([ln for ln in a.get_lines() if ln.get_gid() == "hbm"]) == 1 for a in visible)


def test_hbm_label_spot_avoids_the_lines() -> None:
    from shardviz.render.projection import hbm_label_spot

    y_range = (2**20, 2**40)  # 1 MiB .. 1 TiB: a label is 7% of 6 decades tall
    flat_over = [(8.0, 1.3 * HBM), (1024.0, 1.3 * HBM)]  # ZeRO 0 just over HBM
    falling = [(8.0, 1e9), (1024.0, 1e7)]  # far below
    assert hbm_label_spot([falling], HBM, y_range) == ("right", "above")
    assert hbm_label_spot([flat_over, falling], HBM, y_range) == ("right", "below")
    # a line just under HBM at the right end too: the left end, where it is far below
    rising_under = [(8.0, 1e6), (1024.0, 0.8 * HBM)]
    assert hbm_label_spot([flat_over, rising_under], HBM, y_range) == ("left", "below")
    assert hbm_label_spot([], HBM, y_range) == ("right", "above")


def test_plotly_hbm_label_is_not_under_the_zero0_line() -> None:
    """Notebook 03's projection: ZeRO 0 of 7.5B is a flat line at 112 GiB, just over the
    80 GiB line; its label goes where no line passes, and reads on a white ground."""
    pytest.importorskip("plotly")
    from shardviz.render.projection import LABEL_H, LABEL_W, projection_figure

    fig = projection_figure(projection_table([1.5e9, 7.5e9, 70e9], [8, 64, 1024], hbm_bytes=HBM))
    labels = [a for a in fig.layout.annotations if a.name == "hbm"]
    assert len(labels) == 3 and all(a.bgcolor for a in labels)
    lo, hi = fig.layout.yaxis.range
    band = LABEL_H * (hi - lo)
    for k, a in enumerate(labels):
        axis = "x" if k == 0 else f"x{k + 1}"
        traces = [t for t in fig.data if t.xaxis == axis]
        right = a.xanchor == "right"
        above = a.yanchor == "bottom"
        h = math.log10(HBM)
        span = (h, h + band) if above else (h - band, h)
        for t in traces:
            ends = list(zip(t.x, t.y, strict=True))
            ends = ends[-1:] if right else ends[:1]  # the point under the label's end
            for _, y in ends:
                assert not span[0] <= math.log10(y) <= span[1], (k, t.name, a.xanchor, a.yanchor)
        assert LABEL_W < 0.5
    seven = labels[1]
    assert (seven.xanchor, seven.yanchor) != ("right", "bottom"), "under ZeRO 0's line"
