"""Numbers and short texts of the live training view, for people.

Numbers become words in :mod:`shardviz.model.units` (losses, step times, bytes); here are the
rest: the median step, progress, the note on step times, and the loss as JSON carries it. The
view gets them ready-made (through :mod:`shardviz.render.live.view`): live.js formats
nothing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from shardviz.model.units import format_ms


def median_step_ms(step_ms: Sequence[float]) -> float | None:
    """Median step time without the first step (which includes compiling); ``None`` if < 2."""
    return statistics.median(step_ms[1:]) if len(step_ms) > 1 else None


def json_loss(value: float) -> float | None:
    """A loss as JSON carries it: non-finite values become ``None`` (JSON has no NaN)."""
    return value if math.isfinite(value) else None


def progress_text(step: int, total_steps: int) -> str:
    """``step 3 / 100``, or ``step 3`` when the number of steps is not known."""
    return f"step {step} / {total_steps}" if total_steps else f"step {step}"


def time_note(step_ms: Sequence[float]) -> str:
    """One line on the step times: the compile step apart, the median of the others."""
    if not step_ms:
        return "no step finished yet"
    text = f"step 1 (compile): {format_ms(step_ms[0])} ms"
    med = median_step_ms(step_ms)
    if med is not None:
        steps = "step 2" if len(step_ms) == 2 else f"steps 2–{len(step_ms)}"
        text += f" · median {format_ms(med)} ms over {steps}"
    return text
