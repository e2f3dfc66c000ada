"""The course's self-checking exercises (see :mod:`shardviz.course.exercise`).

A notebook asks a question, the learner writes an answer in a cell, and the next cell runs
``check("NN.k", answer)``: the answer is run for real and judged right or wrong, with a hint.
"""

from shardviz.course.exercise import UNANSWERED, Exercise, Verdict, check, exercises

__all__ = ["UNANSWERED", "Exercise", "Verdict", "check", "exercises"]
