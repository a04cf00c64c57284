"""Kernel arguments: made by the user's function from problem sizes and a seed; outputs
compared with a reference (pure, numpy)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..spec.pyref import load_python


def load_function(ref: str, root: Path | str, key: str = "kernel.args") -> Callable:
    """``file.py:function`` relative to root, through the loader of every spec reference
    (spec/pyref.py: the same time limit on importing, the same one-line SpecErrors)."""
    return load_python(ref, root, key=key, role=key.replace(".", " ")).fn


def normalise(args: Sequence[Any]) -> list:
    """numpy arrays stay; Python ints become int32 and floats float32 (as in CUDA C)."""
    out = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            out.append(np.ascontiguousarray(a))
        elif isinstance(a, np.generic):
            out.append(a)
        elif isinstance(a, bool):
            out.append(np.int32(a))
        elif isinstance(a, int):
            out.append(np.int32(a))
        elif isinstance(a, float):
            out.append(np.float32(a))
        else:
            raise TypeError(f"argument {i} is a {type(a).__name__}: use a numpy array or a numpy scalar")
    return out


def make_args(fn: Callable, sizes: Mapping[str, Any], seed: int) -> list:
    return normalise(fn(dict(sizes), seed))


CHUNK = 1 << 20


def _check_chunk(g: np.ndarray, e: np.ndarray, atol: float, rtol: float):
    """(unwritten count, first unwritten, worst excess over tolerance, its index, max abs error)."""
    work = np.float32 if g.dtype == np.float32 and e.dtype == np.float32 else np.float64
    g = g.astype(work, copy=False)
    e = e.astype(work, copy=False)
    # the usual case first, in four passes: every element within tolerance (a NaN or an
    # infinity anywhere makes the maximum non-finite, and the full count below says what it is)
    excess = np.subtract(g, e)
    np.abs(excess, out=excess)
    tol = np.abs(e)
    tol *= rtol
    tol += atol
    np.subtract(excess, tol, out=excess)
    worst = float(excess.max()) if excess.size else 0.0
    if math.isfinite(worst) and worst <= 0:
        return 0, -1, worst, 0, 0.0
    unwritten = ~np.isfinite(g) & np.isfinite(e)
    n_bad = int(unwritten.sum())
    first_bad = int(np.argmax(unwritten)) if n_bad else -1
    err = np.abs(g - e)
    err[unwritten] = 0
    excess = err - (atol + rtol * np.abs(e))
    j = int(np.argmax(excess))
    return n_bad, first_bad, float(excess[j]), j, float(err.max()) if err.size else 0.0


def compare(got: Sequence[np.ndarray], expected: Sequence[np.ndarray], atol: float, rtol: float,
            pool=None) -> str | None:
    """None if every output matches, else why not (NaN where the reference is finite = unwritten).

    Large outputs are checked in chunks, on ``pool`` (a thread pool) when given: numpy
    releases the GIL, so a 16M-element output is checked in milliseconds."""
    if len(got) != len(expected):
        return f"{len(got)} outputs but the reference has {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if e is None:
            continue
        e = np.asarray(e)
        if g.shape != e.shape and g.size == e.size:
            e = e.reshape(g.shape)
        if g.shape != e.shape:
            return f"output {i}: shape {g.shape} but the reference is {e.shape}"
        gf, ef = g.reshape(-1), e.reshape(-1)
        starts = range(0, gf.size, CHUNK)
        jobs = [(gf[s:s + CHUNK], ef[s:s + CHUNK], atol, rtol) for s in starts]
        parts = list(pool.map(lambda a: _check_chunk(*a), jobs)) if pool and len(jobs) > 1 else \
            [_check_chunk(*a) for a in jobs]
        n_bad = sum(p[0] for p in parts)
        if n_bad:
            first = next(s + p[1] for s, p in zip(starts, parts) if p[0])
            return f"output {i}: {n_bad} elements not written or not finite (first at {first})"
        worst = max(range(len(parts)), key=lambda k: parts[k][2]) if parts else 0
        if parts and parts[worst][2] > 0:
            j = starts[worst] + parts[worst][3]
            max_err = max(p[4] for p in parts)
            return (f"output {i}: max abs error {max_err:.3g} (element {j}: got {float(gf[j]):.6g}, "
                    f"expected {float(ef[j]):.6g}; atol {atol:g}, rtol {rtol:g})")
    return None


def summarise(times_ms: Sequence[float]) -> dict[str, float]:
    """Median with p20 / p80 of a list of timings."""
    t = np.asarray(times_ms, dtype=np.float64)
    return {
        "ms": float(np.median(t)), "ms_p20": float(np.percentile(t, 20)), "ms_p80": float(np.percentile(t, 80)),
        "reps": float(len(t)),
    }
