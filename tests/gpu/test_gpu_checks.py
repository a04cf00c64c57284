"""The checks on a real GPU: the comparison kernels answer every crafted case of the
conformance suite as numpy does (and the host fallback too), and a sweep reports kernels
that write an input, leave an element unwritten or get one wrong, with the host's messages."""

import pytest

from ksweep import Status, load_spec
from ksweep.app.sweep import run_sweep
from ksweep.kernel.backend import CudaBackend
from ksweep.kernel.worker import Worker
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import SweepOptions
from ksweep.testing.backend_suite import BackendSuite

from conftest import KERNELS, vadd_kernel_spec


@pytest.fixture(scope="module")
def on_gpu():
    backend = CudaBackend(0)
    assert backend.checks_where() == "gpu"  # built by NVRTC and loaded: not the host fallback
    return backend


@pytest.fixture(scope="module")
def on_host():
    backend = CudaBackend(0, gpu_checks=False)
    assert backend.checks_where().startswith("host")
    return backend


class TestComparisonKernels(BackendSuite):
    @pytest.fixture
    def backend(self, on_gpu):
        return on_gpu


class TestHostFallback(BackendSuite):
    @pytest.fixture
    def backend(self, on_host):
        return on_host


def test_the_worker_says_its_checks_run_on_the_gpu():
    worker = Worker(CudaBackend(0))
    answer = worker.setup({"args": "vadd_args.py:make_args", "root": str(KERNELS), "sizes": {"N": 1 << 20},
                           "seed": 0, "outputs": [0], "reference": "vadd_args.py:reference"})
    assert answer["checks"] == "gpu"
    assert all(isinstance(e.ptr, int) and e.dtype == "float32" for e in worker.expected + worker.expected2)


def test_wrong_kernels_get_the_hosts_messages(tmp_path):
    n = 1 << 24
    vadd_kernel_spec(tmp_path, "BLOCK = [256]\nELEMS = [1, 4]\nBAD = [0, 4, 5, 6]", n, "timeout = 10.0")
    _, db = run_sweep(load_spec(tmp_path / "k.toml"), options=SweepOptions(confirm=None, strategy="grid"))
    with Store(db) as store:
        by = {(r.params["ELEMS"], r.params["BAD"]): r for r in store.results()}
    for e in (1, 4):
        # (4, 0) runs after (1, 4) wrote into its input: OK only if that input was restored
        assert by[(e, 0)].status is Status.OK, by[(e, 0)].message
        writes, unwritten, off = by[(e, 4)], by[(e, 5)], by[(e, 6)]
        assert writes.status is Status.CHECKSUM_MISMATCH and writes.message.startswith(
            "input argument 1 is not an output but the kernel changed it ("), writes.message
        assert writes.message.endswith(f" of {4 * n} bytes)")
        assert unwritten.status is Status.CHECKSUM_MISMATCH
        assert unwritten.message == f"output 0: 1 elements not written or not finite (first at {n - 1})"
        assert off.status is Status.CHECKSUM_MISMATCH and off.message.startswith(
            "output 0: max abs error 1 (element 12345: got "), off.message
