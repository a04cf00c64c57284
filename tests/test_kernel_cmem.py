"""Kernel mode's module-scope variables (cmem: __constant__ and __device__ symbols) and its
shared-memory opt-in, against the stand-in backend (no GPU)."""

import shutil

import numpy as np
import pytest

from ksweep import Status, load_spec
from ksweep.app.sweep import run_sweep
from ksweep.errors import SpecError
from ksweep.run.classify import classify_answer
from ksweep.run.handle import WorkerHandle
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import SweepOptions

from conftest import KERNELS as HERE

FAKE = f"fake:{HERE / 'fake_cmem.py'}"
nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def setup(cmem="cmem_args.py:make_cmem", n=1000):
    return {"op": "setup", "args": "cmem_args.py:make_args", "cmem": cmem, "root": str(HERE), "sizes": {"N": n},
            "seed": 0, "outputs": [0], "reference": "cmem_args.py:reference", "atol": 1e-5, "rtol": 1e-5,
            "timing": {"warmup_ms": 1, "budget_ms": 2, "min_reps": 3, "max_reps": 10, "flush_l2": False}}


def evaluate(worker, cubin, smem=0, **params):
    req = {"op": "eval", "cubin": str(cubin), "entry": "axpb", "grid": [1, 1, 1], "block": [128, 1, 1],
           "smem": smem, "params": params}
    status, message, metrics, checked = classify_answer(worker.request(req, timeout=10), 10)
    return status, message, checked


@pytest.fixture
def cubin(tmp_path):
    path = tmp_path / "fake.cubin"
    path.write_bytes(b"not really")
    return path


def test_symbols_are_filled_per_input_set_and_after_every_load(cubin):
    w = WorkerHandle(FAKE, setup=setup())
    try:
        # the reference uses each set's own values (seeded like the arguments): a kernel that saw
        # the timing set's values while checking, or the zeros of a freshly loaded module, fails
        for i in range(3):  # a fresh (zeroed) module each time
            status, message, checked = evaluate(w, cubin, K=i)
            assert (status, message, checked) == (Status.OK, "", True)
    finally:
        w.close()


def test_without_cmem_the_module_keeps_its_zeros_and_the_check_fails(cubin):
    w = WorkerHandle(FAKE, setup=setup(cmem=None) | {"reference": "cmem_args.py:reference_zeros"})
    try:
        status, message, _ = evaluate(w, cubin)
        assert status is Status.OK, message  # the zeros of a fresh module: y = 0 * x + 0 + 0
    finally:
        w.close()
    w = WorkerHandle(FAKE, setup=setup(cmem=None))
    try:
        status, message, _ = evaluate(w, cubin)
        assert status is Status.CHECKSUM_MISMATCH and "max abs error" in message
    finally:
        w.close()


@pytest.mark.parametrize("function, fragment", [
    ("missing", "cmem: the module has no __constant__ or __device__ variable 'd_filter' at file scope (outside "
                "any namespace) of that name"),
    ("too_large", "cmem: 'd_coef' is 36 bytes (float32, 9 elements) but the module's variable holds 32 bytes"),
])
def test_a_symbol_that_does_not_fit_is_one_line(cubin, function, fragment):
    w = WorkerHandle(FAKE, setup=setup(cmem=f"cmem_args.py:{function}") | {"reference": None})
    try:
        status, message, _ = evaluate(w, cubin)
        assert status is Status.RUN_ERROR and message == fragment
    finally:
        w.close()


def test_values_given_as_arrays(tmp_path, cubin):
    coef = np.array([2, 3, 0, 0, 0, 0, 0, 0], np.float32)
    np.savez(tmp_path / "cmem.npz", d_coef=coef, d_offset=np.int32(0))
    x = np.arange(1000, dtype=np.float32)
    np.savez(tmp_path / "args.npz", np.zeros(1000, np.float32), x, np.asarray(1000))
    (tmp_path / "args.kinds").write_text("ndarray ndarray int")
    np.savez(tmp_path / "ref.npz", 2 * x + 3)
    req = setup(cmem=f"npz:{tmp_path / 'cmem.npz'}") | {"args": f"npz:{tmp_path / 'args.npz'}",
                                                       "reference": f"npz:{tmp_path / 'ref.npz'}"}
    w = WorkerHandle(FAKE, setup=req)
    try:
        assert evaluate(w, cubin)[:2] == (Status.OK, "")
    finally:
        w.close()


@pytest.mark.parametrize("static, dynamic, status", [
    (40 * 1024, 16 * 1024, Status.OK),  # 56 KB in all: opted in, though the dynamic part is under 48 KB
    (0, 200 * 1024, Status.OK),  # dynamic up to the GPU's opt-in limit
    (0, 48 * 1024, Status.OK),
    (100 * 1024, 200 * 1024, Status.CUDA_ERROR),  # beyond what a block may have
])
def test_shared_memory_opt_in_counts_static_and_dynamic(cubin, static, dynamic, status):
    w = WorkerHandle(FAKE, setup=setup())
    try:
        got, message, _ = evaluate(w, cubin, smem=dynamic, STATIC=static)
        assert got is status
        if status is Status.CUDA_ERROR:
            assert message == (f"CUDA_ERROR_INVALID_VALUE in cuFuncSetAttribute: {dynamic} bytes of dynamic + "
                               f"{static} of static shared memory are more than one block may opt in to on this GPU")
    finally:
        w.close()


def cmem_spec(tmp_path, extra='cmem = "cmem_args.py:make_cmem"'):
    for f in ("cmem_args.py",):
        shutil.copy(HERE / f, tmp_path / f)
    (tmp_path / "axpb.cu").write_text(
        "__constant__ float d_coef[8];\n__device__ int d_offset;\n"
        "#ifndef BLOCK\n#define BLOCK 128\n#endif\n"
        'extern "C" __global__ void axpb(float *y, const float *x, int n) {\n'
        "    int i = blockIdx.x * BLOCK + threadIdx.x;\n"
        "    if (i < n) y[i] = d_coef[0] * x[i] + d_coef[1] + d_offset;\n}\n")
    path = tmp_path / "k.toml"
    path.write_text("\n".join([
        "[sweep]", 'arch = "sm_90a"', "[params]", "BLOCK = [64, 128]", "[shapes.s]", "defines = { N = 1000 }",
        "[kernel]", 'source = "axpb.cu"', 'name = "axpb"', 'grid = "cdiv(N, BLOCK)"', 'block = "BLOCK"',
        'args = "cmem_args.py:make_args"', "outputs = [0]", 'reference = "cmem_args.py:reference"', extra,
        "timing = { warmup_ms = 1, budget_ms = 2, min_reps = 3, max_reps = 10 }", ""]))
    return path


def test_the_cmem_key_is_checked_at_load(tmp_path):
    spec = load_spec(cmem_spec(tmp_path))
    assert spec.kernel.cmem == "cmem_args.py:make_cmem"
    with pytest.raises(SpecError, match="kernel.cmem: kernel cmem file 'nope.py' does not exist"):
        load_spec(cmem_spec(tmp_path, 'cmem = "nope.py:f"'))
    with pytest.raises(SpecError, match="kernel.cmem: expected"):
        load_spec(cmem_spec(tmp_path, "cmem = 3"))


@nvcc
def test_a_sweep_fills_constant_and_device_variables(tmp_path):
    spec = load_spec(cmem_spec(tmp_path))
    summary, db = run_sweep(spec, options=SweepOptions(confirm=None, strategy="grid"), jobs=2, kernel_backend=FAKE)
    with Store(db) as store:
        rows = store.results()
    assert [r.status for r in rows] == [Status.OK, Status.OK] and all(r.verified for r in rows)
