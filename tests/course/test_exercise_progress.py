"""An exercise check shows progress while its judge works (``checking 11.2…``), and the
compiles inside it show in that same line, not as bars of their own."""

from __future__ import annotations

import importlib

import pytest

import shardviz as sv
from shardviz.course import UNANSWERED, check
from shardviz.course.exercise import Exercise
from shardviz.course.solutions import solutions
from shardviz.errors import ShardvizError
from shardviz.strategies.progress import Reporter
from tests.strategies.test_progress import Recorder


class Lines:
    """A surface that keeps every line it showed."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ended: list[str] = []

    def show(self, fraction: float, line: str) -> None:
        self.lines.append(line)

    def end(self, line: str) -> None:
        self.ended.append(line)


def test_a_check_is_one_step_named_for_the_exercise():
    seen = Recorder()
    verdict = check("01.1", solutions()["01.1"][0], progress=seen)
    assert verdict.right is True
    assert seen.starts == [(1, 1, "checking 01.1…")]
    (words,) = seen.finished
    assert words.startswith("exercise 01.1 checked in ")


def test_an_unanswered_check_shows_no_progress():
    seen = Recorder()
    assert check("01.1", UNANSWERED, progress=seen).right is None
    assert seen.starts == [] and seen.finished == []


def _compiling_judge(answer: object) -> tuple[bool, str, str]:
    sv.compare("mlp", ["dp"], steps=1)  # progress=True: shown in the check's line
    return True, "compiled", ""


def _failing_judge(answer: object) -> tuple[bool, str, str]:
    raise ShardvizError("no such axis")


@pytest.fixture
def registered(monkeypatch):
    """Two exercises of the test's own, gone after it."""
    registry = importlib.import_module("shardviz.course.exercise")._REGISTRY
    for key, judge in {"99.1": _compiling_judge, "99.2": _failing_judge}.items():
        monkeypatch.setitem(registry, key, Exercise(key, key, key, judge))


def test_the_compiles_a_check_runs_show_in_its_line(registered):
    lines = Lines()
    outer = Reporter(lambda: lines, delay_s=0, ticking=False)
    assert check("99.1", "answer", progress=outer).right is True
    assert lines.lines[0].startswith("checking 99.1…, ")
    assert any(line.startswith("checking 99.1… · compiling dp (1 of 2), ") for line in lines.lines)
    assert any(
        line.startswith("checking 99.1… · running dp and checking it against one device (2 of 2)")
        for line in lines.lines
    )
    assert lines.ended[0].startswith("exercise 99.1 checked in ")


def test_a_judge_that_fails_ends_the_progress_saying_so(registered):
    seen = Recorder()
    verdict = check("99.2", "answer", progress=seen)
    assert verdict.right is False and "no such axis" in verdict.hint
    assert seen.finished == ["stopped by ShardvizError at step 1 of 1: checking 99.2…"]
