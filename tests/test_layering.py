"""The layering rules of docs/architecture.md, checked on the code's own imports.

Data flows one way (spec → space → strategy → build → run → verify → store → report); a
lower layer never imports a higher one, at module level or inside a function.
"""

import ast
import functools
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "ksweep"

# every package and loose module of ksweep, by its name
_EVERYTHING = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()} - {"__init__"}

# (package or module, the ksweep packages/modules it must never import (a package, or one module
# of it: "warm.sources"), why)
RULES = [
    ("gpu", _EVERYTHING - {"gpu", "errors", "result", "status"},
     "what ksweep knows of GPUs is the bottom layer: the spec and every layer above read it"),
    ("preprocessor", _EVERYTHING - {"preprocessor", "errors"},
     "the preprocessor's reader is the bottom layer: the spec's warnings and source/ read it"),
    ("elf", _EVERYTHING - {"elf", "errors"},
     "what a built file's code is, read by build/ (a build's digest) and source/ (guard --check), is the bottom layer"),
    ("spec", {"space", "strategies", "build", "run", "kernel", "sweep", "store", "report", "export", "cli", "app",
              "kt", "replay", "source", "insights"}, "the spec sits on gpu/ and preprocessor/ alone"),
    ("space", {"strategies", "build", "run", "kernel", "sweep", "store", "report", "export", "cli", "app", "kt",
               "source", "insights"}, "spaces know specs, nothing above"),
    ("strategies", {"build", "run", "kernel", "sweep", "store", "report", "export", "cli", "app", "kt", "source",
                    "warm.sources", "insights"}, "a strategy sees a space and results"),
    ("warm/prior", {"space", "strategies", "build", "run", "kernel", "sweep", "store", "report", "export", "cli",
                    "app", "kt", "replay", "source", "warm.sources", "warm.transfer", "insights"},
     "the prior the strategies read is pure data"),
    ("warm/transfer", {"build", "run", "kernel", "sweep", "store", "report", "export", "cli", "app", "kt", "replay",
                       "source", "warm.sources", "insights"}, "the surrogate strategy's prior mean reads no file"),
    ("warm/sources", {"sweep", "run", "kernel", "report", "export", "cli", "app", "kt", "source", "insights"},
     "warm-start sources are read from files and databases, no runs"),
    ("build", {"run", "kernel", "sweep", "store", "report", "export", "cli", "app", "kt", "source", "insights"},
     "builds know nothing of runs"),
    ("run", {"kernel", "sweep", "report", "export", "cli", "app", "kt", "source", "insights"},
     "run modes and executors sit below the loop"),
    ("kernel", {"sweep", "report", "export", "cli", "app", "kt", "source", "insights"},
     "kernel mode is a mode below the loop"),
    ("store", {"run", "kernel", "sweep", "report", "export", "cli", "app", "kt", "source", "insights"},
     "the store keeps results, it runs nothing"),
    ("sweep", {"kernel", "report", "export", "cli", "app", "kt", "source", "insights"},
     "the loop knows modes and executors by their contracts"),
    ("report", {"sweep", "run", "kernel", "export", "cli", "app", "kt", "source"},
     "reports read results, not the loop"),
    ("export", {"sweep", "run", "kernel", "cli", "app", "kt", "source"},
     "ksweep export reads results and the store (and report's records), not the loop"),
    ("replay", {"sweep", "run", "kernel", "export", "cli", "app", "kt", "source", "insights"},
     "replay evaluates recorded data, no runs"),
    ("source", {"space", "strategies", "build", "run", "kernel", "sweep", "store", "report", "export", "cli", "app",
                "kt", "replay", "insights"}, "guard and init read sources and spec names; no sweep"),
    ("profile", {"space", "strategies", "build", "run", "kernel", "sweep", "store", "report", "export", "cli",
                 "app", "kt", "source", "insights"},
     "Nsight Compute's command lines and output, read by the layers above"),
    ("verify", {"strategies", "build", "run", "kernel", "sweep", "store", "report", "export", "cli", "app", "kt",
                "replay", "warm", "source", "profile", "insights"},
     "the verify stage judges a run's metrics and the confirmation runs; it reads results, nothing above"),
    ("insights", {"space", "strategies", "build", "run", "kernel", "sweep", "report", "export", "cli", "app", "kt",
                  "source", "warm", "profile"},
     "insights read evaluated configs (a store's standings, a recorded dataset), pure; nothing runs"),
    ("app", {"cli", "kt"}, "the application layer serves the CLI and ksweep.kt; it knows neither"),
    ("kt", {"cli"}, "Kernel Tuner's call sits on the application layer, below the CLI"),
]


@functools.lru_cache(maxsize=None)
def _lazy_names(root: Path) -> dict[str, str]:
    """The names ``ksweep/__init__.py`` loads on first use (its ``_LAZY``): name -> the
    ksweep-relative module that defines it; {} for a package without one."""
    init = root / "__init__.py"
    if not init.is_file():
        return {}
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets):
            # the table is string literals and a comprehension over a tuple of them: no name to look up
            table = eval(compile(ast.Expression(node.value), str(init), "eval"), {"__builtins__": {}})
            return {name: module.removeprefix("ksweep").lstrip(".") for name, module in table.items()}
    return {}


def _is_module(root: Path, parts: list[str]) -> bool:
    """Whether ``ksweep.<parts>`` is a module file or a package folder under ``root``."""
    where = root.joinpath(*parts)
    return (where.parent / f"{where.name}.py").is_file() or (where / "__init__.py").is_file()


def _type_checking(test: ast.expr) -> bool:
    """Whether an ``if`` tests ``TYPE_CHECKING`` (``typing.TYPE_CHECKING``): true only for a type checker."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_at_import(node: ast.AST):
    """The nodes below ``node`` that run when the module is imported: not a function's body,
    nor what only a type checker reads (``if TYPE_CHECKING:``)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue  # an import statement cannot sit in its decorators or defaults
        for part in child.orelse if isinstance(child, ast.If) and _type_checking(child.test) else [child]:
            yield part
            yield from _run_at_import(part)


def _imports(path: Path, root: Path = PACKAGE, source: str | None = None,
             at_import_time: bool = False) -> list[tuple[int, str]]:
    """(line, ksweep-relative module) of every import in a file, at any depth: each imported
    name resolved to the module it names ("" is the ksweep package itself). ``from A import B``
    names ``A.B`` when that is a module or a package, else ``A`` (a lazy name of ksweep: the
    module that defines it). ``root``: the package folder ``path`` lies in; ``source``: the
    file's text, when it is not read from ``path``; ``at_import_time``: only the imports run
    when the module is imported (those at module level and in class bodies, not those in a
    function or under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text() if source is None else source)
    package = list(path.relative_to(root).with_suffix("").parts[:-1])
    lazy = _lazy_names(root)
    out = []
    for node in _run_at_import(tree) if at_import_time else ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                first, _, rest = alias.name.partition(".")
                if first == "ksweep":
                    out.append((node.lineno, rest))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 > len(package):
                    continue  # above ksweep (Python refuses it)
                base = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
            else:
                first, *base = (node.module or "").split(".")
                if first != "ksweep":
                    continue
            for alias in node.names:
                if _is_module(root, [*base, alias.name]):
                    out.append((node.lineno, ".".join([*base, alias.name])))
                elif not base and alias.name in lazy:
                    out.append((node.lineno, lazy[alias.name]))
                else:
                    out.append((node.lineno, ".".join(base)))
    return out


def _files(where: str, root: Path = PACKAGE) -> list[Path]:
    target = root / where
    return sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]


def _upward_imports(where: str, forbidden: set[str], root: Path = PACKAGE) -> list[str]:
    """``file:line imports ksweep.X`` for each import under ``where`` of a forbidden layer."""
    broken = []
    for path in _files(where, root):
        for line, module in _imports(path, root):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                broken.append(f"{path.relative_to(root.parent)}:{line} imports ksweep.{module}")
    return broken


@pytest.mark.parametrize("where, forbidden, why", RULES, ids=[r[0] for r in RULES])
def test_a_layer_never_imports_a_higher_one(where, forbidden, why):
    broken = _upward_imports(where, forbidden)
    assert not broken, f"{why}: " + "; ".join(broken)


@pytest.mark.parametrize("where, source, modules", [
    ("store/sqlite.py", "from .. import sweep", ["sweep"]),
    ("store/sqlite.py", "from . import sqlite", ["store.sqlite"]),
    ("store/sqlite.py", "from ..run import executor", ["run.executor"]),
    ("store/sqlite.py", "from ..run import base as b, executor", ["run.base", "run.executor"]),
    ("store/sqlite.py", "from ..sweep.driver import SweepOptions", ["sweep.driver"]),
    ("store/sqlite.py", "import ksweep.sweep.driver as d", ["sweep.driver"]),
    ("store/sqlite.py", "import ksweep", [""]),
    ("store/sqlite.py", "from ksweep import app", ["app"]),
    ("store/sqlite.py", "from ksweep.sweep import driver", ["sweep.driver"]),
    ("store/sqlite.py", "from ksweep import run_sweep, __version__", ["app.sweep", ""]),
    ("store/sqlite.py", "from .. import Store", ["store.sqlite"]),
    ("store/sqlite.py", "def later():\n    if True:\n        from ..report import table\n", ["report.table"]),
    ("strategies/auto.py", "from . import make_strategy", ["strategies"]),
    ("strategies/__init__.py", "from .base import Strategy", ["strategies.base"]),
    ("strategies/__init__.py", "from . import grid", ["strategies.grid"]),
    ("app/wiring.py", "from ..run import dask_executor", ["run.dask_executor"]),
    ("app/sweep.py", "from . import wiring", ["app.wiring"]),
    ("app/sweep.py", "import numpy, ksweep_other\nfrom numpy import linalg\nfrom ksweepx import y", []),
])
def test_every_import_form_names_the_module_it_imports(where, source, modules):
    assert [m for _, m in _imports(PACKAGE / where, source=source)] == modules


def test_an_upward_import_of_any_form_is_flagged(tmp_path):
    """The rule test's own logic, on a copy of ksweep with a store module planted that
    imports the sweep layer as ``from .. import sweep`` inside a function."""
    copy = tmp_path / "ksweep"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    store_rule = next(forbidden for where, forbidden, _ in RULES if where == "store")
    assert _upward_imports("store", store_rule, copy) == []
    (copy / "store" / "planted.py").write_text('"""Planted."""\n\n\ndef later():\n    from .. import sweep\n')
    assert _upward_imports("store", store_rule, copy) == ["ksweep/store/planted.py:5 imports ksweep.sweep"]


def test_a_forbidden_module_of_an_allowed_package_is_flagged(tmp_path):
    """A rule may forbid one module of a package ("warm.sources") and allow its others."""
    copy = tmp_path / "ksweep"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    rule = next(forbidden for where, forbidden, _ in RULES if where == "strategies")
    (copy / "strategies" / "planted.py").write_text(
        '"""Planted."""\n\nfrom ..warm import prior\nfrom ..warm.prior import Prior\n\n\n'
        'def later():\n    from ..warm import sources\n    from ksweep.warm.sources import load_prior\n')
    assert _upward_imports("strategies", rule, copy) == ["ksweep/strategies/planted.py:8 imports ksweep.warm.sources",
                                                          "ksweep/strategies/planted.py:9 imports ksweep.warm.sources"]


# All that ksweep/cli/ may import, each with why: the CLI parses, calls the application layer
# and renders what it answers; store reads, spec loading and wiring are the app layer's.
CLI_MAY_IMPORT = {
    "cli": "its own argparse helpers and commands",
    "app": "the library half of each command (ksweep/app/)",
    "report": "the renderers: tables, CSV and JSON, plots, notes",
    "errors": "a user's error said in one line, exit 2",
    "": "ksweep's own __version__, which cli/main.py says when the distribution is not installed",
}


def _imports_outside(where: str, allowed: set[str], root: Path = PACKAGE) -> list[str]:
    """``file:line imports ksweep.X`` for each import under ``where`` of a layer not in ``allowed``."""
    return [f"{path.relative_to(root.parent)}:{line} imports ksweep.{module}"
            for path in _files(where, root) for line, module in _imports(path, root)
            if module.split(".")[0] not in allowed]


def test_the_cli_imports_only_the_app_layer_and_the_renderers():
    broken = _imports_outside("cli", set(CLI_MAY_IMPORT))
    assert not broken, ("the CLI parses, calls the application layer (ksweep/app/) and renders (ksweep/report/): "
                        + "; ".join(broken))


def test_a_cli_import_of_a_lower_layer_is_flagged(tmp_path):
    copy = tmp_path / "ksweep"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert _imports_outside("cli", set(CLI_MAY_IMPORT), copy) == []
    (copy / "cli" / "planted.py").write_text("from ..store.sqlite import Store\nfrom ..app import sweep\n")
    assert _imports_outside("cli", set(CLI_MAY_IMPORT), copy) == ["ksweep/cli/planted.py:1 imports ksweep.store.sqlite"]


def _module_name(path: Path, root: Path = PACKAGE) -> str:
    """``ksweep.a.b`` for ``a/b.py`` and ``a/b/__init__.py`` under ``root``."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join([root.name, *(parts[:-1] if parts[-1] == "__init__" else parts)])


def _graph(root: Path = PACKAGE, at_import_time: bool = False) -> dict[str, dict[str, list[str]]]:
    """Module -> {a ksweep module it imports -> the ``file:line`` of each such import}, over
    every module of the package (every import, as the rules count them; ``at_import_time``:
    only those run when the module is imported). A module importing its own package's names
    (``from . import x`` in an ``__init__``, x no module) is no edge."""
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sorted(root.rglob("*.py")):
        edges = graph.setdefault(_module_name(path, root), {})
        for line, module in _imports(path, root, at_import_time=at_import_time):
            target = ".".join(filter(None, [root.name, module]))
            where = f"{path.relative_to(root.parent)}:{line}"
            if target != _module_name(path, root) and where not in edges.get(target, []):
                edges.setdefault(target, []).append(where)
    return graph


def _cycles(graph: dict[str, dict[str, list[str]]]) -> list[frozenset[str]]:
    """The import cycles: each strongly connected component of more than one module (Tarjan)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph.get(module, {}):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = {stack.pop()}
            while module not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def _describe(cycle: frozenset[str], graph: dict[str, dict[str, list[str]]]) -> str:
    """One cycle with its imports: ``{a, b}: a → b (a.py:3), b → a (b.py:9)``."""
    edges = [f"{a} → {b} ({', '.join(graph[a][b])})" for a in sorted(cycle) for b in sorted(graph[a]) if b in cycle]
    return "{" + ", ".join(sorted(cycle)) + "}: " + ", ".join(edges)


# The import cycles still to break, each with why it is still there. The test fails on any
# other cycle, and on one of these that is gone (delete its line then).
KNOWN_CYCLES: dict[frozenset, str] = {}  # none: a cycle found is a failure


def test_no_import_cycle_but_the_known_ones():
    graph = _graph()
    found = _cycles(graph)
    new = [_describe(c, graph) for c in found if c not in KNOWN_CYCLES]
    gone = ["{" + ", ".join(sorted(c)) + "}" for c in KNOWN_CYCLES if c not in found]
    assert not new, "import cycles (each import counted, at any depth): " + "; ".join(new)
    assert not gone, "no longer a cycle, delete it from KNOWN_CYCLES: " + "; ".join(gone)


def test_no_import_cycle_when_imported():
    """What runs when a module is imported (module level and class bodies, not functions nor
    TYPE_CHECKING) has no cycle at all: a module half-imported when another reads it."""
    graph = _graph(at_import_time=True)
    cycles = [_describe(c, graph) for c in _cycles(graph)]
    assert not cycles, "import cycles when imported: " + "; ".join(cycles)


def test_every_import_names_a_module_of_ksweep():
    """The resolution's own check: each edge of the graph ends at a module the package has."""
    graph = _graph()
    assert not {target: where for edges in graph.values() for target, where in edges.items() if target not in graph}


def test_a_planted_cycle_is_found(tmp_path):
    """Two modules importing each other by ``from . import b`` and, in a function, ``from
    ksweep.low import a`` (each names a submodule, not the package): one cycle, of those two,
    and none when imported; a third module importing one of them joins no cycle."""
    root = tmp_path / "ksweep"
    (root / "low").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "low" / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text("from . import b\n")
    (root / "low" / "b.py").write_text("def later():\n    from ksweep.low import a\n")
    (root / "top.py").write_text("from .low.a import thing\n")
    graph = _graph(root)
    assert graph["ksweep.low.a"] == {"ksweep.low.b": ["ksweep/low/a.py:1"]}
    assert _cycles(graph) == [frozenset({"ksweep.low.a", "ksweep.low.b"})]
    assert _describe(_cycles(graph)[0], graph) == ("{ksweep.low.a, ksweep.low.b}: ksweep.low.a → ksweep.low.b "
                                                   "(ksweep/low/a.py:1), ksweep.low.b → ksweep.low.a (ksweep/low/b.py:2)")
    assert _cycles(_graph(root, at_import_time=True)) == []


def test_the_cycle_finder_finds_each_component():
    graph = {"a": {"b": []}, "b": {"c": []}, "c": {"a": [], "d": []}, "d": {"e": []}, "e": {"d": []}, "f": {"a": []},
             "g": {"g": []}}
    assert sorted(map(sorted, _cycles(graph))) == [["a", "b", "c"], ["d", "e"]]


@pytest.mark.parametrize("source, at_import_time", [
    ("from . import b", ["low.b"]),
    ("def f():\n    from . import b", []),
    ("class C:\n    from . import b", ["low.b"]),
    ("if TYPE_CHECKING:\n    from . import b\nelse:\n    from . import c", ["low.c"]),
    ("if typing.TYPE_CHECKING:\n    from . import b", []),
    ("try:\n    from . import b\nexcept ImportError:\n    pass", ["low.b"]),
    ("f = lambda: __import__('os')\nasync def g():\n    from . import b", []),
])
def test_imports_when_imported(tmp_path, source, at_import_time):
    root = tmp_path / "ksweep"
    (root / "low").mkdir(parents=True)
    for name in ("__init__", "low/__init__", "low/b", "low/c"):
        (root / f"{name}.py").write_text("")
    assert [m for _, m in _imports(root / "low" / "a.py", root, source, at_import_time=True)] == at_import_time


def test_the_cli_runs_no_sql():
    for path in _files("cli"):
        assert ".db.execute" not in path.read_text(), path


def test_sweep_never_names_kernel_mode():
    for path in _files("sweep"):
        assert "kernel" not in path.read_text().lower(), path
