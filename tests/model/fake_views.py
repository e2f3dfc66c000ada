"""A stand-in for :mod:`shardviz.render` in the display registry's tests: registers on import.

It draws a class the test can build without importing this module (``Fraction``), so a test can
check that the registry imports it when a view is missing.
"""

from __future__ import annotations

from fractions import Fraction

from shardviz.model import display


def fraction_text(x: Fraction) -> str:
    return f"{x.numerator} over {x.denominator}"


display.register(Fraction, "text", fraction_text)
