"""The schedule's matplotlib figure: one rectangle per slot and idle unit, stage 0 on top, the
measured slots and activation bytes in their panels, the bubble in the title."""

from __future__ import annotations

import pytest

from shardviz.model.schedule import gpipe, one_f_one_b
from shardviz.render.schedule.html import IDLE_FILL, slot_fill

from .schedule_fixtures import KEPT, T0, profiled, wide

pytest.importorskip("matplotlib")

from matplotlib.colors import to_hex  # noqa: E402

from shardviz.render.schedule.mpl import schedule_mpl  # noqa: E402


def _patches(ax, gid: str) -> list:
    return [p for p in ax.patches if p.get_gid() == gid]


@pytest.mark.parametrize(("make", "S", "M"), [(gpipe, 2, 3), (one_f_one_b, 4, 8)])
def test_one_rectangle_per_slot(make, S: int, M: int) -> None:
    s = make(S, M)
    fig = schedule_mpl(s)
    (ax,) = fig.axes[:1]
    assert len(fig.axes) == 1  # no measured slots, no bytes per microbatch: one panel
    slots = _patches(ax, "slot")
    assert len(slots) == 2 * S * M
    assert len(_patches(ax, "idle")) == S * s.length - 2 * S * M
    # Each rectangle is one unit wide at its time, centred on its stage's row, in its colour.
    drawn = sorted((round(p.get_x()), round(p.get_y() + p.get_height() / 2), to_hex(p.get_facecolor()))
                   for p in slots)  # fmt: skip
    assert drawn == sorted((x.time, x.stage, slot_fill(x)) for x in s.slots)
    assert {round(p.get_width(), 9) for p in slots} == {1}
    assert {to_hex(p.get_facecolor()) for p in _patches(ax, "idle")} == {IDLE_FILL}
    labels = sorted(t.get_text() for t in ax.texts if t.get_gid() == "label")
    assert labels == sorted(f"{x.phase}{x.microbatch}" for x in s.slots)
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"stage {i}" for i in range(S)]
    bottom, top = ax.get_ylim()
    assert bottom > top  # stage 0 on top
    assert ax.get_xlim() == (0, s.length)


def test_title_and_bubble_by_hand() -> None:
    # S=2, M=3: (S-1)/(M+S-1) = 1/4, and 4 of the 2 x 8 units idle.
    title = schedule_mpl(gpipe(2, 3))._suptitle.get_text()
    head, bubble = title.split("\n")
    assert head == "gpipe pipeline · 2 stages × 3 microbatches · GSPMD · no checkpointing"
    assert bubble == "bubble 25.0% idle in the schedule · theory (S-1)/(M+S-1) = 1/4 = 25.0%"


def test_measured_and_activation_panels() -> None:
    s = profiled()
    fig = schedule_mpl(s)
    ax_s, ax_m, ax_a = fig.axes[:3]
    assert len(_patches(ax_s, "slot")) == 12
    measured = _patches(ax_m, "measured")
    assert len(measured) == len(s.measured) == 12
    got = sorted((round(p.get_x(), 9), round(p.get_width(), 9)) for p in measured)
    want = sorted((round(m.start - T0, 9), round(m.seconds, 9)) for m in s.measured)
    assert got == want
    assert ax_m.get_title(loc="left") == (
        "Measured 12 slots over 7.9 ms · illustrative: CPU devices share the host's cores"
    )
    bars = _patches(ax_a, "activation")
    assert [round(p.get_width()) for p in bars] == [2 * KEPT, KEPT]
    notes = [t.get_text() for t in ax_a.texts]
    assert notes == ["2 microbatches × 3.1 MiB = 6.2 MiB", "1 microbatch × 3.1 MiB = 3.1 MiB"]
    head, bubble = fig._suptitle.get_text().split("\n")
    assert head == "1f1b pipeline · 2 stages × 3 microbatches · shard_map · checkpointed"
    assert bubble.endswith("measured 37.5% idle on the devices (illustrative, on CPU)")
    real = schedule_mpl(profiled("gpu")).axes[1].get_title(loc="left")
    assert real.endswith("real: measured on gpu devices")


def test_wide_schedule_and_methods(tmp_path) -> None:
    s = wide()
    fig = s.matplotlib_figure()
    assert len(fig.axes) == 1
    assert len(_patches(fig.axes[0], "slot")) == 2 * 4 * 64
    assert not [t for t in fig.axes[0].texts if t.get_gid() == "label"]  # too narrow
    png = fig._repr_png_()
    assert png.startswith(b"\x89PNG")
    fig.savefig(tmp_path / "schedule.png")
    assert (tmp_path / "schedule.png").stat().st_size > 0
