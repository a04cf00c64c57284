"""ksweep.h: installed with the package, found by `ksweep include`; its statistics and
@@RESULT line are plain C++ (built by g++ here and parsed by ksweep's own protocol parser);
its CUDA part compiles for sm_90a with nvcc; the examples' harnesses use it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ksweep.include import include_dir
from ksweep.run.protocol import parse_results

EXAMPLES = Path(__file__).parent.parent / "examples"

HOST = r"""
#include <ksweep.h>
#include <cmath>
int main() {
  std::vector<float> v = {5.0f, 1.0f, 4.0f, 2.0f, 3.0f, 100.0f, 2.5f, 3.5f, 4.5f, 1.5f};
  ksweep::Stats s = ksweep::stats(v);
  ksweep::Result().add("ms", s.median).add("p20_ms", s.p20).add("p80_ms", s.p80).add("reps", s.reps)
      .add("bad", NAN).print();
  return 0;
}
"""


def test_ksweep_include_prints_the_folder_of_the_header():
    out = subprocess.run([sys.executable, "-m", "ksweep", "include"], capture_output=True, text=True)
    assert out.returncode == 0 and Path(out.stdout.strip()) == include_dir()
    assert (include_dir() / "ksweep.h").is_file()
    flag = subprocess.run([sys.executable, "-m", "ksweep", "include", "--flag"], capture_output=True, text=True)
    assert flag.stdout.strip() == f"-I{include_dir()}"


def _host_program(folder: Path, name: str, source: str) -> str:
    """Build ``source`` with g++ against ksweep.h and run it: its stdout."""
    (folder / f"{name}.cpp").write_text(source)
    subprocess.run(["g++", "-std=c++17", "-O1", f"-I{include_dir()}", "-o", str(folder / name),
                    str(folder / f"{name}.cpp")], check=True)
    return subprocess.run([str(folder / name)], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
def test_statistics_and_the_result_line_in_a_host_program(tmp_path):
    out = _host_program(tmp_path, "host", HOST)
    metrics, problem = parse_results(out)
    assert problem is not None and "bad" in problem  # nan: ksweep says so, it is never a value
    # sorted: 1 1.5 2 2.5 3 3.5 4 4.5 5 100 -> median 3.25, p20 rank 2 (2.0), p80 rank 7 (4.5)
    assert metrics["ms"] == 3.25 and metrics["p20_ms"] == 2.0 and metrics["p80_ms"] == 4.5
    assert metrics["reps"] == 10
    assert "bad=nan" in out  # not a number: written as nan, which ksweep refuses as an objective


ALTERNATE = r"""
#include <ksweep.h>
#include <string>
int main() {
  // a clock that slows down by 1% per block (a board heating into its power cap): a takes 4 and
  // b 5 units at full speed, so b's time over a's is 1.25 whatever the drift
  int block = 0;
  std::string order;
  auto slow = [&] { return 1.0 + 0.01 * block++; };
  auto a = [&] { order += 'a'; return 4.0 * slow(); };
  auto b = [&] { order += 'b'; return 5.0 * slow(); };
  ksweep::Paired p = ksweep::alternate(4, a, b);
  std::printf("order=%s\n", order.c_str());
  ksweep::Result().add("ratio", p.ratio).add("pairs", p.pairs).add("a_median", p.a.median)
      .add("b_median", p.b.median).print();
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
def test_alternating_blocks_cancel_a_linear_drift(tmp_path):
    out = _host_program(tmp_path, "alt", ALTERNATE)
    assert "order=abbaabba" in out
    metrics, problem = parse_results(out)
    assert problem is None and metrics["pairs"] == 4
    assert metrics["ratio"] == pytest.approx(1.25, rel=1e-6)  # the drift cancels
    # a's blocks ran at 1.00, 1.03, 1.04, 1.07: median 4 * 1.035
    assert metrics["a_median"] == pytest.approx(4 * 1.035, rel=1e-5)
    assert metrics["b_median"] == pytest.approx(5 * 1.035, rel=1e-5)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_cuda_part_compiles_for_sm90a(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(r"""
#include <ksweep.h>
__global__ void add(float* x) { x[threadIdx.x] += 1.0f; }
int main() {
  float* d;
  KSWEEP_CHECK(cudaMalloc(&d, 256 * sizeof(float)));
  ksweep::poison(d, 256);
  ksweep::TimeOptions o;
  o.queue_ahead_ms = 1.0f;
  ksweep::Timer t(0, o);
  ksweep::Stats s = t.time([&] { add<<<1, 256>>>(d); });
  ksweep::Paired p = t.paired([&] { add<<<1, 256>>>(d); }, [&] { add<<<2, 256>>>(d); });
  ksweep::Result().add("ms", s.median).add("ratio", p.ratio).print();
  return 0;
}
""")
    r = subprocess.run(["nvcc", "-arch=sm_90a", "-std=c++17", f"-I{include_dir()}", "-c", "-o",
                        str(tmp_path / "k.o"), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_examples_harnesses_time_with_it():
    for path in ("sgemm/sgemm.cu", "flash_attention/flash_attn.cu"):
        text = (EXAMPLES / path).read_text()
        assert "#include <ksweep.h>" in text and "ksweep::Timer" in text and "ksweep::Result()" in text
        assert "cudaEventElapsedTime" not in text  # no timing loop of their own


SANITIZER = r"""
#include <ksweep.h>
int main() {
  const char *tool = ksweep::sanitizer();
  std::printf("%s\n", tool ? tool : "none");
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
def test_the_header_knows_when_it_runs_under_a_sanitizer(tmp_path):
    """ksweep.h's Timer times one launch under a sanitizer (its CUDA part: tests/gpu); it knows
    from KSWEEP_SANITIZER, which ksweep sets, or from the injection library compute-sanitizer
    loads when it is run by hand."""
    _host_program(tmp_path, "tool", SANITIZER)
    env = {k: v for k, v in os.environ.items()
           if k not in ("KSWEEP_SANITIZER", "CUDA_INJECTION64_PATH", "NV_SANITIZER_INJECTION_PORT_BASE")}

    def said(**more):
        return subprocess.run([str(tmp_path / "tool")], capture_output=True, text=True, env={**env, **more},
                              check=True).stdout.strip()

    assert said() == "none"
    assert said(KSWEEP_SANITIZER="racecheck") == "racecheck"
    assert said(CUDA_INJECTION64_PATH="/usr/local/cuda/compute-sanitizer/libsanitizer-collection.so") == \
        "compute-sanitizer"
    assert said(CUDA_INJECTION64_PATH="/opt/other/libinjection.so") == "none"
    # what compute-sanitizer 2025.3 sets for the processes it checks (seen on an H200 machine)
    assert said(NV_SANITIZER_INJECTION_PORT_BASE="49152") == "compute-sanitizer"
