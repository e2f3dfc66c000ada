"""Files shardviz writes for users (``save_html``): whole or not at all.

:func:`write_text` checks the path before anything is drawn, draws into a temporary file
beside the target, and moves it into place (``os.replace``) only once it is complete: a
drawing that raises, a full disk or Ctrl-C leave the file that was there as it was, and no
temporary file behind. Every file problem is a :class:`~shardviz.errors.ShardvizError` naming
the path and what to do. No jax here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from typing import Any

from shardviz.errors import ArgumentError, FileError, problem
from shardviz.model.arguments import shown

__all__ = ["checked_path", "write_text"]

_FIX_FOLDER = "pass a path in a folder you can write to, e.g. save_html('report.html')"


def checked_path(path: Any, where: str = "save_html") -> str:
    """``path`` (a string or ``os.PathLike``) as a string.

    Raises:
      ArgumentError: ``path`` is ``None``, a number, empty, or holds a NUL character.
    """
    text: Any = None
    if isinstance(path, str | os.PathLike):
        with contextlib.suppress(TypeError):
            text = os.fspath(path)
        if isinstance(text, bytes):
            text = os.fsdecode(text)
    if not isinstance(text, str) or not text or "\0" in text:
        raise ArgumentError(
            problem(
                where,
                f"path={shown(path)} is not a file path",
                "pass the file to write as a string or a pathlib.Path, e.g. "
                f"{where}('report.html')",
            )
        )
    return text


def _os_error(where: str, path: str, err: OSError) -> FileError:
    """An OSError from writing ``path`` as a message naming the path and a fix."""
    code = err.errno
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        what, fix = "it cannot be written there (permission denied)", _FIX_FOLDER
    elif code == errno.ENOSPC or code == getattr(errno, "EDQUOT", None):
        what, fix = "the disk is full", "free some space, or write to another disk"
    elif code == errno.ENAMETOOLONG:
        what, fix = "the name is too long", "pass a shorter file name"
    elif code == errno.EISDIR:
        what, fix = "it is a folder", "pass a file name inside it, e.g. 'folder/report.html'"
    else:
        what, fix = f"it cannot be written ({err.strerror or type(err).__name__})", _FIX_FOLDER
    return FileError(problem(where, f"{shown(path, 200)}: {what}", fix))


def _destination(where: str, path: str) -> str:
    """Where the file goes (through a symbolic link, as ``open`` would), checked: not a
    folder, in a folder that exists."""
    real = os.path.realpath(path)
    if os.path.isdir(real):
        raise ArgumentError(
            problem(
                where,
                f"{shown(path, 200)} is a folder, not a file",
                f"pass a file name inside it, e.g. {os.path.join(path, 'report.html')!r}",
            )
        )
    folder = os.path.dirname(real) or os.curdir
    if not os.path.isdir(folder):
        raise ArgumentError(
            problem(
                where,
                f"{shown(path, 200)}: the folder {shown(folder, 200)} does not exist",
                f"create it first (os.makedirs({folder!r}, exist_ok=True)), or pass a path in "
                "a folder that exists",
            )
        )
    return real


def _temporary(where: str, path: str, real: str) -> tuple[str, int]:
    """A new file beside ``real`` (made with the usual permissions, as ``open`` would)."""
    folder, name = os.path.split(real)
    for _ in range(100):
        tmp = os.path.join(folder, f".{name[:80]}.{secrets.token_hex(6)}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        except OSError as err:
            raise _os_error(where, path, err) from err
    raise FileError(
        problem(where, f"{shown(path, 200)}: no temporary file could be made", _FIX_FOLDER)
    )


def write_text(path: Any, text_of: Callable[[], str], where: str = "save_html") -> str:
    """Write ``text_of()`` to ``path`` as UTF-8, whole or not at all; return the path given,
    as a string.

    The path is checked before ``text_of`` runs; the text goes to a temporary file in the
    same folder, moved over ``path`` once written (keeping an existing file's permissions).
    If ``text_of`` raises (or Ctrl-C), the error passes through, the old file is untouched
    and the temporary file removed.

    Raises:
      ArgumentError: ``path`` is not a path, is a folder, or its folder does not exist.
      FileError: the file cannot be written (permission denied, disk full ...); an
        ``OSError`` too, for code that catches those.
    """
    given = checked_path(path, where)
    real = _destination(where, given)
    tmp, fd = _temporary(where, given, real)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            fd = -1
            f.write(text_of())
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(OSError):  # a file replaced keeps its permissions
            os.chmod(tmp, stat.S_IMODE(os.stat(real).st_mode))
        os.replace(tmp, real)
    except BaseException as err:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise _os_error(where, given, err) from err
        raise
    return given
