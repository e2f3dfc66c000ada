"""Retake the README's pictures from the real widgets, in JupyterLab and Chromium, offline.

    .venv/bin/python tools/screenshots.py [--out assets] [--only NAME ...] [--scale 1]

Starts JupyterLab (``tests/browser/jupyterlab.py``'s server, on 127.0.0.1 only), runs the
cells of ``tools/screenshot_cells.py`` in a notebook on 8 fake CPU devices, and screenshots
each picture cell's output element (not the page, so no toolbar or Lab chrome): at a viewport
widened until nothing in the output scrolls sideways or is cut, with boxes that scroll down let
out to their full height, clipped to what the view paints, in a small white margin.
Debian's Chromium drives it through Playwright (never ``playwright install``); a request that
would leave the machine, or a JS error, fails the run. The PNGs are written optimized (and
reduced to 256 colours if one is still over ``MAX_BYTES``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: tests.browser is importable from the repo
    sys.path.insert(0, str(ROOT))

from tests.browser.conftest import chromium, is_local  # noqa: E402
from tests.browser.jupyterlab import KERNELSPEC, LabPage, running_lab  # noqa: E402

CELLS = ROOT / "tools" / "screenshot_cells.py"
#: Where a picture's file goes by default (the README shows them from there).
ASSETS = ROOT / "assets"
BASE_WIDTH = 1100  # the viewport's width to start from, in CSS pixels
MAX_WIDTH = 2400  # widening stops here (a view that still overflows is reported)
PAD = 12  # room added when widening the viewport past an overflow, in CSS pixels
MARGIN = 8  # white border added around each picture, in CSS pixels
MAX_BYTES = 300_000
READY_TIMEOUT_MS = 180_000
#: One output of a cell. Lab 4 marks HTML outputs with ``data-mime-type`` but not widget views,
#: so a picture's output is the last one holding the cell's ``ready`` selector (not a stream).
OUTPUT = ".jp-OutputArea-output"

#: The painted extent of an output, and how far anything inside it is cut or scrolls.
_MEASURE_JS = """el => {
  const box = el.getBoundingClientRect();
  let right = box.left, overflow = Math.max(0, el.scrollWidth - el.clientWidth);
  const see = r => { if (r.width > 0 && r.height > 0) right = Math.max(right, r.right); };
  const transparent = c => c === 'transparent' || /rgba\\(.*,\\s*0\\)$/.test(c);
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.nodeType === Node.TEXT_NODE) {
      if (n.textContent.trim()) {
        const range = document.createRange();
        range.selectNodeContents(n);
        see(range.getBoundingClientRect());
      }
      continue;
    }
    const s = getComputedStyle(n);
    if (!n.checkVisibility({visibilityProperty: true})) continue;  // also in closed <details>
    // A box that scrolls sideways hides part of the view; one that clips on purpose
    // (overflow: hidden, an ellipsis or a bar's label) does so at any width.
    if (['auto', 'scroll'].includes(s.overflowX))
      overflow = Math.max(overflow, n.scrollWidth - n.clientWidth);
    const painted = n.children.length === 0 || n instanceof SVGSVGElement
      || ['IMG', 'CANVAS', 'INPUT', 'SELECT', 'TEXTAREA', 'BUTTON'].includes(n.tagName)
      || parseFloat(s.borderRightWidth) > 0 || !transparent(s.backgroundColor)
      || s.boxShadow !== 'none';
    if (painted && !(n.ownerSVGElement)) see(n.getBoundingClientRect());
  }
  overflow = Math.max(overflow, Math.ceil(right - box.right));
  return {x: box.left, y: box.top, width: Math.ceil(right - box.left),
          height: Math.ceil(box.height), overflow: Math.ceil(overflow)};
}"""

#: A picture cannot scroll: boxes in the view that scroll down (a long list kept to a height)
#: are let out to their full height. Returns how many there were.
_UNSCROLL_JS = """el => {
  let n = 0;
  for (const box of el.querySelectorAll('*')) {
    const s = getComputedStyle(box);
    if (!['auto', 'scroll'].includes(s.overflowY) || box.scrollHeight <= box.clientHeight + 1)
      continue;
    if (!box.checkVisibility()) continue;
    box.style.maxHeight = 'none';
    box.style.height = 'auto';
    box.style.overflowY = 'visible';
    n++;
  }
  return n;
}"""

#: Done when every code cell ran and the kernel is idle, or as soon as a cell failed.
_DONE_JS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w.context.sessionContext.session?.kernel;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  const failed = cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));
  if (failed) return true;
  return !!k && k.status === 'idle' && cells.every(c => c.model.executionCount !== null);
}"""

_ERRORS_JS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code')
  .flatMap(c => c.model.outputs.toJSON().filter(o => o.output_type === 'error')
  .map(o => c.model.sharedModel.getSource().split('\\n')[0] + ': ' + o.ename + ': ' + o.evalue))"""


@dataclass(frozen=True)
class Cell:
    """One cell of ``screenshot_cells.py``: ``setup``, or a picture named after its file."""

    name: str
    source: str
    ready: str = ""  # a CSS selector drawn in the output once the view is complete
    width: int = BASE_WIDTH

    @property
    def tag(self) -> str:
        """The first line the notebook gives the cell, to find it in the page."""
        return f"shot-{self.name}"


@dataclass
class Shot:
    """A picture taken: its file and the view's size in CSS pixels."""

    name: str
    path: Path
    view_width: int
    view_height: int
    viewport_width: int
    overflow: int  # pixels still cut or scrolling at MAX_WIDTH (0: the whole view is shown)


@dataclass
class Watch:
    """What went wrong in the page: requests leaving the machine, JS errors."""

    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def read_cells(path: Path = CELLS) -> list[Cell]:
    """The cells of ``path``: a ``# %% setup`` cell, then ``# %% shot: NAME | key: value``."""
    cells: list[Cell] = []
    header, lines = "", []

    def close() -> None:
        if not header:
            return
        name, *options = [part.strip() for part in header.split("|")]
        opts = dict(part.split(":", 1) for part in options)
        opts = {k.strip(): v.strip() for k, v in opts.items()}
        src = "\n".join(lines).strip("\n")
        name = name.removeprefix("shot:").strip()
        width = int(opts.get("width", BASE_WIDTH))
        cells.append(Cell(name, src, opts.get("ready", ""), width))

    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# %% "):
            close()
            header, lines = line.removeprefix("# %% "), []
        else:
            lines.append(line)
    close()
    if not cells or cells[0].name != "setup" or any(not c.ready for c in cells[1:]):
        raise ValueError(f"{path}: expected '# %% setup' first, then shot cells with 'ready:'")
    return cells


def write_notebook(cells: Sequence[Cell], path: Path) -> Path:
    """An unexecuted notebook of ``cells``, each shot starting with ``# view: shot-NAME``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.cells = [
        nbformat.v4.new_code_cell(c.source if c.name == "setup" else f"# view: {c.tag}\n{c.source}")
        for c in cells
    ]
    nbformat.write(nb, path)
    return path


def _save_png(png: bytes, path: Path, margin: int = 0) -> None:
    """Write ``png`` with a white ``margin`` (device pixels), optimized; past ``MAX_BYTES``, as
    256 colours (plenty for these views)."""
    from PIL import Image, ImageOps

    image = ImageOps.expand(Image.open(io.BytesIO(png)).convert("RGB"), margin, fill="white")
    image.save(path, optimize=True)
    if path.stat().st_size > MAX_BYTES:
        image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def _measure(page, output) -> dict:
    # Scrolled to the top, but clear of the toolbar's bottom border (a grey line otherwise).
    output.evaluate(
        "el => { el.style.scrollMarginTop = '24px'; el.scrollIntoView({block: 'start'}); }"
    )
    page.wait_for_timeout(100)  # a layout pass after a resize or scroll
    return output.evaluate(_MEASURE_JS)


def shoot(page, output, path: Path, width: int = BASE_WIDTH, scale: int = 1) -> Shot:
    """Screenshot ``output`` into ``path``, widening the viewport until nothing in it is cut.

    The picture is the output's own box, down to what the view paints on the right (never
    past the box: right of it are Lab's cell border and scrollbar), in a white margin.
    """
    page.set_viewport_size({"width": width, "height": 900})
    output.evaluate(_UNSCROLL_JS)
    m = _measure(page, output)
    while m["overflow"] > 0 and width < MAX_WIDTH:
        width = min(MAX_WIDTH, width + m["overflow"] + PAD)
        page.set_viewport_size({"width": width, "height": 900})
        m = _measure(page, output)
    # Tall enough that the whole output is on screen below Lab's bars.
    page.set_viewport_size({"width": width, "height": int(m["y"] + m["height"] + 40)})
    m = _measure(page, output)
    page.mouse.move(0, 0)  # no hover highlight in the picture
    clip = {
        "x": m["x"],
        "y": m["y"],
        "width": min(m["width"], width - m["x"]),
        "height": m["height"],
    }
    png = page.screenshot(clip=clip, animations="disabled", caret="hide")
    _save_png(png, path, MARGIN * scale)
    return Shot(path.stem, path, m["width"], m["height"], width, max(0, m["overflow"]))


def _new_page(browser, scale: int, watch: Watch):
    context = browser.new_context(
        viewport={"width": BASE_WIDTH, "height": 900}, device_scale_factor=scale
    )

    def route(r):
        if is_local(r.request.url):
            r.continue_()
        else:
            watch.blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda exc: watch.errors.append(f"pageerror: {exc}"))
    return context, page


@contextlib.contextmanager
def _browser(browser) -> Iterator[object]:
    if browser is not None:
        yield browser
        return
    with chromium() as b:
        yield b


@contextlib.contextmanager
def _lab(lab) -> Iterator[object]:
    if lab is not None:
        yield lab
        return
    with tempfile.TemporaryDirectory(prefix="shardviz-shots-") as tmp, running_lab(Path(tmp)) as s:
        yield s


def take(
    out: Path = ASSETS,
    names: Sequence[str] | None = None,
    *,
    lab=None,
    browser=None,
    scale: int = 1,
    log=print,
) -> list[Shot]:
    """Run the picture cells (all, or ``names``) in JupyterLab and write ``out/NAME.png``.

    Args:
        out: the folder for the PNGs (created if missing).
        names: the pictures to take (file stems); ``None`` takes all of them.
        lab, browser: a running JupyterLab server and Playwright browser to reuse (tests pass
            their session's); by default both are started here and stopped at the end.
        scale: the device scale factor (1 or 2).
        log: where progress lines go.

    Raises:
        ValueError: an unknown picture name.
        RuntimeError: a cell failed, a request tried to leave the machine, or a JS error.
    """
    cells = read_cells()
    known = [c.name for c in cells[1:]]
    unknown = sorted(set(names or ()) - set(known))
    if unknown:
        raise ValueError(f"unknown picture(s) {unknown}; the pictures are {known}")
    shots = [c for c in cells[1:] if names is None or c.name in names]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    watch = Watch()
    taken: list[Shot] = []
    with _lab(lab) as server, _browser(browser) as b:
        context, page = _new_page(b, scale, watch)
        try:
            nb = write_notebook([cells[0], *shots], Path(tempfile.mkdtemp()) / "screenshots.ipynb")
            lab_page = LabPage(server, page, nb).open()
            page.evaluate("window.jupyterapp.shell.collapseLeft()")
            t0 = time.monotonic()
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function(_DONE_JS, timeout=600_000, polling=250)
            failed = page.evaluate(_ERRORS_JS)
            if failed:
                raise RuntimeError("a picture cell failed: " + "; ".join(failed))
            log(f"cells ran in {time.monotonic() - t0:.1f} s")
            for cell in shots:
                drawn = page.locator(cell.ready)
                output = lab_page.cell_tagged(cell.tag).locator(OUTPUT).filter(has=drawn).last
                output.locator(cell.ready).first.wait_for(timeout=READY_TIMEOUT_MS)
                page.evaluate("document.fonts.ready")
                shot = shoot(page, output, out / f"{cell.name}.png", cell.width, scale)
                taken.append(shot)
                size = shot.path.stat().st_size
                cut = f", still cut by {shot.overflow}px" if shot.overflow else ""
                log(
                    f"{shot.path}: view {shot.view_width}x{shot.view_height} at viewport "
                    f"width {shot.viewport_width}, {size // 1024} KiB{cut}"
                )
        finally:
            context.close()
            server.delete_sessions()
    problems = [f"request to leave the machine (aborted): {u}" for u in watch.blocked]
    problems += watch.errors
    if problems:
        raise RuntimeError("\n".join(problems))
    return taken


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ASSETS, help="folder for the PNGs")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="take only these pictures")
    parser.add_argument("--scale", type=int, default=1, choices=(1, 2), help="device pixels")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    shots = take(args.out, args.only, scale=args.scale)
    print(json.dumps({s.name: str(s.path) for s in shots}, indent=1))
    print(f"{len(shots)} pictures in {time.monotonic() - t0:.1f} s")
    return 1 if any(s.overflow for s in shots) else 0


if __name__ == "__main__":
    sys.exit(main())
