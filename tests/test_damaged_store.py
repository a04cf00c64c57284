"""A damaged results database is named in one line, never a traceback, never resumed on,
and never written: SQLite's errors are translated once, at the store's boundary."""

import hashlib
import shutil

import pytest

from ksweep.cli.main import main
from ksweep.errors import StoreDamaged
from ksweep.result import Measurement, Result
from ksweep.spec.model import Objective
from ksweep.status import Status
from ksweep.store.sqlite import Store

from test_driver import toy

PAGE = 4096


def filled(path, spec_path, n=400):
    """A database of a toy spec's sweep: enough rows for many pages."""
    with Store(path) as store:
        store.set_objectives([Objective("ms", "min")])
        store.set_meta("spec_name", "toy")
        store.set_meta("spec", str(spec_path))
        rows = [Result("base", "default", {"A": a, "B": 1}, Status.OK, metrics={"ms": 10.0 + a, "checksum": 1.0},
                       gpu_name="none", cache_key=f"k{a}", finished=1000.0 + a, message="x" * 200,
                       build_argv=("gcc", f"-DA={a}", "toy.c")) for a in range(n)]
        store.put_many(rows)
        for r in rows[:3]:
            for i in range(3):
                store.put_measurement(Measurement(r.variant, r.shape, dict(r.params), r.cache_key, i, Status.OK,
                                                  10.0 + r.params["A"], gpu_name="none", finished=2000.0 + i))
    return path


def damage(path, every=7, first_page=3):
    """Every ``every``-th byte of the pages from ``first_page`` on overwritten; the header intact."""
    data = bytearray(path.read_bytes())
    for i in range((first_page - 1) * PAGE, len(data), every):
        data[i] = 0xA5
    path.write_bytes(bytes(data))


def md5(path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("damaged")
    spec = toy(folder, a=tuple(range(400)), b=(1,))
    db = filled(folder / "toy.db", spec.path)
    damage(db)
    return folder, spec.path, db


COMMANDS = [
    ["report", "{db}"], ["report", "{db}", "--format", "csv"], ["report", "{db}", "--format", "json"],
    ["report", "{db}", "--html", "{folder}/page.html"],
    ["export", "{db}", "--format", "header"], ["export", "{db}", "--format", "json"],
    ["export", "{db}", "--format", "t4"], ["export", "{db}", "--format", "kt-cache"],
    ["select", "{db}", "--size", "N=1"], ["export", "{db}", "--format", "header", "--robust"],
    ["history", "{db}"], ["explain", "{db}", "best"], ["compare", "{db}", "best", "A=1,B=1"], ["insights", "{db}"],
    ["plot", "convergence", "{db}", "--out", "{folder}/c.png"],
    ["run", "{spec}", "--db", "{db}", "--strategy", "grid"],
    ["run", "{spec}", "--db", "{db}", "--warm-start", "{db}"],
    ["check", "{spec}", "--db", "{db}"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c[:3]).replace("{db}", "DB") for c in COMMANDS])
def test_every_command_names_a_damaged_database_in_one_line_and_leaves_it(damaged, capsys, argv):
    folder, spec, db = damaged
    before = md5(db)
    args = [a.format(db=db, spec=spec, folder=folder) for a in argv]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("ksweep: warning")]
    assert len(lines) == 1 and "damaged" in lines[0] and str(db) in lines[0] and ".recover" in lines[0], err
    assert md5(db) == before


def test_a_sweep_never_resumes_on_a_milder_damage(tmp_path):
    """Damage that reading the results does not reach (one page of the history): the sweep's
    quick check finds it before it writes."""
    spec = toy(tmp_path, a=tuple(range(400)), b=(1,))
    db = filled(tmp_path / "mild.db", spec.path)
    with Store(db, create=False) as store:
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    data = bytearray(db.read_bytes())
    data[(pages - 1) * PAGE: (pages - 1) * PAGE + 8] = b"\xa5" * 8  # the last page's header: history rows
    db.write_bytes(bytes(data))
    before = md5(db)
    with Store(db, create=False) as store:
        with pytest.raises(StoreDamaged, match="damaged"):
            store.check_integrity()
    assert main(["run", str(spec.path), "--db", str(db), "--strategy", "grid"]) == 2
    assert md5(db) == before


def test_an_intact_database_passes_the_check(tmp_path):
    spec = toy(tmp_path)
    db = filled(tmp_path / "ok.db", spec.path, n=50)
    with Store(db, create=False) as store:
        store.check_integrity()
    shutil.copy(db, tmp_path / "copy.db")


def test_only_a_damaged_file_is_called_damaged(tmp_path):
    """A misuse of SQLite (a constraint broken, a closed connection) is ksweep's bug and stays
    SQLite's own error; neither is a damaged database."""
    import sqlite3

    store = Store(tmp_path / "s.db")
    with pytest.raises(sqlite3.IntegrityError):
        store.db.execute("INSERT INTO meta (key, value) VALUES (?, NULL)", ("k",))
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        store.get_meta("schema")


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a host with a GPU runs the sweep")
def test_a_sweep_the_host_refuses_leaves_no_empty_database(tmp_path, capsys):
    """A spec of CUDA programs on a host without a GPU is refused before anything is built:
    the database that run made (and its CSV) is not left behind, empty."""
    from pathlib import Path

    spec = Path(__file__).parent.parent / "examples" / "sgemm" / "sgemm.toml"
    db = tmp_path / "refused.db"
    assert main(["run", str(spec), "--db", str(db)]) == 2
    assert "no NVIDIA GPU" in capsys.readouterr().err
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("refused")]  # no .db, -wal, .lock, .csv
