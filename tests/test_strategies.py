"""Search strategies on replayed data: the conformance suite (ksweep.testing.strategy_suite)
for every registered strategy, and what each strategy does beyond it."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from ksweep.replay import ReplaySpace, load_dataset, replay
from ksweep.space.space import Space
from ksweep.spec.model import Param
from ksweep.strategies import STRATEGIES, UnknownStrategy, make_strategy
from ksweep.strategies.base import Budget, config_key
from ksweep.strategies.gp import GaussianProcess, expected_improvement, norm_cdf
from ksweep.strategies.indexed import IndexedSpace
from ksweep.testing.strategy_suite import StrategySuite, replay_run, synthetic_dataset

DATASETS = Path(os.environ.get("KSWEEP_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


@pytest.fixture(scope="module")
def space():
    return ReplaySpace(synthetic_dataset())


def registered(name):
    """The factory of a registered strategy, as the suite takes it."""
    return lambda space, seed, budget_hint: make_strategy(name, space, seed=seed, budget_hint=budget_hint)


def run(name, space, budget, seed=0, batch=1):
    return replay_run(registered(name), space, budget, seed=seed, batch=batch)


class TestConformance(StrategySuite):
    @pytest.fixture(params=STRATEGIES)
    def strategy_factory(self, request):
        return registered(request.param)


@pytest.mark.parametrize("name", ["surrogate", "auto", "bayes"])
def test_model_based_strategies_learn_failures_and_improve(name, space):
    """After their warm start, model-based searches fail less often than random search
    (a quarter of the space) and find the optimum region."""
    pytest.importorskip("optuna") if name == "bayes" else None
    fails, ratios = [], []
    for seed in range(4):
        _, trace = run(name, space, 60, seed=seed)
        fails.append(np.isnan(trace.values[20:]).mean())
        ratios.append(space.dataset.optimum / np.nanmin(trace.values))
    assert np.mean(fails) < 0.2
    assert np.mean(ratios) > 0.9


def test_bayes_tells_failures_as_constraint_violations(space):
    optuna = pytest.importorskip("optuna")
    s = make_strategy("bayes", space, seed=0)
    configs = s.ask(3)
    s.tell(configs[0], None)
    s.tell(configs[1], 2.5)
    s.tell(configs[2], 3.0)
    done = [t for t in s.study.get_trials() if t.state == optuna.trial.TrialState.COMPLETE]
    assert [t.constraints for t in done] == [{"failed": 1.0}, {"failed": -1.0}, {"failed": -1.0}]
    assert [t.value for t in done][1:] == [2.5, 3.0]
    # The failed config's stored value is a real time seen, never a huge fake one.
    assert done[0].value <= 3.0


def test_bayes_learns_from_configs_it_did_not_propose(space):
    """The reference config, warm-start seeds and stored results told first reach the study
    as trials (they were dropped: the model never saw them), and are never proposed."""
    optuna = pytest.importorskip("optuna")
    s = make_strategy("bayes", space, seed=0)
    unasked = space[7]
    s.tell(unasked, 1.25)
    done = [t for t in s.study.get_trials() if t.state == optuna.trial.TrialState.COMPLETE]
    assert [t.value for t in done] == [1.25]
    asked = s.ask(len(space) - 1)
    assert unasked not in asked and len(asked) == len(space) - 1


def test_surrogate_beats_random_on_a_smooth_space(space):
    def mean_ratio(name):
        return np.mean([space.dataset.optimum / np.nanmin(run(name, space, 30, seed=s)[1].values) for s in range(5)])

    assert mean_ratio("surrogate") > mean_ratio("random")


def test_surrogate_caps_the_points_its_models_see(space):
    from ksweep.strategies.surrogate import SurrogateSettings, SurrogateStrategy, _subset

    values = np.array([5.0, np.nan, 1.0, 3.0, np.nan, 2.0, 4.0, 6.0])
    keep = _subset(values, 4)
    assert len(keep) == 4 and {2, 5} <= set(keep)  # the best half always stays
    s = SurrogateStrategy(space, seed=0, settings=SurrogateSettings(max_points=30))
    trace = replay(s, space, Budget(max_evals=60))
    assert len(set(trace.positions)) == 60
    assert space.dataset.optimum / np.nanmin(trace.values) > 0.9


def test_unknown_strategy_is_a_user_error(space):
    with pytest.raises(UnknownStrategy, match="choose one of"):
        make_strategy("anneal", space)


def test_batches_spread_out(space):
    """Configs asked together (builds running ahead) are distinct and not all neighbours."""
    s = make_strategy("surrogate", space, seed=0)
    first = s.ask(12)
    for c in first:
        i = space.index(c)
        s.tell(c, None if np.isnan(space.dataset.values[i]) else float(space.dataset.values[i]))
    batch = s.ask(6)
    assert len({config_key(c, space.names) for c in batch}) == 6
    assert len({c["a"] for c in batch}) > 1 or len({c["b"] for c in batch}) > 1


# -- phased --------------------------------------------------------------------------


@pytest.fixture
def tiered_space():
    params = (
        Param("TN", (128, 256), tier=1),
        Param("STAGES", (3, 4, 5), tier=1),
        Param("SNAKE", (False, True), default=False, tier=2, flag=True),
        Param("VEC", ("uint4", "uint2"), default="uint4", tier=2),
    )
    from ksweep.spec.expr import parse
    from ksweep.spec.model import Constraint

    # TN=256 with 5 stages does not fit; uint2 loads need TN=128.
    constraints = (
        Constraint("smem", expr=parse("TN * STAGES <= 1024")),
        Constraint("vec", expr=parse("VEC == 'uint4' or TN == 128")),
    )
    return Space.from_parts(params=params, derived=(), constraints=constraints, fixed={})


def timing(c):
    return 10.0 - c["STAGES"] + (0.5 if c["TN"] == 256 else 0.0) - (0.3 if c["SNAKE"] else 0.0) + (
        0.2 if c["VEC"] == "uint2" else 0.0)


def test_phased_tier1_grid_then_tier2_on_the_winner(tiered_space):
    s = make_strategy("phased", tiered_space, seed=0)
    first = s.ask(100)
    # Phase 1: every valid Tier-1 combination, switches at their defaults.
    assert {(c["TN"], c["STAGES"]) for c in first} == {(128, 3), (128, 4), (128, 5), (256, 3), (256, 4)}
    assert all(not c["SNAKE"] and c["VEC"] == "uint4" for c in first)
    assert all(s.phase_of(c) == "tier1" for c in first)
    assert s.ask(5) == []  # phase 2 waits for phase 1's winner
    for c in first[:-1]:
        s.tell(c, timing(c))
    assert s.ask(5) == [] and not s.exhausted
    s.tell(first[-1], timing(first[-1]))
    second = s.ask(100)
    # Phase 2: the winner (TN=128, STAGES=5) with the other valid switch combinations.
    assert all((c["TN"], c["STAGES"]) == (128, 5) for c in second)
    assert {(c["SNAKE"], c["VEC"]) for c in second} == {(True, "uint4"), (False, "uint2"), (True, "uint2")}
    assert all(s.phase_of(c) == "tier2" for c in second)
    for c in second:
        s.tell(c, timing(c))
    assert s.ask(1) == [] and s.exhausted
    assert s.best[0] == {"TN": 128, "STAGES": 5, "SNAKE": True, "VEC": "uint4"}


def test_phased_winner_ignores_failures(tiered_space):
    s = make_strategy("phased", tiered_space)
    first = s.ask(100)
    for c in first:
        s.tell(c, None if c["STAGES"] == 5 else timing(c))  # the would-be winner fails
    assert all((c["TN"], c["STAGES"]) == (128, 4) for c in s.ask(100))


def test_strategies_search_a_constrained_space(tiered_space):
    for name in STRATEGIES:
        s = make_strategy(name, tiered_space, seed=0, budget_hint=4)
        budget = Budget(max_evals=4)
        while not budget.exhausted() and not s.exhausted:
            configs = s.ask(2)
            if not configs:
                break
            for c in configs:
                assert c in tiered_space
                s.tell(c, timing(c))
                budget.record(timing(c))
        assert budget.evals == 4 or s.exhausted


def test_auto_uses_grid_only_when_the_budget_covers_the_space(space):
    assert make_strategy("auto", space, budget_hint=len(space)).chosen == "grid"
    assert make_strategy("auto", space, budget_hint=len(space) - 1).chosen == "surrogate"
    assert make_strategy("auto", space).chosen == "surrogate"



def test_auto_under_a_time_limit_or_patience_searches_by_promise_even_with_a_budget_covering_the_space(space):
    """`run --max-evals N --time-limit T` with N at least the space's size ran a grid that the
    time limit cut short: the space's first configs in spec order (the review's finding)."""
    from ksweep.sweep.driver import _strategy

    assert _strategy("auto", space, 0, len(space), unbounded=True).chosen == "grid"
    assert _strategy("auto", space, 0, None, unbounded=True).chosen == "grid"
    assert _strategy("auto", space, 0, len(space), unbounded=False).chosen == "surrogate"


def test_budget_patience_and_failures_count():
    b = Budget(max_evals=10, patience=3)
    for v in (5.0, None, 4.0, None, None):
        b.record(v)
    assert b.evals == 5 and not b.exhausted()
    b.record(4.5)
    assert b.exhausted()  # three evaluations without improvement


# -- the pieces of the surrogate -------------------------------------------------------


def test_norm_cdf_matches_erf():
    z = np.linspace(-8, 8, 161)
    exact = np.array([0.5 * math.erfc(-x / math.sqrt(2)) for x in z])
    assert np.allclose(norm_cdf(z), exact, rtol=2e-7, atol=0)


def test_gp_gradient_and_fit():
    rng = np.random.default_rng(0)
    x = rng.random((30, 3))
    y = np.sin(6 * x[:, 0]) + 0.1 * x[:, 1]
    y = (y - y.mean()) / y.std()
    gp = GaussianProcess(3)
    theta = gp.theta + rng.normal(0, 0.3, len(gp.theta))
    value, grad = gp.log_posterior(theta, x, y)
    eps = 1e-5
    numeric = [(gp.log_posterior(theta + eps * e, x, y)[0] - gp.log_posterior(theta - eps * e, x, y)[0]) / (2 * eps)
               for e in np.eye(len(theta))]
    assert np.allclose(grad, numeric, rtol=1e-4, atol=1e-6)
    before = gp.log_posterior(gp.theta, x, y)[0]
    gp.fit(x, y, steps=40)
    assert gp.log_posterior(gp.theta, x, y)[0] > before
    # The irrelevant third feature gets the longest length scale.
    assert np.argmax(gp.length_scales) == 2
    gp.condition(x, y)
    mean, sd = gp.predict(x)
    assert np.abs(mean - y).max() < 0.3 and (sd < 0.5).all()
    ei = expected_improvement(np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.1, 1.0]), best=0.0)
    assert ei[0] > ei[1] > 0 and ei[0] > ei[2]


def test_features_log_rank_and_power_of_two_flags():
    from ksweep.strategies.features import Featurizer

    params = (Param("BX", (16, 32, 48, 64)), Param("VEC", ("uint4", "uint2")), Param("ONE", (7,)),
              Param("TILE", (4, 1, 2)))
    f = Featurizer(params)
    rows = np.array([[0, 0, 0, 1], [1, 1, 0, 2], [3, 0, 0, 0]])
    x = f(rows)
    # BX: log2 scaled (16 -> 0, 32 -> 0.5, 64 -> 1); VEC: its rank; ONE: nothing; TILE: log2
    # of the value (listed unsorted); then BX's power-of-two flag (48 is not one; TILE has none).
    assert x.shape == (3, 4)
    assert np.allclose(x[:, 0], [0.0, 0.5, 1.0])
    assert np.allclose(x[:, 1], [0.0, 1.0, 0.0])
    assert np.allclose(x[:, 2], [0.0, 0.5, 1.0])
    assert np.allclose(Featurizer(params)(np.array([[2, 0, 0, 0]]))[0, 3], 0.0)
    assert np.allclose(x[:, 3], [1.0, 1.0, 1.0])
    assert np.allclose(Featurizer(params, "rank")(rows)[:, 0], [0.0, 1 / 3, 1.0])


def test_indexed_space_neighbours_and_ball(tiered_space):
    ix = IndexedSpace(tiered_space)
    full = ix.rows
    assert full is not None and len(full) == len(tiered_space)
    lazy = IndexedSpace(tiered_space, full_limit=0)
    assert lazy.rows is None
    rng = np.random.default_rng(0)
    for i in range(len(tiered_space)):
        row = full[i]
        assert sorted(ix.neighbours(row)) == sorted(lazy.neighbours(row))
        assert sorted(ix.ball(row, 2, rng)) == sorted(lazy.ball(row, 2, rng))
        assert i not in set(ix.ball(row, 2, rng))
    taken = {0, 1, 2}
    near = ix.nearest(full[0], taken, rng)
    assert near not in taken and lazy.nearest(full[0], taken, rng) not in taken


@pytest.mark.skipif(not (DATASETS / "pnpoly_RTX3090.json.gz").exists(), reason="shared datasets not present")
@pytest.mark.parametrize("name", STRATEGIES)
def test_conformance_on_a_recorded_dataset(name):
    space = ReplaySpace(load_dataset(DATASETS / "pnpoly_RTX3090.json.gz"))
    a = run(name, space, 60, seed=3, batch=4)[1]
    b = run(name, space, 60, seed=3, batch=4)[1]
    assert a.positions == b.positions and len(set(a.positions)) == 60
