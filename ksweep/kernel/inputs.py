"""The inputs of a kernel-mode setup, made on the host before anything goes to the GPU
(``host_setup``: the worker runs it on a thread while CUDA starts): the argument sets
("time" with seed S, "check" with S+1, and "check2", the check set redrawn from another
distribution), each set's ``__constant__``/``__device__`` values, and the expected outputs
of the two check draws when a Python reference is given."""

from __future__ import annotations

import inspect
import math
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .args import load_function, make_args


@dataclass(frozen=True)
class HostSetup:
    """What a ``setup`` request makes on the host, before anything goes to the GPU: the input
    sets ("time", "check", "check2"), their cmem values, and the expected outputs of the two
    check draws (host arrays, or None where there is no Python reference)."""

    args: dict[str, list]
    cmem: dict[str, dict[str, np.ndarray]]
    expected: tuple[list | None, list | None]
    outputs: list[int]
    seconds: float = 0.0  # how long it took to make
    # seconds per part: "draws" (the argument function, twice), "second distribution" (on a
    # thread, beside the rest), "cmem", "reference" (of the two check draws)
    parts: dict[str, float] = field(default_factory=dict)


@contextmanager
def _timed(parts: dict[str, float], name: str):
    """Add the seconds the block takes to ``parts[name]``."""
    t = time.perf_counter()
    try:
        yield
    finally:
        parts[name] = parts.get(name, 0.0) + time.perf_counter() - t


def host_setup(req: dict) -> HostSetup:
    """The host's part of ``setup``: the argument and cmem functions, the second draw and the
    Python reference. Needs no GPU: the worker runs it while CUDA starts."""
    started = time.perf_counter()
    parts: dict[str, float] = {}
    sizes, seed = req.get("sizes", {}), int(req.get("seed", 0))
    outputs = list(req.get("outputs", []))
    with _timed(parts, "draws"):
        if req["args"].startswith("npz:"):  # arrays given directly: one set serves both
            fixed = load_npz_args(req["args"][4:])
            host = {"time": fixed, "check": [a.copy() if isinstance(a, np.ndarray) else a for a in fixed]}
        else:
            fn = load_function(req["args"], req["root"])
            host = {"time": make_args(fn, sizes, seed), "check": make_args(fn, sizes, seed + 1)}

    # a second check draw from another distribution (uniform over the inputs' own range), so a
    # kernel that is right for one draw only is caught; it needs a reference that can be
    # computed for it (a Python reference, or the reference config's own outputs). Ours, so
    # drawn on a thread while the user's functions run here (one at a time: they may share state)
    def second_draw() -> list:
        with _timed(parts, "second distribution"):
            return other_draw(host["check"], outputs, seed + 2)

    with ThreadPoolExecutor(1) as pool:
        check2 = pool.submit(second_draw)
        with _timed(parts, "cmem"):
            cmem = load_cmem(req.get("cmem"), req.get("root", "."), sizes, seed)
        expected: tuple[list | None, list | None] = (None, None)
        ref = None
        with _timed(parts, "reference"):
            if req.get("reference", "") and req["reference"].startswith("npz:"):
                with np.load(req["reference"][4:]) as data:
                    expected = ([data[f"arr_{i}"] for i in range(len(data.files))], None)
            elif req.get("reference"):
                ref = load_function(req["reference"], req["root"], key="kernel.reference")
                with_cmem = len(inspect.signature(ref).parameters) >= 3  # reference(args, sizes, cmem)

                def reference(k: str) -> list:
                    return [np.asarray(e) for e in ref(
                        [a.copy() if isinstance(a, np.ndarray) else a for a in host[k]], dict(sizes),
                        *([{n: v.copy() for n, v in cmem.get(k, {}).items()}] if with_cmem else []))]

                first = reference("check")
                if len(first) != len(outputs):
                    raise ValueError(f"the reference returned {len(first)} arrays for {len(outputs)} outputs")
        host["check2"] = check2.result()
        if ref is not None:
            with _timed(parts, "reference"):
                expected = (first, reference("check2"))
    return HostSetup(host, cmem, expected, outputs, time.perf_counter() - started, parts)


def other_draw(args: list, outputs, seed: int) -> list:
    """The arguments again, each floating-point input array redrawn uniformly over the
    original's own range (another distribution at the same scale: a tolerance chosen for
    the user's data still holds); outputs, integers and scalars are copied as they are."""
    rng = np.random.default_rng(seed)
    out = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and i not in outputs and np.issubdtype(a.dtype, np.floating) and a.size:
            lo, hi = float(a.min()), float(a.max())
            if not (math.isfinite(lo) and math.isfinite(hi)):  # the range of the finite values only
                finite = a[np.isfinite(a)]
                lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
            if hi <= lo:
                lo, hi = lo - 1.0, hi + 1.0
            # drawn in the array's own precision (float64 only for float64: float32 draws twice as fast)
            work = np.float64 if a.dtype == np.float64 else np.float32
            x = rng.random(a.shape, dtype=work)
            x *= work(hi - lo)
            x += work(lo)
            out.append(np.clip(x, lo, hi, out=x).astype(a.dtype, copy=False))
        else:
            out.append(a.copy() if isinstance(a, np.ndarray) else a)
    return out


def load_cmem(ref: str | None, root: str, sizes: dict, seed: int) -> dict[str, dict[str, np.ndarray]]:
    """Each input set's symbol values: from ``npz:PATH`` (the same for every set) or from
    ``function(sizes, seed)`` (seed S for timing, S+1 for checking, as the arguments; the
    second check draw reuses the check set's)."""
    if not ref:
        return {}
    if ref.startswith("npz:"):
        with np.load(ref[4:]) as data:
            fixed = {name: data[name] for name in data.files}
        return {"time": fixed, "check": fixed, "check2": fixed}
    fn = load_function(ref, root, key="kernel.cmem")
    made = {"time": cmem_values(fn(dict(sizes), seed)), "check": cmem_values(fn(dict(sizes), seed + 1))}
    made["check2"] = made["check"]
    return made


def cmem_values(values) -> dict[str, np.ndarray]:
    """A cmem function's answer as name -> contiguous array (numpy scalars become 0-d arrays)."""
    if not isinstance(values, dict):
        raise TypeError(f"the cmem function returned a {type(values).__name__}: return a dict of symbol name -> "
                        "numpy array")
    out = {}
    for name, v in values.items():
        if not isinstance(v, (np.ndarray, np.generic)):
            raise TypeError(f"cmem '{name}' is a {type(v).__name__}: use a numpy array or a numpy scalar")
        out[str(name)] = np.ascontiguousarray(v)
    return out


def load_npz_args(path: str) -> list:
    """Arguments saved by app.kernel.tune_kernel: arrays, and 0-d arrays that were scalars."""
    kinds = Path(path).with_suffix(".kinds").read_text().split()
    out = []
    with np.load(path) as data:
        for i, kind in enumerate(kinds):
            a = data[f"arr_{i}"]
            if a.ndim == 0:
                a = np.int32(a) if kind in ("int", "bool") else np.float32(a) if kind == "float" else a[()]
            out.append(a)
    return out


# what a floating-point input is multiplied by in the "large" set: large magnitudes that its type
# still holds after a few sums and products
_LARGE = {np.dtype(np.float16): 64.0}
_LARGE_DEFAULT = 1e4


def special_draw(args: list, outputs, kind: str) -> list:
    """The check set's arguments with each floating-point input (not an output) made special:
    "zeros", "ones", "large" (its values times 1e4, 64 for float16), "nan" or "inf" (every
    16th element NaN, or infinite of alternating sign, the others kept). Integers (indices,
    sizes), scalars and outputs stay as they are."""
    out = []
    for i, a in enumerate(args):
        if not (isinstance(a, np.ndarray) and i not in outputs and np.issubdtype(a.dtype, np.floating) and a.size):
            out.append(a.copy() if isinstance(a, np.ndarray) else a)
            continue
        if kind == "zeros":
            made = np.zeros_like(a)
        elif kind == "ones":
            made = np.ones_like(a)
        elif kind == "large":
            made = (a.astype(np.float64) * _LARGE.get(a.dtype, _LARGE_DEFAULT)).astype(a.dtype)
        elif kind in ("nan", "inf"):
            made = a.copy()
            flat = made.reshape(-1)
            if kind == "nan":
                flat[::16] = np.nan
            else:
                flat[::32] = np.inf
                flat[16::32] = -np.inf
        else:
            raise ValueError(f"unknown special input set {kind!r}")
        out.append(made)
    return out


def python_reference(req: dict):
    """A setup's Python reference as ``fn(args, cmem) -> [expected outputs]`` (each argument
    and value copied first), or None when the reference is not a Python function."""
    ref = req.get("reference")
    if not ref or ref.startswith("npz:"):
        return None
    fn = load_function(ref, req["root"], key="kernel.reference")
    with_cmem = len(inspect.signature(fn).parameters) >= 3
    sizes = dict(req.get("sizes", {}))

    def reference(args: list, cmem: dict) -> list:
        return [np.asarray(e) for e in fn([a.copy() if isinstance(a, np.ndarray) else a for a in args], dict(sizes),
                                          *([{n: v.copy() for n, v in cmem.items()}] if with_cmem else []))]

    return reference
