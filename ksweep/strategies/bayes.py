"""Bayesian optimisation with optuna's TPE sampler, learning failures as constraints.

Each parameter is sampled by the index of its value: an ordered integer for numeric
parameters (so TPE sees that 64 lies between 32 and 128), a category otherwise. A sample
that is not a valid config of the space (a known constraint) or was already proposed is
replaced by the nearest valid config not yet proposed; the sampler is then told about the
config actually evaluated (through optuna's enqueue), never about the rejected sample.

A config that failed to build or run is reported as a *constraint violation*
(``Trial.set_constraint``, which replaced the sampler's ``constraints_func`` in optuna 5):
TPE ranks such trials below every feasible one and so learns to steer away from them. It is
not reported as a failed trial (optuna's samplers ignore those) nor as a huge fake time
(which would distort the model of the times).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import require
from .base import SearchSpace, Strategy, config_key
from .indexed import IndexedSpace, value_ranks

FAILED = "failed"  # the constraint: 1.0 (violated) for a failed config, -1.0 otherwise


@dataclass(frozen=True)
class BayesSettings:
    # Independent TPE: on the recorded datasets the multivariate one stalled sooner (mean
    # ratio at 200 evaluations 0.87-0.89 against 0.95-0.98 on convolution W7800 and gemm).
    multivariate: bool = False
    startup: int = 10  # random trials before TPE takes over


class BayesStrategy(Strategy):
    name = "bayes"

    def __init__(self, space: SearchSpace, seed: int = 0, settings: BayesSettings = BayesSettings()):
        super().__init__(space, seed)
        self.settings = settings
        optuna = require("optuna", "bayes", "the 'bayes' strategy")
        self._optuna = optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._ix = IndexedSpace(space)
        self._rng = np.random.default_rng(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(
                seed=seed, multivariate=settings.multivariate, n_startup_trials=settings.startup)
        self._study = optuna.create_study(direction="minimize", sampler=sampler)
        self._dists = {}
        for j, p in enumerate(self._ix.params):
            k = len(p.values)
            if k < 2:
                continue
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in p.values)
            # Ranks, not list positions: an unsorted numeric list is still searched in order.
            self._dists[p.name] = (
                optuna.distributions.IntDistribution(0, k - 1) if numeric
                else optuna.distributions.CategoricalDistribution(tuple(range(k)))
            )
        self._rank_to_index = [np.argsort(value_ranks(p.values)) for p in self._ix.params]
        self._index_to_rank = [value_ranks(p.values).astype(int) for p in self._ix.params]
        self._trials: dict[tuple, Any] = {}
        self._proposed_pos: set[int] = set()
        self._worst: float | None = None

    @property
    def study(self):
        """The optuna study (every evaluated config is one of its complete trials)."""
        return self._study

    def _propose(self, n: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            if len(self._proposed_pos) >= self.space_size:
                break
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                trial = self._study.ask(self._dists)
                row = self._row_of(trial.params)
                pos = self._ix.position_of_row(row)
                if pos is None or pos in self._proposed_pos:
                    # Discard the sample; evaluate the nearest fresh valid config instead.
                    self._study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
                    pos = self._ix.nearest(row, self._proposed_pos, self._rng)
                    trial = self._enqueued(pos)
            self._proposed_pos.add(pos)
            config = self._ix.config(pos)
            self._trials[config_key(config, self.space.names)] = trial
            out.append(config)
        return out

    def tell(self, config: Mapping[str, Any], value: float | None) -> None:
        super().tell(config, value)
        trial = self._trials.pop(config_key(config, self.space.names), None)
        if trial is None:  # not proposed by the study (the reference, a warm seed, a stored result)
            trial = self._trial_of(config)
            if trial is None:
                return
        if value is not None:
            self._worst = value if self._worst is None else max(self._worst, value)
        trial.set_constraint(FAILED, -1.0 if value is not None else 1.0)
        # A failed config needs some objective value; TPE ranks infeasible trials by their
        # violation only, so the value is never compared with real times.
        objective = value if value is not None else (self._worst if self._worst is not None else 0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._study.tell(trial, objective)

    def _trial_of(self, config: Mapping[str, Any]):
        """A trial of the study for a config it did not propose (enqueued, then asked), so that
        its result informs the model too; None for a config outside the space."""
        if config not in self.space:
            return None
        pos = self._ix.position(config)
        self._proposed_pos.add(pos)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._enqueued(pos)

    def _enqueued(self, pos: int):
        """A trial of the config at ``pos``, whatever the sampler would have chosen."""
        self._study.enqueue_trial(self._params_of(self._ix.rows_of(np.array([pos]))[0]))
        return self._study.ask(self._dists)

    def _row_of(self, params: Mapping[str, int]) -> np.ndarray:
        row = np.zeros(len(self._ix.params), dtype=np.int32)
        for j, p in enumerate(self._ix.params):
            if p.name in params:
                row[j] = self._rank_to_index[j][params[p.name]]
        return row

    def _params_of(self, row: np.ndarray) -> dict[str, int]:
        return {p.name: int(self._index_to_rank[j][row[j]]) for j, p in enumerate(self._ix.params) if p.name in self._dists}
