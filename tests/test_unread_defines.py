"""A parameter's -D name that no source the build reads reads: ``ksweep plan`` and ``ksweep
run`` say it in one line, with the names the sources do read, before anything is built; the
rename plan suggests for a -D that would rewrite an identifier is a name the sources read."""

import textwrap
from pathlib import Path

from ksweep.spec.load import load_spec
from ksweep.spec.unread import rename_hint, unread_defines

from conftest import ksweep_cli


def _program(folder: Path, params: str, source: str, build: str = "", run: str = "") -> Path:
    (folder / "p.c").write_text(textwrap.dedent(source))
    spec = folder / "p.toml"
    spec.write_text(textwrap.dedent(f"""
        [sweep]
        name = "p"
        objective = "ms"
        [params]
        {params}
        [build]
        sources = ["p.c"]
        command = {build or '["gcc", "-O0", "{defines}", "-o", "{binary}", "p.c"]'}
        {run}
    """))
    return spec


SOURCE = """
    #include <stdio.h>
    #include "tiles.h"
    #ifndef UNROLL
    #define UNROLL 1
    #endif
    /* TILES_M is read in tiles.h, the string below is no read of STAGES */
    int main(void) { printf("@@RESULT ms=%d STAGES\\n", UNROLL * TILES_M); return 0; }
"""


def test_plan_and_run_say_a_define_no_source_reads_before_building(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "tiles.h").write_text("#ifndef TILE_M\n#define TILE_M 4\n#endif\n#define TILES_M (TILE_M * 2)\n")
    spec = _program(tmp_path, "UNROL = [1, 2]\nTILE_M = [4, 8]\nSTAGES = [2, 3]", SOURCE,
                    build='["gcc", "-O0", "-Iinc", "{defines}", "-o", "{binary}", "p.c"]')
    for command in (["plan"], ["run", "-q"]):
        out = ksweep_cli(*command, spec, "--db", tmp_path / "p.db")
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1, out.stderr
        assert "params.UNROL (-DUNROL), params.STAGES (-DSTAGES): read by no source of the build" in lines[0]
        assert "TILE_M" not in lines[0].split(":")[2] and "the sources read UNROLL, TILE_M" in lines[0]
        assert "did you mean UNROLL?" in lines[0]
    assert not (tmp_path / "p.db").exists() and not (tmp_path / "cache").exists()  # nothing made, nothing built


def test_a_parameter_that_reaches_the_program_another_way_is_read(tmp_path):
    """Named in the run command, or passed on by a derived -D; a header of a library the
    sources include and that is not found may read its own prefix's names; a command that is
    no compiler is not judged."""
    source = "#include <cub/cub.cuh>\nint main(void) { return TOTAL; }\n"
    spec = _program(tmp_path, "ARG = [1, 2]\nHALF = [1, 2]\nCUB_TUNING = [0, 1]\n[derived]\n"
                              "TOTAL = { expr = \"HALF * 2\", define = true }", source,
                    run='[run]\ncommand = ["{binary}", "{ARG}"]')
    assert unread_defines(load_spec(spec)) is None
    spec = _program(tmp_path, "UNREAD = [1, 2]", "int main(void) { return 0; }\n",
                    build='["sh", "build.sh", "{defines}", "{binary}"]')
    assert unread_defines(load_spec(spec)) is None


def test_the_rename_plan_suggests_is_a_name_the_sources_read():
    assert rename_hint("BM", ["K10_BM", "K10_BN"], "") == \
        'give the macro the name the sources read for it, define = "K10_BM" (or [sweep] define_prefix = "K10_")'
    hint = rename_hint("BM", ["TILE"], "")
    assert "define =" not in hint and "none reads a macro for BM yet" in hint


def test_a_file_the_command_compiles_is_read_though_not_listed_and_a_computed_include_is_not_judged(tmp_path):
    (tmp_path / "runner.c").write_text("int tile(void) { return TILE; }\n")
    spec = _program(tmp_path, "TILE = [1, 2]", "int tile(void);\nint main(void) { return tile(); }\n",
                    build='["gcc", "{defines}", "-o", "{binary}", "p.c", "runner.c"]')
    assert unread_defines(load_spec(spec)) is None
    spec = _program(tmp_path, "TILE = [1, 2]", "#include CONFIG_HEADER\nint main(void) { return 0; }\n")
    assert unread_defines(load_spec(spec)) is None  # the header a macro names may read it
    spec = _program(tmp_path, "TILE = [1, 2]", "int main(void) { return 0; }\n")
    assert "params.TILE: -DTILE is read by no source of the build" in unread_defines(load_spec(spec))
