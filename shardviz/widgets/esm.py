"""The widgets' ES modules as anywidget gets them: ``static/shared.js`` put in front of each.

Every widget's front end (``static/<widget>.js``) imports its helpers from ``./shared.js`` so
that the type checker and editors see one module graph; a browser given the widget's module
alone could not resolve that import (anywidget loads ``_esm`` from a Blob URL, and nothing is
fetched: users run this offline). So the text a widget ships is one module: the shared text
with its ``export`` keywords dropped, then the widget's text with its one import of
``./shared.js`` dropped. The browser-unit tests load the same text.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from shardviz.errors import ModuleError

STATIC = Path(__file__).parent / "static"
SHARED = "shared.js"

#: The widget's one import of the shared module: ``import { a, b } from "./shared.js";``.
_IMPORT_SHARED = re.compile(r'^import\s*\{[^}]*\}\s*from\s*"\./shared\.js";[ \t]*\n', re.M)
#: Any import statement or dynamic import (none may remain in a shipped module).
_ANY_IMPORT = re.compile(r"^\s*import[\s{(*\"']", re.M)
#: ``export`` in front of a top-level declaration of the shared module.
_EXPORT = re.compile(r"^export (?=(?:async )?(?:function|const|let|class) )", re.M)


def shared_text() -> str:
    """``static/shared.js`` as it goes into every widget's module: no ``export`` left.

    Raises:
        ModuleError: the shared module imports something or has a default export.
    """
    text = (STATIC / SHARED).read_text(encoding="utf-8")
    if _ANY_IMPORT.search(text) or "export default" in text:
        raise ModuleError(f"{SHARED} must import nothing and have no default export")
    text = _EXPORT.sub("", text)
    if re.search(r"^export\b", text, re.M):
        raise ModuleError(f"{SHARED}: export only function, const, let or class declarations")
    return text


@functools.cache
def widget_module(name: str) -> str:
    """The ES module text a widget ships: the shared helpers, then ``static/<name>``.

    Args:
        name: the widget's file in ``static/``, e.g. ``"explorer.js"``.

    Returns:
        One module that imports nothing and whose default export is the widget's.

    Raises:
        ModuleError: the widget imports anything but ``./shared.js`` (or imports it twice),
            or has no default export.
        FileNotFoundError: no such file in ``static/``.
    """
    own = (STATIC / name).read_text(encoding="utf-8")
    own, found = _IMPORT_SHARED.subn("", own)
    if found > 1 or _ANY_IMPORT.search(own):
        raise ModuleError(f'{name} may import only from "./shared.js", once')
    if "export default" not in own:
        raise ModuleError(f"{name} has no default export for anywidget")
    return f"{shared_text()}\n// ---- {name} ----\n{own}"
