"""The plan search's progress fills towards whichever limit is nearer (issue 40: with
``max_plans=N`` the bar filled by time only and finished at 10-20%): plans compiled out of the
cap, or seconds out of the budget; its line says "k of N plans" when capped, and a reporter
written for the four-argument ``update`` still works.

The bar and line are driven by hand (no timing); the search is notebook 10's MLP on fake CPU
devices, capped far inside a long budget so that only the cap can fill the bar."""

from __future__ import annotations

import io

import jax
import pytest

from shardviz.capture.mesh import Mesh
from shardviz.strategies.search.progress import NotebookBar, TerminalLine, filled, tell
from shardviz.strategies.search.suggestions import suggest

from .test_search_cap import args, mlp


class _Shown:
    """IPython's display as the bar uses it."""

    def __init__(self) -> None:
        self.updates: list[dict] = []

    def __call__(self, obj: object, display_id: bool = False) -> _Shown:
        return self

    def update(self, bundle: dict, raw: bool = False) -> None:
        self.updates.append(bundle)


class _Told:
    """A reporter that keeps each update's figures, the cap included."""

    def __init__(self) -> None:
        self.updates: list[tuple[int, float, float, int | None]] = []
        self.finished: list[str] = []

    def update(
        self, tried: int, elapsed: float, budget: float, best: str, max_plans: int | None = None
    ) -> None:
        self.updates.append((tried, elapsed, budget, max_plans))

    def finish(self, words: str) -> None:
        self.finished.append(words)


class _Old:
    """A reporter written before the cap: ``update`` takes four arguments."""

    def __init__(self) -> None:
        self.tried: list[int] = []

    def update(self, tried: int, elapsed: float, budget: float, best: str) -> None:
        self.tried.append(tried)

    def finish(self, words: str) -> None:
        pass


def test_a_capped_bar_fills_with_the_plans_when_they_are_nearer_their_limit() -> None:
    bar = NotebookBar(_Shown())
    bar.update(3, 6.0, 60.0, "#2 (1 KiB moved)", max_plans=10)
    assert bar.bar.value == pytest.approx(0.3)  # 3 of 10 plans, not 6 of 60 s
    assert bar.label.value.startswith("3 of 10 plans tried, 6 of 60 s; best so far: #2")
    bar.update(10, 12.0, 60.0, "#7", max_plans=10)
    assert bar.bar.value == pytest.approx(1.0)


def test_a_capped_bar_fills_with_the_time_when_the_budget_is_nearer() -> None:
    bar = NotebookBar(_Shown())
    bar.update(2, 45.0, 60.0, "#1", max_plans=10)
    assert bar.bar.value == pytest.approx(0.75)
    bar.update(4, 15.0, 60.0, "#1")  # no cap: the time alone, "k plans"
    assert bar.bar.value == pytest.approx(0.25)
    assert bar.label.value.startswith("4 plans tried, 15 of 60 s")


def test_the_terminal_line_says_k_of_n_plans_when_capped() -> None:
    out = io.StringIO()
    line = TerminalLine(out)
    line.update(1, 0.4, 60.0, "#1", max_plans=1)
    line.update(2, 1.2, 60.0, "#2", max_plans=6)
    assert "1 of 1 plan tried," in out.getvalue()
    assert "2 of 6 plans tried, 1 of 60 s; best so far: #2" in out.getvalue()


@pytest.mark.parametrize(
    ("tried", "elapsed", "budget", "cap", "fraction"),
    [
        (0, 0.0, 60.0, None, 0.0),
        (5, 0.0, 0.0, None, 1.0),  # no budget: nothing left
        (0, 0.0, 60.0, 4, 0.0),
        (6, 1.0, 60.0, 4, 1.0),  # past the cap: full, never over
        (1, 90.0, 60.0, 4, 1.0),  # past the budget
    ],
)
def test_filled_is_the_nearer_limits_share(tried, elapsed, budget, cap, fraction) -> None:
    assert filled(tried, elapsed, budget, cap) == pytest.approx(fraction)


def test_a_reporter_without_max_plans_is_told_the_four() -> None:
    old, told = _Old(), _Told()
    tell(old, 2, 1.0, 60.0, "#1", 5)
    tell(told, 2, 1.0, 60.0, "#1", 5)
    assert old.tried == [2] and told.updates == [(2, 1.0, 60.0, 5)]


@pytest.mark.parametrize("shapes", [False, [(2, 4), (4, 2)]], ids=["one-shape", "two-shapes"])
def test_a_capped_search_reports_its_whole_cap_and_ends_full(shapes) -> None:
    mesh = Mesh(jax.devices(), (2, 4), ("data", "model"))
    told, old = _Told(), _Old()
    search = suggest(
        mlp, *args(mesh), mesh=mesh, max_plans=4, budget_s=600, mesh_shapes=shapes,
        progress=told,
    )  # fmt: skip
    assert search.stopped == "max_plans" and search.tried == 4
    tried = [t for t, _, _, _ in told.updates]
    assert tried == [1, 2, 3, 4]
    # every update names the whole search's cap and budget (not a mesh shape's share)
    assert {(budget, cap) for _, _, budget, cap in told.updates} == {(600.0, 4)}
    fractions = [filled(t, e, b, c) for t, e, b, c in told.updates]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    # a reporter of four arguments follows the same search
    suggest(
        mlp, *args(mesh), mesh=mesh, max_plans=4, budget_s=600, mesh_shapes=shapes,
        progress=old,
    )  # fmt: skip
    assert old.tried == [1, 2, 3, 4]
