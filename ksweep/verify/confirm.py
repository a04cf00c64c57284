"""Confirmation of the leaders (pure): which configs to measure again, and what the
measurements say.

One measurement per config cannot rank two configs whose times differ by less than the
noise (on an H100, re-measuring one SGEMM config minutes apart moved it by 0.65%). After
a shape × variant is searched, the top ``k`` configs and the default config are measured
again in ``rounds`` interleaved rounds (round r takes the configs in an order rotated by
r, so a slow drift of the GPU, warming up or throttling, spreads over all of them). BEST
is then the config with the best median of its confirmation measurements.

The interval of a config is Student's t interval of the mean of its ``n`` measurements
(mean ± t(0.975, n−1)·s/√n), the centre reported being the median. With the default
three rounds t is 4.30: the interval is wide unless the runs agree closely, which is
the honest answer for three numbers.

The rounds pair the configs: in one round each config is measured once, seconds apart
from the others, so a GPU whose clock the power cap moves between rounds moves them all
together. A comparison of two configs therefore uses the pairs (``paired``): per round in
which both ended OK, how many times better one was than the other; the factor reported is
the geometric mean of those, with its 95% t interval (the t interval of the mean log
factor). BEST is the config with the best median unless another is measurably better than
it round by round (then that one, and so on: a config measured in more rounds, or in other
ones, is not ranked by a median over other conditions). A config is a TIE when BEST's lead
over it is not clear of 1 (the interval's low end at or below 1: the data cannot tell them
apart), and the speed-up over the default is that factor. With fewer than two common
rounds (or a value that is not positive and finite in one of them) a comparison falls back
on the configs' own intervals: a TIE when they overlap, the speed-up the ratio of the
medians with the interval [lo_default / hi_best, hi_default / lo_best] (interval
arithmetic: conservative). Which measurements form one round is the caller's to say
(``rounds_together`` below: consecutive runs of one round number on one GPU model, no long pause).

Of the top ``k``, only those within ``within`` (5%) of the second best's value are measured
again (and the best, always): a config measured further behind is not one the noise put
there, and measuring it again costs time and tells nothing. The second best, not the best,
is the anchor, so that one lucky measurement (a config measured once far faster than it
is) does not push the configs that are really the fastest out of the confirmation.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping, Sequence

from ..job import config_id
from ..result import Hardening, Measurement, Result
from ..status import Status

# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom; 1.96 beyond
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
         2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
         2.052, 2.048, 2.045, 2.042)


@dataclass(frozen=True)
class Confirmation:
    """``k`` leaders plus the default, measured ``rounds`` more times each. A leader is the
    best, or one of the ``k`` best whose value is within ``within`` (a fraction) of the
    second best's (``choose``); ``within=None``: the ``k`` best whatever their values."""

    k: int = 5
    rounds: int = 3
    within: float | None = 0.05
    default: bool = True  # the default config too (the speed-up's baseline), evaluated first when it was not
    # a sweep's confirmation is recorded before its first run and owed until its last, so that
    # the next run completes one that was stopped (store/owed.py); False: one that measures a
    # few configs again and must neither take over nor end a sweep's (ksweep check)
    owed: bool = True

    # at most this many leaders and rounds: a confirmation is a few configs measured a few more
    # times; 5,1000000000 would run for ever
    MAX_K: ClassVar[int] = 100
    MAX_ROUNDS: ClassVar[int] = 100

    def __post_init__(self):
        for name, value, least, most in (("K", self.k, 1, self.MAX_K), ("R", self.rounds, 0, self.MAX_ROUNDS)):
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
                raise ValueError(f"confirmation {name} {value!r}: give a whole number from {least} to {most}")

    @classmethod
    def parse(cls, text: str) -> "Confirmation":
        """'5,3' -> Confirmation(5, 3); '5,3,2' -> within 2%; '5,3,all' -> within=None;
        ValueError with the rule otherwise."""
        rule = (f"--confirm {text}: give K,R[,W] (the K best configs within W% of the second best, default 5; "
                "W 'all': whatever their values; R rounds), e.g. --confirm 5,3")
        parts = [p.strip() for p in text.split(",")]
        if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts[:2]):
            raise ValueError(rule)
        k, rounds = (int(p) for p in parts[:2])
        if not (1 <= k <= cls.MAX_K and 1 <= rounds <= cls.MAX_ROUNDS):
            raise ValueError(f"--confirm {text}: K must be from 1 to {cls.MAX_K} and R from 1 to {cls.MAX_ROUNDS} "
                             f"(a confirmation measures a few leaders a few more times), e.g. --confirm 5,3")
        if len(parts) == 2:
            return cls(k, rounds)
        if parts[2] == "all":
            return cls(k, rounds, None)
        try:
            within = float(parts[2]) / 100
        except ValueError:
            raise ValueError(rule) from None
        if not (math.isfinite(within) and within >= 0):
            raise ValueError(rule)
        return cls(k, rounds, within)


@dataclass(frozen=True)
class Interval:
    median: float
    lo: float
    hi: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def overlaps(self, other: "Interval") -> bool:
        return self.lo <= other.hi and other.lo <= self.hi

    def spread(self, digits: int = 2) -> str | None:
        """'±0.42%': the half-width relative to the median; None with one run (no spread to
        show: ±0.00% would say there is none) or a median of 0."""
        if self.n < 2 or not self.median:
            return None
        return f"±{100 * self.half_width / abs(self.median):.{digits}f}%"


@dataclass(frozen=True)
class Verdict:
    """What the confirmation says of one config of a shape × variant."""

    config: str  # config_id
    interval: Interval
    mark: str  # "BEST", "TIE" or "" (measured, clearly behind the best)
    failed: int = 0  # confirmation runs that did not end OK (a flaky config is never BEST)
    values: tuple[float, ...] = ()  # the objective of its runs that ended OK, in the order they ran
    # why it may not be BEST although its runs ended OK ("" when it may): UNSAFE (the hardening's
    # sanitizers found a fault in it), nondeterministic (with --deterministic)
    ineligible: str = ""


def interval(values: Sequence[float]) -> Interval:
    """Median and 95% t interval of the mean of ``values`` (one value: a zero-width interval)."""
    n = len(values)
    med = statistics.median(values)
    if n < 2:
        return Interval(med, med, med, n)
    mean = statistics.fmean(values)
    t = _T975[n - 2] if n - 2 < len(_T975) else 1.96
    half = t * statistics.stdev(values) / math.sqrt(n)
    return Interval(med, mean - half, mean + half, n)


def choose(results: Iterable[Any], metric: str, direction: str, k: int, within: float | None = None) -> list[str]:
    """The config ids of the ``k`` best OK results by ``metric`` (finite values only), and of
    those, when ``within`` (a fraction) is given and the values are positive, the best and
    the ones within ``within`` of the second best's value; the driver adds the default
    config, which it may first have to evaluate."""
    sign = 1.0 if direction == "min" else -1.0
    ranked = []
    for r in results:
        v = r.value(metric)
        if v is not None and math.isfinite(v):
            ranked.append((sign * v, v, config_id(r.params)))
    ranked.sort()
    leaders = ranked[:k]
    if within is not None and len(leaders) > 1 and leaders[0][1] > 0 and leaders[1][1] > 0:
        anchor = leaders[1][1]  # the second best: one lucky measurement cannot move it
        near = (lambda v: v <= anchor * (1 + within)) if direction == "min" else (lambda v: v >= anchor / (1 + within))
        leaders = leaders[:1] + [x for x in leaders[1:] if near(x[1])]
    return [cid for _, _, cid in leaders]


def order(configs: Sequence[str], round_: int) -> list[str]:
    """Round ``round_``'s order: the list rotated by the round number (interleaved rounds)."""
    if not configs:
        return []
    r = round_ % len(configs)
    return list(configs[r:]) + list(configs[:r])


def paired(best: Mapping[int, float], other: Mapping[int, float], direction: str) -> Interval | None:
    """How many times better ``best`` is than ``other`` (round -> value each), from the
    rounds both were measured in: the geometric mean of the per-round factors and its 95%
    t interval; None with fewer than two common rounds or a value that is not positive and
    finite."""
    common = sorted(set(best) & set(other))
    if len(common) < 2:
        return None
    pairs = [(best[r], other[r]) for r in common]
    if not all(math.isfinite(b) and math.isfinite(o) and b > 0 and o > 0 for b, o in pairs):
        return None
    logs = [math.log(o / b if direction == "min" else b / o) for b, o in pairs]
    iv = interval(logs)
    return Interval(math.exp(statistics.fmean(logs)), math.exp(iv.lo), math.exp(iv.hi), len(logs))


def _by_round(values: Sequence[float], rounds: Sequence[int] | None) -> dict[int, float]:
    return dict(zip(rounds, values)) if rounds is not None and len(rounds) == len(values) else {}


def verdicts(values: Mapping[str, Sequence[float]], failures: Mapping[str, int], direction: str,
             rounds: Mapping[str, Sequence[int]] | None = None,
             ineligible: Mapping[str, str] | None = None) -> dict[str, Verdict]:
    """BEST, TIE or '' for each confirmed config. ``values``: config -> the objective of its
    confirmation runs that ended OK; ``rounds``: config -> the round of each of those values
    (then a config is compared with the best round by round, ``paired``; without them, or
    with fewer than two common rounds, by the overlap of their intervals); ``failures``:
    config -> runs that did not end OK. A config with a failed confirmation run, or none
    that ended OK, is never BEST nor TIE; nor is one ``ineligible`` names (config -> why)."""
    out: dict[str, Verdict] = {}
    ineligible = ineligible or {}
    sound = {c: interval(v) for c, v in values.items() if v and not failures.get(c) and c not in ineligible}
    rounds = rounds or {}
    at = {c: _by_round(values[c], rounds.get(c)) for c in sound}
    best = None
    if sound:
        pick = min if direction == "min" else max
        best = pick(sound, key=lambda c: sound[c].median)
        # a config measurably better than it round by round takes its place (each once at
        # most: paired comparisons need not be transitive)
        been = {best}
        while True:
            better = [c for c in sound if c not in been and _clearly(paired(at[c], at[best], direction))]
            if not better:
                break
            best = pick(better, key=lambda c: sound[c].median)
            been.add(best)
    for c, v in values.items():
        iv = interval(v) if v else Interval(math.nan, math.nan, math.nan, 0)
        mark = ""
        if c == best:
            mark = "BEST"
        elif c in sound and best is not None:
            factor = paired(at[best], at[c], direction)
            # one run each has no interval (zero width): it cannot be told apart from BEST
            tie = not _clearly(factor) if factor is not None else (
                min(sound[c].n, sound[best].n) < 2 or sound[c].overlaps(sound[best]))
            mark = "TIE" if tie else ""
        out[c] = Verdict(c, iv, mark, failures.get(c, 0), tuple(v), ineligible.get(c, ""))
    return out


def _clearly(factor: Interval | None) -> bool:
    """A paired factor whose interval lies wholly above 1: the first config measurably better."""
    return factor is not None and factor.lo > 1.0


def speedup_over(values: Mapping[str, Sequence[float]], rounds: Mapping[str, Sequence[int]] | None, best: str,
                 default: str, direction: str) -> Interval:
    """How many times better config ``best`` is than ``default`` (``values`` and ``rounds`` as
    ``verdicts`` takes them): round by round when they share two rounds, else ``speedup``
    of their own intervals."""
    rounds = rounds or {}
    return paired(_by_round(values[best], rounds.get(best)), _by_round(values[default], rounds.get(default)),
                  direction) or speedup(interval(values[best]), interval(values[default]), direction)


def speedup(best: Interval, default: Interval, direction: str) -> Interval:
    """How many times better the best is than the default, with a conservative interval."""
    if direction == "min":  # times: default / best
        return Interval(default.median / best.median, default.lo / best.hi if best.hi > 0 else math.nan,
                        default.hi / best.lo if best.lo > 0 else math.inf, min(best.n, default.n))
    return Interval(best.median / default.median, best.lo / default.hi if default.hi > 0 else math.nan,
                    best.hi / default.lo if default.lo > 0 else math.inf, min(best.n, default.n))


# -- what the stored confirmation runs say, per shape × variant ------------------------------------
ROUND_GAP = 60.0  # seconds: a longer pause between two runs (and than 3 typical ones) ends a round


def rounds_together(ms: Sequence[Measurement]) -> list[int]:
    """For one shape × variant's measurements in stored order, the index of the round each
    was run in: a new one when the round number changes, when the GPU model changes, or
    after a pause longer than ``ROUND_GAP`` and than three times the typical one (a resumed
    sweep). A run that built nothing has no GPU and breaks no round. On several GPUs of one
    model, a round's runs may go to different boards: their difference is then part of the
    per-round factors' spread."""
    gaps = sorted(abs(b.finished - a.finished) for a, b in zip(ms, ms[1:])
                  if a.finished is not None and b.finished is not None)
    limit = max(ROUND_GAP, 3 * gaps[len(gaps) // 2]) if gaps else ROUND_GAP
    out: list[int] = []
    n, gpu, before = 0, None, None
    for m in ms:
        if before is not None and (m.round != before.round or (m.gpu_name and gpu and m.gpu_name != gpu) or (
                m.finished is not None and before.finished is not None and abs(m.finished - before.finished) > limit)):
            n, gpu = n + 1, None
        gpu = gpu or m.gpu_name
        out.append(n)
        before = m
    return out


@dataclass(frozen=True)
class Confirmed:
    """The confirmation of one shape × variant."""

    verdicts: Mapping[str, Verdict] = field(default_factory=dict)  # config_id -> verdict
    default: str | None = None  # config_id of the default config, when it was confirmed
    speedup: Interval | None = None  # the best over the default (confirm.speedup_over)
    rounds: int = 0
    # what the hardening found, under each config's current result key: config_id -> kind -> record
    # (result.Hardening: "sanitizer", "inputs", "determinism")
    hardening: Mapping[str, Mapping[str, Hardening]] = field(default_factory=dict)

    def nondeterministic(self, config: str) -> str:
        """How a config's outputs differed from one run to the next ("" when they did not, or
        were not compared)."""
        h = self.hardening.get(config, {}).get("determinism")
        return h.detail if h is not None and h.verdict == "nondeterministic" else ""

    @property
    def best(self) -> str | None:
        return next((c for c, v in self.verdicts.items() if v.mark == "BEST"), None)


def counts_for(m: Measurement, result: Result | None, key: str | None = None) -> bool:
    """Whether confirmation run ``m`` counts for the stored ``result``: taken under its key
    (``key``: the one it has now, when given), and not before the result was measured. A
    config measured again under the same key (a header it includes was edited: the key
    covers the listed sources only) starts its confirmation anew; its earlier runs were of
    the other version."""
    if result is None or m.result_key != (key if key is not None else result.cache_key):
        return False
    return result.finished is None or m.finished is None or m.finished >= result.finished


def counted_runs(results: Iterable[Result], measurements: Iterable[Measurement]
                 ) -> dict[tuple[str, str], list[tuple[Measurement, int]]]:
    """(variant, shape) -> the confirmation runs that count for its stored results
    (``counts_for``), in the order they were taken, each with the index of the round it
    ran in together with the others (``rounds_together``): what ``confirmed`` judges, and
    what a repeated confirmation is simulated from (``ksweep insights``)."""
    result_of = {(r.variant, r.shape, config_id(r.params)): r for r in results}
    counted: dict[tuple, list[Measurement]] = defaultdict(list)
    for m in measurements:
        if counts_for(m, result_of.get((m.variant, m.shape, config_id(m.params)))):
            counted[(m.variant, m.shape)].append(m)
    return {group: list(zip(ms, rounds_together(ms))) for group, ms in counted.items()}


def hardened(results: Iterable[Result], records: Iterable[Hardening]
             ) -> dict[tuple[str, str], dict[str, dict[str, Hardening]]]:
    """(variant, shape) -> config id -> kind -> the latest hardening record taken under the
    config's current result key (a record of an older version of the config does not count)."""
    keys = {(r.variant, r.shape, config_id(r.params)): r.cache_key for r in results}
    out: dict[tuple[str, str], dict[str, dict[str, Hardening]]] = defaultdict(dict)
    for h in records:
        cid = config_id(h.params)
        if (h.variant, h.shape, cid) in keys and keys[(h.variant, h.shape, cid)] == h.result_key:
            out[(h.variant, h.shape)].setdefault(cid, {})[h.kind] = h
    return dict(out)


def confirmed(results: Iterable[Result], measurements: Iterable[Measurement], direction: str,
              defaults: Mapping[tuple[str, str], str] | None = None, hardening: Iterable[Hardening] = (),
              deterministic: bool = False) -> dict[tuple[str, str], Confirmed]:
    """(variant, shape) -> Confirmed, from the measurements taken under each result's own
    key since it was measured (``counts_for``: those of an older experiment or an older
    version of the config are not counted). ``measurements``: in the order they
    were taken (the store's). ``defaults``: (variant, shape) -> the default config's id (the
    store's meta ``default:<variant>:<shape>``).

    Two configs are compared round by round (``confirm.paired``) over the rounds they ran in
    together (``rounds_together``): the rounds of a later confirmation (a sweep extended, its
    new leaders measured in rounds 0, 1, 2 again; a round cut short and finished by a
    resumed sweep) never pair with an earlier one's, taken minutes or days apart.

    A config whose result is no longer OK (the hardening found it UNSAFE or wrong on further
    inputs, or it was judged again against another reference) is never BEST nor TIE, nor, with
    ``deterministic``, one whose outputs differed from one run to the next (``hardening``:
    what the hardening of the leaders found, ``Store.hardenings``)."""
    results = list(results)
    defaults = defaults or {}
    found = hardened(results, hardening)
    failed_now = {(r.variant, r.shape, config_id(r.params)): r.status.value for r in results
                  if r.status is not Status.OK}
    values: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    value_rounds: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    failures: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rounds: dict[tuple, set] = defaultdict(set)
    for group, ms in counted_runs(results, measurements).items():
        for m, together in ms:
            cid = config_id(m.params)
            rounds[group].add(m.round)
            if m.status is Status.OK and m.value is not None:
                values[group][cid].append(m.value)
                value_rounds[group][cid].append(together)
            else:
                failures[group][cid] += 1
                values[group].setdefault(cid, [])
    out = {}
    for group, per_config in values.items():
        at = value_rounds[group]
        records = found.get(group, {})
        barred = {c: failed_now[(*group, c)] for c in per_config if (*group, c) in failed_now}
        if deterministic:
            barred.update({c: "nondeterministic" for c, kinds in records.items() if c not in barred and (
                kinds.get("determinism") is not None and kinds["determinism"].verdict == "nondeterministic")})
        v = verdicts(per_config, failures[group], direction, at, barred)
        default = defaults.get(group)
        best = next((c for c, x in v.items() if x.mark == "BEST"), None)
        up = None
        if best is not None and default is not None and default in v and v[default].interval.n:
            up = speedup_over(per_config, at, best, default, direction)
        out[group] = Confirmed(v, default, up, len(rounds[group]), records)
    for group, records in found.items():  # hardened without a confirmation (the best few single measurements)
        out.setdefault(group, Confirmed(hardening=records))
    return out
