"""Exercises that check themselves: a learner's answer is run for real and judged.

An exercise is a *judge*: a function that takes the learner's answer (a partition spec, a
number of bytes, the name of a collective, ...), runs what it needs (``sv.explain``, a layout,
a compile) and says right or wrong, with a hint that points the way without giving the answer.
Each lives in a ``shardviz.course.ex_<NN>`` module next to its notebook's number, registered with
:func:`exercise`; :func:`check` is what a notebook's check cell calls. The answers are kept
apart, in ``shardviz.course.solutions``, for the tests (every check accepts its solution and
rejects each of the exercise's ``wrong`` answers) and the docs' solutions page.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shardviz.course.solutions import solutions
from shardviz.errors import ShardvizError
from shardviz.render.svg import esc
from shardviz.strategies.progress import Steps, stepping

#: What a learner's answer cell holds before they write anything.
UNANSWERED = ...


@dataclass(frozen=True)
class Verdict:
    """What a check says about an answer.

    Attributes:
        exercise: the exercise's id (``"03.1"``).
        right: True (right), False (wrong), None (not answered yet).
        message: one or two sentences: what was run and what came out.
        hint: for a wrong answer, where to look (never the answer itself).
        why: for a right answer, why it is right (the solution's reasoning).
    """

    exercise: str
    right: bool | None
    message: str
    hint: str = ""
    why: str = ""

    def __bool__(self) -> bool:
        return bool(self.right)

    def __str__(self) -> str:
        mark = {True: "right", False: "not yet", None: "not answered yet"}[self.right]
        text = f"exercise {self.exercise}: {mark}. {self.message}"
        text += f"\nhint: {self.hint}" if self.hint else ""
        return text + (f"\nwhy: {self.why}" if self.why else "")

    def _repr_html_(self) -> str:
        state = {True: "right", False: "wrong", None: "open"}[self.right]
        mark = {True: "✓ right", False: "✗ not yet", None: "… not answered yet"}[self.right]
        colors = {True: "#1a7f37", False: "#cf222e", None: "#57606a"}
        hint = f'<div class="sv-ex-hint"><b>hint:</b> {esc(self.hint)}</div>' if self.hint else ""
        if self.why:
            hint += f'<div class="sv-ex-why"><b>why:</b> {esc(self.why)}</div>'

        return (
            f'<div class="sv-ex sv-ex-{state}" style="border-left:4px solid '
            f'{colors[self.right]};padding:4px 10px;font-family:sans-serif;font-size:13px">'
            f"<b>exercise {esc(self.exercise)}: {mark}</b>"
            f"<div>{esc(self.message)}</div>{hint}</div>"
        )


@dataclass(frozen=True)
class Exercise:
    """One exercise: its id, where it is, what it asks, and its judge.

    Attributes:
        id: ``"NN.k"``: the notebook's number and the exercise's place in it.
        title: a few words, for lists (the docs' solutions page).
        prompt: the question as the notebook asks it.
        judge: ``answer -> (right, message, hint)``; it runs what it needs for real.
        wrong: answers a learner might give that must be judged wrong (the tests try each).
    """

    id: str
    title: str
    prompt: str
    judge: Callable[[Any], tuple[bool, str, str]]
    wrong: tuple[Any, ...] = field(default=())


#: Every exercise, by id (filled by importing the ``ex_*`` modules: see :func:`exercises`).
_REGISTRY: dict[str, Exercise] = {}


def exercise(
    id: str, title: str, prompt: str, *, wrong: tuple[Any, ...] = ()
) -> Callable[[Callable[[Any], tuple[bool, str, str]]], Callable[[Any], tuple[bool, str, str]]]:
    """Register the decorated function as the judge of exercise ``id``."""

    def register(
        judge: Callable[[Any], tuple[bool, str, str]],
    ) -> Callable[[Any], tuple[bool, str, str]]:
        if id in _REGISTRY and _REGISTRY[id].judge is not judge:
            raise ValueError(f"exercise {id} is registered twice")
        _REGISTRY[id] = Exercise(id, title, prompt, judge, tuple(wrong))
        return judge

    return register


def exercises() -> dict[str, Exercise]:
    """Every exercise of the course, by id, in course order."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name.startswith("ex_"):
            importlib.import_module(f"shardviz.course.{module.name}")
    return dict(sorted(_REGISTRY.items(), key=lambda kv: _order(kv[0])))


def _order(exercise_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in exercise_id.split("."))


def check(exercise_id: str, answer: Any, *, progress: bool | Steps = True) -> Verdict:
    """Judge ``answer`` to exercise ``exercise_id`` (what a notebook's check cell calls).

    An answer left as ``...`` is "not answered yet" (so a notebook runs top to bottom before
    anyone answers). An answer the judge cannot even run (an unknown mesh axis, a spec longer
    than the array) is wrong, with shardviz's own error message as the hint.

    A judge that compiles for a while shows ``checking 11.2…`` with the elapsed seconds (and
    what its compiles are doing), as a bar in a notebook or a line on a terminal, once it
    has taken 2 s; ``progress=False`` shows nothing (see :func:`shardviz.compare`).

    Raises:
        KeyError: there is no exercise ``exercise_id``.
    """
    known = exercises()
    if exercise_id not in known:
        raise KeyError(f"no exercise {exercise_id!r}; the course has {', '.join(known)}")
    ex = known[exercise_id]
    if answer is UNANSWERED:
        return Verdict(exercise_id, None, f"replace the ... with your answer: {ex.prompt}")
    try:
        with stepping(
            progress, "shardviz.check", 1, f"exercise {exercise_id} checked", "checking"
        ) as step:
            step(f"checking {exercise_id}…")
            right, message, hint = ex.judge(answer)
    except ShardvizError as err:
        return Verdict(exercise_id, False, "shardviz could not run this answer.", str(err))
    except (TypeError, ValueError) as err:
        return Verdict(
            exercise_id,
            False,
            f"this answer has the wrong form ({type(err).__name__}: {err}).",
            ex.prompt,
        )
    if not right:
        return Verdict(exercise_id, False, message, hint)
    return Verdict(exercise_id, True, message, why=solutions().get(exercise_id, (None, ""))[1])
