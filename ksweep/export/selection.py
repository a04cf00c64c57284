"""What an export ships (pure): the best config of each shape, per variant and GPU model, or
with a cover the fewest configs that keep every shape within a tolerance of its own best.

A config's value on a shape, and the shape's best, are the store's (``store/standings.py``):
where a confirmation named a BEST, the confirmed configs compare by their medians and a
config measured once is no candidate; else every single measurement compares. A config that
failed a confirmation run is never shipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..errors import ExportError
from ..job import config_id
from ..result import Result
from ..store.standings import Standings
from .cover import cover
from .robust import Single, loss, portability, portable_models, robust as robust_of, single as single_of
from ..report.rank import group_results


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
    # --robust: variant -> the least worst loss over its shapes and GPU models, that the configs keep
    robust: Mapping[str, float] | None = None
    # (variant, shape) -> {model A: {model B: loss of A's best on B}}: shapes measured on several models
    matrix: Mapping[tuple[str, str], Mapping] = field(default_factory=dict)
    # (variant, shape) -> the GPU model whose entry a GPU model never tuned on falls back to
    portable: Mapping[tuple[str, str], str | None] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    # --robust: variant -> the one config that would serve all its shapes and models, and its
    # worst loss (export/robust.py's ``single``: every config's value, a config measured once
    # too); a variant no config was measured on everywhere has none
    single: Mapping[str, Single] = field(default_factory=dict)

    @property
    def configs(self) -> list[tuple[str, str]]:
        """The distinct shipped configs, (variant, config id), in the order entries use them."""
        return list(dict.fromkeys((e.variant, config_id(e.result.params)) for e in self.entries))

    def config_index(self, entry: Entry) -> int:
        return self.configs.index((entry.variant, config_id(entry.result.params)))


# (variant, shape, GPU model) -> {config id: (result, value, confirmed)}
Values = dict[tuple[str, str, str | None], dict[str, tuple[Result, float, bool]]]


def measured(standings: Standings, results: Iterable[Result], singles: bool = False) -> Values:
    """Every comparable config's value per shape × variant × GPU model (module docstring;
    ``singles``: every config's, as ``Standing.value`` records it)."""
    out: Values = {}
    for (variant, shape, gpu, _phase), rows in group_results(results).items():
        standing = standings.get((variant, shape))
        if standing is None:
            continue
        found = standing.values(rows, singles)
        models = {v.result.gpu_name for v in found.values()}
        key = (variant, shape, gpu if gpu is not None else (models.pop() if len(models) == 1 else None))
        out.setdefault(key, {}).update({cid: (v.result, v.value, v.confirmed) for cid, v in found.items()})
    return {k: v for k, v in out.items() if v}


def best_of(key: tuple[str, str, str | None], values: Mapping[str, tuple[Result, float, bool]],
            standings: Standings) -> str:
    """The config id of a shape's best (the store's), among the configs measured on its GPU
    model: the confirmation's BEST, else the best of their comparable values."""
    standing = standings[key[:2]]
    if standing.confirmed and standing.confirmation.best in values:
        return standing.confirmation.best
    sign = 1.0 if standings.objective.direction == "min" else -1.0
    return min(values, key=lambda cid: sign * values[cid][1])


def select(standings: Standings, *, cover_pct: float | None = None, gpu: str | None = None,
           results: Sequence[Result] | None = None, robust: bool = False,
           models: Mapping[str | None, Standings] | None = None) -> Selection:
    """The entries of an export: each shape's best, or with ``cover_pct`` the fewest configs
    per variant × GPU model keeping every shape within ``cover_pct`` percent of its best.
    ``robust``: one config per shape for every GPU model, the worst loss over the shapes and
    models the least it can be, with the fewest configs (export/robust.py; with
    ``cover_pct``, any loss up to it is taken too). ``gpu``: only the GPU model whose name
    holds this text (case-insensitive); ``results``: only these of the standing results (a
    shape, a variant). ``models``: each GPU model's standings (``standings.by_gpu_model``),
    which the values and bests are read from: a config measured on several GPU models
    counts on each of them, though the database's current row is one model's."""
    metric, direction = standings.objective.metric, standings.objective.direction
    rows = standings.results if results is None else results
    values = measured(standings, rows)
    owner = {k: standings for k in values}
    everything: Values = {}  # --robust: every config's value, a single measurement's too (robust.single)
    if models is not None:  # each GPU model's own standing: a config's result on every model it ran on
        if robust:
            everything, _ = _per_model(values, models, singles=True)
        values, owner = _per_model(values, models)
    elif robust:
        everything = measured(standings, rows, singles=True)
    if gpu is not None:
        model = only_gpu(values, gpu)
        values = {k: v for k, v in values.items() if k[2] == model}
        everything = {k: v for k, v in everything.items() if k[2] == model}
    if not values:
        raise ExportError("no config ran OK with a finite objective: nothing to export")
    bests = {k: best_of(k, v, owner[k]) for k, v in values.items()}
    chosen = {k: bests[k] for k in values}
    exact = True
    if cover_pct is not None and cover_pct < 0:
        raise ExportError(f"--cover {cover_pct:g}: the tolerance must be a percentage >= 0")
    matrix = portability(values, bests, direction)
    worst, notes, single = None, (), {}
    if robust:
        found = robust_of(values, bests, direction, (cover_pct or 0.0) / 100)
        chosen = {k: found.chosen[k] for k in values}
        exact, worst, notes = found.exact, found.worst, tuple(dict.fromkeys(found.notes))
        single = single_of({k: everything[k] for k in values if k in everything}, bests, direction)
    elif cover_pct is not None:
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
    return Selection(metric, direction, tuple(entries), cover_pct, exact, worst, matrix, portable_models(matrix),
                     notes, single)


def _per_model(values: Values, models: Mapping[str | None, Standings], singles: bool = False
               ) -> tuple[Values, dict]:
    """The values of the shapes × variants of ``values`` read from each GPU model's own
    standing (in the order of ``values``' shapes, then of the models; ``singles``: every
    config's, as ``measured``), and the standing each key's best is asked of."""
    pairs = list(dict.fromkeys(k[:2] for k in values))
    order = list(models)
    out: Values = {}
    owner = {}
    for model, theirs in models.items():
        found = measured(theirs, [r for r in theirs.results if (r.variant, r.shape) in pairs], singles)
        for k, v in found.items():
            if k[2] == model:
                out[k], owner[k] = v, theirs
    keys = sorted(out, key=lambda k: (pairs.index(k[:2]), order.index(k[2])))
    return {k: out[k] for k in keys}, owner


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
