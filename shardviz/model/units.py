"""The one place numbers become words: bytes, seconds, flops, percentages, counts, MFUs,
losses, step times in milliseconds, differences.

Every view (text, HTML, widgets) and every message prints through these, so one report never
shows the same figure two ways ("1.5 MB" beside "1.4 MiB"). Bytes are in binary units; times
and flops have three significant digits.
"""

from __future__ import annotations

import math

GiB = 1024**3

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def sig3(x: float) -> str:
    """Three significant digits without a trailing ``.0``: ``1.23``, ``45.6``, ``789``."""
    a = abs(x)
    text = f"{x:.2f}" if a < 10 else f"{x:.1f}" if a < 100 else f"{x:.0f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_bytes(n: float, exact: bool = False) -> str:
    """Bytes for people in binary units, one decimal, whole numbers bare: ``512 B``,
    ``1.5 KiB``, ``64 MiB``, ``21.3 GiB``; ``exact`` adds the count (``1.5 KiB (1,536 B)``).
    A float (an estimate, a cost analysis) is rounded to whole bytes first."""
    n = round(n)
    value = float(n)
    unit = 0
    while abs(value) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{n} B"
    text = f"{value:.1f}".removesuffix(".0") + f" {_BYTE_UNITS[unit]}"
    return text + f" ({n:,} B)" if exact else text


def format_seconds(s: float) -> str:
    """``1.23 s``, ``45.6 ms``, ``789 µs``, ``12 ns``: three significant digits."""
    a = abs(s)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if a >= scale:
            return f"{sig3(s / scale)} {unit}"
    return f"{sig3(s / 1e-9)} ns" if a else "0 s"


def format_bandwidth(bytes_per_second: float) -> str:
    """A link's or memory's bandwidth in decimal units, as chip sheets publish it and the
    hardware presets hold it: ``15 GB/s``, ``819 GB/s``, ``3.35 TB/s``, ``800 MB/s``. Bytes
    stay binary; a bandwidth is said one way only, so ``15e9`` never reads ``14 GiB/s``."""
    b = bytes_per_second
    for scale, unit in ((1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if abs(b) >= scale:
            return f"{sig3(b / scale)} {unit}"
    return f"{sig3(b)} B/s"


def format_flops(f: float | None) -> str:
    """``512 FLOP``, ``268 MFLOP``, ``2.15 GFLOP``; ``n/a`` for ``None``."""
    if f is None:
        return "n/a"
    for scale, unit in ((1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP")):
        if abs(f) >= scale:
            return f"{sig3(f / scale)} {unit}"
    if abs(f) >= 1e3:
        return f"{sig3(f / 1e3)} kFLOP"
    return f"{f:.0f} FLOP"


def format_percent(fraction: float) -> str:
    """A fraction as a percentage with enough digits to mean something: ``45.5%``,
    ``3.07%``, ``0.0123%``, ``100%``, ``0%`` (three significant digits below 10%)."""
    p = fraction * 100
    if p == 0:
        return "0%"
    if abs(p) >= 99.95:
        return f"{p:.0f}%"
    if abs(p) >= 10:
        return f"{p:.1f}%"
    return f"{p:.3g}%"


def format_count(n: int) -> str:
    """A parameter count for people: ``786K``, ``7.5B``, ``1T``, ``512``."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            return f"{sig3(n / scale)}{unit}"
    return str(n)


def format_float_bytes(b: float | None) -> str:
    """Bytes given as a float (cost analysis), or ``n/a``."""
    return "n/a" if b is None else format_bytes(b)


def format_mfu(mfu: float | None) -> str:
    """``45.5%``, ``3.07%``, ``0.0123%`` (``unknown`` for ``None``): enough digits that a
    small program's MFU does not read 0%."""
    return "unknown" if mfu is None else format_percent(mfu)


def format_diff(x: float) -> str:
    """A difference such as ``1.19e-07`` (or ``0``)."""
    return "0" if x == 0 else f"{x:.3g}"


def format_ms(ms: float) -> str:
    """Milliseconds, with fewer decimals as they grow: ``0.42``, ``12.3``, ``812``."""
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    return f"{ms:.2f}"


def format_loss(value: float | None) -> str:
    """A loss with four significant digits; ``not finite`` for NaN/inf/``None``."""
    if value is None or not math.isfinite(value):
        return "not finite"
    return f"{value:.4g}"
