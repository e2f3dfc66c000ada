"""The schedule's plotly figure: one bar per slot and idle unit on the stages x time grid, the
measured slots on a seconds axis, activation bytes per stage, the bubble in the title."""

from __future__ import annotations

import pytest

from shardviz.model.schedule import Schedule, gpipe, one_f_one_b
from shardviz.render.schedule.html import IDLE_FILL, slot_fill

from .schedule_fixtures import KEPT, MEASURED_BUBBLE, T0, profiled, wide

go = pytest.importorskip("plotly.graph_objects")

from shardviz.render.schedule.plotly import panels, schedule_figure  # noqa: E402


def _by_name(fig) -> dict:
    return {t.name: t for t in fig.data}


@pytest.mark.parametrize(("make", "S", "M"), [(gpipe, 2, 3), (one_f_one_b, 4, 8), (gpipe, 3, 1)])
def test_one_bar_per_slot_and_idle_unit(make, S: int, M: int) -> None:
    s = make(S, M)
    fig = schedule_figure(s)
    assert isinstance(fig, go.Figure)
    assert [t.name for t in fig.data] == ["idle", "forward", "backward"]
    traces = _by_name(fig)
    fwd, bwd, idle = traces["forward"], traces["backward"], traces["idle"]
    assert all(t.type == "bar" and t.orientation == "h" for t in fig.data)
    assert len(fwd.x) == len(bwd.x) == S * M  # 2 * S * M slot shapes
    # GPipe and 1F1B both run 2 (M + S - 1) units: the rest of the grid is idle.
    assert len(idle.x) == S * 2 * (M + S - 1) - 2 * S * M
    assert set(fwd.x) == set(bwd.x) == set(idle.x) == {1}  # each one time unit wide
    # Every slot at its stage and time, in its microbatch's colour, labelled F<m> / B<m>.
    for trace, phase in ((fwd, "F"), (bwd, "B")):
        slots = [x for x in s.slots if x.phase == phase]
        assert list(trace.base) == [x.time for x in slots]
        assert list(trace.y) == [f"stage {x.stage}" for x in slots]
        assert list(trace.marker.color) == [slot_fill(x) for x in slots]
        assert list(trace.text) == [f"{phase}{x.microbatch}" for x in slots]
    assert idle.marker.color == IDLE_FILL
    assert fig.layout.barmode == "overlay"
    assert list(fig.layout.yaxis.categoryarray) == [f"stage {i}" for i in range(S)]
    assert fig.layout.yaxis.autorange == "reversed"  # stage 0 on top
    assert tuple(fig.layout.xaxis.range) == (0, s.length)


def test_bubble_numbers_by_hand() -> None:
    # S=2, M=3: theory (S-1)/(M+S-1) = 1/4; the grid is 2 x 8 with 12 slots: 4/16 = 1/4 idle.
    fig = schedule_figure(gpipe(2, 3))
    meta = fig.layout.meta
    assert meta["theory"] == pytest.approx(1 / 4) and meta["bubble"] == pytest.approx(4 / 16)
    assert meta["measured"] is None and meta["panels"] == ["schedule"]
    title = fig.layout.title.text
    assert title.startswith("gpipe pipeline · 2 stages × 3 microbatches · GSPMD · no checkpointing")
    assert "bubble 25.0% idle in the schedule · theory (S-1)/(M+S-1) = 1/4 = 25.0%" in title
    assert "measured" not in title
    meta = schedule_figure(one_f_one_b(4, 8)).layout.meta
    assert meta["theory"] == pytest.approx(3 / 11) == meta["bubble"]


def test_measured_and_activation_panels() -> None:
    s = profiled()
    assert panels(s) == ["schedule", "measured", "activation"]
    fig = schedule_figure(s)
    assert [t.name for t in fig.data] == [
        "idle",
        "forward",
        "backward",
        "measured forward",
        "measured backward",
        "activation memory",
    ]
    traces = _by_name(fig)
    mf, mb = traces["measured forward"], traces["measured backward"]
    assert mf.xaxis == "x2" and mf.yaxis == "y2"
    assert len(mf.x) + len(mb.x) == len(s.measured) == 2 * 2 * 3
    # Seconds from the first measured slot: a slot at time t starts t ms after it.
    for trace, phase, seconds in ((mf, "F", 0.6e-3), (mb, "B", 0.9e-3)):
        timed = [m for m in s.measured if m.phase == phase]
        assert list(trace.base) == pytest.approx([m.start - T0 for m in timed])
        assert list(trace.x) == pytest.approx([seconds] * len(timed))
    assert min(mf.base) == 0
    sub = [a.text for a in fig.layout.annotations]
    assert "Measured 12 slots over 7.9 ms · illustrative: CPU devices share the host's cores" in sub
    act = traces["activation memory"]
    assert act.xaxis == "x3" and list(act.x) == [2 * KEPT, KEPT]  # 1F1B: 2 then 1 in flight
    assert list(act.text) == [
        "2 microbatches × 3.1 MiB = 6.2 MiB",
        "1 microbatch × 3.1 MiB = 3.1 MiB",
    ]
    meta = fig.layout.meta
    assert meta["measured"] == MEASURED_BUBBLE and meta["theory"] == pytest.approx(1 / 4)
    title = fig.layout.title.text
    assert title.startswith("1f1b pipeline · 2 stages × 3 microbatches · shard_map · checkpointed")
    assert "measured 37.5% idle on the devices (illustrative, on CPU)" in title
    real = [a.text for a in schedule_figure(profiled("gpu")).layout.annotations]
    assert "Measured 12 slots over 7.9 ms · real: measured on gpu devices" in real


def test_wide_schedule_keeps_every_slot_without_labels() -> None:
    s = wide()
    fig = schedule_figure(s)
    assert panels(s) == ["schedule"]  # a measured bubble alone draws no measured panel
    fwd = _by_name(fig)["forward"]
    assert len(fwd.x) == 4 * 64 and fwd.text is None
    assert "measured 7.1% idle on the devices" in fig.layout.title.text


def test_figure_method_and_no_network() -> None:
    s = profiled()
    assert s.figure().to_json() == schedule_figure(s).to_json()
    blob = schedule_figure(s).to_json()
    assert "http" not in blob and "cdn" not in blob.lower()


def test_hostile_platform_is_escaped() -> None:
    import dataclasses

    s: Schedule = dataclasses.replace(profiled(), measured_platform="<b>gpu</b>")
    fig = schedule_figure(s)
    texts = [fig.layout.title.text, *(a.text for a in fig.layout.annotations)]
    assert not any("<b>gpu</b>" in x for x in texts)
    assert "real, on &lt;b&gt;gpu&lt;/b&gt;" in texts[0]
    assert any(x.endswith("real: measured on &lt;b&gt;gpu&lt;/b&gt; devices") for x in texts)
