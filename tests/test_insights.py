"""ksweep insights on small stores filled directly (no compiling, but for the one end-of-run
sweep): failures turned into constraints that plan then honours, knob importance, the
winner's risk from the confirmation runs, a recorded dataset read as a database is; and
the headline a sweep ends with."""

import gzip
import json
import math
import textwrap

import numpy as np
import pytest

from ksweep.app.insights import constraints, headlines, insights
from ksweep.cli.main import main
from ksweep.insights.rules import evaluate
from ksweep.result import Measurement, Result
from ksweep.space.space import Space
from ksweep.spec.load import load_spec
from ksweep.spec.model import Objective
from ksweep.status import Status
from ksweep.store.sqlite import Store

VALUES = (1, 2, 4, 8)
SPEC = """
[sweep]
name = "toy"
objective = "ms"
[params]
A = [1, 2, 4, 8]
B = [1, 2, 4, 8]
C = [0, 1]
[build]
sources = ["toy.c"]
command = ["gcc", "{defines}", "-o", "{binary}", "toy.c"]
"""


def outcome(A: int, B: int, C: int) -> tuple[Status, dict]:
    """The toy program: no compile when A*B > 8, a wrong checksum when C == 1 and A == 1,
    else a time driven by A (B a little, C not at all)."""
    if A * B > 8:
        return Status.COMPILE_ERROR, {}
    if C == 1 and A == 1:
        return Status.CHECKSUM_MISMATCH, {"ms": 0.5, "checksum": 7.0}
    return Status.OK, {"ms": A * (1 + 0.1 * math.log2(B)), "checksum": 1.0}


def configs():
    return [{"A": a, "B": b, "C": c} for a in VALUES for b in VALUES for c in (0, 1)]


@pytest.fixture
def toy(tmp_path):
    """A spec and the database of its whole space, filled directly."""
    (tmp_path / "toy.c").write_text("int main(void) { return A + B + C; }\n")
    spec = tmp_path / "toy.toml"
    spec.write_text(SPEC)
    db = tmp_path / "toy.db"
    with Store(db) as store:
        store.set_objectives([Objective("ms", "min")])
        store.set_meta("spec_name", "toy")
        store.set_meta("spec", str(spec))
        store.set_meta("params:base:default", ["A", "B", "C"])
        rows = []
        for i, p in enumerate(configs()):
            status, metrics = outcome(**p)
            rows.append(Result("base", "default", p, status, metrics=metrics, gpu_name="none", cache_key=f"k{i}",
                               finished=1000.0 + i, build_argv=("gcc", "toy.c")))
        store.put_many(rows)
    return spec, db


def ok_configs() -> set:
    return {tuple(p.values()) for p in configs() if outcome(**p)[0] is Status.OK}


# -- failures turned into constraints -------------------------------------------------------------
def test_each_failure_gets_its_rule_exact_on_the_evaluated_configs(toy):
    _, db = toy
    (found,) = insights(str(db)).found
    rules = {r.status: r for r in found.rules}
    assert set(rules) == {"COMPILE_ERROR", "CHECKSUM_MISMATCH"}
    compile_error, checksum = rules["COMPILE_ERROR"], rules["CHECKSUM_MISMATCH"]
    assert [t.text for t in compile_error.terms] == ["A * B > 8"]
    assert (compile_error.failed, compile_error.explained, compile_error.ok, compile_error.exact) == (12, 12, 0, True)
    (term,) = checksum.terms
    assert sorted(term.text.split(" and ")) == ["A == 1", "C == 1"]
    assert (checksum.failed, checksum.explained, term.matched, term.ok) == (4, 4, 4, 0)
    # the text is the spec's: its evaluator says which configs it covers
    assert evaluate(found.table, term.text).sum() == 4


def test_the_suggested_constraints_appended_make_plan_keep_exactly_the_ok_configs(toy, capsys):
    spec, db = toy
    assert main(["insights", str(db), "--constraints"]) == 0
    blocks = capsys.readouterr().out
    assert 'expr = "A * B <= 8"' in blocks
    assert 'reason = "COMPILE_ERROR in 12 of 12 configs with A * B > 8; no OK config pruned"' in blocks
    assert blocks.count("[[constraints]]") == 2 and "shapes" not in blocks  # one shape × variant: no restriction
    spec.write_text(spec.read_text() + "\n" + blocks)
    space = Space.from_spec(load_spec(spec))
    assert {(c["A"], c["B"], c["C"]) for c in space} == ok_configs()
    assert main(["plan", str(spec), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert (plan["total"], plan["valid"]) == (32, 16)
    assert set(plan["pruned"]) == {"insight_compile_error_1", "insight_checksum_mismatch_1"}


def test_a_constraint_found_on_some_shapes_names_them(toy):
    _, db = toy
    with Store(db) as store:  # a second shape on which nothing fails
        store.put_many([Result("base", "big", p, Status.OK, metrics={"ms": 1.0 + p["A"]}, gpu_name="none",
                               cache_key=f"big{i}") for i, p in enumerate(configs())])
    blocks = constraints(insights(str(db)))
    exprs = {b["expr"] for b in blocks}
    assert len(blocks) == 2 and "A * B <= 8" in exprs
    assert all(b["shapes"] == ["default"] and "variants" not in b for b in blocks)


def test_pruned_configs_are_no_failures(toy):
    _, db = toy
    with Store(db) as store:  # configs a known constraint rejected: never built, never a failure
        store.put_many([Result("base", "default", {"A": 16, "B": b, "C": 0}, Status.PRUNED, "A <= 8")
                        for b in VALUES])
    (found,) = insights(str(db)).found
    assert len(found.table) == 32 and "PRUNED" not in found.table.failures()


# -- knob importance --------------------------------------------------------------------------------
def test_importance_ranks_the_knob_that_drives_the_time_first_and_a_dead_knob_near_zero(toy, capsys):
    _, db = toy
    (found,) = insights(str(db)).found
    imp = found.importance
    assert list(imp.shares)[0] == "A"
    assert imp.shares["C"] < 0.02 and "C" in imp.dead and "A" not in imp.dead
    assert imp.trim == {"C": 0}  # C's value in BEST (A=1, B=1, C=0)
    assert main(["insights", str(db), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    (target,) = shown["targets"]
    assert set(target["importance"]) == {"A", "B", "C"} and all(0 <= s <= 1 for s in target["importance"].values())
    assert target["importance"]["A"] > 0.9 and target["dead"] == ["C"]


# -- the winner's risk ----------------------------------------------------------------------------
def confirm(db, values: dict):
    """Confirmation runs, interleaved as a sweep takes them: config (A, B) -> its value in
    each round."""
    with Store(db) as store:
        by = {(r.params["A"], r.params["B"], r.params["C"]): r for r in store.results()}
        at = 2000.0
        for i in range(max(len(v) for v in values.values())):
            for (a, b), runs in values.items():
                r = by[(a, b, 0)]
                at += 1.0
                store.put_measurement(Measurement("base", "default", dict(r.params), r.cache_key, i, Status.OK,
                                                  runs[i], gpu_name="none", finished=at))


def test_a_winner_within_noise_is_at_risk(toy):
    _, db = toy
    confirm(db, {(1, 1): [1.00, 1.30, 0.98], (1, 2): [1.10, 1.05, 1.12], (2, 1): [2.0, 2.1, 2.05]})
    (found,) = insights(str(db)).found
    risk = found.risk
    assert found.table.config(risk.best) == {"A": 1, "B": 1, "C": 0}
    assert risk.runs == 3 and risk.noise is not None
    assert risk.within == 1 and found.table.config(risk.within_rows[0]) == {"A": 1, "B": 2, "C": 0}
    assert 0.05 < risk.change < 0.95
    assert [found.table.config(r) for r, _ in risk.challengers] == [{"A": 1, "B": 2, "C": 0}]


def test_rounds_are_drawn_together_so_a_shared_slowdown_changes_no_winner(toy):
    """Each round slower than the last for every config, B=2 10% behind in each: within noise
    by the spread of its runs, but never the winner when the rounds are drawn again."""
    _, db = toy
    confirm(db, {(1, 1): [1.0, 2.0, 3.0], (1, 2): [1.1, 2.2, 3.3]})
    (found,) = insights(str(db)).found
    assert found.risk.within == 1 and found.risk.change == 0.0


def test_without_repeated_measurements_the_noise_is_unknown(toy):
    _, db = toy
    (found,) = insights(str(db)).found
    assert found.risk.noise is None and found.risk.within is None and found.risk.change is None
    assert found.table.config(found.risk.best) == {"A": 1, "B": 1, "C": 0}


# -- a recorded dataset, read as a database is --------------------------------------------------------
def test_a_recorded_dataset_is_read_as_a_database(tmp_path):
    cache = {}
    for p in configs():
        status, metrics = outcome(**p)
        key = ",".join(str(v) for v in p.values())
        entry = dict(p)
        if status is Status.COMPILE_ERROR:
            entry["time"] = "CompilationFailedConfig"
        elif status is not Status.OK:
            entry["time"] = "RuntimeFailedConfig"
        else:
            entry["time"] = metrics["ms"]
            entry["times"] = [metrics["ms"] * f for f in (0.99, 1.0, 1.01)]
        cache[key] = entry
    path = tmp_path / "toy_GPU.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"tune_params_keys": ["A", "B", "C"], "cache": cache}).encode()))
    done = insights(str(path))
    (found,) = done.found
    assert done.kind == "recording" and found.table.shape == "toy_GPU"
    rules = {r.status: r for r in found.rules}
    assert [t.text for t in rules["COMPILE_ERROR"].terms] == ["A * B > 8"]
    assert rules["RUN_ERROR"].explained == 4
    assert found.risk.source == "recorded repeats" and found.risk.runs == 3
    assert found.risk.noise == pytest.approx(0.01, rel=1e-6)
    assert list(found.importance.shares)[0] == "A"


def test_a_file_that_is_neither_is_one_line(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    for path in (bad, tmp_path / "missing.db", tmp_path):
        assert main(["insights", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("ksweep: error: ")


# -- the end of a run ---------------------------------------------------------------------------------
def test_headlines_say_the_rule_that_saves_the_most_builds_and_the_dead_knob(toy):
    _, db = toy
    lines = headlines(db, command="ksweep insights toy.db")
    assert len(lines) == 2
    assert lines[0].startswith("insights: 12 of the 12 COMPILE_ERROR configs follow A * B > 8")
    assert "would have saved 12 builds (no OK config pruned)" in lines[0]
    assert lines[1].startswith("insights: C has no measurable effect on ms")


TOY_C = """
#include <stdio.h>
#if A * B > 4
#error "too big"
#endif
int main(void) { printf("@@RESULT ms=%d checksum=1\\n", A); return 0; }
"""


def test_a_run_ends_with_its_headline(tmp_path):
    from conftest import ksweep_cli

    (tmp_path / "toy.c").write_text(TOY_C)
    spec = tmp_path / "toy.toml"
    spec.write_text(textwrap.dedent("""
        [sweep]
        name = "toy"
        objective = "ms"
        [params]
        A = [1, 2, 4]
        B = [1, 2, 4]
        [build]
        sources = ["toy.c"]
        command = ["gcc", "{defines}", "-o", "{binary}", "toy.c"]
        [run]
        timeout = 10
        """))
    r = ksweep_cli("run", str(spec), "--strategy", "grid", "--no-confirm", "--no-gpu-check",
                   "--db", str(tmp_path / "toy.db"))
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stdout.splitlines() if ln.startswith("insights:")]
    assert len(said) == 1 and said[0].startswith("insights: 3 of the 3 COMPILE_ERROR configs follow A * B > 4")


def test_pooled_noise_is_the_median_spread_of_repeated_configs():
    from ksweep.insights.table import pooled_noise

    assert pooled_noise([]) is None and pooled_noise([[1.0]]) is None
    assert pooled_noise([np.array([1.0, 1.0]), [9.0, 11.0], [99.0, 101.0, 100.0]]) == pytest.approx(0.01)
