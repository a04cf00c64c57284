"""Sizes (issue 37): each shape's sizes kept with its results."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksweep.store.sqlite import Store

from conftest import ksweep_cli

TUNED = (1000, 8000, 64000, 512000)

PROGRAM = """#include <stdio.h>
int main(void) {
    printf("@@RESULT ms=%.9g\\n", (double)N / TILE + (double)TILE * TILE / 64.0);
    return 0;
}
"""


def tile_spec(folder: Path, sizes=TUNED) -> Path:
    (folder / "tile.c").write_text(PROGRAM)
    shapes = "".join(f'[shapes.n{n}]\ndefines = {{ N = {n} }}\nargs = ["{n}", "fast"]\n' for n in sizes)
    path = folder / "tile.toml"
    path.write_text(f'[sweep]\nname = "tile"\nobjective = "ms"\n[params]\nTILE = [4, 8]\n{shapes}'
                    '[build]\nsources = ["tile.c"]\n'
                    'command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "tile.c"]\n')
    return path


def test_a_sweep_keeps_each_shapes_sizes_with_its_results(tmp_path):
    spec = tile_spec(tmp_path)
    db = tmp_path / "tile.db"
    done = ksweep_cli("run", spec, "--db", db, "-q", "--no-confirm")
    assert done.returncode == 0, done.stderr
    with Store(db, create=False) as store:
        kept = store.shape_sizes()
    assert kept == {f"n{n}": {"defines": {"N": n}, "args": [str(n), "fast"]} for n in TUNED}
