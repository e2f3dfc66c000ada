"""What differs between the jax versions shardviz supports, in one place.

shardviz runs on jax/jaxlib 0.10.2 through 0.12.x (Python 3.11 gets 0.10.2, the last jax built
for it; Python 3.12 and 3.13 get the newest). Everything that reads or calls jax differently by
version goes through this module, and each function says which version does what, as measured
on jax 0.10.2 and 0.12.0.1 (tests/capture/test_jax_compat.py runs on both: ``make test`` and
``make test-current``).

Differences in the compiler's *text* (HLO printed differently) are not here: the parsers in
``capture/hlo/`` read every form they know whatever the jax version, and name the jax version
and the line when they meet one they do not (:func:`versions_text` gives those words without
importing jax).
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from typing import Any

from shardviz.capture.hlo.text import compiler_versions

__all__ = [
    "JAX_VERSION",
    "cpu_final_dump",
    "fast_compile_options",
    "scan_counts",
    "version_tuple",
    "versions_text",
]


def version_tuple(text: str) -> tuple[int, ...]:
    """``"0.12.0.1"`` -> ``(0, 12, 0, 1)``; a pre-release or local part ends the numbers."""
    numbers = []
    for part in text.split("."):
        m = re.match(r"\d+", part)
        if m is None:
            break
        numbers.append(int(m.group()))
        if m.end() != len(part):
            break
    return tuple(numbers)


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


#: The installed jax's version as numbers, e.g. ``(0, 12, 0, 1)``; ``()`` without jax.
JAX_VERSION: tuple[int, ...] = version_tuple(_installed("jax") or "")


def versions_text() -> str:
    """``"jax 0.12.0.1, jaxlib 0.12.0.1"`` (and libtpu when installed), read from the installed
    packages' metadata without importing them: the words an error about the compiler's output
    uses to say which compiler printed it. (Defined beside the parsers, which may not import
    this module: ``capture/hlo`` stays free of jax.)"""
    return compiler_versions()


def scan_counts(params: dict[str, Any], n_inputs: int) -> tuple[int, int]:
    """How many of a ``scan`` equation's inputs are constants and how many are the carry (the
    rest are the scanned-over ``xs``), from the equation's params and its number of inputs.

    - jax 0.10.x: the params hold ``num_consts`` and ``num_carry``.
    - jax 0.11.0 and later (0.12.0.1 measured): those are gone; ``ft_in`` is a flat tree of the
      three groups (consts, carry, xs), read here by giving it the inputs' positions and
      unpacking it.
    """
    if "num_consts" in params:
        return int(params["num_consts"]), int(params["num_carry"])
    consts, carry, _ = params["ft_in"].update(list(range(n_inputs))).unpack()
    return len(list(consts)), len(list(carry))


#: Options that make XLA compile fast for a program that runs once, on every jax.
_FAST_COMPILE: dict[str, Any] = {
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
}


def cpu_final_dump() -> str | None:
    """The file the CPU compiler dumps its final module to, when that is the compiled
    program's own text (read early, while LLVM still compiles the kernels); ``None`` where
    only ``as_text()`` is.

    - jax 0.10.2: ``*cpu_after_optimizations.txt``, written about a fifth into a compile, is
      ``as_text()``'s module (its backend configs' keys in another order).
    - jax 0.12.0.1: that dump is not the compiled module (ledger and source lines differ on
      the stored tests), so ``as_text()`` is read after the compile.
    """
    return "*cpu_after_optimizations.txt" if JAX_VERSION and JAX_VERSION < (0, 11) else None


#: The CPU's older loop emitters compile fused ops in half the time of its fusion emitters.
_CPU_EMITTERS: dict[str, Any] = {"xla_cpu_use_fusion_emitters": False}


def fast_compile_options() -> dict[str, Any]:
    """``compiler_options`` for a program compiled to run once (compile time matters more than
    run time): no backend optimization, no expensive LLVM passes, and on jaxlib that still has
    it, the CPU's older loop emitters (other backends ignore that CPU option).

    - jax 0.10.2: ``xla_cpu_use_fusion_emitters`` exists, and ``False`` halves
      the CPU compile of a fused step.
    - jax 0.12.0.1: the option is gone and naming it fails the compile ("No such compile
      option"). Which release in between dropped it is found out by trying it once, on a
      one-op program, the first time this is called.
    """
    return {**_FAST_COMPILE, **(_CPU_EMITTERS if _accepts(tuple(_CPU_EMITTERS.items())) else {})}


@functools.cache
def _accepts(options: tuple[tuple[str, Any], ...]) -> bool:
    import jax
    import numpy as np

    try:
        jax.jit(lambda x: x + 1).lower(np.float32(0)).compile(compiler_options=dict(options))
    except Exception as err:  # jax's runtime error: only an unknown option means no (any
        # other failure is the backend's, and the real compile will report it)
        return "No such compile option" not in str(err)
    return True
