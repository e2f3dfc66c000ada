"""MaxText's own train step, built as its ``train_compile.py`` builds it and explained by shardviz,
beside what the recipe measured.

The run: tpu-recipes' ``training/trillium/Llama3.1-8B-MaxText/v6e-256`` (MaxText's
``llama3_1_8b_8192``): Llama 3.1 8B on one v6e-256 slice, per-device batch 4, sequence 8192,
FSDP over the 256 chips, ``remat_policy: custom`` with the decoder-layer input and the q/k/v/out
projections offloaded to host, splash attention (``attention: flash``) with 2048-blocks and the
fused backward kernel, bf16 activations; measured 4.546 s/step, 417.4 TF/s/device, 45.5% MFU.

The step is MaxText's (``maxtext`` 0.2.5 from PyPI): its config (``pyconfig``), the
deviceless topology's mesh (``compile_topology=v6e-256``), the shaped state and batch and the
functional train step with its shardings, all from ``train_compile``'s own helpers, jitted
as ``train_compile.jit_and_compile`` does, then traced (``jitted.trace(...)``: the ``Traced``
keeps the jaxpr, from which shardviz counts the splash kernels) and given to ``sv.explain``
with ``target="v6e:16x16"``. The recipe's XLA flags go in through ``LIBTPU_INIT_ARGS``, as
MaxText's runner passes them, except one: today's libtpu refuses continuation fusion
(``xla_tpu_enable_async_collective_fusion``) on v6e ("not supported/recommended on platforms
other than TPU v5e"), so it is off here (the rest of that flag group is kept as given).

It prints the ledger (collectives, bytes), the memory (peak vs HBM, host), the findings, the
estimate (lower bound, predicted step), the model and hardware flops per device, the MFU at
MaxText's measured step, and the kernels (counted / not counted); ``--write`` puts them in
benchmarks/README.md (section ``maxtext``). The report is saved as JSON in
benchmarks/results/ first; ``--from-json`` formats a saved one again without compiling.

Its environment (Python 3.13, jax 0.12, MaxText and only what its ``train_compile`` imports;
no TensorFlow), beside the project's own .venv, from the repo root::

    make python313    # Debian's Python 3.13, if /usr/bin/python3.13 is missing
    /usr/bin/python3.13 -m venv .venv-maxtext
    .venv-maxtext/bin/pip install -e . 'jax[tpu]==0.12.*' maxtext==0.2.5 flax omegaconf \\
        pathwaysutils qwix aqtp tokamax huggingface_hub transformers grain drjax tiktoken \\
        sentencepiece sympy

Full size: one deviceless compile of the whole step, 10-20 minutes on this 2-core machine;
never imported by the tests. ``--layers N`` builds a shorter model (quicker, for a try).

    .venv-maxtext/bin/python benchmarks/maxtext.py [--layers N] [--write]
    .venv-maxtext/bin/python benchmarks/maxtext.py --from-json benchmarks/results/maxtext.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import _common as C

os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
# This file's folder leaves the path once _common is in: its name would hide MaxText's package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != C.BENCH_DIR]
sys.path.insert(0, str(C.ROOT))

#: tpu-recipes' measured step for this run and what MaxText printed for it.
MEASURED_STEP = 4.546
PUBLISHED_MFU = 0.455
PUBLISHED_TFLOPS = 417.397e12  # per device per second, MaxText's own flops count

#: MaxText's llama3_1_8b_8192 tuning parameters, as MaxText's command line takes them.
RECIPE = {
    "model_name": "llama3.1-8b",
    "per_device_batch_size": 4,
    "ici_fsdp_parallelism": -1,
    "max_target_length": 8192,
    "remat_policy": "custom",
    "decoder_layer_input": "offload",
    "query_proj": "offload",
    "key_proj": "offload",
    "value_proj": "offload",
    "out_proj": "offload",
    "attention": "flash",
    "use_iota_embed": True,
    "dataset_type": "synthetic",
    "enable_checkpointing": False,
    **{
        f"sa_block_{b}": 2048
        for b in ("q", "kv", "kv_compute", "q_dkv", "kv_dkv", "kv_dkv_compute", "q_dq", "kv_dq")
    },
    "sa_use_fused_bwd_kernel": True,
    "dtype": "bfloat16",
    "compile_topology": "v6e-256",
    "compile_topology_num_slices": 1,
}

#: The recipe's XLA flags (MaxText's xla_flags_library groups: the dense VMEM limit, the
#: reduce-scatter layout, data-parallel overlap, continuation fusion for all-gather, SparseCore
#: all-reduce offload, host offload), plus the flag train_compile adds. Continuation fusion is
#: off: today's libtpu refuses it on v6e.
XLA_FLAGS = (
    "--xla_tpu_spmd_rng_bit_generator_unsafe=true",
    "--xla_tpu_scoped_vmem_limit_kib=98304",
    "--xla_tpu_use_minor_sharding_for_major_trivial_input=true",
    "--xla_tpu_relayout_group_size_threshold_for_reduce_scatter=1",
    "--xla_tpu_assign_all_reduce_scatter_layout=true",
    "--xla_tpu_enable_data_parallel_all_reduce_opt=true",
    "--xla_tpu_data_parallel_opt_different_sized_ops=true",
    "--xla_tpu_enable_async_collective_fusion=false",  # the recipe: true (refused on v6e now)
    "--xla_tpu_enable_async_collective_fusion_fuse_all_gather=true",
    "--xla_tpu_enable_async_collective_fusion_multiple_steps=true",
    "--xla_tpu_overlap_compute_collective_tc=true",
    "--xla_enable_async_all_gather=true",
    "--xla_tpu_enable_async_collective_fusion_fuse_all_reduce=false",
    "--xla_tpu_enable_sparse_core_collective_offload_all_reduce=true",
    "--xla_tpu_enable_all_reduce_offload_tracing=true",
    "--xla_tpu_use_tc_device_shape_on_sc=true",
    "--xla_sc_enable_instruction_fusion=false",
    "--xla_sc_disjoint_spmem=false",
    "--xla_sc_disable_megacore_partitioning=true",
    "--xla_tpu_enable_all_experimental_scheduler_features=true",
    "--xla_tpu_enable_scheduler_memory_pressure_tracking=true",
    "--xla_tpu_host_transfer_overlap_limit=24",
    "--xla_tpu_aggressive_opt_barrier_removal=ENABLED",
    "--xla_lhs_prioritize_async_depth_over_stall=ENABLED",
    "--xla_tpu_enable_ag_backward_pipelining=true",
    "--xla_should_allow_loop_variant_parameter_in_chain=ENABLED",
    "--xla_should_add_loop_invariant_op_in_chain=ENABLED",
    "--xla_max_concurrent_host_send_recv=100",
    "--xla_tpu_scheduler_percent_shared_memory_limit=100",
    "--xla_latency_hiding_scheduler_rerun=2",
)

TARGET = "v6e:16x16"
SAVED = C.RESULTS / "maxtext.json"


def traced_step(layers: int | None):
    """MaxText's train step for the recipe, traced deviceless as train_compile lowers it."""
    # Read by libtpu when jax first starts it (get_topology_desc below): set before that.
    os.environ["LIBTPU_INIT_ARGS"] = (
        os.environ.get("LIBTPU_INIT_ARGS", "") + " " + " ".join(XLA_FLAGS)
    ).strip()
    import jax
    import maxtext.configs
    from flax.core.spmd import logical_axis_rules
    from maxtext.configs import pyconfig
    from maxtext.trainers.pre_train import train, train_compile
    from maxtext.utils import maxtext_utils, sharding

    jax.config.update("jax_default_prng_impl", "unsafe_rbg")  # as train_compile.main does
    settings = dict(RECIPE)
    if layers is not None:
        settings |= {"base_num_decoder_layers": layers, "override_model_config": True}
    out_dir = tempfile.mkdtemp(prefix="maxtext-")
    settings |= {"base_output_directory": out_dir, "run_name": "shardviz"}
    base = str(Path(maxtext.configs.__file__).parent / "base.yml")
    config = pyconfig.initialize(["", base, *(f"{k}={v}" for k, v in settings.items())])
    train_compile.validate_config(config)
    mesh = train_compile.get_topology_mesh(config)
    args, kwargs, state_shardings, _, model = train_compile.get_shaped_inputs(mesh, config)
    params_shardings, state_shardings = sharding.maybe_update_params_sharding_with_opt(
        config, state_shardings
    )
    input_shardings = sharding.build_zero1_input_state_mesh_shardings(
        config, state_shardings, params_shardings
    )
    data_sharding = sharding.get_input_data_sharding(config, mesh)
    step, in_shardings, out_shardings, static, donate = (
        maxtext_utils.get_functional_train_with_signature(
            train.train_step, data_sharding, input_shardings, model, config, params_shardings
        )
    )
    with jax.set_mesh(mesh), logical_axis_rules(config.logical_axis_rules):
        jitted = jax.jit(
            step,
            in_shardings=in_shardings,
            out_shardings=out_shardings,
            static_argnums=static,
            donate_argnums=donate,
        )
        return jitted.trace(*args, **kwargs), config


def figures(report) -> dict:
    """What the section shows, read from the report (also from one loaded from JSON)."""
    e, cost, mem = report.estimate, report.cost, report.memory
    kinds: dict[str, list[int]] = {}
    for c in report.collectives:
        runs = c.trips or 1
        k = kinds.setdefault(c.kind, [0, 0, 0])
        k[0] += 1
        k[1] += runs
        k[2] += c.moved_bytes * runs
    findings = list(report.findings or ())
    return {
        "function": report.function,
        "collectives": len(report.collectives),
        "kinds": kinds,
        "moved": sum(v[2] for v in kinds.values()),
        "peak": mem.peak_bytes,
        "hbm": e.hbm_bytes if e else None,
        "fit": e.fit_text if e else "",
        "host_args": mem.host_argument_bytes,
        "host_temp": mem.host_temp_bytes,
        "offloaded": mem.offloaded_bytes,
        "transfers": len(report.host_transfers),
        "findings": [(f.severity, f.title) for f in findings],
        "summary": e.summary if e else "",
        "bound": e.step_seconds if e else None,
        "bound_by": e.bound if e else "",
        "bounded": e.bounded if e else False,
        "parts": (e.compute_seconds, e.memory_seconds, e.collective_seconds) if e else None,
        "predicted": e.predicted_seconds if e else None,
        "predicted_text": e.predicted_text if e else "",
        "host_text": e.host_text if e else "",
        "model_flops": e.model_flops if e else None,
        "hardware_flops": e.hardware_flops if e else None,
        "matmul_flops": cost.matmul_flops_per_device if cost else None,
        "peak_flops": e.peak_flops_per_second if e else None,
        "mfu_at": e.mfu_at(MEASURED_STEP) if e else None,
        "hfu_at": e.hfu_at(MEASURED_STEP) if e else None,
        "kernels": [
            (k.name, k.calls, k.counted, k.how, k.flops, k.model_flops, k.describe())
            for k in (cost.kernels if cost else ())
        ],
        "uncounted": list(e.uncounted) if e else [],
        "notes": list(report.notes),
        "lower_bound_loops": list(e.lower_bound) if e else [],
    }


def section(f: dict, layers: int | None, wall: float | None, command: str) -> str:
    from shardviz.model.units import format_bytes, format_flops, format_percent, format_seconds

    def fl(x):
        return format_flops(x) if x is not None else "unknown"

    def sec(x):
        return format_seconds(x) if x is not None else "unknown"

    size = f"{layers} layers (a shortened model)" if layers else "full size (32 layers)"
    out = C.preamble(command, ("jax", "libtpu", "maxtext"))
    out += [
        f"MaxText's `{f['function']}` for Llama 3.1 8B, {size}, traced deviceless for "
        f"v6e-256 and explained on `{TARGET}`"
        + (f" in {wall / 60:.1f} min" if wall else "")
        + ". Measured by the recipe: "
        f"{format_seconds(MEASURED_STEP)}/step, {PUBLISHED_TFLOPS / 1e12:.1f} TF/s/device, "
        f"{format_percent(PUBLISHED_MFU)} MFU.",
        "",
        "| figure | shardviz | recipe (measured) |",
        "|---|---|---|",
    ]
    step_mfu = f["model_flops"] / MEASURED_STEP if f["model_flops"] else None
    rows = [
        ("model flops / device / step", fl(f["model_flops"]),
         f"{format_flops(PUBLISHED_TFLOPS * MEASURED_STEP)} (MaxText's formula)"),
        ("hardware flops / device / step", fl(f["hardware_flops"]), "—"),
        ("model TF/s/device at the measured step",
         f"{step_mfu / 1e12:.1f} TF/s" if step_mfu else "unknown",
         f"{PUBLISHED_TFLOPS / 1e12:.1f} TF/s"),
        ("MFU at the measured step",
         format_percent(f["mfu_at"]) if f["mfu_at"] is not None else "unknown",
         format_percent(PUBLISHED_MFU)),
        ("lower bound", f"{sec(f['bound'])} ({f['bound_by']}-bound"
         + ("" if f["bounded"] else ", not a bound: kernels uncounted") + ")",
         format_seconds(MEASURED_STEP)),
        ("predicted step",
         f"{sec(f['predicted'])}"
         + (f" ({f['predicted'] / MEASURED_STEP - 1:+.0%})" if f["predicted"] else ""),
         format_seconds(MEASURED_STEP)),
        ("HBM peak / chip", f["fit"], "ran (fits)"),
        ("collectives (ledger)",
         f"{f['collectives']} ({', '.join(f'{k} {v[0]}' for k, v in sorted(f['kinds'].items()))})",
         "—"),
        ("bytes moved / device / step", format_bytes(f["moved"]), "—"),
    ]  # fmt: skip
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    c, m, comm = f["parts"] or (None, None, None)
    out += [
        "",
        f"Estimate: {f['summary']}. Parts: compute {sec(c)}, memory {sec(m)}, communication "
        f"{sec(comm)}; predicted {f['predicted_text']}.",
    ]
    if f["host_text"]:
        out += ["", f"{f['host_text'][0].upper()}{f['host_text'][1:]}."]
    out += [
        "",
        f"Memory: peak {format_bytes(f['peak'])} per device; host: arguments "
        f"{format_bytes(f['host_args'])}, temporaries {format_bytes(f['host_temp'])} (the "
        "compiler's, the offloaded activations among them)"
        + (f", {format_bytes(f['offloaded'])} more the program allocates" if f["offloaded"] else "")
        + f"; {f['transfers']} host transfers scheduled.",
        "",
        "Kernels per device per step:",
        "",
    ]
    for name, calls, counted, how, flops, model, text in f["kernels"]:
        if counted:
            how = "" if how == "counted" else f" ({how})"
            out.append(
                f"- `{name}`: {calls} calls, counted{how}: {fl(flops)} as run, {fl(model)} model"
            )
        else:
            out.append(f"- `{name}`: {text}")
    if not f["kernels"]:
        out.append("- none found")
    out += ["", f"Findings ({len(f['findings'])}):", ""]
    out += [f"- {sev}: {title}" for sev, title in f["findings"]] or ["- none"]
    if f["lower_bound_loops"]:
        out += [
            "",
            f"Loops whose trip count shardviz could not read from the compiled program: "
            f"{', '.join(f['lower_bound_loops'])}. Their bodies are counted once each, so the "
            "flops, the MFU, the kernels' calls, the bound and the ledger's bytes are lower "
            "bounds (the report says so; see the text above this section).",
        ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (default 32)")
    parser.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    parser.add_argument("--from-json", type=Path, default=None, help="a saved report")
    parser.add_argument("--wall", type=float, default=None, help="with --from-json: its seconds")
    args = parser.parse_args()
    import shardviz as sv

    wall = args.wall
    if args.from_json:
        report = sv.Report.from_json(args.from_json.read_text())
    else:
        t0 = time.perf_counter()
        traced, _ = traced_step(args.layers)
        print(f"traced in {time.perf_counter() - t0:.0f} s", flush=True)
        C.RESULTS.mkdir(exist_ok=True)
        # Compiled and analysed once; kept as it is before the estimate on the target (which
        # explains it again from shardviz's cache of compiled programs, no second compile).
        first = sv.explain(traced)
        print(f"compiled and explained in {time.perf_counter() - t0:.0f} s", flush=True)
        SAVED.with_suffix(".untargeted.json").write_text(first.to_json())
        report = sv.explain(traced, target=TARGET)
        wall = time.perf_counter() - t0
        print(f"explained on {TARGET} in {wall:.0f} s", flush=True)
        SAVED.write_text(report.to_json())
        print(report, flush=True)
    command = "benchmarks/maxtext.py" + (f" --layers {args.layers}" if args.layers else "")
    text = section(figures(report), args.layers, wall, command + " --write")
    print(text)
    if args.write:
        C.replace_section(C.README, "maxtext", text)


if __name__ == "__main__":
    main()
