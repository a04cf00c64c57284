"""Failures of the host, not of a config (pure, apart from looking programs up on PATH).

No GPU, a driver older than the CUDA runtime, a missing shared library, Python module or
program: every config would fail the same way, so storing them as the configs' results
would be wrong (and a resumed sweep would keep them forever). The driver stops at the
first such failure with one line saying what is missing and how to fix it, and stores
nothing for it. Where it can be known before building (a program not on PATH, a CUDA
program sweep on a host without a GPU), it is said before building.
"""

from __future__ import annotations

import os
import re
import shutil

from ..status import Status
from .gpu_state import ENERGY_UNAVAILABLE

# (pattern, what to tell the user). The CUDA runtime's and driver's own wording and names.
_HOST_FAILURES: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p, re.IGNORECASE), fix) for p, fix in (
    (r"no CUDA-capable device is detected|cudaErrorNoDevice\b|CUDA_ERROR_NO_DEVICE\b",
     "no CUDA GPU is visible to the program: run on a machine with a GPU, and check CUDA_VISIBLE_DEVICES"),
    (r"CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver\b",
     "the NVIDIA driver is older than the program's CUDA runtime: update the driver, or build with an "
     "older CUDA toolkit"),
    (r"system has unsupported display driver / cuda driver combination|cudaErrorSystemDriverMismatch\b"
     r"|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH\b",
     "the NVIDIA kernel driver and the CUDA user-space driver do not match: reinstall or reboot the driver"),
    (r"forward compatibility was attempted on non supported HW|cudaErrorCompatNotSupportedOnDevice\b"
     r"|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE\b",
     "CUDA forward compatibility is not supported on this GPU: update the NVIDIA driver"),
    (r"CUDA driver is a stub library|cudaErrorStubLibrary\b|CUDA_ERROR_STUB_LIBRARY\b",
     "the program loaded the CUDA driver's stub library: put the real libcuda.so first on the library path"),
    (r"all CUDA-capable devices are busy or unavailable|cudaErrorDevicesUnavailable\b",
     "every GPU is busy or in exclusive mode: free the GPU (nvidia-smi) or choose another with --gpus"),
    (r"error while loading shared libraries: (\S+): cannot open shared object file",
     "a shared library the program needs is not found: install it or add its folder to LD_LIBRARY_PATH "
     "([run] env)"),
    (r"No module named '?(cuda|cupy|torch|numpy)\b[^ ]*",
     "a Python module the run needs is not installed (for kernel mode: pip install 'ksweep[gpu]')"),
    (re.escape(ENERGY_UNAVAILABLE) + r"[^|\n]*",
     "the energy observer reads NVML's energy counter: run on a GPU that has one (Volta or newer) with "
     "nvidia-ml-py installed, or drop the energy objectives and [kernel] observers"),
))


def host_failure(text: str) -> str | None:
    """What is wrong with the host, if ``text`` (a run's message or output) says so."""
    for pattern, fix in _HOST_FAILURES:
        m = pattern.search(text)
        if m:
            return f"{m.group(0).strip()}: {fix}"
    return None


def build_problem(build, job) -> str | None:
    """A build that failed because the build command cannot be started (not on PATH, not
    executable): every config would fail so."""
    if build.status is Status.OK or not build.message.startswith("cannot start"):
        return None
    return f"the build command cannot be started ({build.message}): install it, or fix build.command"


def run_problem(outcome) -> str | None:
    """A run that failed for a reason outside its config (``outcome``: run/program.RunOutcome)."""
    if outcome.status is Status.OK:
        return None
    if outcome.message.startswith("cannot start"):
        return f"the run command cannot be started ({outcome.message}): install it, or fix run.command"
    text = outcome.message
    problem = host_failure(text)
    if problem:
        return problem
    if outcome.status is Status.RUN_ERROR and re.match(r"exit code 127\b", text) and "not found" in text:
        return f"the run command's program is not found ({text[:200]}): install it, or fix run.command"
    return None


def _first_programs(spec) -> list[tuple[str, str]]:
    """(key, program) of every command whose first word is a program to look up on PATH."""
    out = []

    def add(key: str, command) -> None:
        if command and "{" not in command[0]:
            out.append((key, command[0]))

    add("build.command", spec.build.command)
    add("run.command", spec.run.command)
    if spec.build.harness is not None:
        add("build.harness.command", spec.build.harness.command)
    for v in spec.variant_list():
        if v.build_command is not None:
            add(f"variants.{v.name}.build_command", v.build_command)
        if v.run_command is not None:
            add(f"variants.{v.name}.run_command", v.run_command)
    return out


def missing_programs(spec) -> str | None:
    """The first command whose program is not found (relative names from the spec's folder)."""
    for key, program in _first_programs(spec):
        if os.sep in program:  # a relative path may name a file of the run's folder: not checked
            if not os.path.isabs(program) or os.access(program, os.X_OK):
                continue
        elif shutil.which(program) is not None:
            continue
        return f"{key}: the program '{program}' is not found: install it or fix {key}"
    return None


_CUDA_CODE = re.compile(r"__global__|<<<|\bcuda[A-Z]\w*\s*\(|\bcu[A-Z]\w*\s*\(")


def _cuda_sources(paths) -> bool:
    """Whether any of these files defines or launches kernels or calls the CUDA runtime or
    driver API (nvcc also builds plain C++, which needs no GPU)."""
    for path in paths:
        try:
            with open(path, errors="replace") as f:
                if _CUDA_CODE.search(f.read(4 << 20)):
                    return True
        except OSError:
            continue
    return False


def needs_gpu(spec) -> bool:
    """Whether a command runs what nvcc built ({binary} or {harness} first) from sources
    with CUDA code in them."""
    def nvcc(command) -> bool:
        return bool(command) and os.path.basename(command[0]).startswith("nvcc")

    def cuda(command, sources) -> bool:
        files = [spec.root / s for s in sources] + [spec.root / a for a in command[1:]
                                                     if a.endswith((".cu", ".cuh", ".cpp", ".cc", ".c", ".h"))]
        return nvcc(command) and _cuda_sources(files)

    def runs_built(command) -> bool:
        return bool(command) and command[0] in ("{binary}", "{harness}")

    harness = spec.build.harness
    for v in spec.variant_list():
        build = v.build_command if v.build_command is not None else spec.build.command
        run = v.run_command if v.run_command is not None else spec.run.command
        sources = v.sources if v.sources is not None else spec.build.sources
        if not runs_built(run):
            continue
        if run[0] == "{binary}" and cuda(build, sources):
            return True
        if run[0] == "{harness}" and harness is not None and cuda(
                harness.command, harness.sources if harness.sources is not None else sources):
            return True
    return False
