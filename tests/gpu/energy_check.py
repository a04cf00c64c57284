"""GPU check of the energy observer and a multi-objective sweep (real CUDA backend, real NVML).

    python3 tests/gpu/energy_check.py        # on a machine with a GPU, nvcc, cuda-python, nvidia-ml-py

Sweeps a small space of examples/kernel_mode's matmul (WIDTH 4096) with
``ksweep run --objectives time,energy,gflops_per_watt --no-confirm`` in a temporary folder
(about a minute on an H100), prints the run's output (its Pareto front included), then
checks every OK config's figures: average power plausible for a data-centre GPU (50-800 W),
energy per launch > 0, energy per launch equal to power x the launch time of the energy
phase, and near power x the timed ``ms`` (the timed launches flush the L2 first, the energy
phase's do not), a window at least ``energy_ms`` long, ``gflops_per_watt`` from the FLOP
count, and a front that no evaluated config dominates. One line per check; exit 1 if any
fails."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

ENERGY_MS = 800
SPEC = f"""
[sweep]
name = "matmul-energy"
arch = "sm_90a"
[params]
block_size_x = [16, 32]
block_size_y = [2, 4, 8, 16]
tile_size_x = [1, 2, 4]
tile_size_y = [1, 2, 4, 8]
[derived]
SMEM_BYTES = "4 * (block_size_y * tile_size_y * block_size_x + block_size_x * block_size_x * tile_size_x)"
[[constraints]]
name = "square_a_tile"
expr = "block_size_x == block_size_y * tile_size_y"
[[constraints]]
name = "static_smem"
expr = "SMEM_BYTES <= MAX_STATIC_SMEM"
[shapes.w4096]
defines = {{ WIDTH = 4096 }}
[physics]
flops = "2 * WIDTH * WIDTH * WIDTH"
[kernel]
source = "matmul.cu"
name = "matmul_kernel"
grid = ["WIDTH // (block_size_x * tile_size_x)", "WIDTH // (block_size_y * tile_size_y)"]
block = ["block_size_x", "block_size_y"]
args = "matmul_args.py:make_args"
outputs = [0]
reference = "matmul_args.py:reference"
atol = 1e-2
rtol = 1e-4
timing = {{ energy_ms = {ENERGY_MS} }}
"""


def dominated(a, b, signs) -> bool:
    """Whether b dominates a (signs: +1 minimised, -1 maximised)."""
    return all(s * y <= s * x for x, y, s in zip(a, b, signs)) and any(s * y < s * x for x, y, s in zip(a, b, signs))


def main() -> int:
    failures = 0

    def check(label: str, ok: bool, detail: str = "") -> None:
        nonlocal failures
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'}  {label}" + (f": {detail}" if detail else ""), flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in ("matmul.cu", "matmul_args.py"):
            shutil.copy(REPO / "examples" / "kernel_mode" / name, folder / name)
        (folder / "energy.toml").write_text(SPEC)
        started = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "ksweep.cli.main", "run", str(folder / "energy.toml"),
                              "--objectives", "time,energy,gflops_per_watt", "--no-confirm", "-q"],
                             capture_output=True, text=True, cwd=REPO)
        print(run.stdout)
        if run.stderr.strip():
            print(run.stderr, file=sys.stderr)
        check("ksweep run --objectives time,energy,gflops_per_watt", run.returncode == 0,
              f"exit {run.returncode} in {time.monotonic() - started:.0f} s")
        check("the run printed its Pareto front",
              "Pareto front over ms (min), energy_mj (min), gflops_per_watt (max)" in run.stdout)
        db = folder / ".ksweep" / "energy.db"  # named after the spec file
        if not db.exists():
            check("the database exists", False, str(db))
            return 1
        check_database(db, 2 * 4096 ** 3, ENERGY_MS, check)
    print(f"{'all checks passed' if not failures else f'{failures} checks failed'}")
    return 1 if failures else 0


def check_database(db: Path, flops: float, energy_ms: float, check) -> None:
    """The checks of every OK config's energy figures and of the Pareto front in ``db``."""
    from ksweep.report.pareto import fronts
    from ksweep.spec.model import Objective
    from ksweep.status import Status
    from ksweep.store.sqlite import Store

    with Store(db, create=False) as store:
        results = store.results()
    ok = [r for r in results if r.status is Status.OK]
    check("configs ran OK", len(ok) >= 4, f"{len(ok)} of {len(results)}")
    for r in ok:
        m = r.metrics
        label = " ".join(f"{k}={v}" for k, v in r.params.items())
        power, energy, ms = m.get("power_w", 0.0), m.get("energy_mj", 0.0), m.get("ms", 0.0)
        launches, window = m.get("energy_launches", 0.0), m.get("energy_window_s", 0.0)
        phase_ms = 1e3 * window / launches if launches else float("nan")
        print(f"      {label}: ms {ms:.4g}, power {power:.1f} W, energy {energy:.4g} mJ/launch, "
              f"{launches:.0f} launches in {window:.3f} s (phase launch {phase_ms:.4g} ms), "
              f"{m.get('gflops_per_watt', float('nan')):.4g} GFLOP/s/W; NVML samples of the request: "
              f"mean {r.gpu_state.get('power_mean_w')} W, max {r.gpu_state.get('power_max_w')} W")
        check(f"{label}: power 50-800 W", 50.0 <= power <= 800.0, f"{power:.1f} W")
        check(f"{label}: energy per launch > 0", energy > 0.0, f"{energy:.4g} mJ")
        check(f"{label}: energy = power x the energy phase's launch time",
              launches > 0 and abs(energy - power * phase_ms) <= 0.03 * energy,
              f"{energy:.4g} vs {power * phase_ms:.4g} mJ")
        ratio = energy / (power * ms) if power * ms > 0 else float("nan")
        check(f"{label}: energy near power x ms (0.7-1.1)", 0.7 <= ratio <= 1.1, f"ratio {ratio:.3f}")
        check(f"{label}: window >= energy_ms", window >= 0.95 * energy_ms / 1e3, f"{window:.3f} s")
        gpw = m.get("gflops_per_watt")
        check(f"{label}: gflops_per_watt = flops / energy",
              gpw is not None and energy > 0 and abs(gpw - flops * 1e-6 / energy) <= 1e-6 * gpw, f"{gpw}")
    objectives = (Objective("ms", "min"), Objective("energy_mj", "min"), Objective("gflops_per_watt", "max"))
    signs = [1 if o.direction == "min" else -1 for o in objectives]
    found = [r for rows in fronts(results, objectives).values() for r in rows]
    check("the front is not empty", bool(found), f"{len(found)} configs")
    points = [[r.metrics[o.metric] for o in objectives] for r in ok]
    beaten = [dict(r.params) for r in found
              if any(dominated([r.metrics[o.metric] for o in objectives], p, signs) for p in points)]
    check("no evaluated config dominates a config on the front", not beaten, str(beaten))
    fastest = min(ok, key=lambda r: r.metrics["ms"])
    check("the fastest config is on the front", any(r.params == fastest.params for r in found),
          str(dict(fastest.params)))


if __name__ == "__main__":
    sys.exit(main())
