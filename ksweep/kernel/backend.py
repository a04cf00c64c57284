"""What the worker needs from a GPU: memory, modules, launches, events, and checks.

The contract, which ``CudaBackend`` (the real one, cuda-python's driver API) and
``FakeBackend`` (a stand-in for tests without a GPU: its "kernels" are Python functions,
and they can fault or hang on purpose, so the worker protocol is tested in CI) both keep:

- the config: ``set_config(params)`` before each config's evaluation (the stand-in's kernels
  are played with its parameters; a cubin on a GPU is the config already: nothing to do);
- memory: ``alloc(nbytes) -> ptr``, ``upload(ptr, array)``, ``download(ptr, array)``,
  ``fill(ptr, byte, nbytes)``, ``copy(dst, src, nbytes)`` (device to device), and
  ``host_array(shape, dtype)`` (host memory fast to copy to and from);
- modules: ``load(cubin, entry) -> fn`` (one module loaded at a time), ``symbol(name)``,
  ``static_smem(fn)``, ``set_dynamic_smem(fn, nbytes)``;
- launches and time: ``launch(fn, grid, block, smem, args)``, ``sync()``, ``event()``,
  ``record(event)``, ``elapsed_ms(start, end)``;
- checks, on arrays in its memory (``DeviceArray``): ``check_output(got, expected, atol,
  rtol) -> args.OutputCheck``, the comparison of ``args.check_output`` (``expected`` in the
  work type, ``args.work_dtype``), and ``differing_bytes(a, b) -> int``; they wait for the
  launches before them. ``checks_where()`` says where they run ("gpu", or "host" and why).

Errors are ``CudaError`` (its ``fatal``: the context is lost). ``ksweep.testing.backend_suite``
holds the conformance tests of the checks.

``FakeBackend`` can also play a GPU drawing scripted power, with an energy counter as NVML's (the energy
observer's tests).

Both give the worker a GPU monitor (``monitor()``, run/gpu_state.py: NVML on a real GPU)
and the name NVML knows their GPU by (``nvml_device``), a clock (``now()``) and
``wait(event)``.
"""

from __future__ import annotations

import ctypes
import inspect
import math
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import gpucheck
from .args import OutputCheck, check_output, differing_bytes

# Errors after which the CUDA context is unusable: the worker must be restarted.
STICKY = {
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_UNKNOWN",
}


class CudaError(Exception):
    def __init__(self, name: str, where: str = ""):
        self.name = name
        self.fatal = name in STICKY
        super().__init__(f"{name}{' in ' + where if where else ''}")


@dataclass(frozen=True)
class DeviceArray:
    ptr: int
    dtype: str
    shape: tuple
    nbytes: int


class CudaBackend:
    """The CUDA driver API through cuda-python (``cuda.bindings.driver``); the checks on the
    GPU unless ``gpu_checks`` is false (then on the host: measuring what they save)."""

    def __init__(self, device: int = 0, gpu_checks: bool = True):
        try:
            from cuda.bindings import driver as cu
        except ImportError:  # cuda-python before 12.6
            from cuda import cuda as cu  # type: ignore
        self.cu = cu
        self._check(cu.cuInit(0), "cuInit")
        self.device = self._check(cu.cuDeviceGet(device), "cuDeviceGet")
        # the comparison kernels, compiled by NVRTC on a thread (it releases the GIL) while the
        # context is made and the worker makes its inputs; loaded at the first check
        capability = tuple(int(self._check(cu.cuDeviceGetAttribute(a, self.device), "cuDeviceGetAttribute")) for a in (
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        self._checks = None  # gpucheck.DeviceChecks once loaded
        self._checks_where: str | None = None if gpu_checks else "host (asked for)"
        if gpu_checks:
            builder = ThreadPoolExecutor(1)
            self._checks_image = builder.submit(gpucheck.build, capability)
            builder.shutdown(wait=False)
        self.ctx = self._check(cu.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        self._check(cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self.stream = self._check(cu.cuStreamCreate(0), "cuStreamCreate")
        attr = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
        self.l2_bytes = int(self._check(cu.cuDeviceGetAttribute(attr, self.device), "cuDeviceGetAttribute"))
        name = self._check(cu.cuDeviceGetName(256, self.device), "cuDeviceGetName")
        self.name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
        self._modules: dict[str, Any] = {}
        self._module = None  # the module of the last load: its symbols are what symbol() finds
        self._host_copies: dict[tuple, np.ndarray] = {}  # page-locked buffers of the checks on the host
        self._pool: ThreadPoolExecutor | None = None

    @property
    def nvml_device(self) -> str:
        """NVML's name for this GPU, its PCI bus id: the worker sees one GPU
        (CUDA_VISIBLE_DEVICES), whose CUDA index need not be NVML's."""
        bus = self._check(self.cu.cuDeviceGetPCIBusId(32, self.device), "cuDeviceGetPCIBusId")
        return (bus.split(b"\0", 1)[0].decode() if isinstance(bus, bytes) else str(bus)).strip("\0")

    @staticmethod
    def monitor():
        """NVML, opened as for every run (run/gpu_state.py)."""
        from ..run.gpu_state import NvmlMonitor

        return NvmlMonitor()

    @staticmethod
    def now() -> float:
        return time.perf_counter()

    def set_config(self, params: dict) -> None:
        """Nothing: the loaded cubin is the config's."""

    def _check(self, result, where: str):
        err, *values = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            _, name = self.cu.cuGetErrorName(err)
            raise CudaError(name.decode() if isinstance(name, bytes) else str(err), where)
        return values[0] if len(values) == 1 else (tuple(values) if values else None)

    def alloc(self, nbytes: int) -> int:
        return int(self._check(self.cu.cuMemAlloc(max(1, nbytes)), "cuMemAlloc"))

    def host_array(self, shape, dtype) -> np.ndarray:
        """A numpy array in page-locked host memory (freed with the process)."""
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        ptr = int(self._check(self.cu.cuMemAllocHost(max(1, nbytes)), "cuMemAllocHost"))
        buf = (ctypes.c_byte * max(1, nbytes)).from_address(ptr)
        return np.frombuffer(buf, dtype=np.uint8)[:nbytes].view(dtype).reshape(shape)

    def upload(self, ptr: int, array: np.ndarray) -> None:
        self._check(self.cu.cuMemcpyHtoD(ptr, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")

    def download(self, ptr: int, array: np.ndarray) -> None:
        self._check(self.cu.cuMemcpyDtoH(array.ctypes.data, ptr, array.nbytes), "cuMemcpyDtoH")

    def fill(self, ptr: int, byte: int, nbytes: int) -> None:
        self._check(self.cu.cuMemsetD8Async(ptr, byte, nbytes, self.stream), "cuMemsetD8Async")

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        self._check(self.cu.cuMemcpyDtoDAsync(dst, src, nbytes, self.stream), "cuMemcpyDtoDAsync")

    # -- checks ------------------------------------------------------------------------------
    def checks_where(self) -> str:
        self._device_checks()
        return self._checks_where

    def check_output(self, got: DeviceArray, expected: DeviceArray, atol: float, rtol: float) -> OutputCheck:
        checks = self._device_checks()
        if checks is not None and checks.handles(got, expected):
            return checks.check_output(got, expected, atol, rtol)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(min(16, os.cpu_count() or 1))
        return check_output(self._on_host(got, 0), self._on_host(expected, 1), atol, rtol, self._pool)

    def differing_bytes(self, a: DeviceArray, b: DeviceArray) -> int:
        checks = self._device_checks()
        if checks is not None:
            return checks.differing_bytes(a, b)
        return differing_bytes(self._on_host(a, 0), self._on_host(b, 1))

    def _device_checks(self):
        """The comparison kernels, loaded at the first call; None when they could not be built
        or loaded (the checks then download both arrays and compare them on the host)."""
        if self._checks_where is None:
            try:
                module = self._check(self.cu.cuModuleLoadData(self._checks_image.result()), "cuModuleLoadData")
                functions = {name: self._check(self.cu.cuModuleGetFunction(module, name.encode()),
                                               "cuModuleGetFunction") for name in gpucheck.FUNCTIONS}
                self._checks = gpucheck.DeviceChecks(self, functions)
                self._checks_where = "gpu"
            except Exception as exc:  # noqa: BLE001 - no NVRTC, an old driver...: compared on the host
                if isinstance(exc, CudaError) and exc.fatal:
                    raise
                self._checks_where = f"host (the comparison kernels: {exc})"
                print(f"ksweep worker: outputs are compared on the host: {exc}", file=sys.stderr)
        return self._checks

    def _on_host(self, array: DeviceArray, slot: int) -> np.ndarray:
        """``array`` downloaded into a page-locked buffer (two per shape and type: ``slot``)."""
        key = (slot, tuple(array.shape), array.dtype)
        if key not in self._host_copies:
            self._host_copies[key] = self.host_array(array.shape, array.dtype)
        self.sync()
        self.download(array.ptr, self._host_copies[key])
        return self._host_copies[key]

    def load(self, cubin: str, entry: str):
        for old in list(self._modules):  # keep one module loaded: a sweep loads thousands
            if old != cubin:
                self.cu.cuModuleUnload(self._modules.pop(old))
        if cubin not in self._modules:
            self._modules[cubin] = self._check(self.cu.cuModuleLoadData(Path(cubin).read_bytes()), "cuModuleLoadData")
        self._module = self._modules[cubin]
        return self._check(self.cu.cuModuleGetFunction(self._modules[cubin], entry.encode()), "cuModuleGetFunction")

    def symbol(self, name: str) -> tuple[int, int]:
        """(device address, size in bytes) of a module-scope ``__constant__`` or ``__device__``
        variable of the last loaded module (CUDA_ERROR_NOT_FOUND when it has none of that name)."""
        ptr, size = self._check(self.cu.cuModuleGetGlobal(self._module, name.encode()), "cuModuleGetGlobal")
        return int(ptr), int(size)

    def static_smem(self, fn) -> int:
        """Bytes of static shared memory the function declares."""
        attr = self.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
        return int(self._check(self.cu.cuFuncGetAttribute(attr, fn), "cuFuncGetAttribute"))

    def set_dynamic_smem(self, fn, nbytes: int) -> None:
        attr = self.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self._check(self.cu.cuFuncSetAttribute(fn, attr, nbytes), "cuFuncSetAttribute")

    def launch(self, fn, grid, block, smem: int, args: list) -> None:
        holders = [_ctype(a) for a in args]
        pointers = (ctypes.c_void_p * max(1, len(holders)))(*[ctypes.addressof(h) for h in holders])
        self._check(self.cu.cuLaunchKernel(fn, *grid, *block, smem, self.stream, ctypes.addressof(pointers), 0),
                    "cuLaunchKernel")

    def sync(self) -> None:
        self._check(self.cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def event(self):
        return self._check(self.cu.cuEventCreate(0), "cuEventCreate")

    def record(self, event) -> None:
        self._check(self.cu.cuEventRecord(event, self.stream), "cuEventRecord")

    def wait(self, event) -> None:
        """Until the work recorded before ``event`` has finished (what came after may still run)."""
        self._check(self.cu.cuEventSynchronize(event), "cuEventSynchronize")

    def elapsed_ms(self, start, end) -> float:
        return float(self._check(self.cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))


_CTYPES = {
    "int8": ctypes.c_int8, "uint8": ctypes.c_uint8, "int16": ctypes.c_int16, "uint16": ctypes.c_uint16,
    "int32": ctypes.c_int32, "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float, "float64": ctypes.c_double, "bool": ctypes.c_bool,
}


def _ctype(arg):
    if isinstance(arg, DeviceArray):
        return ctypes.c_void_p(arg.ptr)
    if isinstance(arg, np.float16):
        return ctypes.c_uint16(int(arg.view(np.uint16)))
    return _CTYPES[np.asarray(arg).dtype.name](arg.item())


class FakeFault(Exception):
    """Raised by a fake kernel to act like a faulting CUDA kernel."""

    def __init__(self, name: str = "CUDA_ERROR_ILLEGAL_ADDRESS"):
        super().__init__(name)
        self.name = name


class FakeBackend:
    """A CPU stand-in: 'kernels' are functions ``fn(params, grid, block, smem, *arrays_and_scalars)``
    of a Python module; an entry named in the module runs, FakeFault(name) fails like CUDA.

    The module's ``SYMBOLS`` (name -> bytes) are its module-scope variables: each load gives
    them fresh zeroed memory, as loading a cubin does, and a kernel that declares a
    ``symbols`` parameter receives them (name -> uint8 array); one that declares
    ``addresses`` receives each argument's device address (None for a scalar).
    ``STATIC_SMEM`` (bytes, or a function of the params) is its static shared memory; a
    launch fails, as on an H100, when static + dynamic exceeds 48 KB without the opt-in
    attribute or 227 KB with it.

    A module that defines ``POWER_W(params)`` (watts) plays a GPU whose kernels draw that
    power for ``LAUNCH_MS(params)`` milliseconds each (default 0.1), on a
    clock of its own that only launches move (``now()``, and what events record): its
    monitor's energy counter integrates that power and, as NVML's, changes only every
    ``ENERGY_UPDATE_MS`` (default 20) of that clock. So time and energy measured on it are
    deterministic, and their answers known."""

    def __init__(self, module_path: str):
        from .args import load_function

        if not Path(module_path).is_file():
            raise FileNotFoundError(f"fake kernels module {module_path} does not exist")
        self._load_fn = lambda entry: load_function(f"{Path(module_path).name}:{entry}", Path(module_path).parent,
                                                    key="fake backend")
        self.memory: dict[int, bytearray] = {}
        self.l2_bytes = 1 << 20
        self.name = "fake"
        self._next = 1 << 12
        self._poisoned = False
        self.params: dict = {}
        self._symbols: dict[str, int] = {}  # name -> address, of the last loaded "module"
        self._opt_in: dict[int, int] = {}  # id(fn) -> dynamic shared memory opted in to
        self.nvml_device = "fake"
        self._clock = self._energy = self._counter = 0.0  # its clock (s), energy and counter (mJ)
        self._power = None  # the stand-in GPU's power model: (POWER_W, LAUNCH_MS)
        try:
            power = self._load_fn("POWER_W")
        except Exception:  # noqa: BLE001 - a module without a power model
            power = None
        if power is not None:
            g = power.__globals__
            self._power = (power, g.get("LAUNCH_MS", lambda params: 0.1))
        self._update_s = float((power.__globals__ if power else {}).get("ENERGY_UPDATE_MS", 20.0)) / 1e3
        self._next_update = self._update_s

    def monitor(self):
        """The stand-in GPU's NVML: its energy counter (with a power model), nothing else."""
        from ..run.gpu_state import NO_MONITOR, FakeMonitor

        if self._power is None:
            return NO_MONITOR
        return FakeMonitor(lambda index, n: None, energy=lambda device, n: self._counter)

    def now(self) -> float:
        return self._clock if self._power is not None else time.perf_counter()

    def set_config(self, params: dict) -> None:
        """The parameters the next launches play their kernels with."""
        self.params = params

    def _draw(self, seconds: float, watts: float) -> None:
        """A launch of ``seconds`` at ``watts`` on the stand-in clock; the counter takes the
        energy at each update time it passes."""
        end = self._clock + seconds
        while self._next_update <= end:
            self._counter = self._energy + watts * (self._next_update - self._clock) * 1e3
            self._next_update += self._update_s
        self._energy += watts * seconds * 1e3
        self._clock = end

    def host_array(self, shape, dtype) -> np.ndarray:
        return np.empty(shape, dtype)

    def alloc(self, nbytes: int) -> int:
        ptr = self._next
        self._next += max(1, nbytes) + 256
        self.memory[ptr] = bytearray(max(1, nbytes))
        return ptr

    def upload(self, ptr, array):
        self.memory[ptr][: array.nbytes] = array.tobytes()

    def download(self, ptr, array):
        array.view(np.uint8).ravel()[:] = np.frombuffer(bytes(self.memory[ptr][: array.nbytes]), dtype=np.uint8)

    def fill(self, ptr, byte, nbytes):
        self.memory[ptr][:nbytes] = bytes([byte]) * nbytes

    def copy(self, dst, src, nbytes):
        self.memory[dst][:nbytes] = self.memory[src][:nbytes]

    def checks_where(self):
        return "host"

    def check_output(self, got, expected, atol, rtol):
        return check_output(self._view(got), self._view(expected), atol, rtol)

    def differing_bytes(self, a, b):
        return differing_bytes(self._view(a), self._view(b))

    def _view(self, a: DeviceArray) -> np.ndarray:
        return np.frombuffer(self.memory[a.ptr], dtype=np.uint8)[: a.nbytes].view(a.dtype).reshape(a.shape)

    def load(self, cubin, entry):
        if not Path(cubin).exists():
            raise CudaError("CUDA_ERROR_FILE_NOT_FOUND", "cuModuleLoadData")
        try:
            fn = self._load_fn(entry)
        except Exception:
            raise CudaError("CUDA_ERROR_NOT_FOUND", "cuModuleGetFunction") from None
        self._symbols = {name: self.alloc(nbytes) for name, nbytes in fn.__globals__.get("SYMBOLS", {}).items()}
        self._opt_in.pop(id(fn), None)
        return fn

    def symbol(self, name):
        if name not in self._symbols:
            raise CudaError("CUDA_ERROR_NOT_FOUND", "cuModuleGetGlobal")
        ptr = self._symbols[name]
        return ptr, len(self.memory[ptr])

    def static_smem(self, fn):
        declared = fn.__globals__.get("STATIC_SMEM", 0)
        return int(declared(self.params) if callable(declared) else declared)

    def set_dynamic_smem(self, fn, nbytes):
        if nbytes + self.static_smem(fn) > 227 * 1024:
            raise CudaError("CUDA_ERROR_INVALID_VALUE", "cuFuncSetAttribute")
        self._opt_in[id(fn)] = nbytes

    def launch(self, fn, grid, block, smem, args):
        if self._poisoned:
            raise CudaError("CUDA_ERROR_ILLEGAL_ADDRESS", "cuLaunchKernel")
        if block[0] * block[1] * block[2] > 1024:
            raise CudaError("CUDA_ERROR_INVALID_VALUE", "cuLaunchKernel")
        if smem > self._opt_in.get(id(fn), 48 * 1024 - self.static_smem(fn)):
            raise CudaError("CUDA_ERROR_INVALID_VALUE", "cuLaunchKernel")
        views = [self._view(a) if isinstance(a, DeviceArray) else a for a in args]
        extra = {}
        declared = inspect.signature(fn).parameters
        if "symbols" in declared:
            extra["symbols"] = {n: np.frombuffer(self.memory[p], dtype=np.uint8) for n, p in self._symbols.items()}
        if "addresses" in declared:  # where each argument lies (a stand-in that keeps outputs by address)
            extra["addresses"] = [a.ptr if isinstance(a, DeviceArray) else None for a in args]
        try:
            fn(self.params, grid, block, smem, *views, **extra)
        except FakeFault as fault:
            self._poisoned = True
            raise CudaError(fault.name, "cuStreamSynchronize") from None
        if self._power is not None:
            watts, ms = (f(self.params) for f in self._power)
            if not (math.isfinite(watts) and math.isfinite(ms)):
                raise ValueError("POWER_W and LAUNCH_MS must be finite numbers")
            self._draw(float(ms) / 1e3, float(watts))

    def sync(self):
        pass

    def event(self):
        return [0.0]

    def record(self, event):
        event[0] = self.now()

    def wait(self, event):
        pass

    def elapsed_ms(self, start, end):
        return (end[0] - start[0]) * 1e3
