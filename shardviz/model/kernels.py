"""The kernels of a compiled program (Pallas/Mosaic, Triton, any opaque custom call), as
plain data: how often each runs per step and what shardviz could count of its work.

The compiler's cost model sees a kernel as one opaque ``custom-call``: it counts the flops
a kernel's author declared and nothing otherwise. shardviz counts the rest from the kernel
itself (see :mod:`shardviz.capture.kernel_costs`); a kernel it cannot count is named, never
left silently at zero. No jax import.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model.collective import Source
from shardviz.model.units import format_count

__all__ = ["KERNEL_HOWS", "KernelUse", "uncounted_line"]

#: How a kernel's flops were found: ``declared`` (its author's cost estimate, which the
#: compiler's own cost model uses too), ``counted`` (from the kernel's body: its matmuls
#: times the grid steps that compute), ``bounded`` (the same, where a condition could not
#: be read: every step counted, an upper bound), ``not counted`` (nothing known).
KERNEL_HOWS = ("declared", "counted", "bounded", "not counted")


@dataclass(frozen=True)
class KernelUse:
    """One kernel of the program, per device and per step (loops multiplied out).

    ``name``: the kernel's name (``splash_mha_fwd``); ``target``: the custom call's target
    (``tpu_custom_call``). ``calls``: its calls per step. ``flops``: its matmul flops per
    step as the hardware runs them (blocks a mask skips left out); ``model_flops``: the
    part the field counts as useful work (attention's matmuls in full, recomputation
    apart); both ``None`` when ``how`` is ``"not counted"``. ``added``: flops the compiler's
    cost model did not have (a kernel that declared none), which shardviz adds to the
    program's hardware flops. ``hbm_bytes``: its operands and results per step.
    """

    name: str
    target: str
    calls: int
    flops: float | None
    model_flops: float | None
    how: str
    why: str = ""
    added: float = 0.0
    hbm_bytes: float = 0.0
    source: Source | None = None

    @property
    def counted(self) -> bool:
        """Whether its flops are known (declared, counted or bounded)."""
        return self.flops is not None

    @property
    def where(self) -> str:
        """The user's line that called it, else ""."""
        f = self.source.innermost if self.source is not None else None
        return f.place if f is not None else ""

    @property
    def upper_bound(self) -> bool:
        """Whether its flops are an upper bound (``bounded``: a condition in the kernel could
        not be read, so every step was counted as if it computed)."""
        return self.how == "bounded"

    def describe(self) -> str:
        """One line: ``3 calls of `splash_mha_fwd` not counted: ...``, or for a kernel
        counted at its costliest, ``... counted at their costliest: ...``."""
        calls = f"{format_count(self.calls)} call{'s' if self.calls != 1 else ''}"
        why = f" ({self.why})" if self.why else ""
        if not self.counted:
            return f"{calls} of `{self.name}` not counted: flops and time for them are missing{why}"
        if self.upper_bound:
            return (
                f"{calls} of `{self.name}` counted at their costliest, every grid step as if "
                f"it computed: flops and time for them may be high{why}"
            )
        return f"{calls} of `{self.name}`: {self.how}"


def uncounted_line(kernels: tuple[KernelUse, ...]) -> str:
    """One sentence naming every kernel whose flops are missing ("" when none is)."""
    missing = [k for k in kernels if not k.counted]
    if not missing:
        return ""
    return "; ".join(k.describe() for k in missing)
