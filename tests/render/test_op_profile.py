"""The op profile's views, drawn from a profile built by hand: text structure, HTML escaped."""

from __future__ import annotations

from shardviz.model.op_profile import OpProfile, ProfiledOp, ProfileGroup
from shardviz.render.op_profile import (
    op_profile_html,
    op_profile_page,
    op_profile_text,
    op_profile_view,
)

EVIL = "<script>alert(1)</script>"


def _profile(measured: bool = True) -> OpProfile:
    ops = (
        ProfiledOp("fusion.1", "fusion", "attention", f"layer {EVIL}", 4, 8e9, 2e6, 3e-3,
                   6e-3 if measured else None, op_name=f"jit(step)/{EVIL}/dot_general"),
        ProfiledOp("fusion.2", "fusion", "other", "top level", 1, 0.0, 1e6, 1e-3,
                   2e-3 if measured else None),
    )  # fmt: skip
    return OpProfile(
        function=f"step{EVIL}",
        target="TPU v5e 2x2",
        ops=ops,
        modules=(
            ProfileGroup("attention", 1, 8e9, 2e6, 3e-3, 6e-3 if measured else None, 4),
            ProfileGroup("other", 1, 0.0, 1e6, 1e-3, 2e-3 if measured else None),
        ),
        layers=(
            ProfileGroup(f"layer {EVIL}", 1, 8e9, 2e6, 3e-3, 6e-3 if measured else None, 4),
            ProfileGroup("top level", 1, 0.0, 1e6, 1e-3, 2e-3 if measured else None),
        ),
        seconds=4e-3,
        exposed_seconds=0.0,
        flops=8e9,
        hbm_bytes=3e6,
        measured_seconds=8e-3 if measured else None,
        notes=(f"a note about {EVIL}",),
    )


def test_text_lists_modules_layers_and_ops():
    text = op_profile_text(_profile())
    lines = text.splitlines()
    assert lines[0].startswith("step<script>")
    for title in ("By module:", "By layer:", "The 2 costliest ops:"):
        assert title in lines
    module_lines = lines[lines.index("By module:") + 1 : lines.index("By layer:")]
    assert module_lines[0].split() == [
        "module", "predicted", "share", "flops", "HBM", "bytes", "measured", "share", "ratio",
    ]  # fmt: skip
    assert module_lines[2].split()[:2] == ["attention", "(1"]
    assert "75.0%" in module_lines[2] and "2x" in module_lines[2]  # 3 of 4 ms; 6 ms over 3
    assert "other (1 op)" in text  # never hidden
    assert "fusion.1 x4" in text  # its runs per step
    assert all(len(line) < 100 for line in lines)


def test_without_a_measurement_no_measured_columns():
    text = op_profile_text(_profile(measured=False))
    assert "measured" not in text and "ratio" not in text
    assert op_profile_view(_profile(measured=False)).columns[-1] == "HBM bytes"


def test_html_escapes_every_user_string():
    for html in (op_profile_html(_profile()), op_profile_page(_profile())):
        assert EVIL not in html
        assert "&lt;script&gt;" in html
    html = op_profile_html(_profile())
    assert html.count('class="sv-op-table"') == 3
    assert 'data-group="module"' in html and 'data-name="layer &lt;script&gt;' in html


def test_the_view_is_plain_data_for_the_explorer():
    data = op_profile_view(_profile()).to_data()
    assert data["modules"][0][0] == "attention (1 op)"
    assert data["ops"][0][-2:] == ["attention", f"layer {EVIL}"]
