"""Kernel arguments: made by the user's function from problem sizes and a seed; outputs
compared with a reference (pure, numpy)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import SpecError


def load_function(ref: str, root: Path | str, key: str = "kernel.args") -> Callable:
    """``file.py:function`` relative to root."""
    if ":" not in ref:
        raise SpecError(f"expected \"file.py:function\", got {ref!r}", key=key)
    file, name = ref.rsplit(":", 1)
    path = (Path(root) / file).resolve()
    if not path.is_file():
        raise SpecError(f"'{file}' does not exist", key=key)
    module_name = f"ksweep_user_{abs(hash(str(path)))}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[module_name] = module
    fn = getattr(module, name, None)
    if not callable(fn):
        raise SpecError(f"'{file}' has no function '{name}'", key=key)
    return fn


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


def compare(got: Sequence[np.ndarray], expected: Sequence[np.ndarray], atol: float, rtol: float) -> str | None:
    """None if every output matches, else why not (first mismatch, NaN = unwritten)."""
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
        g64, e64 = g.astype(np.float64), e.astype(np.float64)
        bad = ~np.isfinite(g64) & np.isfinite(e64)
        if bad.any():
            return f"output {i}: {int(bad.sum())} elements not written or not finite (first at {int(np.argmax(bad.ravel()))})"
        err = np.abs(g64 - e64)
        tol = atol + rtol * np.abs(e64)
        if (err > tol).any():
            j = int(np.argmax((err - tol).ravel()))
            return (f"output {i}: max abs error {float(err.max()):.3g} (element {j}: got {g64.ravel()[j]:.6g}, "
                    f"expected {e64.ravel()[j]:.6g}; atol {atol:g}, rtol {rtol:g})")
    return None


def summarise(times_ms: Sequence[float]) -> dict[str, float]:
    """Median with p20 / p80 of a list of timings."""
    t = np.asarray(times_ms, dtype=np.float64)
    return {
        "ms": float(np.median(t)), "ms_p20": float(np.percentile(t, 20)), "ms_p80": float(np.percentile(t, 80)),
        "reps": float(len(t)),
    }
