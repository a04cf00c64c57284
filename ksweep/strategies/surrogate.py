"""Model-based search: a Gaussian-process surrogate of the times, failure-aware.

After a random warm start, a Gaussian process (GP) is fitted to the log of the times
seen so far, and each proposal is the best candidate by the GP, weighted by the
estimated chance that it does not fail:

- *Features* (``features.py``): log2 of positive numeric values (else their rank), so
  ordered parameters are smooth, and power-of-two flags.
- *Two kinds of step*: a third of the steps are global and pick the candidate with the
  largest expected improvement (EI) among configs drawn from the whole space (all of it
  when little is left); two thirds are local and pick, among the configs that differ from
  the best so far in at most two parameters (each changed to any value), the one with the
  best Thompson sample (a draw from the GP posterior). EI alone over-explores the edges
  of a rugged space once it has found a good region, and EI within a small region keeps
  choosing the same kind of config; random draws from the posterior search the region
  through, in proportion to the chance that each config is better.
- *Failures* (hidden constraints) are not fed to the time model as fake times. A second
  GP, fitted to the failed/succeeded indicator of every config tried, estimates the
  chance of failure (its own length scales learn where the boundary of the failing region
  lies); scores are multiplied by the chance of success, and configs more likely to fail
  than not come after all others.
- *Batches*: configs asked before earlier ones are told are chosen with the pending ones
  as fantasies at their predicted mean ("kriging believer"), so a batch spreads out.

- *Warm start* (a ``prior``: earlier results of the kernel, ``warm/prior.py``): configs chosen
  from the sources replace the random start (their best, then the switches tried each
  way), and the model is of the target's log-time as ``a + b * p_k(x) + c[switches] +
  residual``, where ``p_k`` is what a source says (``warm/transfer.py``), ``b`` and ``c`` (an
  offset per combination of the switches' values: a code path may pay on one GPU only) are
  fitted to the target's results, and the components ``k`` are weighed by how well each
  explains them. Without a prior nothing here changes: the same seed makes the same
  proposals as before warm start existed.
- *A misleading source* is judged by the rank correlation of what it says with what the
  target measured (Spearman, the best of its components: does the source order the
  target's configs as the target does?), at each result from the third (the fewest a rank
  correlation orders) to the ``judge_after``-th. The bar rises with the evidence: while the
  seeds are measured only a correlation below ``judge_seeds_below`` (the source's best
  configs come out in reverse order) condemns it; after them the bar rises in equal steps
  with each result to ``misleading_below`` at ``judge_after``. So a source that is right on
  its seeds and wrong on what follows is dropped when it shows, not some results later. A
  misleading source is dropped and the search goes on as a cold search of the same seed starts
  (``fell_back``): the cold search's whole random start (``initial`` configs),
  then the model of the results measured since. A warm search that falls back after k
  results is so a cold search delayed by k evaluations. The results the source chose are
  still results (the best of them stays the best until beaten), but the model leaves them
  out: they would hold the search where the source pointed (with them, the A100
  convolution ends 0.70 after 50 evaluations against 0.83 cold).

The settings were chosen on five recorded datasets (docs/benchmarks.md); each choice was
the same with any one of the five left out. The judgement's thresholds were read off the
correlations on the 14 pairs of recorded GPUs, and measured there (docs/benchmarks.md, "A
misleading source dropped", which lists the alternatives tried); the judgement at each result
between them adds no setting (the bar runs straight from one threshold to the other). Chosen
with each kernel held out (bench/warm_holdout.py), they meet the target on the held-out pairs.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..warm.prior import Prior, seed_configs, switch_names
from .base import SearchSpace, Strategy
from .features import Featurizer
from .gp import GaussianProcess, expected_improvement
from .indexed import IndexedSpace

MAX_FAILURE = 0.5  # candidates more likely than this to fail come after all others
EAGER_FAILURES = 20  # refit the failure model at each failure up to this many
RANKED = 3  # results a source is judged on at the least: fewer are in any order by chance


@dataclass(frozen=True)
class SurrogateSettings:
    initial: int = 10  # random configs before the model takes over
    refit_every: int = 5  # new results between hyper-parameter fits
    fit_steps: int = 20  # Adam steps per fit
    pool: int = 2000  # random candidates of a global step in a large space
    full_limit: int = 2500  # score every remaining config when there are at most this many
    top: int = 5  # best configs whose neighbours join a global step's candidates
    carry: int = 200  # best-scored candidates of one step kept for the next
    local_share: float = 0.67  # fraction of model steps that are local (spread evenly)
    radius: int = 2  # parameters a local step may change
    centres: int = 1  # a local step searches around this many of the best configs
    local_sampling: float = 1.0  # fraction of local steps by Thompson sampling instead of EI
    max_points: int = 400  # results the models are fitted to (the best half, the rest spread)
    scale: str = "log"  # numeric features: "log" (log2 of positive values, else rank) or "rank"
    # warm start (a prior: docs/strategies.md#warm-start); none of these matters without one
    warm_seeds: int = 5  # the sources' best configs, mapped into the space, evaluated first
    warm_diverse: bool = True  # the seeds cover the combinations of the switches first (prior.seed_configs)
    warm_flips: bool = True  # ... starting with the best config with one switch changed at a time
    warm_random: int = 0  # random configs after them, before the model takes over
    prior_weight: float = 2.0  # the slope of target on source is shrunk to 1 by this many pseudo-results
    residual_floor: float = 0.1  # the residual sd is at least this share of the source's spread
    prior_pool: int = 200  # configs with the best prior that join a global step's candidates
    warm_centres: int = 1  # with a prior, a local step searches around this many of the best configs
    switch_offsets: bool = True  # the target's own offset per combination of the switches' values
    offset_weight: float = 1.0  # each offset is shrunk to 0 by this many pseudo-results
    warm_explore: float = 1.0  # share of a warm search's global steps that ignore the prior ...
    explore_after: int = 20  # ... once it has this many results
    prior_switches: bool = True  # each source also as a component without its switches (transfer.TransferMean)
    judge_seeds_below: float = -0.5  # while the seeds are measured: misleading below this rank correlation
    judge_after: int = 10  # the source is judged at each result up to this one (0: never judged) ...
    misleading_below: float = 0.1  # ... where the bar has risen to this (in equal steps from the seeds)


class SurrogateStrategy(Strategy):
    name = "surrogate"

    def __init__(self, space: SearchSpace, seed: int = 0, settings: SurrogateSettings = SurrogateSettings(),
                 prior: Prior | None = None):
        super().__init__(space, seed)
        self.settings = settings
        self._ix = IndexedSpace(space)
        self._featurize = Featurizer(self._ix.params, settings.scale)
        self._gp = GaussianProcess(self._featurize.dims)
        self._fail_gp = GaussianProcess(self._featurize.dims)
        self._rng = np.random.default_rng(seed)
        self._all = self._featurize(self._ix.rows) if self._ix.enumerated else None
        self._taken = np.zeros(self._ix.size, dtype=bool) if self._ix.enumerated else None
        self._taken_set: set[int] = set()
        self._told: list[int] = []
        self._values: list[float] = []  # NaN for a failed config
        self._pending: dict[int, None] = {}
        self._fitted_at = -1
        self._failures_fitted = 0
        self._steps = 0
        self._locals = 0
        self._carry = self._ix.positions([])
        self._warm = self._ix.sample_positions(self._rng, settings.initial, set())
        self._cold_start = self._warm  # a cold search's random start, what a fallback starts from
        self._initial = settings.initial
        self.fell_back = False  # the source was judged misleading: the search went on cold
        self.judged: tuple[int, float] | None = None  # (results, rank correlation) of the last judgement
        self._fell_at = 0  # the results told before the fallback
        self.prior = prior if prior else None
        switches = set(switch_names(self._ix.params)) if self.prior is not None else set()
        self._switch_cols = [j for j, p in enumerate(self._ix.params) if p.name in switches]
        self._switch_radix = np.cumprod([1] + [int(self._ix.levels[j]) for j in self._switch_cols])[:-1]
        self._cold_gp = GaussianProcess(self._featurize.dims)  # a warm search's steps that ignore the prior
        self._globals = 0
        self._transfer = None  # made at the first model step (TransferMean), False when it says nothing
        self._prior_all: np.ndarray | None = None
        seeds = seed_configs(self.prior, self._ix.params, space.__contains__, settings.warm_seeds,
                             settings.warm_diverse, settings.warm_flips) \
            if self.prior is not None else []
        if seeds:  # else the random start of a cold search (the prior may still inform the model)
            seeded = self._ix.positions([self._ix.position(c) for c in seeds])
            rest = self._ix.sample_positions(self._rng, settings.warm_random, set(map(int, seeded)))
            self._warm = np.concatenate([seeded, rest]).astype(self._ix.pos_dtype)
            self._initial = len(self._warm)
        # the source is judged at each result from the third (the fewest that a rank
        # correlation orders) to the judge_after-th (none: never judged; see _bar)
        self._judging = self.prior is not None and settings.judge_after > 0
        self._seeded = min(len(seeds), settings.judge_after)

    @property
    def warm_dropped(self) -> str | None:
        if not self.fell_back:
            return None
        n, rho = self.judged
        return (f"the sources misled the search: what they say ranks the first {n} results with a rank "
                f"correlation of {rho:.2f}; it went on cold")

    # -- the ask/tell plumbing ----------------------------------------------------

    def _propose(self, n: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            if len(self._taken_set) >= self._ix.size:
                break
            with _one_blas_thread():
                pos = self._next()
            self._take(pos)
            self._pending[pos] = None
            out.append(self._ix.config(pos))
        return out

    def tell(self, config: Mapping[str, Any], value: float | None) -> None:
        super().tell(config, value)
        pos = self._ix.position(config)
        self._pending.pop(pos, None)
        if pos not in self._taken_set:  # told about a config it did not propose
            self._take(pos)
        self._told.append(pos)
        self._values.append(np.nan if value is None else float(value))

    def _take(self, pos: int) -> None:
        self._taken_set.add(pos)
        if self._taken is not None:
            self._taken[pos] = True

    # -- choosing the next config -------------------------------------------------

    def _next(self) -> int:
        s = self.settings
        if self._judging:
            self._judge()
        since = self._fell_at if self.fell_back else 0
        values = np.array(self._values[since:])
        ok = ~np.isnan(values)
        started = len(self._told) + len(self._pending)
        if started < self._initial or ok.sum() < 2:
            return self._random()
        told = self._ix.positions(self._told[since:])
        if len(told) > s.max_points:
            # A GP costs O(n^3): past a few hundred results keep the best half and a spread
            # of the rest, which is what the next proposals depend on.
            keep = _subset(values, s.max_points)
            told, values, ok = told[keep], values[keep], ok[keep]
        x_ok = self._features(told[ok])
        base = None
        if self.prior is not None and not self.fell_back and self._transfer_ready(values[ok]):
            y_ok, base = self._transfer_fit(told[ok], values[ok])
        else:
            y_ok = self._transform(values[ok])
        refit = self._fitted_at < 0 or len(told) - self._fitted_at >= s.refit_every
        if refit:
            self._gp.fit(x_ok, y_ok, steps=s.fit_steps)
            self._fitted_at = len(told)
        failed = ~ok
        if failed.any():
            x_all = self._features(told)
            label = failed.astype(float) - failed.mean()
            # Refit on each of the first failures too: the boundary of a failing region is
            # learnt from few failures, and each one moves it.
            new_failure = failed.sum() != self._failures_fitted and failed.sum() <= EAGER_FAILURES
            if refit or new_failure:
                self._fail_gp.fit(x_all, label / (label.std() + 1e-12), steps=s.fit_steps)
                self._failures_fitted = int(failed.sum())
            self._fail_gp.condition(x_all, label)
            self._fail_mean = float(failed.mean())
        self._gp.condition(x_ok, y_ok)
        best_y = float(y_ok.min()) if base is None else float((y_ok + base(told[ok])).min())
        if self._pending:
            pend = self._ix.positions(list(self._pending))
            x_pend = self._features(pend)
            self._gp.condition(np.vstack([x_ok, x_pend]), np.concatenate([y_ok, self._gp.predict(x_pend)[0]]))
        self._steps += 1
        local = int(self._steps * s.local_share) > int((self._steps - 1) * s.local_share)
        rank_y = y_ok if base is None else y_ok + base(told[ok])
        centres = s.centres if base is None else s.warm_centres
        cand = self._local_candidates(told[ok][np.argsort(rank_y)[:centres]]) if local else None
        gp = self._gp
        if base is not None and cand is None and len(told) >= s.explore_after and self._explore_turn():
            # Past its first results, a warm search takes its global steps from the target's
            # own results alone: a prior cannot be proved wrong where the search never goes,
            # and a plateau it points to holds a search that follows it (local steps still do).
            y_ok = self._transform(values[ok])
            self._cold_gp.fit(x_ok, y_ok, steps=s.fit_steps)
            self._cold_gp.condition(x_ok, y_ok)
            gp, base, best_y, rank_y = self._cold_gp, None, float(y_ok.min()), y_ok
        if cand is None or not len(cand):
            cand = self._global_candidates(told[ok][np.argsort(rank_y)[: s.top]], base)
        if not len(cand):
            return self._random()
        x = self._features(cand)
        mean, sd = gp.predict(x)
        if base is not None:
            mean = mean + base(cand)
        self._locals += local
        sample = local and int(self._locals * s.local_sampling) > int((self._locals - 1) * s.local_sampling)
        if sample:
            # exp(-draw): positive like EI, so the failure weighting below applies alike.
            score = np.exp(-(mean + sd * self._rng.standard_normal(len(mean))))
        else:
            score = expected_improvement(mean, sd, best_y)
        if failed.any():
            p_fail = np.clip(self._fail_gp.predict(x)[0] + self._fail_mean, 0.0, 1.0)
            score = score * (1.0 - p_fail)
            # Once little improvement is expected anywhere, EI x P(success) can still favour
            # an unexplored region that is almost sure to fail: try likely failures last.
            score = np.where(p_fail < MAX_FAILURE, score, score - score.max() - 1.0)
        order = np.argsort(-score, kind="stable")
        self._carry = cand[order[: s.carry]]
        return int(cand[order[0]])

    def _transform(self, v: np.ndarray) -> np.ndarray:
        # Times spread over orders of magnitude: model their log (when all are positive;
        # the driver negates a maximised metric).
        y = np.log(v) if (v > 0).all() else v
        return (y - y.mean()) / (y.std() + 1e-12)

    # -- warm start: the sources' results as the prior mean of the model -----------------

    def _judge(self) -> None:
        """Judge the source by its components' rank correlation with the target's results so
        far (the best component's), at each new result from the third to the judge_after-th;
        below the bar (``_bar``) it is dropped, and the search goes on as a cold search of the
        same seed would start: its whole random start, then the model of the results measured
        since."""
        from ..warm.transfer import rank_correlation

        n = len(self._told)
        values = np.array(self._values)
        ok = ~np.isnan(values)
        if ok.sum() < RANKED or (self.judged is not None and self.judged[0] >= n) \
                or (not self._seeded and n < self.settings.judge_after) or not self._transfer_ready(values[ok]):
            return
        self._judging = n < self.settings.judge_after  # the last judgement: the bar at its full height
        p = self._prior_at(self._ix.positions(self._told)[ok])
        rho = max((rank_correlation(p[:, k], values[ok]) for k in range(p.shape[1])), default=0.0)
        self.judged = (n, rho)
        if rho >= self._bar(n):
            return
        self.fell_back, self._judging = True, False
        self._fell_at = n
        started = n + len(self._pending)
        self._warm = self._free(self._ix.positions(self._cold_start))
        self._initial = started + len(self._warm)
        self._fitted_at = -1  # the model is of another kind now: fitted afresh

    def _bar(self, n: int) -> float:
        """The least rank correlation a source may show after ``n`` results: judge_seeds_below
        while its seeds are measured (only their order reversed condemns it), then rising in
        equal steps with each result to misleading_below at judge_after (and from there on)."""
        s = self.settings
        if n >= s.judge_after or not self._seeded or self._seeded >= s.judge_after:
            return s.misleading_below
        share = max(n - self._seeded, 0) / (s.judge_after - self._seeded)
        return s.judge_seeds_below + share * (s.misleading_below - s.judge_seeds_below)

    def _explore_turn(self) -> bool:
        """Whether this global step of a warm search is one that ignores the prior."""
        share = self.settings.warm_explore
        self._globals += 1
        return share > 0 and int(self._globals * share) > int((self._globals - 1) * share)

    def _transfer_ready(self, values: np.ndarray) -> bool:
        if self._transfer is None:
            from ..warm.transfer import TransferMean

            self._log = bool((values > 0).all())
            switches = [self._ix.params[j].name for j in self._switch_cols] if self.settings.prior_switches else []
            self._transfer = TransferMean(self.prior, self._ix.params, self._log, switches) or False
            if self._transfer and self._ix.enumerated:
                self._prior_all = self._transfer(self._ix.rows)
        return bool(self._transfer) and bool((values > 0).all()) == self._log

    def _prior_at(self, positions: np.ndarray) -> np.ndarray:
        if self._prior_all is not None:
            return self._prior_all[positions]
        return self._transfer(self._ix.rows_of(positions))

    def _transfer_fit(self, positions: np.ndarray, values: np.ndarray):
        """The model of y (the log of the times) = a + b * prior_k + c[switches] + residual,
        for each component k of the prior (``warm/transfer.py``): by least squares, b shrunk
        towards 1 (the same ratios as the source) and kept in [0, 2], c an offset per combination of
        the switches' values shrunk towards 0. The components' fits are averaged, each
        weighed by how well it explains the results (its prior probability times the profile
        likelihood SSE^(-n/2)). Returns the residuals
        scaled for the GP, and the rest on the same scale as a function of positions (offset
        so that the best result is at 0)."""
        s = self.settings
        y = np.log(values) if self._log else values
        p = self._prior_at(positions)
        k = p.shape[1]
        z, levels = self._switch_design(positions)
        spreads = self._transfer.spreads
        # Bayesian model averaging: a source that ranks the target's results well takes over
        # from one that does not, whichever of them came first.
        log_prior = np.log(1.0 / k)  # the components equally likely a priori
        thetas, logw = [], []
        x = np.column_stack([np.ones(len(y)), p, z])
        for j in range(k):
            t = self._linear(y, p, spreads, z, np.eye(k, dtype=bool)[j])
            sse = max(float(((y - x @ t) ** 2).sum()), 1e-12 * len(y))
            thetas.append(t)
            logw.append(log_prior - 0.5 * len(y) * np.log(sse))
        w = np.exp(np.array(logw) - max(logw))
        w /= w.sum()
        theta = np.array(thetas).T @ w
        a, b, c = float(theta[0]), theta[1:k + 1], theta[k + 1:]
        r = y - x @ theta
        sigma = max(float(r.std()), s.residual_floor * float(b @ spreads), 1e-12)
        offset = float(y.min())

        def base(pos: np.ndarray) -> np.ndarray:
            zz, _ = self._switch_design(pos, levels)
            return (a + self._prior_at(pos) @ b + zz @ c - offset) / sigma

        return r / sigma, base

    def _linear(self, y, p, spreads, z, used) -> np.ndarray:
        """(a, b_1..b_K, c...) of y = a + sum of the ``used`` components' b_k * prior_k + z c:
        ridge, the slopes shrunk towards 1 (the source's ratios) and kept in [0, 2], the others 0."""
        s = self.settings
        k = p.shape[1]
        x = np.column_stack([np.ones(len(y)), p[:, used], z])
        penalty = np.concatenate([[0.0], s.prior_weight * spreads[used] ** 2, np.full(z.shape[1], s.offset_weight)])
        target = np.concatenate([[0.0], np.full(used.sum(), 1.0), np.zeros(z.shape[1])])
        theta = _ridge(x, y, penalty, target)
        m = int(used.sum())
        slopes = np.clip(theta[1:m + 1], 0.0, 2.0) if s.prior_weight > 0 else np.zeros(m)
        if (slopes != theta[1:m + 1]).any():
            free = np.r_[0, np.arange(m + 1, x.shape[1])]
            theta[free] = _ridge(x[:, free], y - p[:, used] @ slopes, penalty[free], target[free])
            theta[1:m + 1] = slopes
        out = np.zeros(1 + k + z.shape[1])
        out[0] = theta[0]
        out[1:k + 1][used] = theta[1:m + 1]
        out[k + 1:] = theta[m + 1:]
        return out

    def _switch_design(self, positions: np.ndarray, levels=None):
        """Indicator columns of the combination of the switches' values at ``positions``: one
        per combination in ``levels`` (their codes; when None, those at ``positions``). None
        without switches, or without ``switch_offsets``."""
        if not self.settings.switch_offsets or not len(self._switch_cols):
            return np.zeros((len(positions), 0)), ()
        codes = self._ix.rows_of(positions)[:, self._switch_cols].astype(np.int64) @ self._switch_radix
        if levels is None:
            levels = np.unique(codes)
        return (codes[:, None] == np.asarray(levels)[None, :]).astype(float), levels

    def _features(self, positions: np.ndarray) -> np.ndarray:
        if self._all is not None:
            return self._all[positions]
        return self._featurize(self._ix.rows_of(positions))

    def _free(self, positions: np.ndarray) -> np.ndarray:
        if self._taken is not None:
            return positions[~self._taken[positions]]
        return self._ix.positions([p for p in positions if int(p) not in self._taken_set])

    def _random(self) -> int:
        fresh = self._free(self._ix.positions(self._warm))
        if len(fresh):
            return int(fresh[0])
        return int(self._ix.sample_positions(self._rng, 1, self._taken_set)[0])

    def _global_candidates(self, best: np.ndarray, base=None) -> np.ndarray:
        s = self.settings
        free_count = self._ix.size - len(self._taken_set)
        if self._taken is not None and free_count <= s.full_limit:
            return np.flatnonzero(~self._taken)
        if self._taken is not None:
            free = np.flatnonzero(~self._taken)
            sample = free[self._rng.choice(len(free), size=min(s.pool, len(free)), replace=False)]
        else:
            sample = self._ix.sample_positions(self._rng, s.pool, self._taken_set)
        parts = [sample, self._free(self._carry)]
        rows = self._ix.rows_of(best)
        parts += [self._free(self._ix.neighbours(r)) for r in rows]
        if base is not None and self._taken is not None:  # the best untried configs by the fitted prior
            free = np.flatnonzero(~self._taken)
            parts.append(free[np.argsort(base(free), kind="stable")[: s.prior_pool]])
        return np.unique(np.concatenate(parts).astype(self._ix.pos_dtype))

    def _local_candidates(self, centres: np.ndarray) -> np.ndarray:
        balls = [self._ix.ball(row, self.settings.radius, self._rng) for row in self._ix.rows_of(centres)]
        return self._free(np.unique(np.concatenate(balls)))


def _ridge(x: np.ndarray, y: np.ndarray, penalty: np.ndarray, target: np.ndarray) -> np.ndarray:
    """argmin |y - x theta|^2 + sum(penalty * (theta - target)^2)."""
    a = x.T @ x + np.diag(penalty)
    return np.linalg.lstsq(a, x.T @ y + penalty * target, rcond=None)[0]


def _subset(values: np.ndarray, n: int) -> np.ndarray:
    """Indices of ``n`` results: the best n/2 valid ones, and every k-th of the others."""
    order = np.argsort(np.where(np.isnan(values), np.inf, values), kind="stable")
    best, rest = order[: n // 2], np.sort(order[n // 2 :])
    step = len(rest) / (n - len(best))
    return np.sort(np.concatenate([best, rest[(np.arange(n - len(best)) * step).astype(int)]]))


@functools.lru_cache(maxsize=1)
def _blas_controller():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def _one_blas_thread():
    """The models' matrices are a few hundred rows: BLAS threads gain nothing there, and
    cost tenfold when the cores are busy (builds running ahead, other searches). Limited
    with threadpoolctl when it is installed (it is optional)."""
    controller = _blas_controller()
    return contextlib.nullcontext() if controller is None else controller.limit(limits=1, user_api="blas")
