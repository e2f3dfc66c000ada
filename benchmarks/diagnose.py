"""What looking for findings adds to explain: explain(run=False) with and without diagnosis.

For each program, one round times, in rotating order, ``shardviz.explain(f, *args,
run=False, diagnose=False)`` and the same with ``diagnose=True`` (the default), each on a fresh
function object so no cache is hit. The programs are the MLP train step under the three
strategies of explain.py (clean: nothing to find, so no fix is compiled) and the zoo
transformer under FSDP on 8 devices (one real finding on CPU, with no fix to try). Medians
over rounds; ratio = median of per-round diagnosed / plain.

Target (issue 13): findings add <= 5% to explain's time.

    .venv/bin/python benchmarks/diagnose.py [--rounds 9] [--write]
"""

from __future__ import annotations

import argparse
import sys

import _common as C

sys.path.insert(0, str(C.ROOT))

import shardviz as sv  # noqa: E402

sv.use_cpu_devices(8)

from explain import STRATEGIES, _args  # noqa: E402

from shardviz.strategies import mlp  # noqa: E402
from shardviz.strategies.rules.named import get_rule_set  # noqa: E402
from shardviz.strategies.step import strategy_step  # noqa: E402
from shardviz.strategies.zoo import get_model  # noqa: E402


def _programs() -> dict[str, tuple]:
    out = {f"MLP, {name}": (mlp.train_step, _args(*spec)) for name, spec in STRATEGIES.items()}
    built = strategy_step(get_model("transformer"), get_rule_set("fsdp"))
    out["transformer, FSDP (zoo)"] = (built.step, built.abstract)
    return out


def measure(rounds: int) -> list[dict]:
    rows = []
    for name, (f, args) in _programs().items():

        def plain(f=f, args=args):
            sv.explain(C.fresh(f), *args, run=False, diagnose=False)

        def diagnosed(f=f, args=args):
            sv.explain(C.fresh(f), *args, run=False)

        def tried(f=f, args=args):
            sv.explain(C.fresh(f), *args, run=False).try_fixes()

        times = C.time_rounds(
            {"plain": plain, "diagnosed": diagnosed, "tried": tried}, rounds=rounds
        )
        found = sv.explain(f, *args, run=False).try_fixes().findings
        ratios = [d / p for d, p in zip(times["diagnosed"], times["plain"], strict=True)]
        rows.append(
            {
                "program": name,
                "plain": C.median(times["plain"]),
                "diagnosed": C.median(times["diagnosed"]),
                "ratio": C.median(ratios),
                "tried": C.median(times["tried"]),
                "fixes": sum(1 for x in found if x.fix is not None),
                "findings": ", ".join(found.kinds) or "none",
            }
        )
    return rows


def markdown(rows: list[dict], rounds: int) -> str:
    worst = max(r["ratio"] for r in rows)
    lines = [
        *C.preamble("benchmarks/diagnose.py --write"),
        f"8 fake CPU devices; {rounds} rounds, the two alternating; ratio = median of "
        "per-round diagnosed / plain.",
        "",
        "| program | explain, diagnose=False ms | explain (diagnosed) ms | ratio | "
        "+ fixes tried ms | findings | fixes offered |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['program']} | {C.fmt_ms(r['plain'])} | {C.fmt_ms(r['diagnosed'])} | "
            f"{r['ratio']:.3f} | {C.fmt_ms(r['tried'])} | {r['findings']} | {r['fixes']} |"
        )
    ok = worst <= 1.05
    lines += [
        "",
        "Target:",
        "",
        f"- {'PASS' if ok else 'MISS'}: findings add <= 5% to explain: worst median ratio "
        f"{worst:.3f}.",
        "",
        "Fixes are tried when asked for (`report.try_fixes()`, `sv.diagnose`, or the "
        "Explorer in its own thread), never on reading or printing a report: each fix tried "
        "is one more compile-only of the fixed program, the '+ fixes tried' column (explain, "
        "then try_fixes).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    a = ap.parse_args(argv)
    rows = measure(a.rounds)
    text = markdown(rows, a.rounds)
    print(text)
    if a.write:
        C.replace_section(C.README, "diagnose", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
