"""Lower and compile a function once, keeping what the compiler says about sharding.

The propagation dump (the module after sharding completion, before SPMD partitioning) is
asked for per call through compiler options: no environment variable, no restart. Its
temporary folder is always removed.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import jax

from shardviz.errors import CompileError, problem

_DUMP_OPTIONS = {"xla_dump_hlo_pass_re": "shardy-xla"}


@dataclass
class Compiled:
    """A compiled program and the texts shardviz reads from it."""

    lowered: Any
    compiled: Any
    hlo_text: str
    propagated_text: str
    lower_seconds: float
    compile_seconds: float


def _describe(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(err).__name__}: {first[:400]}"


def lower_and_compile(jitted: Any, args: tuple, kwargs: dict, fn_name: str) -> Compiled:
    """``jitted.lower(*args, **kwargs).compile()`` with the propagation dump captured.

    Raises:
        CompileError: tracing or compiling failed; the message names the function and the
            cause (e.g. a sharding that does not fit, an op that cannot be partitioned).
    """
    t0 = time.perf_counter()
    try:
        lowered = jitted.lower(*args, **kwargs)
    except Exception as err:  # tracing runs user code: anything can come out of it
        raise CompileError(
            problem(
                f"function {fn_name!r}",
                f"it failed to trace with these arguments ({_describe(err)})",
                "call the function once without shardviz to see the full error; check the "
                "argument shapes and any sharding constraints inside it",
            )
        ) from err
    t1 = time.perf_counter()
    dump = tempfile.mkdtemp(prefix="shardviz-dump-")
    try:
        try:
            compiled = lowered.compile(compiler_options={"xla_dump_to": dump, **_DUMP_OPTIONS})
        except Exception as err:
            raise CompileError(
                problem(
                    f"function {fn_name!r}",
                    f"the compiler rejected it ({_describe(err)})",
                    "check that every argument's sharding uses the same mesh and that the "
                    "partition specs fit the shapes",
                )
            ) from err
        t2 = time.perf_counter()
        propagated = _read_propagated(dump)
    finally:
        shutil.rmtree(dump, ignore_errors=True)
    return Compiled(
        lowered=lowered,
        compiled=compiled,
        hlo_text=compiled.as_text(),
        propagated_text=propagated,
        lower_seconds=t1 - t0,
        compile_seconds=t2 - t1,
    )


def _read_propagated(folder: str) -> str:
    files = sorted(
        glob.glob(os.path.join(folder, "**", "*before_spmd-partitioning*.txt"), recursive=True)
    )
    if not files:
        return ""
    with open(files[0], encoding="utf-8") as f:
        return f.read()


def device_order(compiled: Any) -> list[int]:
    """jax device ids in the compiled program's order: HLO's logical id p is entry p."""
    for sharding in jax.tree.leaves(compiled.input_shardings) + jax.tree.leaves(
        compiled.output_shardings
    ):
        assignment = getattr(sharding, "_device_assignment", None)
        if assignment:
            return [int(d.id) for d in assignment]
    return [int(jax.devices()[0].id)]
