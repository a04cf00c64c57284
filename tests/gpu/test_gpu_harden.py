"""The hardening on a real GPU, with NVIDIA's compute-sanitizer: each fault planted in
tests/gpu/harden/faults.cu (a shared-memory race, an uninitialised shared-memory read, an
out-of-bounds write that lands in the allocation's padding, a missing __syncthreads, outputs
kept by the inputs' address, a kernel right for the first draw only, a barrier in divergent
code) is caught and never BEST, in kernel mode and, for the faults a sanitizer sees, in
program mode; ksweep.h's Timer times one launch under a sanitizer.

    python -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_harden.py
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ksweep import Status, load_spec
from ksweep.app.sweep import best_result, run_sweep
from ksweep.include import include_dir
from ksweep.run import sanitize
from ksweep.store.sqlite import Store
from ksweep.sweep.options import SweepOptions
from ksweep.verify.confirm import Confirmation

HERE = Path(__file__).parent / "harden"
N = (1 << 20) + 100  # not a multiple of the tile: fault 3's stores land in the allocation's padding
FAULTS = list(range(8))
CAUGHT = {  # what each planted fault may end as (a race may or may not show in the output)
    1: {Status.UNSAFE, Status.CHECKSUM_MISMATCH},
    2: {Status.UNSAFE, Status.CHECKSUM_MISMATCH},
    3: {Status.UNSAFE},  # the output is right: only memcheck sees the store past N
    4: {Status.UNSAFE, Status.CHECKSUM_MISMATCH},
    5: {Status.CHECKSUM_MISMATCH},  # the further inputs: the second draw at the first draw's addresses
    6: {Status.CHECKSUM_MISMATCH},  # the second input draw
    7: {Status.UNSAFE, Status.CHECKSUM_MISMATCH, Status.HANG},
}

pytestmark = pytest.mark.skipif(sanitize.find() is None, reason="compute-sanitizer not found")

# every config a leader (confirmed, so hardened): K covers them all, whatever their times
OPTIONS = SweepOptions(strategy="grid", confirm=Confirmation(k=len(FAULTS), rounds=2, within=None))

KERNEL = """
[sweep]
arch = "sm_90a"
[params]
FAULT = {faults}
[shapes.s]
defines = {{ N = {n} }}
[kernel]
source = "faults.cu"
name = "tile_add"
grid = "cdiv(N, 256)"
block = "256"
args = "faults_args.py:make_args"
outputs = [0]
reference = "faults_args.py:reference"
atol = 1e-5
rtol = 1e-5
timeout = 20.0
flags = ["-O3", "-lineinfo"]
[harden]
timeout = 600
budget = 3600  # what this suite checks is what the tools find, not the time budget
"""

PROGRAM = """
[sweep]
arch = "sm_90a"
[params]
FAULT = {faults}
[build]
sources = ["faults.cu"]
command = ["nvcc", "-O3", "-lineinfo", "-arch=sm_90a", "-DHARNESS", "-I{include}", "{{defines}}", "-o", "{{binary}}",
           "faults.cu"]
[run]
command = ["{{binary}}"]
timeout = 30
[check]
reference = "defaults"
rtol = 1e-6
[harden]
timeout = 600
budget = 3600  # what this suite checks is what the tools find, not the time budget
"""


def _copy(folder: Path) -> None:
    for f in ("faults.cu", "faults_args.py"):
        shutil.copy(HERE / f, folder / f)


def _statuses(db) -> dict:
    with Store(db) as store:
        return {r.params["FAULT"]: r for r in store.results()}


def test_every_planted_fault_is_caught_and_never_best_in_kernel_mode(tmp_path):
    _copy(tmp_path)
    (tmp_path / "k.toml").write_text(KERNEL.format(faults=FAULTS, n=N))
    summary, db = run_sweep(load_spec(tmp_path / "k.toml"), options=OPTIONS)
    by = _statuses(db)
    assert by[0].status is Status.OK, by[0].message
    for fault, caught in CAUGHT.items():
        assert by[fault].status in caught, (fault, by[fault].status, by[fault].message)
    assert by[3].message.startswith("memcheck: Invalid __global__ write of size 4 bytes"), by[3].message
    assert "faults.cu:" in by[3].message  # -lineinfo: the line of the store
    assert by[5].message.startswith("hardening: the second draw at the first draw's addresses"), by[5].message
    assert best_result(db).params["FAULT"] == 0
    assert any("hardened" in line for line in summary.hardened), summary.hardened


def test_the_sanitizers_faults_are_caught_and_never_best_in_program_mode(tmp_path):
    _copy(tmp_path)
    faults = [0, 1, 3, 4, 7]
    (tmp_path / "p.toml").write_text(PROGRAM.format(faults=faults, include=include_dir()))
    summary, db = run_sweep(load_spec(tmp_path / "p.toml"), options=OPTIONS)
    by = _statuses(db)
    assert by[0].status is Status.OK, by[0].message
    for fault in faults[1:]:
        assert by[fault].status in CAUGHT[fault] | {Status.UNSAFE}, (fault, by[fault].status, by[fault].message)
    assert by[3].status is Status.UNSAFE and "Invalid __global__ write" in by[3].message, by[3].message
    assert best_result(db).params["FAULT"] == 0


def test_the_timer_runs_once_under_a_sanitizer(tmp_path):
    """ksweep.h's Timer: its repetitions normally, one launch under compute-sanitizer, whether
    ksweep set KSWEEP_SANITIZER or the tool was run by hand (its injection library)."""
    _copy(tmp_path)
    exe = tmp_path / "h"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90a", "-DHARNESS", f"-I{include_dir()}", "-o", str(exe),
                    str(tmp_path / "faults.cu")], check=True)
    env = {k: v for k, v in os.environ.items() if k != "KSWEEP_SANITIZER"}

    def reps(argv, **more):
        out = subprocess.run(argv, capture_output=True, text=True, env={**env, **more}, timeout=600).stdout
        line = next(ln for ln in out.splitlines() if ln.startswith("@@RESULT"))
        return int(float(line.split("reps=")[1].split()[0]))

    assert reps([str(exe)]) >= 10
    assert reps([str(exe)], KSWEEP_SANITIZER="memcheck") == 1
    assert reps([sanitize.find(), "--tool", "memcheck", str(exe)]) == 1
