"""Settings that are not macros: integer constants, enumerators and literal template arguments
of a launch are found and said where they are by ``ksweep init`` and ``ksweep guard``;
``guard --convert NAME`` makes a constant a guarded macro, ``--check`` proving the code the
same (object code, cubins)."""

import shutil
import subprocess
import textwrap

import pytest

from ksweep.cli.main import main
from ksweep.source.guard import guard, macro_value
from ksweep.source.settings import settings

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not on PATH")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

RUNNER = textwrap.dedent('''\
    #include <stdio.h>
    // const int COMMENTED = 4;
    typedef unsigned int uint;
    enum Mode { FAST = 1, SLOW = 2 };
    struct Tile { static constexpr int TM = 8; int f() { const int LOCAL = 3; return LOCAL; } };
    constexpr int kStages = 3;
    template <const int BM, const int BN> __global__ void sgemm(float *c) { c[0] = BM + BN; }
    void run(float *c) {
      const uint K10_BM = 128;
      uint const K10_BN = 64; // block tile N
      static const int A = 1, B = 2;
      const int HALF = K10_BM / 2;
      int counter = 5;
      const char *label = "const int NOT = 5;";
      sgemm<K10_BM, K10_BN><<<1, 32>>>(c);
      sgemm<64, 32><<<1, 32>>>(c);
    }
''')


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_settings_that_are_not_macros_and_where_they_are():
    found = {s.name: s for s in settings(RUNNER)}
    assert [s.described() for s in found.values()] == [
        "FAST (enumerator, line 4)", "SLOW (enumerator, line 4)", "TM (static constexpr int (a member), line 5)",
        "LOCAL (const int, line 5)", "kStages (constexpr int, line 6)", "K10_BM (const uint, line 9)",
        "K10_BN (const uint, line 10)", "A (static const int, line 11)", "B (static const int, line 11)",
        "HALF (const int, line 12)", "sgemm<…>#1 (template argument, line 16)", "sgemm<…>#2 (template argument, line 16)"]
    assert found["K10_BM"].alone and found["K10_BM"].number and found["K10_BM"].text == "const uint K10_BM = 128;"
    assert not found["A"].alone and not found["HALF"].number and found["LOCAL"].member is False
    assert (found["sgemm<…>#2"].value, found["kStages"].said) == ("32", "a constexpr int at line 6")
    (v, w) = settings("constexpr int V = min(A, B), W = 4;\n")
    assert (v.name, v.value, v.number, w.name, w.value, w.number) == ("V", "min(A, B)", False, "W", "4", True)


def test_guard_says_what_a_name_that_is_not_a_define_is(tmp_path, capsys):
    f = tmp_path / "runner.cu"
    f.write_text(RUNNER)
    code, _, err = _cli(capsys, "guard", f, "K10_BM")
    assert code == 2 and err == (f"ksweep: error: {f}: K10_BM is not #defined there: it is a const uint at line 9 "
                                 f"(const uint K10_BM = 128;); --convert K10_BM makes it a guarded macro\n")
    code, _, err = _cli(capsys, "guard", f, "FAST")
    assert code == 2 and "it is an enumerator at line 4" in err and "--convert" not in err
    code, _, err = _cli(capsys, "guard", f)
    assert code == 0 and "nothing to guard" in err
    assert "not macros, so -D cannot set them: FAST (enumerator, line 4)" in err and "K10_BM (const uint, line 9)" in err
    assert "--convert NAME … makes a constant a guarded macro" in err


def test_convert_replaces_the_declaration_keeping_its_type_indentation_comment_and_line_endings():
    result = guard(RUNNER.replace("\n", "\r\n"), convert=["K10_BM", "K10_BN", "kStages"])
    assert [s.name for s in result.converted] == ["K10_BM", "K10_BN", "kStages"] and result.changed
    lines = result.text.split("\r\n")
    assert lines[5:8] == ["#ifndef kStages", "#define kStages 3", "#endif"]
    assert lines[10:16] == ["  #ifndef K10_BM", "  #define K10_BM 128u", "  #endif",
                            "  #ifndef K10_BN", "  #define K10_BN 64u // block tile N", "  #endif"]
    assert "#line 11\r\n  static const int A" in result.line_mapped  # every original line keeps its number
    assert (macro_value("size_t", "4"), macro_value("index_t", "4"), macro_value("int", "4u")) == \
        ("4ul", "((index_t)4)", "4u")


@pytest.mark.parametrize("name, why", [
    ("A", "its line holds other code too"), ("TM", "a member of a class"), ("HALF", "not an integer literal"),
    ("FAST", "it is an enumerator"), ("NOPE", "no integer const or constexpr there"),
])
def test_what_convert_refuses(name, why):
    with pytest.raises(Exception, match=why):
        guard(RUNNER, convert=[name], label="runner.cu")
    with pytest.raises(Exception, match="declared 2 times"):
        guard("void f() { const int N = 1;\n}\nvoid g() {\n  const int N = 2;\n}\n".replace("{ const", "{\n  const"),
              convert=["N"])


C_RUNNER = textwrap.dedent('''\
    #include <stdio.h>
    int main(void) {
        const unsigned TILE = 48;  // the tile
        unsigned n = 1000;
        printf("%u %u\\n", n / TILE, TILE);
        return 0;
    }
''')


@needs_gcc
def test_convert_with_check_proves_the_object_code_the_same_and_d_then_sets_it(tmp_path, capsys, monkeypatch):
    f = tmp_path / "k.c"
    f.write_text(C_RUNNER)
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(capsys, "guard", "k.c", "--convert", "TILE", "--in-place", "--check", "--",
                          "gcc", "-O2", "-c", "-o", "k.o", "k.c")
    assert code == 0, err
    assert "converted TILE (const unsigned, line 3)" in err and "the generated code is identical (object code)" in err
    assert "#define TILE 48u  // the tile" not in f.read_text() and "#define TILE 48u // the tile" in f.read_text()
    subprocess.run(["gcc", "-O2", "-DTILE=100", "-o", "k", "k.c"], check=True)
    assert subprocess.run(["./k"], capture_output=True, text=True).stdout == "10 100\n"


@needs_nvcc
def test_convert_with_check_proves_the_cubin_the_same(tmp_path, capsys, monkeypatch):
    (tmp_path / "k.cu").write_text(textwrap.dedent('''\
        typedef unsigned int uint;
        template <const int BM, const int BN> __global__ void k(float *c, uint n) { c[threadIdx.x % n] = BM * 2 + BN; }
        void run(float *c) {
          const uint K10_BM = 128;
          const uint K10_BN = 64;
          k<K10_BM, K10_BN><<<4096 / K10_BM, 32>>>(c, K10_BN / 3);
        }
    '''))
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(capsys, "guard", "k.cu", "--convert", "K10_BM", "K10_BN", "--check", "--",
                          "nvcc", "-cubin", "-arch=sm_90a", "-o", "k.cubin", "k.cu")
    assert code == 0, err
    assert "the generated code is identical (SASS of a cubin)" in err and out.count("+#ifndef") == 0
    assert out.count("+  #ifndef") == 2 and "+  #define K10_BM 128u" in out


def test_init_names_the_constants_and_the_command_that_makes_them_macros(tmp_path, capsys):
    f = tmp_path / "runner.cu"
    f.write_text(RUNNER.replace("enum Mode { FAST = 1, SLOW = 2 };\n", ""))
    code, _, err = _cli(capsys, "init", f)
    assert code == 2 and len(err.splitlines()) == 1
    assert "nothing to tune" in err and "K10_BM (const uint, line 8)" in err and "sgemm<…>#1 (template argument" in err
    assert "`ksweep guard runner.cu --convert kStages K10_BM K10_BN --in-place --check -- BUILD COMMAND`" in err
    assert "the others need a macro the source reads, written by hand" in err
    f.write_text(guard(f.read_text(), convert=["K10_BM", "K10_BN"]).text)
    code, out, err = _cli(capsys, "init", f)
    assert code == 0, err
    assert "K10_BM = { values = [32, 64, 128, 256, 512], default = 128 }" in out
    assert "# settings that are not macros, so -D cannot set them: TM (static constexpr int (a member)" in out
