"""The layers of ``../shared/design/ARCHITECTURE.md`` as tests, read from the package's source.

One import graph of every module (imports inside functions count; those under
``TYPE_CHECKING`` do not run, so they make no cycle, but they still may not point upwards):

- no import cycle between modules, even one dodged by an import inside a function;
- no module imports from a layer below it in the list (``capture`` never imports ``analysis``);
- no module imports another module's private name (``from a import _b``);
- the layers that must work without jax (model, the HLO parsers, analysis, render) import
  neither jax nor a layer that does;
- a module loaded by name (``importlib.import_module``) is one of the known plug-ins, a
  later layer that registers itself with the loader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "shardviz"

#: Each layer's modules, by dotted prefix, in the order of ARCHITECTURE.md: a module may import
#: from its own layer and the ones before it. The longest matching prefix decides.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("shardviz.errors",),
    ("shardviz.model",),
    ("shardviz.capture",),
    ("shardviz.analysis",),
    ("shardviz.explainer", "shardviz.launch"),
    ("shardviz.strategies",),
    ("shardviz.render",),
    ("shardviz.widgets",),
    ("shardviz.engines", "shardviz.engines_live"),
    ("shardviz.course", "shardviz"),  # the course teaches the front door: ``import shardviz``
    ("shardviz.demo", "shardviz.workshop", "shardviz.__main__"),
)

#: Layers that never import jax, nor a layer that does (their tests build model objects by hand).
WITHOUT_JAX = ("shardviz.model", "shardviz.capture.hlo", "shardviz.analysis", "shardviz.render")
#: What a jax-free layer may import from the package.
JAX_FREE_DEPENDENCIES = ("shardviz.errors", "shardviz.model", "shardviz.capture.hlo") + WITHOUT_JAX


@dataclass(frozen=True)
class Import:
    """One import statement's target, as seen from ``source``."""

    source: str
    target: str  # a module, or a module's name (``shardviz.model.array.Spec``)
    name: str | None  # the name imported from ``target`` (``from target import name``)
    line: int
    type_only: bool  # under ``if TYPE_CHECKING:``: never runs


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package (the course's solutions are data, loaded by the judges)."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_only_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> Iterator[Import]:
    """Every import in the module ``name`` (at ``path``), with relative ones made absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = _type_only_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, None, node.lineno, id(node) in type_only)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:  # ``from package import submodule``
                    yield Import(name, full, None, node.lineno, id(node) in type_only)
                else:
                    yield Import(name, base, alias.name, node.lineno, id(node) in type_only)


def all_imports() -> list[Import]:
    known = modules()
    return [i for name, path in known.items() for i in imports_of(name, path, known)]


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), i
    return rank


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _owner(target: str, known: dict[str, Path]) -> str:
    """The module an import target is in (``shardviz.model.array`` for ``...array.Spec``)."""
    while target not in known and "." in target:
        target = target.rpartition(".")[0]
    return target


def cycles(imports: list[Import], known: dict[str, Path]) -> list[list[str]]:
    """Strongly connected groups of modules (more than one) in the imports that run."""
    graph: dict[str, set[str]] = {m: set() for m in known}
    for i in imports:
        target = _owner(i.target, known)
        if not i.type_only and target in known and target != i.source:
            graph[i.source].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def upward_imports(imports: list[Import]) -> set[tuple[str, str]]:
    """(importer, imported module) pairs where the import points to a later layer."""
    out = set()
    for i in imports:
        if not i.target.startswith("shardviz") or i.source == "shardviz":
            continue  # the package's front door re-exports every layer
        if layer_of(i.target) > layer_of(i.source):
            out.add((i.source, i.target))
    return out


def private_imports(imports: list[Import], known: dict[str, Path]) -> set[tuple[str, str]]:
    out = set()
    for i in imports:
        private = i.name is not None and i.name.startswith("_") and not i.name.startswith("__")
        if private and i.target.startswith("shardviz") and _owner(i.target, known) != i.source:
            out.add((i.source, f"{i.target}.{i.name}"))
    return out


def jax_in_jax_free_layers(imports: list[Import]) -> set[tuple[str, str]]:
    out = set()
    for i in imports:
        if not _within(i.source, WITHOUT_JAX):
            continue
        top = i.target.split(".")[0]
        if top in ("jax", "jaxlib") or (
            top == "shardviz" and not _within(i.target, JAX_FREE_DEPENDENCIES)
        ):
            out.add((i.source, i.target))
    return out


# --- the rules --------------------------------------------------------------------------------

IMPORTS = all_imports()
KNOWN = modules()


def test_the_graph_sees_every_layer_and_every_kind_of_import() -> None:
    names = set(KNOWN)
    for prefixes in LAYERS:
        assert any(_within(m, prefixes) for m in names), prefixes
    assert all(layer_of(m) >= 0 for m in names), [m for m in names if layer_of(m) < 0]
    assert any(i.type_only for i in IMPORTS) and any(i.name for i in IMPORTS)


def test_no_import_cycles() -> None:
    assert cycles(IMPORTS, KNOWN) == []


def test_no_module_imports_from_a_later_layer() -> None:
    assert sorted(upward_imports(IMPORTS)) == []


def test_no_module_imports_another_modules_private_names() -> None:
    assert sorted(private_imports(IMPORTS, KNOWN)) == []


def test_jax_free_layers_import_neither_jax_nor_a_layer_that_does() -> None:
    assert sorted(jax_in_jax_free_layers(IMPORTS)) == []


#: Modules a lower layer loads by name, never by import, so the upper one can register itself
#: (the views, the fix trier): ``(loader, loaded, what the loaded package calls to register)``.
PLUGINS = {
    ("shardviz.model.display", "shardviz.render", "register"),
    ("shardviz.model.findings", "shardviz.explainer.fix_check", "register_fix_trier"),
}


def loaded_by_name(name: str, path: Path) -> set[str]:
    """The package modules ``path`` loads with ``importlib.import_module`` of a fixed name (a
    string, or a module-level constant holding one); names built at run time (the lazy
    ``__getattr__`` of a package's own modules) are left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = {
        t.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }
    out = set()
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
        ):
            continue
        arg = node.args[0]
        target = (
            arg.value if isinstance(arg, ast.Constant) else constants.get(getattr(arg, "id", ""))
        )
        if isinstance(target, str) and target.startswith("shardviz"):
            out.add(target)
    return out


def calls_in(package: str, function: str) -> bool:
    """Whether a module at or under ``package`` calls ``function`` (by that name)."""
    for name, path in KNOWN.items():
        if name == package or name.startswith(package + "."):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    f = node.func
                    called = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                    if called == function:
                        return True
    return False


def test_modules_loaded_by_name_are_the_known_plugins_and_register_themselves() -> None:
    found = {
        (name, target) for name, path in KNOWN.items() for target in loaded_by_name(name, path)
    }
    assert found == {(a, b) for a, b, _ in PLUGINS}
    for loader, loaded, register in PLUGINS:
        assert loaded in KNOWN, loaded
        assert layer_of(loaded) > layer_of(loader)  # why it is loaded by name
        assert calls_in(loaded, register), (loaded, register)


# --- the checks catch what they are for -------------------------------------------------------


def _fake_package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    known = {}
    for name, source in files.items():
        path = tmp_path / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        known[name] = path
    return known


def _imports(known: dict[str, Path]) -> list[Import]:
    return [i for n, p in known.items() for i in imports_of(n, p, known)]


def test_a_cycle_dodged_inside_a_function_is_still_a_cycle(tmp_path: Path) -> None:
    known = _fake_package(
        tmp_path,
        {
            "shardviz.capture.a": "from shardviz.capture.b import f\n",
            "shardviz.capture.b": "def f():\n    from shardviz.capture.a import g\n",
            "shardviz.capture.c": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from shardviz.capture.a import h\n"
            ),
        },
    )
    assert cycles(_imports(known), known) == [["shardviz.capture.a", "shardviz.capture.b"]]


@pytest.mark.parametrize(
    ("source", "bad"),
    [
        ("from shardviz.render.geometry import x\n", True),
        ("def f():\n    from shardviz.analysis.detect import candidates\n", True),
        ("from shardviz.model import Report\n", False),
        ("from shardviz.errors import problem\n", False),
    ],
)
def test_an_upward_import_is_seen_even_inside_a_function(
    tmp_path: Path, source: str, bad: bool
) -> None:
    known = _fake_package(tmp_path, {"shardviz.capture.mesh": source})
    assert bool(upward_imports(_imports(known))) is bad


def test_private_and_jax_imports_are_seen(tmp_path: Path) -> None:
    known = _fake_package(
        tmp_path,
        {
            "shardviz.render.a": "from shardviz.render.b import _helper\nimport jax\n",
            "shardviz.render.b": "def _helper(): pass\n",
            "shardviz.analysis.c": "from shardviz.capture.compile import Compiled\n",
        },
    )
    imports = _imports(known)
    assert private_imports(imports, known) == {("shardviz.render.a", "shardviz.render.b._helper")}
    assert jax_in_jax_free_layers(imports) == {
        ("shardviz.render.a", "jax"),
        ("shardviz.analysis.c", "shardviz.capture.compile"),
    }


#: Test folders that are not a package of shardviz: suites across the whole package.
ACROSS = {
    "benchmarks": "the scripts of benchmarks/ (their tables and caches)",
    "browser": "widgets in real JupyterLab and Chromium",
    "docs": "the docs site and the README",
    "hostile": "hostile and unusual calls, through the front door",
}
#: Test modules at the top of tests/ that check the package as a whole, not one module.
WHOLE_PACKAGE = {"test_architecture", "test_public_api", "test_docstring_paths"}


def test_tests_mirror_the_package() -> None:
    """Each test folder is a package or module of shardviz at the same path (tests/analysis/
    estimate for shardviz/analysis/estimate; tests/engines for shardviz/engines.py), or one
    of the suites across it (a folder with no test module, such as fixtures/, holds files the
    tests read); a test file at the top tests a top-level module, or the whole package."""
    tests = ROOT / "tests"
    strays = []
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        rel = folder.relative_to(tests)
        if rel.parts[0] in ACROSS or not any(folder.glob("test_*.py")):
            continue
        if not ((PACKAGE / rel).is_dir() or (PACKAGE / rel).with_suffix(".py").is_file()):
            strays.append(rel.as_posix())
    for path in sorted(tests.glob("test_*.py")):
        name = path.stem
        if (
            name not in WHOLE_PACKAGE
            and not (PACKAGE / f"{name.removeprefix('test_')}.py").is_file()
        ):
            strays.append(path.name)
    assert strays == []


#: Threads that cannot outlive the call that starts them, and why; every other thread or
#: pool shardviz starts is own-ed by shardviz.explainer.background (joined before the
#: interpreter exits, since a thread still inside XLA then aborts the process).
SCOPED_THREADS = {
    # The compile's finish() (also on its error path) stops and joins the dump watcher.
    "capture/dump_watch.py": "joined by DumpWatch.finish, which the compile always calls",
    # A progress line's heartbeat: finish() stops and joins it.
    "strategies/progress.py": "joined by Progress.finish",
    # The worker process's watch of its launcher: it exits the process itself.
    "launch/worker.py": "ends the worker process (os._exit) when its launcher is gone",
}


def _starts_threads(tree: ast.Module) -> bool:
    """Whether a module makes a thread or a thread pool (``threading.Thread(...)``,
    ``ThreadPoolExecutor(...)``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("Thread", "ThreadPoolExecutor"):
                return True
    return False


def test_every_thread_is_owned_or_scoped_to_its_call() -> None:
    """Threads are started by the layer that owns them: each module that starts one either
    hands it to ``explainer.background.own`` (``own(...)``, ``Latest``, ``OwnedPool``) or is
    listed in SCOPED_THREADS with why its thread ends with the call."""
    loose = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel == "explainer/background.py" or not _starts_threads(ast.parse(text)):
            continue
        if rel not in SCOPED_THREADS and "own(self)" not in text:
            loose.append(rel)
    assert loose == []
    for rel in SCOPED_THREADS:
        assert _starts_threads(ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))), rel


def test_an_owned_pool_is_joined_at_exit() -> None:
    import threading

    from shardviz.explainer.background import OwnedPool

    gate = threading.Event()
    pool = OwnedPool(1, "test-owned")
    pool.submit(gate.wait)
    later = pool.submit(lambda: "never")
    assert not pool.close(timeout=0.05), "a thread still working is reported"
    gate.set()
    assert pool.close(timeout=5.0) and later.cancelled()
