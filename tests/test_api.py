"""The front door: what `import ksweep` offers, and that it is enough to run a sweep."""

import shutil

import pytest
import subprocess
import sys
import textwrap
from pathlib import Path

import ksweep

EXPORTED = {
    # the spec
    "load_spec", "spec_from_dict", "Spec", "Param", "Derived", "Constraint", "Shape", "Variant", "Build", "Run",
    "Check", "Objective", "Harness", "Space", "make_plan",
    # the sweep and its results
    "run_sweep", "tune", "tune_kernel", "TuneResult", "SweepRun", "SweepOptions", "Summary", "Store", "Result",
    "Status", "Observer", "best_result", "Confirmation",
    # search and replay
    "make_strategy", "load_dataset",
    # errors
    "KsweepError", "SpecError", "Interrupted", "StoreInUse", "EnvironmentProblem",
}


def test_exported_members():
    assert set(ksweep.__all__) == EXPORTED
    for name in EXPORTED:
        assert getattr(ksweep, name) is not None, name


def test_importing_ksweep_loads_no_sweep_machinery():
    code = "import sys, ksweep; print(any(m.startswith(('ksweep.sweep', 'ksweep.run', 'rich')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_sweep_through_the_front_door(tmp_path):
    shutil.copy(Path(__file__).parent / "programs" / "toy.c", tmp_path)
    shutil.copy(Path(__file__).parent / "programs" / "toy.h", tmp_path)
    (tmp_path / "toy.toml").write_text(textwrap.dedent("""
        [sweep]
        name = "toy"
        [params]
        A = [6, 7, 8]
        B = [4]
        [build]
        sources = ["toy.c"]
        command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "toy.c"]
    """))
    spec = ksweep.load_spec(tmp_path / "toy.toml")
    run = ksweep.tune(spec, options=ksweep.SweepOptions(confirm=None, strategy="grid"))
    assert run.summary.evaluated == 3 and run.csv.exists()
    with ksweep.Store(run.db) as store:
        best = min((r for r in store.results() if r.value("ms") is not None), key=lambda r: r.value("ms"))
    assert best.params == {"A": 7, "B": 4} and isinstance(best, ksweep.Result)
    summary, db = ksweep.run_sweep(spec, options=ksweep.SweepOptions(confirm=None, strategy="grid"))
    assert (summary.evaluated, summary.resumed, db) == (0, 3, run.db)


def test_the_package_loads_its_names_and_subpackages_on_first_use():
    """`import ksweep` loads nothing heavy; its public names and its subpackages (ksweep.spec,
    ksweep.replay, ...) are there on first use all the same (as when the package imported them
    itself), and a name it lacks is an AttributeError."""
    import subprocess
    import sys

    probe = ("import sys, ksweep; light = 'numpy' not in sys.modules and 'ksweep.spec.model' not in sys.modules; "
             "ok = ksweep.spec.__name__ == 'ksweep.spec' and ksweep.replay.__name__ == 'ksweep.replay'; "
             "missing = not hasattr(ksweep, 'no_such_thing') and not hasattr(ksweep, '_private'); "
             "print(light, ok, missing, ksweep.Status.OK.value)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "OK"]


def test_the_python_api_refuses_what_the_cli_refuses_before_anything_is_made(tmp_path):
    """A typo in a shape, max_evals=0 or a negative time limit evaluated nothing and said
    nothing; a string max_evals or a negative seed raised numpy's or Python's own errors; an
    unknown strategy was refused only after the database existed."""
    import pytest

    from ksweep.errors import KsweepError

    for bad in ({"max_evals": 0}, {"max_evals": "3"}, {"seed": -1}, {"time_limit": -5}, {"patience": 0},
                {"time_limit": float("nan")}):
        with pytest.raises(KsweepError, match=next(iter(bad))):
            ksweep.SweepOptions(**bad)
    shutil.copy(Path(__file__).parent / "programs" / "toy.c", tmp_path)
    shutil.copy(Path(__file__).parent / "programs" / "toy.h", tmp_path)
    (tmp_path / "t.toml").write_text(textwrap.dedent("""
        [params]
        A = [1, 2]
        B = [1]
        [shapes.small]
        defines = {}
        [build]
        sources = ["toy.c"]
        command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "toy.c"]
    """))
    spec = ksweep.load_spec(tmp_path / "t.toml")
    db = tmp_path / "x.db"
    for options, said in ((ksweep.SweepOptions(strategy="grid", confirm=None, shapes=("smal",)), "did you mean small"),
                          (ksweep.SweepOptions(confirm=None, strategy="gird"), "did you mean grid"),
                          (ksweep.SweepOptions(strategy="grid", confirm=None, variants="fast"), "no such variant")):
        with pytest.raises(KsweepError, match=said):
            ksweep.tune(spec, db=db, options=options)
        assert not db.exists()


def test_best_result_is_the_confirmed_best_not_one_lucky_run(tmp_path):
    """`summary.best` and the docstring's min() over results give the fastest single run;
    `ksweep.best_result` gives what report and export show: the confirmation's BEST."""
    from ksweep.verify.confirm import Confirmation
    from ksweep.testing import FakeExecutor
    from ksweep.sweep.driver import Sweep

    shutil.copy(Path(__file__).parent / "programs" / "toy.c", tmp_path)
    (tmp_path / "t.toml").write_text('[params]\nA = [1, 2, 3]\n[build]\nsources = ["toy.c"]\n'
                                     'command = ["true", "{defines}", "-o", "{binary}", "toy.c"]\n')
    spec = ksweep.load_spec(tmp_path / "t.toml")
    def timed(job):  # A=1 lucky in the sweep (1.0), 3.0 in every confirmation run; A=2 steady at 2.0
        lucky = 1.0 if job.phase != "confirm" else 3.0
        ms = {1: lucky, 2: 2.0, 3: 5.0}[job.params["A"]]
        return ksweep.Status.OK, ksweep.Status.OK, {"ms": ms}

    with ksweep.Store(tmp_path / "t.db") as store:
        summary = Sweep(spec, store, FakeExecutor(timed), ksweep.SweepOptions(strategy="grid", confirm=Confirmation(3, 3, None))).run()
    lucky = summary.best[("base", "default", "fake")]
    assert lucky.params == {"A": 1}
    assert ksweep.best_result(tmp_path / "t.db").params == {"A": 2}
    with pytest.raises(ksweep.KsweepError, match="no shape/variant matches"):
        ksweep.best_result(tmp_path / "t.db", shape="large")
