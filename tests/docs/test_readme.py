"""The README's Python snippets run as written (in a fresh process with 8 fake devices)."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_snippets_run(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README shows no Python"
    script = tmp_path / "snippets.py"
    script.write_text("\n".join(blocks) + "\nprint('ok', len(report.collectives))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "ok 1"


ROOT = README.parent
ASSETS = ROOT / "assets"
CELLS = ROOT / "tools" / "screenshot_cells.py"
MAX_PICTURE_BYTES = 300_000
MIN_PICTURE_WIDTH = 600
#: The kinds of picture the README shows (issue 16): file stem -> what its caption names.
PICTURES = {
    "mesh-and-tiles": "mesh and tiles",
    "ledger": "collective ledger",
    "compare": "comparison charts",
    "live": "live view",
    "explorer": "explorer",
}


def _readme_images() -> list[tuple[str, str]]:
    """The README's ``![alt](path)`` images, as (alt, path)."""
    return re.findall(r"!\[([^\]]*)\]\(([^)\s]+)\)", README.read_text(encoding="utf-8"))


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (raises if ``path`` is not a PNG)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_readme_pictures_are_pngs_in_assets():
    images = _readme_images()
    assert images, "the README shows no pictures"
    for alt, ref in images:
        path = (ROOT / ref).resolve()
        assert path.parent == ASSETS, f"{ref}: the README's pictures live in assets/"
        assert path.is_file(), f"{ref}: missing; retake with .venv/bin/python tools/screenshots.py"
        assert path.suffix == ".png", ref
        width, height = _png_size(path)
        assert width >= MIN_PICTURE_WIDTH and height >= 100, f"{ref}: {width}x{height} px"
        size = path.stat().st_size
        assert size < MAX_PICTURE_BYTES, f"{ref}: {size} bytes, over {MAX_PICTURE_BYTES}"
        assert len(alt.split()) >= 5, f"{ref}: its alt text should say what it shows: {alt!r}"


def test_readme_shows_each_kind_of_picture_and_how_to_retake_them():
    text = README.read_text(encoding="utf-8")
    shown = {Path(ref).stem: alt for alt, ref in _readme_images()}
    for stem, words in PICTURES.items():
        assert stem in shown, f"the README does not show assets/{stem}.png"
        assert words in shown[stem].lower(), f"{stem}.png's caption should say '{words}'"
    assert ".venv/bin/python tools/screenshots.py" in text, "say how to retake the pictures"


def test_screenshot_script_takes_the_readme_pictures(monkeypatch):
    """The script reads its cells, and every picture it takes is one the README shows."""
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "tools" / "screenshots.py")
    screenshots = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "screenshots", screenshots)  # its dataclasses look it up
    spec.loader.exec_module(screenshots)
    cells = screenshots.read_cells(CELLS)  # raises on a malformed header
    taken = [c.name for c in cells[1:]]
    assert sorted(taken) == sorted(PICTURES)
    assert set(taken) <= {Path(ref).stem for _, ref in _readme_images()}


def test_screenshot_cells_run_as_a_script(tmp_path):
    """The cells the screenshots are taken from still run (as a plain script, no browser)."""
    out = subprocess.run([sys.executable, str(CELLS)], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
