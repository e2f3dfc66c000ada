"""``python -m shardviz workshop``: the course's notebooks in a folder of the learner's, opened
in JupyterLab.

The notebooks are copied first because the installed ones may be read-only (a wheel in
site-packages) or shared (a checkout): a learner edits copies. Copies already there are kept,
edited or not, so running the command again never loses work.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shardviz.errors import WorkshopError, problem
from shardviz.launch.ports import pick_port

#: The course's notebooks: numbered, in course order (``01_data_parallel.ipynb`` ...).
NOTEBOOK_PATTERN = "[0-9][0-9]_*.ipynb"
#: JupyterLab listens on this machine only, unless the learner's own config says otherwise.
HOST = "127.0.0.1"
#: The port tried first when none is given: Jupyter's usual one.
DEFAULT_PORT = 8888
#: Seconds JupyterLab gets to stop its kernels after Ctrl-C before it is killed.
STOP_TIMEOUT = 20.0


def notebooks_source(package_dir: Path | None = None) -> Path:
    """The folder holding the course's notebooks.

    In an installed wheel they are package data (``shardviz/course/notebooks``); in a source
    checkout or an editable install, the repository's ``notebooks/`` next to the package.
    Package data is looked at first, so a wheel never reads an unrelated ``notebooks/``.
    """
    package = package_dir if package_dir is not None else Path(__file__).resolve().parent
    candidates = (package / "course" / "notebooks", package.parent / "notebooks")
    for folder in candidates:
        if folder.is_dir() and any(folder.glob(NOTEBOOK_PATTERN)):
            return folder
    raise WorkshopError(
        problem(
            "workshop",
            "the course notebooks were not found (looked in "
            + " and ".join(str(c) for c in candidates)
            + ")",
            "reinstall shardviz (pip install --force-reinstall shardviz), or run from a "
            "checkout of the repository",
        )
    )


@dataclass(frozen=True)
class CopyResult:
    """What :func:`copy_notebooks` did: names copied, and names kept because they were there."""

    folder: Path
    copied: tuple[str, ...]
    kept: tuple[str, ...]
    edited: tuple[str, ...]  # the kept ones that differ from the course's version
    #: Copied over a broken link (a symbolic link to nothing) of the same name: the link
    #: held no work, so the learner gets the course's notebook there (also in ``copied``).
    relinked: tuple[str, ...] = ()

    def summary(self) -> str:
        """Lines for the terminal: where, what was copied, what was kept and how to refresh."""
        total = len(self.copied) + len(self.kept)
        lines = [f"The course's {total} notebooks are in {self.folder}"]
        if self.copied:
            lines.append(f"  copied ({len(self.copied)}): {', '.join(self.copied)}")
        if self.relinked:
            lines.append(
                f"  broken links (pointing to nothing) replaced by the copy "
                f"({len(self.relinked)}): {', '.join(self.relinked)}"
            )
        if self.kept:
            lines.append(f"  kept, already there ({len(self.kept)}): {', '.join(self.kept)}")
        if self.edited:
            lines.append(
                f"  {len(self.edited)} of them differ from the course's version (your edits "
                f"were kept): {', '.join(self.edited)}; delete or rename one and run again to "
                "get a fresh copy"
            )
        return "\n".join(lines)


def _unwritable(folder: Path, err: OSError) -> WorkshopError:
    reason = err.strerror or type(err).__name__
    return WorkshopError(
        problem(
            "workshop",
            f"the folder {folder} cannot be written ({reason})",
            "pass --dir with a folder you can write to, e.g. --dir ~/shardviz-workshop",
        )
    )


def copy_notebooks(folder: Path, source: Path | None = None) -> CopyResult:
    """Copy the course's notebooks that are missing from ``folder`` (created if needed).

    A notebook already in ``folder`` is never overwritten. Only the numbered notebooks are
    copied, with their content only (not the permissions of a read-only install). A broken
    symbolic link named like a notebook (its target gone) holds no work: it is replaced by a
    fresh copy, and the summary says so. A working link to a notebook is kept, as a file is.

    Raises:
        WorkshopError: if ``folder`` cannot be created or written, or a notebook's name
            there is taken by a folder (or a notebook there cannot be read).
    """
    src = source if source is not None else notebooks_source()
    folder = Path(folder).expanduser().resolve()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # JupyterLab must save there too, even when every notebook is already copied.
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise _unwritable(folder, err) from err
    copied: list[str] = []
    kept: list[str] = []
    edited: list[str] = []
    relinked: list[str] = []
    for notebook in sorted(src.glob(NOTEBOOK_PATTERN)):
        target = folder / notebook.name
        if target.is_symlink() and not target.exists():  # a broken link: no work in it
            try:
                target.unlink()
            except OSError as err:
                raise _unwritable(folder, err) from err
            relinked.append(notebook.name)
        try:
            with open(target, "xb") as out, open(notebook, "rb") as inp:
                shutil.copyfileobj(inp, out)
        except FileExistsError:
            kept.append(notebook.name)
            if _differs(target, notebook):
                edited.append(notebook.name)
            continue
        except OSError as err:
            raise _unwritable(folder, err) from err
        copied.append(notebook.name)
    return CopyResult(folder, tuple(copied), tuple(kept), tuple(edited), tuple(relinked))


def _differs(copy: Path, notebook: Path) -> bool:
    """Whether the learner's ``copy`` differs from the course's ``notebook``.

    Raises:
        WorkshopError: ``copy`` is a folder, or cannot be read.
    """
    if copy.is_dir():
        raise WorkshopError(
            problem(
                "workshop",
                f"{copy} is a folder, where the course's notebook {notebook.name} goes",
                "rename or move that folder and run again, or pass --dir with another folder",
            )
        )
    try:
        return copy.read_bytes() != notebook.read_bytes()
    except OSError as err:
        raise WorkshopError(
            problem(
                "workshop",
                f"{copy} is there but cannot be read ({err.strerror or type(err).__name__})",
                f"make it readable (chmod u+r {copy}), move it aside, or pass --dir with "
                "another folder",
            )
        ) from err


def choose_port(port: int | None, host: str = HOST) -> tuple[int, str | None]:
    """JupyterLab's port and, when it differs from the default, a note saying why.

    A ``port`` given must be free (else :class:`WorkshopError` naming it and a free one);
    without one, ``DEFAULT_PORT`` if free, else a free port the system picks.
    """
    return pick_port(
        port,
        default=DEFAULT_PORT,
        label="port",
        holders="another Jupyter, or another program,",
        error=lambda what, fix: WorkshopError(problem("workshop", what, fix)),
        host=host,
    )


def require_jupyterlab() -> None:
    """Raise :class:`WorkshopError` unless JupyterLab can be imported by this Python."""
    if importlib.util.find_spec("jupyterlab") is None:
        raise WorkshopError(
            problem(
                "workshop",
                f"JupyterLab is not installed for this Python ({sys.executable})",
                f"install it with {sys.executable} -m pip install jupyterlab",
            )
        )


def lab_command(folder: Path, port: int, open_browser: bool, host: str = HOST) -> list[str]:
    """The command that runs JupyterLab on ``folder`` from this interpreter.

    ``port_retries=0``: the port is the one printed, or JupyterLab fails instead of moving on.
    """
    cmd = [
        sys.executable, "-m", "jupyterlab",
        f"--ServerApp.ip={host}", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={folder}",
    ]  # fmt: skip
    if not open_browser:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Ask JupyterLab to stop (it shuts its kernels down on SIGTERM); kill it if it hangs or
    if Ctrl-C is pressed again."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=STOP_TIMEOUT)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        proc.kill()
        proc.wait()


def run_workshop(
    folder: str | os.PathLike[str] = "shardviz-workshop",
    port: int | None = None,
    open_browser: bool = True,
) -> int:
    """Copy the course into ``folder``, run JupyterLab on it until Ctrl-C; its exit code.

    JupyterLab runs in its own session, so Ctrl-C reaches this process only, which then stops
    JupyterLab and its kernels (no "Shut down this Jupyter server?" prompt). The token is made
    here (or taken from ``JUPYTER_TOKEN``) so the URL printed is the one to open.
    """
    require_jupyterlab()
    result = copy_notebooks(Path(folder))
    chosen, note = choose_port(port)
    token = os.environ.get("JUPYTER_TOKEN") or secrets.token_urlsafe(24)
    env = {**os.environ, "JUPYTER_TOKEN": token}
    print(result.summary())
    if note:
        print(note)
    if importlib.util.find_spec("jupyterlab_widgets") is None:
        print("Note: jupyterlab_widgets is not installed, so widgets will show as text only.")
    print(f"JupyterLab: http://{HOST}:{chosen}/lab?token={token}")
    print("Press Ctrl-C here to stop it.", flush=True)
    proc = subprocess.Popen(
        lab_command(result.folder, chosen, open_browser),
        cwd=result.folder, env=env, start_new_session=True,
    )  # fmt: skip

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        print("\nStopping JupyterLab ...", flush=True)
        _stop(proc)
        print("JupyterLab stopped.", flush=True)
        return 0
    finally:
        _stop(proc)
        signal.signal(signal.SIGTERM, previous)
    if code != 0:
        print(f"shardviz: JupyterLab exited with code {code}", file=sys.stderr)
    return code
