"""Program mode on a codebase shaped like a real one: a header-only kernel whose template
parameters have the sweep's names, several kernels in one translation unit (one that
spills and is not tuned), long messages in the table, constraints that rely on earlier
ones, the build command a user can paste, the build cache beside --db."""

import csv
import io
import shlex
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from ksweep.cli.main import main
from ksweep.report.table import render
from ksweep.result import Result
from ksweep.space.plan import make_plan
from ksweep.space.space import Space
from ksweep.spec.load import load_spec, spec_from_dict
from ksweep.status import Status
from ksweep.store.sqlite import Store
from ksweep.sweep.systematic import SameErrorGuard, error_signature

CODEBASE = Path(__file__).parent / "programs" / "codebase"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

MANGLED = "_Z15sgemmWarptilingILi128ELi128ELi16ELi64ELi64ELi4ELi8ELi4EEviiifPfS0_fS0_"


def _codebase(tmp_path: Path, params: str, sweep: str = "") -> Path:
    for f in ("tiles.hpp", "runner.cpp"):
        shutil.copy(CODEBASE / f, tmp_path / f)
    spec = tmp_path / "codebase.toml"
    spec.write_text(textwrap.dedent(f"""
        [sweep]
        name = "codebase"
        {sweep}
        [params]
        {params}
        [build]
        sources = ["runner.cpp"]
        command = ["g++", "-O0", "{{defines}}", "-o", "{{binary}}", "runner.cpp"]
    """))
    return spec


def _cli(capsys, *argv):
    code = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return code, out, err


def _stored(db: Path, param: str) -> dict:
    """The stored results of a database by the value of one parameter."""
    with Store(db) as store:
        return {r.params[param]: r for r in store.results()}


# -- 2. parameter names that are also the program's identifiers --------------------------

def test_plan_warns_when_a_macro_would_rewrite_a_template_parameter(tmp_path, capsys):
    spec = _codebase(tmp_path, "BM = [64, 128]\nBN = [64, 128]")
    code, _, err = _cli(capsys, "plan", spec)
    assert code == 0
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    assert len(warnings) == 2
    assert "params.BM: -DBM would also rewrite the identifier BM in tiles.hpp:4" in warnings[0]
    # the name it suggests is one the runner reads (#ifndef K10_BM), never one no source reads
    assert 'define = "K10_BM" (or [sweep] define_prefix = "K10_")' in warnings[0] and "KS_" not in err


def test_no_warning_for_guarded_macros_and_renamed_defines(tmp_path, capsys):
    spec = _codebase(tmp_path, 'BM = { values = [64, 128], define = "K10_BM" }\nK10_BN = [64, 128]')
    code, _, err = _cli(capsys, "plan", spec)
    assert code == 0 and "warning" not in err


def test_plan_warns_when_a_source_defines_the_macro_without_a_guard(tmp_path, capsys):
    """An unguarded #define in a header the build reads replaces -DSTAGES=...: the compiler
    only warns, and every config would build with the header's value."""
    spec = _codebase(tmp_path, "K10_BM = [64, 128]\nSTAGES = [1, 2]\nPAD = [0, 1]")
    (tmp_path / "tiles.hpp").write_text((CODEBASE / "tiles.hpp").read_text()
                                        + "#define STAGES 2\n#ifndef PAD\n#define PAD 0\n#endif\n")
    code, _, err = _cli(capsys, "plan", spec)
    assert code == 0
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    assert len(warnings) == 1, err
    assert "params.STAGES: -DSTAGES is replaced by the unguarded #define STAGES in tiles.hpp:6" in warnings[0]
    assert "ksweep guard tiles.hpp STAGES" in warnings[0]


def test_no_warning_for_a_define_the_minus_d_value_keeps_out(tmp_path, capsys):
    """Defaults guarded by another macro the build command defines (-DAUTOTUNE), or in the
    #else of #ifdef NAME, never replace a config's value: plan warned that every config would
    build with them (nor does one in an #elif after #if defined(NAME)). A default in the
    #else of #ifdef of another name, one in the first branch of #ifdef NAME, and one after
    #if 0's #else, do replace it."""
    from ksweep.spec.collisions import command_defines, unguarded

    header = tmp_path / "tiles.hpp"
    header.write_text("#ifndef AUTOTUNE\n#define BM 128\n#endif\n"
                      "#ifdef BN\n#else\n#define BN 64\n#endif\n"
                      "#if defined(BK)\n#elif 1\n#define BK 8\n#endif\n"
                      "#ifdef OTHER\n#else\n#define PAD 1\n#endif\n"
                      "#ifdef STAGES\n#define STAGES 3\n#endif\n"
                      "#if 0\n#define TM 1\n#else\n#define TN 4\n#endif\n")
    texts = {header: header.read_text()}
    always = command_defines(["gcc", "-DAUTOTUNE", "-D", "FAST=1", "{defines}", "-DX{y}"])
    assert always == {"AUTOTUNE", "FAST"}
    found = unguarded(["BM", "BN", "BK", "PAD", "STAGES", "TM", "TN"], texts, always)
    assert {name: line for name, (_, line) in found.items()} == {"PAD": 14, "STAGES": 17, "TN": 22}
    assert "BM" in unguarded(["BM"], texts)  # without -DAUTOTUNE the default is taken: it does replace it
    header.write_text("#ifndef BM\n#define BM 1\n#else\n#undef BM\n#define BM 2\n#endif\n")
    assert unguarded(["BM"], {header: header.read_text()}) == {"BM": (header, 5)}  # taken when -DBM is given

    spec = _codebase(tmp_path, "K10_BM = [64, 128]\nPAD = [0, 1]")
    spec.write_text(spec.read_text().replace('"-O0",', '"-O0", "-DAUTOTUNE",', 1))
    header.write_text((CODEBASE / "tiles.hpp").read_text() + "#ifndef AUTOTUNE\n#define PAD 0\n#endif\n")
    code, _, err = _cli(capsys, "plan", spec)
    assert code == 0 and "warning" not in err, err
    # a variant that builds without -DAUTOTUNE takes the default: the warning stands for it
    spec.write_text(spec.read_text() + textwrap.dedent("""
        [variants.plain]
        build_command = ["g++", "-O0", "{defines}", "-o", "{binary}", "runner.cpp"]
        [variants.tuned]
        """))
    code, _, err = _cli(capsys, "plan", spec)
    assert code == 0 and "-DPAD is replaced by the unguarded #define PAD" in err, err


def test_plan_warns_when_a_macro_would_rewrite_cuda_s_own_headers(tmp_path, capsys, monkeypatch):
    """nvcc includes cuda_runtime.h in every .cu: -DT=float rewrites its `template <class T>`."""
    include = tmp_path / "cuda" / "include"
    include.mkdir(parents=True)
    (include / "cuda_runtime.h").write_text('#include "runtime_api.h"\ntemplate <class T> T *to(T *p);\n')
    (include / "runtime_api.h").write_text("void alloc(void **p, unsigned long size);\n")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    (tmp_path / "k.cu").write_text("__global__ void k(float *x) { x[0] = TILE + sizeof(T) + size; }\n")
    spec = tmp_path / "k.toml"
    spec.write_text(textwrap.dedent("""
        [params]
        T = ["float", "double"]
        size = [1, 2]
        TILE = [1, 2]
        [build]
        sources = ["k.cu"]
        command = ["nvcc", "-cubin", "{defines}", "-o", "{binary}", "k.cu"]
    """))
    code, _, err = _cli(capsys, "plan", spec)
    assert code == 0
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    assert len(warnings) == 2, err
    assert "params.T: -DT would also rewrite the identifier T in CUDA's cuda_runtime.h:2" in warnings[0]
    assert "nvcc includes it in every .cu" in warnings[0]
    assert "params.size: -Dsize would also rewrite the identifier size in CUDA's runtime_api.h:1" in warnings[1]
    spec.write_text(spec.read_text().replace('"nvcc"', '"g++", "-x", "c++"'))
    code, _, err = _cli(capsys, "plan", spec)
    assert code == 0 and "warning" not in err


def test_a_define_name_and_a_prefix_reach_the_compiler(tmp_path, capsys):
    named = _codebase(tmp_path, 'BM = { values = [64, 128], define = "K10_BM" }\nBN = { values = [32], define = "K10_BN" }')
    code, out, err = _cli(capsys, "run", named, "--db", tmp_path / "a.db", "-q")
    assert code == 0, err
    rows = _stored(tmp_path / "a.db", "BM")
    assert {r.status for r in rows.values()} == {Status.OK}
    assert "-DK10_BM=128" in rows[128].build_argv and "-DK10_BN=32" in rows[128].build_argv
    assert rows[128].metrics["work"] == (1 << 20) // 128 + (1 << 20) // 32

    prefixed = _codebase(tmp_path, "BM = [64, 128]\nBN = [32]", sweep='define_prefix = "K10_"')
    code, out, err = _cli(capsys, "run", prefixed, "--db", tmp_path / "b.db", "-q")
    assert code == 0, err
    rows = _stored(tmp_path / "b.db", "BM")
    assert rows[64].status is Status.OK and "-DK10_BM=64" in rows[64].build_argv
    assert not any(a.startswith("-DBM") for a in rows[64].build_argv)


def test_a_relative_include_folder_is_the_spec_s(tmp_path, capsys):
    """-Iinc, as the codebase's Makefile writes it: each build runs in a folder of its own, and
    the folder is the one beside the spec (as `plan` reads it), for the harness too."""
    spec = _codebase(tmp_path, "K10_BM = [64, 128]")
    (tmp_path / "inc").mkdir()
    (tmp_path / "tiles.hpp").rename(tmp_path / "inc" / "tiles.hpp")
    (tmp_path / "harness.cpp").write_text('#include "tiles.hpp"\nlong harness_work() { return tile_work<1, 2>(8); }\n')
    text = spec.read_text().replace('"-O0",', '"-O0", "-I", "inc", "-Iinc",', 1)
    spec.write_text(text.replace('"{binary}", "runner.cpp"]', '"{binary}", "runner.cpp", "{harness}"]') + (
        '[build.harness]\nsources = ["harness.cpp"]\n'
        'command = ["g++", "-c", "-Iinc", "-o", "{harness}", "harness.cpp"]\noutput = "harness.o"\n'))
    code, out, err = _cli(capsys, "run", spec, "--db", tmp_path / "i.db", "-q")
    assert code == 0, err
    rows = _stored(tmp_path / "i.db", "K10_BM")
    assert {r.status for r in rows.values()} == {Status.OK}
    assert f"-I{tmp_path / 'inc'}" in rows[64].build_argv and str(tmp_path / "inc") in rows[64].build_argv
    # the keys take the command as written: with the folders made absolute in them, a database of
    # an earlier ksweep (which ran -Iinc as written) had every config run again
    from ksweep.space.space import Space
    from ksweep.spec.load import load_spec
    from ksweep.sweep.jobs import JobFactory

    def keys():
        loaded = load_spec(spec)
        shape, variant = loaded.shape_list()[0], loaded.variant_list()[0]
        factory = JobFactory(loaded, shape, variant, Space.from_spec(loaded, shape.name, variant.name))
        return factory.make({"K10_BM": 64}).cache_key, factory.harness.cache_key

    made_absolute = keys()
    (tmp_path / "inc").rename(tmp_path / "elsewhere")  # nothing to make absolute now
    assert keys() == made_absolute


def test_a_bad_define_name_is_one_line(tmp_path, capsys):
    spec = _codebase(tmp_path, 'BM = { values = [64], define = "1BAD" }')
    code, _, err = _cli(capsys, "plan", spec)
    assert code == 2 and "params.BM.define" in err and len(err.strip().splitlines()) == 1


def test_the_same_compile_error_in_the_first_configs_stops_the_sweep(tmp_path, capsys):
    """-DBM=64 turns `template <const int BM, ...>` into a syntax error in every config: the
    sweep stops after the first few with that error once, and stores none of them."""
    spec = _codebase(tmp_path, "BM = [64, 128, 256]\nBN = [32, 64, 128, 256]")
    code, out, err = _cli(capsys, "run", spec, "--db", tmp_path / "s.db", "-q", "--strategy", "grid", "-j", "1")
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.startswith("ksweep: error")]
    assert len(lines) == 1 and "all failed to compile with the same error" in lines[0]
    assert "error" in lines[0].split("the same error", 1)[1]  # the compiler's own words
    assert "KS_" not in lines[0] and "a macro the source reads" in lines[0]  # no name no source reads
    with Store(tmp_path / "s.db") as store:
        assert [r for r in store.results() if r.status is not Status.PRUNED] == []


def test_the_same_compile_error_naming_each_config_s_value_stops_the_sweep(tmp_path, capsys):
    """-DBM=float, -DBM=double, ...: the compiler's message names each config's own value
    (a type), and it is still one error."""
    spec = _codebase(tmp_path, 'BM = ["float", "double", "char", "bool", "void"]\nBN = [32]')
    code, out, err = _cli(capsys, "run", spec, "--db", tmp_path / "s.db", "-q", "--strategy", "grid", "-j", "1")
    assert code == 2, err
    assert "all failed to compile with the same error" in err
    guard = SameErrorGuard(stop_after=2)
    assert guard.see(False, "k.cu:3: error: expected ';' before 'float'", "r1", ("float", 64)) == "hold"
    assert guard.see(False, "k.cu:3: error: expected ';' before 'double'", "r2", ("double", 64)) == "stop"


def test_a_sweep_where_nothing_succeeds_exits_non_zero(program_dir, capsys):
    spec = program_dir("""
        [params]
        MODE = [4]
        X = [1, 2, 3]
        [build]
        sources = ["behaviours.c"]
        command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "behaviours.c"]
    """)
    code, out, err = _cli(capsys, "run", spec, "-q")
    assert code == 1
    assert err.strip().splitlines()[-1] == "ksweep: no config succeeded: 3 RUN_ERROR (the table above gives each one's message)"


def test_same_error_guard_rules():
    guard = SameErrorGuard(stop_after=3)
    assert guard.see(False, "a.cu(12): error: expected a ',' or '>'", "r1") == "hold"
    assert guard.see(False, "/tmp/x/a.cu(40): error: expected a ',' or '>'", "r2") == "hold"
    assert guard.see(False, "a.cu(7): error: expected a ',' or '>'", "r3") == "stop"
    other = SameErrorGuard(stop_after=3)
    assert other.see(False, "error: one thing", "r1") == "hold"
    assert other.see(False, "error: another thing", "r2") == "store"
    assert other.release() == ["r1"] and other.see(False, "error: one thing", "r3") == "store"
    ok_first = SameErrorGuard(stop_after=2)
    assert ok_first.see(True, "", "r1") == "store" and ok_first.see(False, "e", "r2") == "store"
    assert error_signature("/a/b/k.cu(3): error 42") == error_signature("k.cu(17): error 7")


# -- 3. resources per kernel -------------------------------------------------------------

def _kernels_spec(tmp_path: Path, extra: str) -> Path:
    shutil.copy(CODEBASE / "kernels.cu", tmp_path / "kernels.cu")
    spec = tmp_path / "k.toml"
    spec.write_text(textwrap.dedent(f"""
        [sweep]
        arch = "sm_90a"
        [params]
        TM = [2, 8]
        [build]
        sources = ["kernels.cu"]
        command = ["nvcc", "-arch=sm_90a", "-Xptxas", "-v", "-cubin", "{{defines}}", "-o", "{{binary}}", "kernels.cu"]
        {extra}
        [run]
        command = ["sh", "-c", "echo @@RESULT ms=1"]
    """))
    return spec


@needs_nvcc
def test_a_spilling_kernel_that_is_not_tuned_is_not_judged(tmp_path, capsys):
    every = _kernels_spec(tmp_path, "")
    code, out, _ = _cli(capsys, "run", every, "--db", tmp_path / "all.db", "--no-gpu-check")
    with Store(tmp_path / "all.db") as store:
        rows = list(store.results())
    # by default every kernel is judged: untouched's spills mark every config, and say which kernel
    assert {r.status for r in rows} == {Status.SPILLS}
    assert all(r.message.startswith("untouched: ") for r in rows)
    chosen = _kernels_spec(tmp_path, 'kernels = "^tuned<"')
    code, out, err = _cli(capsys, "run", chosen, "--db", tmp_path / "tuned.db", "--no-gpu-check")
    assert code == 0, err
    rows = _stored(tmp_path / "tuned.db", "TM")
    assert {r.status for r in rows.values()} == {Status.OK}
    assert all(r.spills == 0 and r.regs < 32 for r in rows.values())  # tuned's own figures
    names = {k["name"]: k["judged"] for k in rows[8].kernels}  # every kernel is kept, judged or not
    assert names == {"_Z9untouchedPfPKf": False, "_Z5tunedILi64EEvPfPKf": True}


def test_a_bad_kernels_regex_is_one_line(tmp_path, capsys):
    spec = _kernels_spec(tmp_path, 'kernels = "tuned("')
    code, _, err = _cli(capsys, "plan", spec)
    assert code == 2 and "build.kernels" in err and len(err.strip().splitlines()) == 1


# -- 1. the table keeps its numbers -------------------------------------------------------

def _rows():
    kernels = ({"name": MANGLED, "registers": 196, "judged": True}, {"name": "_Z6helperPf", "registers": 40})
    params = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "WNITER": 4, "TM": 8, "TN": 4, "NUM_THREADS": 128}
    ok = Result("base", "sq", params, Status.OK, metrics={"ms": 4.0612345, "gflops": 33812.55, "checksum": 1769472.0},
                regs=196, spills=0, smem=32768, kernels=kernels)
    spill = Result("base", "sq", {**params, "BM": 64}, Status.SPILLS, regs=255, spills=600, smem=16384,
                   message=f"{MANGLED}: 300 bytes spill stores, 300 bytes spill loads", kernels=kernels)
    error = Result("base", "sq", {**params, "BM": 256}, Status.COMPILE_ERROR,
                   message="runner.cu(12): error: expected a \",\" or \">\" | " * 8)
    return [ok, spill, error]


@pytest.mark.parametrize("width", [80, 240])
def test_long_messages_never_cut_the_numbers(width):
    buf = io.StringIO()
    render(_rows(), "ms", "min", Console(file=buf, width=width))
    out = buf.getvalue()
    lines = out.splitlines()
    header = next(ln for ln in lines if "REGS" in ln).split()
    for col in ("MS", "GFLOPS", "REGS", "SPILL", "SMEM_KB", "CHECKSUM", "KERNEL", "STATUS"):
        assert col in header
    best = next(ln for ln in lines if "BEST" in ln).split()
    assert "4.061" in best and "33812.6" in best and "1769472.0" in best and "196" in best
    spill = next(ln for ln in lines if "SPILLS" in ln)
    assert "600" in spill.split() and "255" in spill.split()
    assert MANGLED not in out  # demangled and shortened
    assert "sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4>: 300 bytes spill stores" in out
    if width == 80:  # no room for a NOTE column: numbered and listed under the table
        assert "SPILLS [1]" in spill and "COMPILE_ERROR [2]" in out
        assert any(ln.startswith("  [1] sgemmWarptiling<") for ln in lines)
    else:
        assert "NOTE" in header and len(max(lines, key=len)) <= 240


def test_report_in_a_pipe_keeps_every_number(tmp_path, capsys):
    db = tmp_path / "r.db"
    with Store(db) as store:
        for r in _rows():
            store.put(r)
        store.set_meta("objective", {"metric": "ms", "direction": "min"})
    code, out, _ = _cli(capsys, "report", db)
    assert code == 0 and "33812.6" in out and "1769472.0" in out and "…" not in out.split("NOTE")[0]


def test_plan_show_in_a_pipe_never_cuts_values(tmp_path, capsys):
    spec = tmp_path / "p.toml"
    spec.write_text('[params]\nBLOCK_SIZE_M = [128, 256, 512]\nNUM_THREADS = [256, 512, 1024]\n'
                    '[derived]\nSHARED_BYTES = "BLOCK_SIZE_M * NUM_THREADS * 4"\n')
    code, out, _ = _cli(capsys, "plan", spec, "--show", "9")
    assert code == 0 and "…" not in out
    for value in ("128", "512", "1024", "2097152"):
        assert value in out.split()
    assert not [line for line in out.splitlines() if line != line.rstrip(" ")]  # rows end where their text ends


# -- 4. constraints in spec order ---------------------------------------------------------

def test_a_later_constraint_may_rely_on_an_earlier_one():
    spec = spec_from_dict({
        "params": {"WM": [0, 16, 32, 64], "BM": [64, 128], "TM": [0, 4, 8]},
        "derived": {"WMITER": "BM // WM"},
        "constraints": [
            {"name": "wm_nonzero", "expr": "WM != 0"},
            {"name": "tm_nonzero", "expr": "TM > 0"},
            {"name": "iter", "expr": "WMITER * (64 // TM) >= 8"},  # divides by WM and TM
        ],
    })
    space = Space.from_spec(spec)
    assert all(c["WM"] and c["TM"] for c in space)
    entry = make_plan(spec).entries[0]
    assert entry.pruned == {"wm_nonzero": 6, "tm_nonzero": 6, "iter": 0} and entry.valid == 12
    verdict = space.explain({"WM": 0, "BM": 64, "TM": 4})
    assert not verdict.ok and verdict.constraint == "wm_nonzero"


def test_true_and_integer_division():
    spec = spec_from_dict({"params": {"A": [7]}, "derived": {"T": "A / 2", "F": "A // 2"}})
    assert Space.from_spec(spec).derive({"A": 7}) == {"T": 3.5, "F": 3}


# -- 5. smaller things --------------------------------------------------------------------

def test_csv_build_command_can_be_pasted_and_the_cache_follows_db(tmp_path, capsys):
    spec = _codebase(tmp_path, 'BM = { values = [64], define = "K10_BM" }\nK10_BN = [32]')
    out_dir = tmp_path / "results"
    out_dir.mkdir()
    code, _, err = _cli(capsys, "run", spec, "--db", out_dir / "x.db", "-q")
    assert code == 0, err
    assert (out_dir / "cache").is_dir() and not (tmp_path / ".ksweep" / "cache").exists()
    rows = list(csv.DictReader((out_dir / "x.csv").open()))
    argv = shlex.split(rows[0]["build_argv"])
    assert argv[0] == "g++" and "-DK10_BM=64" in argv and "{binary}" not in rows[0]["build_argv"]
    work = tmp_path / "paste"
    work.mkdir()
    subprocess.run(argv, cwd=work, check=True)  # the pasted command rebuilds the config
    assert "@@RESULT" in subprocess.run([str(work / "prog")], capture_output=True, text=True).stdout
    cache = tmp_path / "elsewhere"
    code, _, err = _cli(capsys, "run", spec, "--db", tmp_path / "y.db", "--cache", cache, "-q")
    assert code == 0 and cache.is_dir() and any(cache.iterdir())


def test_progress_counts_against_the_budget(program_dir, capsys):
    spec = program_dir("""
        [params]
        X = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
        [build]
        sources = ["behaviours.c"]
        command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "behaviours.c"]
    """)
    code, _, err = _cli(capsys, "run", spec, "--strategy", "random", "--max-evals", "5")
    assert code == 0
    counters = [ln.split()[1] for ln in err.splitlines() if ln.startswith("[ksweep] ") and "/" in ln.split()[1]]
    assert counters == ["1/5", "2/5", "3/5", "4/5", "5/5"]
    done = next(ln for ln in err.splitlines() if ln.startswith("[ksweep] done:"))
    assert done.startswith("[ksweep] done: 5 evaluated, 0 resumed (5 OK), ")  # words, not a Python dict


def test_description_is_kept_and_shown_by_plan(tmp_path, capsys):
    spec = _codebase(tmp_path, "K10_BM = [64]", sweep='description = "warptiling, K10 constants [v2]"')
    assert load_spec(spec).description == "warptiling, K10 constants [v2]"
    code, out, _ = _cli(capsys, "plan", spec)
    assert code == 0 and out.splitlines()[1] == "warptiling, K10 constants [v2]"


def test_plan_shows_a_switch_as_on_and_off_as_the_tables_do(tmp_path, capsys):
    spec = _codebase(tmp_path, "K10_BM = [64]\n[switches]\nFAST = \"flag\"")
    runner = tmp_path / "runner.cpp"
    runner.write_text(runner.read_text() + "#ifdef FAST\n#endif\n")  # a switch the runner reads
    code, out, _ = _cli(capsys, "plan", spec)
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["FAST"])
    assert code == 0 and row == ["FAST", "off", "on"]  # it printed False and True
    assert "pruned by" not in out  # no constraint pruned anything: no header over nothing
