"""A report's :class:`~shardviz.model.Findings` as a self-contained HTML fragment.

Same content as :mod:`.text`, from the same :func:`~.view.findings_view`: a severity badge, the kind and title of each finding,
why in a paragraph, its cost and place, the fix (its code in a ``<code>`` block) and the
before/after of compiling with it as a table. Scoped ``<style>``, no script, no URL; every
string from the model is escaped where it enters the markup.

Testable hooks: the root is ``<div class="sv-root sv-findings" data-count="N">``; each finding
is ``<section class="sv-finding" data-kind="…" data-severity="…">``; its badge is
``<span class="sv-sev sv-sev-<severity>">``; its facts are ``<dl class="sv-fwhere">`` with one
``<dt>`` per label; the fix is ``<div class="sv-fix" data-fix="<kind>">`` with
``<pre class="sv-fixcode"><code>``; the check is ``<div class="sv-verdict sv-helps|sv-nohelp">``
then ``<table class="sv-beforeafter">`` with one ``<tr class="sv-ba" data-row="<key>">`` per
figure (``data-changed="1"`` where before and after differ); notes are ``sv-fnotes``.
In a report, :func:`findings_section_html` gives the compact list (``<section
class="sv-findings-list">``, one ``<li class="sv-fitem">`` per finding).
"""

from __future__ import annotations

from collections.abc import Sequence

from shardviz.model.findings import Finding, Findings
from shardviz.render.findings.view import (
    FindingsView,
    FindingView,
    finding_view,
    findings_view,
    section_view,
)
from shardviz.render.html import CSS, MONO, SANS, page
from shardviz.render.stylesheets import stylesheet
from shardviz.render.svg import esc

#: Badge colours (text, background, border) by severity.
SEVERITY_COLORS = {
    "error": ("#a40e26", "#ffebe9", "#ff8182"),
    "warning": ("#7d4e00", "#fff8c5", "#d4a72c"),
    "info": ("#0550ae", "#ddf4ff", "#80ccff"),
}

_SEV_CSS = "".join(
    f".sv-root .sv-sev-{s}{{color:{fg};background:{bg};border-color:{bd}}}"
    f".sv-root section.sv-finding.sv-at-{s}{{border-left-color:{bd}}}"
    for s, (fg, bg, bd) in SEVERITY_COLORS.items()
)

FINDINGS_CSS = stylesheet("findings.css", SANS=SANS, MONO=MONO)

#: The findings' own CSS, without the base ``sv-root`` rules (the report already has those).
FINDINGS_STYLE = "<style>" + (FINDINGS_CSS + _SEV_CSS).replace("\n", "") + "</style>"
STYLE = "<style>" + (CSS + "\n" + FINDINGS_CSS + _SEV_CSS).replace("\n", "") + "</style>"


def severity_badge(severity: str) -> str:
    """``<span class="sv-sev sv-sev-error">error</span>``."""
    return f'<span class="sv-sev sv-sev-{esc(severity)}">{esc(severity)}</span>'


def _where(f: FindingView) -> str:
    items = [f"<dt>cost</dt><dd>{esc(f.cost)}</dd>"]
    for row in f.where:
        text = f"<code>{esc(row.text)}</code>" if row.label == "code" else esc(row.text)
        items.append(f"<dt>{esc(row.label)}</dt><dd>{text}</dd>")
    return '<dl class="sv-fwhere">' + "".join(items) + "</dl>"


def _check(f: FindingView) -> str:
    c = f.check
    if c is None:
        return '<div class="sv-verdict sv-dim">check: not tried</div>'
    cls = "sv-helps" if c.helps else "sv-nohelp"
    verdict = f": {esc(c.verdict)}" if c.verdict else ""
    rows = [
        f'<tr class="sv-ba" data-row="{r.key}"'
        + (' data-changed="1"' if r.before != r.after else "")
        + f'><td>{esc(r.label)}</td><td class="sv-num">{esc(r.before)}</td>'
        f'<td class="sv-num">{esc(r.after)}</td></tr>'
        for r in c.rows
    ]
    return (
        f'<div class="sv-verdict {cls}"><b>{esc(c.word)}</b>{verdict} '
        '<span class="sv-dim">(compiled before and after, compile-only; per device)</span></div>'
        '<table class="sv-beforeafter"><tr><th></th><th class="sv-num">before</th>'
        '<th class="sv-num">after</th></tr>' + "".join(rows) + "</table>"
    )


def _fix(f: FindingView) -> str:
    if f.fix is None:
        return f'<div class="sv-fix sv-nofix"><b>fix</b> {esc(f.no_fix)}</div>'
    return (
        f'<div class="sv-fix" data-fix="{esc(f.fix.kind)}"><b>fix</b> {esc(f.fix.description)}'
        f'<pre class="sv-fixcode"><code>{esc(f.fix.code)}</code></pre></div>' + _check(f)
    )


def finding_html(f: FindingView) -> str:
    """One finding as a ``<section class="sv-finding">``."""
    return (
        f'<section class="sv-finding sv-at-{esc(f.severity)}" data-kind="{esc(f.kind)}" '
        f'data-severity="{esc(f.severity)}"><div class="sv-ftitle">{severity_badge(f.severity)}'
        f'<span class="sv-fkind">{esc(f.kind)}</span>{esc(f.title)}</div>'
        f'<p class="sv-why">{esc(f.why)}</p>{_where(f)}{_fix(f)}</section>'
    )


def findings_html(findings: Findings | FindingsView) -> str:
    """Findings as a self-contained HTML fragment.

    Args:
        findings: the findings (from a report or built by hand), or their view.

    Returns:
        One ``<div class="sv-root sv-findings">`` with its own ``<style>``: a header (the
        function, how many of each severity, what was checked for), one section per finding
        and the notes.
    """
    view = findings if isinstance(findings, FindingsView) else findings_view(findings)
    body = [
        f'<div class="sv-head">Findings <span class="sv-dim">· {esc(view.function)} · '
        f"{esc(view.count)}</span></div>",
        f'<div class="sv-dim sv-checked">{esc(view.checked)}</div>',
    ]
    if view.untried:
        body.append(f'<div class="sv-untried">{esc(view.untried)}</div>')
    body.extend(finding_html(f) for f in view.items)
    if view.notes:
        body.append(
            '<div class="sv-fnotes">'
            + "".join(f"<div><b>note</b> {esc(n)}</div>" for n in view.notes)
            + "</div>"
        )
    return (
        f'<div class="sv-root sv-findings" data-count="{len(view.items)}">{STYLE}'
        + "".join(body)
        + "</div>"
    )


def finding_items_html(items: Sequence[Finding], head: str) -> str:
    """Findings that are not one report's (a serving comparison's) as the findings view
    draws them: ``head`` (plain text, escaped here), then one section per finding, in one
    ``<div class="sv-root sv-findings">`` with its own ``<style>``."""
    sections = "".join(finding_html(finding_view(f)) for f in items)
    return (
        f'<div class="sv-root sv-findings" data-count="{len(items)}">{STYLE}'
        f'<div class="sv-head">{esc(head)}</div>{sections}</div>'
    )


def findings_page(findings: Findings) -> str:
    """The findings as one self-contained offline HTML document, titled by their function."""
    return page(f"shardviz: findings of {findings.function}", [findings_html(findings)])


def findings_section_html(findings: Findings | FindingsView | None) -> list[str]:
    """The report's compact Findings section (severity, kind, title, ledger numbers, the fix
    and its verdict per finding); ``[]`` when not diagnosed or nothing was found."""
    view = findings if isinstance(findings, FindingsView) else section_view(findings)
    if view is None:
        return []
    items = [
        f'<li class="sv-fitem" data-kind="{esc(f.kind)}" data-severity="{esc(f.severity)}">'
        f'{severity_badge(f.severity)}<span class="sv-fkind">{esc(f.kind)}</span>'
        f"{esc(f.title)}"
        + (f' <span class="sv-dim">({esc(f.place)})</span>' if f.place else "")
        + (f'<div class="sv-ffix">{esc(f.summary)}</div>' if f.summary else "")
        + "</li>"
        for f in view.items
    ]
    return [
        f'<section class="sv-findings-list">{FINDINGS_STYLE}<h4>Findings<span class="sv-dim">'
        f"{esc(view.count)} · details: <code>report.findings</code></span></h4>"
        + (f'<div class="sv-untried">{esc(view.untried)}</div>' if view.untried else "")
        + f'<ol class="sv-flist">{"".join(items)}</ol></section>'
    ]
