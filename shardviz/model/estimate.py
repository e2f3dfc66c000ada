"""An estimate of one step on a target: a roofline lower bound, as plain data.

Made by :func:`shardviz.analysis.estimate.step.estimate_report` from the compiler's flops, bytes
accessed, peak memory and collectives, and a :class:`~shardviz.model.hardware.Target`'s
published figures. It is an estimate, never a measurement: the step cannot be faster than
its slowest part (compute, HBM traffic, communication) even with perfect overlap, so
``step_seconds`` is a lower bound. On CPU fake devices it describes the target, not the CPU.
No jax import.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model._codec import JsonMixin
from shardviz.model.units import format_bytes, format_percent, format_seconds

GiB = 1024**3

#: What limits the step, in the order ties are broken.
BOUNDS: tuple[str, ...] = ("compute", "memory", "communication", "host link")


@dataclass(frozen=True)
class Estimate(JsonMixin):
    """Estimated time and memory of one step per device on a target (a lower bound).

    - ``compute_seconds``: flops per device / the device's peak bf16 FLOP/s.
    - ``memory_seconds``: bytes accessed per device / HBM bandwidth.

      With the compiled schedule, both are every op's own figures added up (its matmul
      flops, the HBM bytes it reads and writes: :attr:`shardviz.model.Cost.ops`), the same
      per-op work the predicted step runs one op after another, so the bound is never above
      ``predicted_seconds``; the compiler's own bytes accessed is then said apart in
      ``notes``. Without it, the compiler's flops and bytes accessed per step.
    - ``collective_seconds``: the collectives' estimated times added up (ring/torus model
      with a per-hop latency floor; see :mod:`shardviz.analysis.estimate.collectives`).
    - ``host_seconds``: the host transfers (offload) over the chip's host link, when the
      program has any.
    - ``step_seconds``: the largest of these, a lower bound on the step (it assumes
      compute, memory traffic, communication and host transfers overlap perfectly).
    - ``bound``: which of ``"compute"``, ``"memory"``, ``"communication"``, ``"host link"``
      sets that bound.
    - ``mfu``: the model-FLOPs utilisation that bound allows: ``model_flops`` / (peak FLOP/s
      x ``step_seconds``). Model flops are the step's matmuls (2 per multiply-add; attention's
      two matmuls as computed, so a causal mask computed in full counts in full), with what
      ``jax.checkpoint`` recomputes counted once: for a dense transformer about
      6 x parameters x tokens plus attention. ``hfu``: the same with the hardware flops (every
      op the compiler runs, recomputation included), ``compute_seconds / step_seconds``.
      :meth:`mfu_at` gives the MFU at a measured step (yours, or a published one).
    - ``hbm_headroom_bytes``: HBM per device minus the program's peak bytes; negative when it
      does not fit.

    Flops and bytes are per step: each loop body counted as often as it runs. Where a loop's
    count is unknown (a data-dependent ``while_loop``) it is counted once, ``lower_bound``
    names it, and every figure built on the cost is a lower bound.

    Where a kernel's flops could not be counted (an opaque custom call that declares no cost
    and whose body shardviz cannot read), ``uncounted`` names it, one sentence per kernel:
    its flops and time are missing from every figure, the part that limits the step may be
    another, and the step and MFU are then no bound (:attr:`not_a_bound` says so).

    A part whose input is unknown (no cost analysis) is ``None`` and left out of the bound.
    ``notes`` say what was assumed (global cost divided by devices, loops of unknown count,
    where CPU devices were placed on the target).
    """

    target: str
    compute_seconds: float | None
    memory_seconds: float | None
    collective_seconds: float
    step_seconds: float
    bound: str
    mfu: float | None
    hbm_bytes: int
    peak_bytes: int | None
    hbm_headroom_bytes: int | None
    notes: tuple[str, ...] = ()
    hfu: float | None = None
    #: Per device per step: the model's flops (matmuls, recomputation once) and the
    #: hardware's (every op the compiler runs); the peak FLOP/s they are measured against.
    model_flops: float | None = None
    hardware_flops: float | None = None
    peak_flops_per_second: float | None = None
    #: Where the loops of unknown count are (``file:line`` or HLO name): then the flops,
    #: bytes and times are lower bounds.
    lower_bound: tuple[str, ...] = ()
    #: One sentence per kernel whose flops could not be counted
    #: (:meth:`~shardviz.model.kernels.KernelUse.describe`: ``3 calls of `splash_mha_fwd` not
    #: counted: flops and time for them are missing``): then the estimate is not a bound.
    uncounted: tuple[str, ...] = ()
    #: One sentence per kernel counted at its costliest (``bounded``: a condition on data in
    #: it could not be read): its flops may be high, so the step may be too; then the
    #: estimate is not a bound either.
    overcounted: tuple[str, ...] = ()
    #: The step as the compiled schedule runs it (:mod:`shardviz.analysis.estimate.predict`): each
    #: op's own time (compute or HBM, whichever is longer) one after another, plus the
    #: communication and transfers the ops in flight beside them do not hide. A
    #: prediction, not a bound; ``None`` without the schedule.
    predicted_seconds: float | None = None
    predicted_exposed_seconds: float | None = None
    #: The largest exposed transfers: (collective or op name, seconds per step).
    predicted_exposed: tuple[tuple[str, float], ...] = ()
    #: The host <-> device transfers over the chip's host link (PCIe) per step, and what
    #: of that the step's compute cannot hide (``None``: no transfers, or no link figure).
    host_seconds: float | None = None
    host_exposed_seconds: float | None = None
    #: One line: bytes each way, time on the link, whether it hides under the step's work.
    host_text: str = ""
    #: What the transfers hide under, in words: the longest of the step's other parts,
    #: ``compute``, ``the step's HBM time`` or ``the step's communication`` (``""``: no
    #: transfers).
    host_under: str = ""

    def mfu_at(self, step_seconds: float) -> float | None:
        """The MFU of a step that took ``step_seconds`` (a measured or published step):
        model flops per device / (peak FLOP/s x seconds)."""
        if self.model_flops is None or not self.peak_flops_per_second or step_seconds <= 0:
            return None
        return self.model_flops / (self.peak_flops_per_second * step_seconds)

    def hfu_at(self, step_seconds: float) -> float | None:
        """The hardware-FLOPs utilisation of a step that took ``step_seconds``."""
        if self.hardware_flops is None or not self.peak_flops_per_second or step_seconds <= 0:
            return None
        return self.hardware_flops / (self.peak_flops_per_second * step_seconds)

    @property
    def bounded(self) -> bool:
        """Whether the step and MFU are bounds: every kernel of the program was counted
        exactly (none missing, none counted at its costliest)."""
        return not self.uncounted and not self.overcounted

    @property
    def unbounded_kernels(self) -> tuple[str, ...]:
        """Why the estimate is not a bound, one sentence per kernel: the uncounted ones, then
        those counted at their costliest."""
        return self.uncounted + self.overcounted

    @property
    def why_not_a_bound(self) -> str:
        """``1 kernel not counted``, ``2 kernels counted at their costliest``, both joined by
        ``and``; ``""`` for a bound."""

        def n(count: int, what: str) -> str:
            return f"{count} kernel{'s' if count != 1 else ''} {what}" if count else ""

        over = len(self.overcounted)
        parts = (n(len(self.uncounted), "not counted"),
                 n(over, f"counted at {'its' if over == 1 else 'their'} costliest"))  # fmt: skip
        return " and ".join(p for p in parts if p)

    @property
    def not_a_bound(self) -> str:
        """``not a bound: 3 calls of `splash_mha_fwd` not counted: …`` (``""`` when every
        kernel was counted exactly)."""
        return "not a bound: " + "; ".join(self.unbounded_kernels) if not self.bounded else ""

    @property
    def predicted_text(self) -> str:
        """``1.2 s (ops 1.1 s, exposed communication 0.1 s)``, or ``unknown``."""
        if self.predicted_seconds is None:
            return "unknown"
        exposed = self.predicted_exposed_seconds or 0.0
        ops = self.predicted_seconds - exposed
        return (
            f"{format_seconds(self.predicted_seconds)} (ops one after another "
            f"{format_seconds(ops)}, exposed transfers {format_seconds(exposed)})"
        )

    @property
    def fits(self) -> bool | None:
        """Whether the program's peak memory fits in HBM (``None`` when the peak is unknown)."""
        return None if self.hbm_headroom_bytes is None else self.hbm_headroom_bytes >= 0

    @property
    def fit_text(self) -> str:
        """``fits: 10.2 GiB of 16 GiB`` or ``does not fit: needs 21.3 GiB of 16 GiB``."""
        if self.peak_bytes is None:
            return f"peak memory unknown ({format_bytes(self.hbm_bytes)} HBM per device)"
        need, have = format_bytes(self.peak_bytes), format_bytes(self.hbm_bytes)
        if self.fits:
            return f"fits: {need} of {have}"
        return f"does not fit: needs {need} of {have}"

    @property
    def summary(self) -> str:
        """One line, labelled as an estimate (``>=`` and ``<=`` only where the figures are
        bounds; where a kernel was not counted, it says so in their place)."""
        at_least, at_most = (">= ", "<= ") if self.bounded else ("", "")
        parts = [
            f"estimated step {at_least}{format_seconds(self.step_seconds)} ({self.bound}-bound"
        ]
        if self.mfu is not None:
            parts[0] += f", MFU {at_most}{format_percent(self.mfu)}"
        parts[0] += ")"
        if not self.bounded:
            parts[0] += f", not a bound: {self.why_not_a_bound}"
        if self.predicted_seconds is not None:
            parts.append(f"predicted {format_seconds(self.predicted_seconds)}")
        parts.append(self.fit_text)
        return f"estimate on {self.target}: " + "; ".join(parts)

    def __str__(self) -> str:
        def t(s: float | None) -> str:
            return "unknown" if s is None else format_seconds(s)

        lines = [
            self.summary,
            f"  compute {t(self.compute_seconds)}, memory {t(self.memory_seconds)}, "
            f"communication {t(self.collective_seconds)}",
        ]
        if self.predicted_seconds is not None:
            lines.append(f"  predicted step {self.predicted_text}")
        if self.lower_bound:
            lines.append(
                "  lower bound: loops of unknown count counted once ("
                + ", ".join(self.lower_bound)
                + ")"
            )
        lines += [f"  not a bound: {k}" for k in self.unbounded_kernels]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)
