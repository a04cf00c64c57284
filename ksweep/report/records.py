"""Results as records: CSV (every column) and JSON, what ``ksweep report --csv/--json`` and
``ksweep run`` write (``ksweep export``'s formats are the export package's).

JSON is strict: a value that is not a finite number (a NaN or infinite metric stored
by an older ksweep) is written as null, so that every JSON parser reads the output.
CSV writes such values as ``nan``, ``inf`` and ``-inf``, which spreadsheets and
pandas read as numbers.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shlex
from typing import Iterable, Sequence

from ..job import config_id
from ..result import Result

def _confirmation(r: Result, conf) -> dict | None:
    """The confirmation of one result (confirm.confirmed), or None when it had none."""
    c = (conf or {}).get((r.variant, r.shape))
    v = c.verdicts.get(config_id(r.params)) if c else None
    if v is None:
        return None
    iv = v.interval
    return {"median": iv.median if iv.n else None, "ci95_lo": iv.lo if iv.n else None,
            "ci95_hi": iv.hi if iv.n else None, "n": iv.n, "mark": v.mark, "failed_runs": v.failed,
            "default": c.default == config_id(r.params), "ineligible": v.ineligible or None}


def hardening_record(r: Result, conf) -> dict | None:
    """What the hardening found of one result (verify/confirm.Confirmed.hardening): per kind
    (sanitizer, inputs, determinism) its verdict, what it said and the tools that ran; None
    when it was not hardened."""
    c = (conf or {}).get((r.variant, r.shape))
    kinds = c.hardening.get(config_id(r.params), {}) if c is not None else {}
    if not kinds:
        return None
    return {kind: {"verdict": h.verdict, "detail": h.detail, "tools": dict(h.tools)} for kind, h in kinds.items()}


def to_records(results: Iterable[Result], conf=None, front: set | None = None,
               superseded: set | None = None) -> list[dict]:
    """One record per result; ``front`` (report/pareto.front_ids), when several objectives were
    asked for: each record says whether its config is on the Pareto front; ``superseded``
    ((variant, shape, config id) of results measured on another source or spec, when they are
    shown): whether it is one of them."""
    return [
        {
            "variant": r.variant, "shape": r.shape, "params": dict(r.params), "derived": dict(r.derived),
            "status": r.status.value, "message": r.message, "metrics": dict(r.metrics),
            "regs": r.regs, "spills": r.spills, "smem": r.smem, "phase": r.phase,
            "gpu": {"index": r.gpu_index, "name": r.gpu_name, "uuid": r.gpu_uuid, "driver": r.driver},
            "build_argv": list(r.build_argv), "cache_key": r.cache_key,
            "build_seconds": r.build_seconds, "run_seconds": r.run_seconds, "started": r.started,
            "finished": r.finished,
            "confirmation": _confirmation(r, conf), "hardening": hardening_record(r, conf),
            "nondeterministic": _nondeterministic(r, conf), "gpu_state": dict(r.gpu_state) or None,
            "throttled": bool((r.gpu_state or {}).get("throttled")),
            # the digest of its program, and the config whose run it shares (one program, measured once)
            "code": r.code, "same_as": json.loads(r.same_as) if r.same_as else None,
            **({"pareto": (r.variant, r.shape, config_id(r.params)) in front} if front is not None else {}),
            **({"superseded": (r.variant, r.shape, config_id(r.params)) in superseded}
               if superseded is not None else {}),
        }
        for r in results
    ]


def _nondeterministic(r: Result, conf) -> bool | None:
    """Whether the result's outputs differed from one run to the next (None: not compared)."""
    c = (conf or {}).get((r.variant, r.shape))
    h = c.hardening.get(config_id(r.params), {}).get("determinism") if c is not None else None
    return None if h is None else h.verdict == "nondeterministic"


def finite_or_none(value):
    """``value`` with every float that is not finite, at any depth, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    return value


def to_json(results: Iterable[Result], conf=None, front: set | None = None, superseded: set | None = None) -> str:
    return json.dumps(finite_or_none(to_records(results, conf, front, superseded)), indent=2, default=str,
                      allow_nan=False)


def to_csv(results: Sequence[Result], conf=None, front: set | None = None, superseded: set | None = None) -> str:
    """Every column; with ``front`` (several objectives) a column ``pareto``, 1 for the
    configs on the Pareto front; with ``superseded`` a last column of that name, 1 for a result
    measured on another source or spec."""
    params, derived, metrics = [], [], []
    for r in results:
        for k in r.params:
            if k not in params:
                params.append(k)
        for k in r.derived:
            if k not in derived:
                derived.append(k)
        for k in r.metrics:
            if k not in metrics:
                metrics.append(k)
    header = ["variant", "shape", "phase", *params, *[f"derived.{k}" for k in derived],
              "status", "message", "regs", "spills", "smem", *[f"metric.{k}" for k in metrics],
              "cached", "gpu_index", "gpu_name", "gpu_uuid", "driver", "build_seconds", "run_seconds",
              "started", "finished", "cache_key", "build_argv", "confirm_median", "confirm_ci95_lo", "confirm_ci95_hi",
              "confirm_n", "confirm_mark", "throttled", "sm_clock_mhz", "code", "same_as",
              *(["pareto"] if front is not None else []),
              *(["superseded"] if superseded is not None else [])]
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    for r in results:
        w.writerow([
            r.variant, r.shape, r.phase or "", *[r.params.get(k, "") for k in params],
            *[r.derived.get(k, "") for k in derived], r.status.value, r.message,
            _blank(r.regs), _blank(r.spills), _blank(r.smem), *[_blank(r.metrics.get(k)) for k in metrics],
            int(r.cached), _blank(r.gpu_index), r.gpu_name or "", r.gpu_uuid or "", r.driver or "",
            _blank(r.build_seconds), _blank(r.run_seconds), _blank(r.started), _blank(r.finished),
            r.cache_key or "",
            paste_able(r.build_argv), *_confirm_csv(_confirmation(r, conf)),
            int(bool((r.gpu_state or {}).get("throttled"))), _blank((r.gpu_state or {}).get("sm_clock_mhz")),
            r.code or "", _same_as(r.same_as),
            *([int((r.variant, r.shape, config_id(r.params)) in front)] if front is not None else []),
            *([int((r.variant, r.shape, config_id(r.params)) in superseded)] if superseded is not None else []),
        ])
    return buf.getvalue()


def _same_as(cid: str | None) -> str:
    """The config a result shares its run with, as the table names configs: 'BM=64 BN=128'."""
    return " ".join(f"{k}={v}" for k, v in json.loads(cid).items()) if cid else ""


def _confirm_csv(c: dict | None) -> list:
    if c is None:
        return ["", "", "", "", ""]
    return [_blank(c["median"]), _blank(c["ci95_lo"]), _blank(c["ci95_hi"]), c["n"], c["mark"]]


def _blank(v):
    return "" if v is None else v


def paste_able(argv) -> str:
    """A config's build command as one shell line a user can paste to rebuild it: quoted,
    writing ``prog`` in the current folder (``{binary}`` is a cache path while ksweep builds)."""
    return shlex.join(a.replace("{binary}", "prog") for a in argv) if argv else ""
