"""``ksweep export``'s formats (pure): from a database's results to the text to write and the
lines to tell the user (what was exported, the loss per shape under a cover, notes).

- ``header``: a C/C++ header (export/header.py) of export/selection.py's entries, and the
  size selector (export/selector.py) where the shapes' sizes are known;
- ``json``: the same entries as JSON (``selection_json``, each with its result's record as
  report/records.py writes it), and the selector as data;
- ``t4``: a T4 results file of one shape (export/t4.py);
- ``kt-cache``: a Kernel Tuner cache of one shape (export/kt_cache.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..errors import ExportError
from ..result import Result
from ..spec.model import BASE_VARIANT
from ..spec.names import did_you_mean
from ..report.records import finite_or_none, to_records
from ..store.standings import Standings
from ..job import config_id
from .hardening import check_shipped, said
from .header import defines_of, header
from .kt_cache import kt_cache_text
from .recording import recording
from .selection import Selection, select
from .selector import Selector
from .sizes import Sizes, sizes_of
from .t4 import t4_text

FORMATS = ("header", "json", "t4", "kt-cache")


@dataclass(frozen=True)
class Exported:
    text: str
    lines: list[str] = field(default_factory=list)  # what was exported, the loss per shape
    notes: list[str] = field(default_factory=list)  # what the user should know about it


def export(standings: Standings, fmt: str, *,
           orders: Mapping[tuple[str, ...], Sequence[str]] | None = None, name: str = "ksweep",
           source: str = "", generator: str = "ksweep", cover: float | None = None, shape: str | None = None,
           variant: str | None = None, gpu: str | None = None, problem_size=None, robust: bool = False,
           sizes: Mapping[str, Mapping] | None = None, models: Mapping | None = None,
           allow_unhardened: bool = False) -> Exported:
    """The text of one format and what to tell of it, from a store's standings (store/standings.py);
    ``sizes``: each shape's stored sizes (``Store.shape_sizes``), for the size selector;
    ``models``: each GPU model's standings (``standings.by_gpu_model``), for what travels; a
    header or JSON refuses what the hardening rule refuses (export/hardening.py), unless
    ``allow_unhardened`` for configs that were never hardened."""
    metric = standings.objective.metric
    results = _only(_only(standings.results, "variant", variant), "shape", shape)
    if fmt in ("header", "json"):
        sel = select(standings, cover_pct=cover, gpu=gpu, results=results, robust=robust, models=models)
        refused = check_shipped(standings, sel.entries, allow_unhardened)
        hardening = {(e.variant, e.shape, config_id(e.result.params)):
                     said(standings, e.variant, e.shape, config_id(e.result.params)) for e in sel.entries}
        selector, why = selector_of(sel, sizes or {})
        text = header(sel, name=name, source=source, generator=generator, hardening=hardening,
                      selector=selector) if fmt == "header" \
            else selection_json(sel, standings.confirmations, selector, hardening) + "\n"
        notes = _left_out(results, sel, fmt, gpu) + refused + list(sel.notes) + ([why] if why else [])
        return Exported(text, _summary(sel), notes)
    if cover is not None or robust:
        raise ExportError(f"--{'cover' if cover is not None else 'robust'} applies to --format header and json, "
                          f"not {fmt}: a {fmt} file records every config of one shape")
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")
    rec = recording(standings, results, orders, gpu=gpu)
    kernel = name if rec.variant == BASE_VARIANT.name else f"{name}/{rec.variant}"
    text = kt_cache_text(rec, kernel, problem_size) if fmt == "kt-cache" else t4_text(rec, kernel, metric, generator)
    where = f"shape {rec.shape}" + (f", variant {rec.variant}" if rec.variant != BASE_VARIANT.name else "") + (
        f", {rec.gpu}" if rec.gpu else "")
    best = f"{rec.best_time_ms:.6g} ms" if rec.best_time_ms is not None else f"{rec.best.value:.6g} {metric}"
    lines = [f"{fmt}: {len(rec.records)} configs of {where}; best {_params(rec.best.result)}: {best}"]
    notes = []
    fastest = rec.fastest()
    if fastest is not None and fastest.result is not rec.best.result:
        notes.append(f"the least time recorded, {fastest.time_ms:.6g} ms ({_params(fastest.result)}), is not the "
                     f"database's best ({_params(rec.best.result)}): a replay will find that config best"
                     + (" (single measurements beside confirmed medians)" if rec.best.confirmed else ""))
    return Exported(text, lines, notes)


def selector_of(selection: Selection, stored: Mapping[str, Mapping]) -> tuple[Selector | None, str]:
    """The size selector of a selection, and why there is none (the sizes of a shape are not
    known, or the shapes have no size in common)."""
    shapes = list(dict.fromkeys(e.shape for e in selection.entries))
    try:
        sizes: Sizes = sizes_of(stored, shapes)
    except ExportError as exc:
        return None, f"no size selector: {exc}"
    if not sizes.names:
        return None, "no size selector: the tuned shapes have no size in common (a define or run argument " \
                     "that is a number)"
    return Selector(selection, sizes), ""


def _left_out(results: Sequence[Result], sel: Selection, fmt: str, gpu: str | None) -> list[str]:
    """A note per shape × variant the export has no entry for: none of its configs ran OK."""
    shipped = {(e.variant, e.shape) for e in sel.entries}
    missing = [key for key in dict.fromkeys((r.variant, r.shape) for r in results) if key not in shipped]
    what = "header" if fmt == "header" else "JSON"
    return [f"shape {shape} (variant {variant}): no config ran OK with a finite {sel.metric}"
            f"{f' on {gpu!r}' if gpu is not None else ''}: it is not in the {what} "
            f"(ksweep report --shape {shape} says why)" for variant, shape in missing]


def _only(results: Sequence[Result], what: str, name: str | None) -> list[Result]:
    if name is None:
        return list(results)
    kept = [r for r in results if getattr(r, what) == name]
    if not kept:
        known = list(dict.fromkeys(getattr(r, what) for r in results))
        close = did_you_mean(name, known)
        raise ExportError(f"--{what} {name}: no such {what} in the database"
                          + (f" — did you mean {close}?" if close else f" ({what}s: {', '.join(known[:12])})"))
    return kept


def _params(r: Result) -> str:
    return " ".join(f"{k}={v}" for k, v in r.params.items())


def _summary(sel: Selection) -> list[str]:
    n, count = len(sel.configs), len(sel.entries)
    many = len({(e.variant, e.gpu) for e in sel.entries}) > 1
    what = "entries (variant / GPU model / shape)" if many else "shapes" if count != 1 else "shape"
    head = f"{count} {what}, {n} distinct config{'s' * (n != 1)}"
    if sel.robust is not None:
        return _robust_summary(sel, head)
    if sel.cover_pct is None:
        return [head + " (each shape's best)"]
    lines = [head + f": the fewest keeping every shape within {sel.cover_pct:g}% of its own best"
             + ("" if sel.exact else " (the search stopped early: perhaps not the fewest)")]
    labels = [(f"{e.variant} / {e.gpu or 'GPU not recorded'} / " if many else "") + e.shape for e in sel.entries]
    width = max(map(len, labels))
    for e, label in zip(sel.entries, labels):
        lines.append(f"  {label:<{width}}  config {sel.config_index(e)}  {e.value:.6g} {sel.metric}  "
                     f"loss {100 * e.loss:5.2f}%  (own best {e.best_value:.6g})")
    return lines


def _robust_summary(sel: Selection, head: str) -> list[str]:
    """The robust configs: the least worst loss, each shape's config and its loss on each GPU
    model, and the portability matrix (each model's best on the others)."""
    worst = ", ".join(f"{100 * x:.2f}%" + (f" (variant {v})" if len(sel.robust) > 1 else "")
                      for v, x in sel.robust.items())
    lines = [head + f": one config per shape for every GPU model, the worst loss over the shapes and models "
             f"the least it can be ({worst})" + (f", any loss up to {sel.cover_pct:g}% taken for fewer configs"
                                                 if sel.cover_pct else "")
             + ("" if sel.exact else " (the search stopped early: perhaps not the fewest)")]
    labels = [f"{e.variant} / {e.shape} / {e.gpu or 'GPU not recorded'}" for e in sel.entries]
    width = max(map(len, labels))
    for e, label in zip(sel.entries, labels):
        lines.append(f"  {label:<{width}}  config {sel.config_index(e)}  {e.value:.6g} {sel.metric}  "
                     f"loss {100 * e.loss:5.2f}%")
    for variant in sel.robust:
        one = sel.single.get(variant)
        said = f" (variant {variant})" if len(sel.robust) > 1 else ""
        if one is None:
            lines.append(f"  one config for every shape{said}: none was measured, comparably, on all of them")
        else:
            params = json.loads(one.config)  # in the order the entries give them
            order = next((list(e.result.params) for e in sel.entries if e.variant == variant), list(params))
            words = " ".join(f"{k}={params[k]}" for k in order if k in params)
            models = {e.gpu for e in sel.entries if e.variant == variant}
            where = one.shape + (f", {one.gpu}" if len(models) > 1 and one.gpu else "")
            lines.append(f"  one config for every shape{said}: {words}, worst loss {100 * one.worst:.2f}% "
                         f"(on {where})")
    for (variant, shape), rows in sel.matrix.items():
        lines.append(f"  portability, {variant} / {shape}: each GPU model's best, its loss on the others")
        for a, row in rows.items():
            cells = ", ".join(f"{b}: " + ("not measured" if x is None else f"{100 * x:.2f}%")
                              for b, x in row.items() if b != a)
            lines.append(f"    best on {a}: {cells}")
    return lines


def selection_json(selection: Selection, conf=None, selector: Selector | None = None, hardening=None) -> str:
    """What ``ksweep export --format json`` writes: the shipped config of each shape (the
    header's entries, export/selection.py) with its macros, its sizes and its whole result
    record, and the size selector (``selector``: export/selector.py's, as data)."""
    records = to_records([e.result for e in selection.entries], conf)
    sizes = selector.sizes.of if selector is not None else {}
    doc = {
        "objective": {"metric": selection.metric, "direction": selection.direction},
        "cover_pct": selection.cover_pct, "exact": selection.exact, "robust": selection.robust,
        "single": {v: {"params": json.loads(one.config), "worst_loss": one.worst, "shape": one.shape,
                       "gpu": one.gpu}
                   for v, one in selection.single.items()} if selection.robust is not None else None,
        "entries": [
            {"variant": e.variant, "shape": e.shape, "gpu": e.gpu, "config": selection.config_index(e),
             "params": dict(e.result.params), "defines": dict(defines_of(e.result)), "value": e.value,
             "confirmed": e.confirmed, "loss": e.loss, "best_value": e.best_value,
             "best_params": dict(e.best.params), "sizes": dict(sizes.get(e.shape, {})),
             "hardening": (hardening or {}).get((e.variant, e.shape, config_id(e.result.params))), "result": record}
            for e, record in zip(selection.entries, records)
        ],
        "selector": selector.as_json() if selector is not None else None,
    }
    return json.dumps(finite_or_none(doc), indent=2, default=str, allow_nan=False)
