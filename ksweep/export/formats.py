"""``ksweep export``'s formats (pure): from a database's results to the text to write and the
lines to tell the user (what was exported, the loss per shape under a cover, notes).

- ``header``: a C/C++ header (export/header.py) of export/selection.py's entries;
- ``json``: the same entries as JSON (``selection_json``, each with its result's record as
  report/records.py writes it);
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
           variant: str | None = None, gpu: str | None = None, problem_size=None,
           allow_unhardened: bool = False) -> Exported:
    """The text of one format and what to tell of it, from a store's standings (store/standings.py);
    a header or JSON refuses what the hardening rule refuses (export/hardening.py), unless
    ``allow_unhardened`` for configs that were never hardened."""
    metric = standings.objective.metric
    results = _only(_only(standings.results, "variant", variant), "shape", shape)
    if fmt in ("header", "json"):
        sel = select(standings, cover_pct=cover, gpu=gpu, results=results)
        notes = check_shipped(standings, sel.entries, allow_unhardened)
        hardening = {(e.variant, e.shape, config_id(e.result.params)):
                     said(standings, e.variant, e.shape, config_id(e.result.params)) for e in sel.entries}
        text = header(sel, name=name, source=source, generator=generator, hardening=hardening) if fmt == "header" \
            else selection_json(sel, standings.confirmations, hardening) + "\n"
        return Exported(text, _summary(sel), _left_out(results, sel, fmt, gpu) + notes)
    if cover is not None:
        raise ExportError(f"--cover applies to --format header and json, not {fmt}: a {fmt} file records "
                          f"every config of one shape")
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


def selection_json(selection: Selection, conf=None, hardening=None) -> str:
    """What ``ksweep export --format json`` writes: the shipped config of each shape (the
    header's entries, export/selection.py) with its macros and its whole result record."""
    records = to_records([e.result for e in selection.entries], conf)
    doc = {
        "objective": {"metric": selection.metric, "direction": selection.direction},
        "cover_pct": selection.cover_pct, "exact": selection.exact,
        "entries": [
            {"variant": e.variant, "shape": e.shape, "gpu": e.gpu, "config": selection.config_index(e),
             "params": dict(e.result.params), "defines": dict(defines_of(e.result)), "value": e.value,
             "confirmed": e.confirmed, "loss": e.loss, "best_value": e.best_value,
             "best_params": dict(e.best.params),
             "hardening": (hardening or {}).get((e.variant, e.shape, config_id(e.result.params))), "result": record}
            for e, record in zip(selection.entries, records)
        ],
    }
    return json.dumps(finite_or_none(doc), indent=2, default=str, allow_nan=False)
