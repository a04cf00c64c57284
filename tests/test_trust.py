"""The default path is trustworthy: nothing hangs, nothing stale is resumed, nothing is lost.

Each test here failed before its fix (issue: "Nothing hangs, nothing stale, nothing lost").
The programs are small C files built by gcc; no GPU is needed.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ksweep.errors import EnvironmentProblem, StoreError, StoreInUse
from ksweep.run.executor import LocalExecutor
from ksweep.run.gpus import Gpu
from ksweep.space.space import Space
from ksweep.spec.load import load_spec
from ksweep.status import Status
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import Sweep, SweepOptions
from ksweep.app.sweep import run_sweep
from ksweep.sweep.local import make_builder, scratch_dir

from conftest import ended_after, ksweep_cli

PROGRAMS = Path(__file__).parent / "programs"
A20 = list(range(20))
B15 = list(range(15))


def toy(folder: Path, *, a=A20, b=B15, extra: str = "", build: str | None = None, run: str | None = None,
        name: str = "toy.toml") -> Path:
    """A spec of tests/programs/toy.c (its header toy.h is not listed in sources)."""
    for f in ("toy.c", "toy.h"):
        if not (folder / f).exists():
            shutil.copy(PROGRAMS / f, folder / f)
    build = build or '["gcc", "-O0", "{defines}", "-o", "{binary}", "toy.c"]'
    run = run or '["{binary}"]'
    path = folder / name
    path.write_text(textwrap.dedent(f"""
        [sweep]
        name = "toy"
        objective = "ms"
        [params]
        A = {a}
        B = {b}
        [build]
        sources = ["toy.c"]
        command = {build}
        [run]
        command = {run}
        timeout = 20
    """) + textwrap.dedent(extra))
    return path


def cli(*args: str, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ksweep.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)


def command(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``ksweep ARGS`` in this process (tests/conftest.py): what it says, stores and returns.
    The tests of the process itself (a hang, kill -9, Ctrl-C, a package hidden from it) start
    one with ``cli``."""
    return ksweep_cli(*args, cwd=cwd)


def stored(db: Path) -> dict[tuple, object]:
    with Store(db) as store:
        return {(r.params["A"], r.params["B"]): r for r in store.results() if r.status is not Status.PRUNED}


def sweep(spec: Path, **options):
    opts = {"strategy": "grid", "confirm": None, **options}
    summary, db = run_sweep(load_spec(spec), options=SweepOptions(**opts), jobs=2)
    return summary, db


# -- 1. the default strategy never hangs -----------------------------------------------------

@pytest.mark.slow
def test_default_strategy_sweeps_300_configs_of_a_gcc_program(tmp_path):
    """auto with no budget sweeps everything (grid), here 300 configs built by gcc; the
    process and CI's environment are what README installs (no threadpoolctl hidden extra)."""
    spec = toy(tmp_path)
    r = cli("run", str(spec), "-q")
    assert r.returncode == 0, r.stderr
    rows = stored(tmp_path / ".ksweep" / "toy.db")
    assert len(rows) == 300 and all(row.status is Status.OK for row in rows.values())


@pytest.mark.slow
def test_model_based_search_with_forking_threads_finishes(tmp_path):
    """The search that hung: surrogate (numpy/BLAS in the main thread) while builds and runs
    start processes from worker threads."""
    spec = toy(tmp_path)
    r = cli("run", str(spec), "-q", "--strategy", "surrogate", "--max-evals", "150")
    assert r.returncode == 0, r.stderr
    assert len(stored(tmp_path / ".ksweep" / "toy.db")) == 150


def test_blas_is_single_threaded_while_strategies_compute(tmp_path):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    seen = []

    def factory(name, space, seed, max_evals):
        from ksweep.strategies import make_strategy

        inner = make_strategy("random", space, seed=seed)
        real_ask = inner.ask

        def ask(n=1):
            seen.extend(p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas")
            return real_ask(n)

        inner.ask = ask
        return inner

    spec = load_spec(toy(tmp_path, a=[1, 2, 3], b=[1]))
    builder = make_builder(spec)
    executor = LocalExecutor(builder, [Gpu(index=None)], scratch_dir(spec), build_jobs=2)
    with Store(tmp_path / "r.db") as store:
        Sweep(spec, store, executor, SweepOptions(confirm=None, strategy="random"), strategy_factory=factory).run()
    executor.shutdown()
    assert seen and set(seen) == {1}


def test_auto_with_no_budget_is_grid_and_with_a_time_limit_a_model(tmp_path):
    spec = load_spec(toy(tmp_path, a=[1, 2, 3], b=[1, 2]))
    space = Space.from_spec(spec, "default", "base")
    executor = LocalExecutor(make_builder(spec), [Gpu(index=None)], scratch_dir(spec))
    with Store(tmp_path / "r.db") as store:
        free = Sweep(spec, store, executor, SweepOptions(confirm=None, strategy="auto"))
        assert free._make_strategy("auto", space, 0, None).chosen == "grid"
        timed = Sweep(spec, store, executor, SweepOptions(confirm=None, strategy="auto", time_limit=60))
        assert timed._make_strategy("auto", space, 0, None).chosen == "surrogate"
        small = Sweep(spec, store, executor, SweepOptions(confirm=None, strategy="auto", max_evals=3))
        assert small._make_strategy("auto", space, 0, 3).chosen == "surrogate"
    executor.shutdown()


# -- 2. a result's key covers the experiment -------------------------------------------------

@pytest.mark.parametrize("change", [
    ("[run]\ncommand = [\"{binary}\"]\ntimeout = 20", "[run]\ncommand = [\"{binary}\", \"x\"]\ntimeout = 20"),
    ("timeout = 20", "timeout = 25"),
    ("timeout = 20", "timeout = 20\nenv = { TOY = \"1\" }"),
    ('objective = "ms"', 'objective = "ms"\ndirection = "max"'),
    ("B = [1]", "B = [1]\n[check]\nexpected = { checksum = 1 }"),
])
def test_changing_how_a_config_runs_reruns_it_without_rebuilding(tmp_path, change):
    spec = toy(tmp_path, a=[1, 2], b=[1])
    first, db = sweep(spec)
    assert first.evaluated == 2
    again, _ = sweep(spec)
    assert again.evaluated == 0 and again.resumed == 2
    old, new = change
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new, 1))
    third, _ = sweep(spec)
    assert third.evaluated == 2
    assert all(r.cached for r in stored(db).values())  # run again, not built again


def test_another_gpu_model_reruns_the_configs(tmp_path):
    spec = load_spec(toy(tmp_path, a=[1, 2], b=[1]))

    def on(model: str):
        executor = LocalExecutor(make_builder(spec), [Gpu(index=None, name=model)], scratch_dir(spec), build_jobs=2)
        with Store(tmp_path / "r.db") as store:
            summary = Sweep(spec, store, executor, SweepOptions(strategy="grid", confirm=None)).run()
        executor.shutdown()
        return summary

    assert on("ModelA").evaluated == 2
    assert on("ModelA").evaluated == 0
    assert on("ModelB").evaluated == 2
    assert {r.gpu_name for r in stored(tmp_path / "r.db").values()} == {"ModelB"}


def test_rerun_failed_and_all(tmp_path):
    spec = toy(tmp_path, a=[1, 2, 3], b=[1],
               build='["sh", "-c", "test {A} -ne 2 && gcc -O0 -DA={A} -DB={B} -o {binary} {spec_dir}/toy.c"]')
    first, db = sweep(spec)
    assert first.evaluated == 3 and stored(db)[(2, 1)].status is Status.COMPILE_ERROR
    assert sweep(spec)[0].evaluated == 0
    assert sweep(spec, rerun="failed")[0].evaluated == 1
    assert sweep(spec, rerun="all")[0].evaluated == 3
    r = cli("run", str(spec), "-q", "--strategy", "grid", "--rerun", "failed")
    assert r.returncode == 0 and "1 evaluated, 2 resumed" in r.stdout


# -- 3. headers the spec does not list --------------------------------------------------------

def test_editing_an_included_header_rebuilds_and_reruns(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1])
    first, db = sweep(spec)
    assert first.evaluated == 2
    assert any(p.endswith("toy.h") for p, _ in stored(db)[(1, 1)].deps)
    assert sweep(spec)[0].evaluated == 0
    header = tmp_path / "toy.h"
    header.write_text(header.read_text().replace("TOY_BASE 1.0", "TOY_BASE 100.0"))
    third, _ = sweep(spec)
    assert third.evaluated == 2
    rows = stored(db)
    assert all(not r.cached and r.metrics["ms"] > 100 for r in rows.values())


def test_dependency_file_parsing():
    from ksweep.build.deps import dependency_flags, parse_depfile

    text = "prog : /a/x.cu \\\n    /a/my\\ dir/y.h \\\n  z.h\nz.h:\n"
    assert parse_depfile(text) == ["/a/x.cu", "/a/my dir/y.h", "z.h"]
    assert dependency_flags(["nvcc", "-O3", "-o", "/t/prog", "x.cu"], "d") == ["-MMD", "-MF", "d"]
    assert dependency_flags(["gcc-12", "-DX=1", "x.c", "-o", "p"], "d") == ["-MMD", "-MF", "d"]
    assert dependency_flags(["nvcc", "a.cu", "b.cu", "-o", "p"], "d") is None  # one source only
    assert dependency_flags(["make", "x.c"], "d") is None
    assert dependency_flags(["gcc", "-MD", "x.c"], "d") is None


# -- 4. failures of the host are not results -------------------------------------------------

def _evaluated(db: Path) -> int:
    if not db.exists():
        return 0
    with Store(db) as store:
        return len(store.evaluated("base", "default"))


def test_a_build_program_that_does_not_exist_stops_before_building(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1], build='["gccx-none", "{defines}", "-o", "{binary}", "toy.c"]')
    r = command("run", str(spec), "-q")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "gccx-none" in r.stderr and "not found" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / ".ksweep").exists()  # refused before a database or a cache is made


def test_a_run_program_that_does_not_exist_stops(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1], run='["/nonexistent/runner", "{binary}"]')
    with pytest.raises(EnvironmentProblem, match="runner"):
        sweep(spec)
    assert _evaluated(tmp_path / ".ksweep" / "toy.db") == 0


def test_no_gpu_reported_by_the_program_stops_and_stores_nothing(tmp_path):
    spec = toy(tmp_path, a=[1, 2, 3], b=[1], run=(
        '["sh", "-c", "echo \'CUDA error: no CUDA-capable device is detected (cudaErrorNoDevice)\' >&2; exit 1"]'))
    with pytest.raises(EnvironmentProblem, match="no CUDA-capable device"):
        sweep(spec)
    assert _evaluated(tmp_path / ".ksweep" / "toy.db") == 0
    r = command("run", str(spec), "-q")
    assert r.returncode == 2 and "no CUDA-capable device" in r.stderr and "Traceback" not in r.stderr


def test_a_missing_shared_library_stops(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1], run=(
        '["sh", "-c", "echo \'prog: error while loading shared libraries: libcublas.so.13: cannot open shared '
        'object file: No such file or directory\' >&2; exit 127"]'))
    with pytest.raises(EnvironmentProblem, match="libcublas"):
        sweep(spec)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this host has a GPU")
def test_a_cuda_program_sweep_on_a_host_without_gpu_says_so_before_building(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\nint main() { k<<<A, 1>>>(); return 0; }\n")
    spec = toy(tmp_path, a=[1, 2], b=[1], build='["nvcc", "{defines}", "-o", "{binary}", "k.cu"]')
    spec.write_text(spec.read_text().replace('sources = ["toy.c"]', 'sources = ["k.cu"]'))
    r = command("run", str(spec), "-q")
    assert r.returncode == 2 and "no NVIDIA GPU" in r.stderr and "Traceback" not in r.stderr
    cache = tmp_path / ".ksweep" / "cache"
    assert not cache.exists() or not any(cache.iterdir())  # nothing was built
    # a program nvcc builds from plain C++ needs no GPU: not refused
    plain = toy(tmp_path, a=[1, 2], b=[1], build='["nvcc", "-x", "cu", "{defines}", "-o", "{binary}", "toy.c"]',
                name="plain.toml")
    assert command("plan", str(plain)).returncode == 0
    from ksweep.run.environment import needs_gpu

    assert needs_gpu(load_spec(spec)) and not needs_gpu(load_spec(plain))


def test_kernel_mode_without_cuda_python_says_how_to_install(tmp_path):
    from conftest import vadd_kernel_spec

    # cuda-python hidden from the command (the test extra installs it, for NVRTC): a None
    # entry in sys.modules makes find_spec answer None and an import fail
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['cuda'] = None\n")
    path = vadd_kernel_spec(tmp_path, "BLOCK = [64, 128]\nELEMS = [1]", 1024)
    r = subprocess.run([sys.executable, "-m", "ksweep.cli.main", "run", str(path), "-q"], capture_output=True,
                       text=True, timeout=900, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(hide)})
    assert r.returncode == 2 and "cuda-python" in r.stderr and "pip install" in r.stderr
    assert "Traceback" not in r.stderr


# -- 5. budgets per database, deterministic resume -------------------------------------------

def test_max_evals_counts_the_store(tmp_path):
    spec = toy(tmp_path)
    first, db = sweep(spec, strategy="surrogate", max_evals=20)
    assert first.evaluated == 20
    again, _ = sweep(spec, strategy="surrogate", max_evals=20)
    assert (again.evaluated, again.resumed) == (0, 20)
    more, _ = sweep(spec, strategy="surrogate", max_evals=26)
    assert more.evaluated == 6 and len(stored(db)) == 26


PHASED = """
[switches]
FAST = "flag"
"""


@pytest.mark.parametrize("strategy", ["surrogate"])  # every strategy: tests/test_driver.py, against the fake
def test_a_stopped_search_resumed_ends_where_an_uninterrupted_one_does(tmp_path, strategy):
    if strategy == "bayes":
        pytest.importorskip("optuna")
    extra = PHASED if strategy == "phased" else ""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    a, b = list(range(8)), list(range(6))
    whole, db1 = sweep(toy(one, a=a, b=b, extra=extra), strategy=strategy, max_evals=24, seed=3, lookahead=4)
    spec2 = toy(two, a=a, b=b, extra=extra)
    for budget in (5, 11, 24):  # stopped twice on the way
        sweep(spec2, strategy=strategy, max_evals=budget, seed=3, lookahead=4)
    final = sweep(spec2, strategy=strategy, max_evals=24, seed=3, lookahead=4)[1]
    assert set(stored(db1)) == set(stored(final))
    assert len(stored(db1)) == (24 if strategy != "phased" else len(stored(db1)))


def test_phased_with_a_reference_reaches_tier_two(tmp_path):
    spec = toy(tmp_path, a=[1, 5, 7], b=[2, 4], extra=PHASED + """
        [check]
        keys = ["checksum"]
        reference = "defaults"
    """)
    summary, db = sweep(spec, strategy="phased")
    with Store(db) as store:
        phases = {r.phase for r in store.results()}
    assert "tier2" in phases and "reference" in phases


# -- 6. one sweep per database ----------------------------------------------------------------

HOLD = """
import sys
from ksweep.store.sqlite import Store
s = Store(sys.argv[1])
s.lock()
print("locked", flush=True)
sys.stdin.read()
"""


def test_a_second_run_on_a_database_in_use_is_refused_with_the_pid(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1])
    db = tmp_path / ".ksweep" / "toy.db"
    db.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreInUse, match=f"pid {holder.pid}"):
            with Store(db) as store:
                store.lock()
        r = command("run", str(spec), "-q")
        assert r.returncode == 2 and f"pid {holder.pid}" in r.stderr and "Traceback" not in r.stderr
        assert _evaluated(db) == 0
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert sweep(spec)[0].evaluated == 2  # free again once the holder is gone


def test_a_database_reached_through_a_symlink_is_the_same_lock(tmp_path):
    """Two sweeps wrote one database, one of them through a symlink (22 history rows for 12
    configs): the lock was named after the path given."""
    db = tmp_path / "real.db"
    (tmp_path / "link.db").symlink_to(db)
    with Store(db) as first:
        first.lock()
        with pytest.raises(StoreInUse, match=f"pid {os.getpid()}"):
            with Store(tmp_path / "link.db") as second:
                second.lock()
        first.unlock()


def test_another_specs_database_is_refused(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1])
    _, db = sweep(spec)
    other = tmp_path / "other.toml"
    other.write_text(spec.read_text().replace('name = "toy"', 'name = "other"'))
    with pytest.raises(StoreError, match="holds the results of spec 'toy'"):
        run_sweep(load_spec(other), db=db, options=SweepOptions(strategy="grid", confirm=None))


def test_a_database_of_another_program_is_refused_and_left_as_it_was(tmp_path):
    """`--db` (or report's DB) naming another program's SQLite file: ksweep's tables were
    written into it, by a sweep and by a report alike, and the report printed nothing, exit 0."""
    import sqlite3

    spec = toy(tmp_path, a=[1, 2], b=[1])
    other = tmp_path / "notes.db"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE notes (text TEXT)")
        c.execute("INSERT INTO notes VALUES ('mine')")
    c.close()
    before = other.read_bytes()
    for create in (True, False):
        with pytest.raises(StoreError, match="not a ksweep results database .*notes"):
            Store(other, create=create)
    for args in (["run", str(spec), "--db", str(other), "-q"], ["report", str(other)], ["history", str(other)]):
        r = command(*args)
        assert r.returncode == 2 and "not a ksweep results database" in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert other.read_bytes() == before
    empty = tmp_path / "empty.db"  # nothing in it: a reader says so and writes nothing
    empty.touch()
    r = command("report", str(empty))
    assert r.returncode == 2 and "not a ksweep results database" in r.stderr and empty.stat().st_size == 0


def test_a_reader_given_a_folder_is_told_to_give_the_database_file_not_db(tmp_path):
    """`ksweep report FOLDER` said "give --db a file name", an option report does not have;
    it now asks for a database file and names the ones the folder holds. `run --db FOLDER`
    says so too (its own error was replaced by the one of writing the CSV afterwards)."""
    (tmp_path / ".ksweep").mkdir()
    with Store(tmp_path / ".ksweep" / "s.db"):
        pass
    for reader in (["report"], ["history"], ["export", "--format", "json"]):
        r = command(*reader, str(tmp_path))
        assert r.returncode == 2, r.stderr
        (line,) = r.stderr.strip().splitlines()
        assert "--db" not in line and "is a directory, not a results database: give a database file" in line
        assert str(tmp_path / ".ksweep" / "s.db") in line
    empty = tmp_path / "empty"
    empty.mkdir()
    r = command("run", str(toy(tmp_path, a=[1], b=[1])), "--db", str(empty), "-q")  # a writer: a name for a new one
    assert r.returncode == 2 and f"give a database file, e.g. {empty / 'results.db'}" in r.stderr


# -- kill -9 at random moments over a whole sweep ---------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("strategy, evals, wanted_kills", [
    # one real series, over a model-based sweep (10 random configs, then the model): the process killed in its builds, runs and
    # store writes. Each strategy's search killed again and again at random moments (8 kills
    # each, results in flight and out of order): tests/test_driver.py, against the fake executor
    ("auto", 20, 8),
])
def test_kill_9_at_random_moments_loses_nothing_and_ends_like_an_uninterrupted_run(tmp_path, strategy, evals,
                                                                                  wanted_kills):
    rng = random.Random(12)
    # the search's own resume (a confirmation phase killed again and again: tests/test_driver.py)
    args = ["--strategy", strategy, "--max-evals", str(evals), "--seed", "5", "-j", "2", "-q", "--no-confirm"]
    extra = PHASED if strategy == "phased" else ""
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    clean.mkdir()
    killed.mkdir()
    r = cli("run", str(toy(clean, extra=extra)), *args)
    assert r.returncode == 0, r.stderr
    expected = set(stored(clean / ".ksweep" / "toy.db"))
    assert len(expected) == evals

    spec = toy(killed, extra=extra + f"""
        [run.env]
        KSWEEP_TEST_LOG = "{killed / 'runs.log'}"
        TOY_SLEEP_MS = "200"
    """)
    db = killed / ".ksweep" / "toy.db"
    log = killed / "runs.log"
    committed: set = set()
    kills = 0

    def ran_again() -> set:
        """The configs the last process ran whose results were stored before it started."""
        ran = log.read_text().splitlines() if log.exists() else []
        if log.exists():
            log.unlink()
        return {tuple(int(kv.split("=")[1]) for kv in line.split()) for line in ran} & committed

    # killed until wanted_kills kills have landed and every result is stored (the last ones at
    # the budget's end among them), or until a process ends by itself after that many kills.
    # A kill comes 0.3-1.2 s after the start, times a stretch that follows this machine's speed:
    # longer after a process killed before it stored anything (a loaded machine starts a
    # process slower), shorter after one that ran to its end (so that the next is killed)
    stretch = 1.0
    for cycle in range(200):
        err = killed / "stderr.txt"
        with open(err, "w") as stderr:
            proc = subprocess.Popen([sys.executable, "-m", "ksweep.cli.main", "run", str(spec), *args],
                                    stdout=subprocess.DEVNULL, stderr=stderr, stdin=subprocess.DEVNULL)
        try:
            proc.wait(timeout=stretch * rng.uniform(0.3, 1.2))
            ended = True  # finished before the kill came (after that, it must evaluate nothing more)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            ended = False
        assert not ended or proc.returncode == 0, err.read_text()
        assert not ran_again(), "a config whose result was stored ran again"
        now = set(stored(db)) if db.exists() else set()
        assert committed <= now, "a stored result was lost"
        if ended:
            stretch *= 0.8
        elif now == committed and len(now) < evals:
            stretch *= 1.25
        committed = now
        if kills >= wanted_kills and (ended or len(committed) == evals):
            break
    assert kills >= wanted_kills
    r = cli("run", str(spec), *args)  # the rest, uninterrupted
    assert r.returncode == 0, r.stderr
    assert not ran_again(), "a config whose result was stored ran again"
    assert set(stored(db)) == expected
    deadline = time.monotonic() + 30  # nothing a killed sweep started keeps running
    while time.monotonic() < deadline and _running_from(killed):
        time.sleep(0.1)
    assert not _running_from(killed)


def _running_from(folder: Path) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(folder) + "/.ksweep/" in line]


# -- 11. small things ---------------------------------------------------------------------

def test_leftover_build_and_run_folders_of_killed_sweeps_are_removed(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1])
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    cache, scratch = tmp_path / ".ksweep" / "cache", tmp_path / ".ksweep" / "scratch"
    leftovers = [cache / f"0123abcd.tmp-{dead.pid}-beef", scratch / str(dead.pid) / "run-x", scratch / "run-old"]
    for folder in leftovers:
        folder.mkdir(parents=True)
        (folder / "junk").write_text("x")
    assert sweep(spec)[0].evaluated == 2
    assert not any(f.exists() for f in leftovers)
    assert not (scratch / str(os.getpid())).exists()  # this run's own folder is gone too
    assert [p.name for p in cache.iterdir() if ".tmp-" in p.name or ".old-" in p.name] == []


def test_a_missing_source_is_said_before_anything_is_created(tmp_path):
    spec = toy(tmp_path, a=[1, 2], b=[1])
    (tmp_path / "toy.c").unlink()
    r = command("run", str(spec), "-q")
    assert r.returncode == 2 and "source 'toy.c' does not exist" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / ".ksweep").exists()


def test_ctrl_c_says_how_many_were_evaluated_and_how_to_resume(tmp_path):
    spec = toy(tmp_path, extra="""
        [run.env]
        TOY_SLEEP_MS = "300"
    """)
    # one stream, as a terminal shows both: the hint is the last line, below the table
    proc = subprocess.Popen([sys.executable, "-m", "ksweep.cli.main", "run", str(spec), "-j", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
    db = tmp_path / ".ksweep" / "toy.db"
    with ended_after(proc):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _evaluated(db) < 2:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        err, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130
    line = [ln for ln in err.splitlines() if "interrupted:" in ln]
    assert line and "evaluated — run the same command to resume" in line[0]
    assert "results:" in err and err.strip().splitlines()[-1] == line[0], err
    n = int(line[0].split("interrupted:")[1].split()[0])
    assert n == _evaluated(db) >= 2


def test_ctrl_c_is_tested_even_when_the_test_run_was_started_with_it_ignored():
    """A CI job started in the background (``cmd &`` in a script) has SIGINT ignored, and so
    has every process it starts: unless the tests' set-up gives Ctrl-C back, the test above
    sends SIGINT to a sweep that ignores it and runs on."""
    here = Path(__file__).resolve()
    test = f"{here.name}::test_ctrl_c_says_how_many_were_evaluated_and_how_to_resume"
    done = subprocess.run(["sh", "-c", 'trap "" INT; exec "$@"', "sh", sys.executable, "-m", "pytest", "-q",
                           "-p", "no:cacheprovider", "-p", "no:xdist", test],
                          cwd=here.parent, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


# -- 4. a wrong result never wins unseen ------------------------------------------------------

CHECKED = """#include <stdio.h>
#include <unistd.h>
#ifndef X
#define X 1
#endif
int main(void) {
    if (X == 1 && access("HANG_DEFAULT", F_OK) == 0) return 3;   /* the reference fails while the file is there */
    printf("@@RESULT ms=%d checksum=%s\\n", 10 - X, X == 3 ? "666.0" : "42.0");   /* X = 3: fastest, wrong */
    return 0;
}
"""

CHECKED_SPEC = """
[sweep]
objective = "ms"
[params]
X = {{ values = [1, 2, 3], default = {default} }}
[build]
sources = ["checked.c"]
command = ["gcc", "-O0", "{{defines}}", "-o", "{{binary}}", "checked.c"]
[run]
command = ["sh", "-c", "cd {{spec_dir}} && {{binary}}"]
timeout = 20
[check]
keys = ["checksum"]
reference = "defaults"
"""


def test_a_failed_reference_is_said_and_rerun_failed_checks_what_it_could_not(tmp_path):
    """The default (the reference) failed once: every other config was OK but unchecked, the
    wrong-checksum one ranked BEST with nothing said, and after the default was mended
    ``--rerun failed`` left it OK. Now it is said, and once the reference runs the stored
    results are judged against it (their metrics are stored: no run is needed)."""
    (tmp_path / "checked.c").write_text(CHECKED)
    spec = tmp_path / "s.toml"
    spec.write_text(textwrap.dedent(CHECKED_SPEC.format(default=1)))
    (tmp_path / "HANG_DEFAULT").write_text("")
    first = command("run", str(spec), "-q", "--no-confirm")
    assert first.returncode == 0, first.stderr
    assert "2 OK results unverified: the reference (defaults) config failed" in first.stdout
    report = command("report", str(tmp_path / ".ksweep" / "s.db"))
    assert "unverified" in report.stdout
    (tmp_path / "HANG_DEFAULT").unlink()
    again = command("run", str(spec), "-q", "--no-confirm", "--rerun", "failed")
    assert again.returncode == 0, again.stderr
    assert "1 evaluated, 2 resumed" in again.stdout  # the reference ran; the others were judged from their metrics
    rows = {r.params["X"]: r for r in Store(tmp_path / ".ksweep" / "s.db").results()}
    assert rows[3].status is Status.CHECKSUM_MISMATCH and rows[2].status is Status.OK and rows[2].verified
    assert "unverified" not in again.stdout


def test_a_new_default_makes_new_verdicts(tmp_path):
    """The reference is the default config: with another default, the stored configs are
    judged against it, not reused with the verdicts the old one gave (the resumed database
    and a fresh one gave opposite verdicts)."""
    (tmp_path / "checked.c").write_text(CHECKED)
    spec = tmp_path / "s.toml"
    spec.write_text(textwrap.dedent(CHECKED_SPEC.format(default=1)))
    assert command("run", str(spec), "-q", "--no-confirm").returncode == 0
    with Store(tmp_path / ".ksweep" / "s.db") as store:
        assert {r.params["X"]: r.status for r in store.results()}[3] is Status.CHECKSUM_MISMATCH
    spec.write_text(textwrap.dedent(CHECKED_SPEC.format(default=3)))  # the wrong one is the reference now
    second = command("run", str(spec), "-q", "--no-confirm")
    assert second.returncode == 0, second.stderr
    assert "0 evaluated, 3 resumed" in second.stdout  # judged again from the stored metrics, not run
    with Store(tmp_path / ".ksweep" / "s.db") as store:
        statuses = {r.params["X"]: r.status for r in store.results()}
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "checked.c").write_text(CHECKED)
    (fresh / "s.toml").write_text(spec.read_text())
    assert command("run", str(fresh / "s.toml"), "-q", "--no-confirm").returncode == 0
    with Store(fresh / ".ksweep" / "s.db") as store:
        assert statuses == {r.params["X"]: r.status for r in store.results()}
    assert statuses[3] is Status.OK and statuses[1] is Status.CHECKSUM_MISMATCH
    with Store(tmp_path / ".ksweep" / "s.db") as store:  # judged again in place: no new evaluation in the history
        history = store.history()
        assert len(history) == 3 and {r.params["X"]: r.status for r in history} == statuses


def test_a_reader_given_the_spec_is_told_where_its_database_is(tmp_path):
    """`ksweep history sweep.toml` (check and run take the spec, history, report and export the
    database): the line names the database a sweep of that spec writes."""
    spec = tmp_path / "sweep.toml"
    spec.write_text("[params]\nA = [1, 2]\n")
    for args in (["history"], ["report"], ["export", "--format", "header"]):
        r = command(*args, str(spec))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "a spec, not a results database" in r.stderr and str(Path(".ksweep") / "sweep.db") in r.stderr, \
            r.stderr
    assert spec.read_text() == "[params]\nA = [1, 2]\n"
