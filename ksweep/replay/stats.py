"""The statistics of the strategy benchmark, as pure functions of recorded values.

Protocol: a budget counts distinct configs evaluated, failures included. The *ratio* of a
search is optimum / best valid value found (1.0 = found the optimum, 0.0 = found nothing
valid). *Evals-to-5%* is the number of evaluations after which the best found is within
5% of the optimum (best <= 1.05 * optimum), or None if the search never got there.

Random search (uniform, without replacement) is computed exactly, not simulated: with N
configs of which the valid ones sorted are v_1 <= ... <= v_m, the best of k distinct draws
is v_j with probability C(N-j, k-1) / C(N, k) (v_j drawn, v_1..v_{j-1} not).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

TOLERANCE = 0.05


def best_so_far(values: np.ndarray) -> np.ndarray:
    """Best valid value after each evaluation (inf until the first valid one)."""
    return np.minimum.accumulate(np.where(np.isnan(values), np.inf, values)) if len(values) else np.zeros(0)


def ratio_curve(values: np.ndarray, optimum: float) -> np.ndarray:
    """optimum / best found after each evaluation (0 while nothing valid was found)."""
    return optimum / best_so_far(values)


def evals_to_within(values: np.ndarray, optimum: float, tolerance: float = TOLERANCE) -> int | None:
    """Evaluations until the best found is within ``tolerance`` of the optimum."""
    hit = np.flatnonzero(best_so_far(values) <= optimum * (1 + tolerance))
    return int(hit[0]) + 1 if len(hit) else None


def median_evals(evals: Sequence[int | None]) -> float | None:
    """Median of evals-to-5% over repeats, a repeat that never got there counting as infinite.

    None when at least half the repeats never got there (the median is then infinite)."""
    if not evals:
        return None
    m = float(np.median([math.inf if e is None else e for e in evals]))
    return None if math.isinf(m) else m


@dataclass(frozen=True)
class Summary:
    """One strategy on one dataset at one budget, over its repeats."""

    mean_ratio: float
    median_ratio: float
    median_evals_to_5pct: float | None
    reached_5pct: float  # repeats that got within 5% (expected count for exact random)
    repeats: int


def summarise(ratios: Sequence[float], evals: Sequence[int | None], budget: int) -> Summary:
    """Summarise repeats; evals-to-5% beyond the budget count as not reached."""
    within = [e if e is not None and e <= budget else None for e in evals]
    return Summary(
        mean_ratio=float(np.mean(ratios)),
        median_ratio=float(np.median(ratios)),
        median_evals_to_5pct=median_evals(within),
        reached_5pct=float(sum(e is not None for e in within)),
        repeats=len(ratios),
    )


def _none_drawn(n: int, bad: int, k: np.ndarray | int) -> np.ndarray:
    """P(k distinct draws from n all miss the n - bad others) = C(bad, k) / C(n, k)."""
    k = np.atleast_1d(np.asarray(k))
    i = np.arange(int(k.max()) if len(k) else 0)
    factors = np.clip((bad - i) / (n - i), 0.0, None)
    cum = np.concatenate([[1.0], np.cumprod(factors)])
    return cum[k]


def random_best_distribution(values: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact distribution of the ratio of random search after ``k`` distinct evaluations.

    Returns (ratios, probabilities): ratio v_1/v_j with its probability for each valid
    value in ascending order, then 0.0 with the probability that no valid config was drawn.
    """
    n = len(values)
    valid = np.sort(values[~np.isnan(values)])
    k = min(k, n)
    m = len(valid)
    # P_1 = k/n, and P_{j+1}/P_j = C(n-j-1, k-1) / C(n-j, k-1) = (n-j-k+1) / (n-j).
    j = np.arange(1, m)
    steps = np.clip((n - j - k + 1) / (n - j), 0.0, None)
    p = (k / n) * np.concatenate([[1.0], np.cumprod(steps)]) if k >= 1 else np.zeros(m)
    p_none = float(_none_drawn(n, n - m, k)[0])
    ratios = np.append(valid[0] / valid, 0.0)
    return ratios, np.append(p, p_none)


def random_expectation(values: np.ndarray, k: int, tolerance: float = TOLERANCE) -> Summary:
    """What random search without replacement achieves with budget ``k``, exactly.

    ``reached_5pct`` is the probability of getting within tolerance in ``k`` evaluations."""
    ratios, probs = random_best_distribution(values, k)
    mean = float(ratios @ probs)
    # Ratios are in descending order: the median is where the cumulative reaches 1/2.
    cum = np.cumsum(probs)
    median = float(ratios[min(int(np.searchsorted(cum, 0.5 - 1e-12)), len(ratios) - 1)])
    p_reach, median_t = random_hitting(values, k, tolerance)
    return Summary(mean_ratio=mean, median_ratio=median, median_evals_to_5pct=median_t,
                   reached_5pct=p_reach, repeats=0)


def random_hitting(values: np.ndarray, k: int, tolerance: float = TOLERANCE) -> tuple[float, float | None]:
    """Probability that random search gets within tolerance in ``k`` evaluations, and the
    median number of evaluations it needs (None if that median is beyond ``k``).

    With G good configs among N, the first good one comes after t draws or later with
    probability P(T > t) = C(N-G, t) / C(N, t)."""
    n = len(values)
    valid = values[~np.isnan(values)]
    good = int((valid <= valid.min() * (1 + tolerance)).sum())
    t = np.arange(0, min(k, n) + 1)
    p_reached = 1.0 - _none_drawn(n, n - good, t)
    p_k = float(p_reached[-1])
    hit = np.flatnonzero(p_reached >= 0.5)
    return p_k, (float(t[hit[0]]) if len(hit) else None)


def random_mean_curve(values: np.ndarray, max_k: int) -> np.ndarray:
    """Expected ratio of random search after 1..max_k evaluations (for plots)."""
    return np.array([random_expectation(values, k).mean_ratio for k in range(1, min(max_k, len(values)) + 1)])
