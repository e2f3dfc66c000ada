"""Files written for users: ``save_html`` (every one of them, through
:func:`shardviz.model.files.write_text`) writes whole or not at all, and a path it cannot write
is a ShardvizError naming it; the workshop's copies survive odd things in the learner's
folder (a broken link named like a notebook, a folder of that name)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from shardviz import workshop
from shardviz.errors import ArgumentError, FileError, ShardvizError
from shardviz.model import display, files
from shardviz.model.schedule import gpipe
from shardviz.widgets.explorer.widget import ExplorerWidget
from shardviz.widgets.live.widget import LiveWidget
from shardviz.workshop import WorkshopError
from tests.render.report_fixtures import REPORTS

OLD = "<p>the page that was there</p>"


def _savers():
    """Each kind of ``save_html``: (its owner, a way to make its drawing fail)."""
    return {
        "model object": (gpipe(2, 3), "render"),
        "explorer": (ExplorerWidget(REPORTS["dp"]()), "static_html"),
        "live view": (LiveWidget(title="<run>"), "static_html"),
    }


SAVERS = list(_savers())


def _break(obj, how: str, monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise RuntimeError("the drawing failed")

    if how == "render":
        monkeypatch.setattr(display, "render", boom)
    else:
        monkeypatch.setattr(type(obj), how, boom)


@pytest.fixture(scope="module")
def savers():
    return _savers()


@pytest.mark.parametrize("kind", SAVERS)
def test_save_html_writes_the_page_and_returns_the_path(kind, savers, tmp_path):
    obj, _ = savers[kind]
    path = tmp_path / "page.html"
    assert obj.save_html(path) == str(path)
    assert path.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html>")
    assert os.listdir(tmp_path) == ["page.html"]  # no temporary file left


@pytest.mark.parametrize("kind", SAVERS)
def test_a_drawing_that_raises_leaves_the_old_file_whole(kind, savers, tmp_path, monkeypatch):
    obj, how = savers[kind]
    path = tmp_path / "page.html"
    path.write_text(OLD, encoding="utf-8")
    _break(obj, how, monkeypatch)
    with pytest.raises(RuntimeError, match="the drawing failed"):
        obj.save_html(path)
    assert path.read_text(encoding="utf-8") == OLD
    assert os.listdir(tmp_path) == ["page.html"]


@pytest.mark.parametrize("kind", SAVERS)
def test_paths_that_cannot_be_written_name_the_path_and_a_fix(kind, savers, tmp_path):
    obj, _ = savers[kind]
    cases = {
        None: "is not a file path",
        3: "is not a file path",
        "": "is not a file path",
        str(tmp_path): "is a folder, not a file",
        str(tmp_path / "missing" / "page.html"): "does not exist",
    }
    for path, words in cases.items():
        with pytest.raises(ArgumentError, match=words) as err:
            obj.save_html(path)
        assert "Fix:" in str(err.value)
    assert os.listdir(tmp_path) == []


def test_an_unwritable_folder_is_a_shardviz_error(tmp_path, monkeypatch):
    """Simulated (the tests may run as root, who writes anywhere)."""
    path = tmp_path / "page.html"
    path.write_text(OLD, encoding="utf-8")
    real_open = os.open

    def denied(name, *args, **kwargs):
        if str(name).startswith(str(tmp_path)):
            raise PermissionError(errno.EACCES, "Permission denied", name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(files.os, "open", denied)
    with pytest.raises(FileError, match="permission denied") as err:
        gpipe(2, 2).save_html(path)
    assert isinstance(err.value, OSError) and isinstance(err.value, ShardvizError)
    assert str(path) in str(err.value) and "Fix: pass a path in a folder" in str(err.value)
    assert path.read_text(encoding="utf-8") == OLD


def test_a_failed_move_removes_the_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "page.html"
    path.write_text(OLD, encoding="utf-8")

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full)
    with pytest.raises(FileError, match="the disk is full"):
        gpipe(2, 2).save_html(path)
    assert os.listdir(tmp_path) == ["page.html"]
    assert path.read_text(encoding="utf-8") == OLD


def test_a_file_replaced_keeps_its_permissions_and_a_link_is_written_through(tmp_path):
    target = tmp_path / "real.html"
    target.write_text(OLD, encoding="utf-8")
    target.chmod(0o640)
    link = tmp_path / "link.html"
    link.symlink_to(target)
    gpipe(2, 2).save_html(link)
    assert link.is_symlink() and OLD not in target.read_text(encoding="utf-8")
    assert target.stat().st_mode & 0o777 == 0o640


def test_only_the_chosen_process_writes_but_every_one_checks_the_path(tmp_path):
    path = tmp_path / "page.html"
    assert gpipe(2, 2).save_html(path, process=1) == str(path)  # this process is 0
    assert not path.exists()
    with pytest.raises(ArgumentError, match="is not a file path"):
        gpipe(2, 2).save_html(None, process=1)


# -- the workshop's copies ----------------------------------------------------------------------


def _course(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "01_one.ipynb").write_text('{"one": 1}')
    (src / "02_two.ipynb").write_text('{"two": 2}')
    return src


def test_a_broken_link_named_like_a_notebook_is_replaced_by_the_copy(tmp_path):
    """A link to nothing holds no work: the learner gets the notebook, and is told."""
    src, dest = _course(tmp_path), tmp_path / "me"
    dest.mkdir()
    (dest / "01_one.ipynb").symlink_to(tmp_path / "gone" / "01_one.ipynb")
    result = workshop.copy_notebooks(dest, src)
    assert result.copied == ("01_one.ipynb", "02_two.ipynb")
    assert result.relinked == ("01_one.ipynb",)
    assert not (dest / "01_one.ipynb").is_symlink()
    assert (dest / "01_one.ipynb").read_text() == '{"one": 1}'
    assert "broken links (pointing to nothing) replaced by the copy (1)" in result.summary()


def test_a_working_link_to_a_notebook_is_kept_like_a_file(tmp_path):
    src, dest = _course(tmp_path), tmp_path / "me"
    dest.mkdir()
    mine = tmp_path / "mine.ipynb"
    mine.write_text('{"one": "my answer"}')
    (dest / "01_one.ipynb").symlink_to(mine)
    result = workshop.copy_notebooks(dest, src)
    assert result.kept == ("01_one.ipynb",) and result.edited == ("01_one.ipynb",)
    assert (dest / "01_one.ipynb").is_symlink() and mine.read_text() == '{"one": "my answer"}'


def test_a_folder_named_like_a_notebook_is_a_clear_error(tmp_path):
    src, dest = _course(tmp_path), tmp_path / "me"
    (dest / "02_two.ipynb").mkdir(parents=True)
    with pytest.raises(WorkshopError, match="is a folder, where the course's notebook") as err:
        workshop.copy_notebooks(dest, src)
    assert "Fix: rename or move that folder" in str(err.value)
