"""What a comparison keeps in host memory and moves over the host link, per strategy.

Offload strategies (ZeRO-Offload, activation offload, weights streamed from host) trade HBM
for host memory and host-link traffic. The memory bars stack HBM only (their peak is HBM);
these figures sit beside them: host bytes per device by role, bytes each way per step, and
the host link's time on the target against the step's compute. Empty for comparisons that
keep nothing on host, so their views are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardviz.model._codec import JsonMixin
from shardviz.model.compare import Comparison, StrategyResult
from shardviz.model.units import format_bytes, format_seconds

#: The host memory bar's colour and hatch, drawn beside (never on) the HBM stack.
HOST_COLOR = "#6e7781"
HOST_LABEL = "host memory"
HOST_MEANING = (
    "bytes one device keeps in pinned host memory (offloaded state and activations): not "
    "HBM, so not under the peak or the HBM line"
)


@dataclass(frozen=True)
class HostView(JsonMixin):
    """One strategy's host memory and host link figures, as numbers and words."""

    label: str
    hbm: int
    hbm_str: str
    host: int
    host_str: str
    host_exact: str
    #: Host bytes by role: ``(("params", "3 MiB"), ("optimizer", …), ("outputs", …),
    #: ("offloaded", …))``, the parts with bytes only; ``outputs`` are the step's new state
    #: written to host, ``offloaded`` the values a remat policy sends there, ``layout
    #: padding`` what the compiler's tiles add to the host arrays; they add up to ``host``.
    roles: tuple[tuple[str, str], ...]
    to_host: int
    to_device: int
    moved_str: str  # ``3 MiB to host · 3 MiB to device``
    #: The host link's time on the target and whether it hides (``—`` without an estimate).
    link_str: str
    #: The estimated step with the host link in it (``—`` without an estimate).
    step_str: str


def uses_host(c: Comparison) -> bool:
    """Whether some strategy keeps bytes in host memory or moves any over the host link."""
    return any(r.memory.host or r.host_transfer_bytes for r in c.results)


def _roles(r: StrategyResult) -> tuple[tuple[str, str], ...]:
    m = r.memory
    parts = (
        ("params", m.host_params), ("optimizer", m.host_optimizer),
        ("outputs", m.host_outputs), ("offloaded", m.host_scratch),
        ("layout padding", m.host_padding),
    )  # fmt: skip
    return tuple((k, format_bytes(v)) for k, v in parts if v)


def _link(r: StrategyResult) -> tuple[str, str]:
    """(``35 µs, hides under the step's HBM time``, ``≥ 1.2 ms (memory-bound)``)."""
    e = r.report.estimate
    if e is None:
        return "—", "—"
    step = f"≥ {format_seconds(e.step_seconds)} ({e.bound}-bound)"
    if e.host_seconds is None:
        if r.report.platform == "cpu" and r.memory.host:
            # The CPU compiler moves nothing: its "host memory" is the same RAM.
            return "none on CPU: compile for a TPU/GPU topology to see them", step
        return ("no transfers" if not r.host_transfer_bytes else "not timed"), step
    exposed = e.host_exposed_seconds
    if exposed is None:
        hides = "compute unknown"
    elif exposed == 0.0:
        hides = f"hides under {e.host_under or 'compute'}"
    else:
        hides = f"{format_seconds(exposed)} beyond {e.host_under or 'compute'}"
    return f"{format_seconds(e.host_seconds)}, {hides}", step


def host_view(r: StrategyResult, label: str) -> HostView:
    """The host figures of one result, labelled as the comparison labels it."""
    link, step = _link(r)
    return HostView(
        label=label,
        hbm=r.memory.peak,
        hbm_str=format_bytes(r.memory.peak),
        host=r.memory.host,
        host_str=format_bytes(r.memory.host),
        host_exact=format_bytes(r.memory.host, exact=True),
        roles=_roles(r),
        to_host=r.to_host_bytes,
        to_device=r.to_device_bytes,
        moved_str=(
            f"{format_bytes(r.to_host_bytes)} to host · {format_bytes(r.to_device_bytes)} to device"
        ),
        link_str=link,
        step_str=step,
    )


def host_views(c: Comparison) -> tuple[HostView, ...]:
    """One per result, in order; empty when no strategy uses host memory."""
    if not uses_host(c):
        return ()
    return tuple(host_view(r, c.label(r)) for r in c.results)


def roles_str(h: HostView) -> str:
    """``params 3 MiB · optimizer 6 MiB``, or ``—``."""
    return " · ".join(f"{k} {v}" for k, v in h.roles) or "—"
