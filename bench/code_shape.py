"""The shape of ksweep's code: modules and lines, the largest modules, the loose modules at
the package's top, and the import cycles between modules (every import counted, at any
depth, as tests/test_layering.py counts them).

    python3 bench/code_shape.py [PACKAGE_DIR]      (default: this checkout's ksweep/)

To compare with an earlier commit: `git worktree add /tmp/old COMMIT` and give
/tmp/old/ksweep. Prints one block of facts; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "tests"))

from test_layering import _cycles, _describe, _graph  # noqa: E402  (the test's own import graph)

LARGE = 600  # lines: docs/architecture.md's limit for one module


def main(argv: list[str]) -> int:
    root = Path(argv[0]).resolve() if argv else HERE / "ksweep"
    modules = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    lines = {p: len(p.read_text().splitlines()) for p in modules}
    loose = [p for p in modules if p.parent == root and p.name not in ("__init__.py", "__main__.py")]
    large = sorted((n, p) for p, n in lines.items() if n > LARGE)
    graph = _graph(root)
    cycles = _cycles(graph)
    print(f"modules: {len(modules)}, lines: {sum(lines.values())}")
    print(f"loose modules in {root.name}/ (besides __init__ and __main__): {len(loose)}: "
          + ", ".join(f"{p.stem} ({lines[p]})" for p in loose))
    print(f"modules over {LARGE} lines: {len(large)}: "
          + ", ".join(f"{p.relative_to(root)} ({n})" for n, p in reversed(large)))
    print(f"largest module: {max(lines.values())} lines")
    print(f"import cycles: {len(cycles)}")
    for c in cycles:
        print("  " + _describe(c, graph))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
