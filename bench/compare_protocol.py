"""The comparison protocol of the benchmarks against Kernel Tuner (issue 17), shared by
bench/kernel_vs_kerneltuner.py (the matmul example) and bench/kt_examples_vs_kerneltuner.py
(Kernel Tuner's own convolution and pnpoly examples).

REPS rounds, the order of the two tools alternating (Kernel Tuner first in odd rounds),
each sweep from empty caches: Kernel Tuner in a process of its own with a fresh
CUPY_CACHE_DIR (neither CuPy's disk cache nor its in-process cache serves it), ksweep with a
fresh database and build cache; the wall time of every sweep, the median and range of each
tool.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Mapping, Sequence

TOOLS = {"kt": "Kernel Tuner", "ks": "ksweep"}


class ChildFailed(RuntimeError):
    """A sweep's process ended with an error (its output's tail is the message)."""


def round_order(i: int) -> tuple[str, str]:
    """The tools' order in round ``i`` (0-based): Kernel Tuner first in odd rounds (1, 3, ...)."""
    return ("kt", "ks") if i % 2 == 0 else ("ks", "kt")


def fresh_folder(path: Path) -> Path:
    """``path`` emptied (or made): nothing of an earlier sweep is left in it."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def cupy_cache_env(work: Path, tag: str) -> dict[str, str]:
    """This process's environment with CuPy's kernel cache in a fresh folder of ``work``."""
    return {**os.environ, "CUPY_CACHE_DIR": str(fresh_folder(work / f"cupy-cache-{tag}"))}


def run_child(argv: Sequence[str], result: Path, *, env: Mapping[str, str] | None = None,
              cwd: Path | None = None, what: str = "sweep") -> dict:
    """Run ``argv`` (a sweep that writes its facts as JSON to ``result``) and return them with
    ``process_wall_s``: from the start of the process to its exit, the interpreter's start and
    the imports included. A failed process raises ChildFailed with its output's tail."""
    result.unlink(missing_ok=True)
    t0 = time.perf_counter()
    r = subprocess.run(list(argv), env=dict(env) if env is not None else None, cwd=cwd, capture_output=True,
                       text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0 or not result.exists():
        raise ChildFailed(f"{what} failed (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    facts = json.loads(result.read_text())
    facts["process_wall_s"] = wall
    return facts


def spread(values: Sequence[float]) -> dict:
    """Median and range of some wall times (or ratios)."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def describe(values: Sequence[float], unit: str = " s", digits: int = 1) -> str:
    """'median 12.3 s (range 11.9-13.0)' of ``values``."""
    s = spread(values)
    return f"median {s['median']:.{digits}f}{unit} (range {s['min']:.{digits}f}-{s['max']:.{digits}f})"
