"""The battery of hostile and unusual calls, run in processes of their own: every case ends in
the right answer or a ShardvizError, and none kills the process (a name the compiler cannot
take used to abort it inside XLA). Each area's cases are a module ``tests/hostile/cases_*.py``:
its ``CASES`` run in one process, its ``EACH`` (where a case may crash the interpreter) one
process each. The runner prints one line per case, so a case that kills it is named by the
last line it started."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from tests import hostile
from tests.hostile import battery

AREAS = sorted(
    m.name for m in pkgutil.iter_modules(hostile.__path__) if m.name.startswith("cases_")
)


@pytest.mark.parametrize("area", AREAS)
def test_no_hostile_call_kills_the_process_and_each_ends_as_expected(area: str) -> None:
    cases = importlib.import_module(f"tests.hostile.{area}")
    assert not battery.wrong(getattr(cases, "CASES", {}))
    assert not battery.wrong_each(getattr(cases, "EACH", {}))
