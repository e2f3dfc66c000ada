"""Source files named as a person names them: notebook cells as ``In [12]``, files from the
working directory or their package; call chains without the frames transformations repeat."""

from __future__ import annotations

import os

import IPython
import jax
import jax.numpy as jnp
import pytest
from IPython.core.compilerop import CachingCompiler
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import shardviz as sv
from shardviz.capture.places import cell_label, file_label, without_repeats
from shardviz.model import Frame, Source


class _Shell:
    def __init__(self) -> None:
        self.compile = CachingCompiler()


@pytest.fixture
def shell(monkeypatch):
    s = _Shell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: s)
    return s


def test_a_cell_is_named_as_jupyter_numbers_it(shell):
    name = shell.compile.cache("x = 1\n", number=12)
    assert cell_label(name) == "In [12]"
    assert file_label(name) == "In [12]"
    assert Frame(name, 45, "f", label="In [12]").place == "In [12], line 45"
    assert cell_label("/home/ada/train.py") == ""


def test_files_are_named_from_the_working_directory_or_their_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert file_label(str(tmp_path / "models" / "llama.py")) == "models/llama.py"
    site = "/usr/lib/python3/site-packages/flax/linen/module.py"
    assert file_label(site) == "flax/linen/module.py"
    elsewhere = os.path.join(os.path.dirname(str(tmp_path)), "other", "x.py")
    assert file_label(elsewhere) == elsewhere
    assert Frame("/a/b/train.py", 3, "f").place == "train.py:3"  # no label: the basename


def test_the_librarys_own_files_are_named_from_its_package(tmp_path, monkeypatch):
    # A checkout outside site-packages and outside the working directory (a notebook run from
    # notebooks/, an editable install): never the machine's path to the library.
    monkeypatch.chdir(tmp_path)
    from shardviz.strategies.models import decoder as module

    decoder = str(module.__file__)
    assert os.path.isabs(decoder)
    assert file_label(decoder) == "shardviz/strategies/models/decoder.py"
    assert Frame(decoder, 250, "f", label=file_label(decoder)).place == (
        "shardviz/strategies/models/decoder.py:250"
    )
    # A sibling directory whose name starts the same is not the library.
    root = os.path.dirname(os.path.dirname(sv.__file__))
    sibling = os.path.join(root, "shardviz_extra", "x.py")
    assert file_label(sibling) == sibling


def _f(name: str, line: int) -> Frame:
    return Frame("/m.py", line, name)


def test_repeated_frames_are_folded():
    step, loss, fwd, mlp = _f("step", 1), _f("loss", 2), _f("forward", 3), _f("mlp", 4)
    chain = [step, loss, fwd, step, loss, fwd, step, loss, fwd, mlp]
    assert without_repeats(chain) == (step, loss, fwd, mlp)
    assert Source(without_repeats(chain)).chain == "step > loss > forward > mlp"
    assert without_repeats([step, loss, mlp]) == (step, loss, mlp)


CELL = """\
def forward(w, x):
    h = jnp.tanh(x @ w)
    return h.sum(0)
"""


def test_a_report_of_code_from_a_cell_names_the_cell(shell):
    m = jax.make_mesh((2, 4), ("data", "model"))
    w = jax.device_put(jnp.ones((128, 256)), NamedSharding(m, P(None, "model")))
    x = jax.device_put(jnp.ones((64, 128)), NamedSharding(m, P("data", None)))
    name = shell.compile.cache(CELL, number=7)
    ns = {"jnp": jnp}
    exec(compile(CELL, name, "exec"), ns)
    sv.clear_cache()
    report = sv.explain(ns["forward"], w, x, run=False)
    places = {c.source.place for c in report.collectives if c.source is not None}
    assert places and all(p.startswith("In [7], line ") for p in places), places
    text = str(report)
    assert "In [7], line 3" in text and name not in text
