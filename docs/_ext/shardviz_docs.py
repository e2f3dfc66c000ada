"""The docs site's own Sphinx pieces: pages made from the package at build time, and plotly offline.

- ``shardviz-solutions``: every course exercise (``shardviz.course.exercises()``) with its
  answer and why (``shardviz.course.solutions.solutions()``), read when the page is built, so
  the page lists exactly the exercises the package has.
- ``shardviz-api``: the reference of every name in ``shardviz.__all__`` (a summary table per
  kind, then autodoc), so a new public name appears without editing the page.
- ``shardviz-agenda``: a class's timetable, built from the times the notebooks state in their
  first cell (``**Time:** about N minutes``), so the facilitator page follows the notebooks.
- ``check`` cells: the course notebooks' hidden asserts (``notebooks/CONVENTIONS.md``) run with
  the notebook, as every cell does, but are left off the page, as MyST-NB's ``remove-cell``
  tag does.
- math: the notebooks' few formulas (``$(S-1)/(M+S-1)$``) are written as styled text, not by
  MathJax, which a page would have to fetch from a CDN.
- widgets: the pages show each view's static HTML, so the widget state MyST-NB would embed
  from the executed notebook is left out, and so is the bare text of a widget that has no
  static picture (a progress bar's ``VBox(...)``).
- plotly: the docs kernel (``_kernel/startup.py``) renders figures without plotly.js; pages that
  hold one get the copy of plotly.js shipped in the plotly package, served from ``_static``.
"""

from __future__ import annotations

import inspect
import json
import re
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

LOGGER = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"

#: Marks the ``<div>`` plotly's ``to_html`` writes for a figure.
PLOTLY_MARK = "plotly-graph-div"
PLOTLY_JS = "plotly.min.js"
#: The script type of the ipywidgets state MyST-NB puts on a notebook's page.
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: The tag of a course notebook's check cells, and the MyST-NB tag that leaves a cell out.
CHECK_TAG = "check"
REMOVE_TAG = "remove-cell"


def _hide_check_cells(app: Sphinx, docname: str, source: list[str]) -> None:
    """Tag a notebook's ``check`` cells ``remove-cell``: they still run, the page omits them."""
    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    notebook = json.loads(source[0])
    changed = False
    for cell in notebook.get("cells", []):
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if CHECK_TAG in tags and REMOVE_TAG not in tags:
            tags.append(REMOVE_TAG)
            changed = True
    if changed:
        source[0] = json.dumps(notebook, ensure_ascii=False)


def _notebook_docs(env: Any) -> dict[str, str]:
    """Course notebook docnames by their number (``"03"`` -> ``course/notebooks/03_fsdp_zero``)."""
    found: dict[str, str] = {}
    for docname in env.found_docs:
        folder, _, name = docname.rpartition("/")
        if folder == "course/notebooks" and name[:2].isdigit():
            found[name[:2]] = docname
    return found


def _text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


class SolutionsDirective(SphinxDirective):
    """Every exercise: its id, title, where it is asked, the prompt, an answer and why."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        import shardviz.course as course
        from shardviz.course.solutions import solutions

        known = course.exercises()
        answers = solutions()
        for module in (course, *_submodules(course)):
            if getattr(module, "__file__", None):
                self.env.note_dependency(module.__file__)
        notebooks = _notebook_docs(self.env)
        out: list[nodes.Node] = []
        for ex_id, ex in known.items():
            box = nodes.container(classes=["sv-solution"])
            box["ids"].append(f"exercise-{ex_id.replace('.', '-')}")
            title = nodes.rubric(text=f"Exercise {ex_id}: {ex.title}")
            box += title
            where = nodes.paragraph()
            docname = notebooks.get(ex_id.split(".")[0])
            if docname is not None:
                where += nodes.Text("Asked in ")
                ref = addnodes.pending_xref(
                    "", refdomain="std", reftype="doc", reftarget=f"/{docname}", refexplicit=False
                )
                ref += nodes.inline(text=docname.rsplit("/", 1)[-1])
                where += ref
                where += nodes.Text(". ")
            where += nodes.emphasis(text=ex.prompt)
            box += where
            if ex_id in answers:
                answer, why = answers[ex_id]
                box += nodes.literal_block(
                    text=f'check("{ex_id}", {_text(answer)})', language="python"
                )
                if why:
                    box += nodes.paragraph(text=why)
            else:
                box += nodes.paragraph(text="No solution is written down for this one yet.")
            out.append(box)
        if not out:
            out.append(nodes.paragraph(text="The course has no exercises yet."))
        return out


TIME_RE = re.compile(r"\*\*Time:\*\*\s*about\s+(\d+)\s+minutes")
#: Minutes assumed for a notebook whose first cell states no time (marked on the page).
GUESS = 40
TITLE_RE = re.compile(r"^#\s+\d\d\s*·\s*(.+)$", re.M)


def notebook_times(folder: Path = NOTEBOOKS) -> dict[str, tuple[Path, str, int | None]]:
    """Each course notebook by number: its path, title and stated time in minutes (or None)."""
    found: dict[str, tuple[Path, str, int | None]] = {}
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        first = "".join(cells[0]["source"]) if cells else ""
        title = TITLE_RE.search(first)
        minutes = TIME_RE.search(first)
        found[path.name[:2]] = (
            path,
            title.group(1).strip() if title else path.stem,
            int(minutes.group(1)) if minutes else None,
        )
    return found


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _duration(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h {rest:02d} min" if rest else f"{hours} h"


class AgendaDirective(SphinxDirective):
    """A class's timetable, from the times the notebooks state.

    The content lists the notebooks to teach, by number, in teaching order. They are taken in
    that order while the class still ends within ``:hours:`` (short breaks included, lunch
    not); from the first one that does not fit on, they are dropped. The course's notebooks
    not taught are listed under the table, for the learners to read on their own. A
    welcome slot opens the class and a wrap-up slot ends it. Once ``:stretch:`` minutes have
    passed since the last break, a break comes before the next notebook; on a day with
    ``:lunch:``, the first such break after ``:lunch-after:`` minutes of class is lunch.
    When at least ``:begin:`` minutes are left before the wrap-up, the class begins the first
    notebook that did not fit, for the learners to finish at home.
    """

    has_content = True
    option_spec = {
        "start": str,
        "hours": float,
        "welcome": int,
        "wrap-up": int,
        "break": int,
        "stretch": int,
        "lunch": int,
        "lunch-after": int,
        "begin": int,
    }

    def run(self) -> list[nodes.Node]:
        opts = self.options
        start = _parse_clock(opts.get("start", "09:00"))
        budget = round(float(opts.get("hours", 3.5)) * 60)
        welcome, wrap_up = opts.get("welcome", 15), opts.get("wrap-up", 15)
        pause, stretch = opts.get("break", 15), opts.get("stretch", 75)
        lunch, lunch_after = opts.get("lunch", 0), opts.get("lunch-after", 0)
        known = notebook_times()
        for path, _, _ in known.values():
            self.env.note_dependency(str(path))
        docs = _notebook_docs(self.env)

        # (kind, minutes, number): kind is welcome, notebook, break, lunch or wrap-up.
        slots: list[tuple[str, int, str]] = [("welcome", welcome, "")]
        taught = welcome  # minutes of class so far, lunch not counted
        since_break = welcome
        lunch_taken = not lunch
        left: list[str] = []
        for number in " ".join(self.content).split():
            if number not in known:
                raise self.error(f"no course notebook numbered {number!r} in {NOTEBOOKS}")
            path, _, stated = known[number]
            if stated is None:  # tests/course/test_notebook_conventions.py asks for a stated time
                LOGGER.info("%s states no time: %d minutes assumed", path.name, GUESS)
            minutes = GUESS if stated is None else stated
            gap = ""
            if since_break >= stretch:
                gap = "lunch" if not lunch_taken and taught >= lunch_after else "break"
            cost = minutes + (pause if gap == "break" else 0)
            if left or taught + cost + wrap_up > budget:
                left.append(number)
                continue
            if gap:
                slots.append((gap, lunch if gap == "lunch" else pause, ""))
                taught += pause if gap == "break" else 0
                lunch_taken = lunch_taken or gap == "lunch"
                since_break = 0
            slots.append(("notebook", minutes, number))
            taught += minutes
            since_break += minutes
        spare = budget - taught - wrap_up
        gap = ""
        if since_break >= stretch:
            gap = "lunch" if not lunch_taken and taught >= lunch_after else "break"
            spare -= pause if gap == "break" else 0
        if left and spare >= opts.get("begin", 20):
            if gap:
                slots.append((gap, lunch if gap == "lunch" else pause, ""))
                taught += pause if gap == "break" else 0
            slots.append(("begin", spare, left[0]))
            taught += spare
        slots.append(("wrap-up", wrap_up, ""))
        taught += wrap_up
        chosen = {number for kind, _, number in slots if kind == "notebook"}
        rest = [number for number in known if number not in chosen]
        return self._render(slots, start, taught, rest, known, docs)

    def _link(self, number: str, known: dict, docs: dict[str, str]) -> nodes.Node:
        title = f"{number} · {known[number][1]}"
        docname = docs.get(number)
        if docname is None:
            return nodes.Text(title)
        ref = addnodes.pending_xref(
            "", refdomain="std", reftype="doc", reftarget=f"/{docname}", refexplicit=True
        )
        ref += nodes.inline(text=title)
        return ref

    def _render(
        self,
        slots: list[tuple[str, int, str]],
        start: int,
        taught: int,
        left: list[str],
        known: dict,
        docs: dict[str, str],
    ) -> list[nodes.Node]:
        labels = {
            "welcome": "Welcome, and the setup check: everyone runs the setup cells of notebook 01",
            "break": "Break",
            "lunch": "Lunch",
            "wrap-up": "Wrap-up: questions, and what to read next",
        }
        table = nodes.table(classes=["sv-agenda"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (12, 12, 76):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += _row([nodes.Text("Time"), nodes.Text("Length"), nodes.Text("Session")])
        body = nodes.tbody()
        group += body
        clock = start
        for kind, minutes, number in slots:
            what: nodes.Node
            if kind in ("notebook", "begin"):
                what = nodes.inline()
                if kind == "begin":
                    what += nodes.Text("Begin ")
                what += self._link(number, known, docs)
                if kind == "begin":
                    what += nodes.emphasis(text=" (the learners finish it at home)")
                if known[number][2] is None:
                    what += nodes.emphasis(text=" (the notebook states no time yet: a guess)")
            elif kind in ("break", "lunch"):
                what = nodes.emphasis(text=labels[kind])
            else:
                what = nodes.Text(labels[kind])
            body += _row([nodes.Text(_clock(clock)), nodes.Text(_duration(minutes)), what])
            clock += minutes
        summary = nodes.paragraph()
        lunch = sum(minutes for kind, minutes, _ in slots if kind == "lunch")
        summary += nodes.Text(
            f"From {_clock(start)} to {_clock(clock)}: {_duration(taught)} of class"
            + (f", plus {_duration(lunch)} for lunch. " if lunch else ". ")
        )
        if left:
            summary += nodes.Text("Not in this class, for the learners to read on their own: ")
            begun = {number for kind, _, number in slots if kind == "begin"}
            for i, number in enumerate(left):
                if i:
                    summary += nodes.Text(", ")
                summary += self._link(number, known, docs)
                if number in begun:
                    summary += nodes.Text(" (begun in class)")
            summary += nodes.Text(".")
        else:
            summary += nodes.Text("Every notebook of the course is in it.")
        return [table, summary]


def _row(cells: list[nodes.Node]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        para = nodes.paragraph()
        para += cell
        entry += para
        row += entry
    return row


def _parse_clock(text: str) -> int:
    hours, _, minutes = text.partition(":")
    return int(hours) * 60 + int(minutes or 0)


def _submodules(package: Any) -> list[Any]:
    """The loaded modules under ``package`` (the exercises and solutions, after loading)."""
    import sys

    prefix = package.__name__ + "."
    return [m for name, m in sorted(sys.modules.items()) if name.startswith(prefix) and m]


#: The API page's topics, in page order: each public name goes under the first topic whose
#: module prefix its home module (``shardviz.API``) starts with; a few are placed by name.
TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Devices, meshes and layouts", ("shardviz.capture",)),
    ("Explaining a program", ("shardviz.explainer",)),
    ("Strategies, comparison and planning", ("shardviz.strategies", "shardviz.model.search")),
    ("Widgets", ("shardviz.widgets",)),
    ("Several processes", ("shardviz.engines",)),
    ("Hardware and targets", ("shardviz.model.hardware_presets",)),
    ("What the views show: the model objects", ("shardviz.model",)),
)
#: Names whose topic is not their module's.
TOPIC_OF = {
    "Hardware": "Hardware and targets",
    "Target": "Hardware and targets",
    "Estimate": "Hardware and targets",
    "Topology": "Hardware and targets",
    "topology": "Hardware and targets",
}
ERRORS = "Errors and warnings"


def api_topic(name: str, obj: Any, module: str) -> str:
    """The API page's section for a public name."""
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return ERRORS
    if name in TOPIC_OF:
        return TOPIC_OF[name]
    for title, prefixes in TOPICS:
        if module.startswith(prefixes):
            return title
    return TOPICS[-1][0]


class ApiDirective(SphinxDirective):
    """A summary and the docstrings of every name in ``shardviz.__all__``, by topic."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        import shardviz

        groups: dict[str, list[str]] = {title: [] for title, _ in TOPICS}
        groups[ERRORS] = []
        for name in sorted(shardviz.__all__, key=str.lower):
            obj = getattr(shardviz, name)
            groups[api_topic(name, obj, shardviz.API[name])].append(name)
        lines: list[str] = []
        for title, names in groups.items():
            if not names:
                continue
            names.sort(key=lambda n: (inspect.isclass(getattr(shardviz, n)), n.lower()))
            lines += [title, "-" * len(title), "", ".. autosummary::", ""]
            lines += [f"   shardviz.{name}" for name in names]
            lines.append("")
            for name in names:
                cls = inspect.isclass(getattr(shardviz, name))
                lines += [f".. {'autoclass' if cls else 'autofunction'}:: shardviz.{name}"]
                if cls and title != ERRORS:
                    lines.append("   :members:")
                lines.append("")
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source="shardviz.__all__"), node)
        return node.children


#: LaTeX commands the plain math renderer writes as the characters they stand for.
MATH_SYMBOLS = {
    r"\times": "×",
    r"\cdot": "·",
    r"\le": "≤",
    r"\ge": "≥",
    r"\approx": "≈",
    r"\ne": "≠",
    r"\,": "\u2009",
    r"\ ": " ",
}


def _plain_math(latex: str) -> str:
    text = latex.strip()
    for command, char in MATH_SYMBOLS.items():
        text = text.replace(command, char)
    return text


def _visit_inline_math(self: Any, node: nodes.Element) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate sv-math"))
    self.body.append(self.encode(_plain_math(node.astext())))
    self.body.append("</span>")
    raise nodes.SkipNode


def _visit_block_math(self: Any, node: nodes.Element) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate sv-math"))
    self.body.append(self.encode(_plain_math(node.astext())))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def _add_plotly(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any):
    if PLOTLY_MARK in context.get("body", ""):
        app.add_js_file(PLOTLY_JS, priority=100)


#: The text an ipywidgets container or control shows where it cannot be drawn (no kernel).
BARE_WIDGET = re.compile(
    r"^(VBox|HBox|Box|GridBox|Accordion|Tab|FloatProgress|IntProgress|Label|Output)\("
)


def _drop_bare_widgets(app: Sphinx, doctree: nodes.document) -> None:
    """Leave out the outputs that are only a widget's repr, e.g. ``VBox(children=(...))`` for
    a progress bar: a widget without a static picture needs a kernel, which a page has not.
    (shardviz's own views all carry a static picture, shown in their place.)"""
    for block in list(doctree.findall(nodes.literal_block)):
        classes = block.get("classes", [])
        if "output" in classes and "text_plain" in classes and BARE_WIDGET.match(block.astext()):
            block.parent.remove(block)


def _drop_widget_state(
    app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    """Leave out the widget state MyST-NB embeds from an executed notebook: no widget is shown
    (each view's static HTML is), so nothing would read it, and it can weigh a megabyte."""
    scripts = context.get("script_files")
    if isinstance(scripts, list):
        scripts[:] = [
            s for s in scripts if getattr(s, "attributes", {}).get("type") != WIDGET_STATE
        ]


def _copy_plotly(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    import plotly

    source = Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, static / PLOTLY_JS)


def setup(app: Sphinx) -> dict[str, Any]:
    # conf.py sets it to a digest of this folder's code, so changing the code rereads pages.
    app.add_config_value("shardviz_docs_digest", "", "env", str)
    app.add_directive("shardviz-solutions", SolutionsDirective)
    app.add_directive("shardviz-api", ApiDirective)
    app.add_directive("shardviz-agenda", AgendaDirective)
    app.connect("source-read", _hide_check_cells)
    app.add_html_math_renderer(
        "shardviz_plain", (_visit_inline_math, None), (_visit_block_math, None)
    )
    app.connect("doctree-read", _drop_bare_widgets)
    app.connect("html-page-context", _add_plotly)
    app.connect("html-page-context", _drop_widget_state, priority=900)  # after MyST-NB's
    app.connect("build-finished", _copy_plotly)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
