"""Inputs checked before any work: a bad input on the command line is one line on stderr
naming the file or option and the fix, exit 2, no traceback, and no file changed.

One table (``CASES``), one harness (``test_a_bad_input_is_one_line_and_changes_nothing``).
A row is an id, the command's arguments with ``{folder}``, ``{db}``, ``{spec}`` ... standing
for the paths of the scratch folder's files (``scratch`` below), the exit code, what the line
says, and whether the command must run as a user other than root (``NOBODY``: a folder root
could write anyway). To add a case, add a row (and, if it needs one, a file to ``scratch``)."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ksweep_cli
from test_damaged_store import filled
from test_driver import toy

ROOT = Path(__file__).parent.parent
NOBODY = 65534  # the uid (and gid) a row marked ``nobody`` runs as when the tests run as root


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    says: str  # a part of the one line
    code: int = 2
    nobody: bool = False  # run as a user who cannot write where root can


CASES = [
    # a result id past SQLite's integers: no such result, not an OverflowError
    Case("explain-id-too-big", ("explain", "{db}", "99999999999999999999999999"),
         "no result with id 99999999999999999999999999 in"),
    Case("compare-id-too-big", ("compare", "{db}", "99999999999999999999999999", "best"), "no result with id"),
    # a config's NAME=VALUE read against the space: each name a parameter, once, of its kind and values
    Case("compare-value-not-a-number", ("compare", "{db}", "best", "A=abc"),
         "A=abc: A's values are numbers (0, 1, 2): give one of them"),
    Case("compare-value-outside", ("compare", "{db}", "best", "A=77"), "A=77 is not one of A's values (0, 1, 2)"),
    Case("compare-not-a-parameter", ("compare", "{db}", "best", "C=1"), "'C' is not a parameter"),
    Case("profile-value-outside", ("profile", "{db}", "--configs", "A=77", "--ncu", "{folder}/ncu"),
         "A=77 is not one of A's values"),
    Case("explain-twice", ("explain", "{db}", "A=0", "A=2"), "A is given twice (A=0, A=2): give each parameter once"),
    Case("compare-twice", ("compare", "{db}", "best", "A=0,A=2"), "A is given twice"),
    Case("explain-not-a-number", ("explain", "{db}", "A=notanumber"), "A=notanumber: A's values are numbers"),
    Case("explain-flag-not-true-or-false", ("explain", "{other}", "FAST=maybe"),
         "FAST=maybe is not one of FAST's values (False, True)"),
    # a spec that is not the database's
    Case("explain-other-spec", ("explain", "{db}", "best", "--spec", "{other}"),
         "holds the results of spec 'toy', but {other} is spec 'other': give --spec the spec the database was "
         "swept with (it names {spec})"),
    Case("compare-other-spec", ("compare", "{db}", "best", "default", "--spec", "{other}"), "is spec 'other'"),
    Case("explain-spec-not-there", ("explain", "{db}", "best", "--spec", "{folder}/nope.toml"),
         "--spec {folder}/nope.toml: no such file"),
    # what compare needs: a database and two different configs of it
    Case("compare-one-config", ("compare", "{db}", "best"),
         "{db} is a results database: compare needs two of its configs after it, ksweep compare {db} A B"),
    Case("compare-spec-one-config", ("compare", "{spec}", "best"), "{spec} is a spec: compare needs two"),
    Case("compare-same-config", ("compare", "{db}", "best", "A=0"),
         "'best' and 'A=0' are the same config (#1 default/base A=0 B=1): compare needs two different configs"),
    Case("compare-pairs-not-joined", ("compare", "{db}", "A=0", "B=1"),
         "one config's NAME=VALUE pairs are joined with commas (A=1,B=2)"),
    Case("compare-database-of-one-config", ("compare", "{one}", "best", "default"),
         "holds one config's result of default/base"),
    # no command writes over data: a database, a spec, what the command reads (with --force too),
    # an existing file without --force; a folder, a missing or read-only folder, a plot that is
    # not an image (one checked way to write an output file: ksweep/outputs.py)
    Case("export-o-its-db", ("export", "{db}", "--format", "header", "-o", "{db}"), "this command reads that file"),
    Case("export-o-its-db-force", ("export", "{db}", "--format", "header", "-o", "{db}", "--force"),
         "this command reads that file; it is never written over, even with --force"),
    Case("export-o-another-db-force", ("export", "{db}", "--format", "json", "-o", "{one}", "--force"),
         "is a SQLite database (ksweep's results are kept in one); ksweep never writes over one, even with --force"),
    Case("export-o-its-spec-force", ("export", "{db}", "--format", "header", "-o", "{spec}", "--force"),
         "this command reads that file"),
    Case("export-o-a-spec-force", ("export", "{db}", "--format", "header", "-o", "{other}", "--force"),
         "is a ksweep spec"),
    Case("export-o-its-source-force", ("export", "{db}", "--format", "t4", "-o", "{folder}/toy.c", "--force"),
         "this command reads that file"),
    Case("export-o-existing", ("export", "{db}", "--format", "header", "-o", "{folder}/old.h"),
         "-o {folder}/old.h: the file exists; give --force to replace it, or another file name"),
    Case("export-o-folder", ("export", "{db}", "--format", "header", "-o", "{folder}/adir"),
         "-o {folder}/adir: is a folder; give a file name in it"),
    Case("export-o-no-folder", ("export", "{db}", "--format", "kt-cache", "-o", "{folder}/nodir/c.json"),
         "the folder {folder}/nodir does not exist; make it (mkdir -p {folder}/nodir) or give another path"),
    Case("export-o-unwritable", ("export", "{db}", "--format", "header", "-o", "{folder}/locked/t.h"),
         "cannot write in the folder {folder}/locked (permission denied)", nobody=True),
    Case("init-o-its-source-force", ("init", "{folder}/g.c", "-o", "{folder}/g.c", "--force"),
         "-o {folder}/g.c: this command reads that file; it is never written over, even with --force"),
    Case("init-o-a-spec-force", ("init", "{folder}/g.c", "-o", "{spec}", "--force"), "is a ksweep spec"),
    Case("init-o-existing", ("init", "{folder}/g.c", "-o", "{folder}/old.h"), "the file exists; give --force"),
    Case("init-o-folder", ("init", "{folder}/g.c", "-o", "{folder}/adir"), "-o {folder}/adir: is a folder"),
    Case("init-o-folder-force", ("init", "{folder}/g.c", "-o", "{folder}/adir", "--force"), "is a folder"),
    Case("init-o-no-folder", ("init", "{folder}/g.c", "-o", "{folder}/nodir/g.toml"),
         "the folder {folder}/nodir does not exist"),
    Case("init-o-unwritable", ("init", "{folder}/g.c", "-o", "{folder}/locked/g.toml"),
         "cannot write in the folder {folder}/locked (permission denied)", nobody=True),
    Case("guard-o-its-source-force", ("guard", "{folder}/g.c", "-o", "{folder}/g.c", "--force"),
         "this command reads that file"),
    Case("guard-o-existing", ("guard", "{folder}/g.c", "BLOCK", "-o", "{folder}/old.h"),
         "the file exists; give --force"),
    Case("guard-o-a-db-force", ("guard", "{folder}/g.c", "-o", "{one}", "--force"), "is a SQLite database"),
    Case("guard-in-place-unwritable", ("guard", "{folder}/locked/k.c", "--in-place"),
         "cannot write in the folder {folder}/locked (permission denied)", nobody=True),
    Case("plot-out-folder", ("plot", "convergence", "{db}", "--out", "{folder}/adir"),
         "--out {folder}/adir: is a folder; give a file name in it ({folder}/adir/plot.png)"),
    Case("plot-out-not-an-image", ("plot", "convergence", "{db}", "--out", "{folder}/c.txt"),
         "--out {folder}/c.txt: not an image file name; end it with .png, .svg or .pdf"),
    Case("plot-out-a-db", ("plot", "heatmap", "{db}", "--x", "A", "--y", "B", "--out", "{folder}/cpu.db"),
         "not an image file name"),
    Case("plot-out-no-folder", ("plot", "convergence", "{db}", "--out", "{folder}/nodir/c.png"),
         "the folder {folder}/nodir does not exist"),
    Case("plot-out-unwritable", ("plot", "convergence", "{db}", "--out", "{folder}/locked/c.png"),
         "cannot write in the folder {folder}/locked (permission denied)", nobody=True),
    Case("plot-out-existing", ("plot", "convergence", "{db}", "--out", "{folder}/old.png"),
         "the file exists; give --force"),
    Case("history-plot-folder", ("history", "{db}", "--plot", "{folder}/adir"), "--plot {folder}/adir: is a folder"),
    Case("history-plot-unwritable", ("history", "{db}", "--plot", "{folder}/locked/h.png"),
         "cannot write in the folder {folder}/locked", nobody=True),
    # the HTML report's page (report --html, run --html), checked before the database is read or a sweep starts
    Case("report-html-existing", ("report", "{db}", "--html", "{folder}/old.h"),
         "--html {folder}/old.h: the file exists; give --force to replace it, or another file name"),
    Case("report-html-its-db-force", ("report", "{db}", "--html", "{db}", "--force"), "this command reads that file"),
    Case("report-html-its-spec-force", ("report", "{db}", "--html", "{spec}", "--force"),
         "this command reads that file"),
    Case("report-html-folder", ("report", "{db}", "--html", "{folder}/adir"), "--html {folder}/adir: is a folder"),
    Case("report-html-no-folder", ("report", "{db}", "--html", "{folder}/nodir/p.html"),
         "the folder {folder}/nodir does not exist"),
    Case("report-html-unwritable", ("report", "{db}", "--html", "{folder}/locked/p.html"),
         "--html {folder}/locked/p.html: cannot write in the folder {folder}/locked (permission denied)", nobody=True),
    Case("run-html-existing", ("run", "{spec}", "--html", "{folder}/old.h"), "--html {folder}/old.h: the file exists"),
    Case("run-html-its-source-force", ("run", "{spec}", "--html", "{folder}/toy.c", "--force"),
         "this command reads that file"),
    Case("run-html-unwritable", ("run", "{spec}", "--html", "{folder}/locked/p.html"),
         "cannot write in the folder {folder}/locked (permission denied)", nobody=True),
    # a sweep that cannot write beside its spec says so before any work
    Case("run-spec-folder-read-only", ("run", "{locked_spec}", "--strategy", "grid"),
         "cannot write in {folder}/locked (permission denied): the results database toy.db is kept there; "
         "give --db in a folder you can write", nobody=True),
    Case("run-spec-folder-read-only-db-elsewhere", ("run", "{locked_spec}", "--db", "{home}/r.db"),
         "cannot write in {folder}/locked (permission denied): the runs' scratch files are kept in .ksweep/ beside "
         "the spec; copy the spec and its sources to a folder you can write", nobody=True),
    Case("check-update-db-folder-read-only", ("check", "{spec}", "--db", "{folder}/locked/results.db", "--update"),
         "cannot write in {folder}/locked (permission denied): the results database results.db is kept there",
         nobody=True),
    Case("plan-estimate-spec-folder-read-only", ("plan", "{locked_spec}", "--estimate", "2"),
         "cannot write in {folder}/locked (permission denied): plan --estimate keeps its sample builds in the build "
         "cache", nobody=True),
    # fixed before: numbers of options
    Case("check-gpus-abc", ("check", "{spec}", "--gpus", "abc"), "--gpus abc: give GPU indices separated by commas"),
    Case("run-confirm-huge", ("run", "{spec}", "--confirm", "5,1000000000"), "--confirm"),
    Case("check-repeats-huge", ("check", "{spec}", "--repeats", "1000000000"), "--repeats"),
]


@pytest.fixture(scope="module")
def scratch():
    """The files the rows name, made once: a toy spec (A in 0..2, B = 1) and a database of its
    three configs' results, a database of one config, a spec of another name (with a FAST
    switch), a source for init, a stand-in ncu, a folder, and a folder no one but root may
    write. Made in the system's temporary folder (not pytest's, which only root may enter),
    open to every user, for the rows that run as another user."""
    folder = Path(tempfile.mkdtemp(prefix="ksweep-bad-input-"))
    folder.chmod(0o755)
    spec = toy(folder, a=(0, 1, 2), b=(1,))
    db = filled(folder / "toy.db", spec.path, n=3)
    one = filled(folder / "one.db", spec.path, n=1)
    (folder / "other").mkdir()
    other = toy(folder / "other", name="other.toml", extra='[switches]\nFAST = "flag"\n').path
    other.write_text(other.read_text().replace('name = "toy"', 'name = "other"'))
    (folder / "g.c").write_text("#ifndef BLOCK\n#define BLOCK 64\n#endif\nint main(void) { return BLOCK; }\n")
    (folder / "adir").mkdir()
    (folder / "ncu").write_text("#!/bin/sh\necho 'NVIDIA (R) Nsight Compute Command Line Profiler'\n")
    (folder / "ncu").chmod(0o755)
    for path in folder.rglob("*"):  # whatever the umask: open to every user
        path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    (folder / "old.h").write_text("// an older export\n")
    (folder / "old.png").write_bytes(b"\x89PNG an older plot\n")
    (folder / "home").mkdir(mode=0o777)
    (folder / "home").chmod(0o777)  # the other user's own folder
    locked = folder / "locked"
    locked.mkdir()
    locked_spec = toy(locked, a=(0, 1), b=(1,)).path
    shutil.copy(db, locked / "results.db")  # a database a reader cannot write beside
    (locked / "k.c").write_text("#define BLOCK 64\nint main(void) { return BLOCK; }\n")
    for path in locked.rglob("*"):
        path.chmod(0o644)
    locked.chmod(0o555)
    yield {"folder": folder, "spec": spec.path, "db": db, "one": one, "other": other, "locked_spec": locked_spec,
           "home": folder / "home"}
    (folder / "locked").chmod(0o755)
    shutil.rmtree(folder, ignore_errors=True)


def files_of(folder: Path) -> dict[str, str]:
    """path -> md5 of every file under ``folder`` (a file made or removed shows too)."""
    return {str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@functools.lru_cache(maxsize=None)
def _nobody_runs_python() -> str | None:
    """Why this process cannot run ksweep as uid NOBODY (None when it can)."""
    try:
        r = subprocess.run([sys.executable, "-c", "import ksweep.cli.main"], user=NOBODY, group=NOBODY,
                           env=_nobody_env(tempfile.gettempdir()), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot start a process as uid {NOBODY}: {exc}"
    return None if r.returncode == 0 else f"uid {NOBODY} cannot import ksweep: {r.stderr.strip()[-200:]}"


def _nobody_env(home: str) -> dict:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": home,
            "LANG": os.environ.get("LANG", "C.UTF-8")}


def cli_as_nobody(argv, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """``ksweep ARGV`` as a user who is not root, for what root could do anyway (write in a
    read-only folder): in this process when the tests do not run as root; as uid NOBODY in
    a process of its own when they do, or skipped when that cannot be (the folders it reads
    must be open to every user; ``home``, its HOME, one it can write)."""
    if os.geteuid() != 0:
        return ksweep_cli(*argv, cwd=cwd)
    why = _nobody_runs_python()
    if why is not None:
        pytest.skip(why)
    return subprocess.run([sys.executable, "-m", "ksweep.cli.main", *map(str, argv)], user=NOBODY, group=NOBODY,
                          env=_nobody_env(str(home)), cwd=cwd, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_input_is_one_line_and_changes_nothing(scratch, case):
    folder = scratch["folder"]
    argv = [a.format(**scratch) for a in case.argv]
    before = files_of(folder)
    r = cli_as_nobody(argv, folder, scratch["home"]) if case.nobody else ksweep_cli(*argv, cwd=folder)
    assert r.returncode == case.code, (r.stdout, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip() and not line.startswith("ksweep: warning")]
    assert len(lines) == 1 and lines[0].startswith("ksweep: error: "), r.stderr
    assert case.says.format(**scratch) in lines[0], lines[0]
    assert files_of(folder) == before


def test_the_scratch_folder_is_open_to_the_user_the_rows_run_as(scratch):
    """What the rows marked ``nobody`` rely on: they can read the folder and not write the locked one."""
    folder = scratch["folder"]
    assert stat.S_IMODE(folder.stat().st_mode) & 0o005 == 0o005
    assert stat.S_IMODE((folder / "locked").stat().st_mode) & 0o222 == 0


@pytest.mark.parametrize("argv, shows", [
    (("report", "{folder}/locked/results.db"), "3 ok, 0 failed"),
    (("history", "{folder}/locked/results.db"), "A=0 B=1"),
    (("export", "{folder}/locked/results.db", "--format", "json"), '"A": 0'),
], ids=["report", "history", "export"])
def test_a_database_in_a_read_only_folder_is_read_and_left_as_it_is(scratch, argv, shows):
    """SQLite cannot make its -wal and -shm files there: a reader opens the file read-only."""
    folder = scratch["folder"]
    before = files_of(folder)
    r = cli_as_nobody([a.format(**scratch) for a in argv], folder, scratch["home"])
    assert r.returncode == 0 and shows in r.stdout, (r.stdout, r.stderr)
    assert files_of(folder) == before


def test_check_of_a_database_in_a_read_only_folder_runs_on_a_copy_with_a_cache_of_its_own(scratch):
    """Without --update, check writes nothing beside the database: its copy and its build cache
    are its own (the toy's build command makes no program: the shape FAILED, exit 1). The
    spec sits in a folder its user can write, for the runs' scratch files."""
    folder, home = scratch["folder"], scratch["home"]
    mine = home / "check"
    mine.mkdir(mode=0o777)
    mine.chmod(0o777)
    for name in ("toy.toml", "toy.c"):
        shutil.copy(folder / name, mine / name)
        (mine / name).chmod(0o644)
    locked = folder / "locked"
    before = files_of(locked)
    r = cli_as_nobody(["check", mine / "toy.toml", "--db", locked / "results.db"], folder, home)
    assert r.returncode == 1 and "FAILED" in r.stdout and "Traceback" not in r.stdout + r.stderr, (r.stdout, r.stderr)
    assert files_of(locked) == before
