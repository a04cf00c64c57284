"""What an export ships (pure): the best config of each shape, per variant and GPU model, or
with a cover the fewest configs that keep every shape within a tolerance of its own best.

A config's value on a shape is the median of its confirmation runs where the confirmation
measured it (confirm.confirmed), else its single measurement; a config that failed a
confirmation run is never shipped. A shape's best is the confirmation's BEST where the
confirmation ran, else the first of the ranking (report/rank.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from ..errors import ExportError
from ..job import config_id
from ..result import Result
from ..confirm import Confirmed
from .cover import cover
from .rank import finite_value, group_results, rank


@dataclass(frozen=True)
class Entry:
    """One shape of one variant on one GPU model, and the config shipped for it."""

    variant: str
    shape: str
    gpu: str | None  # the GPU model that measured it (None: not recorded)
    result: Result  # the shipped config, as measured on this shape
    value: float  # its value on this shape
    confirmed: bool  # ``value`` is the median of its confirmation runs
    best: Result  # the shape's own best config
    best_value: float
    loss: float  # how much worse ``value`` is than ``best_value``, a fraction (0.03: 3%)


@dataclass(frozen=True)
class Selection:
    metric: str
    direction: str
    entries: tuple[Entry, ...]
    cover_pct: float | None = None  # the tolerance of the cover, when one chose the configs
    exact: bool = True  # the cover is a proven minimum

    @property
    def configs(self) -> list[tuple[str, str]]:
        """The distinct shipped configs, (variant, config id), in the order entries use them."""
        return list(dict.fromkeys((e.variant, config_id(e.result.params)) for e in self.entries))

    def config_index(self, entry: Entry) -> int:
        return self.configs.index((entry.variant, config_id(entry.result.params)))


def loss(value: float, best: float, direction: str) -> float:
    """How much worse ``value`` is than ``best``, as a fraction of it (negative: better)."""
    if value == best:
        return 0.0
    worse, better = (value, best) if direction == "min" else (best, value)
    if better <= 0:
        return float("inf") if worse > better else float("-inf")
    return worse / better - 1.0


# (variant, shape, GPU model) -> {config id: (result, value, confirmed)}
Values = dict[tuple[str, str, str | None], dict[str, tuple[Result, float, bool]]]


def measured(results: Iterable[Result], metric: str, conf: Mapping[tuple[str, str], Confirmed] | None) -> Values:
    """Every config's value per shape × variant × GPU model (module docstring)."""
    out: Values = {}
    for (variant, shape, gpu, _phase), rows in group_results(results).items():
        c = (conf or {}).get((variant, shape))
        models = {r.gpu_name for r in rows if finite_value(r, metric) is not None}
        key = (variant, shape, gpu if gpu is not None else (models.pop() if len(models) == 1 else None))
        values = out.setdefault(key, {})
        for r in rows:
            cid = config_id(r.params)
            v = c.verdicts.get(cid) if c else None
            if v is not None and v.failed:
                continue
            if v is not None and v.interval.n:
                values[cid] = (r, v.interval.median, True)
            elif (x := finite_value(r, metric)) is not None:
                values[cid] = (r, x, False)
    return {k: v for k, v in out.items() if v}


def best_of(key: tuple[str, str, str | None], values: Mapping[str, tuple[Result, float, bool]], metric: str,
            direction: str, conf: Mapping[tuple[str, str], Confirmed] | None) -> str:
    """The config id of a shape's best: the confirmation's BEST, else the ranking's first."""
    c = (conf or {}).get(key[:2])
    if c is not None and c.best in values:
        return c.best
    return config_id(rank([r for r, _, _ in values.values()], metric, direction)[0].params)


def select(results: Sequence[Result], metric: str, direction: str,
           conf: Mapping[tuple[str, str], Confirmed] | None = None, *, cover_pct: float | None = None,
           gpu: str | None = None) -> Selection:
    """The entries of an export: each shape's best, or with ``cover_pct`` the fewest configs
    per variant × GPU model keeping every shape within ``cover_pct`` percent of its best.
    ``gpu``: only the GPU model whose name holds this text (case-insensitive)."""
    values = measured(results, metric, conf)
    if gpu is not None:
        model = only_gpu(values, gpu)
        values = {k: v for k, v in values.items() if k[2] == model}
    if not values:
        raise ExportError("no config ran OK with a finite objective: nothing to export")
    bests = {k: best_of(k, v, metric, direction, conf) for k, v in values.items()}
    chosen = {k: bests[k] for k in values}
    exact = True
    if cover_pct is not None:
        if cover_pct < 0:
            raise ExportError(f"--cover {cover_pct:g}: the tolerance must be a percentage >= 0")
        for (variant, model), keys in _by_kernel(values).items():
            losses: dict[str, dict] = {}
            for k in keys:
                ref = values[k][bests[k]][1]
                for cid, (_, v, _) in values[k].items():
                    x = loss(v, ref, direction)
                    if x <= cover_pct / 100 + 1e-12:
                        losses.setdefault(cid, {})[k] = x
            found = cover(losses, keys)
            exact = exact and found.exact
            chosen.update(found.assignment)
    entries = []
    for k, cid in chosen.items():
        r, v, confirmed_ = values[k][cid]
        best, ref = values[k][bests[k]][0], values[k][bests[k]][1]
        entries.append(Entry(k[0], k[1], k[2], r, v, confirmed_, best, ref, loss(v, ref, direction)))
    return Selection(metric, direction, tuple(entries), cover_pct, exact)


def _by_kernel(values: Values) -> dict[tuple[str, str | None], list]:
    """The shapes each variant × GPU model must cover, in the database's order."""
    out: dict[tuple[str, str | None], list] = {}
    for key in values:
        out.setdefault((key[0], key[2]), []).append(key)
    return out


def only_gpu(values: Iterable[tuple[str, str, str | None]], text: str) -> str | None:
    """The one GPU model whose name holds ``text`` (exactly, or case-insensitively as a part)."""
    models = list(dict.fromkeys(k[2] for k in values))
    named = [m for m in models if m is not None]
    if text in named:
        return text
    hits = [m for m in named if text.lower() in m.lower()]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(repr(m) for m in named) or "none recorded"
    if not hits:
        raise ExportError(f"--gpu {text!r}: no GPU model of the database matches (models: {known})")
    raise ExportError(f"--gpu {text!r} matches {len(hits)} GPU models ({', '.join(map(repr, hits))}): "
                      f"give more of the name")
