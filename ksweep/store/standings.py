"""Which stored result is best: the one definition every reader uses.

A shape × variant's results stand when no later sweep superseded them (``Store.results``).
Its best is the confirmation's BEST when its leaders were confirmed (the config with the
best median of the interleaved confirmation runs, compared round by round: ``confirm.py``),
else the first of the ranking of single measurements (``ranking.py``).

One direction: where a confirmation named a BEST, a config measured once never stands
against the confirmed medians. Single measurements taken minutes before the medians, on a
machine that may since have got busier, are not comparable with them: a cover (export) or
a baseline (check) compares confirmed configs by their medians only. Without a confirmation,
every finite single measurement compares.

Readers call ``read`` (one snapshot of the store: results, confirmation runs, the default
configs and the objective) or ``best``; none of them rebuilds "best" from rows.

A database keeps one current row per config; a config measured on another GPU model since
keeps its earlier result only in the history. ``by_gpu_model`` gives each GPU model its own
standings (the same rule, model by model): its current rows, and of each config whose
current row is another model's, its latest result on this model under the same result key
(the same experiment), with this model's confirmation runs. What travels between GPU models
(export --robust, the portability matrix) is judged on those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

from ..verify.confirm import Confirmed, Verdict, confirmed
from ..job import config_id
from ..result import Result
from ..spec.model import Objective
from ..status import Status
from .ranking import finite_value, rank, ranked_best


@dataclass(frozen=True)
class Value:
    """A config's value on its shape, as it compares with the others."""

    result: Result
    value: float
    confirmed: bool  # the median of its confirmation runs (else its single measurement)


@dataclass(frozen=True)
class Standing:
    """The standing results of one shape × variant and what their confirmation says."""

    variant: str
    shape: str
    objective: Objective
    results: tuple[Result, ...]  # the results that stand, oldest first
    confirmation: Confirmed | None = None

    @property
    def confirmed(self) -> bool:
        """A confirmation named a BEST: only confirmed medians compare (the module's rule)."""
        return self.confirmation is not None and self.confirmation.best is not None

    def verdict(self, r: Result) -> Verdict | None:
        """What the confirmation says of one config (None: it was not confirmed)."""
        if self.confirmation is None:
            return None
        return self.confirmation.verdicts.get(config_id(r.params))

    def value(self, r: Result, singles: bool = False) -> Value | None:
        """``r``'s value as it compares on this shape (the module's rule), or None: not
        comparable (failed, no finite value, a failed confirmation run, or measured once
        where the others are confirmed medians). ``singles``: a recording of every config
        (another tuner's cache), not a comparison: a single measurement where there is no
        median."""
        if r.status is not Status.OK:  # re-judged since it was measured (a reference that stands now)
            return None
        v = self.verdict(r)
        if v is not None and (v.failed or v.ineligible):  # flaky, or barred from BEST (--deterministic)
            return None
        if v is not None and v.interval.n:
            return Value(r, v.interval.median, True)
        if self.confirmed and not singles:
            return None
        x = finite_value(r, self.objective.metric)
        return Value(r, x, False) if x is not None else None

    def values(self, rows: list[Result] | None = None, singles: bool = False) -> dict[str, Value]:
        """config id -> Value of each comparable result (of ``rows``, default: every standing
        one; ``singles``: as ``value``)."""
        out = {}
        for r in self.results if rows is None else rows:
            v = self.value(r, singles)
            if v is not None:
                out[config_id(r.params)] = v
        return out

    def best(self, within: Callable[[Result], bool] | None = None) -> Result | None:
        """The BEST of the confirmation when it is OK (and ``within`` takes it), else the
        ranked best of single measurements (of the results ``within`` takes); None when
        nothing has a finite value."""
        rows = [r for r in self.results if within is None or within(r)]
        if self.confirmed:
            found = next((r for r in rows if config_id(r.params) == self.confirmation.best), None)
            if found is not None and found.status is Status.OK:
                return found
        return ranked_best(rows, self.objective.metric, self.objective.direction)

    def ranked(self) -> list[Result]:
        """The results with a finite value of the objective, best single measurement first."""
        m = self.objective.metric
        return [r for r in rank(self.results, m, self.objective.direction) if finite_value(r, m) is not None]


class Standings(Mapping[tuple[str, str], Standing]):
    """(variant, shape) -> Standing, read from the store at one moment."""

    def __init__(self, objective: Objective, by_target: Mapping[tuple[str, str], Standing],
                 confirmations: Mapping[tuple[str, str], Confirmed], results: list[Result]):
        self.objective = objective
        self._by_target = dict(by_target)
        self.confirmations = dict(confirmations)  # what the report and export columns show
        self.results = list(results)  # every standing result, oldest first

    def __getitem__(self, key: tuple[str, str]) -> Standing:
        return self._by_target[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._by_target)

    def __len__(self) -> int:
        return len(self._by_target)


def standings_of(results: list[Result], measurements, objective: Objective,
                 defaults: Mapping[tuple[str, str], str] | None = None, hardening=(),
                 deterministic: bool = False) -> Standings:
    """The standings of results and confirmation runs already read (pure); ``hardening``: what
    the hardening of the leaders found, ``deterministic``: a config whose outputs differed
    from run to run may not be BEST (confirm.confirmed)."""
    conf = confirmed(results, measurements, objective.direction, defaults or {}, hardening, deterministic)
    grouped: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        grouped.setdefault((r.variant, r.shape), []).append(r)
    return Standings(objective, {k: Standing(k[0], k[1], objective, tuple(rows), conf.get(k))
                                 for k, rows in grouped.items()}, conf, results)


def read(store, variant: str | None = None, shape: str | None = None) -> Standings:
    """The standings of a store's shape × variant pairs (those given), in one snapshot."""
    with store.snapshot():
        results = store.results(variant=variant, shape=shape)
        measurements = store.measurements(variant, shape)
        defaults = store.default_configs()
        objective = store.objective()
        hardening = store.hardenings(variant, shape)
        deterministic = bool(store.get_meta("deterministic", False))
    return standings_of(results, measurements, objective, defaults, hardening, deterministic)


def standing(store, variant: str, shape: str) -> Standing:
    """One shape × variant's standing (an empty one when it has no standing result)."""
    found = read(store, variant, shape)
    return found.get((variant, shape)) or Standing(variant, shape, found.objective, ())


def best(store, variant: str, shape: str) -> Result | None:
    """The best result of one shape × variant (the module's definition)."""
    return standing(store, variant, shape).best()


def top(store, variant: str, shape: str, k: int, models=None) -> list[dict]:
    """The params of one shape × variant's ``k`` best configs, best first: the store's BEST
    where a confirmation named one, then the confirmed configs by their medians, then the
    others by their single measurements (the two never compare: the module's rule).
    ``models``: only the results of these GPU models (None: every one)."""
    found = standing(store, variant, shape)
    within = (lambda r: r.gpu_name in models) if models is not None else (lambda r: True)
    values = found.values([r for r in found.results if within(r)], singles=True)
    sign = 1.0 if found.objective.direction == "min" else -1.0
    order = sorted(values, key=lambda cid: (not values[cid].confirmed, sign * values[cid].value))
    leader = found.best(within)
    if leader is not None and config_id(leader.params) in values:
        order.remove(config_id(leader.params))
        order.insert(0, config_id(leader.params))
    return [dict(values[cid].result.params) for cid in order[:k]]


def by_gpu_model(store, variant: str | None = None, shape: str | None = None) -> dict[str | None, Standings]:
    """GPU model -> the standings of what was measured on it (the module's doc), in one snapshot."""
    with store.snapshot():
        current = store.results(variant=variant, shape=shape)
        history = store.history(variant, shape)
        measurements = store.measurements(variant, shape)
        defaults = store.default_configs()
        objective = store.objective()
    return per_gpu_model(current, history, measurements, objective, defaults)


def per_gpu_model(current: list[Result], history: list[Result], measurements, objective: Objective,
                  defaults: Mapping[tuple[str, str], str] | None = None) -> dict[str | None, Standings]:
    """``by_gpu_model`` of rows already read (pure): ``history`` oldest first."""
    now = {(r.variant, r.shape, config_id(r.params)): r for r in current}
    rows: dict[str | None, dict[tuple, Result]] = {}
    for key, r in now.items():
        rows.setdefault(r.gpu_name, {})[key] = r
    for h in history:
        key = (h.variant, h.shape, config_id(h.params))
        r = now.get(key)
        if r is None or h.gpu_name in (None, r.gpu_name) or h.cache_key != r.cache_key:
            continue
        rows.setdefault(h.gpu_name, {})[key] = h  # the latest on that model
    return {model: standings_of(list(found.values()), [m for m in measurements if m.gpu_name == model],
                                objective, defaults)
            for model, found in rows.items()}
