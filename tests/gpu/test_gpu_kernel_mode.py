"""Kernel mode on a real GPU: correct configs time, a faulting config and a hanging config
are classified and the worker is restarted, the sweep goes on."""

from ksweep import Status, load_spec
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import SweepOptions
from ksweep.app.sweep import run_sweep

from conftest import vadd_kernel_spec


def test_vadd_sweep_on_gpu(tmp_path):
    vadd_kernel_spec(tmp_path, "BLOCK = [128, 256]\nELEMS = [1, 4]\nBAD = [0, 1, 2]", 16777216, "timeout = 5.0")
    summary, db = run_sweep(load_spec(tmp_path / "k.toml"), options=SweepOptions(confirm=None, strategy="grid"))
    with Store(db) as store:
        rows = store.results()
    by = {(r.params["BLOCK"], r.params["ELEMS"], r.params["BAD"]): r for r in rows}
    for b in (128, 256):
        for e in (1, 4):
            ok = by[(b, e, 0)]
            assert ok.status is Status.OK, ok.message
            assert 0 < ok.metrics["ms_p20"] <= ok.metrics["ms"] <= ok.metrics["ms_p80"]
            assert "NVIDIA" in (ok.gpu_name or "")
            assert ok.gpu_state["sm_clock_mhz"] > 0 and ok.gpu_state["cuda_version"], ok.gpu_state  # NVML
            assert by[(b, e, 1)].status is Status.CUDA_ERROR, by[(b, e, 1)].message
            assert by[(b, e, 2)].status is Status.HANG, by[(b, e, 2)].message
    # 16M floats: 3 x 64 MiB moved; anything under ~0.05 ms would mean the L2 or a no-op
    assert min(by[(b, e, 0)].metrics["ms"] for b in (128, 256) for e in (1, 4)) > 0.05


def test_a_kernel_right_for_the_first_draw_only_is_never_best(tmp_path):
    """BAD=3 remembers its first answer and writes it at every later launch: the second input
    draw (another distribution) catches it before it is timed."""
    vadd_kernel_spec(tmp_path, "BLOCK = [256]\nELEMS = [1, 4]\nBAD = [0, 3]", 16777216, "timeout = 5.0")
    summary, db = run_sweep(load_spec(tmp_path / "k.toml"), options=SweepOptions(confirm=None, strategy="grid"))
    with Store(db) as store:
        by = {(r.params["ELEMS"], r.params["BAD"]): r for r in store.results()}
    for e in (1, 4):
        assert by[(e, 0)].status is Status.OK, by[(e, 0)].message
        cheat = by[(e, 3)]
        assert cheat.status is Status.CHECKSUM_MISMATCH and cheat.message.startswith("second input draw"), \
            cheat.message
    (best,) = summary.best.values()  # one shape, one GPU model
    assert best.params["BAD"] == 0
