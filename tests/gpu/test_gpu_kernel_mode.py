"""Kernel mode on a real GPU: correct configs time, a faulting config and a hanging config
are classified and the worker is restarted, the sweep goes on."""

import shutil
import textwrap
from pathlib import Path

from ksweep import Status, load_spec
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import SweepOptions
from ksweep.sweep.local import run_sweep

KERNELS = Path(__file__).parent.parent / "kernels"


def test_vadd_sweep_on_gpu(tmp_path):
    for f in ("vadd.cu", "vadd_args.py"):
        shutil.copy(KERNELS / f, tmp_path / f)
    (tmp_path / "k.toml").write_text(textwrap.dedent("""
        [sweep]
        arch = "sm_90a"
        [params]
        BLOCK = [128, 256]
        ELEMS = [1, 4]
        BAD = [0, 1, 2]
        [shapes.big]
        defines = { N = 16777216 }
        [kernel]
        source = "vadd.cu"
        name = "vadd"
        grid = "cdiv(N, BLOCK * ELEMS)"
        block = "BLOCK"
        args = "vadd_args.py:make_args"
        outputs = [0]
        reference = "vadd_args.py:reference"
        timeout = 5.0
    """))
    summary, db = run_sweep(load_spec(tmp_path / "k.toml"), options=SweepOptions(strategy="grid"))
    with Store(db) as store:
        rows = store.results()
    by = {(r.params["BLOCK"], r.params["ELEMS"], r.params["BAD"]): r for r in rows}
    for b in (128, 256):
        for e in (1, 4):
            ok = by[(b, e, 0)]
            assert ok.status is Status.OK, ok.message
            assert 0 < ok.metrics["ms_p20"] <= ok.metrics["ms"] <= ok.metrics["ms_p80"]
            assert "NVIDIA" in (ok.gpu_name or "")
            assert by[(b, e, 1)].status is Status.CUDA_ERROR, by[(b, e, 1)].message
            assert by[(b, e, 2)].status is Status.HANG, by[(b, e, 2)].message
    # 16M floats: 3 x 64 MiB moved; anything under ~0.05 ms would mean the L2 or a no-op
    assert min(by[(b, e, 0)].metrics["ms"] for b in (128, 256) for e in (1, 4)) > 0.05
