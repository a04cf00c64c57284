"""Dead knobs, found from the builds: configs whose builds are one program (device and host
code as ``guard --check`` compares them) and whose runs are the same are measured once; a
knob that changes no program is named; a sweep in which no knob changes the program stops
after its first builds, nothing of it stored."""

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from ksweep.errors import SystematicFailure
from ksweep.job import config_id
from ksweep.spec.load import spec_from_dict
from ksweep.status import Status
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import Sweep, SweepOptions
from ksweep.sweep.programs import DeadKnobs, SameProgramGuard
from ksweep.testing import FakeExecutor
from ksweep.testing.fake_executor import Planned

from conftest import PROGRAMS, ksweep_cli


def _knobs_spec(folder: Path, params: str, log: Path) -> Path:
    shutil.copy(PROGRAMS / "knobs.c", folder / "knobs.c")
    spec = folder / "knobs.toml"
    spec.write_text(textwrap.dedent(f"""
        [sweep]
        name = "knobs"
        objective = "ms"
        [params]
        {params}
        [build]
        sources = ["knobs.c"]
        command = ["gcc", "-O0", "{{defines}}", "-o", "{{binary}}", "knobs.c"]
        [run]
        env = {{ KSWEEP_TEST_LOG = "{log}" }}
    """))
    return spec


def _runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_configs_that_build_one_program_are_run_once(tmp_path):
    """UNROLL_HINT is guarded but never used: its four values build one program per TILE.
    Eight configs, two programs: two runs, each stored for the four configs that built it,
    the others noted "same program as #id: measured once"; the knob is named."""
    log = tmp_path / "runs.log"
    spec = _knobs_spec(tmp_path, "TILE = [1, 2]\nUNROLL_HINT = [1, 2, 4, 8]", log)
    db = tmp_path / "k.db"
    out = ksweep_cli("run", spec, "--db", db, "--strategy", "grid", "-j", "2", "--no-confirm")
    assert out.returncode == 0, out.stderr
    assert _runs(log) == 2
    with Store(db) as store:
        results = store.results()
        ids = {config_id(r.params): store.result_id(r.variant, r.shape, config_id(r.params)) for r in results}
    assert len(results) == 8 and all(r.status is Status.OK for r in results)
    measured = [r for r in results if r.same_as is None]
    shared = [r for r in results if r.same_as is not None]
    assert sorted(r.params["TILE"] for r in measured) == [1, 2] and len(shared) == 6
    for r in shared:
        original = next(m for m in measured if m.params["TILE"] == r.params["TILE"])
        assert json.loads(r.same_as) == original.params and r.code == original.code
        assert r.message == f"same program as #{ids[r.same_as]}: measured once"
        assert r.metrics == original.metrics and r.run_seconds is None
    assert measured[0].code != measured[1].code
    report = json.loads(ksweep_cli("report", db, "--format", "json").stdout)
    assert sum(r["same_as"] is not None for r in report) == 6
    assert all(r["code"] and (r["same_as"] is None or r["same_as"]["TILE"] == r["params"]["TILE"]) for r in report)
    assert re.search(r"UNROLL_HINT: 0 of [4-8] builds differ \(values 1, 2(, 4)?(, 8)?\)", out.stderr), out.stderr
    assert "6 configs not run" in out.stdout and "changes no program: UNROLL_HINT" in out.stdout, out.stdout
    # a second run resumes them all; a config new to it that builds a stored program is not run either
    spec.write_text(spec.read_text().replace("UNROLL_HINT = [1, 2, 4, 8]", "UNROLL_HINT = [1, 2, 4, 8, 16]"))
    again = ksweep_cli("run", spec, "--db", db, "--strategy", "grid", "-j", "2", "--no-confirm")
    assert again.returncode == 0, again.stderr
    assert _runs(log) == 2
    with Store(db) as store:
        new = [r for r in store.results() if r.params["UNROLL_HINT"] == 16]
    assert len(new) == 2 and all(r.same_as is not None and "measured once" in r.message for r in new)


def test_the_reference_config_is_run_on_its_own(tmp_path):
    """The configs checked against the reference are judged against its run, never given its
    verdict as the reference: it shares its run with none of them."""
    log = tmp_path / "runs.log"
    spec = _knobs_spec(tmp_path, "TILE = [1, 2]\nUNROLL_HINT = [1, 2, 4, 8]", log)
    spec.write_text(spec.read_text() + '[check]\nkeys = ["checksum"]\nreference = "defaults"\n')
    out = ksweep_cli("run", spec, "--db", tmp_path / "k.db", "--strategy", "grid", "-j", "2", "--no-confirm")
    assert out.returncode == 0, out.stderr
    assert _runs(log) == 3  # the reference (TILE=1 UNROLL_HINT=1), then one run per program
    with Store(tmp_path / "k.db") as store:
        results = store.results()
    reference = config_id({"TILE": 1, "UNROLL_HINT": 1})
    assert all(r.verified for r in results if config_id(r.params) != reference)
    assert [r for r in results if r.same_as == reference] == [] and sum(r.same_as is not None for r in results) == 5


def test_one_program_is_one_leader_of_the_confirmation(tmp_path):
    log = tmp_path / "runs.log"
    spec = _knobs_spec(tmp_path, "TILE = [1, 2]\nUNROLL_HINT = [1, 2, 4, 8]", log)
    db = tmp_path / "k.db"
    out = ksweep_cli("run", spec, "--db", db, "--strategy", "grid", "-j", "2", "--confirm", "8,2,all")
    assert out.returncode == 0, out.stderr
    with Store(db) as store:
        measured = {json.dumps(r.params, sort_keys=True) for r in store.results() if r.same_as is None}
        confirmed = {json.dumps(m.params, sort_keys=True) for m in store.measurements()}
    # the two programs (and the default config), never two configs of one program
    assert measured <= confirmed and len(confirmed) <= 3


def test_a_sweep_whose_only_knob_is_dead_stops_and_stores_nothing(tmp_path):
    log = tmp_path / "runs.log"
    spec = _knobs_spec(tmp_path, "TILE = [2]\nUNROLL_HINT = [1, 2, 4, 8, 16, 32]", log)
    db = tmp_path / "k.db"
    out = ksweep_cli("run", spec, "--db", db, "--strategy", "grid", "-j", "1", "-q")
    assert out.returncode == 2
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("ksweep: error")]
    assert len(errors) == 1 and "no parameter changes the program: the first 4 builds" in errors[0]
    assert "UNROLL_HINT each built with two values or more" in errors[0]
    assert _runs(log) <= 1
    with Store(db) as store:
        assert [r for r in store.results() if r.status is not Status.PRUNED] == []
    assert len(list((tmp_path / "cache").iterdir())) <= 8  # the builds it made


# -- the driver, with a fake executor: the programs planned -----------------------------------

def _spec(params: dict):
    return spec_from_dict({"sweep": {"name": "t", "objective": "ms"}, "params": params,
                           "build": {"sources": [], "command": ["cc", "{defines}", "-o", "{binary}"]}})


def _sweep(tmp_path, spec, fake, **options):
    with Store(tmp_path / "t.db") as store:
        summary = Sweep(spec, store, fake, SweepOptions(strategy="grid", confirm=None, **options)).run()
        return summary, store.results()


@pytest.mark.parametrize("build_jobs", [1, 16])
def test_a_build_that_varies_the_knobs_the_first_configs_do_not_decides_early(tmp_path, build_jobs):
    """In grid order the first configs differ in the last knob only: a build of a config
    that varies OUTER is made ahead of the queued ones, and the sweep stops within its first
    8 builds, nothing stored; with 16 build jobs too (33 configs asked ahead: the builds
    beyond the first ones wait for the verdict)."""
    spec = _spec({"OUTER": [1, 2, 3], "INNER": list(range(1, 11))})
    fake = FakeExecutor(lambda job: Planned(run=Status.OK, metrics={"ms": 1.0}, code="one"), build_jobs=build_jobs)
    with pytest.raises(SystematicFailure, match="no parameter changes the program") as stopped:
        _sweep(tmp_path, spec, fake)
    assert "OUTER, INNER each built" in str(stopped.value)
    assert len(fake.builds) <= 8 and any(j.phase == "probe" for j in fake.builds)
    assert len(fake.runs) <= 1
    with Store(tmp_path / "t.db") as store:
        assert store.results() == []


def test_a_knob_that_changes_the_program_keeps_the_sweep_going(tmp_path):
    """INNER is dead, OUTER is not: one run per OUTER value, every config stored (and built:
    the builds kept back while the first ones are judged start once they are)."""
    spec = _spec({"OUTER": [1, 2, 3], "INNER": list(range(1, 11))})
    fake = FakeExecutor(lambda job: Planned(run=Status.OK, metrics={"ms": float(job.params["OUTER"])},
                                            code=f"p{job.params['OUTER']}"), completion="shuffled", build_jobs=8)
    summary, results = _sweep(tmp_path, spec, fake)
    assert len(results) == 30 and len(fake.runs) == 3 and summary.shared == 27
    assert len({j.config_id for j in fake.builds if j.phase != "probe"}) == 30
    assert {r.params["OUTER"]: r.metrics["ms"] for r in results} == {1: 1.0, 2: 2.0, 3: 3.0}
    assert [k.name for _, _, k in summary.dead_knobs] == ["INNER"]


def test_builds_without_a_digest_are_each_run(tmp_path):
    spec = _spec({"A": [1, 2, 3]})
    fake = FakeExecutor(lambda job: Planned(run=Status.OK, metrics={"ms": 1.0}))
    summary, results = _sweep(tmp_path, spec, fake)
    assert len(fake.runs) == 3 and summary.shared == 0 and all(r.same_as is None for r in results)


def test_a_failed_run_is_shared_too(tmp_path):
    """One program, one run command: a crash is the program's, whichever config built it."""
    spec = _spec({"A": [1, 2], "B": [1, 2, 3]})
    fake = FakeExecutor(lambda job: Planned(run=Status.CRASH if job.params["A"] == 2 else Status.OK,
                                            metrics={"ms": 1.0}, code=f"p{job.params['A']}"))
    summary, results = _sweep(tmp_path, spec, fake)
    crashed = [r for r in results if r.params["A"] == 2]
    assert len(fake.runs) == 2 and all(r.status is Status.CRASH for r in crashed)
    assert sum("measured once" in r.message for r in crashed) == 2


# -- the rules, pure ---------------------------------------------------------------------------

def test_dead_knobs_are_named_from_twins_that_made_one_program():
    knobs = DeadKnobs(["T", "U"], least=4)
    named = []
    for t in (1, 2):
        for u in (1, 2, 4):
            named += knobs.see({"T": t, "U": u}, f"p{t}")
    # U's twins: T=1 with three values of U, then T=2 with two: five builds over U = 1, 2, 4
    assert [(k.name, k.builds, k.values) for k in named] == [("U", 5, (1, 2, 4))]
    assert knobs.live == {"T"} and set(knobs.dead) == {"U"}
    assert knobs.dead["U"].line.startswith("U: 0 of ")


def test_a_knob_is_not_named_from_builds_that_differ_in_another_knob_too():
    """Configs that differ in two knobs and built two programs say nothing of either."""
    knobs = DeadKnobs(["T", "U"], least=2)
    assert knobs.see({"T": 1, "U": 1}, "a") == [] and knobs.see({"T": 2, "U": 2}, "b") == []
    assert knobs.live == set() and knobs.dead == {}


def test_the_guard_needs_every_knob_varied():
    guard = SameProgramGuard({"A": [1, 2], "B": [1, 2, 3], "C": [7]}, size=6, least=4)
    assert guard.see({"A": 1, "B": 1, "C": 7}, "p") == "hold"
    assert guard.see({"A": 1, "B": 2, "C": 7}, "p") == "hold"
    assert guard.unvaried() == ["A"] and guard.unvaried([{"A": 2}]) == []
    assert guard.see({"A": 1, "B": 3, "C": 7}, "p") == "hold"  # A not varied yet: no verdict
    assert guard.see({"A": 2, "B": 1, "C": 7}, "p") == "stop"
    other = SameProgramGuard({"A": [1, 2]}, size=2)
    assert other.see({"A": 1}, "p") == "hold" and other.see({"A": 2}, "q") == "store" and not other.open
    failed = SameProgramGuard({"A": [1, 2]}, size=2)
    assert failed.see({"A": 1}, None) == "store"
    undecided = SameProgramGuard({"A": [1, 2], "B": list(range(20))}, size=40, most=3)
    assert [undecided.see({"A": 1, "B": b}, "p") for b in range(3)] == ["hold", "hold", "store"]
    assert not SameProgramGuard({"A": [1]}, size=1).open


def test_a_schema_6_database_gains_the_code_columns_and_is_read_as_it_is_read_only(tmp_path, capsys, monkeypatch):
    import os
    import sqlite3

    from ksweep.result import Result
    from ksweep.store.sqlite import SCHEMA_VERSION

    path = tmp_path / "six.db"
    with Store(path) as store:
        store.put(Result("v", "s", {"A": 1}, Status.OK, metrics={"ms": 1.0}))
    db = sqlite3.connect(str(path))  # as schema 6 wrote it: the history, no code nor same_as
    for table in ("results", "history"):
        db.execute(f"ALTER TABLE {table} DROP COLUMN code")
        db.execute(f"ALTER TABLE {table} DROP COLUMN same_as")
    db.execute("UPDATE meta SET value = '\"6\"' WHERE key = 'schema'")
    db.commit()
    db.close()
    with monkeypatch.context() as m:  # a reader that may not write it (root may write any file: asked so)
        m.setattr(os, "access", lambda p, mode, *a, **k: not mode & os.W_OK)
        with Store(path, create=False) as store:  # reads it as it is
            assert store.read_only
            assert [(r.params, r.code, r.same_as) for r in store.results()] == [({"A": 1}, None, None)]
            assert len(store.history()) == 1 and store.get_meta("schema") == "6"
    with Store(path) as store:
        assert store.get_meta("schema") == SCHEMA_VERSION == "7"
        assert "migrated from schema 6 to 7" in store.migrated
        store.put(Result("v", "s", {"A": 2}, Status.OK, metrics={"ms": 1.0}, code="c", same_as='{"A":1}'))
        assert [(r.code, r.same_as) for r in store.results()] == [(None, None), ("c", '{"A":1}')]
        assert [(h.code, h.same_as) for h in store.history()] == [(None, None), ("c", '{"A":1}')]
    assert "ksweep: " in capsys.readouterr().err


def test_the_code_digest_leaves_out_what_names_the_build(tmp_path):
    """Built with -g in two folders (debug information names each), with an unused -D: one
    digest; a value the code uses: another."""
    import subprocess

    from ksweep.elf.code import code_digest

    (tmp_path / "k.c").write_text("int f(int x) { return x * K; }\n")
    digests = []
    for i, flags in enumerate([["-DK=3", "-DUNUSED=1"], ["-DK=3", "-DUNUSED=2"], ["-DK=4", "-DUNUSED=1"]]):
        folder = tmp_path / f"b{i}"
        folder.mkdir()
        subprocess.run(["gcc", "-g", "-O1", "-c", *flags, "-o", "k.o", str(tmp_path / "k.c")], cwd=folder, check=True)
        digests.append(code_digest((folder / "k.o").read_bytes()))
    assert (tmp_path / "b0" / "k.o").read_bytes() != (tmp_path / "b1" / "k.o").read_bytes()
    assert digests[0] == digests[1] != digests[2]
    assert code_digest(b"not ELF") != code_digest(b"not ELF either")
