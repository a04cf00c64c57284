"""Kernel mode's two compilers on one GPU: NVRTC-built cubins load and run, and how their
times compare with nvcc's (GPU machine; needs cuda-python and libnvrtc).

    python bench/nvrtc_vs_nvcc.py [--spec examples/kernel_mode/matmul.toml] [--out DIR] [--rounds 2]

The spec's whole space is swept with each compiler (`[kernel] compiler`, its default
options: -O3 for nvcc, none for NVRTC), each from an empty build cache into its own
database, the order alternating over ``--rounds``. Printed and written to OUT/nvrtc_vs_nvcc.json:
wall time and build CPU time per sweep, how many configs were OK with each, the best
config of each, and the per-config ratio of times (NVRTC / nvcc: min, median, max) over
the configs OK with both. Every OK result with NVRTC was checked against the reference,
so an OK count above zero is the check that its cubins load and compute the right answer.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ksweep import Status, load_spec  # noqa: E402
from ksweep.app.sweep import run_sweep  # noqa: E402
from ksweep.spec.kernel import default_flags  # noqa: E402
from ksweep.store.sqlite import Store  # noqa: E402
from ksweep.sweep.driver import SweepOptions  # noqa: E402


def sweep(spec, compiler: str, work: Path) -> dict:
    kspec = replace(spec.kernel, compiler=compiler, flags=default_flags(compiler))
    folder = work / f"{compiler}-{time.monotonic_ns()}"
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    summary, db = run_sweep(replace(spec, kernel=kspec), db=folder / "results.db", cache=folder / "cache",
                            options=SweepOptions(strategy="grid"))
    wall = time.perf_counter() - t0
    with Store(db) as store:
        results = list(store.results())
    ok = {tuple(sorted(r.params.items())): r for r in results if r.status is Status.OK}
    assert all(r.compiler == compiler for r in ok.values()), "a result says another compiler built it"
    best = min(ok.values(), key=lambda r: r.metrics["ms"]) if ok else None
    return {"compiler": compiler, "wall_s": wall, "counts": dict(summary.counts),
            "build_cpu_s": sum(r.build_seconds or 0 for r in results),
            "best": dict(best.params) if best else None, "best_ms": best.metrics["ms"] if best else None,
            "ms": {json.dumps(dict(k)): r.metrics["ms"] for k, r in ok.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default=str(ROOT / "examples" / "kernel_mode" / "matmul.toml"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "out"))
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    spec = load_spec(args.spec)
    if spec.kernel is None:
        print("not a [kernel] spec", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ksweep-nvrtc-"))
    runs = []
    try:
        for i in range(args.rounds):
            order = ("nvcc", "nvrtc") if i % 2 == 0 else ("nvrtc", "nvcc")
            for compiler in order:
                runs.append(sweep(spec, compiler, work))
                r = runs[-1]
                print(f"round {i + 1} {compiler:5s}: {r['wall_s']:.1f} s wall, OK {r['counts'].get('OK', 0)}, "
                      f"best {r['best']} {r['best_ms']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    last = {r["compiler"]: r for r in runs}  # the last sweep of each
    both = sorted(set(last["nvcc"]["ms"]) & set(last["nvrtc"]["ms"]))
    ratios = [last["nvrtc"]["ms"][k] / last["nvcc"]["ms"][k] for k in both]
    summary = {"spec": args.spec, "runs": [{k: v for k, v in r.items() if k != "ms"} for r in runs],
               "configs_ok_with_both": len(both), "nvrtc_ok": len(last["nvrtc"]["ms"]),
               "same_best": last["nvcc"]["best"] == last["nvrtc"]["best"],
               "ratio_nvrtc_over_nvcc": {"min": min(ratios), "median": statistics.median(ratios),
                                         "max": max(ratios)} if ratios else None,
               "per_config_ms": {k: [last["nvcc"]["ms"][k], last["nvrtc"]["ms"][k]] for k in both}}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "nvrtc_vs_nvcc.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k not in ("runs", "per_config_ms")}, indent=1))
    return 0 if summary["nvrtc_ok"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
