"""The docs site builds with warnings as errors, has every page the issue asks for, shows the
notebooks without their check cells, loads nothing from outside, and its links resolve."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import shardviz

from .conftest import NOTEBOOKS, ROOT, Site, parse, tail

COURSE = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
PAGES = [
    "index.html",
    "getting-started.html",
    "course/index.html",
    "course/facilitator.html",
    "course/solutions.html",
    "how-to/index.html",
    "how-to/debug-a-spec.html",
    "how-to/plan-for-a-pod.html",
    "how-to/count-a-step.html",
    "how-to/compare-strategies.html",
    "how-to/your-own-model.html",
    "how-to/framework-step.html",
    "how-to/serve-a-model.html",
    "api.html",
    "benchmarks.html",
    *(f"course/notebooks/{nb.stem}.html" for nb in COURSE),
]


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _text(html: str) -> str:
    """A page's visible text, roughly: tags dropped, entities of the code blocks undone."""
    text = re.sub(r"<[^>]+>", "", html)
    for entity, char in (("&quot;", '"'), ("&#39;", "'"), ("&lt;", "<"), ("&gt;", ">")):
        text = text.replace(entity, char)
    text = text.replace("&amp;", "&")
    # Sphinx's smart quotes in prose: compare with the plain ones of the sources.
    for curly, plain in (("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"')):
        text = text.replace(curly, plain)
    return text


def test_the_site_builds_with_warnings_as_errors(site: Site) -> None:
    if site.returncode is None:
        pytest.skip("checking a site built elsewhere: its build was not run here")
    # -W: a warning of the build (a docstring, a link, a notebook that fails) fails it.
    assert site.returncode == 0, f"the docs build failed:\n{tail(site.log)}"
    assert "build succeeded" in site.log, tail(site.log)
    print(f"docs build: {site.seconds:.0f} s")


@pytest.mark.parametrize("name", PAGES)
def test_every_page_is_there(built: Site, name: str) -> None:
    assert (built.html / name).is_file(), f"missing page {name}"


def test_the_authors_notes_are_not_a_page(built: Site) -> None:
    assert (NOTEBOOKS / "CONVENTIONS.md").is_file()
    assert not list(built.html.rglob("CONVENTIONS*.html"))
    assert "CONVENTIONS" not in built.page("course/index.html")


@pytest.mark.parametrize("notebook", COURSE, ids=lambda p: p.stem)
def test_notebook_pages_show_the_exercises_but_not_the_check_cells(
    built: Site, notebook: Path
) -> None:
    text = _text(built.page(f"course/notebooks/{notebook.stem}.html"))
    for cell in _cells(notebook):
        source = "".join(cell["source"]).strip()
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell["cell_type"] != "code" or not source:
            continue
        first = source.splitlines()[0].strip()
        if "check" in tags:
            assert first not in text, f"a check cell is on the page: {first}"
        elif tags & {"answer", "exercise"} and len(first) > 12:
            assert first in text, f"an exercise cell is missing from the page: {first}"


def test_the_docs_kernel_adds_no_warning_of_its_own(built: Site) -> None:
    """Nothing the docs build itself sets up (its kernel, plotly's renderer) warns on a page."""
    for page in built.pages():
        html = page.read_text(encoding="utf-8")
        assert "plotly/offline" not in html and "plotly/io" not in html, page


@pytest.mark.parametrize("notebook", COURSE, ids=lambda p: p.stem)
def test_notebook_pages_show_static_views_and_no_widget_needing_a_kernel(
    built: Site, notebook: Path
) -> None:
    html = built.page(f"course/notebooks/{notebook.stem}.html")
    assert "cell_output" in html, "the page shows no executed output"
    assert "application/vnd.jupyter.widget-view+json" not in html
    assert "application/vnd.jupyter.widget-state+json" not in html
    assert "require.js" not in html and "requirejs" not in html
    bare = re.findall(
        r"(?:VBox|HBox|Box)\(children=|(?:FloatProgress|IntProgress|IntSlider)\(value=",
        _text(html),
    )
    assert not bare, "a widget shown as its bare text repr"


def test_the_api_reference_covers_every_public_name(built: Site) -> None:
    ids = parse(built.html / "api.html").ids
    missing = [name for name in shardviz.__all__ if f"shardviz.{name}" not in ids]
    assert not missing, f"no entry in api.html for {missing}"


def test_the_api_reference_reads_as_prose_by_topic(built: Site) -> None:
    """No reST markup left raw (``**``x``**`` nests, which reST cannot), sections by topic,
    and the Explorer's own signature rather than traitlets' ``(*args, **kwargs)``."""
    html = built.page("api.html")
    text = _text(html)
    assert "``" not in text, text[max(0, text.find("``") - 80) : text.find("``") + 80]
    for topic in ("Devices, meshes and layouts", "Explaining a program", "Widgets",
                  "Errors and warnings"):  # fmt: skip
        assert f">{topic}<" in html.replace('<a class="headerlink"', "<"), topic
    entry = html[html.find('id="shardviz.Explorer"') :][:1500]
    assert "shown" in entry and "steps" in entry and "target" in entry


def test_the_benchmarks_page_is_the_benchmarks_readme(built: Site) -> None:
    text = _text(built.page("benchmarks.html"))
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#{1,3} (.+)$", readme, flags=re.M)
    assert headings
    for heading in headings:
        plain = re.sub(r"[`*]", "", heading).strip()
        assert plain in text, f"benchmarks.html lacks the README's heading {plain!r}"


def test_the_facilitator_page_has_both_timetables_from_the_notebooks(built: Site) -> None:
    html = built.page("course/facilitator.html")
    tables = re.findall(r'<table class="[^"]*sv-agenda[^"]*".*?</table>', html, flags=re.S)
    assert len(tables) == 2, "expected a half-day and a full-day timetable"
    half, full = tables
    for table in tables:
        assert "Welcome" in table and "Wrap-up" in table
        assert "course/notebooks/01_" in table.replace("../", "course/") or "01_" in table
    assert "Lunch" in full and "Lunch" not in half
    taught = lambda table: len(re.findall(r"notebooks/\d\d_", table))  # noqa: E731
    assert taught(full) > taught(half) >= 3


def test_the_solutions_page_lists_every_exercise(built: Site) -> None:
    from shardviz.course import exercises

    ids = parse(built.html / "course" / "solutions.html").ids
    for ex_id in exercises():
        assert f"exercise-{ex_id.replace('.', '-')}" in ids


def test_plotly_figures_get_plotly_js_from_the_site(built: Site) -> None:
    with_figures = [p for p in built.pages() if "plotly-graph-div" in p.read_text("utf-8")]
    assert (built.html / "_static" / "plotly.min.js").is_file()
    for page in with_figures:
        resources = parse(page).resources
        assert any(r.split("?")[0].endswith("_static/plotly.min.js") for r in resources), page


def _external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme or parts.netloc) and parts.scheme not in ("data", "blob")


def test_pages_load_nothing_from_outside(built: Site) -> None:
    found = []
    for page in built.pages():
        for url in parse(page).resources:
            host = urlsplit(url).hostname
            if _external(url) and host not in ("127.0.0.1", "localhost"):
                found.append(f"{page.relative_to(built.html)}: {url}")
    assert not found, "\n".join(found)


def test_internal_links_resolve_to_pages_and_anchors(built: Site) -> None:
    ids: dict[Path, set[str]] = {}
    broken = []
    for page in built.pages():
        parsed = parse(page)
        ids.setdefault(page.resolve(), parsed.ids)
        for url in parsed.links + parsed.resources:
            parts = urlsplit(url)
            if parts.scheme or parts.netloc or url.startswith("#") and len(url) == 1:
                continue  # external (checked above for resources), or the page's top
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            where = f"{page.relative_to(built.html)} -> {url}"
            if not target.is_file():
                broken.append(f"{where}: no such file")
                continue
            if parts.fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = parse(target).ids
                if unquote(parts.fragment) not in ids[target]:
                    broken.append(f"{where}: no anchor #{parts.fragment}")
    assert not broken, "\n".join(broken)
