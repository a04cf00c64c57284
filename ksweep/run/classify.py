"""Judge a finished run (pure): status, message and metrics from its outcome."""

from __future__ import annotations

import re

from ..process import ProcessOutcome
from ..status import Status
from .protocol import parse_results

# CUDA runtime/driver error strings (cudaGetErrorString / cuGetErrorString wording) and
# the error names that harnesses print.
_CUDA_ERRORS = re.compile(
    r"(an illegal memory access was encountered|illegal memory access|misaligned address|"
    r"too many resources requested for launch|out of memory|the launch timed out and was terminated|"
    r"launch timeout|unspecified launch failure|an illegal instruction was encountered|"
    r"invalid device function|no kernel image is available for execution on the device|"
    r"invalid configuration argument|operation not supported on global/shared address space|"
    r"uncorrectable ECC error|device-side assert triggered|"
    r"CUDA_ERROR_[A-Z_]+|cuda(?:Error)[A-Za-z]+|CUBLAS_STATUS_(?!SUCCESS)[A-Z_]+)",
    re.IGNORECASE,
)


def find_cuda_error(text: str) -> str | None:
    """The line of ``text`` that reports a CUDA error, if any."""
    for line in text.splitlines():
        if line.startswith("@@RESULT"):
            continue
        m = _CUDA_ERRORS.search(line)
        if m:
            return line.strip()[:500]
    return None


def last_lines(text: str, n: int = 5) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])[:1000]


def classify(outcome: ProcessOutcome, timeout: float, shape: str | None = None):
    """(Status, message, metrics) of one run."""
    if outcome.error:
        return Status.RUN_ERROR, outcome.error, {}
    if outcome.timed_out:
        return Status.HANG, f"no exit after {timeout:g} s: process group killed", {}
    cuda = find_cuda_error(outcome.stderr) or find_cuda_error(outcome.stdout)
    if cuda:
        return Status.CUDA_ERROR, cuda, {}
    if outcome.signal is not None:
        return Status.CRASH, f"killed by {outcome.signal_name}" + (
            f": {last_lines(outcome.stderr, 3)}" if outcome.stderr.strip() else ""), {}
    if outcome.returncode != 0:
        return Status.RUN_ERROR, f"exit code {outcome.returncode}: {last_lines(outcome.stderr) or last_lines(outcome.stdout)}", {}
    metrics, problem = parse_results(outcome.stdout, shape)
    if metrics is None:
        return Status.NO_RESULT, problem or "no @@RESULT line in the output" + (
            " (output truncated)" if outcome.truncated else ""), {}
    if problem:
        return Status.NO_RESULT, problem, metrics
    return Status.OK, "", metrics
