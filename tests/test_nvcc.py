"""Real `nvcc -arch=sm_90a -Xptxas -v` compiles: ptxas parsing and post-compile pruning."""

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from ksweep import Status, load_spec
from ksweep.build.ptxas import parse_ptxas
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import SweepOptions
from ksweep.app.sweep import run_sweep

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
KERNELS = Path(__file__).parent / "programs" / "kernels.cu"


def ptxas(tmp_path, *flags):
    r = subprocess.run(["nvcc", "-arch=sm_90a", "-Xptxas", "-v", "-cubin", *flags, "-o", str(tmp_path / "k.cubin"),
                        str(KERNELS)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return parse_ptxas(r.stderr)


def test_several_kernels_in_one_file(tmp_path):
    report = ptxas(tmp_path, "-DN=2")
    by_name = {k.name: k for k in report.kernels}
    assert set(by_name) == {"_Z4workPfPKf", "_Z5tiledPf"}
    assert by_name["_Z5tiledPf"].smem == 2048 and by_name["_Z5tiledPf"].barriers == 1
    assert all(k.arch == "sm_90a" and k.registers > 0 and k.spills == 0 for k in report.kernels)
    assert report.smem == 2048 and report.spills == 0


def test_spilling_kernel(tmp_path):
    report = ptxas(tmp_path, "-DN=64", "-maxrregcount=32")
    work = next(k for k in report.kernels if k.name == "_Z4workPfPKf")
    assert work.registers == 32
    assert work.spill_stores > 0 and work.spill_loads > 0 and work.stack_frame > 0
    assert report.spills == work.spill_stores + work.spill_loads


def test_post_compile_pruning_through_a_sweep(tmp_path):
    shutil.copy(KERNELS, tmp_path / "kernels.cu")
    spec = tmp_path / "cuda.toml"
    spec.write_text(textwrap.dedent("""
        [sweep]
        arch = "sm_90a"
        [params]
        N = [2, 64]
        CAP = [255, 32]
        [build]
        sources = ["kernels.cu"]
        command = ["nvcc", "-arch=sm_90a", "-Xptxas", "-v", "-cubin", "-maxrregcount={CAP}", "{defines}",
                   "-o", "{binary}", "kernels.cu"]
        max_registers = 128
        [run]
        command = ["sh", "-c", "echo @@RESULT ms=1"]
    """))
    _, db = run_sweep(load_spec(spec), options=SweepOptions(confirm=None, strategy="grid"), jobs=2)
    with Store(db) as store:
        rows = {(r.params["N"], r.params["CAP"]): r for r in store.results()}
    assert rows[(2, 255)].status is Status.OK and rows[(2, 255)].regs == 18
    assert rows[(64, 255)].status is Status.REGS_LIMIT and "139 registers > 128" in rows[(64, 255)].message
    assert rows[(64, 32)].status is Status.SPILLS and "spill stores" in rows[(64, 32)].message
    assert rows[(64, 32)].spills > 0 and rows[(2, 32)].status is Status.OK
    assert rows[(2, 255)].smem == 2048
