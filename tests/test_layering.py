"""The layering rules of docs/architecture.md, checked on the code's own imports.

Data flows one way (spec → space → strategy → build → run → verify → store → report); a
lower layer never imports a higher one, at module level or inside a function.
"""

import ast
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


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, ksweep-relative module) of every import in a file, at any depth."""
    tree = ast.parse(path.read_text())
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - (node.level - 1)]) if node.level > 1 else list(package)
                name = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("ksweep"):
                name = node.module[len("ksweep."):] if node.module != "ksweep" else ""
            else:
                continue
            out.append((node.lineno, name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ksweep."):
                    out.append((node.lineno, alias.name[len("ksweep."):]))
    return out


def _files(where: str) -> list[Path]:
    target = PACKAGE / where
    return sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]


@pytest.mark.parametrize("where, forbidden, why", RULES, ids=[r[0] for r in RULES])
def test_a_layer_never_imports_a_higher_one(where, forbidden, why):
    broken = []
    for path in _files(where):
        for line, module in _imports(path):
            top = module.split(".")[0]
            if top in forbidden:
                broken.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports ksweep.{module}")
    assert not broken, f"{why}: " + "; ".join(broken)


def test_the_cli_runs_no_sql():
    for path in _files("cli"):
        assert ".db.execute" not in path.read_text(), path


def test_sweep_never_names_kernel_mode():
    for path in _files("sweep"):
        assert "kernel" not in path.read_text().lower(), path
