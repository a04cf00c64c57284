"""End to end: small C programs built by gcc that hang, crash, lie and flood."""

import csv
import io
import json
import signal
import subprocess
import sys
import time

import pytest

from ksweep import Status, load_spec
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import SweepOptions
from ksweep.app.sweep import run_sweep

from conftest import GCC_BUILD, ended_after, ksweep_cli

ALL_MODES = f"""
[sweep]
objective = "ms"
[params]
MODE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
X = [3]
{GCC_BUILD}
[run]
timeout = 3
[check]
expected = {{ checksum = 1.0 }}
"""

EXPECTED = {
    0: Status.OK, 1: Status.HANG, 2: Status.CRASH, 3: Status.CRASH, 4: Status.RUN_ERROR,
    5: Status.CUDA_ERROR, 6: Status.NO_RESULT, 7: Status.CHECKSUM_MISMATCH, 8: Status.OK,
    9: Status.COMPILE_ERROR,
}


def sweep(spec_path, **options):
    spec = load_spec(spec_path)
    summary, db = run_sweep(spec, options=SweepOptions(strategy="grid", **options), jobs=2)
    with Store(db) as store:
        return summary, {r.params["MODE"] if "MODE" in r.params else None: r for r in store.results()}, db


@pytest.mark.slow
def test_every_status(every_status):
    summary, results, db, _ = every_status  # swept once for the session (tests/conftest.py)
    got = {mode: r.status for mode, r in results.items()}
    assert got == EXPECTED
    assert "SIGSEGV" in results[2].message and "SIGABRT" in results[3].message
    assert "illegal memory access" in results[5].message
    assert "bad input" in results[4].message and "exit code 3" in results[4].message
    assert "intentional compile error" in results[9].message
    assert "checksum = 2.5" in results[7].message
    assert results[8].metrics["ms"] == 3.0  # the result line after 200 MB of output is still found
    assert results[0].metrics == {"ms": 3.0, "gflops": pytest.approx(100 / 3, rel=1e-4), "checksum": 1.0}
    assert summary.counts == {s.value: list(EXPECTED.values()).count(s) for s in set(EXPECTED.values())}
    # when each run began is stored (the wall clock); a config that never ran has none
    for mode, r in results.items():
        if r.status is Status.COMPILE_ERROR:
            assert r.started is None and r.run_seconds is None
        else:
            assert r.started is not None and r.started <= r.finished, mode
            assert r.finished - r.started >= r.run_seconds * 0.99, mode
    # and reported: the CSV beside the database and the JSON report carry it
    from ksweep.report.records import to_csv, to_records

    with Store(db) as store:
        stored = store.results()
    rows = list(csv.DictReader(io.StringIO(to_csv(stored))))
    assert {row["started"] for row in rows if row["status"] == "COMPILE_ERROR"} == {""}
    assert all(float(row["started"]) <= float(row["finished"]) for row in rows if row["status"] != "COMPILE_ERROR")
    assert [rec["started"] for rec in to_records(stored)] == [r.started for r in stored]


@pytest.mark.slow
def test_hang_kills_the_whole_process_group(every_status):
    *_, folder = every_status  # its MODE=1 hangs, with a child it forked; the sweep has ended

    def running() -> bool:
        return str(folder) in subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout

    deadline = time.monotonic() + 10  # the kills were sent; a process that survived them runs on
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running()  # neither the program nor the child it forked survive


def test_second_run_resumes_and_builds_nothing(program_dir):
    spec = program_dir(ALL_MODES.replace("MODE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "MODE = [0, 7, 9]"))
    first, results, db = sweep(spec)
    assert first.evaluated == 3
    cache = program_dir.dir / ".ksweep" / "cache"
    entries = sorted(p.name for p in cache.iterdir())
    second, again, _ = sweep(spec)
    assert second.evaluated == 0 and second.resumed == 3
    assert sorted(p.name for p in cache.iterdir()) == entries
    assert {m: r.status for m, r in again.items()} == {m: r.status for m, r in results.items()}


def test_build_cache_hits_and_a_changed_source_rebuilds(program_dir, tmp_path):
    spec = program_dir(ALL_MODES.replace("MODE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "MODE = [0]"))
    sweep(spec)
    cache = program_dir.dir / ".ksweep" / "cache"
    before = {p.name for p in cache.iterdir()}
    # a fresh database: everything runs again, but nothing is compiled again
    spec2 = program_dir(spec.read_text(), name="copy.toml")
    _, results, _ = sweep(spec2)
    assert results[0].cached and {p.name for p in cache.iterdir()} == before
    # change the source: new key, rebuilt, and the old result is invalidated (run again)
    src = program_dir.dir / "behaviours.c"
    src.write_text(src.read_text() + "\n/* changed */\n")
    summary, results, _ = sweep(spec)
    assert summary.evaluated == 1 and summary.resumed == 0
    assert not results[0].cached and len({p.name for p in cache.iterdir()} - before) == 1


def test_reference_defaults(program_dir):
    spec = program_dir(f"""
    [params]
    MODE = {{ values = [0, 7, 4], default = 0 }}
    X = [1, 2]
    {GCC_BUILD}
    [check]
    keys = ["checksum"]
    reference = "defaults"
    """)
    _, _, db = sweep(spec)
    with Store(db) as store:
        rows = store.results()
    status = {(r.params["MODE"], r.params["X"]): r.status for r in rows}
    assert status == {(0, 1): Status.OK, (0, 2): Status.OK, (7, 1): Status.CHECKSUM_MISMATCH,
                      (7, 2): Status.CHECKSUM_MISMATCH, (4, 1): Status.RUN_ERROR, (4, 2): Status.RUN_ERROR}
    assert rows[0].params == {"MODE": 0, "X": 1} and rows[0].phase == "reference"


def test_a_check_key_the_defaults_config_does_not_print_stops_the_sweep_at_once(program_dir):
    """[check] keys naming a metric nobody prints (a typo, or the default 'checksum' of a
    program that prints none): the defaults config's run says so and the sweep stops there,
    instead of spending its budget on configs that can all only mismatch."""
    from ksweep.errors import SpecError

    spec = program_dir(f"""
    [params]
    MODE = {{ values = [0, 7], default = 0 }}
    X = [1, 2, 3]
    {GCC_BUILD}
    [check]
    keys = ["checksun"]
    reference = "defaults"
    """)
    with pytest.raises(SpecError, match=r"check.keys: the defaults config printed no checksun to compare the "
                                        r"others with \(it printed .*checksum.*\): name printed metrics"):
        sweep(spec)


def test_pruned_configs_are_stored_with_reasons(program_dir):
    spec = program_dir(f"""
    [params]
    MODE = [0]
    X = [1, 2, 3, 4]
    [[constraints]]
    name = "small"
    expr = "X * 2 <= 4"
    reason = "X={{X}} too big"
    {GCC_BUILD}
    """)
    _, _, db = sweep(spec)
    with Store(db) as store:
        rows = {r.params["X"]: r for r in store.results()}
    assert rows[1].status is Status.OK and rows[2].status is Status.OK
    assert rows[3].status is Status.PRUNED and rows[3].message == "small: X=3 too big"


def run_cli(*args, check: bool = False):
    """``ksweep ARGS`` in this process (tests/conftest.py); the tests of the process itself
    (kill -9, Ctrl-C) start one."""
    r = ksweep_cli(*args)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_report_formats(program_dir):
    spec = program_dir(ALL_MODES.replace("MODE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "MODE = [0, 5, 7]"))
    r = run_cli("run", str(spec), "--strategy", "grid", "--quiet")
    assert r.returncode == 0, r.stderr
    db = program_dir.dir / ".ksweep" / "sweep.db"
    assert (program_dir.dir / ".ksweep" / "sweep.csv").exists()
    table = run_cli("report", str(db)).stdout
    lines = [ln for ln in table.splitlines() if ln.strip()]
    header = next(ln for ln in lines if "STATUS" in ln)
    for col in ("MODE", "X", "REGS", "SPILL", "SMEM_KB", "MS", "CHECKSUM", "STATUS"):
        assert col in header
    assert "BEST" in table and "CUDA_ERROR" in table and "CHECKSUM_MISMATCH" in table
    records = json.loads(run_cli("report", str(db), "--format", "json").stdout)
    assert {"variant", "shape", "params", "derived", "status", "message", "metrics", "regs", "spills", "smem"} <= set(records[0])
    assert sorted(r["status"] for r in records) == ["CHECKSUM_MISMATCH", "CUDA_ERROR", "OK"]
    csv = run_cli("report", str(db), "--format", "csv").stdout.splitlines()
    assert csv[0].startswith("variant,shape,phase,MODE,X") and "metric.ms" in csv[0] and len(csv) == 4


def test_heatmap(program_dir, tmp_path):
    pytest.importorskip("matplotlib")
    spec = program_dir(ALL_MODES.replace("MODE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "MODE = [0, 7]").replace("X = [3]", "X = [1, 2, 3]"))
    run_cli("run", str(spec), "--strategy", "grid", "--quiet", check=True)
    out = tmp_path / "h.png"
    r = run_cli("plot", "heatmap", str(program_dir.dir / ".ksweep" / "sweep.db"), "--x", "MODE", "--y", "X", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# the first four runs to start (each takes a token: mkdir is atomic) go on; every later one
# waits for the file GATE: the sweep is mid-run, whatever the machine's load and the order
# the builds finish in, when the test kills it after 4 results (no sleep races the sweep,
# and the wait is no HANG however long the first four take)
SLOW = f"""
[params]
MODE = [10]
X = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
{GCC_BUILD.replace('"{{defines}}"', '"{{defines}}", "-DSLEEP_MS=100"')}
[run]
command = ["sh", "-c", "for k in 1 2 3 4; do mkdir GATE.$k 2>/dev/null && exec {{binary}}; done; while [ ! -e GATE ]; do sleep 0.02; done; exec {{binary}}"]
timeout = 600
env = {{ KSWEEP_TEST_LOG = "LOGFILE" }}
"""


def _alive_from(folder) -> bool:
    """Whether a process (not a zombie) runs a program from ``folder``."""
    out = subprocess.run(["ps", "-ww", "-eo", "stat,args"], capture_output=True, text=True).stdout
    return any(not line.lstrip().startswith("Z") and str(folder) in line for line in out.splitlines()[1:])


def test_resume_after_sigkill_runs_no_config_twice(program_dir):
    log = program_dir.dir / "executions.log"
    gate = program_dir.dir / "gate"
    spec = program_dir(SLOW.replace("LOGFILE", str(log)).replace("GATE", str(gate)))
    proc = subprocess.Popen([sys.executable, "-m", "ksweep.cli.main", "run", str(spec), "--strategy", "grid", "-q",
                             "--no-confirm"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = program_dir.dir / ".ksweep" / "sweep.db"

    def stored() -> int:
        if not db.exists():
            return 0
        try:
            with Store(db) as store:
                return store.count()
        except Exception:  # noqa: BLE001 - the database may be mid-creation
            return 0

    deadline = time.time() + 60
    while time.time() < deadline and stored() < 4:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)  # the fifth run waits for the gate: the sweep is mid-run
    proc.wait()
    deadline = time.time() + 60  # the program it was running dies with it (before the log is moved)
    while time.time() < deadline and _alive_from(program_dir.dir):
        time.sleep(0.02)
    with Store(db) as store:  # readable after kill -9
        finished = {f"MODE=10 X={r.params['X']}" for r in store.results()}
    assert len(finished) == 4
    first_runs = log.read_text().splitlines()
    log.rename(program_dir.dir / "first.log")
    assert finished <= set(first_runs)
    gate.touch()
    r = run_cli("run", str(spec), "--strategy", "grid", "-q", "--no-confirm")
    assert r.returncode == 0, r.stderr
    second_runs = log.read_text().splitlines()
    # nothing that finished before the kill runs again; each remaining config runs once
    assert not finished & set(second_runs)
    assert len(second_runs) == len(set(second_runs))
    assert finished | set(second_runs) == {f"MODE=10 X={x}" for x in range(1, 13)}
    with Store(db) as store:
        assert {r.params["X"] for r in store.results() if r.status is Status.OK} == set(range(1, 13))


def test_ctrl_c_stops_fast_kills_children_keeps_results(program_dir):
    spec = program_dir(f"""
    [params]
    MODE = [0, 1]
    X = [1, 2, 3, 4]
    {GCC_BUILD}
    [run]
    timeout = 60
    """)
    proc = subprocess.Popen([sys.executable, "-m", "ksweep.cli.main", "run", str(spec), "--strategy", "grid", "-q", "-j", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with ended_after(proc):
        db = program_dir.dir / ".ksweep" / "sweep.db"
        deadline = time.time() + 60
        hung, seen = False, set()
        while time.time() < deadline and not hung:  # wait until a hanging program is running
            out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
            # a program run from the build cache (a build's output path has '.tmp-' in it), seen in two
            # polls in a row: the MODE=0 programs live for milliseconds, the hang does not end
            running = {ln.split(None, 1)[0] for ln in out.splitlines()
                       if ln.split(None, 1)[-1].startswith(str(program_dir.dir)) and ln.rstrip().endswith("/prog")}
            hung = bool(running & seen)
            seen = running
            time.sleep(0.1)
        assert hung
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)  # bounds a hang; the latency itself is in bench/bad_input.py
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "run the same command to resume" in err, err
    time.sleep(0.2)
    out = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(program_dir.dir) not in out
    with Store(db) as store:
        kept = store.results()
    # one build at a time, in grid order: the four MODE=0 configs finish before the first hang;
    # they are kept, and the interrupted hang is not recorded as anything
    assert len(kept) == 4 and all(r.status is Status.OK and r.params["MODE"] == 0 for r in kept)


def test_a_compilers_temporary_files_are_removed_with_its_build(program_dir, tmp_path, monkeypatch):
    """A compiler killed at a timeout or a Ctrl-C leaves its temporary files (gcc's cc*.s and
    .o, nvcc's tmpxft files) where TMPDIR points: each build gets a folder of its own for
    them, removed when the build ends however it ends. The wrapper here leaves one file
    behind on every build, as a killed compiler does."""
    outside = tmp_path / "tmp"
    outside.mkdir()
    monkeypatch.setenv("TMPDIR", str(outside))
    (program_dir.dir / "cc.sh").write_text('touch "$TMPDIR/left-behind.$$"\necho "TMPDIR=$TMPDIR"\nexec gcc "$@"\n')
    spec = program_dir(ALL_MODES.replace("MODE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "MODE = [0, 9]")
                       .replace('command = ["gcc", ', 'command = ["sh", "{spec_dir}/cc.sh", '))
    _, results, _ = sweep(spec)
    assert results[0].status is Status.OK and results[9].status is Status.COMPILE_ERROR
    assert not list(outside.iterdir())
    assert not list(program_dir.dir.rglob("left-behind.*"))
    logs = "\n".join(p.read_text() for p in (program_dir.dir / ".ksweep" / "cache").rglob("*.json"))
    assert "TMPDIR=" in logs and str(outside) not in logs  # the wrapper ran, with a TMPDIR of ksweep's


def test_a_build_killed_by_ctrl_c_is_not_cached_as_a_failure(program_dir, tmp_path):
    """kill_all (Ctrl-C, SIGTERM) killed the compilers in flight, and each came back as an
    ordinary failed build: cached, so the next run judged those configs COMPILE_ERROR (or,
    with several, stopped: "the first 4 configs all failed to compile with the same error")
    even with --rerun all, until the cache was deleted by hand."""
    import threading

    from ksweep.build.builder import Builder
    from ksweep.build.cache import BuildCache
    from ksweep.process import ProcessRegistry
    from ksweep.status import Stopped
    from ksweep.sweep.local import build_rules
    from ksweep.sweep.jobs import JobFactory
    from ksweep.run.modes import program_mode
    from ksweep.space.space import Space

    started = tmp_path / "started"
    (program_dir.dir / "cc.sh").write_text(f'touch "{started}"\nexec sleep 300\n')
    spec = load_spec(program_dir(ALL_MODES.replace("MODE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "MODE = [0]")
                                 .replace('command = ["gcc", ', 'command = ["sh", "{spec_dir}/cc.sh", ')))
    shape, variant = spec.shape_list()[0], spec.variant_list()[0]
    space = Space.from_spec(spec, shape.name, variant.name)
    job = JobFactory(spec, shape, variant, space, program_mode(spec)).make(space[0])
    cache = BuildCache(tmp_path / "cache")
    builder, registry = Builder(cache, build_rules(spec)), ProcessRegistry()

    def ctrl_c():
        while not started.exists():  # the compiler runs: no timing, it waits for the file
            time.sleep(0.01)
        registry.kill_all()

    killer = threading.Thread(target=ctrl_c)
    killer.start()
    result = builder.build(job, registry)
    killer.join()
    assert isinstance(result, Stopped), result
    assert cache.lookup(job.build_cache_key) is None
