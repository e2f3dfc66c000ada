"""`python -m shardviz demo` (what `make demo` runs) writes a self-contained report."""

import os
import re
import subprocess
import sys

import pytest


def _run_demo(tmp_path, devices: int):
    out = tmp_path / "report.html"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-m", "shardviz", "demo", "--devices", str(devices), "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out.read_text(encoding="utf-8"), proc.stdout


@pytest.mark.parametrize("devices", [8, 6])
def test_demo_report(tmp_path, devices):
    html, summary = _run_demo(tmp_path, devices)
    assert html.startswith("<!doctype html>") or html.lower().startswith("<!doctype html>")
    for title in ("data parallel", "FSDP (ZeRO-3) over data", "Megatron tensor parallel",
                  "2-D: FSDP x tensor parallel", "An N-D array", "strategies compared"):  # fmt: skip
        assert title in html and title.split(" (")[0] in summary
    # Self-contained: nothing is fetched from anywhere.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "<script src" not in html
    # One device cell per device in the mesh view, ids 0..n-1.
    assert html.count('class="sv-device"') >= devices
    # The text summary gives per-device bytes; 2 * d * h floats of weights in data parallel.
    assert f"{devices} cpu device(s)" in summary
    assert "Report written to" in summary


def test_demo_rejects_bad_device_count(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "shardviz", "demo", "--devices", "0", "--out", str(tmp_path / "x")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "positive whole number" in proc.stderr
