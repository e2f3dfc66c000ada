"""The static picture every widget adds to its mime bundle, for viewers without a kernel."""

from __future__ import annotations

from typing import Any


def with_static_html(bundle: Any, html: str) -> Any:
    """``bundle`` (a widget's ``_repr_mimebundle_`` result) with ``text/html`` set to ``html``.

    Keeps the bundle's shape: ``None`` becomes ``{"text/html": html}``, a ``(data, metadata)``
    pair stays a pair, a dict stays a dict.
    """
    if bundle is None:
        return {"text/html": html}
    if isinstance(bundle, tuple):
        data, metadata = bundle
        return {**data, "text/html": html}, metadata
    return {**bundle, "text/html": html}
