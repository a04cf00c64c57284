"""Warm start: a search that starts from earlier results of the same kernel (another shape,
GPU or source revision), from a ksweep database or a recorded dataset; effort presets and
the cost estimate of ``ksweep plan``."""

from __future__ import annotations

import itertools
import json
import types
import os
from pathlib import Path

import numpy as np
import pytest

from ksweep.cli.main import main
from ksweep.errors import KsweepError
from ksweep.replay import ReplaySpace, load_dataset, replay
from ksweep.replay.bench import parse_pairs, run_bench, same_kernel_pairs
from ksweep.replay.importers import parse_kernel_tuner
from ksweep.replay.stats import evals_to_within
from ksweep.job import config_id
from ksweep.report.estimate import Cost, cost_of, duration, wall_seconds
from ksweep.result import Result
from ksweep.spec.model import Param
from ksweep.status import Status
from ksweep.store.sqlite import Store
from ksweep.strategies import Prior, Source, make_strategy
from ksweep.strategies.base import Budget
from ksweep.strategies.effort import choose
from ksweep.sweep.driver import Sweep, SweepOptions
from ksweep.testing import FakeExecutor
from ksweep.testing.strategy_suite import StrategySuite
from ksweep.warm.prior import map_config, map_value, seed_configs
from ksweep.warm.sources import database_prior, dataset_prior, load_prior

from test_driver import Recording, toy

DATASETS = Path(os.environ.get("KSWEEP_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def shared(name: str) -> Path:
    path = DATASETS / name
    if not path.exists():
        pytest.skip(f"shared dataset {path} not present")
    return path


def kernel(shift: float = 0.0, params=("a", "b", "c"), name: str = "k", invalid=lambda c: False):
    """A recorded dataset of one smooth kernel; ``shift`` moves its optimum along ``a`` (a
    close shape or GPU); ``invalid(config)``: configs left out (the kernel's constraints)."""
    values = {"a": range(12), "b": [1, 2, 4, 8, 16], "c": [0, 1, 2], "x": [0, 1]}
    cache = {}
    for combo in itertools.product(*(values[p] for p in params)):
        c = dict(zip(params, combo))
        if invalid(c):
            continue
        t = 2.0 + 0.1 * (c["a"] - 6 - shift) ** 2 + abs(np.log2(c.get("b", 4)) - 2) + 0.3 * c.get("c", 0) \
            + 0.2 * c.get("x", 0)
        cache[",".join(map(str, combo))] = {**c, "time": t}
    return parse_kernel_tuner({"tune_params_keys": list(params), "cache": cache}, name=name)


def search(target, prior, budget=30, seed=0, strategy="auto"):
    space = ReplaySpace(target)
    s = make_strategy(strategy, space, seed=seed, budget_hint=budget, prior=prior)
    return s, replay(s, space, Budget(max_evals=budget))


# -- mapping configs between spaces -------------------------------------------------------


def test_map_config_by_name_drops_fills_and_takes_the_nearest_value():
    params = (Param("a", (16, 32, 64)), Param("b", (1, 2), default=2), Param("mode", ("x", "y")))
    # "extra" is dropped; b is missing: the target's default; 40 is not listed: the nearest on
    # a log scale is 32 (48 would be 64); 200 -> 64.
    assert map_config({"a": 40, "mode": "y", "extra": 7}, params) == {"a": 32, "b": 2, "mode": "y"}
    assert map_config({"a": 48, "mode": "y"}, params)["a"] == 64
    assert map_config({"a": 200, "b": 1, "mode": "x"}, params) == {"a": 64, "b": 1, "mode": "x"}
    assert map_config({"a": 16, "b": 1, "mode": "z"}, params) is None  # no counterpart for "z"
    assert map_value(0, (1, 2, 4)) == (True, 1)


def test_seeds_are_the_best_mapped_configs_valid_in_the_target():
    source = Source("s", configs=({"a": 1}, {"a": 2}, {"a": 3}, {"a": 4}), values=(4.0, 1.0, None, 2.0))
    params = (Param("a", (1, 2, 3, 4)),)
    valid = lambda c: c["a"] != 2  # the source's best config is invalid here
    assert seed_configs(Prior((source,)), params, valid, 5) == [{"a": 4}, {"a": 1}]  # failed a=3 never seeds


def test_seeds_cover_each_switch_after_the_sources_best():
    """The source's best configs all take the shared-memory path (s=1): after its best come
    the best with one switch changed at a time, then the best config of each combination of
    switches not yet tried, then the next best."""
    configs, values = [], []
    for a, s, r in itertools.product(range(6), (0, 1), (0, 1)):
        configs.append({"a": a, "s": s, "r": r})
        values.append(1.0 + abs(a - 3) + (0.0 if s else 10.0) + 0.5 * r)
    source = Source("s", tuple(configs), tuple(values))
    params = (Param("a", tuple(range(6))), Param("s", (0, 1)), Param("r", (0, 1)))
    everything = lambda c: True
    seeds = seed_configs(Prior((source,)), params, everything, 6)
    assert seeds[0] == {"a": 3, "s": 1, "r": 0}  # the best
    assert seeds[1:3] == [{"a": 3, "s": 0, "r": 0}, {"a": 3, "s": 1, "r": 1}]  # one switch changed
    assert seeds[3] == {"a": 3, "s": 0, "r": 1}  # the last combination, at its best
    assert seeds[4:] == [{"a": 2, "s": 1, "r": 0}, {"a": 4, "s": 1, "r": 0}]  # then the next best
    assert seed_configs(Prior((source,)), params, everything, 3, diverse=False) == [
        {"a": 3, "s": 1, "r": 0}, {"a": 3, "s": 1, "r": 1}, {"a": 2, "s": 1, "r": 0}]  # the plain order
    # a switch the source never set is tried both ways, its default first
    no_r = Source("no r", tuple({"a": c["a"], "s": c["s"]} for c in configs[::2]), tuple(values[::2]))
    params_r = (params[0], params[1], Param("r", (0, 1), default=1))
    assert seed_configs(Prior((no_r,)), params_r, everything, 3) == [
        {"a": 3, "s": 1, "r": 1}, {"a": 3, "s": 0, "r": 1}, {"a": 3, "s": 1, "r": 0}]
    # a flip that is invalid in the target is skipped
    assert {"a": 3, "s": 0, "r": 0} not in seed_configs(Prior((source,)), params, lambda c: c["s"] or c["r"], 6)


# -- the search learns from the prior ------------------------------------------------------


def test_warm_start_from_a_dataset_starts_at_the_sources_best_and_gets_there_sooner():
    target, source = kernel(shift=1.0, name="target"), kernel(shift=0.0, name="source")
    prior = dataset_prior(source)
    s, warm = search(target, prior)
    best_source = source.config(int(np.nanargmin(source.values)))
    assert s.ask  # auto ran surrogate, with the prior
    assert ReplaySpace(target)[warm.positions[0]] == best_source  # the source's best is tried first
    cold_evals, warm_evals = [], []
    for seed in range(4):
        cold_evals.append(evals_to_within(search(target, None, seed=seed)[1].values, target.optimum) or 99)
        warm_evals.append(evals_to_within(search(target, prior, seed=seed)[1].values, target.optimum) or 99)
    assert max(warm_evals) <= 10
    assert np.mean(warm_evals) < np.mean(cold_evals)


def test_warm_start_where_the_sources_best_config_is_invalid():
    """The target shape's constraints exclude the source's best config (and its neighbours):
    the next best valid ones are tried, and the search goes on."""
    source = kernel(shift=0.0, name="source")
    best = source.config(int(np.nanargmin(source.values)))
    target = kernel(shift=0.5, name="target", invalid=lambda c: c["a"] == best["a"])
    assert best not in ReplaySpace(target)
    for name in ("auto", "random", "grid", "phased"):
        s, trace = search(target, dataset_prior(source), budget=25, strategy=name)
        first = ReplaySpace(target)[trace.positions[0]]
        assert first["a"] != best["a"] and first["b"] == best["b"] and first["c"] == best["c"], name
        assert len(set(trace.positions)) == 25


def test_warm_start_with_a_different_parameter_set_and_no_common_value():
    """The source lacks c and has x; a source with no parameter in common seeds defaults."""
    source = kernel(shift=0.0, params=("a", "b", "x"), name="source")
    target = kernel(shift=0.0, params=("a", "b", "c"), name="target")
    s, trace = search(target, dataset_prior(source), budget=20)
    assert ReplaySpace(target)[trace.positions[0]] == {"a": 6, "b": 4, "c": 0}  # c: the target's default
    assert evals_to_within(trace.values, target.optimum) <= 3
    stranger = Prior((Source("other", configs=({"zz": 1}, {"zz": 2}), values=(1.0, 2.0)),))
    _, trace = search(target, stranger, budget=15)
    assert len(trace) == 15


def test_warm_start_is_deterministic_per_seed_and_empty_priors_are_cold():
    target, prior = kernel(shift=1.0), dataset_prior(kernel())
    a = search(target, prior, seed=3)[1].positions
    assert a == search(target, prior, seed=3)[1].positions
    assert search(target, Prior(), seed=3)[1].positions == search(target, None, seed=3)[1].positions
    failed_only = Prior((Source("failed", configs=({"a": 1, "b": 1, "c": 0},), values=(None,)),))
    assert search(target, failed_only, seed=3)[1].positions == search(target, None, seed=3)[1].positions


def flipped(name: str, fast_path: int, path_gain: float, best_a: int):
    """A kernel with a switch ``s`` whose faster value differs between GPUs (``fast_path``),
    and a size ``a`` whose best value moves a little."""
    cache = {}
    for a, b, s in itertools.product(range(12), (1, 2, 4, 8, 16), (0, 1)):
        t = 2.0 + 0.1 * (a - best_a) ** 2 + abs(np.log2(b) - 2) + (0.0 if s == fast_path else path_gain)
        cache[f"{a},{b},{s}"] = {"a": a, "b": b, "s": s, "time": t}
    return parse_kernel_tuner({"tune_params_keys": ["a", "b", "s"], "cache": cache}, name=name)


def test_a_switch_that_flips_between_gpus_is_learnt_from_the_seeds():
    """On the source, s=1 saves 2 ms; on the target s=0 saves 0.3 ms and the best a moved by
    one. The seed with the switch changed measures the flip, and the model (the target's own
    offset per switch combination, and the source without its switches) goes on from it."""
    source = flipped("source", fast_path=1, path_gain=2.0, best_a=6)
    target = flipped("target", fast_path=0, path_gain=0.3, best_a=7)
    prior = dataset_prior(source)
    for seed in range(4):
        s, trace = search(target, prior, budget=25, seed=seed, strategy="surrogate")
        tried = [ReplaySpace(target)[p] for p in trace.positions]
        assert tried[:2] == [{"a": 6, "b": 4, "s": 1}, {"a": 6, "b": 4, "s": 0}]
        assert evals_to_within(trace.values, target.optimum, 0.0) <= 7, seed  # 9-12 without the flips


def test_several_sources_the_one_that_predicts_the_target_leads():
    """Two sources: one close to the target, one whose sizes run the other way. The search
    from both finds the target's optimum about as soon as from the good one alone."""
    target = kernel(shift=2.0, name="target")
    good = kernel(shift=2.5, name="good")
    cache = {}
    for a, b, c in itertools.product(range(12), [1, 2, 4, 8, 16], [0, 1, 2]):
        cache[f"{a},{b},{c}"] = {"a": a, "b": b, "c": c, "time": 2.0 + 0.1 * (a - 1) ** 2 + 0.3 * (2 - c) + b / 4}
    bad = parse_kernel_tuner({"tune_params_keys": ["a", "b", "c"], "cache": cache}, name="bad")
    both = Prior(tuple(dataset_prior(d).sources[0] for d in (bad, good)))
    found = {}
    for name, prior in (("good", dataset_prior(good)), ("both", both), ("bad", dataset_prior(bad))):
        found[name] = [evals_to_within(search(target, prior, budget=40, seed=k, strategy="surrogate")[1].values,
                                       target.optimum, 0.0) or 99 for k in range(4)]
    assert max(found["both"]) <= 3
    assert np.mean(found["both"]) < np.mean(found["bad"])


class TestWarmConformance(StrategySuite):
    """A warm-started strategy keeps the ask/tell contract (the prior: a shifted copy)."""

    @pytest.fixture(params=["surrogate", "random", "grid", "phased"])
    def strategy_factory(self, request):
        def factory(space, seed, budget_hint):
            d = space.dataset
            prior = Prior((Source("shifted", tuple(d.config(i) for i in range(len(d)))[::-1],
                                  tuple(None if np.isnan(v) else float(v) for v in d.values[::-1])),))
            return make_strategy(request.param, space, seed=seed, budget_hint=budget_hint, prior=prior)
        return factory


# -- sources: databases and datasets -------------------------------------------------------


def _db_with(path: Path, results, metric="ms", direction="min") -> Path:
    with Store(path) as store:
        store.set_meta("objective", {"metric": metric, "direction": direction})
        store.put_many(results)
    return path


def test_database_prior_prefers_the_targets_shape_and_negates_a_maximised_metric(tmp_path):
    rows = [Result("v", shape, {"A": a}, Status.OK, metrics={"gflops": float(a)}, gpu_name="G")
            for shape in ("s1", "s2") for a in (1, 2, 3)]
    rows.append(Result("v", "s1", {"A": 4}, Status.COMPILE_ERROR))
    rows.append(Result("v", "s1", {"A": 5}, Status.PRUNED))
    db = _db_with(tmp_path / "old.db", rows, metric="gflops", direction="max")
    prior = database_prior(db, "v", "s1")
    assert len(prior.sources) == 1
    source = prior.sources[0]
    assert source.values == (-1.0, -2.0, -3.0, None)  # minimised; the failure kept, the pruned config not
    assert len(database_prior(db, "v", "other").sources) == 2  # another shape: every shape of the variant
    with pytest.raises(KsweepError, match="no such file"):
        load_prior(tmp_path / "missing.db")
    empty = _db_with(tmp_path / "empty.db", [])
    with pytest.raises(KsweepError, match="no results"):
        load_prior(empty)


def ms_of(params, shift=0.0):
    return 10.0 + (params["A"] - 2 - shift) ** 2 + params["B"]


def test_run_warm_starts_from_a_database_with_a_different_parameter_set(tmp_path):
    """The old database has A, B and an extra C; the new spec has A, B and X: the best old
    config, mapped (C dropped, X at its default), is the first config the new sweep tries."""
    old = _db_with(tmp_path / "old.db", [
        Result("base", "default", {"A": a, "B": b, "C": c}, Status.OK, metrics={"ms": ms_of({"A": a, "B": b}) + c})
        for a, b, c in itertools.product((1, 2, 3, 4), (1, 2), (0, 1))])
    spec = toy(tmp_path, a=(1, 2, 3, 4, 5, 6), b=(1, 2), extra="[switches]\nX = [0, 1]\n")
    fake = FakeExecutor(lambda job: (Status.OK, Status.OK, {"ms": ms_of(job.params, 0.3) + job.params["X"]}))
    asked = []

    def factory(name, space, seed, max_evals, prior=None):
        s = Recording(make_strategy(name, space, seed=seed, budget_hint=max_evals, prior=prior))
        asked.append(s)
        return s

    with Store(tmp_path / "new.db") as store:
        sweep = Sweep(spec, store, fake, SweepOptions(confirm=None, strategy="surrogate", max_evals=6, warm_start=(str(old),)),
                      strategy_factory=factory)
        sweep.run()
    assert asked[0].asked[0] == {"A": 2, "B": 1, "X": 0}
    assert sweep.priors[("base", "default")] == ("old.db:base/default",)


def test_each_shape_after_the_first_starts_from_the_shapes_before_it(tmp_path):
    shapes = '[shapes.small]\ndefines = { N = 1 }\n[shapes.large]\ndefines = { N = 2 }\n'
    spec = toy(tmp_path, a=(1, 2, 3, 4, 5, 6), b=(1, 2), extra=shapes)
    fake = FakeExecutor(lambda job: (Status.OK, Status.OK, {"ms": ms_of(job.params)}))
    for warm in (True, False):
        asked = []

        def factory(name, space, seed, max_evals, prior=None):
            asked.append(Recording(make_strategy(name, space, seed=seed, budget_hint=max_evals, prior=prior)))
            return asked[-1]

        with Store(tmp_path / f"{warm}.db") as store:
            sweep = Sweep(spec, store, fake, SweepOptions(confirm=None, strategy="surrogate", max_evals=5,
                                                          warm_between_shapes=warm), strategy_factory=factory)
            sweep.run()
        small = min(asked[0].told, key=lambda cv: cv[1])[0]
        if warm:
            assert sweep.priors == {("base", "large"): ("this run: base/small on fake",)}
            told = []
            observer = types.SimpleNamespace(target_started=lambda *a, **k: None, result=lambda *a, **k: None,
                                             build_started=lambda *a: None, finished=lambda *a: None,
                                             warm_started=lambda *a: told.append(a))
            with Store(tmp_path / "told.db") as store:
                Sweep(spec, store, fake, SweepOptions(confirm=None, strategy="surrogate", max_evals=5), observer=observer).run()
            # the user is told what each search starts from (ksweep run printed nothing of it)
            assert told == [("base", "large", ("this run: base/small on fake",))]
            assert asked[1].asked[0] == small  # the large shape starts at the small one's best
        else:
            assert sweep.priors == {}
            assert [c for c, _ in asked[1].told] == [c for c, _ in asked[0].told]  # cold: the same search


# -- replay and the benchmark -------------------------------------------------------------


def _save(dataset_doc: dict, path: Path) -> Path:
    path.write_text(json.dumps(dataset_doc))
    return path


def _kt_doc(shift: float) -> dict:
    d = kernel(shift=shift)
    cache = {}
    for i in range(len(d)):
        c = d.config(i)
        cache[",".join(str(c[n]) for n in d.names)] = {**c, "time": float(d.values[i])}
    return {"tune_params_keys": list(d.names), "cache": cache}


def test_cli_replay_and_bench_with_warm_start(tmp_path, capsys):
    a = _save(_kt_doc(0.0), tmp_path / "toy_A.json")
    b = _save(_kt_doc(1.0), tmp_path / "toy_B.json")
    assert main(["replay", str(b), "--warm-start", str(a), "--max-evals", "10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["evals_to_5pct"] is not None and out["evals_to_5pct"] <= 10
    assert main(["bench-strategies", str(a), str(b), "--strategies", "auto", "--budgets", "5,10", "--repeats", "2",
                 "--warm-start-from", "toy_B<-toy_A", "--json", "--jobs", "1"]) == 0
    records = json.loads(capsys.readouterr().out)
    names = {r["dataset"] for r in records}
    assert names == {"toy_A", "toy_B", "toy_B ← toy_A"}
    assert main(["bench-strategies", str(a), "--warm-start-from", "toy_A<-nope"]) == 2
    assert "no dataset named nope" in capsys.readouterr().err


def test_bench_pairs_of_the_same_kernel_and_shared_prefixes():
    ds = [kernel(0.0, name="k_1"), kernel(1.0, name="k_2"), kernel(0.0, name="other_1")]
    assert same_kernel_pairs(ds) == [(0, 1), (1, 0)]
    assert parse_pairs("k_2<-k_1, k_1<-other_1", ds) == [(1, 0), (0, 2)]
    with pytest.raises(KsweepError):
        parse_pairs("k_1<-k_1", ds)
    result = run_bench(ds[:2], ["auto"], [5, 10], repeats=2, pairs=[(1, 0)], cold=False)
    assert {r.dataset for r in result.records} == {"k_2 ← k_1"}


def test_shared_datasets_other_gpu_warm_start_beats_cold():
    """dedispersion on the W7800 warm-started from the A100: the recorded data of two GPUs."""
    target = load_dataset(shared("dedispersion_W7800.json.gz"))
    source = load_dataset(shared("dedispersion_A100.json.gz"))
    _, trace = search(target, dataset_prior(source), budget=25, seed=0)
    assert target.optimum / np.nanmin(trace.values) > 0.95


# -- effort presets and the cost estimate -------------------------------------------------


def test_effort_presets_follow_the_space_and_the_cost():
    assert choose("quick", 20).strategy == "grid"  # the space is within the budget
    assert (choose("quick", 5000).strategy, choose("quick", 5000).max_evals) == ("auto", 25)
    assert choose("quick", 5000, warm=True).max_evals == 15
    assert choose("full", 5000, exhaustive_seconds=3600.0).strategy == "grid"  # cheap enough to do it all
    assert choose("default", 5000, exhaustive_seconds=3 * 3600.0).max_evals == 100


def test_cost_from_stored_results_and_wall_time():
    rows = [Result("v", "s", {"A": a}, Status.OK, build_seconds=40.0, run_seconds=1.0, metrics={"ms": 1.0})
            for a in range(4)]
    rows.append(Result("v", "s", {"A": 9}, Status.OK, build_seconds=0.01, cached=True, run_seconds=1.0))
    cost = cost_of(rows)
    assert cost.build_seconds == 40.0 and cost.builds == 4 and cost.runs == 5
    assert cost_of([Result("v", "s", {"A": 1}, Status.PRUNED)]) is None
    # every build from the cache: the runs still say something ("no build or run time measured" before)
    cached = cost_of(rows[-1:])
    assert (cached.builds, cached.runs, cached.lower_bound) == (0, 1, True) and "from the cache" in cached.describe()
    # builds are the bottleneck on 4 cores: 100 configs x 40 s / 4 + filling the pipeline
    assert wall_seconds(100, Cost(40.0, 1.0, 4, 4), cores=4, gpus=1) == pytest.approx(1000 + 41)
    # the GPU is: 100 x 20 s runs on 2 GPUs
    assert wall_seconds(100, Cost(1.0, 20.0, 4, 4), cores=16, gpus=2) == pytest.approx(1000 + 21)


def test_run_times_borrowed_from_a_warm_start_database_say_so_beside_sample_builds():
    """``plan --estimate N --warm-start OLD.db``: the sample builds took their run times from
    OLD.db, and the cost said "runs from the database" (JSON) and nothing at all (text)."""
    from ksweep.report.estimate import sample_cost, with_runs

    borrowed = Cost(1.0, 0.5, 10, 10, source="--warm-start old.db")
    cost = with_runs(sample_cost([2.0, 4.0]), borrowed)
    assert cost.source == "sample builds, runs from --warm-start old.db"
    assert cost.describe() == "3.0 s per build (2 sample builds), 0.50 s per run (10 runs, from --warm-start old.db)"
    own = with_runs(sample_cost([2.0]), Cost(1.0, 0.5, 10, 10))
    assert own.source == "sample builds, runs from the database" and "from" not in own.describe()


def test_plan_prints_the_estimate_from_the_database(tmp_path, capsys):
    spec = toy(tmp_path, a=tuple(range(1, 41)), b=(1, 2))
    _db_with(tmp_path / "toy.db", [Result("base", "default", {"A": a, "B": 1}, Status.OK, build_seconds=30.0,
                                          run_seconds=2.0, metrics={"ms": 1.0}) for a in range(1, 5)])
    assert main(["plan", str(spec.path), "--db", str(tmp_path / "toy.db"), "--jobs", "2", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)["estimate"]
    # the 76 configs not in the database, 30 s builds on 2 cores, and the confirmation's 18 runs of 2 s
    assert est["stored"] == [4] and est["exhaustive_seconds"] == pytest.approx(76 * 15 + 32 + 18 * 2)
    assert [p["effort"] for p in est["presets"]] == ["quick", "default", "full"]
    assert est["presets"][0]["max_evals"] == 25 and est["presets"][0]["seconds"] == pytest.approx(21 * 15 + 32 + 36)
    assert main(["plan", str(spec.path), "--db", str(tmp_path / "toy.db"), "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "exhaustive: 80 configs (4 of them in the database, resumed)" in out
    assert "--effort quick: auto, 25 per shape × variant" in out and "confirmation runs included" in out


@pytest.mark.parametrize("option", [["--jobs", "0"], ["--jobs", "-4"], ["--estimate", "0"], ["--show", "-1"]])
def test_plan_refuses_a_count_below_its_least_in_one_line(tmp_path, capsys, option):
    """``plan --jobs -4`` planned for "-4 cores" (twice the time of one), ``--jobs 0`` for every
    core, where ``run`` refuses both."""
    spec = toy(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["plan", str(spec.path), *option])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{option[0]} {option[1]}: give a whole number of at least" in err[0]


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_bench_strategies_refuses_jobs_below_one_in_one_line(capsys, jobs):
    """``bench-strategies --jobs 0`` meant every CPU and ``--jobs -3`` one worker, silently."""
    with pytest.raises(SystemExit) as exc:
        main(["bench-strategies", "any.json", "--jobs", jobs])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--jobs {jobs}: give a whole number of at least 1" in err[0]


def test_plan_refuses_another_specs_database_as_run_does(tmp_path, capsys):
    """``plan --db`` of another spec's sweep counted its results as resumed ("4 of them in the
    database, resumed", quick "expected 0 s") while ``run`` with that --db refuses it."""
    spec = toy(tmp_path, a=tuple(range(1, 41)), b=(1, 2))
    db = _db_with(tmp_path / "other.db", [Result("base", "default", {"A": a, "B": 1}, Status.OK, build_seconds=30.0,
                                                 run_seconds=2.0, metrics={"ms": 1.0}) for a in range(1, 5)])
    with Store(db) as store:
        store.set_meta("spec_name", "other")
    assert main(["plan", str(spec.path), "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds the results of spec 'other', not 'toy'" in err[0]


def test_run_refuses_a_missing_warm_start_source_in_one_line(tmp_path, capsys):
    spec = toy(tmp_path)
    assert main(["run", str(spec.path), "--warm-start", str(tmp_path / "nope.db"), "--no-gpu-check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--warm-start" in err[0] and "no such file" in err[0]


def test_a_source_that_shares_no_parameter_is_refused_in_one_line(tmp_path, capsys):
    """Another kernel's results (none of the target's parameter names) can inform nothing:
    `replay --warm-start` and `run --warm-start` say so instead of running cold silently."""
    other = _save({"tune_params_keys": ["P", "Q"],
                   "cache": {f"{p},{q}": {"P": p, "Q": q, "time": float(p + q)} for p in (1, 2) for q in (1, 2)}},
                  tmp_path / "other.json")
    target = _save(_kt_doc(0.0), tmp_path / "toy_A.json")
    assert main(["replay", str(target), "--warm-start", str(other), "--max-evals", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "shares no parameter with the target (its: P, Q;" in err[0]
    spec = toy(tmp_path)
    assert main(["run", str(spec.path), "--warm-start", str(other), "--no-gpu-check"]) == 2
    assert "shares no parameter with the target" in capsys.readouterr().err
    # one shared name is enough (the rest is mapped or left at its default)
    some = _save({"tune_params_keys": ["A", "Q"],
                  "cache": {f"{a},{q}": {"A": a, "Q": q, "time": float(a + q)} for a in (1, 2) for q in (1, 2)}},
                 tmp_path / "some.json")
    assert load_prior(some, names=("A", "B")).sources


def test_a_source_that_fits_one_variant_only_is_taken_for_the_whole_run(tmp_path):
    """The refusal looks at every variant's parameters at once: a source of variant
    'unrolled' alone (its U) does not stop the run at variant 'plain' (A, B), which had
    been swept first and then the run refused."""
    source = _save({"tune_params_keys": ["U"], "cache": {f"{u}": {"U": u, "time": float(u)} for u in (1, 2, 4)}},
                   tmp_path / "unrolled.json")
    spec = toy(tmp_path, extra="[variants.plain]\n[variants.unrolled.params]\nU = [1, 2, 4]\n")
    fake = FakeExecutor(lambda job: (Status.OK, Status.OK, {"ms": ms_of(job.params) + job.params.get("U", 0)}))
    with Store(tmp_path / "new.db") as store:
        sweep = Sweep(spec, store, fake, SweepOptions(confirm=None, strategy="surrogate", max_evals=4, warm_start=(str(source),)))
        sweep.run()
        assert {r.variant for r in store.results()} == {"plain", "unrolled"}


def test_effort_line_says_what_was_chosen_and_how_long_it_takes():
    from ksweep.app.estimate import Estimate
    from ksweep.cli.run import effort_line

    effort = choose("default", 5000)
    est = Estimate(cores=16, gpus=1, sizes=(5000,), cost=Cost(30.0, 1.0, 8, 8), warm=False,
                   exhaustive_seconds=None, presets=())
    line = effort_line(effort, 1800.0, est, "auto", 100)
    assert line.startswith("ksweep: effort default: auto, --max-evals 100 per shape × variant")
    assert "expected 30 min on 16 cores, 1 GPU" in line
    assert "no build or run time measured" in effort_line(effort, None, est, "auto", 100)


def test_stored_results_make_the_same_source_whatever_order_they_finished_in():
    from ksweep.warm.sources import results_sources

    rows = [Result("v", "s", {"A": a}, Status.OK, metrics={"ms": float(a % 3)}, gpu_name="G") for a in range(6)]
    a = results_sources(rows, "ms", "min")
    b = results_sources(rows[::-1], "ms", "min")
    assert a == b and a[0].ranked() == b[0].ranked()


def test_a_source_swept_without_a_gpu_is_not_said_to_be_on_one():
    """A run on a host without a GPU printed "warm start from this run: base/small on none"."""
    from ksweep.warm.sources import results_sources

    rows = [Result("v", "s", {"A": a}, Status.OK, metrics={"ms": float(a)}, gpu_name="none") for a in range(3)]
    assert [s.label for s in results_sources(rows, "ms", "min", label="this run: ")] == ["this run: v/s"]


def test_the_estimate_says_when_it_saw_no_gpu():
    """On a host without GPUs `plan` said '2 cores, 1 GPU'."""
    from ksweep.app.estimate import Estimate

    assert Estimate(2, 0, (10,), None, False, None, ()).machine == "2 cores, no GPU seen: one run at a time"
    assert Estimate(16, 1, (10,), None, False, None, ()).machine == "16 cores, 1 GPU"
    assert Estimate(16, 2, (10,), None, False, None, ()).machine == "16 cores, 2 GPUs"


def _gcc_toy(folder: Path, a: list, b: list) -> str:
    """A spec of tests/programs/toy.c built by gcc, written into ``folder``; its path."""
    import shutil
    import textwrap

    for name in ("toy.c", "toy.h"):
        shutil.copy(Path(__file__).parent / "programs" / name, folder)
    (folder / "toy.toml").write_text(textwrap.dedent(f"""
        [sweep]
        name = "toy"
        [params]
        A = {a}
        B = {b}
        [build]
        sources = ["toy.c"]
        command = ["gcc", "-O0", "{{defines}}", "-o", "{{binary}}", "toy.c"]
    """))
    return str(folder / "toy.toml")


def test_plan_estimate_builds_sample_configs_that_the_sweep_then_reuses(tmp_path, capsys):
    """``plan --estimate N``: N random valid configs built now with gcc (their wall time is the
    cost of a build), the expected wall times from it, and the builds kept in the build
    cache, so the sweep that follows does not build them again."""
    import ksweep

    spec_path = _gcc_toy(tmp_path, a=[5, 6, 7, 8, 9], b=[3, 4])
    assert main(["plan", spec_path, "--estimate", "3", "--jobs", "2", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)["estimate"]
    cost = est["cost"]
    assert cost["source"] == "sample builds" and 1 <= cost["builds"] <= 3 and cost["runs"] == 0
    assert cost["build_seconds"] > 0 and cost["run_seconds"] == 0
    expected = wall_seconds(10, Cost(**cost), cores=2, gpus=est["gpus"])
    assert est["cores"] == 2 and est["exhaustive_seconds"] == pytest.approx(expected)
    # the space (10 configs) is within every preset's budget: each sweeps it whole, as long
    assert [(p["strategy"], p["seconds"]) for p in est["presets"]] == [("grid", pytest.approx(expected))] * 3

    # the text says where the figure comes from
    assert main(["plan", spec_path, "--estimate", "2", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "exhaustive: 10 configs, expected" in out and "--effort quick: grid, every config" in out

    run = ksweep.tune(ksweep.load_spec(spec_path), options=ksweep.SweepOptions(confirm=None, strategy="grid"))
    with ksweep.Store(run.db) as store:
        results = store.results()
    assert len(results) == 10
    assert sum(r.cached for r in results) >= cost["builds"]  # the sample builds were not built again

    # after the sweep, sample builds take their run times from its database (they run nothing)
    assert main(["plan", spec_path, "--estimate", "2", "--jobs", "2", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["estimate"]["cost"]
    assert again["source"] == "sample builds, runs from the database" and again["runs"] == 10 and again["run_seconds"] > 0


def test_run_effort_estimates_from_the_sample_builds_plan_estimate_left_in_the_cache(tmp_path, capsys):
    """``plan --estimate 3`` then ``run --effort quick``: the run said "no build or run time
    measured yet", although the build cache held the three sample builds."""
    spec_path = _gcc_toy(tmp_path, a=list(range(1, 11)), b=[1, 2, 3, 4])
    assert main(["plan", spec_path, "--estimate", "3", "--jobs", "2", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)["estimate"]["cost"]
    assert main(["run", spec_path, "--effort", "quick", "--max-evals", "2", "--no-confirm", "-q"]) == 0
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "effort quick:" in ln)
    assert "no build or run time measured" not in line
    assert f"{planned['build_seconds']:.1f} s per build ({planned['builds']} sample builds)" in line, line


def test_sample_builds_come_from_a_shape_that_has_valid_configs(tmp_path, capsys):
    """``plan --estimate 2`` whose first shape has no valid config built nothing and said "no
    build or run time measured yet (give --estimate N ...)"."""
    spec_path = _gcc_toy(tmp_path, a=[5, 6, 7], b=[3, 4])
    with open(spec_path, "a") as f:
        f.write('[[constraints]]\nname = "fits"\nexpr = "A <= LIMIT"\nreason = "too big"\n'
                '[shapes.tiny]\nconstants = { LIMIT = 1 }\n[shapes.large]\nconstants = { LIMIT = 9 }\n')
    assert main(["plan", spec_path, "--estimate", "2", "--jobs", "2", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)["estimate"]
    assert est["cost"] is not None and est["cost"]["builds"] == 2


def test_sample_builds_alone_are_a_lower_bound_and_choose_no_whole_space_sweep(tmp_path, capsys):
    """``plan --estimate N`` measures builds, not runs: the figures are the builds' time alone
    ("at least"), and a preset does not take a whole-space sweep for cheap on them (it did: a
    180-config sweep of 109 s was "expected 8 s", every preset a grid, while ``run --effort``
    searched 25 configs)."""
    spec_path = _gcc_toy(tmp_path, a=list(range(1, 11)), b=[1, 2, 3, 4])
    assert main(["plan", spec_path, "--estimate", "2", "--jobs", "2", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)["estimate"]
    assert est["lower_bound"] and est["cost"]["runs"] == 0
    assert [(p["strategy"], p["max_evals"]) for p in est["presets"]] == [("auto", 25), ("grid", None), ("grid", None)]
    assert main(["plan", spec_path, "--estimate", "2", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "exhaustive: 40 configs, expected at least" in out and "a preset chooses by the space's size" in out


def test_a_budget_given_with_a_preset_is_searched_not_a_grid_cut_short():
    """``--effort quick --max-evals 10`` on a space the preset would sweep whole: a grid stopped
    at 10 evaluates the space's first 10 configs in order; the budget is searched instead."""
    assert (choose("quick", 20).strategy, choose("quick", 20).max_evals) == ("grid", None)
    effort = choose("quick", 20, budget=10)
    assert (effort.strategy, effort.max_evals) == ("auto", 10) and "your --max-evals" in effort.reason
    assert choose("quick", 8, budget=10).strategy == "grid"
    assert choose("full", 5000, exhaustive_seconds=60.0, budget=50).max_evals == 50


def test_a_preset_that_sweeps_the_whole_space_under_a_time_limit_orders_it_by_promise():
    """``--effort default --time-limit 60`` on a space expected to take 18 min chose ``grid``:
    the time limit then stopped it after the space's first configs in spec order. A whole
    space that a time limit or a patience may cut short is left to ``auto``, which then
    searches it in the order of promise (surrogate) until the limit."""
    cut = choose("default", 24000, exhaustive_seconds=18 * 60.0, limited=True)
    assert (cut.strategy, cut.max_evals) == ("auto", None) and "--time-limit or --patience" in cut.reason
    assert choose("default", 24000, exhaustive_seconds=18 * 60.0).strategy == "grid"
    assert choose("quick", 20, limited=True).strategy == "auto"  # within the budget: the same


def test_a_source_with_nothing_that_succeeded_is_refused_before_anything_is_made(tmp_path, capsys):
    """An empty database stopped the run, a dataset whose configs all failed stopped it with
    "nothing to replay", and a database whose results all failed was taken silently (the
    search then ran cold); each is now refused in one line by run and plan, and no database
    is left behind."""
    spec = toy(tmp_path)
    failed_db = _db_with(tmp_path / "failed.db", [Result("base", "default", {"A": a, "B": 1}, Status.HANG)
                                                 for a in (1, 2, 3)])
    empty_db = _db_with(tmp_path / "empty.db", [])
    doc = _kt_doc(0.0)
    doc["cache"] = {k: {**v, "time": "RuntimeFailedConfig"} for k, v in doc["cache"].items()}
    failed_ds = _save(doc, tmp_path / "failed.json")
    db = tmp_path / "target.db"
    for source in (failed_db, empty_db, failed_ds):
        assert main(["run", str(spec.path), "--db", str(db), "--warm-start", str(source), "--no-gpu-check"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"ksweep: error: --warm-start {source}") and "replay" not in err[0], err
        assert not db.exists()
        assert main(["plan", str(spec.path), "--warm-start", str(source)]) == 2
        assert f"--warm-start {source}" in capsys.readouterr().err
    assert main(["plan", str(spec.path), "--warm-start", str(failed_db)]) == 2
    assert "none of its 3 results succeeded" in capsys.readouterr().err


def test_sweep_options_take_one_source_or_shape_given_alone():
    """SweepOptions(warm_start="old.db") read the path one character at a time."""
    o = SweepOptions(strategy="grid", confirm=None, warm_start="old.db", shapes="fc1", variants=["base"])
    assert (o.warm_start, o.shapes, o.variants) == (("old.db",), ("fc1",), ("base",))
    assert SweepOptions(strategy="grid", confirm=None, warm_start=(Path("a.db"), "b.json")).warm_start == ("a.db", "b.json")


@pytest.mark.parametrize("change_prior", [False, True])
def test_a_search_with_a_prior_killed_and_resumed_ends_as_an_uninterrupted_one(tmp_path, change_prior):
    """The second shape starts from the first one's results (a prior): a kill in the middle of
    its search and a resume must evaluate the configs an uninterrupted run does, both when
    its prior is the one its stored results were found with and when it changed (a larger
    --max-evals)."""
    shapes = '[shapes.small]\ndefines = { N = 1 }\n[shapes.large]\ndefines = { N = 2 }\n'

    class Kill(BaseException):
        pass

    def ms2(p, n):
        return 10 + (p["A"] - 5 - n) ** 2 * 0.3 + abs(p["B"] - 3) + 0.01 * ((p["A"] * 7 + p["B"] * 13) % 5)

    def run(folder, evals, kill_after=None):
        folder.mkdir(exist_ok=True)
        spec = toy(folder, a=tuple(range(1, 17)), b=tuple(range(1, 9)), extra=shapes)
        fake = FakeExecutor(lambda job: (Status.OK, Status.OK,
                                         {"ms": ms2(job.params, 1 if job.shape == "small" else 2)}))
        made = []

        def factory(name, space, seed, max_evals, prior=None):
            made.append(Recording(make_strategy(name, space, seed=seed, budget_hint=max_evals, prior=prior)))
            if kill_after is not None and len(made) == 2:  # the second shape's search
                rec, tell = made[-1], made[-1].tell

                def dying(config, value):
                    if len(rec.told) >= kill_after:
                        raise Kill
                    tell(config, value)
                rec.tell = dying
            return made[-1]

        with Store(folder / "t.db") as store:
            try:
                Sweep(spec, store, fake, SweepOptions(confirm=None, strategy="surrogate", max_evals=evals, seed=3),
                      strategy_factory=factory).run()
            except Kill:
                pass
            return {config_id(r.params) for r in store.results(shape="large")}

    first = 12 if change_prior else 30
    run(tmp_path / "clean", first)
    run(tmp_path / "killed", first)
    if change_prior:  # the first shape grows: the second one's prior changes
        clean = run(tmp_path / "clean", 30)
        run(tmp_path / "killed", 30, kill_after=20)
    else:
        clean = run(tmp_path / "clean", 30)
        (tmp_path / "killed" / "t.db").unlink()
        run(tmp_path / "killed", 30, kill_after=10)
    resumed = run(tmp_path / "killed", 30)
    assert resumed == clean


def test_a_duration_beyond_two_years_is_said_in_years():
    """A 40-parameter space's exhaustive estimate read "4282290418815.6 days"."""
    assert [duration(s) for s in (45, 12 * 60, 3.4 * 3600, 5.2 * 86400)] == ["45 s", "12 min", "3.4 h", "5.2 days"]
    assert duration(3.1 * 365.25 * 86400) == "3.1 years"
    assert duration(4282290418815.6 * 86400) == "about 1e+10 years"


def test_warm_source_rank_bench():
    """bench/warm_source_rank.py: a source ordered as the target puts the target's optimum
    first and correlates fully; a source ordered against it puts it last; a parameter the
    source lacks is taken at the target's best."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "bench" / "warm_source_rank.py"
    spec = importlib.util.spec_from_file_location("warm_source_rank", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def recording(name, time, params=("a", "b")):
        cache = {}
        for a in range(4):
            for b in range(2):
                c = {"a": a, "b": b}
                c = {k: c[k] for k in params}
                cache[",".join(str(c[k]) for k in params)] = {**c, "time": time(a, b)}
        return parse_kernel_tuner({"tune_params_keys": list(params), "cache": cache}, name=name)

    target = recording("k_t", lambda a, b: 1.0 + a + 0.5 * b)  # optimum a=0 b=0, alone within 5%
    same = bench.rank_stats(target, recording("k_s", lambda a, b: 2.0 + 3 * a + b))
    assert same["first_good_rank"] == 1 and same["pearson"] > 0.9 and same["spearman"] == pytest.approx(1.0)
    assert same["top"][5] == pytest.approx(1.0) and same["within"] == 1
    against = bench.rank_stats(target, recording("k_s", lambda a, b: 10.0 - a - 0.5 * b))
    assert against["first_good_rank"] == 8 and against["spearman"] == pytest.approx(-1.0)
    assert against["top"][5] == pytest.approx(1.0 / 2.5)  # the source's 5 best: a=3, a=2 (b either), a=1 b=1
    # the source lacks b: each a is taken at the target's best b (b=0)
    lacking = bench.rank_stats(target, recording("k_s", lambda a, b: 1.0 + a, params=("a",)))
    assert lacking["shared"] == 1 and lacking["first_good_rank"] == 1 and lacking["top"][5] == pytest.approx(1.0)
