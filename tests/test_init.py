"""ksweep init: a starting spec from a source's guarded defines and #ifdef switches, which
ksweep plan takes at once."""

import os
import re
import shutil
import stat
import textwrap
import tomllib
from pathlib import Path

import pytest

from ksweep.cli.main import main
from ksweep.errors import SourceError
from ksweep.preprocessor.directives import scan
from ksweep.run.gpus import arch_of
from ksweep.source.starter import result_keys, starter_spec, values_around
from ksweep.spec.load import load_spec
from ksweep.status import Status
from ksweep.store.sqlite import Store

EXAMPLES = Path(__file__).parent.parent / "examples"


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _guarded_defaults(source: Path) -> dict:
    """name -> default as the source's own #ifndef-guarded defines give it."""
    return {d.name: int(d.value) for d in scan(source.read_text()).defines if d.guarded and d.value.isdigit()}


@pytest.fixture
def no_gpu(monkeypatch):
    """This host has no GPU, whatever nvidia-smi would say."""
    monkeypatch.setattr("ksweep.app.init.local_arch", lambda: None)


@pytest.mark.parametrize("source, switches", [
    ("sgemm/sgemm.cu", {"SGEMM_CUBIN"}),
    ("flash_attention/flash_attn.cu", set()),
    ("cpu_matmul/matmul.c", {"IKJ_ORDER"}),
    ("kernel_mode/matmul.cu", set()),
])
def test_init_then_plan_on_the_examples(source, switches, tmp_path, capsys, no_gpu):
    src = EXAMPLES / source
    spec_path = tmp_path / "specs" / "start.toml"
    spec_path.parent.mkdir()
    code, out, err = _cli(capsys, "init", src, "-o", spec_path)
    assert code == 0, err
    assert out == "" and f"wrote {spec_path}" in err
    code, out, err = _cli(capsys, "plan", spec_path)
    assert code == 0, err
    spec = load_spec(spec_path)
    params = {p.name: p for p in spec.params if p.tier == 1}
    defaults = _guarded_defaults(src)
    assert {n: p.default for n, p in params.items()} == defaults
    for p in params.values():
        assert len(p.values) >= 3 and p.default in p.values
    assert {p.name for p in spec.params if p.flag} == switches
    assert spec.build.command[0] == ("gcc" if src.suffix == ".c" else "nvcc")
    # the spec names the source relative to itself, and the command builds that file
    assert spec_path.parent.joinpath(tomllib.loads(spec_path.read_text())["build"]["sources"][0]).resolve() \
        == src.resolve()
    total = 1
    for p in spec.params:
        total *= len(p.values)
    assert f"{total:,} configs" in out


def test_the_build_command_of_each_language(tmp_path):
    cuda = textwrap.dedent('''\
        #include <cublas_v2.h>
        #include <ksweep.h>
        #ifdef USE_DRIVER
        #include <cuda.h>
        #endif
        #ifndef TILE
        #define TILE 64
        #endif
        int main() { return 0; }
    ''')
    spec = tomllib.loads(starter_spec(cuda, "k.cu", arch="sm_89"))
    assert spec["build"]["command"] == ["nvcc", "-O3", "-gencode=arch=compute_89,code=sm_89", "-Xptxas=-v",
                                        "-I{ksweep_include}", "{defines}", "-o", "{binary}", "k.cu", "-lcublas"]
    assert spec["sweep"]["arch"] == "sm_89" and spec["switches"] == {"USE_DRIVER": "flag"}
    c = "#include <math.h>\n#ifndef N\n#define N 3\n#endif\nint main(void) { return N; }\n"
    spec = tomllib.loads(starter_spec(c, "sub/k.c"))
    assert spec["build"]["command"] == ["gcc", "-O2", "-march=native", "{defines}", "-o", "{binary}", "sub/k.c", "-lm"]
    assert "arch" not in spec["sweep"]
    spec = tomllib.loads(starter_spec(c.replace("math.h", "cmath"), "k.cpp"))
    assert spec["build"]["command"][:4] == ["g++", "-O2", "-march=native", "-std=c++17"]
    with pytest.raises(SourceError, match="reads a .cu, .c or .cpp source"):
        starter_spec(c, "k.h")


def test_without_a_gpu_sm_90a_is_assumed_and_said(tmp_path):
    text = starter_spec("#ifndef T\n#define T 4\n#endif\nint main() {}\n", "k.cu", arch=None)
    assert re.search(r'^arch = "sm_90a" +# no GPU found here: sm_90a assumed; give your GPU\'s arch$', text, re.M)
    assert "-gencode=arch=compute_90a,code=sm_90a" in text


def test_an_arch_without_built_in_limits_is_left_as_a_comment_and_plan_works(tmp_path, capsys):
    (tmp_path / "k.cu").write_text("#ifndef T\n#define T 4\n#endif\nint main() {}\n")
    (tmp_path / "k.toml").write_text(starter_spec((tmp_path / "k.cu").read_text(), "k.cu", arch="sm_75",
                                                  arch_note="the local GPU"))
    text = (tmp_path / "k.toml").read_text()
    assert '# arch = "sm_75": the local GPU; ksweep has no built-in limits for it' in text
    assert "-gencode=arch=compute_75,code=sm_75" in text
    code, _, err = _cli(capsys, "plan", tmp_path / "k.toml")
    assert code == 0, err


def test_the_local_gpu_arch_comes_from_nvidia_smi(tmp_path, capsys, monkeypatch):
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n[ \"$1\" = --query-gpu=compute_cap ] && echo 8.9 && exit 0\nexit 9\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    shutil.copy(EXAMPLES / "kernel_mode" / "matmul.cu", tmp_path / "matmul.cu")
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(capsys, "init", "matmul.cu")
    assert code == 0, err
    spec = tomllib.loads(out)
    assert spec["sweep"]["arch"] == "sm_89" and re.search(r'^arch = "sm_89" +# the local GPU$', out, re.M)
    assert "-gencode=arch=compute_89,code=sm_89" in spec["build"]["command"]
    assert spec["build"]["sources"] == ["matmul.cu"]
    assert "matmul.cu has no main()" in out


def test_compute_capabilities():
    assert arch_of("9.0\n9.0\n") == "sm_90a"
    assert arch_of("10.0") == "sm_100a"
    assert arch_of("8.6") == "sm_86"
    assert arch_of("") is None and arch_of("[N/A]") is None


def test_values_around_a_default():
    assert values_around("128") == ((32, 64, 128, 256, 512), 128)
    assert values_around("1") == ((1, 2, 4), 1)
    assert values_around("2") == ((1, 2, 4, 8), 2)
    assert values_around("96") == ((32, 64, 96, 128, 160), 96)
    assert values_around("3") == ((1, 2, 3, 4, 5), 3)
    assert values_around("0") == ((0, 1), 0)
    assert values_around("-4") == ((-12, -8, -4, 0, 4), -4)
    assert values_around("0x100u") == ((64, 128, 256, 512, 1024), 256)
    assert values_around("(48)") == ((16, 32, 48, 64, 80), 48)
    assert values_around("1'024") == ((256, 512, 1024, 2048, 4096), 1024)
    assert values_around("0.5f") == (("0.25f", "0.5f", "1.0f"), "0.5f")
    assert values_around("(STAGE_BYTES)") is None and values_around("float") is None


def test_result_keys_and_the_objective():
    assert result_keys('printf("@@RESULT ms=%.3f checksum=%g\\n", ms, c);') == ["ms", "checksum"]
    spec = tomllib.loads(starter_spec('#ifndef T\n#define T 4\n#endif\nint main() { printf("@@RESULT gflops=%f", g); }',
                                      "k.c"))
    assert (spec["sweep"]["objective"], spec["sweep"]["direction"]) == ("gflops", "max")
    text = starter_spec("#ifndef T\n#define T 4\n#endif\nint main() {}\n", "k.c")
    assert "# @@RESULT: the program must print one line such as" in text
    assert tomllib.loads(text)["sweep"]["objective"] == "ms"


def test_what_is_not_a_number_or_not_guarded_is_said_in_comments(tmp_path, capsys):
    src = tmp_path / "k.c"
    src.write_text(textwrap.dedent('''\
        #ifndef N
        #define N 0x40  // rows
        #endif
        #ifndef DTYPE
        #define DTYPE float
        #endif
        #define PLAIN 7
        #ifdef __cplusplus
        #endif
        #ifndef KSWEEP_WITH_CUDA
        #endif
        int main(void) { return 0; }
    '''))
    code, out, err = _cli(capsys, "init", src, "-o", tmp_path / "k.toml")
    assert code == 0, err
    text = (tmp_path / "k.toml").read_text()
    assert "N = { values = [16, 32, 64, 128, 256], default = 64 }  # line 2: rows (written 0x40; -D passes 64)" in text
    assert '# DTYPE = float   (line 5): not a number; to sweep it, list values as strings, e.g. DTYPE = ["float"]' in text
    assert "# not guarded, so -D cannot set them: PLAIN (ksweep guard k.c NAME …)" in text
    assert "[switches]" not in text  # __cplusplus and ksweep's own KSWEEP_* are no switches
    code, _, err = _cli(capsys, "plan", tmp_path / "k.toml")
    assert code == 0, err


def test_a_source_with_nothing_to_tune_says_to_guard_it_first(tmp_path, capsys):
    src = tmp_path / "k.c"
    src.write_text("#define N 64\nint main(void) { return N; }\n")
    code, _, err = _cli(capsys, "init", src)
    assert code == 2
    assert "nothing to tune" in err and f"ksweep guard k.c --in-place` wraps its #define lines (N)" in err
    code, _, _ = _cli(capsys, "guard", src, "--in-place")
    assert code == 0
    code, out, err = _cli(capsys, "init", src, "-o", tmp_path / "k.toml")
    assert code == 0, err
    assert _cli(capsys, "plan", tmp_path / "k.toml")[0] == 0


def test_an_existing_spec_is_kept_unless_forced(tmp_path, capsys):
    (tmp_path / "k.toml").write_text("# mine\n")
    code, _, err = _cli(capsys, "init", EXAMPLES / "cpu_matmul" / "matmul.c", "-o", tmp_path / "k.toml")
    assert code == 2 and "exists; give --force" in err
    assert (tmp_path / "k.toml").read_text() == "# mine\n"
    code, _, _ = _cli(capsys, "init", EXAMPLES / "cpu_matmul" / "matmul.c", "-o", tmp_path / "k.toml", "--force")
    assert code == 0 and "[params]" in (tmp_path / "k.toml").read_text()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not on PATH")
def test_the_c_example_s_starting_spec_runs(tmp_path, capsys):
    shutil.copy(EXAMPLES / "cpu_matmul" / "matmul.c", tmp_path / "matmul.c")
    spec = tmp_path / "matmul.toml"
    assert _cli(capsys, "init", tmp_path / "matmul.c", "-o", spec)[0] == 0
    code, out, err = _cli(capsys, "run", spec, "--max-evals", "2", "--no-confirm", "-q", "--strategy", "random",
                          "--seed", "1")
    assert code == 0, err
    assert "2 evaluated" in out
    with Store(tmp_path / ".ksweep" / "matmul.db") as store:
        results = list(store.results())
    assert len(results) == 2 and all(r.status is Status.OK and r.metrics["ms"] > 0 for r in results)
