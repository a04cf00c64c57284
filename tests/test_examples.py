"""The GPU examples without a GPU: their specs plan, and sampled configs compile for sm_90a
with clean ptxas reports (no spills, registers within the limit)."""

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ksweep import load_spec
from ksweep.build.ptxas import parse_ptxas
from ksweep.space.plan import make_plan
from ksweep.space.space import Space
from ksweep.sweep.jobs import JobFactory

EXAMPLES = Path(__file__).parent.parent / "examples"
nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

# extra flags for a cubin of the kernel; None: the spec's own build command makes one
CASES = {
    "sgemm": (EXAMPLES / "sgemm" / "sgemm.toml", "sgemm.cu", None, "sgemm_warptiling"),
    "flash_attention": (EXAMPLES / "flash_attention" / "flash_attn.toml", "flash_attn.cu", [], "flash_attn"),
}


def test_sgemm_plan():
    plan = make_plan(load_spec(CASES["sgemm"][0]))
    assert len(plan.entries) == 3  # 4096^3, 2048^3 and a skinny shape
    assert all(e.valid >= 200 for e in plan.entries)


def test_flash_attention_plan():
    spec = load_spec(CASES["flash_attention"][0])
    plan = make_plan(spec)
    assert len(plan.entries) == 6  # seed 002's three shapes, causal and not
    assert all(e.valid > 0 for e in plan.entries)
    assert "smem" in plan.pruned and "registers" in plan.pruned


@nvcc
@pytest.mark.parametrize("example", sorted(CASES))
def test_sampled_configs_compile_cleanly(example, tmp_path):
    spec_path, source, extra, kernel = CASES[example]
    spec = load_spec(spec_path)
    shape = spec.shape_list()[-1]
    space = Space.from_spec(spec, shape.name)
    factory = JobFactory(spec, shape, spec.variant(None), space)

    def compile_one(i: int, config) -> tuple[str, subprocess.CompletedProcess]:
        job = factory.make(config)
        out = str(tmp_path / f"{i}.cubin")
        if extra is None:
            argv = [a.replace("{binary}", out) for a in job.build_argv]
        else:
            flags = [a for a in job.build_argv if a.startswith(("-D", "-I"))]  # defines, and ksweep.h's folder
            argv = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas=-v",
                    "-cubin", *extra, *flags, "-o", out, str(spec_path.parent / source)]
        return out, subprocess.run(argv, capture_output=True, text=True, cwd=spec_path.parent)

    configs = space.sample(2, seed=7)
    with ThreadPoolExecutor(2) as pool:  # the two compiles side by side
        compiled = list(pool.map(compile_one, range(len(configs)), configs))
    for config, (out, r) in zip(configs, compiled):
        assert r.returncode == 0, r.stderr[-2000:]
        report = parse_ptxas(r.stdout + r.stderr)
        ours = [k for k in report.kernels if kernel in k.name]
        assert ours, [k.name for k in report.kernels]
        for k in ours:
            assert k.arch == "sm_90a" and k.spills == 0 and 0 < k.registers <= 255, (config, k)
        if example == "sgemm":  # the harness launches the cubin by what it says about itself
            assert b"sgemm_config" in Path(out).read_bytes()
