"""Sphinx configuration of shardviz's docs site (``make docs``).

The site is built offline: MyST-NB runs the course notebooks and the how-to pages in a fresh
kernel of this interpreter, and the pages show the static HTML/SVG every shardviz view carries,
never a widget that needs a running kernel or a script from a CDN.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))

os.environ["JAX_PLATFORMS"] = "cpu"  # autodoc and the solutions page import jax here too


def _kernelspec() -> Path:
    """A ``python3`` kernelspec for this interpreter, put first on ``JUPYTER_PATH``.

    The kernel runs ``_kernel/startup.py`` before each notebook (plotly without its CDN), with
    jax on fake CPU devices (``SHARDVIZ_DEVICES=cpu``, whatever the shell says) and the
    repository importable. The notebooks pick their device count themselves.
    """
    tag = hashlib.sha256(f"{sys.executable}|{DOCS}".encode()).hexdigest()[:12]
    home = Path(tempfile.gettempdir()) / f"shardviz-docs-kernel-{tag}"
    spec = home / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    startup = DOCS / "_kernel" / "startup.py"
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    argv.append(f"--IPKernelApp.exec_files={json.dumps([str(startup)])}")
    # What XLA and libtpu log from C++ (e.g. libtpu looking for a TPU on this machine before a
    # deviceless compile) goes to the build's log, not onto the pages; Python's warnings and
    # prints still reach the cell outputs.
    argv.append("--IPKernelApp.capture_fd_output=False")
    kernel = {
        "argv": argv,
        "display_name": "Python 3 (shardviz docs)",
        "language": "python",
        "env": {"JAX_PLATFORMS": "cpu", "SHARDVIZ_DEVICES": "cpu"},
    }
    text = json.dumps(kernel, indent=1)
    target = spec / "kernel.json"
    if not target.exists() or target.read_text() != text:
        partial = spec / f"kernel.json.{os.getpid()}"
        partial.write_text(text)
        partial.replace(target)  # atomic: a build running alongside never reads half a file
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        p for p in (str(home), os.environ.get("JUPYTER_PATH", "")) if p
    )
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    return home


def library_key() -> str:
    """A digest of everything an executed page depends on besides its own cells: the package's
    files, the docs kernel (its startup file and kernelspec), the Python and every installed
    distribution.

    MyST-NB's execution cache matches a notebook by its cells only; keeping the cache in a
    folder named by this key makes any change to the library or the environment re-run every
    notebook, while a rebuild with nothing changed re-runs none.
    """
    digest = hashlib.sha256(sys.version.encode())
    for path in sorted((ROOT / "shardviz").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    digest.update((DOCS / "_kernel" / "startup.py").read_bytes())
    digest.update((KERNEL_HOME / "kernels" / "python3" / "kernel.json").read_bytes())
    dists = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    digest.update("\n".join(dists).encode())
    return digest.hexdigest()[:16]


KERNEL_HOME = _kernelspec()

# The site's own Sphinx code: pages are read again when it changes (Sphinx tracks settings,
# not extension code).
shardviz_docs_digest = hashlib.sha256(
    b"".join(p.read_bytes() for p in sorted((DOCS / "_ext").glob("*.py")))
).hexdigest()[:16]

project = "shardviz"
author = "the shardviz authors"
copyright = "the shardviz authors"  # noqa: A001 (Sphinx's name)
release = version = "0.1.0"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "shardviz_docs",
]

# course/notebooks is the repository's notebooks/ folder: its notes for authors
# (CONVENTIONS.md) are not pages of the site.
exclude_patterns = [
    "_build",
    "_kernel",
    "_ext",
    ".gitignore",
    "**/.ipynb_checkpoints",
    "course/notebooks/*.md",
]
root_doc = "index"

# --- notebooks (MyST-NB) ------------------------------------------------------------------------
# "cache": a notebook runs again only when its cells, the library or the environment changed
# (see library_key); `-D nb_execution_mode=force` runs every one regardless.
nb_execution_mode = "cache"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
# The views' static HTML (an SVG) wins over the widget view, which needs a live kernel; no
# ipywidgets or require.js from a CDN.
nb_mime_priority_overrides = [
    ("*", "application/vnd.jupyter.widget-view+json", None),
    ("*", "application/javascript", None),
]
nb_ipywidgets_js: dict[str, dict[str, str]] = {}
myst_enable_extensions = ["colon_fence", "dollarmath"]
# Formulas as styled text (see _ext/shardviz_docs.py): MathJax would come from a CDN.
html_math_renderer = "shardviz_plain"
myst_heading_anchors = 3

# --- API reference --------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autosummary_generate = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True

# --- HTML -----------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "shardviz"
html_static_path = ["_static"]
html_css_files = ["shardviz.css"]
html_theme_options = {
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
html_show_sourcelink = False
# The pictures are drawn for a light page; a reader can still switch to dark.
html_context = {"default_mode": "light"}


def _cache_per_library(app: Any, config: Any) -> None:
    """Put the execution cache in ``<build>/.jupyter_cache/<library key>``, dropping the caches
    made for other versions of the library, unless a cache path was given."""
    if config.nb_execution_mode != "cache" or config.nb_execution_cache_path:
        return
    caches = Path(app.outdir).parent / ".jupyter_cache"
    key = library_key()
    if caches.is_dir():
        for old in caches.iterdir():
            if old.name != key:
                shutil.rmtree(old, ignore_errors=True)
    config.nb_execution_cache_path = str(caches / key)


def setup(app: Any) -> None:
    app.connect("config-inited", _cache_per_library, priority=100)
