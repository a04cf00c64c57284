"""Configs per minute and GPU idle share of the SGEMM example on 1, 2 and 4 GPUs of one host,
from a cold build cache and a warm one (issue 38), on persistent hosts, without confirmation.

For each GPU count (those the host has) and executor (``local``: ``--gpus 0,..``; ``dask``:
``--cluster local --gpus 0,..``), two sweeps of the same ``--configs`` random configs
(``--strategy random --seed 0 --max-evals N``) of shape ``--shape``:

* **cold**: an empty build cache and an empty database: every config and the harness built;
* **warm**: the cache the cold sweep filled and an empty database: every config evaluated
  again, every build a cache hit (the harness too).

Reported per sweep: the command's wall time (Python and cluster start-up included) and the
sweep's (ksweep's summary line), configs per minute over each, the GPU idle share as ksweep
computes it (1 − GPU busy / (sweep wall × GPUs)) and over the command's wall, the mean run,
and the build CPU seconds. Each sweep's figures are written to OUT/multi_gpu_cold.json as soon
as it ends, with the machine, the commit and the command, for docs/benchmarks.md.

    python3 bench/multi_gpu_cold.py [--gpus 1,2,4] [--executors local[,dask]] [--configs 400]
                                    [--shape sq4096] [--out DIR] [-- EXTRA KSWEEP RUN ARGS]

By the throughput section of docs/benchmarks.md (0.16 s per run on a persistent host, 0.9
CPU-s of nvcc per config), the defaults take about 2 × 400 × 0.16 s on 1 GPU, half that on 2
and a quarter on 4, plus start-up: some 4–5 minutes where the builds keep up (64 cores).
"""

from __future__ import annotations

import argparse
import datetime
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
SUMMARY = re.compile(r"(\d+) evaluated.*wall ([\d.]+) s, build CPU ([\d.]+) s, GPU ([\d.]+) s, "
                     r"GPU idle (\d+)%, ([\d.]+) configs/min")


def visible_gpus() -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def sweep(gpus: int, executor: str, cache: Path, db: Path, a, extra: list[str]) -> dict:
    devices = ",".join(str(i) for i in range(gpus))
    argv = [sys.executable, "-m", "ksweep", "run", str(SPEC), "--shape", a.shape, "--strategy", "random",
            "--seed", "0", "--max-evals", str(a.configs), "--no-confirm", "--persistent", "--gpus", devices,
            "--cache", str(cache), "--db", str(db), "-q", *(["--cluster", "local"] if executor == "dask" else []),
            *extra]
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    m = SUMMARY.search(r.stdout.replace("\n", " "))
    if not m:
        raise SystemExit(f"no summary line in:\n{r.stdout[-2000:]}")
    evaluated, sweep_wall, build_cpu, gpu_s = int(m[1]), float(m[2]), float(m[3]), float(m[4])
    return {"gpus": gpus, "executor": executor, "command": " ".join(argv[1:]), "evaluated": evaluated,
            "wall_s": round(wall, 2), "sweep_wall_s": sweep_wall,
            "configs_per_min": round(60 * evaluated / wall, 1), "sweep_configs_per_min": float(m[6]),
            "gpu_idle": int(m[5]) / 100, "gpu_idle_of_command": round(max(0.0, 1 - gpu_s / (wall * gpus)), 3),
            "gpu_s": gpu_s, "run_s": round(gpu_s / evaluated, 4) if evaluated else None, "build_cpu_s": build_cpu}


def machine() -> dict:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    try:
        import distributed
        dask_version = distributed.__version__
    except ImportError:
        dask_version = None
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True) if shutil.which("nvcc") else None
    return {"gpus": visible_gpus(), "cores": os.cpu_count(), "commit": commit.stdout.strip() or None,
            "date": datetime.date.today().isoformat(), "distributed": dask_version,
            "nvcc": nvcc.stdout.strip().splitlines()[-1] if nvcc and nvcc.stdout.strip() else None}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", default="1,2,4", help="GPU counts (those above the host's are left out)")
    p.add_argument("--executors", default="local", help="local, dask (--cluster local), or both")
    p.add_argument("--configs", type=int, default=400)
    p.add_argument("--shape", default="sq4096")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("extra", nargs="*", help="after --: arguments for every ksweep run")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "ksweep-multi-gpu-cold"
    shutil.rmtree(work, ignore_errors=True)
    have = len(visible_gpus())
    counts = [g for g in (int(x) for x in a.gpus.split(",")) if 1 <= g <= have]
    if not counts:
        raise SystemExit(f"no GPU count of {a.gpus} fits this host ({have} GPUs visible)")
    report = {"machine": machine(), "argv": sys.argv[1:], "sweeps": []}
    for executor in a.executors.split(","):
        for gpus in counts:
            cache = work / f"{executor}-{gpus}" / "cache"
            for temperature in ("cold", "warm"):  # warm: the cold sweep's cache, a new database
                db = work / f"{executor}-{gpus}" / f"{temperature}.db"
                row = {"cache": temperature, **sweep(gpus, executor, cache, db, a, a.extra)}
                report["sweeps"].append(row)
                (out / "multi_gpu_cold.json").write_text(json.dumps(report, indent=2))
                print(json.dumps(row), flush=True)
    m = report["machine"]
    print(f"\nexamples/sgemm {a.shape}, {a.configs} random configs (seed 0), persistent hosts, no confirmation; "
          f"{len(m['gpus'])} × {m['gpus'][0].split(',', 1)[-1].strip() if m['gpus'] else '?'}, {m['cores']} cores, "
          f"commit {m['commit']}, {m['date']}\n")
    print("| executor | GPUs | cache | evaluated | wall s (sweep) | configs/min (sweep) | GPU idle (of the command) "
          "| s per run | build CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in report["sweeps"]:
        print(f"| {r['executor']} | {r['gpus']} | {r['cache']} | {r['evaluated']} | {r['wall_s']:.1f} "
              f"({r['sweep_wall_s']:.1f}) | {r['configs_per_min']:.1f} ({r['sweep_configs_per_min']:.1f}) | "
              f"{100 * r['gpu_idle']:.0f}% ({100 * r['gpu_idle_of_command']:.0f}%) | {r['run_s']} | "
              f"{r['build_cpu_s']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
