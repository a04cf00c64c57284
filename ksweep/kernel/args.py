"""Kernel arguments: made by the user's function from problem sizes and a seed; outputs
compared with a reference (pure, numpy)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
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


@dataclass(frozen=True)
class OutputCheck:
    """One output compared with its reference, element by element (what a message needs).

    ``unwritten``: elements not finite where the reference is (poisoned, never written, or
    inf/NaN written), the first at ``first_unwritten``; ``over``: elements beyond
    ``atol + rtol * |expected|``; when there are any, ``worst`` is the first element of the
    largest excess over the tolerance, where the output holds ``got`` and the reference
    ``expected``, and ``max_err`` the largest ``|got - expected|`` over the elements judged.
    Elements whose reference is not finite are not judged. Indices count the flattened
    arrays; -1 and 0.0 stand for none."""

    unwritten: int = 0
    first_unwritten: int = -1
    over: int = 0
    worst: int = -1
    max_err: float = 0.0
    got: float = 0.0
    expected: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.unwritten and not self.over


MATCHED = OutputCheck()


def work_dtype(got: np.dtype, expected: np.dtype) -> np.dtype:
    """The type outputs are compared in: float32 when both are float32, else float64."""
    both32 = np.dtype(got) == np.float32 and np.dtype(expected) == np.float32
    return np.dtype(np.float32 if both32 else np.float64)


def _passes(g: np.ndarray, e: np.ndarray, atol: float, rtol: float) -> bool:
    """Every element within tolerance, in four passes over the data: the usual case. A NaN
    or an infinity anywhere makes the maximum non-finite (the details then say what it is)."""
    with np.errstate(invalid="ignore", over="ignore"):
        excess = np.subtract(g, e)
        np.abs(excess, out=excess)
        tol = np.abs(e)
        tol *= rtol
        tol += atol
        np.subtract(excess, tol, out=excess)
    worst = float(excess.max()) if excess.size else 0.0
    return math.isfinite(worst) and worst <= 0


def _details(g: np.ndarray, e: np.ndarray, atol: float, rtol: float) -> tuple:
    """(unwritten, first unwritten or -1, over, largest excess over the tolerance, its index,
    max abs error) of one chunk, both arrays in the work type."""
    e_finite, g_finite = np.isfinite(e), np.isfinite(g)
    unwritten = e_finite & ~g_finite
    judged = e_finite & g_finite
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(judged, np.abs(g - e), 0)
        excess = np.where(judged, err - (np.abs(e) * rtol + atol), -np.inf)
    beyond = excess > 0  # a NaN excess (an infinite tolerance) is no error
    n_unwritten, n_over = int(unwritten.sum()), int(beyond.sum())
    first = int(np.argmax(unwritten)) if n_unwritten else -1
    max_err = float(err.max()) if err.size else 0.0
    if not n_over:
        return n_unwritten, first, 0, -math.inf, -1, max_err
    excess[~beyond] = -np.inf
    j = int(np.argmax(excess))
    return n_unwritten, first, n_over, float(excess[j]), j, max_err


def check_output(got: np.ndarray, expected: np.ndarray, atol: float, rtol: float, pool=None) -> OutputCheck:
    """``got`` against ``expected`` (the same number of elements), in the work type
    (``work_dtype``), in chunks: on ``pool`` (a thread pool) when given, numpy releasing the
    GIL, so that a 16M-element output is checked in milliseconds."""
    w = work_dtype(got.dtype, np.asarray(expected).dtype)
    g = np.asarray(got).reshape(-1)
    e = np.asarray(expected).reshape(-1)
    starts = range(0, g.size, CHUNK)

    def each(fn):
        chunk = lambda s: fn(g[s:s + CHUNK].astype(w, copy=False), e[s:s + CHUNK].astype(w, copy=False),  # noqa: E731
                             atol, rtol)
        return list(pool.map(chunk, starts)) if pool and len(starts) > 1 else [chunk(s) for s in starts]

    if all(each(_passes)):
        return MATCHED
    parts = each(_details)
    unwritten = sum(p[0] for p in parts)
    first = next((s + p[1] for s, p in zip(starts, parts) if p[0]), -1)
    over = sum(p[2] for p in parts)
    if not over:
        return OutputCheck(unwritten, first) if unwritten else MATCHED
    k = max(range(len(parts)), key=lambda k: parts[k][3])  # the first chunk of the largest excess
    j = starts[k] + parts[k][4]
    return OutputCheck(unwritten, first, over, j, max(p[5] for p in parts), float(g[j]), float(e[j].astype(w)))


def compare(got: Sequence, expected: Sequence, atol: float, rtol: float, check=None) -> str | None:
    """None if every output matches, else why not (NaN where the reference is finite = unwritten;
    where the reference itself is not finite, anything goes).

    ``got`` and ``expected`` are numpy arrays compared here (``check_output``), or anything
    with a ``shape`` that ``check(got, expected)`` compares into an ``OutputCheck`` (the
    worker's GPU backend: arrays on the device)."""
    if len(got) != len(expected):
        return f"{len(got)} outputs but the reference has {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if e is None:
            continue
        if not hasattr(e, "shape"):
            e = np.asarray(e)
        if tuple(g.shape) != tuple(e.shape) and math.prod(g.shape) != math.prod(e.shape):
            return f"output {i}: shape {tuple(g.shape)} but the reference is {tuple(e.shape)}"
        r = check(g, e) if check else check_output(g, e, atol, rtol)
        if r.unwritten:
            return f"output {i}: {r.unwritten} elements not written or not finite (first at {r.first_unwritten})"
        if r.over:
            return (f"output {i}: max abs error {r.max_err:.3g} (element {r.worst}: got {r.got:.6g}, "
                    f"expected {r.expected:.6g}; atol {atol:g}, rtol {rtol:g})")
    return None


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays hold the same bytes: compared as the widest unsigned integers that
    divide their size (a 64 MB input in milliseconds, 20x faster than byte by byte)."""
    x, y = np.ascontiguousarray(a).reshape(-1).view(np.uint8), np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    if x.size != y.size:
        return False
    for width in (np.uint64, np.uint32, np.uint16):
        size = np.dtype(width).itemsize
        if x.size % size == 0:
            return bool(np.array_equal(x.view(width), y.view(width)))
    return bool(np.array_equal(x, y))


def differing_bytes(a: np.ndarray, b: np.ndarray) -> int:
    """How many bytes differ between two arrays of the same size."""
    if same_bytes(a, b):
        return 0
    x, y = np.ascontiguousarray(a).reshape(-1).view(np.uint8), np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    return int(np.count_nonzero(x != y))


def median_interval(times_ms: Sequence[float]) -> tuple[float, float] | None:
    """The distribution-free 95% confidence interval of the median of ``times_ms``: the
    order statistics x(k) and x(n+1-k) for the largest k with P(Binomial(n, 1/2) < k) <=
    2.5%; None below 6 values, where no such k exists. It assumes nothing of the times'
    distribution (launch times are skewed, with outliers), and for 7 values it is their range."""
    n = len(times_ms)
    k = _median_rank(n)
    if k == 0:
        return None
    t = sorted(times_ms)
    return t[k - 1], t[n - k]


@functools.lru_cache(maxsize=None)
def _median_rank(n: int) -> int:
    """The largest k with P(Binomial(n, 1/2) < k) <= 1/40, in integers (2^-n underflows a
    float from n = 1075 on): the count of binomial terms whose running sum of C(n, i) stays
    at most 2^n / 40."""
    k, term, below = 0, 1, 0
    while k < n // 2:
        below += term  # the sum of C(n, i) for i <= k
        if 40 * below > 1 << n:
            break
        term = term * (n - k) // (k + 1)
        k += 1
    return k


def precise_enough(times_ms: Sequence[float], stop_ci: float) -> bool:
    """Whether the median of ``times_ms`` is known well enough to stop timing: its 95%
    interval is at most ``stop_ci`` of it wide (never with stop_ci <= 0)."""
    ci = median_interval(times_ms) if stop_ci > 0 else None
    if ci is None:
        return False
    median = float(np.median(times_ms))
    return median > 0 and (ci[1] - ci[0]) <= stop_ci * median


def summarise(times_ms: Sequence[float]) -> dict[str, float]:
    """Median with p20 / p80 of a list of timings."""
    t = np.asarray(times_ms, dtype=np.float64)
    return {
        "ms": float(np.median(t)), "ms_p20": float(np.percentile(t, 20)), "ms_p80": float(np.percentile(t, 80)),
        "reps": float(len(t)),
    }
