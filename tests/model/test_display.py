"""The display registry: the model finds its views there and loads the renderers on first use."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import pytest

from shardviz.model import display
from tests.without_jax import run_without_jax

FAKE = "tests.model.fake_views"


@pytest.fixture
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """No views registered, and :data:`FAKE` standing in for the renderers, not yet imported."""
    monkeypatch.setattr(display, "_views", {})
    monkeypatch.setattr(display, "RENDERERS", FAKE)
    monkeypatch.delitem(sys.modules, FAKE, raising=False)


class Plain:
    pass


class Special(Plain):
    pass


def test_register_then_find_the_view_of_a_class_or_its_base(empty_registry: None) -> None:
    assert display.find_view(Plain, "text") is None
    display.register(Plain, "text", repr)
    assert display.find_view(Plain, "text") is repr
    assert display.find_view(Special, "text") is repr  # the nearest base class's view
    assert display.find_view(Plain, "html") is None  # registered per format
    display.register(Special, "text", str)
    assert display.find_view(Special, "text") is str and display.find_view(Plain, "text") is repr


def test_render_loads_the_renderers_when_no_view_is_registered(empty_registry: None) -> None:
    assert FAKE not in sys.modules and display.find_view(Fraction, "text") is None
    assert display.render(Fraction(3, 4), "text") == "3 over 4"
    assert FAKE in sys.modules


def test_render_loads_the_renderers_once_and_says_what_is_missing(empty_registry: None) -> None:
    with pytest.raises(LookupError, match="no 'html' view of Plain is registered"):
        display.render(Plain(), "html")
    assert FAKE in sys.modules  # it did try the renderers before giving up


def test_save_page_writes_the_page_view(empty_registry: None, tmp_path) -> None:
    display.register(Plain, "page", lambda obj: "<!doctype html><p>é</p>")
    path = str(tmp_path / "plain.html")
    assert display.save_page(Plain(), path) == path
    assert Path(path).read_text(encoding="utf-8") == "<!doctype html><p>é</p>"


def test_the_model_draws_itself_without_importing_the_renderers_first() -> None:
    out = run_without_jax(
        """
        import shardviz.model
        from tests.render.fixtures import mesh_2x4, tree_example

        mesh = mesh_2x4()
        assert "shardviz.render" not in sys.modules, "the model imported its renderers"
        text, html = str(mesh), tree_example()._repr_html_()
        assert "shardviz.render" in sys.modules
        from shardviz.render import mesh_text, tree_html

        assert (text, html) == (mesh_text(mesh), tree_html(tree_example()))
        assert not any(m == "jax" or m.startswith("jax.") for m in sys.modules), "jax imported"
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_notebooks_plain_text_is_one_line_not_the_dataclass_repr() -> None:
    from IPython.lib.pretty import pretty

    from tests.live_reports import megatron_mlp_report

    report = megatron_mlp_report()
    line = pretty(report)
    assert line == f"<shardviz Report of {report.function}: print() it for the text view>"
    assert repr(report) == line  # not every collective and frame, field by field

    class Bare(display.Shown):
        pass

    assert pretty(Bare()) == "<shardviz Bare: print() it for the text view>"
