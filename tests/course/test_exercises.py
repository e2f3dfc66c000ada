"""Every exercise of the course accepts its solution and rejects each wrong answer it lists,
with a hint; every exercise a notebook checks exists, and every exercise is in a notebook."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shardviz.course import UNANSWERED, Verdict, check, exercises
from shardviz.course.solutions import solutions
from shardviz.model.units import format_bytes

NOTEBOOKS = Path(__file__).resolve().parent.parent.parent / "notebooks"
EXERCISES = exercises()
SOLUTIONS = solutions()


def test_every_exercise_has_a_solution_and_every_solution_an_exercise():
    assert EXERCISES, "the course has no exercises"
    assert set(EXERCISES) == set(SOLUTIONS)
    assert all(why for _, why in SOLUTIONS.values()), "every solution says why"


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_the_solution_is_right(exercise_id):
    verdict = check(exercise_id, SOLUTIONS[exercise_id][0])
    assert verdict.right is True, str(verdict)
    assert verdict.hint == ""


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [(k, w) for k, ex in EXERCISES.items() for w in ex.wrong],
    ids=lambda v: str(v)[:30],
)
def test_a_wrong_answer_is_wrong_with_a_hint(exercise_id, answer):
    verdict = check(exercise_id, answer)
    assert verdict.right is False, str(verdict)
    assert verdict.hint, "a wrong answer gets a hint"
    assert repr(SOLUTIONS[exercise_id][0]) not in verdict.hint, "the hint gives the answer away"


#: A figure with a unit, as the verdicts print bytes (``2,102,276 B``, ``2 MiB``).
FIGURE = re.compile(r"(?<![\w.])\d[\d,.]*\s?(?:B|KiB|MiB|GiB|TiB)\b")


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [(k, w) for k, ex in EXERCISES.items() for w in ex.wrong
     if "bytes" in ex.prompt and isinstance(w, int | float)],
    ids=lambda v: str(v)[:30],
)  # fmt: skip
def test_a_wrong_number_is_compared_like_with_like_and_nothing_given_away(exercise_id, answer):
    """A wrong number of bytes is told more or less, with no figure but the learner's own:
    another figure (the bytes in, when moved was asked) would give half the answer away."""
    verdict = check(exercise_id, answer)
    own = {format_bytes(int(answer), exact=True), format_bytes(int(answer))}
    text = verdict.message
    for mine in sorted(own, key=len, reverse=True):
        text = text.replace(mine, "")
    assert FIGURE.findall(text) == [], verdict.message
    assert any(f" {w} " in f" {verdict.message} " for w in ("more", "less", "fewer", "high", "low"))


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_a_right_answer_says_why(exercise_id):
    verdict = check(exercise_id, SOLUTIONS[exercise_id][0])
    assert verdict.why == SOLUTIONS[exercise_id][1]
    assert f"why: {verdict.why}" in str(verdict) and "sv-ex-why" in verdict._repr_html_()


def test_every_exercise_lists_wrong_answers():
    assert [k for k, ex in EXERCISES.items() if not ex.wrong] == []


def test_an_unanswered_exercise_says_so_and_an_unknown_one_raises():
    first = next(iter(EXERCISES))
    verdict = check(first, UNANSWERED)
    assert verdict.right is None and not verdict
    with pytest.raises(KeyError, match="no exercise '99.9'"):
        check("99.9", 1)


def test_a_verdict_escapes_what_it_shows():
    html = Verdict("01.1", False, "<b>x</b>", "<script>alert(1)</script>")._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;b&gt;x" in html


def _checked_in(path: Path) -> set[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return set(re.findall(r"check\(\"(\d\d\.\d+)\"", code))


def test_every_exercise_is_checked_in_its_notebook():
    by_notebook = {p.name[:2]: _checked_in(p) for p in NOTEBOOKS.glob("*.ipynb")}
    for exercise_id in EXERCISES:
        assert exercise_id in by_notebook.get(exercise_id.split(".")[0], set()), exercise_id
    for number, ids in by_notebook.items():
        assert ids <= set(EXERCISES), f"notebook {number} checks unknown exercises"


@pytest.mark.parametrize("answer", EXERCISES["12.2"].wrong)
def test_a_wrong_batch_is_told_more_or_less_with_no_other_figure(answer):
    """12.2 asks for sequences, not bytes: a wrong count is compared with the largest batch
    in words, and the only number in the message is the learner's own."""
    verdict = check("12.2", answer)
    assert re.findall(r"\d[\d,.]*", verdict.message) == [f"{answer:,}"], verdict.message
    assert " more " in verdict.message or " less " in verdict.message


def test_the_largest_batch_is_judged_within_one_percent():
    solution = SOLUTIONS["12.2"][0]
    assert check("12.2", solution + 1).right is True  # not rounded to the data axis: fine
    assert check("12.2", round(solution * 1.03)).right is False  # over HBM
    assert check("12.2", "as many as fit").right is False  # wrong form, the question again
