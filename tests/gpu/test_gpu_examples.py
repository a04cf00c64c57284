"""A tiny sweep of each GPU example, when a GPU is present: every evaluated config builds,
runs and passes its check (SGEMM against cuBLAS, flash attention against an fp32 reference),
with a process per run and on a persistent host."""

import shutil
import subprocess
import time
import sys
from pathlib import Path

import pytest

from ksweep.status import Status
from ksweep.job import config_id
from ksweep.store.sqlite import Store

EXAMPLES = Path(__file__).parent.parent.parent / "examples"


@pytest.mark.parametrize("spec, shape", [
    ("sgemm/sgemm.toml", "sq2048"),
    ("flash_attention/flash_attn.toml", "b1_s512_d64_causal"),
])
@pytest.mark.parametrize("mode", [[], ["--persistent"]], ids=["process", "persistent"])
def test_tiny_sweep(tmp_path, spec, shape, mode):
    src = EXAMPLES / spec
    work = tmp_path / src.parent.name
    shutil.copytree(src.parent, work, ignore=shutil.ignore_patterns(".ksweep"))
    db = tmp_path / "sweep.db"
    r = subprocess.run([sys.executable, "-m", "ksweep", "run", str(work / src.name), "--shape", shape,
                        "--strategy", "random", "--max-evals", "3", "--db", str(db), "-q", *mode],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    with Store(db) as store:
        rows = [x for x in store.results() if x.status is not Status.PRUNED and x.phase != "default"]
        measurements = store.measurements()
    assert len(rows) == 3
    for row in rows:
        assert row.status is Status.OK, (row.params, row.message)
        assert row.metrics["ms"] > 0 and "NVIDIA" in (row.gpu_name or "")
        assert row.regs is not None and row.spills == 0
        # NVML watched the run: clocks, and the versions (docs/cli.md, "The GPU during each run")
        assert row.gpu_state["sm_clock_mhz"] > 0 and row.gpu_state["cuda_version"], row.gpu_state
    # the confirmation: the 3 evaluated configs and the default, 3 rounds each, all OK
    assert len(measurements) == 3 * len({str(m.params) for m in measurements}) >= 9
    assert all(m.status is Status.OK and m.value > 0 for m in measurements)


def test_resumed_on_the_same_gpu_and_rerun_only_when_asked(tmp_path):
    """On a GPU: the SGEMM example's cubins and harness (nvcc with -MMD) resume exactly; a
    second run evaluates nothing, --rerun all evaluates again without rebuilding."""
    src = EXAMPLES / "sgemm/sgemm.toml"
    work = tmp_path / "sgemm"
    shutil.copytree(src.parent, work, ignore=shutil.ignore_patterns(".ksweep"))
    db = tmp_path / "sweep.db"
    args = [sys.executable, "-m", "ksweep", "run", str(work / src.name), "--shape", "sq2048",
            "--max-evals", "3", "--db", str(db), "-q"]
    first = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    second = subprocess.run(args, capture_output=True, text=True, timeout=900)
    with Store(db) as store:  # the 3 searched and the default (evaluated for the confirmation)
        stored = len([x for x in store.results() if x.status is not Status.PRUNED])
    assert second.returncode == 0 and f"0 evaluated, {stored} resumed" in second.stdout, second.stdout[-2000:]
    started = time.time()
    third = subprocess.run([*args, "--rerun", "all"], capture_output=True, text=True, timeout=900)
    assert third.returncode == 0 and "3 evaluated, 0 resumed" in third.stdout, third.stdout[-2000:]
    with Store(db) as store:
        rows = [x for x in store.results() if x.status is not Status.PRUNED and x.phase != "default"]
        ms = store.measurements()
    # --rerun all measures the rounds again, in place: every confirmed config's rounds are this
    # run's, once each (which configs are confirmed depends on the run's own, noisy, first values)
    again = {config_id(m.params) for m in ms if m.finished >= started}
    mine = [(config_id(m.params), m.round, m.finished >= started) for m in ms if config_id(m.params) in again]
    assert again and all(now for _, _, now in mine) and len({(c, r) for c, r, _ in mine}) == len(mine), mine
    assert len(rows) == 3 and all(r.status is Status.OK and r.cached for r in rows), \
        [(r.phase, r.status.value, r.cached, r.message[-200:]) for r in rows]
