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

# (package or module, the ksweep packages/modules it must never import, why)
RULES = [
    ("spec", {"space", "strategies", "build", "run", "kernel", "sweep", "store", "report", "cli", "api", "replay",
              "source"}, "the spec is the bottom layer"),
    ("space", {"strategies", "build", "run", "kernel", "sweep", "store", "report", "cli", "api", "source"},
     "spaces know specs, nothing above"),
    ("strategies", {"build", "run", "kernel", "sweep", "store", "report", "cli", "api", "source"},
     "a strategy sees a space and results"),
    ("build", {"run", "kernel", "sweep", "store", "report", "cli", "api", "source"}, "builds know nothing of runs"),
    ("run", {"kernel", "sweep", "report", "cli", "api", "source"}, "run modes and executors sit below the loop"),
    ("kernel", {"sweep", "report", "cli", "api", "source"}, "kernel mode is a mode below the loop"),
    ("store", {"run", "kernel", "sweep", "report", "cli", "api", "source"}, "the store keeps results, it runs nothing"),
    ("sweep", {"kernel", "report", "cli", "api", "source"}, "the loop knows modes and executors by their contracts"),
    ("report", {"sweep", "run", "kernel", "cli", "api", "source"}, "reports read results, not the loop"),
    ("replay", {"sweep", "run", "kernel", "cli", "api", "source"}, "replay evaluates recorded data, no runs"),
    ("source", {"space", "strategies", "build", "run", "kernel", "sweep", "store", "report", "cli", "api", "replay"},
     "guard and init read sources and spec names; no sweep"),
    ("profile", {"space", "strategies", "build", "run", "kernel", "sweep", "store", "report", "cli", "api", "insight",
                 "source"}, "Nsight Compute's command lines and output, read by the layers above"),
    ("report", {"insight", "regress"}, "reports read results, not the loop"),
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


def _imports(path: Path, root: Path = PACKAGE, source: str | None = None) -> list[tuple[int, str]]:
    """(line, ksweep-relative module) of every import in a file, at any depth: each imported
    name resolved to the module it names ("" is the ksweep package itself). ``from A import B``
    names ``A.B`` when that is a module or a package, else ``A`` (a lazy name of ksweep: the
    module that defines it). ``root``: the package folder ``path`` lies in; ``source``: the
    file's text, when it is not read from ``path``."""
    tree = ast.parse(path.read_text() if source is None else source)
    package = list(path.relative_to(root).with_suffix("").parts[:-1])
    lazy = _lazy_names(root)
    out = []
    for node in ast.walk(tree):
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
            if module.split(".")[0] in forbidden:
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
    ("store/sqlite.py", "from ksweep import api", ["api"]),
    ("store/sqlite.py", "from ksweep.sweep import driver", ["sweep.driver"]),
    ("store/sqlite.py", "from ksweep import run_sweep, __version__", ["api", ""]),
    ("store/sqlite.py", "from .. import Store", ["store.sqlite"]),
    ("store/sqlite.py", "def later():\n    if True:\n        from ..report import table\n", ["report.table"]),
    ("strategies/auto.py", "from . import make_strategy", ["strategies"]),
    ("strategies/__init__.py", "from .base import Strategy", ["strategies.base"]),
    ("strategies/__init__.py", "from . import grid", ["strategies.grid"]),
    ("api.py", "from .run import dask_executor", ["run.dask_executor"]),
    ("api.py", "from . import insight", ["insight"]),
    ("api.py", "import numpy, ksweep_other\nfrom numpy import linalg\nfrom ksweepx import y", []),
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


def test_the_cli_runs_no_sql():
    for path in _files("cli"):
        assert ".db.execute" not in path.read_text(), path


def test_sweep_never_names_kernel_mode():
    for path in _files("sweep"):
        assert "kernel" not in path.read_text().lower(), path
