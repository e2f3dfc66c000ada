"""Explorer's payloads without a widget or a browser: JSON that is the model.

The payloads are checked against the model objects they come from, and against the 1 MB budget
at 512 devices. (The tiles of intermediates come from ``shardviz.model.tiles_from_spec``,
tested in ``tests/model/test_tiles.py``.)
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import shardviz.widgets.explorer.payload as ep
from shardviz.model import Frame, LeafBytes, MeshLayout, Source, TreeLayout, tiles_from_spec
from shardviz.model._codec import to_data
from shardviz.model.array import format_index
from shardviz.render.grid_view import mesh_grid_view
from shardviz.render.report.view import no_source_words
from shardviz.widgets.explorer.payload import (
    array_entries,
    array_json,
    array_payload,
    memory_payload,
    report_json,
    report_payload,
)
from tests.render.fixtures import make_layout, make_mesh, mesh_2x4
from tests.render.report_fixtures import (
    NASTY,
    compile_only_report,
    dp_report,
    large_report,
    nasty_report,
    shard_map_report,
)
from tests.without_jax import imported_modules, run_without_jax

MB = 1_000_000

# --------------------------------------------------------------------------------------------
# The report payload is the model


def _source(payload, k) -> Source | None:
    """The call chain at position ``k`` (a chain of no frames stands for no source)."""
    if k is None or not payload["sources"][k]:
        return None
    return Source(
        tuple(Frame(payload["files"][f], line, fn) for f, line, fn in payload["sources"][k])
    )


@pytest.mark.parametrize("make", [dp_report, shard_map_report, compile_only_report, nasty_report])
def test_ledger_entries_equal_the_models_collectives(make):
    report = make()
    p = json.loads(report_json(report))
    assert len(p["collectives"]) == len(report.collectives)
    for i, (e, c) in enumerate(zip(p["collectives"], report.collectives, strict=True)):
        assert e["index"] == i
        assert (e["name"], e["kind"], tuple(e["axes"])) == (c.name, c.kind, c.axes)
        assert (e["in_bytes"], e["out_bytes"], e["moved_bytes"]) == (
            c.in_bytes, c.out_bytes, c.moved_bytes
        )  # fmt: skip
        assert (tuple(e["in_shape"]), e["in_dtype"]) == (c.in_shape, c.in_dtype)
        assert (tuple(e["out_shape"]), e["out_dtype"]) == (c.out_shape, c.out_dtype)
        assert e["group_size"] == c.group_size
        assert e["user_written"] == c.user_written and e["reshard"] == c.reshard
        groups = p["groupings"][e["groups"]] if e["groups"] is not None else []
        assert tuple(tuple(g) for g in groups) == c.groups
        pairs = p["pairings"][e["pairs"]] if e["pairs"] is not None else []
        assert tuple(tuple(x) for x in pairs) == c.pairs
        assert _source(p, e["source"]) == c.source


def test_arrays_list_every_leaf_and_intermediate_with_its_spec():
    report = shard_map_report()
    p = report_payload(report)
    ids = [a["id"] for a in p["arrays"]]
    assert ids == (
        [f"arg:{x.name}" for x in report.arguments]
        + [f"out:{x.name}" for x in report.outputs]
        + [f"mid:{s.name}" for s in report.intermediates]
    )
    mids = [a for a in p["arrays"] if a["role"] == "intermediate"]
    for a, s in zip(mids, report.intermediates, strict=True):
        assert a["spec"] == (None if s.spec is None else [list(e) for e in s.spec])
        assert (a["op"], a["reshard"], tuple(a["shape"])) == (s.op, s.reshard, s.shape)
        assert _source(p, a["source"]) == s.source
    assert all("tiles" not in a for a in p["arrays"]), "tiles are sent for one array at a time"
    # a collective names the intermediate it reshards by id
    (ag,) = [c for c in p["collectives"] if c["reshard"]]
    assert ag["reshard_array"] == "mid:copy.5"


def test_mesh_colors_and_memory_are_the_models():
    report = dp_report()
    p = json.loads(report_json(report))
    assert MeshLayout.from_json(json.dumps(p["mesh"])) == report.mesh
    assert set(p["colors"]) == {str(d) for d in report.mesh.device_ids}
    m = p["memory"]
    assert m["devices"] == list(report.mesh.device_ids)
    args = report.arguments.bytes_per_device
    outs = report.outputs.bytes_per_device
    for d, (a, o, t) in zip(m["devices"], m["bytes"], strict=True):
        assert a == args[d]
        assert o == max(0, outs[d] - report.memory.alias_bytes)
        assert t == report.memory.temp_bytes
    assert m["peak_bytes"] == report.memory.peak_bytes
    assert m["parts"] == ["argument", "output", "temp"]


def test_memory_without_leaves_uses_the_compilers_figures():
    report = large_report(6, (2, 4))
    m = memory_payload(report)
    assert m["bytes"] == [[report.memory.argument_bytes, 0, report.memory.temp_bytes]] * 8
    assert m["from_leaves"] == [False, False]


def test_duplicate_names_get_unique_ids():
    mesh = mesh_2x4()
    leaf = make_layout("w", (8, 4), ("data",), mesh)
    report = dataclasses.replace(
        dp_report(), arguments=TreeLayout((leaf, leaf)), outputs=TreeLayout((leaf,))
    )
    ids = [e.id for e in array_entries(report)][:3]
    assert ids == ["arg:w", "arg:w#2", "out:w"]


# --------------------------------------------------------------------------------------------
# The array picker's groups: by module path, parameters first


def _leaves(names: list[str]) -> TreeLayout:
    mesh = mesh_2x4()
    return TreeLayout(tuple(make_layout(n, (8, 4), ("data",), mesh) for n in names))


#: A training step's state as explain names it: optimizer state and the batch sort before
#: the parameters, as jax flattens dict keys.
STATE = [
    "batch/x",
    "state/opt/0/count",
    "state/opt/0/mu/layers/0/wq",
    "state/opt/0/mu/layers/1/wq",
    "state/params/embed",
    "state/params/layers/0/wq",
    "state/params/layers/0/wk",
    "state/params/layers/1/wq",
    "step",
]


def _picker_report():
    outs = ["out/0/opt/0/count", "out/0/params/layers/0/wq", "out/1"]
    return dataclasses.replace(dp_report(), arguments=_leaves(STATE), outputs=_leaves(outs))


def test_picker_groups_by_module_path_parameters_first():
    report = _picker_report()
    p = report_payload(report)
    groups = [(g["label"], g["role"], g["params"]) for g in p["picker"]]
    assert groups == [
        ("state/params", "argument", True),
        ("state/params/layers/0", "argument", True),
        ("state/params/layers/1", "argument", True),
        ("batch", "argument", False),
        ("state/opt/0", "argument", False),
        ("state/opt/0/mu/layers/0", "argument", False),
        ("state/opt/0/mu/layers/1", "argument", False),
        ("arguments", "argument", False),  # top-level leaves: the role's title
        ("out/0/params/layers/0", "output", True),
        ("out/0/opt/0", "output", False),
        ("out", "output", False),
        (f"intermediates ({len(report.intermediates)})", "intermediate", False),
    ]
    arrays = p["arrays"]
    layer0 = p["picker"][1]["arrays"]
    assert [arrays[k]["id"] for k in layer0] == [
        "arg:state/params/layers/0/wq", "arg:state/params/layers/0/wk"
    ]  # fmt: skip
    assert [arrays[k]["label"] for k in layer0] == ["wq", "wk"]
    # every array is in exactly one group, and a group's label plus the option's is its path
    positions = sorted(k for g in p["picker"] for k in g["arrays"])
    assert positions == list(range(len(arrays)))
    for g in p["picker"]:
        for k in g["arrays"]:
            a = arrays[k]
            if a["role"] == "intermediate" or "/" not in a["name"]:
                assert a["label"] == a["name"]
            else:
                assert a["name"] == f"{g['label']}/{a['label']}"


def test_the_intermediates_group_says_how_many_it_leaves_out():
    assert ep.intermediates_title(12, 0) == "intermediates (12)"
    assert ep.intermediates_title(336, 5978) == (
        "intermediates (336 listed: the reshard points; 5,978 more not listed)"
    )


@pytest.mark.parametrize(
    "name, parts",
    [
        ("state/params/layers/0/wq", ["state", "params", "layers", "0", "wq"]),
        ("w", ["w"]),
        ("params['a/b']/w", ["params['a/b']", "w"]),
        (f"params['{NASTY}']", [f"params['{NASTY}']"]),
        ('x["</"]/y', ['x["</"]', "y"]),
    ],
)
def test_path_parts_split_only_outside_brackets_and_quotes(name, parts):
    assert ep.path_parts(name) == parts


@pytest.mark.parametrize(
    "name, param",
    [
        ("state/params/layers/0/wq", True),
        ("out/0/params/embed", True),
        ("params/w1", True),
        ("state/opt/0/mu/layers/0/wq", False),
        ("opt_state/0/mu/params/w", False),  # flax: the optimizer's copy of the params tree
        ("batch/x", False),
        ("step", False),
    ],
)
def test_a_parameter_is_under_params_and_not_under_optimizer_state(name, param):
    assert ep.is_parameter(name) is param


# --------------------------------------------------------------------------------------------
# The array payload


def test_argument_tiles_are_the_leafs_own():
    report = dp_report()
    p = array_payload(report, "arg:batch.x")
    leaf = report.arguments["batch.x"]
    assert p["message"] is None and p["facts"]["computed"] is False
    assert len(p["tiles"]) == leaf.num_distinct_tiles
    for t, group in zip(p["tiles"], leaf.distinct_tiles, strict=True):
        assert t["devices"] == [x.device_id for x in group]
        assert [tuple(iv) for iv in t["index"]] == list(group[0].key)
        assert t["nbytes"] == group[0].nbytes


def test_intermediate_tiles_are_computed_from_its_spec():
    report = dp_report()
    s = report.intermediates[0]
    p = array_payload(report, f"mid:{s.name}")
    expected = tiles_from_spec(s.shape, s.dtype, s.spec, report.mesh)
    holders = {}
    for t in expected:
        holders.setdefault(t.key, []).append(t.device_id)
    assert {tuple(map(tuple, t["index"])): t["devices"] for t in p["tiles"]} == holders
    assert p["facts"]["computed"] is True
    assert p["spec_str"] == s.spec_str


def test_nd_arrays_draw_two_dims_and_the_rest_as_small_multiples():
    mesh = make_mesh(("a", "b", "c"), (2, 2, 2))
    leaf = make_layout("t", (4, 6, 8), ("a", "b", "c"), mesh)
    report = dataclasses.replace(dp_report(), mesh=mesh, arguments=TreeLayout((leaf,)))
    g = array_payload(report, "arg:t")["grid"]
    assert g["rows"]["used"] and g["cols"]["used"]
    assert [r[2] for r in g["rows"]["bands"]] == ["0:3", "3:6"]  # dim 1 down, dim 2 across
    assert len(g["panels"]) == 2 and g["panels"][0]["label"] == "dim 0 = 0:2"
    cells = [c for panel in g["panels"] for c in panel["cells"]]
    assert sorted(k for _, _, k in cells) == list(range(8)), "each tile drawn once"
    assert len(g["row_sizes"]) == 2 and len(g["col_sizes"]) == 2


def test_spec_less_intermediate_has_a_message_not_tiles():
    report = shard_map_report()
    p = array_payload(report, "mid:add.2")
    assert p["tiles"] == [] and p["grid"] is None
    assert "no named sharding" in p["message"] and "{manual}" in p["message"]
    assert array_payload(report, "") is None and array_json(report, "") == ""
    with pytest.raises(KeyError):
        array_payload(report, "mid:nope")


# --------------------------------------------------------------------------------------------
# Budget, escaping, purity


def report_512():
    """200 collectives and 400 intermediates on 8x64 devices, with leaves tiled 512 ways."""
    report = large_report(200, (8, 64))
    mesh = report.mesh
    specs = [("data", "model"), ("model", "data"), (("data", "model"),), (None, "model")]
    leaves = tuple(
        make_layout(f"params/layer_{i}/w", (4096, 4096), specs[i % 4], mesh) for i in range(24)
    )
    return dataclasses.replace(
        report,
        arguments=TreeLayout(leaves),
        outputs=TreeLayout(leaves),
        memory=dataclasses.replace(
            report.memory, by_leaf=tuple(LeafBytes(x.name, "param", 1 << 20) for x in leaves)
        ),
    )


def test_mesh_is_sent_laid_out_as_the_static_view_lays_it_out():
    report = dp_report()
    assert report_payload(report)["mesh_grid"] == to_data(mesh_grid_view(report.mesh))
    no_mesh = dataclasses.replace(report, mesh=None)
    assert report_payload(no_mesh)["mesh_grid"] is None


def test_payload_fits_one_megabyte_at_512_devices():
    report = report_512()
    assert report.mesh.size == 512
    text = report_json(report)
    biggest = max(len(array_json(report, e.id).encode()) for e in array_entries(report))
    total = len(text.encode()) + biggest
    assert total <= MB, f"report {len(text.encode()):,} B + array {biggest:,} B"
    # the mesh is sent once, tiles not at all (only with the picked array)
    p = json.loads(text)
    assert text.count('"process_index"') == 512
    assert '"tiles"' not in text
    assert len(p["groupings"]) < 10, "groups are shared between collectives"


def test_json_text_is_inert_in_html_and_reads_back():
    report = nasty_report()
    text = report_json(report)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["function"] == report.function
    leaf = report.arguments.leaves[0].name
    assert NASTY in json.loads(array_json(report, f"arg:{leaf}"))["name"]


def test_grid_text_says_what_the_static_view_says():
    report = dp_report()
    p = array_payload(report, "arg:batch.x")
    t = report.arguments["batch.x"].tiles[0]
    assert (
        format_index(t.index)
        == "[" + ", ".join(f"{a}:{b}" for a, b in p["tiles"][0]["index"]) + "]"
    )
    assert p["grid"]["summary"].startswith("rows: dim 0 (64)")


def test_payload_module_imports_no_jax_and_no_anywidget():
    allowed = {"json", "math", "re", "collections", "dataclasses", "typing", "__future__"}
    # shardviz.analysis is jax-free too (tests/test_architecture.py: WITHOUT_JAX)
    pure = (
        "shardviz.model",
        "shardviz.analysis",
        "shardviz.render",
    )
    for module in (ep,):
        for name in imported_modules(Path(module.__file__)):
            top = name.split(".")[0]
            assert top in allowed or name.startswith(pure), f"{module.__name__}: {name}"
    out = run_without_jax(
        """
        import sys
        from shardviz.widgets.explorer.payload import report_json, array_json
        from tests.render.report_fixtures import dp_report
        r = dp_report()
        print(len(report_json(r)) > 0, len(array_json(r, "mid:dot.1")) > 0)
        assert not any(m == "jax" or m.startswith("jax.") for m in sys.modules)
        """
    )
    assert out.split() == ["True", "True"]


# --------------------------------------------------------------------------------------------
# Estimates on a target


def test_payload_carries_the_estimate_and_each_collectives_estimated_seconds():
    from tests.render.report_fixtures import dp_v5e_report

    report = dp_v5e_report()
    e, target = report.estimate, report.target
    assert e is not None and target is not None
    p = json.loads(report_json(report))
    est = p["estimate"]
    assert est["target"] == target.label == e.target and est["target_name"] == "v5e:2x4"
    for key in ("compute_seconds", "memory_seconds", "collective_seconds", "step_seconds",
                "bound", "mfu", "hfu", "hbm_bytes", "peak_bytes", "hbm_headroom_bytes", "fits",
                "fit_text"):  # fmt: skip
        assert est[key] == getattr(e, key), key
    assert est["words"] == "a lower bound, not a measurement"
    assert est["target_line"].startswith(f"estimated as if this mesh were {target.label}")
    assert [r[0] for r in est["rows"]] == ["step", "compute", "memory", "communication", "mfu",
                                           "hfu", "hbm"]  # fmt: skip
    assert est["lower_bound"] == []
    assert ["placement", target.placement] in est["notes"]
    for entry, c in zip(p["collectives"], report.collectives, strict=True):
        assert entry["estimated_seconds"] == c.estimated_seconds is not None
        assert entry["estimate_formula"] == c.estimate_formula != ""


def test_without_a_target_the_payload_has_no_estimate():
    p = report_payload(dp_report())
    assert p["estimate"] is None
    assert all(c["estimated_seconds"] is None for c in p["collectives"])


def test_payload_with_an_estimate_fits_one_megabyte_at_512_devices():
    from shardviz.analysis.estimate.step import with_estimate

    report = with_estimate(report_512(), "v5e")
    assert report.estimate is not None and report.mesh.size == 512
    text = report_json(report)
    biggest = max(len(array_json(report, e.id).encode()) for e in array_entries(report))
    assert len(text.encode()) + biggest <= MB
    assert len(text.encode()) - len(report_json(report_512()).encode()) < 60_000


def test_strategies_of_several_targets_have_distinct_ids():
    from tests.render.compare_fixtures import comparison_targets

    c = comparison_targets()
    items = ep.strategies_payload(c)
    assert [s["id"] for s in items] == list(c.labels)
    assert len({s["id"] for s in items}) == len(items)
    assert items[1]["target"] == "NVIDIA H100 SXM 1x8 (8 GPUs, 1 host)"


# --------------------------------------------------------------------------------------------
# Ready-made words: spelled by the render helpers, so the front end derives none of them


@pytest.mark.parametrize("make", [dp_report, shard_map_report, nasty_report])
def test_ledger_words_are_the_static_views(make):
    from shardviz.model.units import format_bytes
    from shardviz.render.report.view import axes_repr, ids_str, operand_str, value_str

    report = make()
    p = report_payload(report)
    for e, c in zip(p["collectives"], report.collectives, strict=True):
        assert e["axes_text"] == axes_repr(c.axes) and e["operand"] == operand_str(c)
        assert e["in_value"] == value_str(c.in_dtype, c.in_shape)
        assert e["out_value"] == value_str(c.out_dtype, c.out_shape)
        assert e["in_bytes_text"] == format_bytes(c.in_bytes)
        assert e["moved_bytes_text"] == format_bytes(c.moved_bytes)
        assert e["moved_bytes_exact"] == format_bytes(c.moved_bytes, exact=True)
        assert (e["in_bytes_exact"], e["out_bytes_exact"]) == (
            format_bytes(c.in_bytes, exact=True), format_bytes(c.out_bytes, exact=True)
        )  # fmt: skip
        assert e["estimated_text"] is None  # no target
        if c.groups:
            labels = p["group_labels"][e["groups"]]
            assert labels == [ids_str(g) for g in c.groups[: ep.LEGEND_GROUPS]]
    assert len(p["source_labels"]) == len(p["sources"])
    for k, label in enumerate(p["source_labels"]):
        source = _source(p, k)
        if source is None:  # the words say why there is none
            assert label[1] == "?" and label[0] == label[2]
            assert label[0] in (no_source_words(), no_source_words("value"))
            continue
        assert label == [source.location, source.location.rsplit("/", 1)[-1], source.chain]


def test_estimate_words_are_the_static_views():
    from shardviz.model.units import format_mfu, format_seconds
    from tests.render.report_fixtures import dp_v5e_report

    report = dp_v5e_report()
    e = report.estimate
    p = report_payload(report)
    est = p["estimate"]
    mfu = f", MFU ≤ {format_mfu(e.mfu)}" if e.mfu is not None else ""
    step = format_seconds(e.step_seconds)
    assert est["headline"] == f"step ≥ {step} on {e.target} ({e.bound}-bound{mfu}) · {e.fit_text}"
    lines = est["tooltip"].splitlines()
    assert lines[0] == f"{est['rows'][0][1]} {est['rows'][0][2]}: {est['rows'][0][3]}"
    assert lines[len(est["rows"]) :] == [f"{kind}: {text}" for kind, text in est["notes"]]
    assert f"placement: {report.target.placement}" in lines
    for entry, c in zip(p["collectives"], report.collectives, strict=True):
        assert entry["estimated_text"] == format_seconds(c.estimated_seconds)


def test_memory_words_and_scale():
    from shardviz.analysis.estimate.step import with_estimate
    from shardviz.model.units import format_bytes
    from tests.render.compare_fixtures import small_hbm

    report = dp_report()
    m = report_payload(report)["memory"]
    assert len(m["label_of"]) == len(m["devices"]) and len(m["labels"]) <= len(m["devices"])
    for row, k in zip(m["bytes"], m["label_of"], strict=True):
        hover, line = m["labels"][k]
        assert hover.splitlines()[0] == format_bytes(sum(row), exact=True)
        assert hover.splitlines()[1] == f"argument {format_bytes(row[0], exact=True)}"
        assert line.endswith(f" · total {format_bytes(sum(row))}")
    assert len(m["labels"]) == len({tuple(r) for r in m["bytes"]}), "each distinct row once"
    tallest = max(m["peak_bytes"], *(sum(r) for r in m["bytes"]))
    assert m["scale"] == {"bytes": tallest, "text": format_bytes(tallest), "hbm_on_scale": False}
    assert m["peak_text"] == format_bytes(report.memory.peak_bytes)
    assert "arguments from the leaves each device holds" in m["note"]

    near = report_payload(with_estimate(report, small_hbm()))  # 8 MiB HBM: on the scale
    assert near["memory"]["scale"]["hbm_on_scale"] is True
    assert near["memory"]["scale"]["bytes"] == max(tallest, 8 << 20)
    far = report_payload(with_estimate(report, "v5e"))  # 16 GiB: far above the bars
    assert far["memory"]["scale"]["hbm_on_scale"] is False
    assert far["estimate"]["hbm_bytes_text"] == "16 GiB"


def test_tile_words_are_the_static_views():
    from shardviz.model.units import format_bytes
    from shardviz.render.geometry import devices_label, format_shape

    report = dp_report()
    p = array_payload(report, "arg:batch.x")
    leaf = report.arguments["batch.x"]
    assert p["facts"]["shard_text"] == format_shape(leaf.shard_shape)
    for t, group in zip(p["tiles"], leaf.distinct_tiles, strict=True):
        assert t["label"] == devices_label([x.device_id for x in group])
        shard = f"{format_shape(group[0].shape)} · {format_bytes(group[0].nbytes, exact=True)}"
        assert p["shards"][t["shard"]] == shard
    assert len(p["shards"]) == len({tuple(g[0].shape) for g in leaf.distinct_tiles})


def test_source_words_carry_the_line_and_say_why_one_is_missing():
    report = dp_report()
    first = report.collectives[0]
    line = 'y = h @ params["w2"] + b2'
    with_text = dataclasses.replace(first, source=dataclasses.replace(first.source, text=line))
    bare = dataclasses.replace(report.collectives[1], source=None)
    report = dataclasses.replace(report, collectives=(with_text, bare, *report.collectives[2:]))
    p = report_payload(report)
    location, short, chain = p["source_labels"][p["collectives"][0]["source"]]
    assert location == f"{first.source.location} · {line}"
    assert short.endswith(f":{first.source.innermost.line} · {line}")
    assert chain == first.source.chain
    missing = p["collectives"][1]["source"]
    assert p["sources"][missing] == []
    assert p["source_labels"][missing] == [no_source_words(), "?", no_source_words()]


# --------------------------------------------------------------------------------------------
# Kernels: each one with its flops, and the ones not counted named, never silent


def test_payload_carries_the_kernels_and_names_the_ones_not_counted():
    from shardviz.render.report.sections import cost_section, estimate_section
    from tests.render.report_fixtures import kernels_report, kernels_v5e_report

    report = kernels_v5e_report()
    e = report.estimate
    assert e is not None and report.cost is not None
    p = json.loads(report_json(report))
    k = p["kernels"]
    section = cost_section(report)
    assert k["heading"] == section.kernels_heading
    assert [r[:3] for r in k["rows"]] == [
        ["splash_mha_fwd", "counted", True],
        ["splash_mha_bwd", "not counted", False],
    ]
    assert [r[3:] for r in k["rows"]] == [[x.flops, x.meaning] for x in section.kernels]
    sentence = (
        "3 calls of `splash_mha_bwd` not counted: flops and time for them are missing "
        "(its grid could not be read)"
    )
    assert k["uncounted"] == sentence
    assert k["notice"] == f"not a bound: {sentence}" == e.not_a_bound
    assert k["tooltip"].splitlines()[0] == section.kernels_heading
    est = p["estimate"]
    assert est["uncounted"] == [sentence] and est["not_a_bound"] == e.not_a_bound
    assert est["words"] == "not a bound: 1 kernel not counted; not a measurement"
    assert est["headline"].endswith("· not a bound: 1 kernel not counted")
    assert "≥" not in est["headline"] and "≤" not in est["headline"]
    es = estimate_section(report)
    assert es is not None
    assert [r[0] for r in est["rows"]] == [r.key for r in es.rows] and "kernels" in est["rows"][-2]
    # Without a target, the kernels not counted are still named.
    bare = report_payload(kernels_report())
    assert bare["estimate"] is None and bare["kernels"]["notice"] == sentence


def test_without_kernels_the_payload_has_none_and_the_estimate_is_a_bound():
    from tests.render.report_fixtures import dp_v5e_report

    p = report_payload(dp_v5e_report())
    assert p["kernels"] is None
    assert p["estimate"]["uncounted"] == [] and p["estimate"]["not_a_bound"] == ""
    assert p["estimate"]["headline"].startswith("step ≥ ")
