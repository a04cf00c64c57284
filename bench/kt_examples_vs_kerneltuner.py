"""Kernel Tuner's own CUDA examples, convolution.cu and pnpoly.cu, unmodified, tuned by
Kernel Tuner 1.5 and by ksweep's kernel mode, both building with NVRTC (GPU machine; issue 17).

    bench/fetch_kt_examples.sh KERNEL_TUNER_CHECKOUT kt-examples     # the two .cu files
    python bench/kt_examples_vs_kerneltuner.py --kt-examples kt-examples --smoke [--out DIR]
    python bench/kt_examples_vs_kerneltuner.py --kt-examples kt-examples [--reps 3] [--out DIR]
    python bench/kt_examples_vs_kerneltuner.py --kt-examples kt-examples --examples pnpoly,matmul --contenders --reps 10

Needs Kernel Tuner 1.5, CuPy and cuda-python (ksweep's gpu extra) on a machine with an
NVIDIA GPU. The sources are Kernel Tuner's and are not part of this repository:
``--kt-examples DIR`` names a folder holding them as Kernel Tuner ships them
(bench/fetch_kt_examples.sh copies them out of a Kernel Tuner git checkout); their
SHA-256 digests go into the JSON.

One calling code for both tools. For each example the script builds the keyword arguments
of ``tune_kernel`` once (the kernel source as a string, problem size, arguments,
tune_params, grid divisors, restrictions, ``cmem_args``, ``answer``, ``atol``,
``lang="cupy"``) and hands them, unchanged, to ``kernel_tuner.tune_kernel`` and to
``ksweep.kt.tune_kernel``. Kernel Tuner's ``lang="cupy"`` backend compiles with NVRTC
(``cupy.RawModule``, which adds ``-ftz=true``; Kernel Tuner adds ``--std=c++11``), and
``ksweep.kt.tune_kernel(lang="cupy")`` builds with NVRTC and the same options, so both time
the same binary (bench/pnpoly_compilers.py shows the options matter: without ``-ftz=true``
seven of pnpoly's configs ran 0.69 to 1.12 times as long as CuPy's build of them). Kernel Tuner's
``lang="nvcuda"`` compiles with NVRTC too, but the matmul protocol measured CuPy, whose
cache CUPY_CACHE_DIR empties. ksweep builds for sm_90a (its default architecture), CuPy for
the GPU's: the same code for these kernels on an H100.

The protocol (bench/compare_protocol.py), for each example: REPS rounds, the tools' order
alternating (Kernel Tuner first in odd rounds), every sweep in a process of its own from
empty caches (Kernel Tuner: a fresh CUPY_CACHE_DIR; ksweep: a fresh folder as its working
directory, so its workspace, database and build cache are new). Each sweep's wall time is
taken twice: the whole process (interpreter start, imports and loading the inputs
included; the speed-up is the ratio of these) and the ``tune_kernel`` call alone. Then
every config that was best in some sweep is measured again with one timer, ksweep's (a
sweep of that config alone, with a worker of its own, ``--remeasure`` times each, in
rotated order as ksweep's confirmation does): two picks are "within noise" when the 95%
intervals of their re-measured times overlap (ksweep/verify/confirm.py). The inputs are drawn
once (seed 0) and saved; both tools of every round read the same files.

Convolution (``convolution_kernel``, 4096 x 4096 image, the sizes are fixed by the
source). Kernel Tuner's convolution.py tunes 16 filter heights x 16 widths x 8 x 6 x 8 x 8
x 2 x 2 (over 3 million configs); its convolution_correct.py fixes the filter at 17 x 17 and
checks an answer (1,080 configs after its restriction). Both are far beyond one brute-force
call: Kernel Tuner compiles serially, and one NVRTC build of this kernel is slow, its 17 x
17 loops fully unrolled for every output of a thread's tile (on a 2-core development
machine, two builds at a time: 1.3 s for a 1 x 1 tile, 1.6-3.5 s for 1 x 2, 2 x 1, 2 x 2
and 1 x 4, 5.5-11 s for 2 x 4 and 4 x 2, 24 s for 4 x 4, which spills at 255 registers).
The sub-space tuned here, a subset of convolution_correct.py's: filter 17 x 17;
block_size_x 16, 32, 64; block_size_y 4, 8; tile_size_x 1, 2; tile_size_y 1, 2, 4;
use_padding 0, 1 with the examples' restriction (padding only where block_size_x is not a
multiple of 32: block_size_x 16 keeps both); read_only 1. That is 48 configs, 4 of which
(512 threads of 155 or more registers) fail to launch in both tools. Why these: block
sizes around a warp and tiles taller than wide are where the fastest configs of recorded
convolution data lie (the A100 file of the shared datasets, a later version of this kernel
with a 15 x 15 filter: its 12 best configs have tile_size_x <= 2, tile_size_y 2 to 4 and
read_only 1); tiles of at most 8 outputs keep
each build within seconds; read_only is fixed, not toggled, to halve the space. Every
config's static shared memory is at most 27 KB, under the 48 KB a block gets without
opting in, so no config depends on how CUDA 13's compilers (which no longer refuse more)
and the driver treat a larger static array. The answer is the 17 x 17 correlation
computed by FFT in float64 (numpy), checked with atol 1e-3 (and rtol 1e-5, both tools'
rule): a float32 sum of 289 products of N(0, 1) values is off by ~1e-5. Target: ksweep >= 5x
faster end to end, the same best config (or two within noise).

Pnpoly (``cn_pnpoly``, 20 million points, a 600-vertex polygon in constant memory as
``d_vertices``, its edges' slopes as ``d_slopes``, as pnpoly_host.cu computes them). Kernel
Tuner's pnpoly.py tunes host code (lang="C") over 31 x 11 x 4 x 2 x 2 = 5,456 configs;
here the kernel itself is tuned, over block_size_x 128, 256; tile_size 8, 20;
between_method 0-3; use_precomputed_slopes 0, 1; use_method 0, 1: 64 configs, every code
path of the kernel (16) at two block sizes and two tiles (the pnpoly file of the shared
datasets, recorded on an RTX 3090: its 12 fastest configs all have the largest tile, 20,
and differ only in block size, by at most 1.2%). The example checks nothing; here both tools check the bitmap against an
answer, since Kernel Tuner stops the whole sweep at a config whose output differs: the
points are drawn as in the example (normal, around the unit circle's polygon), less those
within 1e-3 of the band between the largest circle inside the polygon and the unit circle
(0.2% of them) and those whose y equals a vertex's y (where the four between_methods count
a crossing differently), so that every code path gives the exact answer, "inside the
band's inner circle". Target: the same best config.

Time measured on an H100 machine (16 cores; docs/benchmarks.md), 3 rounds: convolution 444 s
(a Kernel Tuner sweep 113-151 s, ksweep's 20-25 s), pnpoly 213 s (49-53 s and 11-12 s), the
re-measurements 15-20 s each; both in one call take about 11 minutes, so give one example
per call where a call is limited to 10. ``--smoke``: 6 convolution and 8 pnpoly configs,
one round, two re-measurements.

``--contenders``: each example's space cut to the two configs whole sweeps' picks parted on
(convolution: use_padding 0 and 1 at block 16 x 4, tiles 2 x 2; pnpoly: block_size_x 128 and
256 at tile 8, between_method 0, no precomputed slopes, use_method 1; matmul: tile_size_x 4 and
8 at block 32 x 4, tile_size_y 8), so that many rounds show how often each tool picks which.
``--examples matmul`` adds the project's own matmul (examples/kernel_mode/matmul.cu, the space
of bench/kernel_vs_kerneltuner.py) through this script's calling code: both tools'
``tune_kernel`` with the same keywords. The default examples are Kernel Tuner's two.

Written to --out: kt_examples_vs_kerneltuner.json (everything: every sweep's facts, its
per-config times, versions) and kt_examples_vs_kerneltuner.md (the tables printed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compare_protocol import (  # noqa: E402
    TOOLS, ChildFailed, cupy_cache_env, fresh_folder, round_order, run_child, spread,
)
from kernel_vs_kerneltuner import RESTRICTIONS as MATMUL_RESTRICTIONS, TUNE as MATMUL_TUNE, matmul_inputs  # noqa: E402

SEED = 0
TARGET_SPEEDUP = {"convolution": 5.0}


# -- the examples: data and calling code --------------------------------------------------


def correlate_valid(image: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """out[y, x] = sum over i, j of image[y + i, x + j] * weights[i, j] (the valid part), in
    float64 by FFT: what convolution_kernel computes, to within float32 rounding."""
    fh, fw = weights.shape
    h, w = image.shape[0] - fh + 1, image.shape[1] - fw + 1
    shape = image.shape
    spectrum = np.fft.rfft2(image.astype(np.float64)) * np.conj(np.fft.rfft2(weights.astype(np.float64), s=shape))
    return np.fft.irfft2(spectrum, s=shape)[:h, :w]


def convolution_data(seed: int = SEED, image: tuple[int, int] = (4096, 4096),
                     filter_size: tuple[int, int] = (17, 17)) -> dict[str, np.ndarray]:
    """The inputs of convolution_kernel as Kernel Tuner's convolution examples make them (an
    input image with the filter's border, normal values; the filter's weights, passed both
    as an argument and as d_filter), and the answer. ``image`` is (height, width)."""
    rng = np.random.default_rng(seed)
    (h, w), (fh, fw) = image, filter_size
    border_h, border_w = fh // 2 * 2, fw // 2 * 2
    inp = rng.standard_normal((h + border_h) * (w + border_w)).astype(np.float32)
    weights = rng.standard_normal(fh * fw).astype(np.float32)
    answer = correlate_valid(inp.reshape(h + border_h, w + border_w), weights.reshape(fh, fw))[:h, :w]
    return {"output": np.zeros(h * w, np.float32), "input": inp, "filter": weights,
            "answer": answer.astype(np.float32).ravel(), "problem_size": np.array([w, h])}


def polygon_bounds(vertices: np.ndarray) -> tuple[float, float]:
    """Radii of the largest circle about the origin inside a convex polygon around it (the
    nearest edge line) and of the smallest holding it (the farthest vertex), in float64."""
    a = vertices.astype(np.float64)
    b = np.roll(a, -1, axis=0)
    cross = np.abs(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])
    return float(np.min(cross / np.hypot(*(b - a).T))), float(np.max(np.hypot(*a.T)))


def pnpoly_data(seed: int = SEED, n: int = 20_000_000, vertices: int = 600,
                margin: float = 1e-3) -> dict[str, np.ndarray]:
    """The inputs of cn_pnpoly as Kernel Tuner's pnpoly example makes them (a polygon of
    ``vertices`` points at sorted random angles on the unit circle, ``n`` normal points),
    less the points whose answer depends on rounding or on the between_method (see the
    module's docstring), the slopes pnpoly_host.cu precomputes, and the answer."""
    rng = np.random.default_rng(seed)
    angles = np.sort(rng.random(vertices) * 2.0 * np.pi)[::-1]
    xy = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    inner, outer = polygon_bounds(xy)
    previous = np.roll(xy, 1, axis=0)  # vertex j's edge runs to vertex j - 1 (the last for j = 0)
    slopes = ((previous[:, 0] - xy[:, 0]) / (previous[:, 1] - xy[:, 1])).astype(np.float32)
    vertex_y = np.sort(xy[:, 1])
    kept, count = [], 0
    while count < n:
        p = rng.standard_normal((max(n - count, 1 << 16) + (n - count) // 100, 2)).astype(np.float32)
        r = np.hypot(p[:, 0].astype(np.float64), p[:, 1].astype(np.float64))
        at_vertex_y = vertex_y[np.minimum(np.searchsorted(vertex_y, p[:, 1]), vertices - 1)] == p[:, 1]
        clear = ((r < inner - margin) | (r > outer + margin)) & ~at_vertex_y
        kept.append(p[clear])
        count += int(clear.sum())
    points = np.concatenate(kept)[:n]
    r = np.hypot(points[:, 0].astype(np.float64), points[:, 1].astype(np.float64))
    return {"bitmap": np.zeros(n, np.int32), "points": points.ravel(), "vertices": xy.ravel(), "slopes": slopes,
            "answer": (r < inner).astype(np.int32), "n": np.array(n, np.int32)}


def matmul_data(seed: int = SEED, n: int = 4096) -> dict[str, np.ndarray]:
    """The inputs of the project's own matmul_kernel (examples/kernel_mode/matmul.cu) as
    bench/kernel_vs_kerneltuner.py makes them: uniform in [-1, 1) as float32, and C = A B."""
    a, b = matmul_inputs(seed, n)
    return {"c": np.zeros((n, n), np.float32), "a": a, "b": b, "answer": a @ b}


def matmul_call(data: Mapping[str, np.ndarray], tune_params: Mapping[str, list]) -> dict:
    n = data["a"].shape[0]
    return {
        "kernel_name": "matmul_kernel", "problem_size": (n, n), "arguments": [data["c"], data["a"], data["b"]],
        "tune_params": {**tune_params, "WIDTH": [n]}, "grid_div_x": ["block_size_x*tile_size_x"],
        "grid_div_y": ["block_size_y*tile_size_y"],
        "restrictions": list(MATMUL_RESTRICTIONS),
        "answer": [data["answer"], None, None], "atol": 1e-2,
    }


def convolution_call(data: Mapping[str, np.ndarray], tune_params: Mapping[str, list]) -> dict:
    return {
        "kernel_name": "convolution_kernel", "problem_size": tuple(int(s) for s in data["problem_size"]),
        "arguments": [data["output"], data["input"], data["filter"]], "tune_params": dict(tune_params),
        "grid_div_x": ["block_size_x", "tile_size_x"], "grid_div_y": ["block_size_y", "tile_size_y"],
        "restrictions": ["use_padding==0 or (block_size_x % 32 != 0)"], "cmem_args": {"d_filter": data["filter"]},
        "answer": [data["answer"], None, None], "atol": 1e-3,
    }


def pnpoly_call(data: Mapping[str, np.ndarray], tune_params: Mapping[str, list]) -> dict:
    n = np.int32(data["n"])
    return {
        "kernel_name": "cn_pnpoly", "problem_size": (n, 1), "arguments": [data["bitmap"], data["points"], n],
        "tune_params": dict(tune_params), "grid_div_x": ["block_size_x", "tile_size"],
        "cmem_args": {"d_vertices": data["vertices"], "d_slopes": data["slopes"]},
        "answer": [data["answer"], None, None],
    }


@dataclass(frozen=True)
class Example:
    name: str
    source: str  # the file's name in --kt-examples
    tune_params: dict
    smoke_params: dict
    make_data: Callable[..., dict]
    make_call: Callable[[Mapping[str, np.ndarray], Mapping[str, list]], dict]
    # the configs whole sweeps' picks parted on, alone (--contenders): how often each tool
    # picks which, when nothing else is in the space
    contenders: dict = field(default_factory=dict)
    in_repo: str | None = None  # the source's path in this repository (else it is in --kt-examples)

    def params(self, space: str = "full") -> dict:
        """The space tuned: "full", "smoke" or "contenders"."""
        return {"full": self.tune_params, "smoke": self.smoke_params, "contenders": self.contenders}[space]

    def path(self, kt_examples: Path | None) -> Path:
        return ROOT / self.in_repo if self.in_repo else Path(kt_examples or ".") / self.source


EXAMPLES = {
    "convolution": Example(
        "convolution", "convolution.cu",
        tune_params={"filter_height": [17], "filter_width": [17], "block_size_x": [16, 32, 64],
                     "block_size_y": [4, 8], "tile_size_x": [1, 2], "tile_size_y": [1, 2, 4],
                     "use_padding": [0, 1], "read_only": [1]},
        smoke_params={"filter_height": [17], "filter_width": [17], "block_size_x": [16, 32], "block_size_y": [4],
                      "tile_size_x": [1], "tile_size_y": [1, 2], "use_padding": [0, 1], "read_only": [1]},
        make_data=convolution_data, make_call=convolution_call,
        contenders={"filter_height": [17], "filter_width": [17], "block_size_x": [16], "block_size_y": [4],
                    "tile_size_x": [2], "tile_size_y": [2], "use_padding": [0, 1], "read_only": [1]}),
    "pnpoly": Example(
        "pnpoly", "pnpoly.cu",
        tune_params={"block_size_x": [128, 256], "tile_size": [8, 20], "between_method": [0, 1, 2, 3],
                     "use_precomputed_slopes": [0, 1], "use_method": [0, 1]},
        smoke_params={"block_size_x": [128, 256], "tile_size": [8], "between_method": [0, 2],
                      "use_precomputed_slopes": [0, 1], "use_method": [0]},
        make_data=pnpoly_data, make_call=pnpoly_call,
        contenders={"block_size_x": [128, 256], "tile_size": [8], "between_method": [0],
                    "use_precomputed_slopes": [0], "use_method": [1]}),
    # the project's matmul (bench/kernel_vs_kerneltuner.py's space), through the same calling code
    "matmul": Example(
        "matmul", "matmul.cu",
        tune_params=MATMUL_TUNE,
        smoke_params={"block_size_x": [16, 32], "block_size_y": [4, 8], "tile_size_x": [1, 2], "tile_size_y": [4]},
        make_data=matmul_data, make_call=matmul_call,
        contenders={"block_size_x": [32], "block_size_y": [4], "tile_size_x": [4, 8], "tile_size_y": [8]},
        in_repo="examples/kernel_mode/matmul.cu"),
}
DEFAULT_EXAMPLES = ("convolution", "pnpoly")  # Kernel Tuner's own

# ksweep.kt.tune_kernel's keywords beside the shared calling code: none (lang="cupy" makes
# it build as Kernel Tuner's CuPy backend does); kept so that a trial can add some
KSWEEP_EXTRA: dict = {}
COMMON = {"lang": "cupy", "verbose": False, "quiet": True}


def tune_call(example: Example, data: Mapping[str, np.ndarray], kernel_source: Any, tune_params: Mapping) -> dict:
    """The keyword arguments both tools' ``tune_kernel`` receive."""
    return {**example.make_call(data, tune_params), "kernel_source": kernel_source, **COMMON}


# -- one sweep (in its own process) ------------------------------------------------------


def config_key(config: Mapping[str, Any], names: Sequence[str]) -> str:
    return json.dumps({k: config[k] for k in names})


def sweep_facts(results: Sequence[Mapping], names: Sequence[str], picked: Mapping | None = None) -> dict:
    """What a sweep found, from ``tune_kernel``'s results (either tool's): configs evaluated,
    how many have a time, failures by kind, each config's time (ms), the best: the tool's own
    pick (``env["best_config"]``: ksweep's is its confirmation's) when given, else the fastest."""
    times, failures = {}, {}
    for r in results:
        t = r.get("time")
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
            times[config_key(r, names)] = float(t)
        else:
            kind = type(r.get("__error__", t)).__name__
            failures[kind] = failures.get(kind, 0) + 1
    best = min(times, key=times.get) if times else None
    if picked is not None and config_key(picked, names) in times:
        best = config_key(picked, names)
    return {"configs": len(results), "valid": len(times), "failures": failures, "times_ms": times,
            "best": json.loads(best) if best else None, "best_ms": times[best] if best else None}


def tool_versions(tool: str) -> dict:
    """The tool's and its NVRTC's versions (after the sweep: not timed; never fails it)."""
    try:
        if tool == "kt":
            import cupy
            import kernel_tuner

            major, minor = cupy.cuda.nvrtc.getVersion()
            return {"kernel_tuner": kernel_tuner.__version__, "cupy": cupy.__version__, "nvrtc": f"{major}.{minor}"}
        from ksweep.build.nvrtc import version

        return {"ksweep_nvrtc": version()}
    except Exception as exc:  # a fact missing from the report, not a failed sweep
        return {"error": f"{type(exc).__name__}: {exc}"}


def ksweep_timeline(db: str, epoch: float) -> dict:
    """Where a ksweep call's time went, from its database: when results were stored (seconds
    after the call began), and the builds' and runs' seconds (summed over configs that ran
    side by side, so not parts of the wall time)."""
    from ksweep.store.sqlite import Store

    with Store(db) as store:
        rows = store.results()
    done = sorted(r.finished - epoch for r in rows if r.finished)
    builds = [r.build_seconds for r in rows if r.build_seconds and not r.cached]
    runs = [r.run_seconds for r in rows if r.run_seconds]
    return {"results": len(rows), "first_stored_s": done[0] if done else None,
            "last_stored_s": done[-1] if done else None,
            "build_s": {"sum": sum(builds), "median": statistics.median(builds) if builds else None,
                        "max": max(builds, default=None)},
            "run_s": {"sum": sum(runs), "median": statistics.median(runs) if runs else None,
                      "max": max(runs, default=None)},
            "phases": sorted({str(r.phase) for r in rows})}


def child(tool: str, example: Example, data_file: Path, source: Path, result: Path, space: str) -> int:
    """One sweep of one tool, its facts written to ``result`` (run in a process of its own)."""
    t0 = time.perf_counter()
    with np.load(data_file) as npz:
        data = {k: npz[k] for k in npz.files}
    if tool == "kt":
        from kernel_tuner import tune_kernel
        extra = {}
    else:
        from ksweep.kt import tune_kernel
        extra = KSWEEP_EXTRA
    call = tune_call(example, data, source.read_text(), example.params(space))
    start, epoch = time.perf_counter(), time.time()
    results, env = tune_kernel(**call, **extra)
    wall = time.perf_counter() - start
    facts = sweep_facts(results, list(example.tune_params), env.get("best_config"))
    facts.update(tool=tool, call_wall_s=wall, before_call_s=start - t0, device=env.get("device_name"),
                 compiler=env.get("compiler"), versions=tool_versions(tool))
    if tool == "ks":
        facts["timeline"] = ksweep_timeline(env["ksweep_db"], epoch)
    result.write_text(json.dumps(facts, default=str))
    return 0


# -- the protocol ----------------------------------------------------------------------------


def sweep_in_process(tool: str, example: Example, data_file: Path, source: Path, work: Path, tag: str,
                     space: str) -> dict:
    folder = fresh_folder(work / f"{tool}-{tag}")
    result = folder / "facts.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", tool, "--example", example.name,
            "--data", str(data_file), "--source", str(source), "--result", str(result), "--space", space]
    env = cupy_cache_env(work, tag) if tool == "kt" else None
    return run_child(argv, result, env=env, cwd=folder, what=f"{TOOLS[tool]} on {example.name}")


def remeasure(example: Example, data: Mapping[str, np.ndarray], source: Path, configs: Sequence[dict],
              folder: Path, rounds: int) -> dict:
    """Each config measured ``rounds`` times by ksweep, each time a sweep of its own (a fresh
    worker), the configs in rotated order; returns config key -> the times (ms), the round of
    each time, and failures."""
    from ksweep.verify.confirm import order
    from ksweep.kt import tune_kernel

    names = list(example.tune_params)
    keys = [config_key(c, names) for c in configs]
    local = folder / source.name  # its workspace beside it: arrays saved once, one build cache
    local.write_bytes(source.read_bytes())
    values: dict[str, list[float]] = {k: [] for k in keys}
    at: dict[str, list[int]] = {k: [] for k in keys}
    failures: dict[str, int] = {k: 0 for k in keys}
    for q in range(rounds):
        for key in order(keys, q):
            one = {k: [v] for k, v in json.loads(key).items()}
            results, _ = tune_kernel(**tune_call(example, data, local, one), **KSWEEP_EXTRA,
                                     cache=folder / f"config{keys.index(key)}-round{q}.json")
            t = results[0].get("time") if results else None
            if isinstance(t, (int, float)):
                values[key].append(float(t))
                at[key].append(q)
            else:
                failures[key] += 1
    return {"values_ms": values, "rounds": at, "failures": failures}


def noise_verdicts(measured: dict) -> dict:
    """BEST / TIE / '' per re-measured config (compared round by round, as ksweep's
    confirmation does, when the rounds were recorded), with its median and 95% interval."""
    from ksweep.verify.confirm import verdicts

    out = {}
    for key, v in verdicts(measured["values_ms"], measured["failures"], "min", measured.get("rounds")).items():
        iv = v.interval
        out[key] = {"median_ms": iv.median, "lo_ms": iv.lo, "hi_ms": iv.hi, "n": iv.n, "mark": v.mark,
                    "failed": v.failed}
    return out


def compare_picks(kt_best: dict | None, ks_best: dict | None, verdicts: Mapping[str, dict],
                  names: Sequence[str]) -> str:
    """'same', 'within noise' or 'apart (+x% on ksweep's timer)' for one round's two bests:
    within noise when the re-measurement marks both BEST or TIE (its round-by-round
    verdict), apart when it marks one of them so and the other behind; when it marks both
    behind a third config, by the overlap of their own intervals."""
    if kt_best is None or ks_best is None:
        return "no best"
    a, b = config_key(kt_best, names), config_key(ks_best, names)
    if a == b:
        return "same"
    va, vb = verdicts.get(a), verdicts.get(b)
    if not va or not vb or not va["n"] or not vb["n"]:
        return "not re-measured"
    marks = {va.get("mark", ""), vb.get("mark", "")}
    leading = marks & {"BEST", "TIE"}
    if marks <= {"BEST", "TIE"} or (
            not leading and va["lo_ms"] <= vb["hi_ms"] and vb["lo_ms"] <= va["hi_ms"]):
        return "within noise"
    slower, faster = ("Kernel Tuner's", "ksweep's") if va["median_ms"] > vb["median_ms"] else ("ksweep's",
                                                                                                  "Kernel Tuner's")
    ratio = max(va["median_ms"], vb["median_ms"]) / min(va["median_ms"], vb["median_ms"])
    return f"apart: {slower} pick {100 * (ratio - 1):.1f}% slower than {faster}"


def timer_agreement(kt: dict, ks: dict) -> dict | None:
    """Kernel Tuner's time / ksweep's time of each config both timed (median, range)."""
    common = sorted(set(kt["times_ms"]) & set(ks["times_ms"]))
    ratios = [kt["times_ms"][k] / ks["times_ms"][k] for k in common if ks["times_ms"][k] > 0]
    return {**spread(ratios), "configs": len(ratios)} if ratios else None


def own_time_of_other_pick(own: dict, other: dict, names: Sequence[str]) -> float | None:
    """The sweep's own time of the other tool's pick over its own best (1.0: the same config)."""
    if own["best"] is None or other["best"] is None:
        return None
    t = own["times_ms"].get(config_key(other["best"], names))
    return t / own["best_ms"] if t else None


def run_example(example: Example, source: Path, work: Path, reps: int, remeasure_rounds: int, space: str) -> dict:
    folder = fresh_folder(work / example.name)
    t0 = time.perf_counter()
    data = example.make_data()
    data_file = folder / "data.npz"
    np.savez(data_file, **data)
    prepared = time.perf_counter() - t0
    print(f"{example.name}: inputs and answer ready in {prepared:.1f} s", flush=True)
    names = list(example.tune_params)
    rounds, errors = [], []
    for i in range(reps):
        got = {"order": list(round_order(i))}
        for tool in round_order(i):
            try:
                got[tool] = sweep_in_process(tool, example, data_file, source, folder, f"{i + 1}", space)
            except ChildFailed as exc:
                got[tool] = None
                errors.append(f"round {i + 1} {TOOLS[tool]}: {exc}")
                print(f"{example.name} round {i + 1} {TOOLS[tool]}: FAILED\n{exc}", flush=True)
                continue
            w = got[tool]
            print(f"{example.name} round {i + 1} {TOOLS[tool]:12}: {w['process_wall_s']:.1f} s "
                  f"(call {w['call_wall_s']:.1f} s), {w['configs']} configs, {w['valid']} timed, "
                  f"best {w['best']} {w['best_ms']} ms", flush=True)
            if w.get("timeline"):
                print(f"  ksweep's timeline: {json.dumps(w['timeline'])}", flush=True)
        if got.get("kt") and got.get("ks"):
            got["speedup"] = got["kt"]["process_wall_s"] / got["ks"]["process_wall_s"]
            got["speedup_call"] = got["kt"]["call_wall_s"] / got["ks"]["call_wall_s"]
            got["same_space"] = got["kt"]["configs"] == got["ks"]["configs"]
            got["timers"] = timer_agreement(got["kt"], got["ks"])
            got["ks_time_of_kt_pick"] = own_time_of_other_pick(got["ks"], got["kt"], names)
            got["kt_time_of_ks_pick"] = own_time_of_other_pick(got["kt"], got["ks"], names)
        rounds.append(got)
    picks = []
    for r in rounds:
        for tool in ("kt", "ks"):
            if r.get(tool) and r[tool]["best"] is not None and r[tool]["best"] not in picks:
                picks.append(r[tool]["best"])
    measured, verdicts = None, {}
    if picks and remeasure_rounds > 0:
        t1 = time.perf_counter()
        try:
            measured = remeasure(example, data, source, picks, fresh_folder(folder / "remeasure"), remeasure_rounds)
            verdicts = noise_verdicts(measured)
        except Exception as exc:  # the sweeps' facts are still worth writing
            errors.append(f"re-measuring: {type(exc).__name__}: {exc}")
            print(f"{example.name} re-measuring FAILED: {exc}", flush=True)
        print(f"{example.name}: {len(picks)} picks re-measured in {time.perf_counter() - t1:.1f} s", flush=True)
    for r in rounds:
        if r.get("kt") and r.get("ks"):
            r["picks"] = compare_picks(r["kt"]["best"], r["ks"]["best"], verdicts, names)
    return {"example": example.name, "source": source.name, "tune_params": example.params(space), "space": space,
            "inputs_s": prepared, "rounds": rounds, "remeasured": measured, "verdicts": verdicts,
            "summary": summarize(example.name, rounds), "errors": errors}


def summarize(name: str, rounds: Sequence[dict]) -> dict:
    complete = [r for r in rounds if r.get("kt") and r.get("ks")]
    if not complete:
        return {"complete_rounds": 0}
    out = {"complete_rounds": len(complete),
           "kernel_tuner_wall_s": spread([r["kt"]["process_wall_s"] for r in complete]),
           "ksweep_wall_s": spread([r["ks"]["process_wall_s"] for r in complete]),
           "speedup": spread([r["speedup"] for r in complete]),
           "same_best_every_round": all(r["picks"] == "same" for r in complete),
           "same_or_within_noise_every_round": all(r["picks"] in ("same", "within noise") for r in complete),
           "same_best_rounds": sum(r["picks"] == "same" for r in complete),
           "picked": {tool: [r[tool]["best"] for r in complete] for tool in ("kt", "ks")}}
    target = TARGET_SPEEDUP.get(name)
    if target is not None:
        out["speedup_target"] = target
        out["speedup_target_met_every_round"] = out["speedup"]["min"] >= target
    return out


# -- the tables --------------------------------------------------------------------------------


def short(config: Mapping[str, Any] | None, tune_params: Mapping[str, list]) -> str:
    """A config by the parameters that vary in the space (the fixed ones say nothing)."""
    if config is None:
        return "-"
    return " ".join(f"{k}={config[k]}" for k in tune_params if len(tune_params[k]) > 1) or "(the one config)"


def markdown(report: dict) -> str:
    lines = []
    for ex in report["examples"]:
        tp = ex["tune_params"]
        lines += [f"### {ex['example']} ({ex['source']})", "",
                  "| round | first | Kernel Tuner | ksweep | speed-up | Kernel Tuner's best | ksweep's best | picks |",
                  "|---|---|---|---|---|---|---|---|"]
        for i, r in enumerate(ex["rounds"], 1):
            cells = []
            for tool in ("kt", "ks"):
                w = r.get(tool)
                cells.append(f"{w['process_wall_s']:.1f} s (call {w['call_wall_s']:.1f} s; {w['valid']}/{w['configs']} "
                             f"timed)" if w else "failed")
            best = [f"{short(r[t]['best'], tp)} ({r[t]['best_ms']:.4f} ms)" if r.get(t) and r[t]["best"] else "-"
                    for t in ("kt", "ks")]
            speed = f"{r['speedup']:.2f}x" if "speedup" in r else "-"
            lines.append(f"| {i} | {TOOLS[r['order'][0]]} | {cells[0]} | {cells[1]} | {speed} | {best[0]} | {best[1]} "
                         f"| {r.get('picks', '-')} |")
        s = ex["summary"]
        lines.append("")
        if s.get("complete_rounds"):
            k, q, x = s["kernel_tuner_wall_s"], s["ksweep_wall_s"], s["speedup"]
            lines.append(f"Kernel Tuner median {k['median']:.1f} s (range {k['min']:.1f}-{k['max']:.1f}); ksweep median "
                         f"{q['median']:.1f} s (range {q['min']:.1f}-{q['max']:.1f}); speed-up median {x['median']:.2f}x "
                         f"(range {x['min']:.2f}-{x['max']:.2f})"
                         + (f", target >= {s['speedup_target']:g}x met in every round: {s['speedup_target_met_every_round']}"
                            if "speedup_target" in s else "")
                         + f"; same best config in every round: {s['same_best_every_round']}; "
                           f"same or within noise: {s['same_or_within_noise_every_round']}.")
            counts = []
            for tool in ("kt", "ks"):
                tally: dict[str, int] = {}
                for best in s.get("picked", {}).get(tool, []):
                    tally[short(best, tp)] = tally.get(short(best, tp), 0) + 1
                counts.append(f"{TOOLS[tool]} " + ", ".join(f"{c} {n}x" for c, n in sorted(tally.items())))
            lines.append(f"Picks over {s['complete_rounds']} rounds: {'; '.join(counts)}; the same config in "
                         f"{s.get('same_best_rounds', 0)} of {s['complete_rounds']} rounds.")
            timers = [r["timers"] for r in ex["rounds"] if r.get("timers")]
            if timers:
                lines.append("Timers: Kernel Tuner's time / ksweep's of each config both timed, per round: "
                             + "; ".join(f"median {t['median']:.3f} (range {t['min']:.3f}-{t['max']:.3f}, "
                                         f"{t['configs']} configs)" for t in timers) + ".")
        if ex["verdicts"]:
            lines += ["", "| re-measured by ksweep | picked by | median ms | 95% interval | n | mark |", "|---|---|---|---|---|---|"]
            for key, v in sorted(ex["verdicts"].items(), key=lambda kv: kv[1]["median_ms"]):
                config = json.loads(key)
                by = sorted({f"{TOOLS[t]} r{i}" for i, r in enumerate(ex["rounds"], 1) for t in ("kt", "ks")
                             if r.get(t) and r[t]["best"] == config})
                if v["n"]:
                    cells = f"{v['median_ms']:.4f} | {v['lo_ms']:.4f}-{v['hi_ms']:.4f}"
                else:
                    cells = "- | -"
                mark = v["mark"] or (f"{v['failed']} runs failed" if v["failed"] else "-")
                lines.append(f"| {short(config, tp)} | {', '.join(by)} | {cells} | {v['n']} | {mark} |")
        for e in ex["errors"]:
            lines.append(f"\nERROR {e.splitlines()[0]}")
        lines.append("")
    return "\n".join(lines)


def source_facts(folder: Path) -> dict:
    facts = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
             for name in sorted({e.source for e in EXAMPLES.values() if not e.in_repo})
             if (folder / name).is_file()}
    if (folder / "SOURCE.txt").exists():
        facts["SOURCE.txt"] = (folder / "SOURCE.txt").read_text().strip()
    return facts


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kt-examples", type=Path, help="folder holding Kernel Tuner's convolution.cu and pnpoly.cu "
                                                    "(bench/fetch_kt_examples.sh)")
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench-out")))
    p.add_argument("--reps", type=int, default=None, help="rounds of the protocol (default 3; 1 with --smoke)")
    p.add_argument("--remeasure", type=int, default=None,
                   help="times each best config is measured again (default 3; 2 with --smoke; 0: not)")
    p.add_argument("--examples", default=",".join(DEFAULT_EXAMPLES),
                   help=f"which of {', '.join(EXAMPLES)}, comma-separated (default: {','.join(DEFAULT_EXAMPLES)})")
    p.add_argument("--smoke", action="store_true", help="a tiny sub-space of each example, one round")
    p.add_argument("--contenders", action="store_true",
                   help="only the configs whole sweeps' picks parted on (how often each tool picks which)")
    p.add_argument("--space", choices=("full", "smoke", "contenders"), default="full", help=argparse.SUPPRESS)
    p.add_argument("--child", choices=sorted(TOOLS), help=argparse.SUPPRESS)
    p.add_argument("--example", choices=sorted(EXAMPLES), help=argparse.SUPPRESS)
    p.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return args
    if args.kt_examples is None:
        p.error("--kt-examples DIR is required (bench/fetch_kt_examples.sh KERNEL_TUNER_CHECKOUT DIR makes one)")
    chosen = [e.strip() for e in args.examples.split(",") if e.strip()]
    unknown = [e for e in chosen if e not in EXAMPLES]
    if unknown or not chosen:
        p.error(f"--examples {args.examples}: choose from {', '.join(EXAMPLES)}")
    args.examples = chosen
    if args.smoke and args.contenders:
        p.error("--smoke and --contenders: choose one")
    args.space = "smoke" if args.smoke else "contenders" if args.contenders else "full"
    missing = [EXAMPLES[e].source for e in chosen if not EXAMPLES[e].path(args.kt_examples).is_file()]
    if missing:
        p.error(f"--kt-examples {args.kt_examples}: no {', '.join(missing)} (bench/fetch_kt_examples.sh copies them "
                "out of a Kernel Tuner checkout)")
    args.reps = args.reps if args.reps is not None else (1 if args.smoke else 3)
    args.remeasure = args.remeasure if args.remeasure is not None else (2 if args.smoke else 3)
    if args.reps < 1 or args.remeasure < 0:
        p.error("--reps must be at least 1 and --remeasure at least 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child(args.child, EXAMPLES[args.example], args.data, args.source, args.result, args.space)
    # every process below (the sweeps, ksweep's workers and NVRTC builds, which start in
    # folders of their own) imports the ksweep this script imports: this checkout's
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    out = args.out.resolve()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report = {"smoke": args.smoke, "space": args.space, "reps": args.reps, "remeasure": args.remeasure, "seed": SEED,
              "kt_examples": source_facts(args.kt_examples), "ksweep_extra": KSWEEP_EXTRA, "common": COMMON,
              "host": {"python": platform.python_version(), "numpy": np.__version__, "cores": os.cpu_count(),
                       **tool_versions("ks")},
              "examples": []}
    for name in args.examples:
        source = EXAMPLES[name].path(args.kt_examples).resolve()
        report["examples"].append(run_example(EXAMPLES[name], source, work, args.reps, args.remeasure, args.space))
        (out / "kt_examples_vs_kerneltuner.json").write_text(json.dumps(report, indent=2, default=str))
    report["total_wall_s"] = time.perf_counter() - started
    table = markdown(report)
    (out / "kt_examples_vs_kerneltuner.json").write_text(json.dumps(report, indent=2, default=str))
    (out / "kt_examples_vs_kerneltuner.md").write_text(table)
    print("\n" + table)
    print(f"total {report['total_wall_s']:.0f} s; written to {out}")
    return 1 if any(ex["errors"] for ex in report["examples"]) else 0


if __name__ == "__main__":
    sys.exit(main())
