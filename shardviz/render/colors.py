"""One colour per device, the same in every view.

Hues step by the golden angle, so devices with nearby ids get clearly different hues; the
lightness stays high, so dark text reads on every colour.
"""

from __future__ import annotations

import colorsys
from functools import lru_cache

GOLDEN_ANGLE = 137.50776405003785
#: Text colour used on device colours (all of them are light).
DARK_TEXT = "#1b1f24"
LIGHT_TEXT = "#ffffff"

# Lightness and saturation cycle slowly, so ids whose hues happen to land close together
# still differ in shade.
_LIGHTNESS = (0.80, 0.72, 0.86)
_SATURATION = (0.62, 0.55, 0.70)


@lru_cache(maxsize=8192)
def device_color(device_id: int) -> str:
    """The fill colour of a device, as ``#rrggbb``.

    Args:
        device_id: the device's id (``Device.id``); any integer works.

    Returns:
        A light colour, deterministic for the id.
    """
    hue = (device_id * GOLDEN_ANGLE) % 360.0 / 360.0
    step = (device_id // 3) % 3
    r, g, b = colorsys.hls_to_rgb(hue, _LIGHTNESS[step], _SATURATION[step])
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _rgb(color: str) -> tuple[int, ...]:
    """The red, green and blue of a ``#rrggbb`` colour, 0-255."""
    value = color.lstrip("#")
    return tuple(int(value[i : i + 2], 16) for i in (0, 2, 4))


def _luminance(color: str) -> float:
    """Relative luminance (WCAG) of a ``#rrggbb`` colour."""
    channels = [c / 255 for c in _rgb(color)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def text_color_for(background: str) -> str:
    """Dark or white text, whichever reads better on ``background`` (``#rrggbb``)."""
    lum = _luminance(background)
    contrast_dark = (lum + 0.05) / (_luminance(DARK_TEXT) + 0.05)
    contrast_light = 1.05 / (lum + 0.05)
    return DARK_TEXT if contrast_dark >= contrast_light else LIGHT_TEXT


#: Foreground (bars, text) and background colour of each collective kind, in every view.
KIND_COLORS = {
    "all-reduce": ("#0969da", "#ddf4ff"),
    "all-gather": ("#1a7f37", "#dafbe1"),
    "reduce-scatter": ("#bc4c00", "#fff1e5"),
    "all-to-all": ("#8250df", "#fbefff"),
    "collective-permute": ("#1b7c83", "#d8f3f6"),
}
#: The colours of any other kind.
OTHER_KIND = ("#57606a", "#f6f8fa")
#: The colour of compute (every op that is not a collective) on a timeline.
COMPUTE_COLOR = "#afb8c1"

#: Link load, light to dark: a grey ramp, apart from every mesh axis's and collective kind's
#: hue, so a busy link never reads as an axis's ring (the physical view draws both).
LOAD_LIGHT = "#c4ccd4"
LOAD_DARK = "#1f2328"
#: A link that carries nothing.
IDLE_LINK = "#eaeef2"


def load_color(share: float) -> str:
    """The colour of a link carrying ``share`` (0-1) of the busiest link's bytes."""
    share = min(1.0, max(0.0, share))
    light, dark = _rgb(LOAD_LIGHT), _rgb(LOAD_DARK)
    return "#" + "".join(
        f"{round(a + (b - a) * share):02x}" for a, b in zip(light, dark, strict=True)
    )
