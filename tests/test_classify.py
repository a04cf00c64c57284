"""Classification of a finished run (pure): CUDA errors only where the run failed, and
results that are not finite numbers (issue 12, items 7 and 8)."""

import pytest

from ksweep.process import ProcessOutcome
from ksweep.run.classify import classify, find_cuda_error
from ksweep.run.protocol import is_time_metric, parse_results
from ksweep.status import Status


def outcome(**kw):
    base = dict(returncode=0, timed_out=False, stdout="", stderr="", truncated=False, seconds=0.1)
    base.update(kw)
    return ProcessOutcome(**base)


@pytest.mark.parametrize("kw", [
    dict(stdout="workspace: out of memory at 64 MiB, retrying with 32 MiB\n@@RESULT ms=1.25"),
    dict(stderr="checked 4096 blocks: no illegal memory access", stdout="@@RESULT ms=1.25"),
    dict(stdout="@@RESULT ms=1.25\nan illegal memory access was encountered? no (compute-sanitizer clean)"),
    dict(stderr="CUBLAS_STATUS_SUCCESS", stdout="@@RESULT ms=1.25"),
    dict(stderr="cudaErrorMemoryAllocation on the first try, fell back", stdout="@@RESULT ms=1.25"),
])
def test_exit_0_with_a_valid_result_is_ok_whatever_the_log_says(kw):
    status, message, metrics = classify(outcome(**kw), timeout=5)
    assert (status, message, metrics) == (Status.OK, "", {"ms": 1.25})


@pytest.mark.parametrize("kw, fragment", [
    (dict(stderr="CUDA error: an illegal memory access was encountered"), "illegal memory access"),
    (dict(stderr="kernel.cu:12: cudaErrorIllegalAddress"), "cudaErrorIllegalAddress"),
    (dict(stdout="cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED"), "CUDA_ERROR_LAUNCH_FAILED"),
    (dict(stderr="gemm: CUBLAS_STATUS_EXECUTION_FAILED"), "CUBLAS_STATUS_EXECUTION_FAILED"),
    (dict(stderr="CUDA error 700 at kernel.cu:3"), "CUDA error 700"),
    (dict(stdout="GPUassert: out of memory x.cu 12"), "out of memory"),
    # a result that is no valid result does not hide the error either
    (dict(stderr="CUDA error: misaligned address", stdout="@@RESULT ms=nan"), "misaligned address"),
])
def test_exit_0_without_a_result_reports_the_cuda_error(kw, fragment):
    status, message, metrics = classify(outcome(**kw), timeout=5)
    assert status is Status.CUDA_ERROR and fragment in message and metrics == {}


@pytest.mark.parametrize("kw, fragment", [
    (dict(returncode=1, stderr="CUDA error: misaligned address", stdout="@@RESULT ms=1"), "misaligned"),
    (dict(returncode=-6, stderr="unspecified launch failure"), "unspecified launch failure"),
    (dict(returncode=-11, stdout="@@RESULT ms=1", stderr="out of memory"), "out of memory"),
    (dict(returncode=3, stderr="cudaErrorLaunchOutOfResources"), "cudaErrorLaunchOutOfResources"),
])
def test_a_failing_exit_with_cuda_text_is_a_cuda_error(kw, fragment):
    status, message, _ = classify(outcome(**kw), timeout=5)
    assert status is Status.CUDA_ERROR and fragment in message


def test_a_failing_exit_without_cuda_text_keeps_its_status():
    assert classify(outcome(returncode=-11, stderr="CUDA error checking is on"), 5)[0] is Status.CRASH
    assert classify(outcome(returncode=2, stderr="no CUDA errors so far"), 5)[0] is Status.RUN_ERROR
    assert classify(outcome(stdout="done, no CUBLAS_STATUS_SUCCESS here"), 5)[0] is Status.NO_RESULT


@pytest.mark.parametrize("line", [
    "cudaErrorIllegalAddress", "CUDA_ERROR_OUT_OF_MEMORY", "CUBLAS_STATUS_ALLOC_FAILED", "CUFFT_EXEC_FAILED",
    "CUDA error: out of memory", "cuda error (2)", "CUDA error at x.cu:4 code=2", "Cuda Error #700",
    "an illegal memory access was encountered", "too many resources requested for launch",
    "the launch timed out and was terminated", "device-side assert triggered",
])
def test_cuda_error_forms(line):
    assert find_cuda_error("ok\n" + line + "\n") == line


@pytest.mark.parametrize("line", [
    "CUBLAS_STATUS_SUCCESS", "CUDA_SUCCESS", "cudaSuccess", "cudaError_t err = cudaGetLastError();",
    "no CUDA errors", "CUDA error checking: on", "@@RESULT ms=1 note=out_of_memory",
])
def test_not_cuda_error_forms(line):
    assert find_cuda_error(line) is None


@pytest.mark.parametrize("stdout, message", [
    ("@@RESULT ms=nan", "ms=nan is not a finite number"),
    ("@@RESULT ms=inf", "ms=inf is not a finite number"),
    ("@@RESULT ms=1.0 gflops=inf", "gflops=inf is not a finite number"),
    ("@@RESULT ms=1.0 gflops=-inf", "gflops=-inf is not a finite number"),
    ("@@RESULT ms=1e999", "ms=inf is not a finite number"),
    ("@@RESULT ms=-1.2", "ms=-1.2: a negative time"),
    ("@@RESULT gflops=10 kernel_us=-3", "kernel_us=-3: a negative time"),
    ("@@RESULT gflops=10 time_total=-0.5", "time_total=-0.5: a negative time"),
])
def test_values_that_are_not_finite_or_negative_times(stdout, message):
    status, got, metrics = classify(outcome(stdout=stdout), timeout=5)
    assert status is Status.NO_RESULT and got == message
    assert metrics  # kept, for the record


def test_negative_values_that_are_not_times_are_fine():
    assert parse_results("@@RESULT ms=1 delta=-3 checksum=-1e9 rel_err=0") == (
        {"ms": 1.0, "delta": -3.0, "checksum": -1e9, "rel_err": 0.0}, None)


@pytest.mark.parametrize("name, timelike", [
    ("ms", True), ("us", True), ("ns", True), ("s", True), ("sec", True), ("seconds", True), ("time", True),
    ("kernel_ms", True), ("total_us", True), ("wall_s", True), ("time_total", True), ("MS", True),
    ("gflops", False), ("checksum", False), ("msg", False), ("times", False), ("bus", False),
])
def test_time_metric_names(name, timelike):
    assert is_time_metric(name) is timelike
