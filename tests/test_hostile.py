"""The battery of hostile and unusual calls, run in processes of their own: every case ends in
the right answer or a ShardvizError, and none kills the process (a name the compiler cannot
take used to abort it inside XLA). Each area's cases are a table in ``tests/hostile/``; the
runner prints one line per case, so a case that kills it is named by the last line it started."""

from __future__ import annotations

from tests.hostile import battery, cases_core


def test_no_hostile_call_kills_the_process_and_each_ends_as_expected() -> None:
    assert not battery.wrong(cases_core.CASES)
