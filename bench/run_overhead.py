"""Where a program-mode run's time goes, and whether two GPUs slow each other's runs (issue 7).

Builds --configs configs of the SGEMM example (ksweep's random order, seed 0) once, then:

1. runs a bare CUDA program (context only) and one that also creates a cuBLAS handle,
   to price process start-up, the CUDA context and cuBLAS's loading;
2. runs every binary alone on GPU 0, one after the other: wall time per run as ksweep sees
   it, and the harness's own breakdown (its "harness seconds:" line on stderr);
3. when two GPUs are visible, runs the same binaries on GPU 0 and GPU 1 at the same time
   (two threads, each its own list): does a run get slower when another GPU is busy? And
   with process starts kept --gaps seconds apart (a start gate shared by both GPUs)?

    python bench/run_overhead.py [--source examples/sgemm/sgemm.cu] [--shape sq4096] [--configs 12] [--gaps 0,0.25]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "sgemm" / "sgemm.toml"
KERNEL_ONLY = "-DKSWEEP_KERNEL_ONLY"  # in the spec's per-config build (sgemm.toml)
DIMS = {"sq4096": ("4096", "4096", "4096"), "sq2048": ("2048", "2048", "2048"), "skinny": ("8192", "1024", "1024")}
ARCH = "-gencode=arch=compute_90a,code=sm_90a"

BARE = ("#include <cuda.h>\n#include <cuda_runtime.h>\n#include <chrono>\n#include <cstdio>\n"
        "static double since(std::chrono::steady_clock::time_point t) {"
        " return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); }\n"
        "int main() { auto t = std::chrono::steady_clock::now(); if (cuInit(0)) return 1; double init = since(t);"
        " if (cudaFree(0) != cudaSuccess) return 1;"
        " fprintf(stderr, \"harness seconds: cuInit %.3f, context %.3f\\n\", init, since(t) - init); return 0; }\n")
CUBLAS = ("#include <cublas_v2.h>\n#include <cuda_runtime.h>\n"
          "int main() { cublasHandle_t h; if (cudaFree(0) != cudaSuccess || cublasCreate(&h)) return 1;"
          " cublasDestroy(h); return 0; }\n")
PHASES = re.compile(r"harness seconds: (.*)")


def define_flags(n: int, shape: str) -> list[list[str]]:
    sys.path.insert(0, str(ROOT))
    from ksweep import Space, load_spec
    from ksweep.strategies import make_strategy
    from ksweep.sweep.jobs import JobFactory

    spec = load_spec(SPEC)
    space = Space.from_spec(spec, shape)
    factory = JobFactory(spec, spec.shape(shape), spec.variant(None), space)
    return [[a for a in factory.make(c).build_argv if a.startswith("-D") and a != KERNEL_ONLY]
            for c in make_strategy("random", space, seed=0).ask(n)]


def nvcc(source: Path, exe: Path, flags: list[str], libs: list[str]) -> Path:
    subprocess.run(["nvcc", "-O3", "-std=c++17", ARCH, *flags, "-o", str(exe), str(source), *libs],
                   check=True, capture_output=True)
    return exe


def timed_run(argv: list[str], gpu: int) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)})
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({r.returncode}):\n{r.stdout[-1000:]}\n{r.stderr[-1000:]}")
    m = PHASES.search(r.stderr)
    return wall, m.group(1) if m else ""


def gpu_count() -> int:
    r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return len([ln for ln in r.stdout.splitlines() if ln.startswith("GPU ")])


def two_gpus(exes: list[Path], args: list[str], repeat: int, gap: float) -> tuple[list[float], float, list[str]]:
    """Run ``exes`` on GPU 0 and (reversed) on GPU 1 at the same time; a new process starts at
    least ``gap`` seconds after the previous one on either GPU."""
    walls: list[float] = []
    phases: list[str] = []
    lock = threading.Lock()
    gate = threading.Lock()
    last = [float("-inf")]

    def worker(gpu: int) -> None:
        order = exes if gpu == 0 else exes[::-1]
        for _ in range(repeat):
            for exe in order:
                with gate:
                    wait = last[0] + gap - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)
                    last[0] = time.perf_counter()
                wall, ph = timed_run([str(exe), *args], gpu)
                with lock:
                    walls.append(wall)
                    phases.append(ph)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(g,)) for g in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return walls, time.perf_counter() - t0, phases


def phase_means(lines: list[str]) -> str:
    fields: dict[str, list[float]] = {}
    for line in lines:
        for part in line.split(","):
            name, _, value = part.strip().rpartition(" ")
            if name:
                fields.setdefault(name, []).append(float(value))
    return ", ".join(f"{k} {statistics.mean(v):.3f}" for k, v in fields.items())


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--source", default=str(SPEC.parent / "sgemm.cu"))
    p.add_argument("--shape", default="sq4096", choices=sorted(DIMS))
    p.add_argument("--configs", type=int, default=12)
    p.add_argument("--gaps", type=lambda v: [float(x) for x in v.split(",")], default=[0.0],
                   help="two-GPU runs: least seconds between process starts, e.g. 0,0.25")
    p.add_argument("--repeat", type=int, default=2, help="times each binary runs in each measurement")
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ksweep-overhead-"))
    source = Path(a.source).resolve()

    (work / "bare.cu").write_text(BARE)
    (work / "cublas.cu").write_text(CUBLAS)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        bare = pool.submit(nvcc, work / "bare.cu", work / "bare", [], ["-lcuda"])
        cub = pool.submit(nvcc, work / "cublas.cu", work / "cublas", [], ["-lcublas"])
        exes = list(pool.map(lambda ix: nvcc(source, work / f"sgemm_{ix[0]}", ix[1], ["-lcublas"]),
                             enumerate(define_flags(a.configs, a.shape))))
        bare, cub = bare.result(), cub.result()
    print(f"built {len(exes)} configs of {source.name} in {time.perf_counter() - t0:.1f} s ({os.cpu_count()} cores)")

    for name, exe in (("bare CUDA context", bare), ("context + cuBLAS handle", cub)):
        runs = [timed_run([str(exe)], 0) for _ in range(5)]
        print(f"{name}: median {statistics.median(w for w, _ in runs):.3f} s per process (of 5); "
              f"{phase_means([ph for _, ph in runs])}")

    args = list(DIMS[a.shape])
    alone, phases = [], []
    for _ in range(a.repeat):
        for exe in exes:
            wall, ph = timed_run([str(exe), *args], 0)
            alone.append(wall)
            phases.append(ph)
    print(f"alone on GPU 0: mean {statistics.mean(alone):.3f} s, median {statistics.median(alone):.3f} s per run "
          f"({len(alone)} runs); harness means: {phase_means(phases)}")

    if gpu_count() >= 2:
        for gap in a.gaps:
            both, seconds, phases2 = two_gpus(exes, args, a.repeat, gap)
            print(f"GPU 0 and GPU 1 at once, starts >= {gap:.2f} s apart: mean {statistics.mean(both):.3f} s, "
                  f"median {statistics.median(both):.3f} s per run ({len(both)} runs in {seconds:.1f} s, "
                  f"{len(both) / seconds:.2f} runs/s); harness means: {phase_means(phases2)}")
        for gap in a.gaps:
            both, seconds, ph = two_gpus([bare] * 10, [], 1, gap)
            print(f"bare context on GPU 0 and GPU 1 at once, starts >= {gap:.2f} s apart: median "
                  f"{statistics.median(both):.3f} s per process; {phase_means(ph)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
