"""The hardening of the leaders, end to end without a GPU: gcc programs swept by `ksweep run`,
their leaders run under a stand-in compute-sanitizer (tests/programs/fake_compute_sanitizer.py,
on the PATH: it reports the recorded finding of the tool a program says it has a planted
fault for), what the sweep, report, export and `ksweep harden` make of it; the determinism of
the confirmed configs' checksums; compute-sanitizer missing."""

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from conftest import PROGRAMS, ksweep_cli

from ksweep.app.sweep import best_result
from ksweep.status import Status
from ksweep.store.sqlite import Store

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")


@pytest.fixture
def fake_sanitizer(tmp_path, monkeypatch):
    """The stand-in compute-sanitizer first on the PATH; its calls logged: the log's path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "compute-sanitizer").symlink_to(PROGRAMS / "fake_compute_sanitizer.py")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    log = tmp_path / "sanitizer.log"
    monkeypatch.setenv("FAKE_SANITIZER_LOG", str(log))
    return log


CHECK = """[check]
reference = "defaults"
rtol = 1e-6"""


def spec(folder: Path, params: str, extra: str = "", check: str = CHECK) -> Path:
    shutil.copy(PROGRAMS / "harden.c", folder / "harden.c")
    path = folder / "h.toml"
    path.write_text(textwrap.dedent("""
        [sweep]
        name = "harden"
        [params]
        {params}
        [build]
        sources = ["harden.c"]
        command = ["gcc", "-O0", "{{defines}}", "-o", "{{binary}}", "harden.c"]
        [run]
        command = ["{{binary}}"]
    """).format(params=params) + check + "\n" + extra + "\n")
    return path


# X=2 is the fastest, and racecheck finds a fault in it; X=3 is next; X=4 the default
FAULTY_FASTEST = """X = [4, 3, 2]
FAULT = [0, 2]
[[constraints]]
name = "fault_in_the_fastest"
expr = "(FAULT == 2) == (X == 2)"
"""


def test_a_finding_makes_the_fastest_config_unsafe_and_never_best(tmp_path, fake_sanitizer):
    path = spec(tmp_path, FAULTY_FASTEST)
    done = ksweep_cli("run", path, "-q", "--confirm", "3,2,all", "--no-gpu-check", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    db = tmp_path / ".ksweep" / "h.db"
    with Store(db) as store:
        by_x = {r.params["X"]: r for r in store.results() if r.status is not Status.PRUNED}
    unsafe = by_x[2]
    assert unsafe.status is Status.UNSAFE
    assert unsafe.message == ("racecheck: Race reported between Write access at reduce(const float *, float *, int)"
                              "+0x2a0 in /src/reduce.cu:21")
    assert by_x[3].status is Status.OK and by_x[4].status is Status.OK
    assert best_result(db).params["X"] == 3  # the fastest is never BEST
    # each tool in a run of its own, on each of the three leaders, the program told which; a
    # gcc build names no kernels, so the tool checks them all
    calls = fake_sanitizer.read_text().split("\n")[:-1]
    assert sorted(calls) == sorted(f"{t} {t} -" for t in TOOLS for _ in range(3))
    said = [ln for ln in done.stdout.splitlines() if ln.startswith("harden:")]
    assert said == [f"harden: default/base: hardened 3 leader(s) ({', '.join(TOOLS)}): 1 UNSAFE, 2 clean; "
                    f"first finding: {unsafe.message}"]
    # the report shows it; the header ships X=3 and says what the sanitizers said of it
    report = json.loads(ksweep_cli("report", db, "--format", "json", cwd=tmp_path).stdout)
    row = next(r for r in report if r["params"] == {"X": 2, "FAULT": 2})
    assert row["status"] == "UNSAFE" and row["hardening"]["sanitizer"]["verdict"] == "unsafe"
    assert row["hardening"]["sanitizer"]["tools"]["memcheck"] == "clean"
    header = ksweep_cli("export", db, "--format", "header", cwd=tmp_path)
    assert header.returncode == 0, header.stderr
    assert "#define X 3" in header.stdout
    assert "hardened: clean (memcheck, racecheck, initcheck, synccheck)" in header.stdout
    # a resumed sweep hardens nothing again
    fake_sanitizer.unlink()
    assert ksweep_cli("run", path, "-q", "--confirm", "3,2,all", cwd=tmp_path).returncode == 0
    assert not fake_sanitizer.exists()


def test_the_done_line_counts_each_result_of_the_run_once_when_the_hardening_finds_faults(tmp_path, fake_sanitizer):
    """One config evaluated, the default measured by the confirmation alone (no check
    reference evaluates it first), both UNSAFE: the counts are of the run's results, never
    below zero (they said "-1 OK, 2 UNSAFE" for the Hopper GEMM's default), and the
    confirmation line says what barred them."""
    path = spec(tmp_path, "X = [4, 3, 2]\nFAULT = [2]", check="")
    done = ksweep_cli("run", path, "--max-evals", "1", "--strategy", "random", "--seed", "0", "--confirm", "3,2,all",
                      "--no-gpu-check", cwd=tmp_path)
    assert done.returncode == 1 and "no config succeeded" in done.stderr, done.stdout + done.stderr
    with Store(tmp_path / ".ksweep" / "h.db") as store:
        assert sorted((r.params["X"], r.status.value) for r in store.results()) == [(2, "UNSAFE"), (4, "UNSAFE")]
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("[ksweep] done:"))
    assert "1 evaluated, 0 resumed (0 OK, 1 UNSAFE)" in line, line
    assert "the 2 that passed every confirmation run may not be BEST (UNSAFE): no BEST" in done.stdout


def test_a_leaders_tools_run_at_once(tmp_path, fake_sanitizer, monkeypatch):
    """``[harden] jobs = 4``: the four tools of a leader are four processes running together
    (each stand-in run waits until four have started; run one after another, none would)."""
    started = tmp_path / "started"
    started.mkdir()
    monkeypatch.setenv("FAKE_SANITIZER_BARRIER", f"4 {started}")
    path = spec(tmp_path, "X = [4, 3]", "[harden]\njobs = 4")
    done = ksweep_cli("run", path, "-q", "--confirm", "1,1,all", "--no-gpu-check", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [ln for ln in done.stdout.splitlines() if ln.startswith("harden:")]
    assert said == [f"harden: default/base: hardened 2 leader(s) ({', '.join(TOOLS)}): 2 clean"], done.stdout
    assert sorted(fake_sanitizer.read_text().split()[::3]) == sorted(TOOLS * 2)
    bad = ksweep_cli("plan", spec(tmp_path, "X = [4, 3]", "[harden]\njobs = 0"), cwd=tmp_path)
    assert bad.returncode == 2 and "harden.jobs" in bad.stderr and "expected an integer >= 1" in bad.stderr


def test_ksweep_harden_hardens_the_leaders_at_once_as_a_sweep_does(tmp_path, fake_sanitizer, monkeypatch):
    """``ksweep harden`` on a stored sweep runs its leaders together, as the sweep's own
    hardening does (``[harden] jobs = 2``, one tool: two leaders at once). It hardened them one
    after the other: the Hopper GEMM's second leader waited for the first's initcheck, minutes."""
    path = spec(tmp_path, "X = [4, 3]", "[harden]\njobs = 2\ntools = [\"memcheck\"]")
    done = ksweep_cli("run", path, "-q", "--confirm", "2,1,all", "--no-harden", "--no-gpu-check", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not fake_sanitizer.exists()
    started = tmp_path / "started"
    started.mkdir()
    monkeypatch.setenv("FAKE_SANITIZER_BARRIER", f"2 {started}")  # each run waits for the other
    hardened = ksweep_cli("harden", tmp_path / ".ksweep" / "h.db", cwd=tmp_path)
    assert hardened.returncode == 0, hardened.stdout + hardened.stderr
    assert "hardened 2 config(s): 2 clean" in hardened.stdout, hardened.stdout
    lines = [ln for ln in hardened.stdout.splitlines() if ln.startswith("default/base X=")]
    assert [ln.split(":")[0] for ln in lines] == ["default/base X=3", "default/base X=4"], lines  # best first


def test_ksweep_harden_stores_each_batch_of_leaders_before_the_next_starts(tmp_path, fake_sanitizer, monkeypatch):
    """Hardened together, the leaders' verdicts were stored only once every leader of the
    shape had been hardened: a Ctrl-C during the last lost the verdicts of all the others
    (minutes of sanitizer runs each). With ``[harden] jobs = 1`` one leader at a time, each
    stored before the next starts."""
    from ksweep.app import harden as app_harden

    path = spec(tmp_path, "X = [4, 3]", "[harden]\njobs = 1\ntools = [\"memcheck\"]")
    done = ksweep_cli("run", path, "-q", "--confirm", "2,1,all", "--no-harden", "--no-gpu-check", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    calls = []
    real = app_harden.harden_config

    def stopped_at_the_second(*args, **kwargs):
        calls.append(args[2].params["X"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(app_harden, "harden_config", stopped_at_the_second)
    db = tmp_path / ".ksweep" / "h.db"
    said = []
    with pytest.raises(KeyboardInterrupt):
        app_harden.harden(str(db), echo=said.append)
    assert calls == [3, 4]
    assert said[0] == "default/base: hardening 2 leader(s) (memcheck), 1 at once", said  # before any ran
    assert [ln.split(":")[0] for ln in said[1:]] == ["default/base X=3"], said
    with Store(db) as store:
        kept = [h for h in store.hardenings() if h.kind == "sanitizer"]
    assert [(h.params["X"], h.verdict) for h in kept] == [(3, "clean")], kept


@pytest.mark.parametrize("given", ["0,1", "0,0,1"])
def test_the_leaders_are_hardened_on_the_hosts_gpus_in_turn(tmp_path, fake_sanitizer, monkeypatch, given):
    """Sweeping on GPUs 0 and 1, the leaders hardened at once go one to each (all went to the
    first before; and GPU 0 given twice took GPU 1's turn)."""
    gpus = tmp_path / "gpus.log"
    monkeypatch.setenv("FAKE_SANITIZER_GPU_LOG", str(gpus))
    path = spec(tmp_path, FAULTY_FASTEST, "[harden]\njobs = 2\ntools = [\"memcheck\"]")
    done = ksweep_cli("run", path, "-q", "--confirm", "3,2,all", "--no-gpu-check", "--gpus", given, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(gpus.read_text().split()) == ["0", "0", "1"]  # three leaders, two at a time


def test_no_more_sanitizer_runs_at_once_than_harden_jobs_however_many_gpus(tmp_path, fake_sanitizer, monkeypatch):
    """``[harden] jobs`` bounds the sanitizer processes of the whole host: on four GPUs with
    jobs = 2, two run at once, one leader's tool on each of two GPUs (it was a leader per GPU,
    each with its two tools: eight at once)."""
    folder, log, gpus = tmp_path / "running", tmp_path / "running.log", tmp_path / "gpus.log"
    folder.mkdir()
    monkeypatch.setenv("FAKE_SANITIZER_RUNNING", f"{folder} {log}")
    monkeypatch.setenv("FAKE_SANITIZER_GPU_LOG", str(gpus))
    path = spec(tmp_path, "X = [5, 4, 3, 2]", "[harden]\njobs = 2\ntools = [\"memcheck\", \"racecheck\"]")
    done = ksweep_cli("run", path, "-q", "--confirm", "4,1,all", "--no-gpu-check", "--gpus", "0,1,2,3",
                      cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    counts = [int(n) for n in log.read_text().split()]
    assert len(counts) == 8 and max(counts) <= 2, counts  # four leaders, two tools each
    assert sorted(gpus.read_text().split()) == ["0"] * 4 + ["1"] * 4


def test_without_compute_sanitizer_the_sweep_says_so_and_ksweep_harden_does_it_later(tmp_path, monkeypatch):
    from ksweep.run import sanitize

    from ksweep.run import environment

    real = sanitize.find
    monkeypatch.setattr(sanitize, "find", lambda given=None: None)
    monkeypatch.setattr(environment, "needs_gpu", lambda spec: True)  # the C program stands for a CUDA one
    path = spec(tmp_path, FAULTY_FASTEST, "[harden]\ntools = [\"memcheck\", \"racecheck\"]")
    done = ksweep_cli("run", path, "-q", "--confirm", "3,1,all", "--no-gpu-check", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("compute-sanitizer was not found") == 1
    assert "ksweep: warning: compute-sanitizer was not found" in done.stderr and "--no-harden" in done.stderr
    assert "harden: default/base: not hardened: no compute-sanitizer" in done.stdout
    db = tmp_path / ".ksweep" / "h.db"
    assert best_result(db).params["X"] == 2  # nothing found it unsafe
    exported = ksweep_cli("export", db, "--format", "header", cwd=tmp_path)
    assert exported.returncode == 0 and "loss 0.00%; not hardened; deterministic" in exported.stdout
    assert "note: not hardened: no config of this database ran under compute-sanitizer" in exported.stderr
    missing = ksweep_cli("harden", db, cwd=tmp_path)
    assert missing.returncode == 2 and "compute-sanitizer was not found" in missing.stderr
    # later, on a host that has it
    monkeypatch.setattr(sanitize, "find", real)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "compute-sanitizer").symlink_to(PROGRAMS / "fake_compute_sanitizer.py")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    hardened = ksweep_cli("harden", db, "--output", "reports", cwd=tmp_path)
    assert hardened.returncode == 1, hardened.stdout + hardened.stderr  # a finding
    assert "default/base X=2 FAULT=2: unsafe: racecheck: Race reported" in hardened.stdout
    assert "hardened 3 config(s): 1 unsafe, 2 clean" in hardened.stdout
    # each tool's report of each config kept where --output said, and the lines say where
    reports = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert len(reports) == 6 and all(r.startswith("default-base-") for r in reports)
    lines = hardened.stdout.splitlines()
    where = lines[lines.index(next(ln for ln in lines if "X=2 FAULT=2: unsafe" in ln)) + 1]
    assert where.startswith("  the tools' reports: ") and where.endswith("-*.txt")
    # a place the reports cannot go is said before any tool runs
    (tmp_path / "a_file").write_text("")
    refused = ksweep_cli("harden", db, "--output", "a_file/reports", cwd=tmp_path)
    assert refused.returncode == 2 and "--output a_file/reports: the tools' reports cannot be written" in refused.stderr
    race = Path(where.split(": ", 1)[1].replace("*", "racecheck"))
    race = race if race.is_absolute() else tmp_path / race
    assert "Race reported between Write access" in race.read_text()
    assert "Race reported" not in race.with_name(race.name.replace("racecheck", "memcheck")).read_text()
    assert best_result(db).params["X"] == 3


def test_a_program_built_without_cuda_is_not_hardened_and_no_warning_says_so(tmp_path, monkeypatch):
    """The CPU example: no compute-sanitizer on the host is no news for a program gcc built."""
    from ksweep.run import sanitize
    from ksweep.run.environment import needs_gpu
    from ksweep.spec.load import load_spec

    monkeypatch.setattr(sanitize, "find", lambda given=None: None)
    path = spec(tmp_path, FAULTY_FASTEST)
    done = ksweep_cli("run", path, "-q", "--confirm", "3,1,all", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "compute-sanitizer" not in done.stderr + done.stdout and "harden:" not in done.stdout
    assert not needs_gpu(load_spec(path))
    (tmp_path / "k.cu").write_text("__global__ void k(float *x) { x[0] = 1; }\n")
    cuda = path.read_text().replace('"gcc", "-O0"', '"nvcc", "-O3"').replace("harden.c", "k.cu")
    (tmp_path / "cu.toml").write_text(cuda)
    assert needs_gpu(load_spec(tmp_path / "cu.toml"))  # the mode's own rule: the runs need a GPU


def test_export_refuses_a_config_whose_hardening_did_not_finish(tmp_path, fake_sanitizer):
    """A database the sanitizers ran on: a shipped config without a clean verdict (its tool
    timed out) is refused, unless --allow-unhardened; the header says it was not hardened."""
    path = spec(tmp_path, "X = [2, 1]\nSLOW = [0, 1]\n[[constraints]]\nname = \"slow_fastest\"\n"
                          "expr = \"(SLOW == 1) == (X == 1)\"", "[harden]\ntools = [\"memcheck\"]\ntimeout = 1")
    assert ksweep_cli("run", path, "-q", "--confirm", "2,1,all", cwd=tmp_path).returncode == 0
    db = tmp_path / ".ksweep" / "h.db"
    assert best_result(db).params["X"] == 1  # not unsafe: not known to be safe either
    refused = ksweep_cli("export", db, "--format", "header", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "refused: 1 shipped config(s) were not hardened" in refused.stderr
    assert "memcheck: no summary within 1 s (timed out)" in refused.stderr and "--allow-unhardened" in refused.stderr
    allowed = ksweep_cli("export", db, "--format", "json", "--allow-unhardened", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    entry = json.loads(allowed.stdout)["entries"][0]
    assert entry["params"]["X"] == 1 and entry["hardening"].startswith("not hardened: memcheck: no summary")


DETERMINISM = """X = [2, 1]
NOISE = [0, 1]
[[constraints]]
name = "noisy_fastest"
expr = "(NOISE == 1) == (X == 1)"
"""


def test_a_checksum_that_moves_within_the_tolerance_is_nondeterministic(tmp_path):
    """The fastest config's checksum moves by 1e-9 from one process to the next: it passes the
    check (rtol 1e-6) and is flagged; --deterministic makes the deterministic config BEST."""
    path = spec(tmp_path, DETERMINISM)
    done = ksweep_cli("run", path, "-q", "--no-harden", "--confirm", "2,3,all", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / ".ksweep" / "h.db"
    assert best_result(db).params["X"] == 1  # rankable without the flag
    rows = {r["params"]["X"]: r for r in json.loads(ksweep_cli("report", db, "--format", "json").stdout)}
    assert rows[1]["nondeterministic"] is True and rows[2]["nondeterministic"] is False
    assert rows[1]["hardening"]["determinism"]["detail"].startswith("checksum 1.000000")
    table = ksweep_cli("report", db, cwd=tmp_path).stdout
    assert "nondeterministic: checksum 1.000000" in table
    assert any(ln.startswith("harden: default/base: 1 of 2 leaders nondeterministic") for ln in done.stdout.splitlines())
    again = ksweep_cli("run", path, "-q", "--no-harden", "--confirm", "2,3,all", "--deterministic", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert best_result(db).params["X"] == 2
    rows = {r["params"]["X"]: r for r in json.loads(ksweep_cli("report", db, "--format", "json").stdout)}
    assert rows[1]["confirmation"]["ineligible"] == "nondeterministic" and rows[2]["confirmation"]["mark"] == "BEST"
    assert "may not be BEST (--deterministic)" in ksweep_cli("report", db, cwd=tmp_path).stdout


def test_plan_warns_of_a_spec_without_a_check(tmp_path):
    path = spec(tmp_path, "X = [1, 2]")
    assert "warning: no [check]" not in ksweep_cli("plan", path).stdout
    path.write_text(path.read_text().replace('[check]\nreference = "defaults"\nrtol = 1e-6', ""))
    out = ksweep_cli("plan", path).stdout
    said = [ln for ln in out.splitlines() if ln.startswith("warning: no [check]")]
    assert said and said[0].startswith("warning: no [check]: a config that prints a wrong checksum ranks as a "
                                       "right one; add [check] reference = \"defaults\""), out


@pytest.mark.parametrize("scaled", [False, True])
def test_a_checksum_that_no_shape_changes_is_said(tmp_path, scaled):
    shapes = "".join(f"\n[shapes.n{n}]\ndefines = {{ N = {n}{', SCALE = %d' % n if scaled else ''} }}"
                     for n in (1, 2))
    path = spec(tmp_path, "X = [1, 2]" + shapes)
    done = ksweep_cli("run", path, "-q", "--no-harden", "--no-confirm", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = ("ksweep: warning: h.toml: the default config printed checksum=1 on every shape (n1, n2), whose inputs "
            "differ: a checksum that does not change with the inputs checks nothing; compute it from the outputs")
    assert (said in done.stderr) is not scaled, done.stderr


def test_a_confirmed_config_the_hardening_failed_is_never_best_and_the_next_one_is():
    """verify/confirm.confirmed on stored rows: a config whose runs were the fastest but whose
    result is no longer OK (UNSAFE, or wrong on the further inputs) is barred, the next is BEST;
    a nondeterministic one is barred only with deterministic=True."""
    from ksweep.job import config_id
    from ksweep.result import Hardening, Measurement, Result
    from ksweep.verify.confirm import confirmed

    one, two = config_id({"X": 1}), config_id({"X": 2})

    def rows(status_of_fast):
        results = [Result("base", "s", {"X": x}, status_of_fast if x == 1 else Status.OK, cache_key=f"k{x}",
                          metrics={"ms": float(x)}, finished=1.0) for x in (1, 2, 3)]
        runs = [Measurement("base", "s", {"X": x}, f"k{x}", r, Status.OK, value=float(x) + 0.01 * r, finished=10.0 + r)
                for r in range(3) for x in (1, 2, 3)]
        return results, runs

    for status in (Status.OK, Status.UNSAFE, Status.CHECKSUM_MISMATCH):
        results, runs = rows(status)
        conf = confirmed(results, runs, "min")[("base", "s")]
        assert conf.best == (one if status is Status.OK else two), (status, conf.best)
        if status is not Status.OK:
            assert conf.verdicts[one].ineligible == status.value
    results, runs = rows(Status.OK)
    noisy = [Hardening("base", "s", {"X": 1}, "k1", "determinism", "nondeterministic", "checksum 1.0 in one run, 1.1")]
    assert confirmed(results, runs, "min", hardening=noisy)[("base", "s")].best == one
    barred = confirmed(results, runs, "min", hardening=noisy, deterministic=True)[("base", "s")]
    assert barred.best == two and barred.nondeterministic(one).startswith("checksum 1.0")


def test_the_hardening_keeps_to_its_time_budget_and_ksweep_harden_does_the_rest(tmp_path, fake_sanitizer):
    """[harden] budget: no sanitizer run starts past it; what it leaves is stored as nothing, so
    that ksweep harden (or the next run) does it."""
    path = spec(tmp_path, FAULTY_FASTEST, "[harden]\nbudget = 0.5")
    done = ksweep_cli("run", path, "-q", "--confirm", "3,2,all", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not fake_sanitizer.exists()  # no tool ran
    said = [ln for ln in done.stdout.splitlines() if ln.startswith("harden:")]
    assert said == [f"harden: default/base: not hardened: 3 left: the hardening's time budget (0.5 s) was spent "
                    f"(ksweep harden {tmp_path / '.ksweep' / 'h.db'} does them; [harden] budget gives more)"], said
    db = tmp_path / ".ksweep" / "h.db"
    assert best_result(db).params["X"] == 2  # nothing found yet
    hardened = ksweep_cli("harden", db, cwd=tmp_path)
    assert hardened.returncode == 1 and "hardened 3 config(s): 1 unsafe, 2 clean" in hardened.stdout
    assert best_result(db).params["X"] == 3


def test_a_tool_the_budget_stopped_is_left_for_later_not_stored_as_its_verdict(tmp_path, fake_sanitizer,
                                                                                monkeypatch):
    """A sanitizer run still going when the budget ends is killed and said as the budget's
    (left for ksweep harden or the next run, "[harden] budget gives more"), not stored as
    the tool's own timeout (as the kernel-mode matmul's racecheck was, at 60 s)."""
    started = tmp_path / "started"
    started.mkdir()
    monkeypatch.setenv("FAKE_SANITIZER_BARRIER", f"99 {started}")  # each run waits: the budget ends first
    path = spec(tmp_path, FAULTY_FASTEST, "[harden]\nbudget = 3\njobs = 4")
    done = ksweep_cli("run", path, "-q", "--confirm", "3,2,all", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [ln for ln in done.stdout.splitlines() if ln.startswith("harden:")]
    assert said == [f"harden: default/base: not hardened: 3 left: the hardening's time budget (3 s) was spent "
                    f"(ksweep harden {tmp_path / '.ksweep' / 'h.db'} does them; [harden] budget gives more)"], said
    with Store(tmp_path / ".ksweep" / "h.db") as store:
        assert [h.kind for h in store.hardenings()].count("sanitizer") == 0


def test_the_budget_is_a_share_of_the_shapes_sweep_at_least_a_minute():
    from ksweep.spec.model import Harden, Spec
    from ksweep.sweep.hardening import budget_of

    assert budget_of(Spec(), 10.0) == 60.0 and budget_of(Spec(), 1000.0) == 150.0
    assert budget_of(Spec(harden=Harden(budget=5.0)), 1000.0) == 5.0
