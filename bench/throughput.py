"""Throughput of a sweep three ways on a GPU machine (issue 7):

1. a serial compile-then-run loop, like seed 001's bash script (nvcc, then run, one config
   after the other), building the whole program per config; and ("serial_split") the same
   loop with the spec's split build done by hand: the harness once, a cubin per config;
2. ksweep on one GPU (`--gpus 0`): parallel builds feeding one run slot;
3. ksweep on two GPUs through Dask (`--cluster local --gpus 0,1`), when two are visible;
   and, for comparison, ksweep's own executor on both (`--gpus 0,1`, no Dask: "local2").

All three evaluate configs of the SGEMM example (shape 4096³) in ksweep's random order
(seed 0), each from an empty build cache: ksweep the first N, the serial loop the first
--serial-configs of the same list (it is slow; its rate does not depend on N). Reported:
wall time of the whole command (cluster start-up included), configs per minute and the
GPU-idle share (1 − GPU busy time / (wall × GPUs)) and the mean time of one run (a run's
process, from start to exit). Arguments after ``--`` go to every ``ksweep run``.

    python bench/throughput.py [--configs 200] [--serial-configs 40] [--only serial,serial_split,one,two,local2]
                               [--shape sq4096] [--out DIR] [-- --start-gap 0.3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "sgemm" / "sgemm.toml"
KERNEL_ONLY = "-DKSWEEP_KERNEL_ONLY"  # in the spec's per-config build (sgemm.toml)
SHAPE = "sq4096"
DIMS = {"sq4096": ("4096", "4096", "4096"), "sq2048": ("2048", "2048", "2048"), "skinny": ("8192", "1024", "1024")}


def configs_and_flags(n: int):
    from ksweep import Space, load_spec
    from ksweep.strategies import make_strategy
    from ksweep.sweep.jobs import JobFactory

    spec = load_spec(SPEC)
    space = Space.from_spec(spec, SHAPE)
    strategy = make_strategy("random", space, seed=0)
    configs = strategy.ask(n)
    factory = JobFactory(spec, spec.shape(SHAPE), spec.variant(None), space)
    # the config's own -D flags: the spec builds a cubin of the kernel alone, the loop the whole program
    return [(c, [a for a in factory.make(c).build_argv if a.startswith("-D") and a != KERNEL_ONLY]) for c in configs]


NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a"]


def serial_loop(jobs, work: Path, split: bool = False) -> dict:
    """nvcc then run, one config at a time (the seed-001 way): the whole program per config,
    or (``split``) the spec's split build by hand: the harness once, then a cubin per config."""
    work.mkdir(parents=True, exist_ok=True)
    source = str(SPEC.parent / "sgemm.cu")
    gpu_busy, compile_s = 0.0, 0.0
    t0 = time.perf_counter()
    if split:
        harness = work / "harness"
        subprocess.run([*NVCC, "-DSGEMM_CUBIN", "-o", str(harness), source, "-lcublas", "-lcuda"],
                       check=True, capture_output=True)
    for i, (_, flags) in enumerate(jobs):
        c0 = time.perf_counter()
        if split:
            cubin = work / f"sgemm_{i}.cubin"
            subprocess.run([*NVCC, "-cubin", KERNEL_ONLY, *flags, "-o", str(cubin), source],
                           check=True, capture_output=True)
            argv = [str(harness), str(cubin)]
        else:
            exe = work / f"sgemm_{i}"
            subprocess.run([*NVCC, *flags, "-o", str(exe), source, "-lcublas"], check=True, capture_output=True)
            argv = [str(exe)]
        r0 = time.perf_counter()
        compile_s += r0 - c0
        subprocess.run([*argv, *DIMS[SHAPE]], check=True, capture_output=True,
                       env={**os.environ, "CUDA_VISIBLE_DEVICES": "0"})
        gpu_busy += time.perf_counter() - r0
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "configs": len(jobs), "configs_per_min": 60 * len(jobs) / wall,
            "gpu_idle": 1 - gpu_busy / wall, "run_s": gpu_busy / len(jobs), "compile_s": compile_s / len(jobs)}


SUMMARY = re.compile(r"(\d+) evaluated.*wall ([\d.]+) s, build CPU ([\d.]+) s, GPU ([\d.]+) s, "
                     r"GPU idle (\d+)%, ([\d.]+) configs/min")


def ksweep_run(n: int, db: Path, extra: list[str]) -> dict:
    shutil.rmtree(SPEC.parent / ".ksweep", ignore_errors=True)  # empty build cache
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "ksweep", "run", str(SPEC), "--shape", SHAPE, "--strategy", "random",
                        "--seed", "0", "--max-evals", str(n), "--db", str(db), "-q", *extra],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"ksweep {' '.join(extra)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    m = SUMMARY.search(r.stdout.replace("\n", " "))
    if not m:
        raise SystemExit(f"no summary line in:\n{r.stdout[-2000:]}")
    evaluated, sweep_wall, build_cpu, gpu_s, idle, per_min = m.groups()
    return {"wall_s": wall, "sweep_wall_s": float(sweep_wall), "configs": int(evaluated),
            "configs_per_min": 60 * int(evaluated) / wall, "build_cpu_s": float(build_cpu), "gpu_s": float(gpu_s),
            "gpu_idle": int(idle) / 100, "run_s": float(gpu_s) / int(evaluated), "tail": r.stdout[-600:]}


def gpu_count() -> int:
    r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return len([ln for ln in r.stdout.splitlines() if ln.startswith("GPU ")])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--configs", type=int, default=200)
    p.add_argument("--serial-configs", type=int, default=40)
    p.add_argument("--only", default="serial,one,two", help="which of serial, serial_split, one, two, local2 to run")
    p.add_argument("--shape", default="sq4096", choices=sorted(DIMS), help="SGEMM shape (default sq4096)")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("extra", nargs="*", help="after --: arguments for every ksweep run")
    a = p.parse_args()
    globals()["SHAPE"] = a.shape
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/ksweep-throughput")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    only = set(a.only.split(","))
    res: dict[str, dict] = {}
    if "serial" in only:
        res["serial loop, 1 GPU"] = serial_loop(configs_and_flags(a.serial_configs), work / "serial")
        print("serial", res["serial loop, 1 GPU"], flush=True)
    if "serial_split" in only:
        res["serial loop, split build, 1 GPU"] = serial_loop(configs_and_flags(a.serial_configs),
                                                             work / "serial_split", split=True)
        print("serial split", res["serial loop, split build, 1 GPU"], flush=True)
    if "one" in only:
        res["ksweep, 1 GPU"] = ksweep_run(a.configs, work / "one.db", ["--gpus", "0", *a.extra])
        print("ksweep 1", res["ksweep, 1 GPU"], flush=True)
    if "two" in only and gpu_count() >= 2:
        res["ksweep, 2 GPUs (Dask)"] = ksweep_run(a.configs, work / "two.db",
                                                  ["--cluster", "local", "--gpus", "0,1", *a.extra])
        print("ksweep 2", res["ksweep, 2 GPUs (Dask)"], flush=True)
    if "local2" in only and gpu_count() >= 2:
        res["ksweep, 2 GPUs (local)"] = ksweep_run(a.configs, work / "local2.db", ["--gpus", "0,1", *a.extra])
        print("ksweep 2 local", res["ksweep, 2 GPUs (local)"], flush=True)
    (out / f"throughput-{SHAPE}-{'-'.join(sorted(only))}.json").write_text(json.dumps(res, indent=2))
    print(f"\nexamples/sgemm (shape {SHAPE}), empty build cache, {os.cpu_count()} cores\n")
    print("| method | configs | wall s | configs/min | GPU idle | s per run |")
    print("|---|---|---|---|---|---|")
    for name, r in res.items():
        print(f"| {name} | {r['configs']} | {r['wall_s']:.1f} | {r['configs_per_min']:.1f} | "
              f"{100 * r['gpu_idle']:.0f}% | {r['run_s']:.3f} |")
    base, one = res.get("serial loop, 1 GPU"), res.get("ksweep, 1 GPU")
    if base and one:
        print(f"\nksweep 1 GPU / serial loop: {one['configs_per_min'] / base['configs_per_min']:.2f}x")
    two = res.get("ksweep, 2 GPUs (Dask)")
    if two and one:
        print(f"ksweep 2 GPUs (Dask) / ksweep 1 GPU: {two['configs_per_min'] / one['configs_per_min']:.2f}x")
    local2 = res.get("ksweep, 2 GPUs (local)")
    if local2 and one:
        print(f"ksweep 2 GPUs (local) / ksweep 1 GPU: {local2['configs_per_min'] / one['configs_per_min']:.2f}x")
    split = res.get("serial loop, split build, 1 GPU")
    if split and one:
        print(f"ksweep 1 GPU / serial loop with the split build: {one['configs_per_min'] / split['configs_per_min']:.2f}x")
    for name, loop in (("serial loop", base), ("serial loop, split build", split)):
        if loop:
            print(f"{name}: {loop['compile_s']:.2f} s nvcc + {loop['run_s']:.2f} s run per config")
    return 0


if __name__ == "__main__":
    sys.exit(main())
