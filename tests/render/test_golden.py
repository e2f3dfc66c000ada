"""The text views, pinned exactly by golden files in tests/golden/.

Rewrite the files after an intended change with ``SHARDVIZ_UPDATE_GOLDEN=1 pytest tests/render``
and read the diff before committing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from shardviz.render.text import array_text, mesh_text, tree_text

from .fixtures import (
    make_layout,
    make_mesh,
    mesh_2x4,
    mesh_2x64,
    mesh_3axis,
    mesh_4axis,
    tree_example,
    tree_uneven,
)

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE = os.environ.get("SHARDVIZ_UPDATE_GOLDEN") == "1"

CASES: dict[str, Callable[[], str]] = {
    "mesh_0axis": lambda: mesh_text(make_mesh((), ())),
    "mesh_1axis": lambda: mesh_text(make_mesh(("data",), (8,))),
    "mesh_2axis": lambda: mesh_text(mesh_2x4()),
    "mesh_3axis": lambda: mesh_text(mesh_3axis()),
    "mesh_4axis": lambda: mesh_text(mesh_4axis()),
    "mesh_2process": lambda: mesh_text(make_mesh(("data", "model"), (2, 4), processes=2)),
    "mesh_elided": lambda: mesh_text(mesh_2x64()),
    "array_0d": lambda: array_text(make_layout("step", (), (), mesh_2x4(), "int32", 4)),
    "array_1d": lambda: array_text(make_layout("bias", (16,), ("model",), mesh_2x4())),
    "array_2d_tiled": lambda: array_text(make_layout("w", (8, 16), ("data", "model"), mesh_2x4())),
    "array_2d_partial": lambda: array_text(make_layout("x", (8, 16), ("data", None), mesh_2x4())),
    "array_2d_replicated": lambda: array_text(make_layout("r", (8, 16), (), mesh_2x4())),
    "array_2d_two_axes": lambda: array_text(
        make_layout("emb", (64, 8), (("data", "model"), None), mesh_2x4(), "bfloat16", 2)
    ),
    "array_2d_uneven": lambda: array_text(make_layout("u", (10, 6), ("model", "data"), mesh_2x4())),
    "array_3d": lambda: array_text(
        make_layout("act", (4, 8, 16), ("pipe", "data", "model"), mesh_3axis())
    ),
    "array_3d_one_sharded": lambda: array_text(
        make_layout("h", (4, 8, 16), (None, "data", None), mesh_2x4())
    ),
    "array_4d": lambda: array_text(
        make_layout("k", (2, 4, 8, 16), ("a", "b", "c", "d"), mesh_4axis())
    ),
    "array_elided": lambda: array_text(
        make_layout("big", (8, 512), ("data", "model"), mesh_2x64())
    ),
    "array_elided_rows": lambda: array_text(
        make_layout("tall", (64, 4, 8), ("model", None, "data"), mesh_2x64())
    ),
    "array_elided_panels": lambda: array_text(
        make_layout(
            "stack",
            (32, 4, 8),
            ("x", "data", "model"),
            make_mesh(("x", "data", "model"), (16, 2, 2)),
        )
    ),
    "tree": lambda: tree_text(tree_example()),
    "tree_uneven": lambda: tree_text(tree_uneven()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_text(name: str) -> None:
    text = CASES[name]() + "\n"
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with SHARDVIZ_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_no_stale_golden_files() -> None:
    # report_*, compare_*, projection_*, findings_*, schedule_*, hosts_* and side_by_side goldens: checked
    # by their own modules.
    own = ("report_", "compare_", "projection_", "findings_", "schedule_", "hosts_", "side_by_side")
    names = {p.stem for p in GOLDEN.glob("*.txt") if not p.stem.startswith(own)}
    assert names <= set(CASES), f"golden files without a case: {sorted(names - set(CASES))}"


def test_text_is_deterministic() -> None:
    for make in CASES.values():
        assert make() == make()


def test_str_of_model_uses_text_renderers() -> None:
    mesh = mesh_2x4()
    layout = make_layout("w", (8, 16), ("data", "model"), mesh)
    assert str(mesh) == mesh_text(mesh)
    assert str(layout) == array_text(layout)
    assert str(tree_example()) == tree_text(tree_example())
