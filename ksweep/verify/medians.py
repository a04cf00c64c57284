"""Timings compared by their medians (pure): what ``ksweep check`` and ``ksweep history``
decide with.

A run of a kernel now and then takes far longer than the others (another job on the GPU,
a clock that dropped): a mean, and a t interval of three runs, follow it wherever it goes,
below zero included. A median does not, and its interval here comes from the order
statistics of the runs alone: the ``k``-th smallest and ``k``-th largest of ``n`` values
hold the median of what they were drawn from with probability ``1 - 2 P(B <= k - 1)``,
``B`` binomial(``n``, 1/2), whatever the distribution. ``k`` is the largest that keeps
that at 95% or more; from 6 values on there is one (6: the range, 96.9%; 20: the 6th to
the 15th, 95.9%). With fewer the interval is their range, of lower confidence (3 values:
75%), and the caller is told so by ``Interval.n``. An outlier moves such an interval by
one rank at most, and an interval of values that are not negative never goes below zero.

Two builds measured in interleaved rounds (``ksweep check``: the baseline revision rebuilt
and the current one, one run of each per round) are compared round by round (``paired``):
the speed-up of each round, its median and the order-statistic interval of that median; a
slower machine slows both runs of a round, and the factor stands. Two sides measured apart
(a stored baseline and today's runs; two revisions of the history) are compared by their
own intervals (``unpaired``: interval arithmetic, conservative). ``decide`` says what a
speed-up's interval says of a regression beyond a tolerance, or None while it straddles it.
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence

from .confirm import Interval

LEVEL = 0.95
FEWEST = 6  # the fewest values whose order-statistic interval of the median reaches LEVEL


def coverage(n: int, k: int) -> float:
    """The probability that the ``k``-th smallest and the ``k``-th largest of ``n`` values
    (``k`` from 1) hold the median of their distribution."""
    if n < 1 or not 1 <= k <= (n + 1) // 2:
        return 0.0
    below = sum(math.comb(n, i) for i in range(k))
    return max(0.0, 1.0 - 2.0 * (below / (1 << n)))


def rank(n: int, level: float = LEVEL) -> int:
    """The largest ``k`` (from 1) whose interval ``[x_(k), x_(n+1-k)]`` holds the median with
    probability ``level`` or more; 1 (the range) when even that one does not."""
    # below: how many of the 2^n outcomes have B <= k - 1, B binomial(n, 1/2); term: C(n, k)
    k, below, term, total = 1, 1, n, 1 << max(n, 0)
    while k + 1 <= (n + 1) // 2:
        below += term
        if 1.0 - 2.0 * (below / total) < level:
            break
        term = term * (n - k) // (k + 1)
        k += 1
    return k


def median_interval(values: Sequence[float], level: float = LEVEL) -> Interval | None:
    """The median of ``values`` and the order-statistic interval of it (``rank``); None
    for no values. Its ends are values of the sample: never outside their range."""
    xs = sorted(float(v) for v in values)
    if not xs:
        return None
    k = rank(len(xs), level)
    return Interval(statistics.median(xs), xs[k - 1], xs[len(xs) - k], len(xs))


def confidence(n: int, level: float = LEVEL) -> float:
    """The confidence of ``median_interval`` of ``n`` values (at least ``level`` from
    ``FEWEST`` values on; the range's, below that)."""
    return coverage(n, rank(n, level))


def _usable(x: float) -> bool:
    return math.isfinite(x) and x > 0


def speedup_of(base: float, now: float, direction: str) -> float:
    """How many times better ``now`` is than ``base`` (>1: faster; a time: base / now)."""
    return base / now if direction == "min" else now / base


def paired(base: Sequence[float | None], now: Sequence[float | None], direction: str,
           level: float = LEVEL) -> Interval | None:
    """The speed-up of ``now`` over ``base`` measured in the same rounds (``base[i]`` and
    ``now[i]``: round ``i``; None: that run failed): the median of the rounds' speed-ups and
    its order-statistic interval. Rounds without a positive finite value on both sides are
    left out; None when none is left."""
    factors = [speedup_of(b, n, direction) for b, n in zip(base, now)
               if b is not None and n is not None and _usable(b) and _usable(n)]
    return median_interval(factors, level)


def unpaired(base: Interval, now: Interval, direction: str) -> Interval:
    """The speed-up of ``now`` over ``base``, each side's median and interval measured apart:
    the ratio of the medians, with the ratios of the intervals' ends (conservative). An end
    that would divide by zero is infinite; none is below zero."""
    def ratio(a: float, b: float) -> float:
        if b <= 0:
            return math.inf
        return max(0.0, a / b)

    if direction == "min":  # times: base / now
        lo, mid, hi = ratio(base.lo, now.hi), ratio(base.median, now.median), ratio(base.hi, now.lo)
    else:
        lo, mid, hi = ratio(now.lo, base.hi), ratio(now.median, base.median), ratio(now.hi, base.lo)
    return Interval(mid, lo, hi, min(base.n, now.n))


def decide(speedup: Interval, tolerance: float) -> str | None:
    """What a speed-up's interval says: ``REGRESSED`` when it lies wholly below ``1 -
    tolerance`` (slower by more than the tolerance, beyond noise); ``faster`` when it lies
    wholly above ``1 + tolerance``; ``ok`` when it lies otherwise wholly at or above ``1 -
    tolerance`` (not slower by more than the tolerance); None while it straddles ``1 -
    tolerance`` (the runs cannot tell yet)."""
    if speedup.hi < 1.0 - tolerance:
        return "REGRESSED"
    if speedup.lo >= 1.0 - tolerance:
        return "faster" if speedup.lo > 1.0 + tolerance else "ok"
    return None


def beyond_noise(speedup: Interval) -> bool | None:
    """Whether the change is beyond noise: the interval of the speed-up leaves out 1 (None:
    one round, no noise known)."""
    if speedup.n < 2:
        return None
    return speedup.lo > 1.0 or speedup.hi < 1.0
