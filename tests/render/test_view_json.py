"""Every view object of the render layer is plain data that round-trips through JSON, the form
the widgets will sync (issue 43): ``type(view).from_json(view.to_json()) == view`` for the
views of every fixture report, comparison, schedule, search, findings, profile and dispatch
timing the render tests draw."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

import shardviz.render
from shardviz.render.compare.host import host_views
from shardviz.render.compare.view import comparison_view
from shardviz.render.dispatch import DispatchView
from shardviz.render.findings.view import findings_view
from shardviz.render.op_profile import op_profile_view
from shardviz.render.report.sections import report_view
from shardviz.render.schedule.view import schedule_view
from shardviz.render.search.view import search_view
from tests.launch.test_dispatch_timing import _as_survey_says, _timing
from tests.render import compare_fixtures, report_fixtures, schedule_fixtures
from tests.render.findings_fixtures import findings
from tests.render.test_op_profile import _profile
from tests.render.test_search_views import search


def _round_trip(view: object) -> None:
    text = view.to_json()  # type: ignore[attr-defined]
    assert type(view).from_json(text) == view  # type: ignore[attr-defined]
    assert type(view).from_json(text).to_json() == text  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(report_fixtures.REPORTS))
def test_a_reports_view_round_trips(name: str) -> None:
    _round_trip(report_view(report_fixtures.REPORTS[name]()))


@pytest.mark.parametrize("name", sorted(compare_fixtures.COMPARISONS))
def test_a_comparisons_view_and_its_hosts_round_trip(name: str) -> None:
    c = compare_fixtures.COMPARISONS[name]()
    _round_trip(comparison_view(c))
    for host in host_views(c):
        _round_trip(host)


def test_schedules_searches_findings_and_profiles_round_trip() -> None:
    for s in (schedule_fixtures.one_f_one_b(4, 8), schedule_fixtures.wide(),
              schedule_fixtures.profiled()):  # fmt: skip
        _round_trip(schedule_view(s))
    _round_trip(search_view(search()))
    _round_trip(findings_view(findings()))
    _round_trip(op_profile_view(_profile()))
    _round_trip(op_profile_view(_profile(measured=False)))


def test_a_dispatch_view_round_trips_through_its_timing() -> None:
    view = DispatchView(_timing(_as_survey_says()))
    back = DispatchView.from_json(view.to_json())
    assert (back.timing, back.rows, back.claims) == (view.timing, view.rows, view.claims)


def _view_classes() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(shardviz.render.__path__, "shardviz.render."):
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if name.endswith("View") and cls.__module__ == module.__name__:
                found.append(cls)
    return found


def test_every_view_class_of_the_render_layer_has_the_round_trip() -> None:
    classes = _view_classes()
    assert len(classes) >= 18
    for cls in classes:
        assert callable(getattr(cls, "to_json", None)), cls
        assert callable(getattr(cls, "from_json", None)), cls
        assert dataclasses.is_dataclass(cls) or cls is DispatchView, cls
