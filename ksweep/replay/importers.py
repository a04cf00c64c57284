"""Read recorded tuning results: Kernel Tuner cache files and T4 results files.

``load_dataset(path)`` reads plain or gzipped JSON (recognised by its magic bytes, not its
name) and picks the importer from the document's keys. The importers themselves are pure
functions of the parsed document, tested without files.

What counts as what:
- a measured time is a success;
- a compile error, a runtime error, a timeout or a wrong result is a *failure*: it stays in
  the replayed space (a strategy may propose it and learns it failed);
- a config the kernel's own constraints rejected (Kernel Tuner's ``InvalidConfig``, T4's
  ``constraints``) is left out of the space, as ksweep's known constraints would prune it.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import DatasetError
from ..spec.model import Param
from ..status import Status
from .dataset import Dataset

# Kernel Tuner writes a failure as a string in "time"; older caches wrote 1e20.
KT_FAILURES = {
    "CompilationFailedConfig": Status.COMPILE_ERROR,
    "RuntimeFailedConfig": Status.RUN_ERROR,
}
KT_PRUNED = "InvalidConfig"
KT_OLD_FAILURE = 1e20

T4_INVALIDITY = {
    "correct": Status.OK,
    "compile": Status.COMPILE_ERROR,
    "runtime": Status.RUN_ERROR,
    "timeout": Status.HANG,
    "correctness": Status.CHECKSUM_MISMATCH,
}
T4_PRUNED = "constraints"


def load_dataset(path: str | Path) -> Dataset:
    """Read a Kernel Tuner cache or T4 results file, plain or gzipped."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if raw.startswith(b"SQLite format 3\x00"):
        raise DatasetError(f"{path}: a ksweep database, not a recorded dataset: ksweep export {path} --format "
                           f"kt-cache -o FILE writes one shape's results as one")
    try:
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        doc = json.loads(text)
    except (OSError, EOFError, ValueError) as exc:
        raise DatasetError(f"{path}: not JSON (or gzipped JSON): {exc}") from exc
    name = path.name.removesuffix(".gz").removesuffix(".json")
    return parse_document(doc, name=name, where=str(path))


def parse_document(doc: Any, *, name: str, where: str = "<dataset>") -> Dataset:
    """Pick the importer from the document's keys."""
    if isinstance(doc, Mapping) and "cache" in doc and "tune_params_keys" in doc:
        return parse_kernel_tuner(doc, name=name, where=where)
    if isinstance(doc, Mapping) and isinstance(doc.get("results"), list):
        return parse_t4(doc, name=name, where=where)
    raise DatasetError(
        f"{where}: neither a Kernel Tuner cache (keys 'cache', 'tune_params_keys') "
        f"nor a T4 results file (key 'results')"
    )


def parse_kernel_tuner(doc: Mapping, *, name: str, where: str = "<dataset>") -> Dataset:
    keys = list(doc["tune_params_keys"])
    # Every cache entry records "time" (ms, lower is better) whatever the tuning objective
    # was; an objective such as GFLOP/s would have to be maximised instead.
    objective = "time"
    entries = []
    for key, entry in doc["cache"].items():
        try:
            config = {k: _hashable(entry[k]) for k in keys}
        except KeyError as exc:
            raise DatasetError(f"{where}: cache entry '{key}' lacks parameter {exc}") from None
        raw = entry.get(objective)
        if raw == KT_PRUNED:
            continue
        value, status = _kt_outcome(raw)
        entries.append((config, value, status, _repeats(entry.get("times") if value is not None else None)))
    declared = doc.get("tune_params") or {}
    return _assemble(name, "kernel_tuner", keys, declared, entries, where,
                     device=str(doc.get("device_name", "")), kernel=str(doc.get("kernel_name", "")))


def _kt_outcome(raw: Any) -> tuple[float | None, Status]:
    if isinstance(raw, str):
        return None, KT_FAILURES.get(raw, Status.RUN_ERROR)
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw) and raw < KT_OLD_FAILURE:
        return float(raw), Status.OK
    return None, Status.RUN_ERROR


def parse_t4(doc: Mapping, *, name: str, where: str = "<dataset>") -> Dataset:
    results = doc["results"]
    keys: list[str] = []
    entries = []
    for i, item in enumerate(results):
        config = item.get("configuration")
        if not isinstance(config, Mapping):
            raise DatasetError(f"{where}: results[{i}] has no 'configuration'")
        if not keys:
            keys = list(config)
        invalidity = item.get("invalidity", "correct")
        if invalidity == T4_PRUNED:
            continue
        status = T4_INVALIDITY.get(invalidity, Status.RUN_ERROR)
        value = _t4_value(item) if status is Status.OK else None
        if value is None and status is Status.OK:
            status = Status.NO_RESULT
        runs = _repeats((item.get("times") or {}).get("runtimes") if value is not None else None)
        try:
            entries.append(({k: _hashable(config[k]) for k in keys}, value, status, runs))
        except KeyError as exc:
            raise DatasetError(f"{where}: results[{i}] lacks parameter {exc}") from None
    return _assemble(name, "t4", keys, {}, entries, where)


def _t4_value(item: Mapping) -> float | None:
    # The time, lower is better, as for Kernel Tuner caches (whatever "objectives" says).
    for m in item.get("measurements") or ():
        if m.get("name") == "time" and _is_number(m.get("value")):
            return float(m["value"])
    runtimes = (item.get("times") or {}).get("runtimes") or []
    if runtimes and all(_is_number(r) for r in runtimes):
        return float(np.mean(runtimes))
    return None


def _repeats(times: Any) -> np.ndarray:
    """The repeated measurements of one config, when they are a list of finite numbers (else
    none)."""
    none = np.zeros(0)
    if not isinstance(times, list) or not times or isinstance(times[0], (str, bool)):
        return none
    try:
        runs = np.asarray(times, dtype=np.float64)
    except (TypeError, ValueError):
        return none
    return runs if runs.ndim == 1 and np.all(np.isfinite(runs)) else none


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _assemble(name, fmt, keys, declared, entries, where, device="", kernel="") -> Dataset:
    if not entries:
        raise DatasetError(f"{where}: no recorded configs")
    params = tuple(
        Param(name=k, values=_ordered_values(declared.get(k), (e[0][k] for e in entries)))
        for k in keys
    )
    lookup = [{v: j for j, v in enumerate(p.values)} for p in params]
    rows = np.array([[lookup[j][e[0][k]] for j, k in enumerate(keys)] for e in entries], dtype=np.int32)
    values = np.array([np.nan if e[1] is None else e[1] for e in entries], dtype=np.float64)
    statuses = tuple(e[2] for e in entries)
    runs = [e[3] for e in entries]
    # One row per config: a file that records a config twice keeps its first record.
    _, first = np.unique(rows, axis=0, return_index=True)
    if len(first) < len(rows):
        keep = np.sort(first)
        rows, values, statuses = rows[keep], values[keep], tuple(statuses[i] for i in keep)
        runs = [runs[i] for i in keep]
    if np.isnan(values).all():
        raise DatasetError(f"{where}: every recorded config failed: no value to search by")
    repeats = tuple(runs) if any(len(r) for r in runs) else None
    return Dataset(name=name, format=fmt, params=params, rows=rows, values=values,
                   statuses=statuses, device=device, kernel=kernel, repeats=repeats)


def _ordered_values(declared: Iterable | None, seen: Iterable) -> tuple:
    """The values a parameter takes in the recorded configs, in ascending order when numeric."""
    used = list(dict.fromkeys(_hashable(v) for v in seen))
    if all(_is_number(v) for v in used):
        return tuple(sorted(used))
    if declared:
        order = {_hashable(v): i for i, v in enumerate(declared)}
        return tuple(sorted(used, key=lambda v: order.get(v, len(order))))
    return tuple(used)


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v
