"""Offload strategies against FSDP on a reduced Llama 3.1 8B, compiled for TPU v5e and H100.

Each strategy's training step is compiled deviceless for the target (nothing runs): the
HBM peak per device beside the bytes kept in host memory, the bytes the compiler moves
over the host link per step, that link's time (15 GB/s per v5e chip, 64 GB/s one way per
H100) against the step's compute, and the estimated step. Each transfer figure is checked
against a hand count: activation offload moves every decoder layer's input once each way;
ZeRO-Offload its optimizer state; weights streamed from host at least every weight.

    .venv/bin/python benchmarks/offload.py [--targets v5e:2x2 h100:4] [--write]
"""

from __future__ import annotations

import argparse
import sys
import time

import _common as C

sys.path.insert(0, str(C.ROOT))

import shardviz as sv  # noqa: E402
from shardviz.model.compare import StrategyResult  # noqa: E402
from shardviz.model.units import format_bytes, format_seconds  # noqa: E402

#: 8 layers at a quarter of Llama 3.1 8B's width, 2k tokens, 4 sequences per device.
SIZES = {"layers": 8, "d_model": 1024, "heads": 8, "kv_heads": 4, "head_dim": 128,
         "ffn": 4096, "vocab": 8192, "seq": 2048}  # fmt: skip
PER_DEVICE = 4
STRATEGIES = ("fsdp", "zero-offload", "act-offload", "weight-stream")
COMMAND = "benchmarks/offload.py --write"


def hand_check(r: StrategyResult, devices: int) -> tuple[bool, str]:
    """Whether the transfers match what the strategy must move, and the count in words."""
    m = r.memory
    # A deviceless GPU topology cannot hold arguments in host memory (its devices list no
    # memories): the state comes in as HBM arguments, and only the new state goes to host.
    args_in_hbm = any("no pinned_host memory" in n for n in r.notes)
    if r.strategy == "act-offload":
        per_layer = PER_DEVICE * SIZES["seq"] * SIZES["d_model"] * 2  # bf16 layer input
        want = SIZES["layers"] * per_layer
        ok = r.to_host_bytes == r.to_device_bytes == want
        return ok, f"layers x layer input = {format_bytes(want)} each way"
    if r.strategy == "zero-offload":
        state = m.optimizer
        if args_in_hbm:
            ok = state - 64 <= r.to_host_bytes <= state and r.to_device_bytes == 0
            return ok, f"the new optimizer state ({format_bytes(state)}) to host only"
        ok = all(state - 64 <= x <= state for x in (r.to_host_bytes, r.to_device_bytes))
        return ok, f"the optimizer state ({format_bytes(state)}) each way"
    if r.strategy == "weight-stream":
        if args_in_hbm:
            ok = r.to_host_bytes >= m.params
            return ok, f"the new weights ({format_bytes(m.params)}) to host only"
        ok = r.to_device_bytes >= m.params and r.to_host_bytes >= m.params
        return ok, f"at least every weight ({format_bytes(m.params)}) each way"
    return r.host_transfer_bytes == 0, "nothing"


def row(r: StrategyResult, base: StrategyResult, devices: int) -> str:
    e = r.report.estimate
    m = r.memory
    saved = base.memory.peak - m.peak
    link = "—"
    if e is not None and e.host_seconds is not None:
        hide = (
            "hides" if e.host_exposed_seconds == 0.0
            else f"{format_seconds(e.host_exposed_seconds or 0.0)} exposed"
        )  # fmt: skip
        link = f"{format_seconds(e.host_seconds)}, {hide}"
    ok, words = hand_check(r, devices)
    step = f"{format_seconds(e.step_seconds)} ({e.bound})" if e is not None else "—"
    change = "—" if r is base else f"{'+' if saved < 0 else '−'}{format_bytes(abs(saved))}"
    return (
        f"| {r.strategy} | {format_bytes(m.peak)} | {change} | {format_bytes(m.host)} | "
        f"{format_bytes(r.to_host_bytes)} / {format_bytes(r.to_device_bytes)} | {link} | "
        f"{step} | {words}: {'yes' if ok else 'NO'} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["v5e:2x2", "h100:4"])
    parser.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    args = parser.parse_args()
    lines = C.preamble(COMMAND, ("jax", "libtpu"))
    lines += [
        f"Llama 3.1 8B at {SIZES['layers']} layers, d_model {SIZES['d_model']}, ffn "
        f"{SIZES['ffn']}, seq {SIZES['seq']}, {PER_DEVICE} sequences per device; every "
        "strategy compiled deviceless for the target. Per device: HBM peak, its change "
        "against fsdp, host memory, bytes to host / to device per step, the host link's "
        "time and what compute cannot hide, the estimated step (its bound), and the hand "
        "count the transfers are checked against.",
    ]
    oks: list[bool] = []
    for target in args.targets:
        devices = len(sv.topology(target).devices)
        start = time.perf_counter()
        c = sv.compare("llama3.1-8b", list(STRATEGIES), target=target,
                       batch=PER_DEVICE * devices, **SIZES)  # fmt: skip
        took = time.perf_counter() - start
        base = c.result("fsdp")
        lines += [
            "",
            f"{target} ({devices} devices; compiled in {took:.0f} s):",
            "",
            "| strategy | HBM peak | vs fsdp | host | to host / to device | host link | "
            "step ≥ | transfers: hand count |",
            "|---|---:|---:|---:|---:|---|---|---|",
        ]
        for r in c.results:
            lines.append(row(r, base, devices))
            oks.append(hand_check(r, devices)[0])
    lines += [
        "",
        f"- {'PASS' if all(oks) else 'FAIL'}: every transfer matches its hand count.",
        "- On a deviceless GPU topology the devices list no memories (jax 0.10.2), so an "
        "argument's `pinned_host` sharding has no memory kind and compiles into HBM: there "
        "ZeRO-Offload and streamed weights only send the step's new state to host (each "
        "result's notes say so).",
        "- The offloaded bytes are not all HBM saved: on v5e, activation offload sends 128 "
        "MiB of layer inputs to host but the peak falls by 25 MiB (112 MiB on H100), and "
        "streamed weights leave v5e's peak where it was: what sets each compiler's peak is "
        "elsewhere in the step. The copies also add HBM traffic, so the memory-bound "
        "estimates grow; the host link itself hides under compute in every case here.",
    ]
    body = "\n".join(lines)
    print(body)
    if args.write:
        C.replace_section(C.README, "offload", body)


if __name__ == "__main__":
    main()
