"""HLO module text -> instructions, shapes, operand table and source locations (no jax)."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

import shardviz.capture.hlo as hlo_api
from shardviz.capture.hlo.text import (
    ArrayShape,
    HloParseError,
    array_leaves,
    parse_hlo_module,
    parse_shape,
)
from tests.without_jax import run_without_jax

from . import hlo_text, marker_line

F32 = "f32"


def test_parses_every_instruction_of_a_compiled_module() -> None:
    module = parse_hlo_module(hlo_text("dp"))
    assert module.name == "jit_train_step"
    assert module.num_partitions == 8
    assert module.entry.name == "main.0_spmd"
    assert module.entry.is_entry
    names = [ins.name for ins in module.instructions()]
    assert len(names) == len(set(names)) > 40
    # Every non-blank line inside a computation is one instruction.
    in_body = 0
    inside = False
    for line in hlo_text("dp").splitlines():
        if line.rstrip().endswith("{") and not line.startswith((" ", "HloModule")):
            inside = True
        elif line.strip() == "}":
            inside = False
        elif inside and line.strip():
            in_body += 1
    assert len(names) == in_body


def test_tuple_shapes_with_spaces_and_operand_table() -> None:
    module = parse_hlo_module(hlo_text("dp"))
    ar = module.instruction("all-reduce.2")
    assert ar is not None and ar.opcode == "all-reduce"
    assert ar.shape == (ArrayShape(F32, (128, 32)), ArrayShape(F32, (32, 128)))
    assert ar.operands == ("dot.3", "dot.4")
    assert ar.attrs["replica_groups"] == "mesh['axis_0'=2,'axis_1'=1,'axis_2'=4] {'axis_0'}"
    assert ar.attrs["channel_id"] == "1"
    assert ar.op_name == "jit(train_step)/transpose(jvp())/dot_general"
    assert isinstance(ar.stack_frame_id, int)
    # Operand shapes are not printed on the collective's line: they come from the table.
    assert module.operand_shapes(ar) == ar.shape


def test_parse_shape_forms() -> None:
    assert parse_shape("f32[2,3]{1,0}") == ArrayShape("f32", (2, 3))
    assert parse_shape("bf16[]") == ArrayShape("bf16", ())
    assert parse_shape("f32[<=8,4]{1,0:T(8,128)}") == ArrayShape("f32", (8, 4))
    nested = parse_shape("((f32[8]{0}), f32[16]{0}, /*index=2*/u32[], token[])")
    assert nested == (
        (ArrayShape("f32", (8,)),),
        ArrayShape("f32", (16,)),
        ArrayShape("u32", ()),
        ArrayShape("token", ()),
    )
    assert [a.dims for a in array_leaves(nested)] == [(8,), (16,), (), ()]
    assert ArrayShape("bf16", (4, 4)).nbytes == 32
    assert ArrayShape("bf16", (4, 4)).dtype == "bfloat16"
    assert ArrayShape("pred", (3,)).nbytes == 3
    assert ArrayShape("s4", (3,)).nbytes == 2  # sub-byte types round up
    with pytest.raises(HloParseError):
        parse_shape("not a shape")


def test_tuple_all_to_all_with_index_comments() -> None:
    module = parse_hlo_module(hlo_text("fsdp"))
    a2a = module.instruction("all-to-all.5")
    assert a2a is not None
    assert len(a2a.operands) == 8 and len(a2a.shape) == 8
    assert all(s == ArrayShape(F32, (8, 1, 4)) for s in a2a.shape)
    assert "/*" not in "".join(a2a.operands)


def test_multi_line_instructions_typed_operands_and_bare_names() -> None:
    text = textwrap.dedent(
        """\
        HloModule AllGatherStartAndDone

        ENTRY AllGatherStartAndDone {
          %input = f32[8,256,256] parameter(0)
          %ag-start = (f32[8,256,256], f32[16,256,256]) all-gather-start(
            f32[8,256,256] %input), replica_groups={{0,1}}, dimensions={0},
            metadata={op_type="AllGather" op_name="ag0"}
          ROOT %ag-done = f32[16,256,256] all-gather-done(
            (f32[8,256,256], f32[16,256,256]) %ag-start),
            metadata={op_type="AllGather" op_name="ag0"}
        }
        """
    )
    module = parse_hlo_module(text)
    start = module.instruction("ag-start")
    done = module.instruction("ag-done")
    assert start is not None and done is not None
    assert start.operands == ("input",)
    assert start.operand_shapes == (ArrayShape(F32, (8, 256, 256)),)
    assert start.attrs["dimensions"] == "{0}"
    assert start.op_name == "ag0"
    assert done.operands == ("ag-start",) and done.is_root
    bare = parse_hlo_module(
        "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n"
    )
    assert bare.instruction("n").operands == ("p",)


def test_nested_computations_are_parsed_and_linked() -> None:
    module = parse_hlo_module(hlo_text("looped"))
    whiles = [i for i in module.entry.instructions if i.opcode == "while"]
    assert len(whiles) == 1
    body_name = whiles[0].attrs["body"].lstrip("%")
    assert body_name in whiles[0].called_computations
    body = module.computation(body_name)
    assert body is not None
    assert any(i.opcode == "all-gather" for i in body.instructions)
    fusions = [i for i in module.instructions() if i.opcode == "fusion"]
    assert fusions and all(module.computation(f.attrs["calls"]) for f in fusions)


def test_escaped_op_names_are_unescaped() -> None:
    module = parse_hlo_module(hlo_text("dp"))
    assert module.instruction("param").op_name == "params['w1']"


def _frames_in_programs(source) -> list[tuple[str, int]]:
    return [(f.function, f.line) for f in source.frames if f.file.endswith("programs.py")]


def test_stack_frames_give_lines_and_chains() -> None:
    module = parse_hlo_module(hlo_text("dp"))
    ar = module.instruction("all-reduce.2")
    source = module.source_of(ar)
    assert source is not None
    assert _frames_in_programs(source) == [
        ("train_step", marker_line("step_grad")),
        ("mlp_loss", marker_line("mlp_h")),
    ]
    assert source.chain.endswith("train_step > mlp_loss")
    assert source.location.endswith(f"programs.py:{marker_line('mlp_h')}")
    # The outermost frame is the script that compiled it.
    assert source.frames[0].file.endswith("make_fixtures.py")
    update = [i for i in module.instructions() if i.op_name == "jit(train_step)/sub"]
    assert _frames_in_programs(module.source_of(update[0])) == [
        ("train_step", marker_line("step_update")),
        ("train_step.<locals>.<lambda>", marker_line("step_update")),
    ]


@pytest.mark.parametrize(
    ("instruction", "mark"),
    [
        ("psum_invariant.7", "sm_psum"),
        ("ppermute.3", "sm_ppermute"),
        ("all-to-all", "sm_all_to_all"),
        ("all_gather.3", "sm_all_gather"),
        ("reduce_scatter.7", "sm_psum_scatter"),
    ],
)
def test_shard_map_collectives_point_at_their_lines(instruction: str, mark: str) -> None:
    module = parse_hlo_module(hlo_text("shard_map"))
    source = module.source_of(module.instruction(instruction))
    assert _frames_in_programs(source) == [("shard_map_body", marker_line(mark))]


def test_parent_frame_id_is_one_more_than_the_parent() -> None:
    text = textwrap.dedent(
        """\
        HloModule m

        FileNames
        1 "a.py"

        FunctionNames
        1 "outer"
        2 "middle"
        3 "inner"

        FileLocations
        1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=1 end_column=1}
        2 {file_name_id=1 function_name_id=2 line=20 end_line=20 column=2 end_column=2}
        3 {file_name_id=1 function_name_id=3 line=30 end_line=30 column=3 end_column=3}

        StackFrames
        1 {file_location_id=1 parent_frame_id=1}
        2 {file_location_id=2 parent_frame_id=2}
        3 {file_location_id=3 parent_frame_id=3}

        ENTRY e {
          %p = f32[2] parameter(0)
          ROOT %n = f32[2] negate(%p), metadata={op_name="x" stack_frame_id=3}
          %o = f32[2] negate(%p), metadata={op_name="y" source_file="b.py" source_line=7}
        }
        """
    )
    module = parse_hlo_module(text)
    source = module.source_of(module.instruction("n"))
    assert [(f.function, f.line, f.column) for f in source.frames] == [
        ("outer", 10, 1),
        ("middle", 20, 2),
        ("inner", 30, 3),
    ]
    assert source.chain == "outer > middle > inner"
    assert source.location == "a.py:30"
    old_style = module.source_of(module.instruction("o"))
    assert old_style.location == "b.py:7"
    assert module.source_of(module.instruction("p")) is None


def test_header_attributes_and_where_a_table_ends() -> None:
    text = textwrap.dedent(
        """\
        HloModule m, entry_computation_layout={(f32[2]{0}, f32[2]{0})->f32[2]{0}}, num_partitions=4, replica_count=2

        FileNames
        1 "a\\"b.py"
        FunctionNames
        1 f
        %c (x: f32[2]) -> f32[2] {
          ROOT %x = f32[2] parameter(0)
        }

        7 stray text outside a table
        ENTRY %e {
          %p = f32[2] parameter(0)
          ROOT %n = f32[2] negate(%p)
        }
        """
    )
    module = parse_hlo_module(text)
    assert module.name == "m" and module.num_devices == 8
    assert module.attrs["entry_computation_layout"] == "{(f32[2]{0}, f32[2]{0})->f32[2]{0}}"
    assert module.tables.file_names == {1: 'a"b.py'}
    # A table ends at a line that is not a row (here the next table, then a computation).
    assert module.tables.function_names == {1: "f"}
    assert [(c.name, c.is_entry) for c in module.computations] == [("c", False), ("e", True)]
    assert module.entry.root.name == "n"


def test_not_hlo_raises() -> None:
    with pytest.raises(HloParseError, match="Fix:"):
        parse_hlo_module("hello world")


def test_every_live_fixture_parses() -> None:
    from . import HLO_FIXTURES

    for path in sorted(HLO_FIXTURES.glob("*.txt")):
        if path.name.endswith(".device_ids.txt"):
            continue
        module = parse_hlo_module(path.read_text(encoding="utf-8"))
        assert module.entry.instructions, path.name


# --- the parser never needs jax ------------------------------------------------------------

HLO_MODULES = sorted(Path(hlo_api.__file__).parent.glob("*.py"))
ALLOWED = set(sys.stdlib_module_names) | {"numpy", "shardviz"}


def test_hlo_modules_import_only_stdlib_numpy_model_and_errors() -> None:
    assert {p.stem for p in HLO_MODULES} >= {"__init__", "text", "groups", "sharding", "op_work"}
    for path in HLO_MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom):
                names = [f"shardviz.capture.hlo.{node.module}"]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in ALLOWED, f"{path.name} imports {name}"
                if name.startswith("shardviz"):
                    assert name.startswith(
                        ("shardviz.model", "shardviz.errors", "shardviz.capture.hlo")
                    ), f"{path.name} imports {name}"


def test_parser_works_with_jax_blocked() -> None:
    out = run_without_jax(
        """
        from pathlib import Path
        from shardviz.capture.hlo import collectives_of_hlo, intermediates_of_hlo, link_reshards
        from shardviz.model import Device, MeshLayout

        here = Path("tests/fixtures/hlo")
        mesh = MeshLayout(("data", "model"), (2, 4), tuple(Device(i) for i in range(8)))
        cs = collectives_of_hlo((here / "dp.txt").read_text(), mesh)
        ints = intermediates_of_hlo((here / "dp.before_spmd.txt").read_text(), mesh)
        assert link_reshards(cs, ints)
        assert "jax" not in sys.modules
        print("ok")
        """
    )
    assert out.strip() == "ok"


def _called_by_attrs(ins) -> tuple[str, ...]:
    """The called computations as the full attribute parse reads them."""
    names: list[str] = []
    for key in ("calls", "to_apply", "body", "condition", "branch_computations",
                "called_computations", "true_computation", "false_computation"):  # fmt: skip
        v = ins.attrs.get(key)
        if v:
            names.extend(n.strip().lstrip("%") for n in v.strip("{}").split(",") if n.strip())
    return tuple(names)


def test_called_computations_read_without_parsing_every_attribute():
    """The one-regex reading of calls=, body=, branch_computations=... gives what the full
    attribute parse gives on every stored module (CPU, TPU, GPU, loops, conditionals)."""
    import gzip

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    checked = 0
    for path in sorted(fixtures.rglob("*.txt*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as f:
            text = f.read()
        if "HloModule" not in text[:2000]:
            continue
        for ins in parse_hlo_module(text).instructions():
            assert ins.called_computations == _called_by_attrs(ins), (path.name, ins.name)
            checked += bool(ins.called_computations)
    assert checked > 100


def test_a_call_key_inside_metadata_is_not_a_call():
    text = (
        "HloModule m\n\n%f (p: f32[]) -> f32[] {\n  ROOT %p = f32[] parameter(0)\n}\n\n"
        "ENTRY %main (a: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
        '  ROOT %r = f32[] fusion(%a), kind=kLoop, calls=%f, metadata={op_name="x, calls=%evil'
        ', body=%worse" source_file="y"}, backend_config={"calls=":"%no"}\n}\n'
    )
    (fusion,) = [i for i in parse_hlo_module(text).instructions() if i.opcode == "fusion"]
    assert fusion.called_computations == ("f",)
