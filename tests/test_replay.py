"""Replay of recorded tuning results: importers, replayed space, driver, statistics, CLI."""

from __future__ import annotations

import gzip
import itertools
import json
import os
from pathlib import Path

import numpy as np
import pytest

from ksweep.errors import KsweepError
from ksweep.replay import DatasetError, ReplaySpace, load_dataset, replay
from ksweep.replay.bench import EXACT_RANDOM, mean_over_datasets, run_bench, run_once
from ksweep.replay.importers import parse_kernel_tuner, parse_t4
from ksweep.replay.stats import (
    evals_to_within,
    median_evals,
    random_expectation,
    random_hitting,
    ratio_curve,
    summarise,
)
from ksweep.status import Status
from ksweep.strategies import make_strategy
from ksweep.strategies.base import Budget, Strategy

DATASETS = Path(os.environ.get("KSWEEP_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))

# file -> (configs, valid, optimum, configs within 5%), as documented in the datasets' README.
SHARED = {
    "dedispersion_A100.json.gz": (11130, 11130, 68.117, 4405),
    "convolution_A100.json.gz": (4362, 4201, 0.5536, 1),
    "gemm_RTX3090.json.gz": (17956, 17956, 5.658, 6),
    "pnpoly_RTX3090.json.gz": (4092, 3774, 8.714, 33),
    "convolution_W7800_T4.json.gz": (4362, 4246, 0.8161, 8),
}


def shared(name: str) -> Path:
    path = DATASETS / name
    if not path.exists():
        pytest.skip(f"shared dataset {path} not present")
    return path


# -- small documents in both formats ---------------------------------------------------


def kt_doc() -> dict:
    cache = {}
    for a, b in itertools.product([1, 2, 4], [8, 16]):
        entry = {"A": a, "B": b, "time": float(a * b), "times": [float(a * b)] * 3}
        cache[f"{a},{b}"] = entry
    cache["4,16"]["time"] = "CompilationFailedConfig"
    cache["2,16"]["time"] = "RuntimeFailedConfig"
    cache["4,8"]["time"] = 1e20  # an older cache's failure
    cache["1,16"]["time"] = "InvalidConfig"  # a known constraint: not in the space
    return {
        "device_name": "GPU", "kernel_name": "k", "tune_params_keys": ["A", "B"],
        "tune_params": {"A": [4, 1, 2], "B": [8, 16]}, "objective": "time", "cache": cache,
    }


def t4_doc() -> dict:
    results = []
    for a, b in itertools.product([1, 2, 4], ["x", "y"]):
        t = float(a) + (0.5 if b == "y" else 0.0)
        results.append({
            "configuration": {"A": a, "B": b},
            "times": {"runtimes": [t, t]},
            "invalidity": "correct",
            "measurements": [{"name": "time", "value": t, "unit": "ms"}],
            "objectives": ["time"],
        })
    results[1]["invalidity"] = "compile"
    results[1]["measurements"][0]["value"] = "CompilationFailedConfig"
    results[2]["invalidity"] = "timeout"
    results[3]["invalidity"] = "constraints"
    del results[4]["measurements"]  # falls back to the mean of the runtimes
    return {"schema_version": "1.0.0", "results": results}


def test_kernel_tuner_import_failures_and_pruned():
    d = parse_kernel_tuner(kt_doc(), name="kt")
    assert d.format == "kernel_tuner"
    assert len(d) == 5  # InvalidConfig left out
    assert [p.values for p in d.params] == [(1, 2, 4), (8, 16)]  # numeric values ascending
    statuses = {tuple(d.config(i).values()): s for i, s in enumerate(d.statuses)}
    assert statuses[(4, 16)] is Status.COMPILE_ERROR
    assert statuses[(2, 16)] is Status.RUN_ERROR
    assert statuses[(4, 8)] is Status.RUN_ERROR
    assert (1, 16) not in statuses
    assert d.failures == 3 and d.optimum == 8.0


def test_t4_import_statuses_and_values():
    d = parse_t4(t4_doc(), name="t4")
    assert d.format == "t4" and len(d) == 5
    by = {tuple(d.config(i).values()): (s, v) for i, (s, v) in enumerate(zip(d.statuses, d.values))}
    assert by[(1, "y")][0] is Status.COMPILE_ERROR and np.isnan(by[(1, "y")][1])
    assert by[(2, "x")][0] is Status.HANG
    assert (2, "y") not in by  # rejected by a constraint
    assert by[(4, "x")] == (Status.OK, 4.0)  # from the runtimes
    assert d.params[1].values == ("x", "y")
    assert d.optimum == 1.0


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("doc", [kt_doc, t4_doc])
def test_load_plain_or_gzipped_autodetected(tmp_path, gz, doc):
    raw = json.dumps(doc()).encode()
    path = tmp_path / "data.bin"  # the name says nothing: content decides
    path.write_bytes(gzip.compress(raw) if gz else raw)
    d = load_dataset(path)
    assert len(d) == 5 and d.format == ("kernel_tuner" if doc is kt_doc else "t4")


def test_load_errors_are_one_line_user_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DatasetError, match="not JSON"):
        load_dataset(bad)
    db = tmp_path / "sweep.db"  # a newcomer's first guess: the sweep's own database
    db.write_bytes(b"SQLite format 3\x00" + bytes(100))
    with pytest.raises(DatasetError, match="a ksweep database, not a recorded dataset: ksweep export"):
        load_dataset(db)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(DatasetError, match="neither a Kernel Tuner cache"):
        load_dataset(other)
    with pytest.raises(KsweepError, match="cannot read"):
        load_dataset(tmp_path / "missing.json")


@pytest.mark.parametrize("name", sorted(SHARED))
def test_shared_datasets_import(name):
    configs, valid, optimum, within = SHARED[name]
    d = load_dataset(shared(name))
    assert len(d) == configs
    assert int(d.ok.sum()) == valid
    assert d.optimum == pytest.approx(optimum, rel=1e-3)
    assert d.within(0.05) == within
    assert all(s.ok == ok for s, ok in zip(d.statuses, d.ok))


def test_replay_space_is_exactly_the_recorded_configs():
    d = parse_kernel_tuner(kt_doc(), name="kt")
    space = ReplaySpace(d)
    assert len(space) == 5
    for i in range(len(space)):
        assert space.index(space[i]) == i and space[i] in space
    assert {"A": 1, "B": 16} not in space  # pruned, never recorded
    assert {"A": 3, "B": 8} not in space
    with pytest.raises(ValueError):
        space.index({"A": 1, "B": 16})


class _Recorder(Strategy):
    """Proposes configs in order and remembers what it was told."""

    name = "recorder"

    def __init__(self, space):
        super().__init__(space)
        self.i = 0

    def _propose(self, n):
        out = [self.space[j] for j in range(self.i, min(self.i + n, len(self.space)))]
        self.i += len(out)
        return out


def test_replay_returns_recorded_values_and_failures():
    d = parse_kernel_tuner(kt_doc(), name="kt")
    space = ReplaySpace(d)
    s = _Recorder(space)
    trace = replay(s, space, Budget(max_evals=100), batch=2)
    assert len(trace) == 5  # the space ran out before the budget
    for (config, value), i in zip(s.history, trace.positions):
        assert (value is None) == np.isnan(d.values[i])
        assert value is None or value == d.values[i]
    assert trace.best_position is not None and d.values[trace.best_position] == d.optimum


def test_replay_stops_at_budget():
    d = parse_kernel_tuner(kt_doc(), name="kt")
    space = ReplaySpace(d)
    assert len(replay(_Recorder(space), space, Budget(max_evals=3), batch=2)) == 3


# -- statistics -------------------------------------------------------------------------


def brute_force_random(values: np.ndarray, k: int):
    ratios, hits = [], []
    opt = np.nanmin(values)
    for comb in itertools.combinations(range(len(values)), k):
        x = values[list(comb)]
        ratios.append(0.0 if np.isnan(x).all() else opt / np.nanmin(x))
    return np.array(ratios)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7])
def test_random_expectation_is_exact(k):
    values = np.array([3.0, np.nan, 1.0, 2.0, 5.0, np.nan, 1.04])
    ratios = brute_force_random(values, k)
    e = random_expectation(values, k)
    assert e.mean_ratio == pytest.approx(ratios.mean(), rel=1e-12)
    # The median is the lower median over all equally likely draws.
    assert e.median_ratio == pytest.approx(np.sort(ratios)[::-1][(len(ratios) - 1) // 2])
    # 1.0 and 1.04 are within 5%: the chance of drawing at least one of them.
    p, _ = random_hitting(values, k)
    assert p == pytest.approx(np.mean(ratios >= 1 / 1.04 - 1e-12))


def test_random_hitting_median():
    values = np.array([1.0] + [10.0] * 9)  # one good config in ten
    p, median = random_hitting(values, 10)
    assert p == pytest.approx(1.0)
    assert median == 5  # P(found within t) = t / 10 reaches 1/2 at t = 5
    assert random_hitting(values, 4) == (pytest.approx(0.4), None)


def test_ratio_and_evals_to_within():
    values = np.array([np.nan, 4.0, 2.0, np.nan, 1.03, 1.0])
    curve = ratio_curve(values, 1.0)
    assert curve.tolist() == [0.0, 0.25, 0.5, 0.5, pytest.approx(1 / 1.03), 1.0]
    assert evals_to_within(values, 1.0) == 5
    assert evals_to_within(values[:4], 1.0) is None
    assert median_evals([3, None, 5]) == 5
    assert median_evals([3, None, None]) is None
    s = summarise([1.0, 0.5, 0.8], [10, 30, None], budget=20)
    assert s.mean_ratio == pytest.approx(2.3 / 3) and s.median_ratio == 0.8
    assert s.reached_5pct == 1 and s.median_evals_to_5pct is None


# -- the benchmark ------------------------------------------------------------------------


def synthetic(n_a=12, n_b=10, seed=0, name="synthetic"):
    """A smooth landscape with a failing corner, as a Kernel Tuner document."""
    rng = np.random.default_rng(seed)
    cache = {}
    for a, b in itertools.product(range(n_a), range(n_b)):
        t = 1.0 + (a - 7) ** 2 + 0.5 * (b - 3) ** 2 + rng.random() * 0.1
        cache[f"{a},{b}"] = {"a": a, "b": b, "time": "RuntimeFailedConfig" if a + b > 17 else t}
    return parse_kernel_tuner({"tune_params_keys": ["a", "b"], "cache": cache}, name=name)


def test_bench_records_and_shared_prefixes():
    ds = [synthetic(), synthetic(seed=1, name="other")]
    result = run_bench(ds, ["random", "auto"], budgets=[10, 30], repeats=3)
    keys = {(r.dataset, r.strategy, r.budget) for r in result.records}
    for d in ("synthetic", "other"):
        for s in ("random", "auto", EXACT_RANDOM):
            assert {(d, s, 10), (d, s, 30)} <= keys
    for r in result.records:
        assert 0.0 <= r.mean_ratio <= 1.0 and 0.0 <= r.median_ratio <= 1.0
        assert set(r.as_json()) == {"dataset", "strategy", "budget", "mean_ratio", "median_ratio",
                                    "median_evals_to_5pct", "reached_5pct"}
    # Budgets are read off one longer run: identical to a run stopped at the budget.
    for s in ("random", "surrogate", "bayes"):
        long, short = run_once(ds[0], s, 30, seed=2), run_once(ds[0], s, 10, seed=2)
        assert np.array_equal(long[:10], short, equal_nan=True)
    means = mean_over_datasets(result.records)
    assert {(m.strategy, m.budget) for m in means} >= {("auto", 10), ("random", 30)}


def test_bench_parallel_equals_serial():
    ds = [synthetic()]
    a = run_bench(ds, ["random", "surrogate"], [15], repeats=2, workers=1)
    b = run_bench(ds, ["random", "surrogate"], [15], repeats=2, workers=2)
    assert a.records == b.records


def test_auto_grid_when_budget_covers_space():
    d = synthetic(4, 5)
    space = ReplaySpace(d)
    s = make_strategy("auto", space, seed=0, budget_hint=len(space))
    assert s.chosen == "grid"
    trace = replay(s, space, Budget(max_evals=len(space)))
    assert sorted(trace.positions) == list(range(len(space)))


# -- the command line -------------------------------------------------------------------


@pytest.fixture
def kt_file(tmp_path):
    d = synthetic()
    cache = {f"{c['a']},{c['b']}": {**c, "time": (float(v) if v == v else "RuntimeFailedConfig")}
             for c, v in ((d.config(i), d.values[i]) for i in range(len(d)))}
    path = tmp_path / "synthetic.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"tune_params_keys": ["a", "b"], "cache": cache}).encode()))
    return path


def test_cli_replay(kt_file, capsys):
    from ksweep.cli.main import main

    assert main(["replay", str(kt_file), "--strategy", "random", "--max-evals", "20", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["evaluations"] == 20 and out["strategy"] == "random" and 0 < out["ratio"] <= 1
    assert main(["replay", str(kt_file), "--max-evals", "30"]) == 0
    text = capsys.readouterr().out
    assert "optimum" in text and "ratio" in text and "evaluations: 30" in text


def test_cli_replay_bad_file(tmp_path, capsys):
    from ksweep.cli.main import main

    path = tmp_path / "x.json"
    path.write_text("[]")
    assert main(["replay", str(path)]) == 2
    assert "neither a Kernel Tuner cache" in capsys.readouterr().err


def test_a_strategy_whose_package_is_missing_is_left_out_or_refused_in_one_line(kt_file, monkeypatch, capsys):
    """Without optuna, `bench-strategies` with its default list runs the others and says
    what it left out; naming bayes is one line and exit 2 before any work (it was a
    traceback from the worker pool: the error could not cross processes)."""
    import pickle

    import ksweep.strategies as strategies
    from ksweep.cli.main import main
    from ksweep.errors import MissingDependency

    err = pickle.loads(pickle.dumps(MissingDependency("optuna", "bayes", "the 'bayes' strategy")))
    assert isinstance(err, MissingDependency) and "pip install 'ksweep[bayes]'" in str(err)
    monkeypatch.setitem(strategies._NEEDS, "bayes", ("ksweep_no_such_package", "bayes"))
    assert main(["bench-strategies", str(kt_file), "--budgets", "5", "--repeats", "1", "--jobs", "2",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert {r["strategy"] for r in json.loads(captured.out)} >= {"auto", "random", "surrogate"}
    assert "bayes" not in {r["strategy"] for r in json.loads(captured.out)}
    assert "note: the 'bayes' strategy needs the Python package 'ksweep_no_such_package'" in captured.err
    assert main(["bench-strategies", str(kt_file), "--strategies", "random,bayes", "--repeats", "1"]) == 2
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert len(err_lines) == 1 and "pip install 'ksweep[bayes]'" in err_lines[0]


def test_run_with_a_strategy_whose_package_is_missing_creates_no_database(tmp_path, monkeypatch, capsys):
    """`run --strategy bayes` without optuna: one line, and no database file left behind."""
    from test_driver import toy

    import ksweep.strategies as strategies
    from ksweep.cli.main import main

    monkeypatch.setitem(strategies._NEEDS, "bayes", ("ksweep_no_such_package", "bayes"))
    spec = toy(tmp_path)
    db = tmp_path / "b.db"
    assert main(["run", str(spec.path), "--strategy", "bayes", "--db", str(db), "--no-gpu-check"]) == 2
    assert "pip install 'ksweep[bayes]'" in capsys.readouterr().err and not db.exists()


def test_cli_bench_json_and_plot(kt_file, tmp_path, capsys):
    from ksweep.cli.main import main

    png = tmp_path / "curves.png"
    code = main(["bench-strategies", str(kt_file), "--strategies", "random,grid", "--budgets", "5,10",
                 "--repeats", "2", "--jobs", "1", "--json", "--plot", str(png)])
    assert code == 0
    records = json.loads(capsys.readouterr().out)
    assert {(r["strategy"], r["budget"]) for r in records} == {
        (s, b) for s in ("random", "grid", EXACT_RANDOM) for b in (5, 10)}
    if png.exists():  # matplotlib installed
        assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["bench-strategies", str(kt_file), "--strategies", "random", "--budgets", "5",
                 "--repeats", "2", "--jobs", "1"]) == 0
    assert "random-exact" in capsys.readouterr().out


def test_the_mean_over_datasets_sets_cold_against_cold_and_warm_pairs_apart():
    """With --warm-start-from, the warm pairs' records went into each strategy's "mean over
    datasets", while the exact random expectation covers the cold datasets only: auto's mean
    was 0.845 against random's 0.778 where, cold against cold, it was 0.767."""
    from ksweep.replay.bench import parse_pairs
    from ksweep.report.bench_tables import tables

    ds = [synthetic(), synthetic(seed=1, name="other")]
    result = run_bench(ds, ["random"], budgets=[10], repeats=2, pairs=parse_pairs("synthetic<-other", ds))
    warm = [r for r in result.records if r.warm_from]
    assert [(r.dataset, r.warm_from) for r in warm] == [("synthetic ← other", "other")]
    cold = [r for r in result.records if not r.warm_from and r.strategy == "random"]
    (mean,) = [m for m in mean_over_datasets(result.records) if m.strategy == "random"]
    assert mean.mean_ratio == pytest.approx(np.mean([r.mean_ratio for r in cold]))
    (wmean,) = mean_over_datasets(result.records, warm=True)
    assert wmean.mean_ratio == warm[0].mean_ratio
    titles = [t[0] for t in tables(result.records)]
    assert titles == ["synthetic", "other", "synthetic ← other", "mean over datasets"]  # one pair: no mean of pairs


def test_a_warm_pair_of_unrelated_kernels_is_refused_as_replay_and_run_refuse_it():
    from ksweep.replay.bench import parse_pairs

    unrelated = parse_kernel_tuner({"tune_params_keys": ["p"], "cache": {f"{p}": {"p": p, "time": float(p + 1)}
                                                                         for p in range(4)}}, name="pnpoly")
    with pytest.raises(KsweepError, match="pnpoly shares no parameter with synthetic"):
        parse_pairs("synthetic<-pnpoly", [synthetic(), unrelated])


def test_replay_and_bench_refuse_options_that_would_evaluate_nothing(kt_file, capsys):
    """`replay --max-evals -3`, `--batch 0` or `--time-limit -1` evaluated nothing and exited 0;
    `same-kernel` with no pair of one kernel printed a header alone."""
    from ksweep.cli.main import main

    for option in (["--max-evals", "-3"], ["--batch", "0"], ["--time-limit", "-1"], ["--patience", "0"]):
        with pytest.raises(SystemExit) as exc:
            main(["replay", str(kt_file), *option])
        assert exc.value.code == 2
        assert option[0] in capsys.readouterr().err
    assert main(["bench-strategies", str(kt_file), "--strategies", "random", "--warm-start-from", "same-kernel",
                 "--warm-only", "--repeats", "1"]) == 2
    assert "no two of the datasets given are of one kernel" in capsys.readouterr().err
