"""Judge a finished run (pure): status, message and metrics from what happened to it.

A run is a process (``classify``: its exit code, signal, timeout and output; a persistent
host's answer is made into one), or a request to kernel mode's GPU worker
(``classify_answer``: the worker's reply of facts, its timeout or its death). A run that
could not be attempted is ``not_run``; one whose cluster worker was lost is ``lost``. These
are the only places a run gets its status; whether an OK run's metrics pass the spec's
check is verify/checks.judge's call.

A CUDA error is recognised by its real forms: an error name (``cudaErrorIllegalAddress``,
``CUDA_ERROR_LAUNCH_FAILED``, ``CUBLAS_STATUS_EXECUTION_FAILED``), "CUDA error" followed
by a code or a message, or the runtime's own message (cudaGetErrorString's wording:
"an illegal memory access was encountered", "out of memory", ...). Such text counts
only when the run failed: it exited non-zero, was killed by a signal, or printed no
valid ``@@RESULT`` line. A run that exits 0 with a valid result is OK whatever its log
says ("retrying after out of memory", "no illegal memory access found").
"""

from __future__ import annotations

import re
import signal

from ..process import ProcessOutcome
from ..status import Status
from .handle import Answer
from .protocol import PREFIX, parse_results

# Error names of the runtime, the driver and the CUDA libraries; never their SUCCESS.
_ERROR_NAMES = (
    r"\bcudaError[A-Z]\w*"
    r"|\bCUDA_ERROR_[A-Z0-9_]+"
    r"|\b(?:CUBLAS|CUSPARSE|CUSOLVER|CUDNN|CURAND|CUFFT|NVRTC)_(?!(?:STATUS_)?SUCCESS\b)[A-Z][A-Z0-9_]+"
)
# "CUDA error" with something that says which: "CUDA error: ...", "CUDA error 700",
# "CUDA error (2)", "CUDA error at x.cu:42 code=700", "CUDA error #700".
_CUDA_ERROR_PHRASE = r"\bcuda[ _-]?error\b\s*(?:[:=(#\[]|\d|code\b|at\b)"
# cudaGetErrorString / cuGetErrorString wording (and PyTorch's device-side assert).
_ERROR_MESSAGES = (
    "an illegal memory access was encountered", "illegal memory access", "illegal address",
    "misaligned address", "too many resources requested for launch", "out of memory",
    "the launch timed out and was terminated", "launch timeout", "unspecified launch failure",
    "an illegal instruction was encountered", "illegal instruction", "invalid program counter",
    "hardware stack error", "invalid device function", "invalid device ordinal",
    "no kernel image is available for execution on the device", "invalid configuration argument",
    "operation not supported on global/shared address space", "uncorrectable ecc error",
    "device-side assert triggered", "no cuda-capable device is detected",
    "all cuda-capable devices are busy or unavailable",
    "cuda driver version is insufficient for cuda runtime version",
)
_CUDA_ERRORS = re.compile(
    "|".join([_ERROR_NAMES, "(?i:" + _CUDA_ERROR_PHRASE + ")",
              "(?i:" + "|".join(re.escape(m) for m in _ERROR_MESSAGES) + ")"])
)


def find_cuda_error(text: str) -> str | None:
    """The first line of ``text`` that reads like a CUDA error report, if any.

    Pure text matching: whether the line means the run failed is ``classify``'s call."""
    for line in text.splitlines():
        if line.lstrip().startswith(PREFIX):
            continue
        if _CUDA_ERRORS.search(line):
            return line.strip()[:500]
    return None


def last_lines(text: str, n: int = 5) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])[:1000]


def classify(outcome: ProcessOutcome, timeout: float, shape: str | None = None,
             context_error: str | None = None) -> tuple[Status, str, dict]:
    """(Status, message, metrics) of one run. ``context_error``: the program ended, but a
    persistent host found the CUDA context broken by its kernels (what the driver said)."""
    status, message, metrics = _classify(outcome, timeout, shape)
    if context_error:
        status = Status.CUDA_ERROR if status is Status.OK else status
        message = "; ".join(m for m in (message, context_error) if m)
    return status, message, metrics


def _classify(outcome: ProcessOutcome, timeout: float, shape: str | None) -> tuple[Status, str, dict]:
    if outcome.error:
        return Status.RUN_ERROR, outcome.error, {}
    if outcome.timed_out:
        return Status.HANG, f"no exit after {timeout:g} s: process group killed", {}
    metrics, problem = parse_results(outcome.stdout, shape)
    failed = outcome.signal is not None or outcome.returncode != 0
    valid_result = metrics is not None and not problem
    if failed or not valid_result:
        cuda = find_cuda_error(outcome.stderr) or find_cuda_error(outcome.stdout)
        if cuda:
            return Status.CUDA_ERROR, cuda, {}
    if outcome.signal is not None:
        return Status.CRASH, f"killed by {outcome.signal_name}" + (
            f": {last_lines(outcome.stderr, 3)}" if outcome.stderr.strip() else ""), {}
    if outcome.returncode != 0:
        said = last_lines(outcome.stderr) or last_lines(outcome.stdout)
        return Status.RUN_ERROR, f"exit code {outcome.returncode}" + (f": {said}" if said else " (no output)"), {}
    if metrics is None:
        return Status.NO_RESULT, problem or "no @@RESULT line in the output" + (
            " (output truncated)" if outcome.truncated else ""), {}
    if problem:
        return Status.NO_RESULT, problem, metrics
    return Status.OK, "", metrics


def classify_answer(answer: Answer, timeout: float) -> tuple[Status, str, dict, bool]:
    """(Status, message, metrics, outputs checked) of one request to kernel mode's GPU worker
    (kernel/worker.py says what its replies hold). Outputs checked: they matched the
    reference's, or were captured as the reference; a kernel without reference outputs to
    compare with is OK but not checked."""
    if answer.kind == "no_start":
        return Status.RUN_ERROR, answer.detail, {}, False
    if answer.kind == "timeout":
        return Status.HANG, f"no answer within {timeout:g} s: worker killed and restarted", {}, False
    if answer.kind == "dead":
        code = answer.returncode
        how = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
        return Status.CRASH, f"the worker died ({how}): {answer.detail}", {}, False
    reply = answer.data
    if not reply.get("ok"):
        error = str(reply.get("error", "the worker answered no result"))
        if reply.get("cuda_error"):
            poisoned = " (context poisoned: worker restarted)" if reply.get("fatal") else ""
            return Status.CUDA_ERROR, error + poisoned, {}, False
        return Status.RUN_ERROR, error, {}, False
    outputs = reply.get("outputs")
    if outputs == "mismatched":
        return Status.CHECKSUM_MISMATCH, str(reply.get("mismatch", "")), {}, False
    return Status.OK, "", dict(reply.get("metrics", {})), outputs in ("matched", "captured")


def not_run(reason: str) -> tuple[Status, str, dict]:
    """A run that could not be attempted: its harness did not build, its binary has no entry
    point, its host refused it. (A process that could not be started is ``classify``'s.)"""
    return Status.RUN_ERROR, reason, {}


def lost(reason: str) -> tuple[Status, str, dict]:
    """A run that killed every cluster worker it was given (run/dask_executor.py)."""
    return Status.CRASH, reason, {}
