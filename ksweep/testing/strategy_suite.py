"""The conformance tests every search strategy passes (strategies/base.py's ask/tell
contract), on replayed data: no build, no GPU.

Subclass ``StrategySuite`` in a test module and give it a ``strategy_factory`` fixture, a
function ``(space, seed, budget_hint) -> Strategy``::

    from ksweep.testing.strategy_suite import StrategySuite

    class TestMyStrategy(StrategySuite):
        @pytest.fixture
        def strategy_factory(self):
            return lambda space, seed, budget_hint: MyStrategy(space, seed)
"""

from __future__ import annotations

import functools
import itertools
from typing import Callable

import numpy as np
import pytest

from ..replay import ReplaySpace, Trace, replay
from ..replay.dataset import Dataset
from ..replay.importers import parse_kernel_tuner
from ..strategies.base import Budget, Strategy, config_key

StrategyFactory = Callable[..., Strategy]  # (space, seed, budget_hint) -> Strategy


def synthetic_dataset(fail_region: bool = True, seed: int = 0, name: str = "synthetic",
                      a_values: int = 12) -> Dataset:
    """Three ordered parameters and a flag (``a``, ``b``, ``c``, ``f``), a smooth time with a
    little noise; with ``fail_region`` every config with a >= 9 fails (a hidden constraint
    covering a quarter of the space)."""
    rng = np.random.default_rng(seed)
    cache = {}
    for a, b, c, f in itertools.product(range(a_values), [1, 2, 4, 8, 16], [0, 1, 2], [0, 1]):
        t = 2.0 + 0.1 * (a - 6) ** 2 + abs(np.log2(b) - 2) + 0.3 * c * f + rng.random() * 0.05
        failed = fail_region and a >= 9
        cache[f"{a},{b},{c},{f}"] = {"a": a, "b": b, "c": c, "f": f, "time": "RuntimeFailedConfig" if failed else t}
    return parse_kernel_tuner({"tune_params_keys": ["a", "b", "c", "f"], "cache": cache}, name=name)


def replay_run(factory: StrategyFactory, space: ReplaySpace, budget: int, seed: int = 0,
               batch: int = 1) -> tuple[Strategy, Trace]:
    """A strategy made by ``factory``, and its replayed search of ``space`` within ``budget``
    evaluations, asking ``batch`` configs at a time."""
    s = factory(space, seed, budget)
    return s, replay(s, space, Budget(max_evals=budget), batch=batch)


@functools.lru_cache(maxsize=1)
def _default_space() -> ReplaySpace:
    return ReplaySpace(synthetic_dataset())  # read-only: shared by the tests


class StrategySuite:
    """The ask/tell contract: only valid configs, never one twice, the budget kept, one
    sequence per seed, a small space exhausted exactly once, failures learnt from; a search
    that says it does not learn (``adaptive`` false) proposes the same whatever it is told."""

    @pytest.fixture
    def strategy_factory(self) -> StrategyFactory:
        raise NotImplementedError("give the suite a strategy_factory fixture: (space, seed, budget_hint) -> Strategy")

    @pytest.fixture
    def suite_space(self) -> ReplaySpace:
        return _default_space()

    def test_only_valid_configs_never_twice(self, strategy_factory, suite_space):
        s = strategy_factory(suite_space, 1, 80)
        seen = set()
        for _ in range(20):
            configs = s.ask(4)
            assert configs, "a strategy with nothing pending must propose"
            for c in configs:
                assert c in suite_space
                key = config_key(c, suite_space.names)
                assert key not in seen
                seen.add(key)
            for c in configs:
                i = suite_space.index(c)
                value = suite_space.dataset.values[i]
                s.tell(c, None if np.isnan(value) else float(value))

    def test_budget_respected(self, strategy_factory, suite_space):
        for budget in (1, 7, 50):
            _, trace = replay_run(strategy_factory, suite_space, budget, batch=3)
            assert len(trace) == budget
            assert len(set(trace.positions)) == budget

    def test_deterministic_per_seed(self, strategy_factory, suite_space):
        a = replay_run(strategy_factory, suite_space, 40, seed=5)[1].positions
        b = replay_run(strategy_factory, suite_space, 40, seed=5)[1].positions
        assert a == b

    def test_a_search_that_says_it_does_not_learn_proposes_the_same_whatever_it_is_told(
            self, strategy_factory, suite_space):
        """``adaptive`` false lets the pipeline ask it past results not yet told: what it
        proposes must depend neither on the values told nor on when they are told (asked
        until it has nothing more to say before any tell, or told between asks)."""
        if getattr(strategy_factory(suite_space, 3, 60), "adaptive", True):
            pytest.skip("an adaptive search: asked at most the window ahead of what it was told")
        names = suite_space.names

        def value(c, flip: bool):
            v = suite_space.dataset.values[suite_space.index(c)]
            return None if np.isnan(v) else (-float(v) if flip else float(v))

        ahead, got, untold = strategy_factory(suite_space, 3, 60), [], []
        while len(got) < 30:
            configs = ahead.ask(30 - len(got))
            if not configs:  # it waits for what it asked to be told (a warm start's seeds)
                for c in untold:
                    ahead.tell(c, value(c, False))
                untold = []
                configs = ahead.ask(30 - len(got))
                if not configs:
                    break
            got += [config_key(c, names) for c in configs]
            untold += configs
        told, said = strategy_factory(suite_space, 3, 60), []
        while len(said) < 30:
            configs = told.ask(3)
            if not configs:
                break
            said += [config_key(c, names) for c in configs]
            for c in configs:
                told.tell(c, value(c, True))  # other values, told at once
        assert len(got) == 30 and said[:30] == got

    def test_exhausts_a_small_space_exactly_once(self, strategy_factory):
        small = ReplaySpace(synthetic_dataset(fail_region=False, a_values=3))
        s, trace = replay_run(strategy_factory, small, 10 * len(small), batch=7)
        assert sorted(trace.positions) == list(range(len(small)))
        assert s.ask(3) == []

    def test_failing_region_does_not_stall(self, strategy_factory, suite_space):
        # A quarter of the space fails; the search must go on and find valid configs.
        s, trace = replay_run(strategy_factory, suite_space, 120, seed=2)
        assert len(trace) == 120
        ok = ~np.isnan(trace.values)
        assert ok.sum() >= 30
        assert s.best is not None and s.best[1] == np.nanmin(trace.values)
