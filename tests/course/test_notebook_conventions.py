"""The course notebooks follow notebooks/CONVENTIONS.md: learning goals and time up front, no
asserts in the cells a learner reads (they live in collapsed ``check`` cells), and at least two
self-checking exercises, each an answer cell left unanswered and a check cell."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MIN_EXERCISES = 2


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def _tags(cell: dict) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _has_assert(code: str) -> bool:
    lines = [line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:  # a cell magic body: not Python
        return False
    return any(isinstance(node, ast.Assert) for node in ast.walk(tree))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_opens_with_learning_goals_and_time(path: Path) -> None:
    first = _cells(path)[0]
    text = _source(first)
    assert first["cell_type"] == "markdown" and text.startswith(f"# {path.name[:2]} · ")
    assert "Learning goals" in text, f"{path.name}: the first cell states no learning goals"
    goals = re.findall(r"^- ", text.split("Learning goals", 1)[1], flags=re.M)
    assert len(goals) >= 3, f"{path.name}: fewer than 3 learning goals"
    assert re.search(r"\*\*Time:\*\* about \d+ minutes", text), f"{path.name}: no time"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_learner_cells_hold_no_asserts_and_check_cells_are_collapsed(path: Path) -> None:
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] != "code":
            continue
        code = _source(cell)
        if "check" in _tags(cell):
            assert code.startswith("# check: "), f"{path.name} cell {i}: say what is checked"
            hidden = cell.get("metadata", {}).get("jupyter", {}).get("source_hidden")
            assert hidden is True, f"{path.name} cell {i}: collapse the check cell's input"
        else:
            assert not _has_assert(code), f"{path.name} cell {i}: an assert in a learner cell"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_exercises_are_heading_answer_and_check(path: Path) -> None:
    cells = _cells(path)
    number = path.name[:2]
    found = []
    for i, cell in enumerate(cells):
        head = re.match(r"### Exercise (\d\d\.\d+): \S", _source(cell))
        if cell["cell_type"] != "markdown" or not head:
            continue
        ex_id = head.group(1)
        assert ex_id.startswith(number + "."), f"{path.name}: exercise {ex_id} is elsewhere"
        answer, check = cells[i + 1], cells[i + 2]
        var = f"answer_{ex_id.replace('.', '_')}"
        assert "answer" in _tags(answer), f"{path.name}: {ex_id}'s answer cell is not tagged"
        assert re.search(rf"^{var} = \.\.\.", _source(answer), flags=re.M), (
            f"{path.name}: {ex_id}'s answer cell must be stored as {var} = ..."
        )
        assert "exercise" in _tags(check), f"{path.name}: {ex_id}'s check cell is not tagged"
        last = _source(check).strip().splitlines()[-1]
        assert last == f'check("{ex_id}", {var})', f"{path.name}: {ex_id}'s check cell"
        found.append(ex_id)
    assert len(found) >= MIN_EXERCISES, f"{path.name}: {len(found)} exercise(s)"
    assert len(set(found)) == len(found), f"{path.name}: an exercise is asked twice"
    setup = "\n".join(_source(c) for c in cells if c["cell_type"] == "code")
    assert "from shardviz.course import check" in setup


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_ends_with_a_recap(path: Path) -> None:
    markdown = [_source(c) for c in _cells(path) if c["cell_type"] == "markdown"]
    assert any(m.lstrip().startswith("## Recap") for m in markdown[-3:]), path.name
