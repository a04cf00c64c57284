"""The checks' conformance suite (ksweep.testing.backend_suite) on the stand-in backend, and on
the real comparison kernels (ksweep/kernel/gpucheck.cu) compiled for the CPU with a few lines
of CUDA stand-ins (tests/kernels/cuda_on_cpu.h) and run one thread after another over a small
grid, through the same glue (gpucheck.DeviceChecks) that drives them on a GPU; the kernels
also compile with NVRTC for the GPUs it knows."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ksweep.kernel import gpucheck
from ksweep.kernel.backend import DeviceArray, FakeBackend
from ksweep.testing.backend_suite import BackendSuite

from conftest import KERNELS


class TestFakeBackend(BackendSuite):
    @pytest.fixture
    def backend(self):
        return FakeBackend(str(KERNELS / "fake_vadd.py"))


class CpuBackend:
    """The primitives DeviceChecks uses, on this process's memory (allocations 256-byte
    aligned, as cuMemAlloc's); a launch runs the kernel for each block and thread in turn."""

    def __init__(self, lib):
        self.lib = lib
        self._buffers = []
        self.checks = gpucheck.DeviceChecks(self, {n: getattr(lib, n) for n in gpucheck.FUNCTIONS}, threads=5,
                                            max_blocks=3)

    def alloc(self, nbytes):
        buf = np.zeros(nbytes + 256, np.uint8)
        self._buffers.append(buf)
        return buf.ctypes.data + (-buf.ctypes.data % 256)

    def host_array(self, shape, dtype):
        return np.empty(shape, dtype)

    def upload(self, ptr, array):
        ctypes.memmove(ptr, array.ctypes.data, array.nbytes)

    def download(self, ptr, array):
        ctypes.memmove(array.ctypes.data, ptr, array.nbytes)

    def fill(self, ptr, byte, nbytes):
        ctypes.memset(ptr, byte, nbytes)

    def copy(self, dst, src, nbytes):
        ctypes.memmove(dst, src, nbytes)

    def sync(self):
        pass

    def launch(self, fn, grid, block, smem, args):
        as_c = {np.uint64: ctypes.c_uint64, np.float32: ctypes.c_float, np.float64: ctypes.c_double}
        c_args = [ctypes.c_void_p(a.ptr) if isinstance(a, DeviceArray) else as_c[type(a)](a.item()) for a in args]
        fn.restype = None
        for b in range(grid[0]):
            for t in range(block[0]):
                self.lib.ks_emulate_at(grid[0], block[0], b, t)
                fn(*c_args)

    def check_output(self, got, expected, atol, rtol):
        assert self.checks.handles(got, expected)
        return self.checks.check_output(got, expected, atol, rtol)

    def differing_bytes(self, a, b):
        return self.checks.differing_bytes(a, b)


@pytest.fixture(scope="module")
def kernels_on_cpu(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not on PATH")
    lib = tmp_path_factory.mktemp("gpucheck") / "gpucheck.so"
    subprocess.run(["g++", "-O1", "-std=c++17", "-ffp-contract=off", "-shared", "-fPIC", "-include",
                    str(KERNELS / "cuda_on_cpu.h"), "-x", "c++", str(gpucheck.SOURCE), "-o", str(lib)], check=True)
    return ctypes.CDLL(str(lib))


class TestKernelsOnCpu(BackendSuite):
    @pytest.fixture
    def backend(self, kernels_on_cpu):
        return CpuBackend(kernels_on_cpu)


def test_every_output_type_has_its_kernels_and_nothing_else():
    names = set(gpucheck.FUNCTIONS)
    source = gpucheck.SOURCE.read_text()
    for g, w in gpucheck.PAIRS:
        assert f"KS_CHECKS({g}_{w}," in source
        assert {f"ks_check_{g}_{w}", f"ks_worst_{g}_{w}"} <= names
    assert source.count("KS_CHECKS(") - 1 == len(gpucheck.PAIRS)  # the macro's own definition aside


@pytest.mark.parametrize("capability, kind", [((9, 0), b"\x7fELF"), ((7, 5), b"\x7fELF"), ((9, 9), b"//")])
def test_the_kernels_compile_with_nvrtc(capability, kind):
    """A cubin for an architecture NVRTC knows; PTX of the newest one below, for one it does not.
    Built in a process of its own: with libnvrtc loaded into the test process, the process-tree
    tests run after it in the same session failed (the programs they start were not seen
    running within 20 s; the cause is not found)."""
    pytest.importorskip("cuda.bindings.nvrtc")
    code = "import sys; from ksweep.kernel import gpucheck; sys.stdout.buffer.write(gpucheck.build((%d, %d)))"
    done = subprocess.run([sys.executable, "-c", code % capability], capture_output=True, timeout=300)
    if done.returncode:
        err = done.stderr.decode(errors="replace")
        if "libnvrtc" in err or "not found" in err.lower():
            pytest.skip(f"no NVRTC library: {err.strip().splitlines()[-1]}")
        raise AssertionError(err[-2000:])
    image = done.stdout
    assert image.startswith(kind)
    if kind == b"//":
        assert b".target sm_90" in image and b"ks_check_float32_float32" in image
