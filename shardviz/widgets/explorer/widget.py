"""``ExplorerWidget``: one report (or each strategy of a comparison) as four linked panes.

The panes are the device mesh, the arrays (argument leaves, output leaves and intermediates,
one drawn at a time as tiles), the collective ledger and per-device memory. Selecting in one
pane lights up the others: a device shows its tiles, its memory bar and the collectives it
takes part in; a collective shows its device groups on the mesh, its source line and the
reshard that caused it.

Synced state is JSON built by the pure :mod:`~shardviz.widgets.explorer.payload`: the shown
report's payload once (``payload``), and the tiles of the picked array only (``array``,
rebuilt here whenever ``selected_array`` changes). A controller that recompiles in the
background drives the widget with :meth:`ExplorerWidget.show`, ``status`` and ``error``.

A pick waits for a kernel round trip, so once a view has drawn a payload it asks for the
other arrays ahead of time (a custom message ``{"type": "prefetch", "generation": g}``). A
background thread answers with batches ``{"type": "prefetched", "generation": g, "arrays":
[[id, array JSON], ...], "done": false}`` and a last ``{..., "arrays": [], "done": true}``,
each JSON text exactly what ``array`` would carry for that id: arguments and outputs first,
then intermediates, up to :data:`PREFETCH_BUDGET`. ``generation`` is bumped with every new
report; a prefetch for an older one stops, and the front end drops what it still receives.

Findings (``findings``, :mod:`~shardviz.widgets.explorer.findings_pane`) whose fixes are not tried
yet get a "pending" payload at once; the Explorer tries them (``report.try_fixes()``, a
compile each) in a background thread it owns, then shows the tried report's findings, and
keeps them: showing the same report again shows them at once. Trying never holds up the user's
next edit: the trials stop before their next compile once another report is shown, or as soon
as ``status`` says a recompile or run is under way (what :func:`~shardviz.widgets.session.connect`
sets the moment a new configuration is submitted), so that run has the cores; trials a run
stopped start again if the status settles with the same report still shown (the run failed).
No lock is shared with the run. A view's "try this fix" is a custom message
``{"type": "try-fix", "generation": g, "finding": i}``, handed to the handler
:func:`~shardviz.widgets.session.connect` installs (an Explorer built from a function); errors
show in ``error``, never raise into the kernel.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import replace
from typing import Any

import anywidget
import traitlets

from shardviz.errors import ShardvizError
from shardviz.explainer.background import Latest, Stage, short_message
from shardviz.model.array import ArrayLayout, TreeLayout
from shardviz.model.compare import Comparison, StrategyResult
from shardviz.model.files import write_text
from shardviz.model.findings import Finding, Findings
from shardviz.model.mesh import MeshLayout
from shardviz.model.program import Report
from shardviz.render.compare.html import comparison_html
from shardviz.render.html import page
from shardviz.render.report.html import report_html
from shardviz.widgets.esm import widget_module
from shardviz.widgets.explorer.diff import change_words, same_collective
from shardviz.widgets.explorer.findings_pane import (
    NO_TRY_WORDS,
    error_json,
    findings_json,
    findings_pending,
    pending_json,
)
from shardviz.widgets.explorer.payload import (
    array_entries,
    array_json,
    default_array,
    entry_layout,
    find_entry,
    memory_payload,
    prefetch_batches,
    report_json,
    strategies_payload,
)
from shardviz.widgets.mesh_view import STATIC
from shardviz.widgets.selection import NO_SELECTION, NO_SELECTION_CHOICE
from shardviz.widgets.static_bundle import with_static_html

#: What ``status`` may say: nothing yet, a recompile or run under way, finished, or failed.
STATUSES = ("", "compiling", "running", "done", "error")
#: Choices listed in an error message before ``… N more``.
MAX_CHOICES = 12
#: Appended to the list of arrays in an error message: how to pick none.
NO_ARRAY_CHOICE = ' or "" for none'

#: Most bytes (UTF-8 JSON text) of arrays sent ahead of picks, per report. Every array of the
#: benchmark's MLP step at 512 devices (51 arrays) takes 0.8 MB, so a typical program goes
#: whole; the cap bounds what one report pushes through the kernel websocket (a remote kernel
#: on a slow link pays for every byte, after every recompile) and what each view holds (~2x in
#: JS strings) for a program with thousands of intermediates. Arrays beyond it are picked
#: through the kernel, as without prefetch.
PREFETCH_BUDGET = 2_000_000
#: Most bytes of array JSON per prefetch message (one array at least): ~50 ms of Python at 512
#: devices, so the first arrays reach the front end early, a stale prefetch stops soon (it is
#: checked between batches), and no message is one huge websocket frame.
PREFETCH_BATCH_BYTES = 256_000
#: The ``type`` of the front end's request and of the batches that answer it.
PREFETCH, PREFETCHED = "prefetch", "prefetched"
#: The ``type`` of the front end's "try this fix" message.
TRY_FIX = "try-fix"
#: The statuses of a recompile or run under way: the shown report's fix trials stop for it.
BUSY = ("compiling", "running")
#: Reports whose tried findings an Explorer keeps (by their trial key), to show again at once.
KEPT_TRIED = 16

Shown = Report | Comparison


def _choices(values: Iterable[object], extra: str = "") -> str:
    """``'a', 'b', … 40 more`` for an error message."""
    items = [repr(v) for v in values]
    text = ", ".join(items[:MAX_CHOICES])
    if len(items) > MAX_CHOICES:
        text += f", … {len(items) - MAX_CHOICES} more"
    if not items:
        text = "(none)"
    return text + extra


def _type_hint(obj: object) -> str:
    """What to pass instead of ``obj``, when we can tell."""
    if isinstance(obj, StrategyResult):
        return "; for one strategy pass result.report, or pass the whole Comparison"
    if isinstance(obj, ArrayLayout | MeshLayout | TreeLayout):
        return "; to look at one layout use shardviz.widgets.MeshView or its HTML view"
    if callable(obj):
        return "; to explore a function, first call shardviz.explain(fn, *args)"
    return ""


def prefetched_message(
    generation: int, arrays: list[tuple[str, str]], done: bool
) -> dict[str, Any]:
    """One batch of prefetched ``(id, array JSON)`` pairs, tagged with the report's generation."""
    return {
        "type": PREFETCHED,
        "generation": generation,
        "arrays": [[ident, text] for ident, text in arrays],
        "done": done,
    }


def check_shown(obj: object) -> Shown:
    """``obj`` if it is a Report or a non-empty Comparison.

    Raises:
        TypeError: for anything else, saying what to pass.
        ValueError: for a Comparison with no strategies.
    """
    if isinstance(obj, Report):
        return obj
    if isinstance(obj, Comparison):
        if not obj.results:
            raise ValueError(f"the comparison of {obj.model!r} has no strategies to show")
        return obj
    raise TypeError(
        "Explorer shows a shardviz Report (from shardviz.explain) or a Comparison (from "
        f"shardviz.compare), got {type(obj).__name__}{_type_hint(obj)}"
    )


class ExplorerWidget(anywidget.AnyWidget):
    """A report's mesh, arrays, collectives and memory as linked panes.

    Args:
        shown: a :class:`~shardviz.model.Report` (``shardviz.explain``) or a
            :class:`~shardviz.model.Comparison` (``shardviz.compare``); for a comparison a
            selector switches between the strategies' reports.
        **kwargs: initial trait values, e.g. ``selected_strategy="tp"``,
            ``selected_array="mid:dot.3"``, ``selected_device=5``.

    Raises:
        TypeError: ``shown`` is neither a Report nor a Comparison.
        traitlets.TraitError: an initial selection names nothing in ``shown``.
    """

    _esm = widget_module("explorer.js")
    _css = STATIC / "explorer.css"

    #: The shown report's payload (``explorer_payload.report_payload``) as JSON text.
    payload = traitlets.Unicode("").tag(sync=True)
    #: The selected array's tiles (``explorer_payload.array_payload``) as JSON text, or "".
    array = traitlets.Unicode("").tag(sync=True)
    #: For a comparison, one ``{"id", "title", "description", "mesh", "target"}`` per result
    #: (``id``: the strategy, or ``fsdp @ TPU v5e 2x4`` on several targets); else [].
    strategies = traitlets.List(traitlets.Dict()).tag(sync=True)
    #: The strategy shown (its id), or "" for a single report.
    selected_strategy = traitlets.Unicode("").tag(sync=True)
    #: The picked array's id (``arg:<path>``, ``out:<path>``, ``mid:<name>``), or "".
    selected_array = traitlets.Unicode("").tag(sync=True)
    #: The selected device's id, or -1.
    selected_device = traitlets.Int(NO_SELECTION).tag(sync=True)
    #: The selected collective's position in the ledger (0-based), or -1. After a recompile
    #: the same collective (kind, axes, source) stays selected wherever it now is, or none.
    selected_collective = traitlets.Int(NO_SELECTION).tag(sync=True)
    #: "" , "compiling", "running", "done" or "error": shown in the status line.
    status = traitlets.Enum(STATUSES, default_value="").tag(sync=True)
    #: An error message shown in an inline box ("" hides it).
    error = traitlets.Unicode("").tag(sync=True)
    #: Which control is wrong while the panes keep the last valid configuration ("" if none):
    #: the status then says "showing the last valid configuration" instead of "done".
    stale = traitlets.Unicode("").tag(sync=True)
    #: What the last :meth:`show` changed in the ledger and memory, in words ("" if nothing
    #: was shown before, or for a comparison).
    changes = traitlets.Unicode("").tag(sync=True)
    #: Bumped with every new report shown; prefetch messages carry it, so a view drops stale ones.
    generation = traitlets.Int(0).tag(sync=True)
    #: The shown report's Findings pane (``findings_pane.findings_state``: the findings'
    #: view object and what each links to) as JSON text: "pending" while its fixes compile
    #: in the background; "" for a comparison.
    findings = traitlets.Unicode("").tag(sync=True)
    #: The finding picked in the Findings pane (its position), or -1; reset by a new report.
    selected_finding = traitlets.Int(NO_SELECTION).tag(sync=True)
    #: While the panes show a program shardviz fixed (not the user's code), which fixes, in
    #: words, for the status bar's badge; "" for the user's own program.
    fixed = traitlets.Unicode("").tag(sync=True)

    def __init__(self, shown: Shown, **kwargs: Any) -> None:
        self._comparison: Comparison | None
        self._report: Report
        strategy = self._take(check_shown(shown), kwargs.pop("selected_strategy", None))
        ident = default_array(self._report)
        state: dict[str, Any] = {
            "payload": report_json(self._report),
            "strategies": self._strategies(),
            "selected_strategy": strategy,
            "selected_array": ident,
            "array": array_json(self._report, ident),
        }
        self._prefetcher = Latest()  # newest request wins; no status to show
        self._diagnoser = Latest()  # findings worked out off the kernel's thread
        self._findings_lock = threading.Lock()  # a new report and a late findings payload
        self._trying: int | None = None  # the generation whose fixes are being tried
        self._stopped: int | None = None  # the generation whose trials a run stopped
        self._tried: OrderedDict[str, Findings] = OrderedDict()  # tried, by trial key
        self._fix_handler: Callable[[Finding], None] | None = None
        self._fix_boxes: tuple[str, ...] | None = None
        super().__init__(**{**state, **kwargs})
        #: The generation and report a prefetch request is answered from, set together.
        self._prefetch_from: tuple[int, Report] = (self.generation, self._report)
        with self._findings_lock:
            self._send_findings()
        self.on_msg(self._on_msg)

    # ----------------------------------------------------------------------------------------
    # What is shown

    def _take(self, shown: Shown, strategy: str | None) -> str:
        """Adopt ``shown``; return the strategy to show ("" for a report).

        Raises:
            traitlets.TraitError: ``strategy`` is not one of the comparison's.
        """
        if isinstance(shown, Report):
            if strategy:
                raise traitlets.TraitError(
                    f"selected_strategy={strategy!r}, but a single report has no strategies"
                )
            self._comparison, self._report = None, shown
            return ""
        ids = list(shown.labels)
        if strategy and strategy not in ids:
            raise traitlets.TraitError(
                f"selected_strategy={strategy!r} is not a strategy of this comparison; use one "
                f"of {_choices(ids)}"
            )
        chosen = strategy or ids[0]
        self._comparison, self._report = shown, shown.result(chosen).report
        return chosen

    def _strategies(self) -> list[dict[str, str]]:
        return strategies_payload(self._comparison) if self._comparison is not None else []

    def show(self, shown: Shown) -> None:
        """Show another report or comparison (e.g. after a background recompile).

        Keeps the strategy, array, device and collective selected when they still exist in
        what is now shown, and resets each one that does not (strategy to the first, array to
        the first argument leaf, device and collective to none); a collective is found again
        by its kind, axes and source, not its position. Between two reports, ``changes`` says
        what differs (collectives added and removed, bytes moved, peak memory).

        Raises:
            TypeError: ``shown`` is neither a Report nor a Comparison.
        """
        shown = check_shown(shown)
        previous = self._report
        was_report = self._comparison is None
        keep = self.selected_strategy
        if isinstance(shown, Comparison) and keep not in shown.labels:
            keep = ""
        strategy = self._take(shown, keep if isinstance(shown, Comparison) else None)
        with self.hold_sync():
            self.strategies = self._strategies()
            self.selected_strategy = strategy
            self._refresh(previous)
            both = was_report and self._comparison is None
            self.changes = change_words(previous, self._report) if both else ""

    def _refresh(self, previous: Report) -> None:
        """Resend the payload for ``self._report`` and drop selections it no longer has
        (the selected collective is looked up in the new ledger by what it is)."""
        self.payload = report_json(self._report)
        with self._findings_lock:
            self.generation += 1
            self.selected_finding = NO_SELECTION
            self._send_findings()
        self._prefetch_from = (self.generation, self._report)
        if self.selected_device not in self._device_ids():
            self.selected_device = NO_SELECTION
        if self.selected_collective != NO_SELECTION:
            self.selected_collective = same_collective(
                previous, self._report, self.selected_collective
            )
        ids = self._array_ids()
        ident = self.selected_array if self.selected_array in ids else default_array(self._report)
        if ident == self.selected_array:
            self.array = array_json(self._report, ident)  # same id, new report: no event
        else:
            self.selected_array = ident

    @property
    def report(self) -> Report:
        """The report shown (for a comparison, the selected strategy's)."""
        return self._report

    @property
    def comparison(self) -> Comparison | None:
        """The comparison shown, or ``None`` for a single report."""
        return self._comparison

    @property
    def array_layout(self) -> ArrayLayout | None:
        """The selected array's tiles (computed from its spec for an intermediate), or ``None``."""
        if not self.selected_array:
            return None
        try:
            return entry_layout(find_entry(self._report, self.selected_array), self._report.mesh)
        except ValueError:
            return None

    def _array_ids(self) -> list[str]:
        return [e.id for e in array_entries(self._report)]

    def _device_ids(self) -> list[int]:
        mesh = self._report.mesh
        if mesh is not None:
            return list(mesh.device_ids)
        return list(memory_payload(self._report)["devices"])

    # ----------------------------------------------------------------------------------------
    # Findings and "try this fix"

    def _send_findings(self) -> None:
        """Set ``findings`` for the shown report (under ``_findings_lock``): at once when its
        findings are worked out (or there are none) or were tried before, else "pending" now
        and the payload from a background thread."""
        generation, report = self.generation, self._report
        found = report.findings
        kept = self._tried.get(found.trial) if found is not None and found.pending else None
        if kept is not None:
            self._report = report = replace(report, findings=kept)
        if self._comparison is not None and report.findings is None:
            self.findings = ""
        elif not findings_pending(report.findings):
            self.findings = findings_json(report, generation, self._fix_boxes)
        else:
            self.findings = pending_json(generation)
            if self._trying != generation:  # else under way already (new boxes only)
                self._trying = generation
                self._diagnoser.submit(lambda stage: self._try_fixes(stage, generation, report))

    def _try_fixes(self, stage: Stage, generation: int, report: Report) -> None:
        """Try ``report``'s fixes (compiling each) in a background thread, and show the tried
        report's findings unless another report or request has come since: then the trials
        stop before their next compile, and nothing is shown."""

        def stop() -> bool:
            return stage.stale or self.generation != generation

        tried: Report | None = None
        error = ""
        try:
            tried = report.try_fixes(stop=stop)
        except Exception as err:  # never raise into the kernel: say it in the pane
            error = short_message(err)
        with self._findings_lock:
            if stop():  # stale: a newer report, or a run stopped these trials
                return
            self._trying = None
            if tried is None:
                self.findings = error_json(generation, error)
                return
            self._keep_tried(report, tried)
            if self._report is report:
                self._report = tried
            self.findings = self._findings_text(tried, generation)

    def _findings_text(self, tried: Report, generation: int) -> str:
        """The tried report's findings payload, or an error payload saying why there is none."""
        try:
            return findings_json(tried, generation, self._fix_boxes)
        except Exception as err:  # never raise into the kernel: say it in the pane
            return error_json(generation, short_message(err))

    def _keep_tried(self, report: Report, tried: Report) -> None:
        """Keep ``tried``'s findings under ``report``'s trial key (the newest
        :data:`KEPT_TRIED`), so showing ``report`` again tries nothing."""
        if report.findings is None or not report.findings.trial or tried.findings is None:
            return
        self._tried[report.findings.trial] = tried.findings
        self._tried.move_to_end(report.findings.trial)
        while len(self._tried) > KEPT_TRIED:
            self._tried.popitem(last=False)

    @traitlets.observe("status")
    def _on_status(self, change: dict[str, Any]) -> None:
        """A recompile or run under way stops the shown report's fix trials (its report will
        replace theirs, and they would compete for the cores); when the status settles with
        the same report still shown (the run failed), stopped trials start again."""
        if change["new"] in BUSY:
            self._stop_trials()
        else:
            self._resume_trials()

    def _stop_trials(self) -> None:
        """Make the trials under way stale now: they stop before their next compile."""
        with self._findings_lock:
            if self._trying is None:
                return
            self._stopped, self._trying = self._trying, None
            self._diagnoser.supersede()

    def _resume_trials(self) -> None:
        """Try again the fixes of the shown report if a run stopped its trials."""
        with self._findings_lock:
            stopped, self._stopped = self._stopped, None
            if stopped == self.generation and self._trying is None:
                self._send_findings()

    def set_fix_handler(
        self, handler: Callable[[Finding], None] | None, boxes: Collection[str] = ()
    ) -> None:
        """Offer "try this fix": ``handler(finding)`` applies a finding's fix (e.g.
        :meth:`shardviz.widgets.session.Connection.try_fix`); ``boxes`` are the leaf paths
        the spec boxes control, which decides how each fix is tried. ``None`` withdraws it."""
        self._fix_handler = handler
        self._fix_boxes = tuple(boxes) if handler is not None else None
        with self._findings_lock:
            self._send_findings()

    def try_fix(self, index: int) -> None:
        """Try the fix of the shown report's finding at ``index``, as its button does.

        Raises:
            TypeError: this explorer has no function to recompile (built from a report).
            ValueError: no finding there, it has no fix, or the findings are still being
                worked out.
        """
        if self._fix_handler is None:
            raise TypeError(f"this Explorer shows a report, not a function; {NO_TRY_WORDS}")
        findings = self._report.findings
        if findings is None or findings_pending(findings):
            raise ValueError("the findings are still being worked out; try again once shown")
        if not 0 <= index < len(findings):
            raise ValueError(f"there is no finding {index}: the report has {len(findings)}")
        self._fix_handler(findings[index])

    def _on_try_fix(self, content: dict[str, Any]) -> None:
        """A view's "try this fix", for the report it shows; errors go to ``error``."""
        if content.get("generation") != self.generation:
            return  # clicked on a report no longer shown
        index = content.get("finding")
        try:
            if not isinstance(index, int):
                raise ValueError(f"try-fix needs a finding position, got {index!r}")
            self.try_fix(index)
        except Exception as err:  # the kernel survives a fix that cannot be tried
            self.error = short_message(err)
            self.status = "error"

    # ----------------------------------------------------------------------------------------
    # Validation and reactions

    @traitlets.validate("selected_strategy")
    def _check_strategy(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if self._comparison is None:
            if value:
                raise traitlets.TraitError(
                    f'selected_strategy={value!r}, but a single report has no strategies; use ""'
                )
            return value
        ids = list(self._comparison.labels)
        if value not in ids:
            raise traitlets.TraitError(
                f"selected_strategy={value!r} is not a strategy of this comparison; use one "
                f"of {_choices(ids)}"
            )
        return value

    @traitlets.validate("selected_array")
    def _check_array(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        ids = self._array_ids()
        if value and value not in ids:
            raise traitlets.TraitError(
                f"selected_array={value!r} is not an array of this report; use one of "
                f"{_choices(ids, NO_ARRAY_CHOICE)}"
            )
        return value

    @traitlets.validate("selected_device")
    def _check_device(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        ids = self._device_ids()
        if value != NO_SELECTION and value not in ids:
            raise traitlets.TraitError(
                f"selected_device={value} is not a device of this report's mesh; use one of "
                f"{_choices(ids, NO_SELECTION_CHOICE)}"
            )
        return value

    @traitlets.validate("selected_collective")
    def _check_collective(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        n = len(self._report.collectives)
        if value != NO_SELECTION and not 0 <= value < n:
            valid = f"0 to {n - 1}" if n else "none: the ledger is empty"
            raise traitlets.TraitError(
                f"selected_collective={value} is not a ledger position; valid: {valid},"
                f"{NO_SELECTION_CHOICE}"
            )
        return value

    @traitlets.validate("selected_finding")
    def _check_finding(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        findings = self._report.findings
        n = 0 if findings is None or findings_pending(findings) else len(findings)
        if value != NO_SELECTION and not 0 <= value < n:
            valid = f"0 to {n - 1}" if n else "none: no findings are shown"
            raise traitlets.TraitError(
                f"selected_finding={value} is not a finding's position; valid: {valid},"
                f"{NO_SELECTION_CHOICE}"
            )
        return value

    @traitlets.observe("selected_strategy")
    def _on_strategy(self, change: dict[str, Any]) -> None:
        if self._comparison is None or not change["new"]:
            return
        report = self._comparison.result(change["new"]).report
        if report is self._report:
            return
        previous, self._report = self._report, report
        with self.hold_sync():
            self._refresh(previous)

    @traitlets.observe("selected_array")
    def _on_array(self, change: dict[str, Any]) -> None:
        self.array = array_json(self._report, change["new"])

    # ----------------------------------------------------------------------------------------
    # Prefetch

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """A view that has drawn the payload asks for the arrays ahead of its picks, or
        tries a finding's fix."""
        if isinstance(content, dict) and content.get("type") == TRY_FIX:
            self._on_try_fix(content)
            return
        if not isinstance(content, dict) or content.get("type") != PREFETCH:
            return
        generation, report = self._prefetch_from
        if content.get("generation") != generation:
            return  # the view has an older report: the new one is on its way, and it asks again
        skip = self.selected_array  # already in the `array` trait
        self._prefetcher.submit(lambda stage: self._prefetch(stage, generation, report, skip))

    def _prefetch(self, stage: Stage, generation: int, report: Report, skip: str) -> int:
        """Send ``report``'s arrays in batches (in a background thread); return how many.

        Stops before the next batch once a newer request (``stage.stale``) or a newer report
        makes this one stale; only a prefetch that ran to the end says ``done``.
        """
        sent = 0
        for batch in prefetch_batches(report, skip, PREFETCH_BUDGET, PREFETCH_BATCH_BYTES):
            if self._prefetch_stale(stage, generation):
                return sent
            self.send(prefetched_message(generation, batch, done=False))
            sent += len(batch)
        if not self._prefetch_stale(stage, generation):
            self.send(prefetched_message(generation, [], done=True))
        return sent

    def _prefetch_stale(self, stage: Stage, generation: int) -> bool:
        """Whether a newer prefetch request or a newer report has come since this one began."""
        return stage.stale or self._prefetch_from[0] != generation

    # ----------------------------------------------------------------------------------------
    # Static views

    def static_html(self, *, wait: bool = True) -> str:
        """The static HTML view of what is shown (escaped, no script, no URL).

        With ``wait=True`` fixes not tried yet are tried first (each is a compile); with
        ``wait=False`` the findings show as they are, fixes not tried yet: what a notebook's
        display uses, so showing the widget never blocks the kernel on them.
        """
        if self._comparison is not None:
            return comparison_html(self._comparison)
        report = self._report
        if wait and findings_pending(report.findings):
            with contextlib.suppress(ShardvizError):  # no longer kept: shown untried
                report = report.try_fixes()
        return report_html(report)

    def _title(self) -> str:
        if self._comparison is not None:
            c = self._comparison
            return f"shardviz: {c.model} under {len(c.results)} strategies"
        return f"shardviz: {self._report.function}"

    def save_html(self, path: str | os.PathLike[str]) -> str:
        """Write the static view as one self-contained offline HTML file; return the path.

        The file is written whole or not at all (a view that raises leaves the file that was
        there as it was); a path that cannot be written is a ShardvizError naming it."""
        return write_text(path, lambda: page(self._title(), [self.static_html()]))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The live widget view plus a static ``text/html`` for viewers without a kernel."""
        static = self.static_html(wait=False)
        return with_static_html(super()._repr_mimebundle_(**kwargs), static)
