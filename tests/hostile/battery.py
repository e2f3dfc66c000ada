"""The hostile battery's runner: cases run in a child process of their own (one process for a
table, or one per case where a crash is possible), so a case that kills the interpreter is named
by the last line it started. Each area's cases live in a module beside this one."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

#: A table of cases: name -> (code run with ``sv``, ``jax``, ``jnp``, ``np``, ``M`` (an
#: 8-device mesh) and ``X`` (an (8, 4) array split over it) in scope; its last line's value is
#: the outcome unless it raises; expected: the value's ``str`` (``"True"``) or the error's class).
Cases = dict[str, tuple[str, str]]

CHILD = textwrap.dedent(
    """
    import json, sys
    import shardviz as sv
    sv.use_cpu_devices(8)
    import jax, jax.numpy as jnp, numpy as np
    M = sv.Mesh(range(8), (8,), ("data",))
    X = sv.mark_sharding(jnp.arange(32.0).reshape(8, 4) / 7, M, ("data", None))
    cases = json.loads(sys.argv[1])
    for name, code in cases.items():
        print("START", name, flush=True)
        *body, last = code.split("\\n")
        scope = dict(sv=sv, jax=jax, jnp=jnp, np=np, M=M, X=X)
        try:
            exec("\\n".join(body), scope)
            outcome = str(eval(last, scope))
        except sv.ShardvizError as err:
            outcome = type(err).__name__
            if not str(err).strip() or "Fix:" not in str(err):
                outcome += " without a fix"
        except BaseException as err:
            outcome = f"raw {type(err).__name__}: {str(err)[:200]}"
        print("OUTCOME", json.dumps([name, outcome]), flush=True)
    print("DONE", flush=True)
    """
)


def default_sigint() -> None:
    """The child starts with SIGINT's default action, as under a terminal: a harness run in
    the background (make under nohup) hands its children SIGINT ignored, and a Python started
    so never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def outcomes(cases: Cases, timeout: float = 900) -> dict[str, str]:
    """Run ``cases`` in one child process; each case's outcome by name.

    Raises:
      AssertionError: the child died or hung, naming the case it had started.
    """
    code = {name: c for name, (c, _) in cases.items()}
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(code)],
            capture_output=True, text=True, timeout=timeout, preexec_fn=default_sigint,
        )  # fmt: skip
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        started = [ln[6:] for ln in out.splitlines() if ln.startswith("START ")]
        raise AssertionError(
            f"the battery hung past {timeout} s in case {started[-1:]!r}"
        ) from None
    lines = done.stdout.splitlines()
    started = [ln[6:] for ln in lines if ln.startswith("START ")]
    assert done.returncode == 0 and "DONE" in lines, (
        f"the process died (exit {done.returncode}) in case {started[-1:]!r}: {done.stderr[-1500:]}"
    )
    return dict(json.loads(ln[8:]) for ln in lines if ln.startswith("OUTCOME "))


def wrong(cases: Cases, timeout: float = 900) -> dict[str, tuple[str | None, str]]:
    """The cases whose outcome is not the one expected: name -> (got, wanted)."""
    got = outcomes(cases, timeout)
    return {
        name: (got.get(name), want)
        for name, (_, want) in cases.items()
        if got.get(name) != want and not _is_subclass(got.get(name), want)
    }


def wrong_each(cases: Cases, timeout: float = 300) -> dict[str, tuple[str | None, str]]:
    """As :func:`wrong`, with each case in a process of its own (where one may crash it)."""
    out: dict[str, tuple[str | None, str]] = {}
    for name, case in cases.items():
        out.update(wrong({name: case}, timeout))
    return out


def _is_subclass(got: str | None, want: str) -> bool:
    """A MeshError or CompileError where a ShardvizError is expected is right too."""
    import shardviz.errors as errors

    cls = getattr(errors, got or "", None)
    base = getattr(errors, want, None)
    return isinstance(cls, type) and isinstance(base, type) and issubclass(cls, base)
