"""``sv.diagnose``: what is wrong with a sharded program, each fix tried for real."""

from __future__ import annotations

from typing import Any

from shardviz.analysis.detect import candidates
from shardviz.capture.stages import jax_stage
from shardviz.errors import ShardvizError, problem
from shardviz.explainer.explain import explain
from shardviz.model import Report
from shardviz.model.findings import Findings


def diagnose(program: Any, *args: Any, **explain_kwargs: Any) -> Findings:
    """The findings of a report, or of a function compiled on its arguments.

    ``diagnose(report)`` is ``report.try_fixes().findings`` (what :func:`~shardviz.explain`
    found, each fix tried by compiling the fixed program). A report without findings (built
    by hand, or explained with ``diagnose=False``) is looked at now, without fixes: those need
    the program. ``diagnose(fn, *args, **kw)`` is
    ``explain(fn, *args, run=False, **kw).try_fixes().findings`` (compile-only; ``kw`` as
    for :func:`~shardviz.explain`). ``fn`` may be a jax stage (``jax.jit(step).lower(*args)``,
    its ``.trace`` or ``.compile()``): its findings come without fixes tried, since the
    function and its shardings are compiled into it.
    """
    if isinstance(program, Report):
        tried = program.try_fixes().findings
        if tried is not None:
            return tried
        detected = [c.finding for c in candidates(program) if not c.only_with_fix]
        return Findings(
            function=program.function,
            items=tuple(detected),
            notes=(
                "fixes are tried on the program itself: call sv.diagnose(fn, *args) or "
                "sv.explain(fn, *args) to get them",
            ),
        )
    if not callable(program) and jax_stage(program) is None:
        raise ShardvizError(
            problem(
                "diagnose",
                f"{program!r} is neither a report, a function nor a jax stage",
                "pass a Report (sv.diagnose(report)), a function and its arguments "
                "(sv.diagnose(fn, *args)) or a lowered step (sv.diagnose(lowered))",
            )
        )
    explain_kwargs.setdefault("run", False)
    found = explain(program, *args, **explain_kwargs).try_fixes().findings
    return found if found is not None else Findings(getattr(program, "__name__", "program"))
