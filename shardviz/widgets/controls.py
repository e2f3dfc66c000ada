"""The explorer's controls: mesh shape, axis names, strategy, and one partition spec per array.

:class:`Controls` is an ipywidgets box that checks every field as the user types and hands on a
:class:`Config` only when the whole configuration is valid. What it checks and proposes is in
:mod:`.config_checks`; the spec boxes are read and written by :mod:`shardviz.capture.spec_text`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets
from ipywidgets.widgets.widget_string import TextStyle

from shardviz.capture.spec_text import SpecEntries, format_spec_text, parse_spec_text
from shardviz.errors import MeshError, ShardvizError, SpecError, problem
from shardviz.explainer.background import short_message
from shardviz.widgets.config_checks import (
    AS_GIVEN,
    factorisations,
    fit_spec,
    parse_axis_names,
    propose_names,
    rename_spec,
    strategies_for,
    unused_axes_note,
    validate_spec,
)
from shardviz.widgets.spec_folds import (
    Fold,
    box_layout,
    folds_for,
    leaf_label,
    path_row,
)
from shardviz.widgets.spec_tree import (
    Group,
    group_tree,
    logical_specs,
    matches,
    mirrors,
    parse_rules,
    sections,
)

__all__ = ["AS_GIVEN", "Config", "Controls"]

INVALID_COLOR = "#b00020"
NOTE_COLOR = "#57606a"

#: (mesh_shape, axis_names, strategy) -> spec per leaf path; raises ShardvizError if unfit.
StrategySpecs = Callable[[tuple[int, ...], tuple[str, ...], str], dict[str, SpecEntries]]
#: Called with the fields that are wrong now (field -> message; empty once all are valid).
ErrorsCallback = Callable[[Mapping[str, str]], Any]


@dataclass(frozen=True)
class Config:
    """One complete, valid explorer configuration.

    ``specs`` maps leaf paths (``params/w1``) to spec entries. With a strategy other than
    :data:`AS_GIVEN` they are the strategy's specs (or empty when unknown to the controls).
    """

    mesh_shape: tuple[int, ...]
    axis_names: tuple[str, ...]
    strategy: str = AS_GIVEN
    specs: Mapping[str, SpecEntries] = field(default_factory=dict)


def _shape_label(shape: tuple[int, ...]) -> str:
    return " x ".join(map(str, shape))


def _show(message: widgets.HTML, text: str) -> None:
    message.value = (
        f'<span style="color:{INVALID_COLOR}">{html.escape(text, quote=False)}</span>'
        if text
        else ""
    )
    message.layout.display = "" if text else "none"


def _say(message: widgets.HTML, text: str) -> None:
    """A note (not an error) under a field, in grey; hidden when empty."""
    message.value = (
        f'<span style="color:{NOTE_COLOR}">{html.escape(text, quote=False)}</span>' if text else ""
    )
    message.layout.display = "" if text else "none"


def _mark(box: widgets.Text, invalid: bool) -> None:
    """Red text and the ``shardviz-invalid`` class on a wrong box. Spec boxes share one
    style widget, so a wrong one gets a style of its own rather than turning all red."""
    if box.style.text_color != (INVALID_COLOR if invalid else None):
        width = box.style.description_width
        if invalid:
            box.style = TextStyle(description_width=width, text_color=INVALID_COLOR)
        else:
            box.style = _PLAIN.get(width) or _PLAIN.setdefault(
                width, TextStyle(description_width=width)
            )
    if invalid:
        box.add_class("shardviz-invalid")
    else:
        box.remove_class("shardviz-invalid")


#: One plain style per label width, shared by the boxes that are right again.
_PLAIN: dict[str, TextStyle] = {}
#: Leaves listed in a message before "… N more".
MAX_LISTED = 12


class _Boxes(Mapping[str, Any]):
    """``Controls.spec_boxes`` / ``spec_messages``: every leaf with a box, the widget made
    when asked for (``part`` 0 the box, 1 its message)."""

    def __init__(self, controls: Controls, part: int) -> None:
        self._controls, self._part = controls, part

    def __getitem__(self, path: str) -> Any:
        if path not in self._controls._shown:
            raise KeyError(path)
        return self._controls._box(path)[self._part]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._controls._shown))

    def __len__(self) -> int:
        return len(self._controls._shown)

    def __contains__(self, path: object) -> bool:
        return path in self._controls._shown


def _chains(group: Group, above: tuple[str, ...]) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Each leaf under ``group`` with the folders that hold it, outermost first."""
    here = (*above, group.path or group.name)
    for leaf in group.leaves:
        yield leaf, here
    for child in group.children:
        yield from _chains(child, here)


class Controls(widgets.VBox):
    """Mesh shape, axis names, strategy and one spec box per array leaf, checked as you type.

    Each field shows what is wrong right under it (red) and clears when fixed. Callbacks
    registered with :meth:`on_change` get a :class:`Config` only when every field is valid
    and something changed since the last one; those registered with :meth:`on_errors` hear
    whenever the set of wrong fields changes. Renaming the axes renames them in the typed
    specs; a new mesh shape fits the typed specs that no longer fit (:func:`fit_spec`); a
    grey note under the specs says what was changed.

    Args:
        shapes: leaf path -> array shape, in display order.
        initial: the starting configuration (e.g. ``ExplorerSession.initial_config()``).
        devices: the device count the mesh shapes factor (default: ``initial``'s).
        strategy_specs: computes a strategy's specs, to show them in the (then read-only)
            boxes and check that the strategy fits; without it a strategy's specs are left to
            whoever receives the config.
        logical_axes: leaf pattern -> logical dim names (``{"layers/*/wq": ("embed",
            "heads")}``); with it a "logical rules" box (``embed=data, heads=model``) sets
            every leaf a pattern names at once.

    For hundreds of leaves the boxes stand in folders by module path (:mod:`.spec_tree`),
    the parameters' first and open; optimizer leaves that mirror a parameter (Adam's ``mu``
    and ``nu``) follow its box while ``follow`` is ticked (untick it for boxes of their own);
    the filter (``layers/*/wq``) lists the matching boxes and sets them all at once.
    """

    def __init__(
        self,
        shapes: Mapping[str, Sequence[int]],
        initial: Config,
        *,
        devices: int | None = None,
        strategy_specs: StrategySpecs | None = None,
        logical_axes: Mapping[str, Sequence[str | None]] | None = None,
    ) -> None:
        self.shapes = {p: tuple(int(n) for n in s) for p, s in shapes.items()}
        self.devices = devices or math.prod(initial.mesh_shape)
        self._strategy_specs = strategy_specs
        self._callbacks: list[Callable[[Config], Any]] = []
        self._error_callbacks: list[ErrorsCallback] = []
        self._names = tuple(initial.axis_names)  # the last valid names, to carry a rename
        self._updating = False
        self._typed = {p: format_spec_text(initial.specs.get(p, ())) for p in self.shapes}
        self.config: Config | None = None
        self.errors: dict[str, str] = {}
        #: Optimizer leaf -> the parameter it mirrors (Adam's mu and nu, :func:`mirrors`).
        self.mirrors = mirrors(self.shapes)
        #: The mirrors that follow their parameter's box now (no box of their own).
        self.following = {m for m, p in self.mirrors.items() if self._typed[m] == self._typed[p]}
        self._logical = dict(logical_axes or {})
        self._made: dict[str, tuple[widgets.Text, widgets.HTML]] = {}
        #: What each leaf's box shows (typed, or the strategy's), made or not yet.
        self._shown_text = dict(self._typed)
        self._shown: list[str] = []  # the leaves with a box (not following a parameter)
        self._chains: dict[str, tuple[str, ...]] = {}  # leaf -> its folders, outermost first
        self._look = box_layout()  # one layout and style for every box
        #: Leaf path -> its spec box, made when first drawn or asked for.
        self.spec_boxes: Mapping[str, widgets.Text] = _Boxes(self, 0)
        #: Leaf path -> the message under its box (red when the box is wrong).
        self.spec_messages: Mapping[str, widgets.HTML] = _Boxes(self, 1)
        self.folds: dict[str, Fold] = {}
        self._make_mesh_controls(initial)
        self._make_leaf_controls()
        self._sync_boxes()
        self._connect()
        super().__init__(self._rows())
        _say(self.note, "")
        self._update(notify=False)
        self._last: Config | None = self.config
        self._last_errors: dict[str, str] = dict(self.errors)

    def _make_mesh_controls(self, initial: Config) -> None:
        """The mesh's shape, its axis names and the strategy, with their messages."""
        options = factorisations(self.devices)
        if initial.mesh_shape not in options:
            options = [tuple(initial.mesh_shape), *options]
        self.mesh_shape = widgets.Dropdown(
            options=[(_shape_label(s), s) for s in options], value=tuple(initial.mesh_shape),
            description="mesh shape",
        )  # fmt: skip
        self.axis_names = widgets.Text(
            value=", ".join(initial.axis_names), description="axis names",
            continuous_update=True, placeholder="data, model",
        )  # fmt: skip
        self.axis_message = widgets.HTML()
        names = tuple(initial.axis_names)
        self.strategy = widgets.Dropdown(
            options=strategies_for(names), value=initial.strategy if initial.strategy
            in strategies_for(names) else AS_GIVEN, description="strategy",
        )  # fmt: skip
        self.strategy_message = widgets.HTML()
        self.message = widgets.HTML()
        #: What the controls changed for the user (a rename carried, specs fitted to a mesh).
        self.note = widgets.HTML()

    def _make_leaf_controls(self) -> None:
        """What sets the leaves' specs beside their boxes: the optimizer state's follow box,
        the filter with its bulk set, the logical rules, and the boxes' tree."""
        self.follow = widgets.Checkbox(
            value=bool(self.following), indent=False,
            description=f"optimizer state follows the parameters ({len(self.mirrors)} leaves)",
            layout=widgets.Layout(width="auto", display="" if self.mirrors else "none"),
        )  # fmt: skip
        self.filter = widgets.Text(
            description="filter", placeholder="layers/*/wq", continuous_update=True,
            tooltip="show only the leaves whose path ends like this (* within one name)",
            **box_layout(),
        )  # fmt: skip
        self.bulk_spec = widgets.Text(
            description="set to", placeholder="data, model", continuous_update=True,
            **box_layout(),
        )  # fmt: skip
        self.bulk_button = widgets.Button(
            description="set on the matches", disabled=True, layout=widgets.Layout(width="auto")
        )
        self.bulk_message = widgets.HTML()
        self.rules = widgets.Text(
            description="logical rules", placeholder="embed=data, mlp=model",
            **box_layout(),
        )  # fmt: skip
        self.rules_button = widgets.Button(
            description="apply the rules", layout=widgets.Layout(width="auto")
        )
        self.rules_message = widgets.HTML()
        self.tree = widgets.VBox(
            layout=widgets.Layout(max_height="420px", overflow="auto", flex="0 0 auto")
        )
        self.matches = widgets.VBox(
            layout=widgets.Layout(max_height="420px", overflow="auto", display="none")
        )

    def _connect(self) -> None:
        """Each control's change to the handler that reads it."""
        self.mesh_shape.observe(self._on_shape, names="value")
        self.axis_names.observe(self._on_names, names="value")
        self.strategy.observe(self._on_field, names="value")
        self.follow.observe(self._on_follow, names="value")
        self.filter.observe(self._on_filter, names="value")
        self.bulk_spec.observe(self._on_filter, names="value")
        self.bulk_button.on_click(lambda _: self._bulk_clicked())
        self.rules_button.on_click(lambda _: self._rules_clicked())

    def _rows(self) -> list[widgets.Widget]:
        """The controls laid out, top to bottom."""
        header = widgets.HTML("<b>Partition specs</b> (one entry per dim; empty = replicated)")
        wrap = widgets.Layout(flex_flow="row wrap", align_items="center")
        logical = widgets.VBox(
            [widgets.HBox([self.rules, self.rules_button], layout=wrap), self.rules_message],
            layout=widgets.Layout(display="" if self._logical else "none"),
        )
        return [
            widgets.HBox([self.mesh_shape, self.axis_names, self.strategy], layout=wrap),
            self.axis_message, self.strategy_message, header,
            widgets.HBox([self.filter, self.bulk_spec, self.bulk_button], layout=wrap),
            self.bulk_message, logical, self.note, self.follow, self.tree, self.matches,
            self.message,
        ]  # fmt: skip

    # --- public ---------------------------------------------------------------------------

    def on_change(self, callback: Callable[[Config], Any], remove: bool = False) -> None:
        """Call ``callback(config)`` whenever a new complete, valid configuration appears."""
        if remove:
            self._callbacks.remove(callback)
        else:
            self._callbacks.append(callback)

    def on_errors(self, callback: ErrorsCallback, remove: bool = False) -> None:
        """Call ``callback(errors)`` whenever the wrong fields or their messages change
        (``{}`` once every field is valid again)."""
        if remove:
            self._error_callbacks.remove(callback)
        else:
            self._error_callbacks.append(callback)

    @property
    def valid(self) -> bool:
        """Whether every field is valid now."""
        return not self.errors

    def invalid_error(self, where: str) -> ShardvizError:
        """The error to raise when ``where`` needs a valid configuration and a field is wrong:
        names the field and its problem (a SpecError for a spec box, else a MeshError)."""
        field_name, text = next(iter(self.errors.items()), ("controls", "no configuration yet"))
        kind = SpecError if field_name in self.spec_boxes else MeshError
        return kind(
            problem(
                where,
                f"the {field_name!r} box is invalid ({text.split('. Fix:')[0]})",
                "fix that box (the message under it says how), then call it again",
            )
        )

    # --- the spec tree ----------------------------------------------------------------------

    #: At most this many boxes open at the start (a small program shows every box).
    OPEN_ALL = 24
    #: At most this many boxes listed by the filter (the rest are counted).
    LISTED = 200

    def _box(self, path: str) -> tuple[widgets.Text, widgets.HTML]:
        """The spec box and message of ``path``, made the first time it is drawn or asked
        for: a closed folder's boxes are not made, so a state of hundreds of leaves syncs
        (and a saved notebook stores) only the widgets someone opened."""
        if path not in self._made:
            shape = self.shapes[path]
            where = f"{path}: shape {shape}"
            box = widgets.Text(
                value=self._shown_text[path], description=leaf_label(path, where),
                description_allow_html=True, continuous_update=True,
                disabled=self.strategy.value != AS_GIVEN, placeholder="None (replicated)",
                tooltip=where, **self._look,
            )  # fmt: skip
            message = widgets.HTML(layout=widgets.Layout(display="none"))
            if path in self.errors:
                _show(message, self.errors[path])
                _mark(box, True)
            box.observe(self._on_spec, names="value")
            self._made[path] = (box, message)
        return self._made[path]

    def _set_text(self, path: str, text: str) -> None:
        """What ``path``'s box shows, made or not (a made box changes quietly)."""
        self._shown_text[path] = text
        if path in self._made:
            self._quietly(self._made[path][0], "value", text)

    def _sync_boxes(self) -> None:
        """The folders of every leaf that does not follow a parameter, in the leaves' order
        (their boxes are made as the folders open)."""
        self._shown = [p for p in self.shapes if p not in self.following]
        groups = sections(group_tree(self._shown))
        self._chains = {p: chain for g in groups for p, chain in _chains(g, ())}
        top, self.folds = folds_for(
            groups, self._row, self._title, open_first=True,
            open_all=len(self._shown) <= self.OPEN_ALL,
        )  # fmt: skip
        self.tree.children = top

    def _row(self, path: str) -> list[widgets.Widget]:
        return list(self._box(path))

    def reveal(self, path: str) -> widgets.Text:
        """Open the folders that hold ``path``'s box (a wrong box shows itself); its box."""
        for folder in self._chains.get(path, ()):
            self.folds[folder].expanded = True
        return self._box(path)[0]

    def _title(self, group: Group) -> str:
        """``layers/3 · 11 leaves``, and how many optimizer leaves follow the folder's."""
        leaves = group.all_leaves()
        words = f"{group.name} · {len(leaves)} lea{'f' if len(leaves) == 1 else 'ves'}"
        followers = sum(self.mirrors.get(m) in leaves for m in self.following)
        return words + (f" (+{followers} optimizer leaves follow)" if followers else "")

    def _on_follow(self, change: dict) -> None:
        """Tick: every mirror follows its parameter; untick: each gets a box of its own,
        holding the parameter's spec to start from."""
        if change["new"]:
            self.following = set(self.mirrors)
        else:
            for mirror in self.following:
                self._typed[mirror] = self._typed[self.mirrors[mirror]]
                self._set_text(mirror, self._typed[mirror])
            self.following = set()
        self._sync_boxes()
        self._on_filter({})
        self._update()

    def matching(self, pattern: str) -> list[str]:
        """The leaves with a box whose path ends like ``pattern`` (:func:`matches`)."""
        return [p for p in self._shown if matches(pattern, p)]

    def _on_filter(self, _change: dict) -> None:
        """List the boxes the filter matches in place of the folders (all when empty)."""
        pattern = self.filter.value.strip()
        filtering = bool(pattern)
        self.tree.layout.display = "none" if filtering else ""
        self.matches.layout.display = "" if filtering else "none"
        if not filtering:
            self.matches.children = ()
            self.bulk_button.disabled = True
            _say(self.bulk_message, "")
            return
        found = self.matching(pattern)
        rows = [path_row(p.rpartition("/")[0], *self._box(p)) for p in found[: self.LISTED]]
        self.matches.children = rows
        self.bulk_button.disabled = not found or not self.bulk_spec.value.strip()
        self.bulk_button.description = f"set on the {len(found)} matches"
        followers = sum(self.mirrors[m] in found for m in self.following)
        words = f"{len(found)} of {len(self._shown)} boxes match {pattern!r}"
        if len(found) > self.LISTED:
            words += f" (the first {self.LISTED} listed)"
        if followers:
            words += f"; {followers} optimizer leaves follow them"
        _say(self.bulk_message, words)

    def set_matching(self, pattern: str, spec_text: str) -> list[str]:
        """Type ``spec_text`` into every box whose leaf ``pattern`` matches, at once (one
        recompile), as the filter's button does; return the leaves set.

        Raises:
            SpecError: no box matches, the spec does not parse, or it does not fit one of
                the matches (names it); nothing is changed then.
        """
        found = self.matching(pattern)
        if not found:
            raise SpecError(
                problem(
                    "set the matches",
                    f"no spec box matches {pattern!r}",
                    "give a path ending such as layers/*/wq (* matches within one name)",
                )
            )
        spec = parse_spec_text(spec_text, name=pattern)
        self._set_many({p: spec for p in found}, f"{len(found)} leaves matching {pattern!r}")
        return found

    def apply_rules(self, text: str) -> list[str]:
        """Set every leaf a logical pattern names from the logical rules ``text``
        (``embed=data, mlp=model``); dims whose name has no rule are kept whole (said in
        the note). Returns the leaves set.

        Raises:
            SpecError: no logical axes were given, a rule does not parse, or a spec made
                does not fit its leaf (names it); nothing is changed then.
        """
        if not self._logical:
            raise SpecError(
                problem(
                    "logical rules",
                    "no leaf has logical axis names",
                    "pass logical_axes={'layers/*/wq': ('embed', 'heads'), ...} to the Explorer",
                )
            )
        rules = parse_rules(text)
        specs, unmapped = logical_specs(self._shown, self._logical, rules)
        if not specs:
            raise SpecError(
                problem(
                    "logical rules",
                    "no spec box matches a pattern of logical_axes",
                    f"use patterns that end like the leaves' paths, e.g. {next(iter(self.shapes))}",
                )
            )
        what = f"{len(specs)} leaves by the logical rules"
        if unmapped:
            what += f" (no rule for {', '.join(unmapped)}: kept whole)"
        self._set_many(specs, what)
        return list(specs)

    def _bulk_clicked(self) -> None:
        try:
            self.set_matching(self.filter.value, self.bulk_spec.value)
        except ShardvizError as err:
            _show(self.bulk_message, str(err))

    def _rules_clicked(self) -> None:
        try:
            self.apply_rules(self.rules.value)
            _show(self.rules_message, "")
        except ShardvizError as err:
            _show(self.rules_message, str(err))

    def _set_many(self, specs: Mapping[str, SpecEntries], what: str) -> None:
        """Type every spec of ``specs`` into its box with one check and one change; all or
        nothing: a spec that does not fit its leaf raises before any box changes."""
        shape = tuple(self.mesh_shape.value)
        names = parse_axis_names(self.axis_names.value, shape)
        for path, spec in specs.items():
            validate_spec(path, self.shapes[path], spec, shape, names)
        strategy = self._typed_from_strategy()
        for path, spec in specs.items():
            self._typed[path] = format_spec_text(spec)
            self._set_text(path, self._typed[path])
        texts = sorted({format_spec_text(s) for s in specs.values()})
        note = f"set {texts[0] if len(texts) == 1 else 'specs'} on {what}"
        if strategy != AS_GIVEN:
            note += f"; the other boxes keep strategy {strategy!r}'s specs, now typed"
        _say(self.note, note)
        self._update()

    def _typed_from_strategy(self) -> str:
        """Under a builtin strategy, make its specs (shown in the boxes) the typed ones and
        switch to "as given", so an edit changes only what it names; return the strategy."""
        strategy = self.strategy.value
        if strategy != AS_GIVEN:
            self._typed.update({p: self._shown_text[p] for p in self._shown})
            self._quietly(self.strategy, "value", AS_GIVEN)
        return strategy

    # --- setting from code (e.g. "try this fix" in the Explorer) ----------------------------

    def apply_spec(self, path: str, spec: SpecEntries) -> None:
        """Type ``spec`` into the box of the leaf ``path``, as a person would.

        Under a builtin strategy the boxes are read-only: the strategy's specs shown in them
        become the typed specs (strategy "as given"), so only ``path`` changes, and a grey note
        says so. Callbacks hear the new configuration if it is valid; if it is not, the box
        shows why, like a typo would.

        Raises:
            SpecError: no box controls ``path`` (the message lists the boxes).
        """
        if path not in self.spec_boxes:
            listed = ", ".join(map(repr, self._shown[:MAX_LISTED]))
            more = (
                f", … {len(self._shown) - MAX_LISTED} more" if len(self._shown) > MAX_LISTED else ""
            )
            fix = f"use one of {listed or '(none)'}{more}"
            if path in self.following:
                fix = (
                    f"it follows {self.mirrors[path]!r}: set that box, or untick "
                    "'optimizer state follows the parameters' for a box of its own"
                )
            raise SpecError(problem("Controls.apply_spec", f"no spec box controls {path!r}", fix))
        text = format_spec_text(spec)
        strategy = self._typed_from_strategy()
        self._typed[path] = text
        self._set_text(path, text)
        note = f"{path} set to {text}"
        if strategy != AS_GIVEN:
            note += f"; the other boxes keep strategy {strategy!r}'s specs, now typed"
        _say(self.note, note)
        self._update()

    def apply_mesh_shape(self, shape: Sequence[int]) -> None:
        """Pick the mesh shape ``shape`` (same axis count keeps the names; typed specs that
        no longer fit are fitted, as when the user picks it).

        Raises:
            MeshError: ``shape`` does not use exactly the controls' devices.
        """
        shape = tuple(int(n) for n in shape)
        if math.prod(shape) != self.devices or not shape:
            raise MeshError(
                problem(
                    "Controls.apply_mesh_shape",
                    f"mesh shape {shape} has {math.prod(shape)} devices, not {self.devices}",
                    f"give a shape whose sizes multiply to {self.devices}",
                )
            )
        options = [value for _, value in self.mesh_shape.options]
        if shape not in options:
            was = self.mesh_shape.value  # new options select their first: put it back quietly
            choices = [(_shape_label(shape), shape), *self.mesh_shape.options]
            self._quietly(self.mesh_shape, "options", choices)
            self._quietly(self.mesh_shape, "value", was)
        self.mesh_shape.value = shape

    # --- observers ------------------------------------------------------------------------

    def _on_shape(self, change: dict) -> None:
        if self._updating:
            return
        shape = tuple(change["new"])
        rank = len(shape)
        current = [p.strip().strip("'\"").strip() for p in self.axis_names.value.split(",")]
        if len([p for p in current if p]) != rank:
            self._quietly(self.axis_names, "value", ", ".join(propose_names(current, rank)))
        self._fit_typed(shape)
        self._update()

    def _on_names(self, change: dict) -> None:
        if self._updating:
            return
        try:
            names = parse_axis_names(change["new"], tuple(self.mesh_shape.value))
        except ShardvizError:
            names = None
        if names is not None and len(names) == len(self._names) and names != self._names:
            renamed = {old: new for old, new in zip(self._names, names, strict=True) if old != new}
            self._rename_typed(renamed)
        self._update()

    def _rename_typed(self, renamed: Mapping[str, str]) -> None:
        """Carry an axis rename into the typed specs, and say so."""
        changed = False
        for path, text in self._typed.items():
            try:
                spec = parse_spec_text(text, name=path)
            except ShardvizError:
                continue  # a box with a typo keeps its text
            new = rename_spec(spec, renamed)
            if new != tuple(spec):
                self._typed[path] = format_spec_text(new)
                changed = True
        if changed:
            words = ", ".join(f"{old!r} → {new!r}" for old, new in renamed.items())
            _say(self.note, f"renamed in the specs: {words}")

    def _fit_typed(self, shape: tuple[int, ...]) -> None:
        """Fit the typed specs that no longer fit the new mesh, and say which."""
        try:
            names = parse_axis_names(self.axis_names.value, shape)
        except ShardvizError:
            return
        fitted = []
        for path, text in self._typed.items():
            try:
                spec = parse_spec_text(text, name=path)
                validate_spec(path, self.shapes[path], spec, shape, names)
                continue
            except ShardvizError:
                pass
            try:
                spec = parse_spec_text(text, name=path)
            except ShardvizError:
                continue  # a box with a typo keeps its text
            new = fit_spec(spec, self.shapes[path], shape, names)
            self._typed[path] = format_spec_text(new)
            if path not in self.following:  # a follower changes with its parameter
                fitted.append(f"{path} {format_spec_text(spec)} → {self._typed[path]}")
        label = _shape_label(shape)
        _say(self.note, f"fitted to the {label} mesh: {'; '.join(fitted)}" if fitted else "")

    def _on_spec(self, change: dict) -> None:
        if not self._updating and self.strategy.value == AS_GIVEN:
            path = next(p for p, (b, _) in self._made.items() if b is change["owner"])
            self._typed[path] = self._shown_text[path] = change["new"]
            _say(self.note, "")
        self._on_field(change)

    def _on_field(self, change: dict) -> None:
        if not self._updating:
            self._update()

    def _quietly(self, widget: widgets.Widget, name: str, value: Any) -> None:
        was, self._updating = self._updating, True
        try:
            setattr(widget, name, value)
        finally:
            self._updating = was

    # --- checking -------------------------------------------------------------------------

    def _update(self, notify: bool = True) -> None:
        """Check every field, show what is wrong, and hand on a new valid config."""
        self.errors = {}
        shape = tuple(self.mesh_shape.value)
        names = self._check_names(shape)
        strategy = self._check_strategy(names)
        specs: dict[str, SpecEntries] | None
        if strategy == AS_GIVEN:
            specs = self._check_typed(shape, names)
        else:
            specs = self._strategy_boxes(shape, names, strategy)
        if notify and self.errors != self._last_errors:
            self._last_errors = dict(self.errors)
            self._notify_errors()
        if self.errors or names is None or specs is None:
            self.config = None
            return
        self.config = Config(shape, names, strategy, specs)
        if notify and self.config != self._last:
            self._last = self.config
            self._notify(self.config)

    def _check_names(self, shape: tuple[int, ...]) -> tuple[str, ...] | None:
        try:
            names = parse_axis_names(self.axis_names.value, shape)
        except ShardvizError as err:
            self._fail("axis names", str(err), self.axis_message, self.axis_names)
            return None
        _show(self.axis_message, "")
        _mark(self.axis_names, False)
        self._names = names
        return names

    def _check_strategy(self, names: tuple[str, ...] | None) -> str:
        """Offer the strategies the axis names fit; fall back to AS_GIVEN if one no longer fits."""
        if names is None:
            return self.strategy.value
        options = strategies_for(names)
        if tuple(self.strategy.options) != options:
            value = self.strategy.value if self.strategy.value in options else AS_GIVEN
            was, self._updating = self._updating, True
            try:
                self.strategy.options = options
                self.strategy.value = value
            finally:
                self._updating = was
        return self.strategy.value

    def _check_typed(
        self, shape: tuple[int, ...], names: tuple[str, ...] | None
    ) -> dict[str, SpecEntries]:
        _show(self.strategy_message, "")
        specs: dict[str, SpecEntries] = {}
        for path in self._shown:
            self._set_text(path, self._typed[path])
            made = self._made.get(path)
            if made is not None and made[0].disabled:
                made[0].disabled = False
            try:
                spec = parse_spec_text(self._typed[path], name=path)
                if names is not None:
                    validate_spec(path, self.shapes[path], spec, shape, names)
            except ShardvizError as err:
                self.errors[path] = str(err)
                box, message = self._box(path)
                self.reveal(path)
                self._fail(path, str(err), message, box)
                continue
            if made is not None:
                _show(made[1], "")
                _mark(made[0], False)
            specs[path] = spec
        for mirror in self.following:
            if self.mirrors[mirror] in specs:  # a wrong parameter box is already said
                specs[mirror] = specs[self.mirrors[mirror]]
        return {p: specs[p] for p in self.shapes if p in specs}

    def _strategy_boxes(
        self, shape: tuple[int, ...], names: tuple[str, ...] | None, strategy: str
    ) -> dict[str, SpecEntries] | None:
        """Show the strategy's specs in read-only boxes (or say why it does not fit)."""
        for box, message in self._made.values():
            box.disabled = True
            _show(message, "")
            _mark(box, False)
        if names is None or self._strategy_specs is None:
            _show(self.strategy_message, "")
            return {}
        try:
            specs = self._strategy_specs(shape, names, strategy)
        except ShardvizError as err:
            self._fail("strategy", str(err), self.strategy_message)
            return None
        _say(self.strategy_message, unused_axes_note(strategy, shape, names))
        for path in self._shown:
            self._set_text(path, format_spec_text(specs.get(path, ())))
        return dict(specs)

    def _fail(
        self, where: str, text: str, message: widgets.HTML, box: widgets.Text | None = None
    ) -> None:
        self.errors[where] = text
        _show(message, text)
        if box is not None:
            _mark(box, True)

    def _notify_errors(self) -> None:
        for callback in list(self._error_callbacks):
            try:
                callback(dict(self.errors))
            except Exception as err:  # a broken receiver must not break typing
                _show(self.message, f"the error handler failed: {short_message(err)}")

    def _notify(self, config: Config) -> None:
        _show(self.message, "")
        for callback in list(self._callbacks):
            try:
                callback(config)
            except Exception as err:  # a broken receiver must not break typing
                _show(self.message, f"the change handler failed: {short_message(err)}")
