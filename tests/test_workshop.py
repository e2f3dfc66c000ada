"""``python -m shardviz workshop``: the notebooks copied without overwriting, found in a wheel or
a checkout, clear errors, and JupyterLab really serving them (then stopped by Ctrl-C)."""

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from shardviz import workshop
from shardviz.__main__ import main
from shardviz.launch import ports
from shardviz.launch.ports import free_port, port_in_use
from shardviz.workshop import WorkshopError

ROOT = Path(__file__).resolve().parents[1]
COURSE = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _source(tmp_path: Path) -> Path:
    """A fake course: two notebooks, plus files that must not be copied."""
    src = tmp_path / "src"
    (src / ".ipynb_checkpoints").mkdir(parents=True)
    (src / "01_one.ipynb").write_text('{"one": 1}')
    (src / "02_two.ipynb").write_text('{"two": 2}')
    (src / "scratch.ipynb").write_text("{}")
    (src / "README.md").write_text("not a notebook")
    (src / ".ipynb_checkpoints" / "01_one-checkpoint.ipynb").write_text("{}")
    return src


def test_missing_notebooks_are_copied_and_edited_ones_kept(tmp_path):
    src = _source(tmp_path)
    dest = tmp_path / "class" / "me"  # created, parents too
    first = workshop.copy_notebooks(dest, src)
    assert first.copied == ("01_one.ipynb", "02_two.ipynb") and first.kept == ()
    assert sorted(p.name for p in dest.iterdir()) == ["01_one.ipynb", "02_two.ipynb"]

    (dest / "02_two.ipynb").write_text('{"two": "my answer"}')
    (dest / "01_one.ipynb").unlink()
    again = workshop.copy_notebooks(dest, src)
    assert again.copied == ("01_one.ipynb",)
    assert again.kept == ("02_two.ipynb",) and again.edited == ("02_two.ipynb",)
    assert (dest / "02_two.ipynb").read_text() == '{"two": "my answer"}'
    assert (dest / "01_one.ipynb").read_text() == '{"one": 1}'
    assert sorted(p.name for p in dest.iterdir()) == ["01_one.ipynb", "02_two.ipynb"]
    text = again.summary()
    assert "The course's 2 notebooks are in" in text and str(dest) in text
    assert "copied (1): 01_one.ipynb" in text
    assert "kept, already there (1): 02_two.ipynb" in text
    assert "your edits were kept" in text


def test_unchanged_copies_are_kept_but_not_called_edited(tmp_path):
    src = _source(tmp_path)
    workshop.copy_notebooks(tmp_path / "d", src)
    result = workshop.copy_notebooks(tmp_path / "d", src)
    assert result.copied == () and result.edited == ()
    assert result.kept == ("01_one.ipynb", "02_two.ipynb")
    assert "differ" not in result.summary()


def test_a_read_only_install_gives_writable_copies(tmp_path):
    src = _source(tmp_path)
    (src / "01_one.ipynb").chmod(0o444)
    workshop.copy_notebooks(tmp_path / "d", src)
    assert (tmp_path / "d" / "01_one.ipynb").stat().st_mode & stat.S_IWUSR


def test_an_unwritable_folder_is_a_clear_error(tmp_path):
    src = _source(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for dest in (blocker, blocker / "sub"):
        with pytest.raises(WorkshopError) as err:
            workshop.copy_notebooks(dest, src)
        msg = str(err.value)
        assert f"the folder {dest} cannot be written" in msg and "--dir" in msg, msg


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_folder_is_a_clear_error(tmp_path):
    dest = tmp_path / "ro"
    dest.mkdir()
    dest.chmod(0o555)
    try:
        with pytest.raises(WorkshopError, match="cannot be written"):
            workshop.copy_notebooks(dest, _source(tmp_path))
    finally:
        dest.chmod(0o755)


def _notebook(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "01_x.ipynb").write_text("{}")


def test_source_in_a_wheel_is_the_package_data(tmp_path):
    package = tmp_path / "site-packages" / "shardviz"
    _notebook(package / "course" / "notebooks")
    _notebook(tmp_path / "site-packages" / "notebooks")  # someone else's: not read
    assert workshop.notebooks_source(package) == package / "course" / "notebooks"


def test_source_in_a_checkout_is_the_repository_folder(tmp_path):
    package = tmp_path / "repo" / "shardviz"
    (package / "course").mkdir(parents=True)
    _notebook(tmp_path / "repo" / "notebooks")
    assert workshop.notebooks_source(package) == tmp_path / "repo" / "notebooks"


def test_no_source_is_a_clear_error(tmp_path):
    package = tmp_path / "shardviz"
    (package / "course" / "notebooks").mkdir(parents=True)  # empty: no notebooks in it
    with pytest.raises(WorkshopError) as err:
        workshop.notebooks_source(package)
    msg = str(err.value)
    assert str(package / "course" / "notebooks") in msg and str(tmp_path / "notebooks") in msg


def test_this_checkout_reads_its_notebooks():
    assert workshop.notebooks_source() == ROOT / "notebooks"
    assert len(COURSE) == 12


def test_a_busy_port_is_named_with_a_free_one_suggested():
    with socket.socket() as s:
        s.bind((workshop.HOST, 0))
        s.listen()
        busy = s.getsockname()[1]
        with pytest.raises(WorkshopError) as err:
            workshop.choose_port(busy)
        msg = str(err.value)
        assert f"port {busy} on 127.0.0.1 is already in use" in msg
        suggested = int(re.search(r"--port (\d+) \(free now\)", msg).group(1))
        assert suggested != busy and not port_in_use(suggested)
    free = free_port()
    assert workshop.choose_port(free) == (free, None)
    for bad in (0, 70000):
        with pytest.raises(WorkshopError, match="not a port number"):
            workshop.choose_port(bad)


def test_the_default_port_moves_when_busy(monkeypatch):
    monkeypatch.setattr(ports, "port_in_use", lambda port, host=workshop.HOST: True)
    monkeypatch.setattr(ports, "free_port", lambda host=workshop.HOST: 12345)
    assert workshop.choose_port(None) == (
        12345,
        "port 8888 is in use; using the free port 12345 instead",
    )


def test_missing_jupyterlab_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(workshop.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(WorkshopError) as err:
        workshop.require_jupyterlab()
    assert "JupyterLab is not installed" in str(err.value)
    assert "-m pip install jupyterlab" in str(err.value)


@pytest.mark.parametrize(("uid", "browser"), [(0, False), (1000, True)])
def test_lab_command(monkeypatch, tmp_path, uid, browser):
    monkeypatch.setattr(workshop.os, "geteuid", lambda: uid)
    cmd = workshop.lab_command(tmp_path, 9999, open_browser=browser)
    assert cmd[:3] == [sys.executable, "-m", "jupyterlab"]
    for arg in ("--ServerApp.ip=127.0.0.1", "--ServerApp.port=9999",
                "--ServerApp.port_retries=0", f"--ServerApp.root_dir={tmp_path}"):  # fmt: skip
        assert arg in cmd
    assert ("--no-browser" in cmd) is not browser
    assert ("--allow-root" in cmd) is (uid == 0)


def test_cli_reports_errors_for_people(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["workshop", "--dir", str(blocker / "x"), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shardviz: workshop: the folder") and "Fix:" in err


def _contents(port: int, token: str) -> list[str]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/contents", headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return sorted(item["name"] for item in json.load(resp)["content"])


def test_workshop_serves_the_course_and_stops_on_ctrl_c(tmp_path):
    port, token = free_port(), "shardviz-test-token"
    folder = tmp_path / "class"
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    log = (tmp_path / "out.txt").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "shardviz", "workshop", "--dir", str(folder),
         "--no-browser", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
    )  # fmt: skip
    started: list[psutil.Process] = []
    try:
        names: list[str] = []
        deadline = time.monotonic() + 60
        while names != COURSE:
            assert proc.poll() is None, (tmp_path / "out.txt").read_text()[-3000:]
            assert time.monotonic() < deadline, f"not served in 60 s: {names}"
            time.sleep(0.5)
            try:
                names = [n for n in _contents(port, token) if n.endswith(".ipynb")]
            except OSError:
                continue
        assert sorted(p.name for p in folder.iterdir()) == COURSE
        started = psutil.Process(proc.pid).children(recursive=True)
        assert any("jupyterlab" in " ".join(p.cmdline()) for p in started)

        proc.send_signal(signal.SIGINT)  # Ctrl-C in the terminal reaches this process only
        assert proc.wait(timeout=40) == 0
        out = (tmp_path / "out.txt").read_text()
        assert f"JupyterLab: http://127.0.0.1:{port}/lab?token={token}" in out
        assert f"copied ({len(COURSE)}): 01_data_parallel.ipynb" in out
        assert "JupyterLab stopped." in out
        assert not port_in_use(port)
        left = [p for p in started if _alive(p)]
        assert not left, left
    finally:
        if proc.poll() is None:
            started = started or psutil.Process(proc.pid).children(recursive=True)
            proc.kill()
        for p in started:
            if _alive(p):
                p.kill()
        proc.wait(timeout=10)
        log.close()


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
