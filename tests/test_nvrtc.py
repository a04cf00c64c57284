"""Kernel mode's NVRTC backend without a GPU: real compiles through cuda-python's NVRTC
(NVRTC needs no GPU), the ptxas report parsed from its log, the build cache and errors."""

import subprocess
import sys

import pytest

from ksweep import Status, load_spec
from ksweep.app.wiring import mode_for
from ksweep.build import nvrtc
from ksweep.build.builder import first_error_lines
from ksweep.build.ptxas import parse_ptxas
from ksweep.errors import SpecError
from ksweep.kernel.launch import entry_name, wrapper_source
from ksweep.result import Result
from ksweep.space.space import Space
from ksweep.sweep.jobs import JobFactory
from ksweep.sweep.local import make_builder

from conftest import KERNELS, needs_nvrtc, vadd_kernel_spec


def compile_with_command(*args, cwd=None):
    return subprocess.run([*nvrtc.command(), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


def factory_of(spec):
    return JobFactory(spec, spec.shape(None), spec.variant(None), Space.from_spec(spec), mode_for(spec))


@needs_nvrtc
def test_the_command_writes_a_cubin_and_a_ptxas_report(tmp_path):
    out = tmp_path / "v.cubin"
    r = compile_with_command("--gpu-architecture=sm_90a", "--ptxas-options=-v", "-D", "ELEMS=4", "-o", out,
                             KERNELS / "vadd.cu")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:4] == b"\x7fELF"
    report = parse_ptxas(r.stderr)
    assert [(k.name, k.arch) for k in report.kernels] == [("vadd", "sm_90a")]
    assert report.registers > 0 and report.spills == 0
    version = compile_with_command("--version")
    assert version.returncode == 0 and "NVRTC 1" in version.stdout


@needs_nvrtc
def test_the_command_fails_like_a_compiler(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void k(float *x) { x[0] = undeclared_name; }\n')
    r = compile_with_command("--gpu-architecture=sm_90a", "-o", tmp_path / "b.cubin", bad)
    assert r.returncode == 1 and not (tmp_path / "b.cubin").exists()
    assert "undeclared_name" in first_error_lines(r.stderr) and "error" in first_error_lines(r.stderr)
    usage = compile_with_command("-o", tmp_path / "b.cubin", bad)  # no architecture: NVRTC would write PTX
    assert usage.returncode == 2 and "--gpu-architecture=sm_90a" in usage.stderr


def test_arguments_of_the_command():
    a = nvrtc.parse_args(["--gpu-architecture=sm_90a", "-I", "inc", "-DX=1", "--name-expression", "&k<1>",
                          "-MMD", "-MF", "d.d", "-o", "o.cubin", "k.cu"])
    assert (a.source, a.output, a.depfile) == ("k.cu", "o.cubin", "d.d")
    assert a.options == ["--gpu-architecture=sm_90a", "-Iinc", "-DX=1"] and a.names == ["&k<1>"]
    for argv in (["--gpu-architecture=sm_90a", "k.cu"], ["-o", "o", "k.cu"],
                 ["--gpu-architecture=sm_90a", "-o", "o", "a.cu", "b.cu"]):
        with pytest.raises(ValueError):
            nvrtc.parse_args(argv)


def test_compiler_key_is_checked_and_sets_the_default_flags(tmp_path):
    spec = load_spec(vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 4096, 'compiler = "nvrtc"'))
    assert spec.kernel.compiler == "nvrtc" and spec.kernel.flags == ()
    spec = load_spec(vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 4096))
    assert spec.kernel.compiler == "nvcc" and spec.kernel.flags == ("-O3",)
    with pytest.raises(SpecError, match=r"kernel\.compiler: expected \"nvcc\" or \"nvrtc\", got 'clang'"):
        load_spec(vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 4096, 'compiler = "clang"'))


def test_nvrtc_jobs_run_the_command_and_are_keyed_apart_from_nvcc(tmp_path):
    params = "BLOCK = [128]\nELEMS = [1, 2]"
    nvcc_job = factory_of(load_spec(vadd_kernel_spec(tmp_path, params, 4096))).make({"BLOCK": 128, "ELEMS": 2})
    spec = load_spec(vadd_kernel_spec(tmp_path, params, 4096,
                                      'compiler = "nvrtc"\nflags = ["--use_fast_math", "-std=c++17"]'))
    job = factory_of(spec).make({"BLOCK": 128, "ELEMS": 2})
    argv = list(job.build_argv)
    assert argv[:3] == [sys.executable, "-m", "ksweep.build.nvrtc"] and "--gpu-architecture=sm_90a" in argv
    assert {"--use_fast_math", "-std=c++17", "-DELEMS=2", "--ptxas-options=-v"} <= set(argv)
    assert "-O3" not in argv and "--name-expression" not in argv
    assert job.build_cache_key != nvcc_job.build_cache_key and job.cache_key != nvcc_job.cache_key
    assert Result("v", "s", {}, Status.OK, build_argv=job.build_argv).compiler == "nvrtc"
    assert Result("v", "s", {}, Status.OK, build_argv=nvcc_job.build_argv).compiler == "nvcc"


@needs_nvrtc
def test_kernel_mode_builds_with_nvrtc_through_the_builder(tmp_path):
    spec = load_spec(vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1, 4]", 4096,
                                      'compiler = "nvrtc"\nflags = ["--use_fast_math"]'))
    # the kernel includes a header of its own with quotes: found beside it, and keyed
    (tmp_path / "elems.h").write_text("#define ELEMS_FROM_HEADER 1\n")
    source = tmp_path / "vadd.cu"
    source.write_text('#include "elems.h"\n' + source.read_text())
    builder = make_builder(spec)
    factory = factory_of(spec)
    first = builder.build(factory.make({"BLOCK": 128, "ELEMS": 1}))
    assert first.status is Status.OK and first.binary.read_bytes()[:4] == b"\x7fELF", first.message
    assert first.report.registers > 0 and not first.cached
    assert str((tmp_path / "elems.h").resolve()) in {p for p, _ in first.deps}
    assert builder.build(factory.make({"BLOCK": 128, "ELEMS": 1})).cached
    four = builder.build(factory.make({"BLOCK": 128, "ELEMS": 4}))
    assert four.status is Status.OK and not four.cached and four.binary != first.binary
    (tmp_path / "elems.h").write_text("#define ELEMS_FROM_HEADER 2\n")  # an edited header builds again
    assert not builder.build(factory.make({"BLOCK": 128, "ELEMS": 1})).cached


@needs_nvrtc
def test_nvrtc_errors_and_options_reach_the_result(tmp_path):
    spec = load_spec(vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 4096,
                                      'compiler = "nvrtc"\nflags = ["-O3"]'))  # an nvcc option NVRTC refuses
    build = make_builder(spec).build(factory_of(spec).make({"BLOCK": 128, "ELEMS": 1}))
    assert build.status is Status.COMPILE_ERROR and "-O3" in build.message
    spec = load_spec(vadd_kernel_spec(tmp_path, "BLOCK = [128]\nELEMS = [1]", 4096, 'compiler = "nvrtc"'))
    (tmp_path / "vadd.cu").write_text('extern "C" __global__ void vadd(float *c) { c[0] = missing_thing; }\n')
    build = make_builder(spec).build(factory_of(spec).make({"BLOCK": 128, "ELEMS": 1}))
    assert build.status is Status.COMPILE_ERROR and "missing_thing" in build.message and "error" in build.message


@needs_nvrtc
def test_templated_kernel_is_instantiated_by_a_name_expression(tmp_path):
    vadd_kernel_spec(tmp_path, "TILE = [64, 128]", 1024, 'compiler = "nvrtc"', name="vscale<{TILE}>",
                     grid="cdiv(N, TILE)", block="TILE", reference='"defaults"')
    spec = load_spec(tmp_path / "k.toml")
    assert "ksweep_entry_address" not in wrapper_source(spec.kernel, {"TILE": 128})  # NVRTC compiles no host code
    job = factory_of(spec).make({"TILE": 128})
    i = job.build_argv.index("--name-expression")
    assert job.build_argv[i + 1] == "&vscale<128>" and "-DTILE=128" not in job.build_argv
    build = make_builder(spec).build(job)
    assert build.status is Status.OK, build.message
    assert entry_name([k.name for k in build.report.kernels], spec.kernel) == "_Z6vscaleILi128EEvPfPKffi"


def test_a_pre_included_header_in_nvccs_two_words_is_passed_and_listed_for_rebuilds(tmp_path, monkeypatch):
    from ksweep.build.nvrtc import parse_args, write_depfile

    (tmp_path / "hd").mkdir()
    (tmp_path / "hd" / "inc.h").write_text('#include "more.h"\n')
    (tmp_path / "hd" / "more.h").write_text("#define X 1\n")
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    monkeypatch.chdir(tmp_path)
    for form in (["-include", "inc.h"], ["-include=inc.h"], ["--pre-include", "inc.h"]):
        args = parse_args(["--gpu-architecture=sm_90a", *form, "-I", "hd", "-MMD", "-MF", "t.d", "-o", "t.cubin",
                           "k.cu"])
        assert "--pre-include=inc.h" in args.options and "-Ihd" in args.options
        write_depfile("t.d", args)
        listed = (tmp_path / "t.d").read_text()
        assert "inc.h" in listed and "more.h" in listed and "k.cu" in listed


def test_collecting_tests_that_need_nvrtc_does_not_load_it():
    """needs_nvrtc asks for NVRTC when a marked test is about to run: collecting them (as any
    run of other tests does) leaves libnvrtc unloaded."""
    from pathlib import Path

    tests = Path(__file__).parent
    probe = ("import sys, pytest; code = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', "
             f"{str(tests / 'test_kt.py')!r}]); print('NVRTC', 'cuda.bindings.nvrtc' in sys.modules); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_lang_cupy_builds_with_nvrtc_and_cupys_options" in done.stdout  # a marked test, collected
    assert done.stdout.strip().splitlines()[-1] == "NVRTC False"


def test_the_build_command_imports_no_more_of_ksweep_than_it_needs():
    """Each NVRTC build is a process of its own (one per config): importing the module must not
    pull in ksweep's spec model, numpy or rich through the package's __init__ (it did: a
    quarter of a second per build)."""
    probe = ("import sys, ksweep.build.nvrtc; "
             "print(sorted(m for m in ('numpy', 'rich', 'ksweep.spec.model', 'ksweep.space.plan') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
