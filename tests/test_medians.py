"""Medians and their order-statistic intervals (ksweep/verify/medians.py), on made-up runs."""

import math
import random

import pytest

from ksweep.verify.confirm import Interval
from ksweep.verify.medians import (FEWEST, beyond_noise, confidence, coverage, decide, median_interval, paired,
                                   rank, unpaired)


def test_the_ranks_are_the_binomial_ones():
    # the textbook order statistics of a 95% interval of the median
    assert [rank(n) for n in (6, 8, 9, 10, 20, 30, 50)] == [1, 1, 2, 2, 6, 10, 18]
    assert coverage(6, 1) == pytest.approx(1 - 2 / 64)
    assert coverage(20, 6) == pytest.approx(1 - 2 * 21700 / 2**20)
    assert FEWEST == min(n for n in range(1, 50) if confidence(n) >= 0.95)
    assert [round(confidence(n), 4) for n in (1, 2, 3, 5)] == [0.0, 0.5, 0.75, 0.9375]  # the range: lower
    assert rank(5000) > 2400 and confidence(5000) >= 0.95  # a long history: no overflow


def test_an_outlier_moves_the_interval_by_one_rank_at_most():
    clean = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00, 1.02]
    base = median_interval(clean)
    for outlier in (1.6, 16.0, 1e6):
        iv = median_interval(clean[:-1] + [outlier])
        assert abs(iv.median - base.median) <= 0.01 and iv.hi <= 1.02 and iv.lo >= 0.98
    two = median_interval([1.0, 1.6])  # a t interval of these two goes to -2.5
    assert (two.lo, two.hi, two.n) == (1.0, 1.6, 2)
    assert median_interval([]) is None


def test_an_interval_never_leaves_the_runs_nor_goes_below_zero():
    rng = random.Random(7)
    for _ in range(200):
        xs = [rng.choice([0.0, 1e-9, rng.expovariate(1.0)]) for _ in range(rng.randint(1, 40))]
        iv = median_interval(xs)
        assert 0.0 <= min(xs) <= iv.lo <= iv.median <= iv.hi <= max(xs)


def test_rounds_compare_pair_by_pair_so_a_drift_of_the_machine_cancels():
    # the machine slows down by 40% over the rounds; now is 10% slower than base, every round
    base = [1.0 * (1 + 0.04 * r) for r in range(10)]
    now = [1.1 * (1 + 0.04 * r) for r in range(10)]
    s = paired(base, now, "min")
    assert s.lo == pytest.approx(1 / 1.1) and s.hi == pytest.approx(1 / 1.1) and s.n == 10
    apart = unpaired(median_interval(base), median_interval(now), "min")
    assert apart.lo < 1 / 1.1 < 1.0 < apart.hi  # measured apart, the drift hides the slowdown
    assert (decide(s, 0.05), beyond_noise(s)) == ("REGRESSED", True)
    assert decide(apart, 0.05) is None
    # a failed run (None) or a value that is not positive leaves its round out
    s = paired([1.0, None, 1.0, 0.0], [2.0, 2.0, None, 2.0], "min")
    assert (s.median, s.n) == (0.5, 1) and beyond_noise(s) is None
    assert paired([None], [1.0], "min") is None
    assert paired([2.0, 2.0], [4.0, 4.0], "max").median == 2.0  # a throughput: now / base


def test_a_noisy_unchanged_kernel_is_ok_and_a_2x_slower_one_regressed_once_enough_rounds_ran():
    """Each run: 1.6x slower with a chance of 20%, else within 3%."""
    rng = random.Random(3)

    def run(cost):
        return cost * (1.6 if rng.random() < 0.2 else 1 + rng.uniform(-0.03, 0.03))

    def first_decision(cost_now, most=200):
        base, now = [], []
        for n in range(1, most + 1):
            base.append(run(1.0))
            now.append(run(cost_now))
            verdict = decide(paired(base, now, "min"), 0.05) if n >= FEWEST else None
            if verdict is not None:
                return verdict, n
        return None, most

    slower = [first_decision(2.0) for _ in range(50)]
    same = [first_decision(1.0) for _ in range(50)]
    assert all(v == ("REGRESSED", FEWEST) for v in slower)  # even a slow baseline run is 1.25x below
    assert all(v == "ok" for v, _ in same) and max(n for _, n in same) < 100


def test_unpaired_intervals_are_conservative_and_decide_says_what_they_show():
    base, now = Interval(10.0, 9.0, 11.0, 6), Interval(20.0, 18.0, 22.0, 6)
    s = unpaired(base, now, "min")
    assert (s.median, s.lo, s.hi) == (0.5, 9 / 22, 11 / 18)
    assert unpaired(base, Interval(0.0, 0.0, 1.0, 3), "min").hi == math.inf
    assert unpaired(Interval(1.0, -5.0, 2.0, 3), Interval(1.0, 0.5, 2.0, 3), "min").lo == 0.0  # never below zero
    assert decide(Interval(0.5, 0.4, 0.6, 9), 0.05) == "REGRESSED"
    assert decide(Interval(1.0, 0.96, 1.04, 9), 0.05) == "ok"
    assert decide(Interval(1.0, 0.9, 1.1, 9), 0.05) is None  # can't tell 10% slower from unchanged
    assert decide(Interval(1.3, 1.2, 1.4, 9), 0.05) == "faster"
    assert decide(Interval(1.3, 1.04, 1.4, 9), 0.05) == "ok"  # faster, but maybe not beyond the tolerance
    assert decide(Interval(1.03, 1.01, 1.05, 9), 0.05) == "ok"  # faster, but within the tolerance
    assert decide(Interval(1.0, 1.0, 1.0, 1), 0.0) == "ok"  # --tolerance 0: unchanged is not slower
