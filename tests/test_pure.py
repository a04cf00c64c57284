"""The pure pieces: argv templates, @@RESULT parsing, classification, verification, ptxas."""

import pytest

from ksweep.build.argv import TemplateError, expand
from ksweep.build.builder import BuildRules
from ksweep.build.ptxas import parse_ptxas
from ksweep.process import ProcessOutcome
from ksweep.run.classify import classify
from ksweep.run.gpus import parse_nvidia_smi
from ksweep.run.protocol import parse_results
from ksweep.spec.model import Check
from ksweep.status import Status
from ksweep.verify.checks import verify


def test_expand_lists_and_fields():
    argv = expand(["nvcc", "{defines}", "-o", "{binary}", "--tile={TN}x{TM}", "{{lit}}", "{shape_args}"],
                  lists={"defines": ["-DA=1", "-DB"], "shape_args": ["4096", "512"]},
                  values={"binary": "/b/prog", "TN": 128, "TM": True}, where="build.command")
    assert argv == ["nvcc", "-DA=1", "-DB", "-o", "/b/prog", "--tile=128x1", "{lit}", "4096", "512"]
    with pytest.raises(TemplateError, match=r"unknown placeholder \{NOPE\}"):
        expand(["{NOPE}"], lists={}, values={}, where="run.command")
    with pytest.raises(TemplateError, match="must stand alone"):
        expand(["x{defines}"], lists={"defines": []}, values={}, where="build.command")


def test_protocol_lines_and_shapes():
    out = "hello\n@@RESULT ms=0.630 tflops=1739 checksum=1769472.0\nbye"
    assert parse_results(out) == ({"ms": 0.63, "tflops": 1739.0, "checksum": 1769472.0}, None)
    multi = "@@RESULT shape=fc1 ms=1\n@@RESULT shape=fc2 ms=2\n"
    assert parse_results(multi, "fc2") == ({"ms": 2.0}, None)
    assert parse_results(multi, "fc3")[0] is None
    assert parse_results("no result") == (None, None)
    metrics, problem = parse_results("@@RESULT ms=fast")
    assert metrics is None and "not a number" in problem


def outcome(**kw):
    base = dict(returncode=0, timed_out=False, stdout="", stderr="", truncated=False, seconds=0.1)
    base.update(kw)
    return ProcessOutcome(**base)


@pytest.mark.parametrize("kw, status, fragment", [
    (dict(timed_out=True, returncode=-9), Status.HANG, "no exit after 5 s"),
    (dict(returncode=-11), Status.CRASH, "SIGSEGV"),
    (dict(returncode=1, stderr="CUDA error: misaligned address"), Status.CUDA_ERROR, "misaligned address"),
    (dict(returncode=1, stderr="cudaErrorLaunchOutOfResources: too many resources requested for launch"), Status.CUDA_ERROR, "too many resources"),
    (dict(returncode=0, stdout="GPUassert: out of memory x.cu 12"), Status.CUDA_ERROR, "out of memory"),
    (dict(returncode=-6, stderr="unspecified launch failure"), Status.CUDA_ERROR, "unspecified launch failure"),
    (dict(returncode=2, stderr="a\nb\nusage: prog N"), Status.RUN_ERROR, "usage: prog N"),
    (dict(stdout="done"), Status.NO_RESULT, "no @@RESULT"),
    (dict(stdout="@@RESULT ms=1.5"), Status.OK, ""),
])
def test_classify(kw, status, fragment):
    s, message, _ = classify(outcome(**kw), timeout=5)
    assert s is status and fragment in message


def test_verify():
    check = Check(keys=("checksum",), expected={"checksum": 100.0}, rtol=1e-3)
    assert verify({"checksum": 100.05}, check) is None
    assert "expected 100" in verify({"checksum": 101.0}, check)
    assert "missing" in verify({"ms": 1.0}, check)
    ref = Check(keys=("checksum",), reference="defaults", rtol=0, atol=0.5)
    assert verify({"checksum": 3.2}, ref, {"checksum": 3.0}) is None
    assert verify({"checksum": 4.0}, ref, {"checksum": 3.0}) is not None
    # a key that is not printed (a typo in [check] keys) is a failure, the reference's own run
    # included, never a check of nothing
    typo = Check(keys=("checksun",), reference="defaults")
    assert "checksun missing from the result" in verify({"checksum": 3.0, "ms": 1.0}, typo, {"checksum": 3.0})
    assert "it printed checksum, ms" in verify({"checksum": 3.0, "ms": 1.0}, typo, None)
    bound = Check(max_keys={"rel_err": 1e-4})
    assert verify({"rel_err": 1e-6}, bound) is None
    assert "rel_err" in verify({"rel_err": float("nan")}, bound)


OLD_WORDING = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z4axpyPf' for 'sm_80'
ptxas info    : Function properties for _Z4axpyPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 4096 bytes smem, 360 bytes cmem[0]
"""


def test_ptxas_older_wording_and_rules():
    report = parse_ptxas(OLD_WORDING)
    (k,) = report.kernels
    assert (k.name, k.arch, k.registers, k.smem, k.spills) == ("_Z4axpyPf", "sm_80", 12, 4096, 0)
    assert BuildRules(max_registers=8).judge(report)[0] is Status.REGS_LIMIT
    assert BuildRules(max_registers=255).judge(report)[0] is Status.OK


def test_nvidia_smi_parsing():
    gpus = parse_nvidia_smi("0, NVIDIA H100 80GB HBM3, GPU-abc, 580.159.04\n1, NVIDIA H200, GPU-def, 580.159.04\n")
    assert [(g.index, g.name) for g in gpus] == [(0, "NVIDIA H100 80GB HBM3"), (1, "NVIDIA H200")]
