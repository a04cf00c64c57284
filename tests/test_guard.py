"""ksweep guard: #define lines wrapped in #ifndef guards, everything else given back as it
was; --check builds the file before and after (gcc object code, nvcc cubins) and compares
the generated code."""

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from ksweep.cli.main import main
from ksweep.errors import SourceError
from ksweep.preprocessor.directives import scan, split_lines
from ksweep.source.codecheck import _argv, split_functions
from ksweep.source.guard import guard, is_value, unified_diff

EXAMPLES = Path(__file__).parent.parent / "examples"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not on PATH")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

TRICKY = textwrap.dedent('''\
    #include "tiles.h"
    #define BM 128  // block rows
    #  define BN   64 /* columns */
    #define LONG_EXPR (BM * \\
                       BN)
    #define SQ(x) ((x) * (x))
    #define EMPTY
    #ifndef GUARDED
    #define GUARDED 4
    #endif
    #if !defined(ALSO_GUARDED)
    #  define ALSO_GUARDED 5
    #endif
    #if ARCH >= 90
    #define STAGES 4
    #else
      #define STAGES 2
    #endif
    #if 0
    #define DEAD 1
    #endif
    /* #define IN_COMMENT 3
       #define IN_COMMENT2 3 */
    // #define IN_LINE_COMMENT 3
    #define QUAL __device__ __forceinline__
    #define STMT do { f(); } while (0)
    #define STR "a /* not a comment"
    #define SPAN 7 /* a comment
      that spans lines */
    const char *s = "#define NOT_ME 1";
    const char *r = R"x(
    #define NOT_RAW 1
    )x";
    #define LAST 9
''')

TRICKY_GUARDED = textwrap.dedent('''\
    #include "tiles.h"
    #ifndef BM
    #define BM 128  // block rows
    #endif
    #  ifndef BN
    #  define BN   64 /* columns */
    #  endif
    #ifndef LONG_EXPR
    #define LONG_EXPR (BM * \\
                       BN)
    #endif
    #define SQ(x) ((x) * (x))
    #define EMPTY
    #ifndef GUARDED
    #define GUARDED 4
    #endif
    #if !defined(ALSO_GUARDED)
    #  define ALSO_GUARDED 5
    #endif
    #if ARCH >= 90
    #ifndef STAGES
    #define STAGES 4
    #endif
    #else
      #ifndef STAGES
      #define STAGES 2
      #endif
    #endif
    #if 0
    #define DEAD 1
    #endif
    /* #define IN_COMMENT 3
       #define IN_COMMENT2 3 */
    // #define IN_LINE_COMMENT 3
    #define QUAL __device__ __forceinline__
    #define STMT do { f(); } while (0)
    #ifndef STR
    #define STR "a /* not a comment"
    #endif
    #ifndef SPAN
    #define SPAN 7 /* a comment
      that spans lines */
    #endif
    const char *s = "#define NOT_ME 1";
    const char *r = R"x(
    #define NOT_RAW 1
    )x";
    #ifndef LAST
    #define LAST 9
    #endif
''')


def _without_guards(new: str, old: str) -> str:
    """``new`` less the lines guard inserted: what must be the original, byte for byte."""
    inserted = [ln for ln in split_lines(new)]
    kept = []
    old_lines = split_lines(old)
    i = 0
    for line in inserted:
        if i < len(old_lines) and line.text == old_lines[i].text:
            kept.append(line.text + (old_lines[i].end if old_lines[i].end else ""))
            i += 1
        else:
            assert line.text.strip().lstrip("#").strip().split()[0] in ("ifndef", "endif"), line
    return "".join(kept)


# -- the rewrite (pure) ----------------------------------------------------------------------

def test_every_kind_of_define_is_guarded_or_left_as_the_rules_say():
    result = guard(TRICKY)
    assert result.text == TRICKY_GUARDED
    assert [d.name for d in result.guarded] == ["BM", "BN", "LONG_EXPR", "STAGES", "STAGES", "STR", "SPAN", "LAST"]
    assert {(x.name, x.why) for x in result.left} == {
        ("SQ", "function-like"), ("EMPTY", "no value"), ("GUARDED", "already guarded"),
        ("ALSO_GUARDED", "already guarded"), ("DEAD", "inside #if 0"), ("QUAL", "code, not a value"),
        ("STMT", "code, not a value"),
    }


def test_guarding_twice_changes_nothing_more():
    once = guard(TRICKY).text
    again = guard(once)
    assert again.text == once and not again.changed


def test_crlf_line_endings_are_kept_and_given_to_the_inserted_lines():
    src = "#define A 1\r\n#define B(x) x\r\n  #define C 3 // c\r\nint x;\r\n"
    out = guard(src).text
    assert out == ("#ifndef A\r\n#define A 1\r\n#endif\r\n#define B(x) x\r\n"
                   "  #ifndef C\r\n  #define C 3 // c\r\n  #endif\r\nint x;\r\n")
    assert "\n" not in out.replace("\r\n", "")


def test_a_continued_define_with_crlf_is_wrapped_whole():
    src = "#define W (1 + \\\r\n  2)\r\nint w = W;\r\n"
    assert guard(src).text == "#ifndef W\r\n#define W (1 + \\\r\n  2)\r\n#endif\r\nint w = W;\r\n"


def test_a_file_without_a_final_newline_still_has_none():
    out = guard("int x;\n#define D 4").text
    assert out == "int x;\n#ifndef D\n#define D 4\n#endif"


def test_a_byte_order_mark_stays_first():
    assert guard("\ufeff#define A 1\n").text == "\ufeff#ifndef A\n#define A 1\n#endif\n"


@pytest.mark.parametrize("source", ["sgemm/sgemm.cu", "flash_attention/flash_attn.cu", "cpu_matmul/matmul.c",
                                    "kernel_mode/matmul.cu", "../ksweep/include/ksweep.h"])
def test_only_guards_are_added_to_real_sources(source):
    text = (EXAMPLES / source).read_text()
    new = guard(text).text
    assert _without_guards(new, text) == text
    assert guard(new).text == new


def test_the_examples_are_already_guarded():
    for source in ("sgemm/sgemm.cu", "flash_attention/flash_attn.cu", "cpu_matmul/matmul.c", "kernel_mode/matmul.cu"):
        found = scan((EXAMPLES / source).read_text())
        tunables = [d for d in found.defines if not d.function_like and is_value(d.value)]
        assert tunables and all(d.guarded for d in tunables if d.name != "TILE_CONFIG"), source


def test_guard_and_plan_read_one_answer_of_what_is_guarded():
    """One reader (preprocessor/directives.py) says what is guarded: guard leaves alone what
    plan's warning does not flag (a define where -DNAME keeps its value, or in #if 0) and
    guards what it flags."""
    from pathlib import Path

    from ksweep.spec.collisions import unguarded

    src = ("#ifndef A\n#define A 1\n#endif\n"
           "#if !defined(B)\n#define B 2\n#endif\n"
           "#ifdef C\n#else\n#define C 3\n#endif\n"
           "#if defined(D)\n#elif X > 1\n#define D 4\n#endif\n"
           "#if (0)\n#define E 5\n#endif\n"
           "#ifdef F\n#define F 6\n#endif\n"
           "#ifndef OTHER\n#define G 7\n#endif\n"
           "#define H \\\n  8\n"
           'const char *s = R"(\n#define I 9\n)";\n')
    result = guard(src)
    assert {(x.name, x.why) for x in result.left} == {("A", "already guarded"), ("B", "already guarded"),
                                                      ("C", "already guarded"), ("D", "already guarded"),
                                                      ("E", "inside #if 0")}
    assert [d.name for d in result.guarded] == ["F", "G", "H"]
    names = ["A", "B", "C", "D", "E", "F", "G", "H", "I"]
    assert list(unguarded(names, {Path("k.cu"): src})) == ["F", "G", "H"]
    assert list(unguarded(names, {Path("k.cu"): src}, defined={"OTHER"})) == ["F", "H"]


def test_names_choose_defines_whatever_their_value():
    src = "#define QUAL __device__\n#define N 4\n#define M 8\n"
    result = guard(src, ["QUAL", "M"])
    assert result.text == "#ifndef QUAL\n#define QUAL __device__\n#endif\n#define N 4\n#ifndef M\n#define M 8\n#endif\n"


def test_an_unknown_name_is_an_error_with_did_you_mean():
    with pytest.raises(SourceError, match=r"k.cu: STAGE is not #defined there — did you mean STAGES\?"):
        guard("#define STAGES 4\n", ["STAGE"], label="k.cu")


def test_a_function_like_name_is_an_error():
    with pytest.raises(SourceError, match=r"k.cu:2: SQ is a function-like macro"):
        guard("int x;\n#define SQ(x) x*x\n", ["SQ"], label="k.cu")


def test_values_and_code():
    for value in ("128", "(TK * TM + TK * (TN / 2))", "0x1fu", "1.5f", '"name"', "float", "sizeof(float) * 4",
                  "STAGE_BYTES", "-1", "'a'"):
        assert is_value(value), value
    for value in ("", "__device__", "static inline", "{1, 2}", "x; y", "a ## b", "do { } while (0)",
                  "__launch_bounds__(128)"):
        assert not is_value(value), value


@needs_gcc
def test_the_preprocessor_sees_the_same_macros_and_d_overrides_the_guarded_ones(tmp_path):
    src = tmp_path / "t.c"
    src.write_text(TRICKY.split("const char *r")[0].replace('#include "tiles.h"\n', ""))
    out = tmp_path / "g.c"
    out.write_text(guard(src.read_text()).text)

    def macros(path, *flags):
        text = subprocess.run(["gcc", "-E", "-dM", *flags, str(path)], capture_output=True, text=True,
                              check=True).stdout
        return {ln for ln in text.splitlines() if ln.startswith("#define") and "__" not in ln.split()[1]}

    assert macros(src) == macros(out)
    assert macros(src, "-DARCH=90") == macros(out, "-DARCH=90")
    assert "#define BM 256" in macros(out, "-DBM=256")
    assert "#define BM 256" not in macros(src, "-DBM=256")  # the unguarded file redefines it


def test_the_diff_applies_with_patch(tmp_path):
    if shutil.which("patch") is None:
        pytest.skip("patch not on PATH")
    for name, text in (("a.cu", TRICKY), ("b.c", "#define A 1\r\nint a = A;\r\n#define B 2")):
        (tmp_path / name).write_bytes(text.encode())
        new = guard(text).text
        diff = unified_diff(text, new, name)
        subprocess.run(["patch", "-p1", "-s", "--binary"], input=diff.encode(), cwd=tmp_path, check=True)
        assert (tmp_path / name).read_bytes() == new.encode()


# -- the command ---------------------------------------------------------------------------

def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_default_output_is_a_diff_and_the_file_is_untouched(tmp_path, capsys):
    f = tmp_path / "k.cu"
    f.write_text("#define BM 128\n#define SQ(x) x\n")
    code, out, err = _cli(capsys, "guard", f)
    assert code == 0
    assert out.splitlines() == [f"--- a/{f}", f"+++ b/{f}", "@@ -1,2 +1,4 @@", "+#ifndef BM", " #define BM 128",
                                "+#endif", " #define SQ(x) x"]
    assert "guarded BM; left: SQ (function-like, line 2)" in err
    assert f.read_text() == "#define BM 128\n#define SQ(x) x\n"


def test_in_place_and_output(tmp_path, capsys):
    f = tmp_path / "k.c"
    f.write_bytes(b"#define A 1\r\nint a = A;\r\n")
    f.chmod(0o640)
    code, out, _ = _cli(capsys, "guard", f, "-o", tmp_path / "g.c")
    assert code == 0 and out == ""
    assert (tmp_path / "g.c").read_bytes() == b"#ifndef A\r\n#define A 1\r\n#endif\r\nint a = A;\r\n"
    assert f.read_bytes() == b"#define A 1\r\nint a = A;\r\n"
    code, out, _ = _cli(capsys, "guard", f, "--in-place")
    assert code == 0 and out == ""
    assert f.read_bytes() == b"#ifndef A\r\n#define A 1\r\n#endif\r\nint a = A;\r\n"
    assert f.stat().st_mode & 0o777 == 0o640
    code, _, err = _cli(capsys, "guard", f, "--in-place")
    assert code == 0 and "nothing to guard; left: A (already guarded, line 2)" in err


def test_user_errors_are_one_line(tmp_path, capsys):
    f = tmp_path / "k.cu"
    f.write_text("#define STAGES 4\n")
    code, _, err = _cli(capsys, "guard", f, "STAGE")
    assert code == 2 and err == f"ksweep: error: {f}: STAGE is not #defined there — did you mean STAGES?\n"
    code, _, err = _cli(capsys, "guard", tmp_path / "missing.cu")
    assert code == 2 and "cannot read" in err and len(err.splitlines()) == 1
    code, _, err = _cli(capsys, "guard", f, "--against", f)
    assert code == 2 and "--against compares generated code: give --check" in err
    with pytest.raises(SystemExit) as exc:
        main(["guard", str(f), "--in-place", "-o", str(tmp_path / "x.cu")])
    assert exc.value.code == 2


# -- --check ---------------------------------------------------------------------------------

CFILE = textwrap.dedent('''\
    #include <assert.h>
    #include <stdio.h>
    #include "sizes.h"
    #define N 64
    #define SCALE 3
    #define TABLE_FILL (N / 2)
    int table[N] = {TABLE_FILL};
    int f(int x) { assert(x >= 0); return x * SCALE + N + SIZE_FROM_HEADER; }
    int main(void) { printf("%d %s %s\\n", f(2), __FILE__, __TIME__); return 0; }
''')


def _c_project(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "sizes.h").write_text("#define SIZE_FROM_HEADER 7\n")
    (src / "k.c").write_text(CFILE)
    return src / "k.c"


@needs_gcc
def test_check_with_gcc_finds_the_same_object_code(tmp_path, capsys, monkeypatch):
    f = _c_project(tmp_path)
    monkeypatch.chdir(tmp_path)  # the command names the file by a relative path; the header is beside it
    before = sorted(p.name for p in f.parent.iterdir())
    code, out, err = _cli(capsys, "guard", "src/k.c", "--in-place", "--check", "--",
                          "gcc", "-O2", "-g", "-c", "-o", "k.o", "src/k.c")
    assert code == 0, err
    assert "ksweep: the generated code is identical (object code)" in err
    assert f.read_text().count("#ifndef") == 3
    assert sorted(p.name for p in f.parent.iterdir()) == before  # no temporary copy left behind
    assert not (tmp_path / "k.o").exists()  # the builds wrote to a temporary folder


@needs_gcc
def test_check_with_gcc_shows_where_a_d_flag_changes_the_code(tmp_path, capsys, monkeypatch):
    f = _c_project(tmp_path)
    monkeypatch.chdir(f.parent)
    code, out, err = _cli(capsys, "guard", "k.c", "--in-place", "--check", "--",
                          "gcc", "-O2", "-DSCALE=5", "-DN=32", "-c", "k.c")
    assert code == 1
    assert "ksweep: the generated code is different (object code)\n" in err
    assert "  function f (.text): bytes differ" in err
    assert "  section .data: bytes differ from offset 0x0 of 256 (128 in the guarded build)" in err  # int table[N]
    assert "  symbols: symbols differ: table" in err
    assert "k.c not written: the generated code differs" in err
    assert f.read_text() == CFILE
    if shutil.which("objdump"):
        assert "--- f (original)" in err and "+++ f (guarded)" in err
        assert any(ln.startswith("-") and "lea" in ln for ln in err.splitlines())


@needs_gcc
def test_check_reports_a_guarded_file_that_no_longer_builds(tmp_path, capsys, monkeypatch):
    # the header defines N first; unguarded, the file's own N (with a warning) wins; guarded, the header's
    (tmp_path / "first.h").write_text("#define N not_a_number\n")
    f = tmp_path / "k.c"
    f.write_text('#include "first.h"\n#define N 4\nint a[N];\n')
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(capsys, "guard", "k.c", "--check", "--", "gcc", "-c", "-o", "k.o", "k.c")
    assert code == 1
    assert "ksweep: the guarded file does not build: exit 1:" in err and "not_a_number" in err


@needs_gcc
def test_check_refuses_a_command_that_does_not_build_the_file(tmp_path, capsys, monkeypatch):
    f = _c_project(tmp_path)
    monkeypatch.chdir(f.parent)
    code, _, err = _cli(capsys, "guard", "k.c", "--check", "--", "gcc", "-c", "other.c")
    assert code == 2 and "the build command does not name k.c" in err
    code, _, err = _cli(capsys, "guard", "k.c", "--check", "--", "gcc", "-c", "-Df=1", "k.c")
    assert code == 2 and "ksweep: error: the build command fails on k.c as it is: exit 1: " in err
    code, _, err = _cli(capsys, "guard", "k.c", "--check")
    assert code == 2 and "--check needs the build command" in err


SEED_BEFORE = textwrap.dedent('''\
    #define TK 128
    #define TM 128
    #define TN 256
    #define STAGE_BYTES 32768
    #define TMA_BYTES 32768
    unsigned stage_offset(unsigned s) { return s * STAGE_BYTES; }
    unsigned expect_tx(void) { return TMA_BYTES; }
''')


@needs_gcc
@pytest.mark.parametrize("tma_bytes, same", [("(STAGE_BYTES)", True), ("(TK * TN / 2)", False)])
def test_check_against_the_file_before_hard_coded_constants_became_expressions(tmp_path, capsys, monkeypatch,
                                                                              tma_bytes, same):
    # seed 000's phase 0: STAGE_BYTES and TMA_BYTES follow TN; at TN=256 nothing may change
    (tmp_path / "k.c.orig").write_text(SEED_BEFORE)
    (tmp_path / "k.c").write_text(SEED_BEFORE.replace("#define STAGE_BYTES 32768",
                                                      "#define STAGE_BYTES (TK * TM + TK * (TN / 2))")
                                  .replace("#define TMA_BYTES 32768", f"#define TMA_BYTES {tma_bytes}"))
    monkeypatch.chdir(tmp_path)
    code, _, err = _cli(capsys, "guard", "k.c", "TN", "--in-place", "--against", "k.c.orig", "--check", "--",
                        "gcc", "-O2", "-c", "-o", "k.o", "k.c")
    assert code == (0 if same else 1), err
    if same:
        assert "the generated code is identical (object code)" in err
        assert "#ifndef TN\n#define TN 256\n#endif\n" in (tmp_path / "k.c").read_text()
    else:
        assert "  function expect_tx (.text): bytes differ" in err and "stage_offset" not in err
        assert "#ifndef" not in (tmp_path / "k.c").read_text()


KERNEL = textwrap.dedent('''\
    #define TN 256
    #define THREADS (TN / 2)
    #define SQ(x) ((x) * (x))
    extern "C" __global__ void k(float *x) {
        __shared__ float buf[THREADS];
        buf[threadIdx.x] = x[threadIdx.x] * SQ(TN);
        __syncthreads();
        x[threadIdx.x] = buf[(threadIdx.x + 1) % THREADS];
    }
''')


@needs_nvcc
def test_check_with_nvcc_cubins(tmp_path, capsys, monkeypatch):
    f = tmp_path / "k.cu"
    f.write_text(KERNEL)
    monkeypatch.chdir(tmp_path)
    nvcc = ["nvcc", "-cubin", "-arch=sm_90a", "-o", "k.cubin", "k.cu"]
    code, out, err = _cli(capsys, "guard", "k.cu", "--check", "--", *nvcc)
    assert code == 0, err
    assert "ksweep: the generated code is identical (SASS of a cubin)" in err
    assert out.count("+#ifndef") == 2
    # -DTN=128 reaches the guarded file only: another kernel, and half the shared memory
    code, out, err = _cli(capsys, "guard", "k.cu", "TN", "--check", "--", *nvcc[:-1], "-DTN=128", "k.cu")
    assert code == 1
    assert "ksweep: the generated code is different (SASS of a cubin)\n" in err
    assert "  function k (.text.k): bytes differ" in err
    assert "  section .nv.shared.k: size 1536 bytes, 1280 in the guarded build" in err


# -- disassembly, as lines per function (pure) ----------------------------------------------

def test_sass_and_objdump_listings_lose_addresses_and_encodings():
    sass = textwrap.dedent('''\

        \tcode for sm_90a
        \t\tFunction : k
        \t.headerflags\t@"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
                /*0000*/                   LDC R1, c[0x0][0x28] ;                     /* 0x00000a00ff017b82 */
                                                                                      /* 0x000fe20000000800 */
                /*0010*/                   FMUL R0, R0, 256 ;                         /* 0x4380000000007820 */
                                                                                      /* 0x000fe20000400000 */
        \t\t..........
        ''')
    assert split_functions(sass, sass=True) == {"k": ["LDC R1, c[0x0][0x28] ;", "FMUL R0, R0, 256 ;"]}
    objdump = textwrap.dedent('''\

        k.o:     file format elf64-x86-64

        Disassembly of section .text:

        0000000000000000 <f>:
           0:\tlea    0x40(%rdi,%rdi,2),%eax
           4:\tret
        0000000000000010 <main>:
          10:\tlea    0x0(%rip),%rdx        # 17 <main+0x7>
        \t\t\t13: R_X86_64_PC32\t.LC0-0x4
        ''')
    assert split_functions(objdump, sass=False) == {
        "f": ["lea 0x40(%rdi,%rdi,2),%eax", "ret"],
        "main": ["lea 0x0(%rip),%rdx # 17 <main+0x7>", "R_X86_64_PC32 .LC0-0x4"],
    }


def test_the_build_command_gets_the_copy_and_a_temporary_output():
    src, out = Path("/d/.k.ksweep-1.cu"), Path("/t/original.o")
    assert _argv(["gcc", "-c", "-o", "k.o", "k.c"], [4], src, out) == ["gcc", "-c", "-o", "/t/original.o", str(src)]
    assert _argv(["gcc", "-c", "-ok.o", "k.c"], [3], src, out) == ["gcc", "-c", "-o/t/original.o", str(src)]
    assert _argv(["nvcc", "-odir", "x", "--output-file=k.o", "k.cu"], [4], src, out) == \
        ["nvcc", "-odir", "x", "--output-file=/t/original.o", str(src)]
    assert _argv(["gcc", "-c", "k.c"], [2], src, out) == ["gcc", "-c", str(src), "-o", "/t/original.o"]


def _applies(tmp_path, before: str, after: str, diff: str) -> bool:
    """Whether git apply turns ``before`` into ``after`` with ``diff``."""
    (tmp_path / "f.c").write_text(before)
    if diff:
        done = subprocess.run(["git", "apply", "--unsafe-paths", "--directory", "", "-"], input=diff, text=True,
                              cwd=tmp_path, capture_output=True)
        if done.returncode != 0:
            return False
    return (tmp_path / "f.c").read_text() == after


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_the_diff_of_inserted_lines_is_found_in_one_pass_and_applies(tmp_path):
    """Guarding inserts lines only: the diff is made in one pass (difflib's matcher took 15 s
    for 4,000 defines: bench/guard_diff.py times it), and is a diff git applies, for random
    insertions that repeat the lines around them, at the ends, without a final newline, and
    for an edit that is not an insertion (difflib then)."""
    import random

    rng = random.Random(7)
    pool = ["#define X 1", "#endif", "int x;", "", "#ifndef X", "y();"]
    cases = []
    for _ in range(120):
        a = [rng.choice(pool) + "\n" for _ in range(rng.randint(0, 25))]
        b = []
        for line in a:
            if rng.random() < 0.3:
                b.append(rng.choice(["#ifndef X\n", "#endif\n", "new\n"]))
            b.append(line)
        if rng.random() < 0.3:
            b.append("#endif\n")
        cases.append(("".join(a), "".join(b)))
    cases.append(("#define A 1", "#ifndef A\n#define A 1\n#endif"))  # no final newline
    cases.append(("a\nb\nc\n", "a\nB\nc\n"))  # a change, not an insertion
    for before, after in cases:
        assert _applies(tmp_path, before, after, unified_diff(before, after, "f.c")), (before, after)
    assert unified_diff("same\n", "same\n", "f.c") == ""
