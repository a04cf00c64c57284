"""The store's one definition of "best" (ksweep/store/standings.py), tested against a store
alone: no sweep, no process. Every reader (report, export with and without --cover,
explain, check, the library) asks it."""

import json

import pytest

from ksweep.cli.main import main
from ksweep.result import Measurement, Result
from ksweep.spec.model import Objective
from ksweep.status import Status
from ksweep.store import standings
from ksweep.store.sqlite import Store

GPU = "NVIDIA H200"


def result(a: int, ms: float | None, status=Status.OK, shape="s") -> Result:
    return Result("base", shape, {"A": a}, status, metrics={"ms": ms} if ms is not None else {}, gpu_name=GPU,
                  cache_key=f"key-{shape}-{a}", finished=1000.0 + a, build_argv=("gcc", f"-DA={a}", "p.c"))


def runs(r: Result, values, start=2000.0):
    return [Measurement(r.variant, r.shape, dict(r.params), r.cache_key, i, Status.OK if v is not None else Status.CRASH,
                        v, gpu_name=GPU, finished=start + i) for i, v in enumerate(values)]


def busier_machine(path, shapes=("s",)):
    """A sweep whose machine got busier before its confirmation: every confirmed median is
    slower than the single measurements. A=2 is the confirmed BEST; A=5 was measured once
    (1.10 ms), faster than every median, and was not confirmed (too far behind the second
    best's single measurement)."""
    with Store(path) as store:
        store.set_meta("objective", {"metric": "ms", "direction": "min"})  # as every ksweep wrote it
        store.set_meta("spec_name", "busy")
        for shape in shapes:
            rows = [result(1, 1.00, shape=shape), result(2, 1.01, shape=shape), result(3, 1.02, shape=shape),
                    result(5, 1.10, shape=shape), result(9, 2.0, shape=shape)]
            store.put_many(rows)
            for r, values in ((rows[0], [1.40, 1.41, 1.39]), (rows[1], [1.35, 1.34, 1.36]),
                              (rows[2], [1.38, 1.39, 1.37])):
                for m in runs(r, values):
                    store.put_measurement(m)
    return path


def test_best_is_the_confirmed_best_and_a_once_measured_config_does_not_compare(tmp_path):
    db = busier_machine(tmp_path / "b.db")
    with Store(db, create=False) as store:
        s = standings.standing(store, "base", "s")
        assert s.confirmed and s.best().params == {"A": 2}
        assert standings.best(store, "base", "s").params == {"A": 2}
        values = s.values()
        assert {v.result.params["A"] for v in values.values()} == {1, 2, 3}
        assert all(v.confirmed for v in values.values())
        assert s.value(result(5, 1.10)) is None  # measured once, beside confirmed medians
        assert s.value(result(5, 1.10), singles=True).value == 1.10  # a recording keeps it


def test_without_a_confirmation_the_ranked_best_and_single_measurements_compare():
    rows = [result(1, 1.2), result(2, 1.1), result(3, None, Status.CRASH)]
    s = standings.standings_of(rows, [], Objective("ms", "min"))[("base", "s")]
    assert not s.confirmed and s.best().params == {"A": 2}
    assert {v.result.params["A"]: v.value for v in s.values().values()} == {1: 1.2, 2: 1.1}
    up = standings.standings_of(rows, [], Objective("ms", "max"))[("base", "s")]
    assert up.best().params == {"A": 1}


def test_a_best_outside_the_readers_selection_falls_back_to_the_ranked_best_of_it(tmp_path):
    db = busier_machine(tmp_path / "b.db")
    with Store(db, create=False) as store:
        s = standings.standing(store, "base", "s")
    assert s.best(within=lambda r: r.params["A"] != 2).params == {"A": 1}


@pytest.mark.parametrize("cover", [None, "0", "5"])
def test_export_ships_the_confirmed_best_with_or_without_a_cover(tmp_path, capsys, cover):
    """`export --cover` compared A=5's single 1.10 ms with the confirmed medians (1.34-1.41 ms)
    and shipped it, 'loss -18.5%'; the confirmed BEST is shipped, with every cover."""
    db = busier_machine(tmp_path / "b.db", shapes=("s", "t"))
    args = ["export", str(db), "--format", "json"] + (["--cover", cover] if cover is not None else [])
    assert main(args) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert {e["shape"]: e["params"]["A"] for e in doc["entries"]} == {"s": 2, "t": 2}
    assert all(e["confirmed"] and e["loss"] == 0.0 for e in doc["entries"])
    assert "-" not in "".join(line.split("loss")[-1] for line in captured.err.splitlines() if "loss" in line)


def test_the_objective_is_typed_and_defaults_for_a_new_store(tmp_path):
    with Store(tmp_path / "o.db") as store:
        assert store.objective() == Objective("ms", "min") and store.objectives() == (Objective("ms", "min"),)
        store.set_objectives([Objective("gflops", "max"), Objective("energy_mj", "min")])
        assert store.objective() == Objective("gflops", "max")
        assert store.objectives() == (Objective("gflops", "max"), Objective("energy_mj", "min"))


def test_the_report_table_has_no_trailing_spaces(tmp_path, capsys):
    db = busier_machine(tmp_path / "b.db")
    assert main(["report", str(db)]) == 0
    out = capsys.readouterr().out
    assert "BEST" in out
    assert not [line for line in out.splitlines() if line != line.rstrip(" ")]


def test_a_confirmed_config_judged_wrong_since_never_compares():
    """Confirmed while its check could not run, then judged against the reference that stands
    now (a wrong checksum): its median no longer counts, and export never ships it."""
    from ksweep.export.selection import select

    rows = [result(1, 1.00), result(2, 0.90, status=Status.CHECKSUM_MISMATCH), result(3, 1.05)]
    ms = [m for r, v in ((rows[0], [1.0, 1.01, 1.0]), (rows[1], [0.9, 0.9, 0.91]), (rows[2], [1.05, 1.06, 1.05]))
          for m in runs(r, v)]
    found = standings.standings_of(rows, ms, Objective("ms", "min"))
    s = found[("base", "s")]
    assert s.value(rows[1]) is None
    assert {v.result.params["A"] for v in s.values().values()} == {1, 3}
    assert [e.result.params["A"] for e in select(found).entries] == [1]


def test_reading_a_store_loads_no_numpy():
    """ksweep.Store (a report's, a script's) loads neither the expression language nor numpy:
    the typed objective imports the spec's record only when it is read."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import sys, ksweep; ksweep.Store; print('numpy' in sys.modules)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
