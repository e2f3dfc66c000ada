"""The plan search's space, rule sets and ranking, on shapes alone (nothing compiles here)."""

from __future__ import annotations

import io
import os

import pytest

from shardviz.errors import ShardvizError
from shardviz.model.roles import argument_role
from shardviz.model.search import Plan
from shardviz.strategies.candidates import (
    Choice,
    Leaf,
    Space,
    all_specs,
    batch_options,
    distance,
    role_mappings,
    zero_split,
)
from shardviz.strategies.rules import BUILTIN, spec_for_leaf
from shardviz.strategies.rules.plans import jax_entries, rule_set_of
from shardviz.strategies.search.progress import (
    NotebookBar,
    Quiet,
    TerminalLine,
    compiler_quiet,
    progress_for,
)
from shardviz.strategies.search.rank import ranked
from shardviz.strategies.search.suggestions import memory_bytes

AXES = {"data": 2, "model": 4}
D, H, B = 128, 512, 64


def _mlp_leaves() -> list[Leaf]:
    f32 = 4
    params = {"w1": (D, H), "b1": (H,), "w2": (H, D), "b2": (D,)}
    leaves = [Leaf(f"params/{k}", "params", k, "params", s, f32) for k, s in params.items()]
    leaves.append(Leaf("opt_state/0/count", "opt_state", "0/count", "optimizer", (), 4))
    for moment in ("mu", "nu"):
        leaves += [
            Leaf(f"opt_state/0/{moment}/{k}", "opt_state", f"0/{moment}/{k}", "optimizer", s, f32)
            for k, s in params.items()
        ]
    leaves += [Leaf(f"batch/{k}", "batch", k, "batch", (B, D), f32) for k in ("x", "y")]
    return leaves


def _transformer_leaves() -> list[Leaf]:
    shapes = {"embed": (256, 128), "unembed": (128, 256)}
    for i in range(2):
        shapes |= {
            f"layers/{i}/attn/wq": (128, 8, 16),
            f"layers/{i}/attn/wk": (128, 8, 16),
            f"layers/{i}/attn/wv": (128, 8, 16),
            f"layers/{i}/attn/wo": (8, 16, 128),
            f"layers/{i}/mlp/w_in": (128, 512),
            f"layers/{i}/mlp/w_out": (512, 128),
            f"layers/{i}/ln1/scale": (128,),
        }
    leaves = [Leaf(f"params/{k}", "params", k, "params", s, 4) for k, s in shapes.items()]
    return leaves + [Leaf("batch/inputs", "batch", "inputs", "batch", (16, 64), 4)]


def test_arguments_are_read_by_name_as_the_explorer_reads_them() -> None:
    assert argument_role("params") == "params"
    assert argument_role("model") == "params"
    assert argument_role("opt_state") == "optimizer"
    assert argument_role("batch") == "batch"
    assert argument_role("x") == "batch"


def test_every_spec_divides_its_dims_and_none_is_missing() -> None:
    # (6, 8) on data=2, model=4: 'model' never on dim 0 (6 % 4), both on dim 1 (8 % 8 == 0);
    # each axis on dim 0, dim 1 or nowhere: 3 x 3 = 9 placements, minus the 3 with model on dim 0.
    specs = all_specs((6, 8), AXES)
    assert len(specs) == 6
    assert ((), ("data", "model")) in specs
    assert all("model" not in s[0] for s in specs)
    assert len(set(specs)) == len(specs)


def test_distance_counts_the_axes_that_moved() -> None:
    assert distance(((), ("model",)), (("model",), ())) == 1
    assert distance(((), ("model",)), (("data",), ())) == 2
    assert distance(((), ()), ((), ())) == 0


def test_zero_split_puts_idle_axes_on_the_largest_dim_they_divide() -> None:
    # Megatron's w1 (None, 'model'): 'data' is idle and goes on dim 0 (the only unsplit one).
    assert zero_split(((), ("model",)), (D, H), AXES) == (("data",), ("model",))
    # Replicated: both axes onto the largest dim they divide, unsplit dims first.
    assert zero_split(((), ()), (D, H), AXES) == (("model",), ("data",))
    # Nothing divides 3: it stays as it is.
    assert zero_split(((),), (3,), AXES) == ((),)


def test_batch_options_are_the_axis_sets_that_divide_every_batch_leaf() -> None:
    leaves = [Leaf("batch/x", "batch", "x", "batch", (4, 3), 4)]
    # 4 divides by data (2) and model (4) but not by both (8): the most split first.
    assert batch_options(leaves, AXES) == [("model",), ("data",), ()]


def test_groups_tie_repeated_layers_and_same_shaped_siblings() -> None:
    space = Space(_transformer_leaves(), AXES)
    names = {g.name: g.members for g in space.groups}
    assert names["layers/*/attn/{wk,wq,wv}"] == (
        "layers/0/attn/wq", "layers/0/attn/wk", "layers/0/attn/wv",
        "layers/1/attn/wq", "layers/1/attn/wk", "layers/1/attn/wv",
    )  # fmt: skip
    assert names["layers/*/mlp/w_in"] == ("layers/0/mlp/w_in", "layers/1/mlp/w_in")
    # ln scales hold 0.1% of the bytes: not moved on their own.
    assert "layers/*/ln1/scale" in names
    assert "layers/*/ln1/scale" not in {g.name for g in space.searched}


def test_a_choice_means_specs_for_every_leaf_with_optimizer_state_mirroring_params() -> None:
    space = Space(_mlp_leaves(), AXES)
    megatron = {"w1": ((), ("model",)), "b1": (("model",),), "w2": (("model",), ()), "b2": ((),)}
    choice = Choice(
        ("data",),
        tuple(
            (megatron[g.members[0]], zero_split(megatron[g.members[0]], g.shape, AXES))
            for g in space.groups
        ),
    )
    specs = space.specs(choice)
    assert specs["params/w1"] == ((), ("model",))
    assert specs["opt_state/0/mu/w1"] == (("data",), ("model",))
    assert specs["opt_state/0/nu/w2"] == (("model",), ("data",))
    assert specs["opt_state/0/count"] == ()
    assert specs["batch/x"] == (("data",), ())
    # Bytes per device by hand: params w1, w2 D*H/4, b1 H/4, b2 whole D; mu and nu split
    # 8 ways each (the idle axes added), plus the 4-byte step count.
    params = 2 * D * H // 4 + H // 4 + D
    moments = 2 * (2 * D * H // 8 + H // 8 + D // 8)
    batch = 2 * B * D // 2
    assert space.argument_bytes(choice) == 4 * (params + moments + batch) + 4


def test_megatron_and_fsdp_come_from_the_built_in_rules_on_any_axis_names() -> None:
    space = Space(_mlp_leaves(), AXES)
    tp = space.from_rule_set(BUILTIN["tp"], {"data": ("data",), "model": ("model",)})
    assert tp is not None
    specs = space.specs(tp)
    assert specs["params/w1"] == ((), ("model",)) and specs["params/w2"] == (("model",), ())
    assert specs["batch/y"] == (("data",), ())
    fsdp_all = space.from_rule_set(BUILTIN["zero3"], {"data": ("data", "model")})
    assert fsdp_all is not None
    assert space.specs(fsdp_all)["params/w1"] == ((), ("data", "model"))
    assert fsdp_all.batch == ("data", "model")
    # On a mesh with other names, the readings still exist: x as data, y as model and back.
    maps = role_mappings(BUILTIN["tp"], {"x": 2, "y": 4})
    assert maps == [{"data": ("x",), "model": ("y",)}, {"data": ("y",), "model": ("x",)}]
    maps = role_mappings(BUILTIN["dp"], {"data": 2, "model": 4})
    assert maps[0] == {"data": ("data",)} and {"data": ("data", "model")} in maps


def test_one_axis_move_gives_megatron_from_data_parallel() -> None:
    # 'model' on every dim of size H (w1's columns, b1, w2's rows) and off the batch: the move
    # that finds Megatron's column-then-row split from plain data parallelism.
    space = Space(_mlp_leaves(), AXES)
    dp_all = space.replicated(("data", "model"))
    moves = dict(space.moves(dp_all))["axis model"]
    specs = {words: space.specs(c) for c, words in moves}
    got = specs["'model' on every dim of size 512 (off the batch)"]
    assert got["params/w1"] == ((), ("model",))
    assert got["params/b1"] == (("model",),)
    assert got["params/w2"] == (("model",), ())
    assert got["batch/x"] == (("data",), ())


def test_idle_axes_are_counted() -> None:
    space = Space(_mlp_leaves(), AXES)
    assert space.idle_ways(space.replicated(("data",))) == 4
    assert space.idle_ways(space.replicated(())) == 8
    assert space.idle_ways(space.replicated(("data", "model"))) == 1


# --- rule sets -----------------------------------------------------------------------------


def _resolve(rules: tuple, path: str, shape: tuple[int, ...], what: str) -> tuple:
    """The spec ``rules`` give a leaf, padded to its rank (no rule: replicated)."""
    spec, _ = spec_for_leaf(path, shape, rules, AXES, what)
    return tuple(spec) + (None,) * (len(shape) - len(spec))


def test_rules_reproduce_a_plans_specs_with_one_pattern_per_layer_group() -> None:
    leaves = _transformer_leaves()
    specs = {
        x.path: (((), ("model",), ()) if "attn/w" in x.path and "wo" not in x.path else
                 tuple(() for _ in x.shape))
        for x in leaves
    }  # fmt: skip
    specs["batch/inputs"] = (("data",), ())
    rules = rule_set_of(specs, ("data", "model"), mesh_shape=(2, 4))
    assert rules.params == ((r"^layers/\d+/attn/(?:wk|wq|wv)$", (None, "model", None)),)
    assert rules.batch == ((".*", ("data",)),)
    assert rules.extra["mesh_shape"] == (2, 4)
    for x in leaves:
        if x.role == "params":
            assert _resolve(rules.params, x.inner, x.shape, "params") == jax_entries(specs[x.path])


def test_a_pattern_that_would_catch_another_leaf_falls_back_to_exact_paths() -> None:
    # Same parent and name pattern, but layer 1 keeps w replicated: \d+ would catch both.
    specs = {
        "params/layers/0/w": ((), ("model",)),
        "params/layers/1/w": ((), ()),
        "batch/x": ((), ()),
    }
    rules = rule_set_of(specs, ("data", "model"))
    assert rules.params == ((r"^(?:layers/0/w)$", (None, "model")),)
    assert rules.batch == ()


def test_optimizer_rules_come_from_the_leaves_that_mirror_each_parameter() -> None:
    specs = {
        "params/w1": ((), ("model",)),
        "opt_state/0/mu/w1": (("data",), ("model",)),
        "opt_state/0/nu/w1": (("data",), ("model",)),
        "batch/x": (("data",), ()),
    }
    rules = rule_set_of(specs, ("data", "model"))
    assert rules.optimizer == ((r"^w1$", ("data", "model")),)
    assert rules.grads == rules.optimizer  # gradients land where the optimizer updates


# --- the memory limit ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "want"),
    [
        (1000, 1000),
        ("2 GiB", 2 * 1024**3),
        ("512MiB", 512 * 1024**2),
        ("1.5 GB", 1_500_000_000),
        ("700 KiB", 700 * 1024),
        ("4096", 4096),
        (None, None),
    ],
)
def test_memory_limits_are_read_in_binary_and_decimal_units(given, want) -> None:
    assert memory_bytes(given) == want


@pytest.mark.parametrize("bad", ["lots", "2 GiBs", "-1 GiB", 0, True])
def test_a_bad_memory_limit_says_how_to_write_one(bad) -> None:
    with pytest.raises(ShardvizError, match=r"memory_limit=.*Fix: give bytes per device"):
        memory_bytes(bad)


# --- ranking -------------------------------------------------------------------------------


def _plan(label: str, moved: int, peak: int, flops: float, **kw) -> Plan:
    return Plan(
        label=label, how="", specs={}, report=None, peak_bytes=peak, moved_bytes=moved,
        flops_per_device=flops, flops_global=8 * 100.0, **kw,
    )  # fmt: skip


def test_ranking_without_a_target_never_crowns_the_plan_that_splits_nothing() -> None:
    idle = _plan("#1", moved=0, peak=100, flops=800.0)  # every device does all the work
    dp = _plan("#2", moved=5000, peak=100, flops=101.0)
    tp = _plan("#3", moved=3000, peak=100, flops=108.0)  # within 10% of the least work
    half = _plan("#4", moved=10, peak=100, flops=400.0)
    order = [p.label for p in ranked([idle, dp, tp, half], with_target=False)]
    assert order == ["#3", "#2", "#4", "#1"]


def test_over_the_limit_or_failed_plans_are_never_first() -> None:
    over = _plan("#1", moved=0, peak=900, flops=100.0, fits=False)
    fits = _plan("#2", moved=5000, peak=100, flops=100.0, fits=True)
    failed = _plan("#3", moved=0, peak=0, flops=1.0, error="the compiler rejected it")
    assert [p.label for p in ranked([over, failed, fits], False)] == ["#2", "#1", "#3"]


def test_near_ties_in_bytes_go_to_the_lower_peak_then_the_first_tried() -> None:
    a = _plan("#1", moved=1000, peak=500, flops=100.0)
    b = _plan("#2", moved=990, peak=400, flops=100.0)  # 1% fewer bytes: a tie, lower peak
    c = _plan("#3", moved=1000, peak=400, flops=100.0)
    assert [p.label for p in ranked([a, b, c], False)] == ["#2", "#3", "#1"]


def test_ranking_with_a_target_follows_the_estimated_step() -> None:
    slow = _plan("#1", moved=10, peak=100, flops=100.0, estimated_seconds=2e-3)
    fast = _plan("#2", moved=9000, peak=100, flops=800.0, estimated_seconds=1e-3)
    assert [p.label for p in ranked([slow, fast], True)] == ["#2", "#1"]


# --- progress ------------------------------------------------------------------------------


def test_the_terminal_line_is_rewritten_in_place_and_ended_once() -> None:
    out = io.StringIO()
    line = TerminalLine(out)
    line.update(1, 0.4, 60, "#1 (1 KiB moved)")
    line.update(2, 1.2, 60, "#2 (512 B moved)")
    line.finish("2 plans tried in 1 s")
    text = out.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n") and text.count("\n") == 1
    assert "2 plans tried, 1 of 60 s; best so far: #2 (512 B moved)" in text


def test_progress_is_quiet_off_a_terminal_and_when_asked() -> None:
    assert isinstance(progress_for(False), Quiet)
    assert isinstance(progress_for(True, io.StringIO()), Quiet)  # not a tty, not a notebook
    custom = Quiet()
    assert progress_for(custom) is custom


class _Shown:
    """IPython's display as the bar uses it: what was shown, and what replaced it."""

    def __init__(self) -> None:
        self.shown: list[object] = []
        self.updates: list[tuple[dict, bool]] = []

    def __call__(self, obj: object, display_id: bool = False) -> _Shown:
        assert display_id, "the bar keeps a handle to replace itself at the finish"
        self.shown.append(obj)
        return self

    def update(self, bundle: dict, raw: bool = False) -> None:
        self.updates.append((bundle, raw))


def test_the_notebook_bar_fills_with_the_budget_and_leaves_a_static_line() -> None:
    shown = _Shown()
    bar = NotebookBar(shown)
    assert shown.shown == [bar.box]
    bar.update(3, 15.0, 60.0, "#2 (1 KiB moved)")
    assert bar.bar.value == pytest.approx(0.25)
    assert "3 plans tried" in bar.label.value
    assert shown.updates == []
    bar.finish("3 plans tried in 16 s; best <#1>")
    assert bar.bar.value == 1.0 and bar.bar.bar_style == "success"
    assert bar.label.value == "3 plans tried in 16 s; best <#1>"
    # The widget's output becomes the final line, as text and escaped HTML (no kernel needed).
    ((bundle, raw),) = shown.updates
    assert raw and bundle["text/plain"] == "shardviz.suggest: 3 plans tried in 16 s; best <#1>"
    assert (
        bundle["text/html"] == "<div>shardviz.suggest: 3 plans tried in 16 s; best &lt;#1&gt;</div>"
    )


def test_compiler_noise_is_quieted_but_the_progress_stream_still_writes(capfd) -> None:
    with compiler_quiet() as real:
        os.write(2, b"[SPMD] Involuntary full rematerialization\n")
        assert real is not None
        real.write("progress\n")
        real.flush()
    os.write(2, b"after\n")
    err = capfd.readouterr().err
    assert "Involuntary" not in err
    assert "progress" in err and "after" in err


def test_a_jupyter_kernel_is_told_apart_from_a_terminal_ipython(monkeypatch) -> None:
    import sys
    import types

    from shardviz.strategies.search.progress import in_notebook

    shell = types.SimpleNamespace(config={})
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert not in_notebook()  # IPython in a terminal: no widgets there
    shell.config = {"IPKernelApp": {"connection_file": "kernel.json"}}
    assert in_notebook()
    monkeypatch.delitem(sys.modules, "IPython")
    assert not in_notebook()
