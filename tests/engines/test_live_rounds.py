"""Cluster.live's rounds, without engines: how answers merge and how a round's size moves."""

from __future__ import annotations

import pytest

from shardviz.engines_live import MAX_ROUND, ROUND_SECONDS, merge_round, next_round
from shardviz.errors import ProcessError


def _row(process: int, step_ms: list[float], losses: list[float] | None = None) -> dict:
    return {"process": process, "losses": losses or [1.0] * len(step_ms), "step_ms": step_ms}


def test_a_step_takes_the_slowest_process_time_and_each_keeps_its_own():
    rows = [_row(1, [5.0, 2.0, 9.0], [3.0, 2.0, 1.0]), _row(0, [4.0, 3.0, 8.0], [3.0, 2.0, 1.0])]
    losses, step_ms, hosts = merge_round(rows)
    assert losses == [3.0, 2.0, 1.0]
    assert step_ms == [5.0, 3.0, 9.0]
    assert hosts == {0: [4.0, 3.0, 8.0], 1: [5.0, 2.0, 9.0]}


def test_processes_that_ran_different_numbers_of_steps_are_an_error_naming_them():
    with pytest.raises(ProcessError, match="process 0: 2, process 1: 1") as err:
        merge_round([_row(0, [1.0, 1.0]), _row(1, [1.0])])
    assert "same number of batches" in str(err.value)


@pytest.mark.parametrize(
    ("count", "seconds", "every", "want"),
    [
        (1, 0.0, 1, 2),  # fast: doubled
        (8, ROUND_SECONDS, 1, 8),  # on target: kept
        (8, ROUND_SECONDS * 5, 1, 4),  # slow: halved
        (1, ROUND_SECONDS * 5, 1, 1),  # never below one step
        (2, ROUND_SECONDS * 5, 4, 4),  # never below `every`
        (MAX_ROUND, 0.0, 1, MAX_ROUND),  # never over the cap
        (1, 0.0, MAX_ROUND * 2, MAX_ROUND * 2),  # `every` beyond the cap wins
    ],
)
def test_a_round_grows_while_fast_and_shrinks_when_slow(count, seconds, every, want):
    assert next_round(count, seconds, every) == want
