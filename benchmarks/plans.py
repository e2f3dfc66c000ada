"""Write the plans shardviz ships (``shardviz/strategies/plans/``): each compare of
:data:`~shardviz.strategies.shipped_plans.SHIPPED` compiled for real here, stored with its
call, the jax / jaxlib / libtpu versions that compiled it and the CPU and wall seconds it took.

    .venv/bin/python benchmarks/plans.py          # every shipped plan
    .venv/bin/python benchmarks/plans.py llama    # those whose file name holds "llama"
    make plans

Run it again after upgrading jax or libtpu, or after a change to what a comparison holds:
``compare_shipped`` reads a plan only when the installed versions are the ones recorded.
"""

from __future__ import annotations

import sys

import shardviz as sv
from shardviz.strategies.shipped_plans import SHIPPED, read_plan, write_plan


def main() -> int:
    sv.use_cpu_devices(8)
    wanted = sys.argv[1:]
    for call in SHIPPED:
        if wanted and not any(w in call.file_name for w in wanted):
            continue
        print(f"compiling {call.file_name} ...")
        path = write_plan(call, progress=False)
        plan = read_plan(path)
        print(
            f"  wrote {path.name} ({path.stat().st_size:,} B): {plan.cpu_seconds:.0f} s of CPU, "
            f"{plan.wall_seconds:.0f} s wall; {plan.versions}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
