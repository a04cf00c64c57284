"""A Kernel Tuner cache file of one recording (pure): what Kernel Tuner 1.5's simulation mode
(``tune_kernel(..., simulation_mode=True, cache=FILE)``, ``tune_cache(FILE)``) and
``ksweep replay`` read.

The document: ``device_name``, ``kernel_name``, ``problem_size``, ``tune_params_keys``,
``tune_params`` (each parameter's values), ``objective`` and, last, ``cache``: one entry per
config, keyed by its values joined with commas (Python's ``str`` of each, as Kernel Tuner
forms its keys), holding the parameters, ``time`` in milliseconds (or the name of Kernel
Tuner's failure: ``CompilationFailedConfig``, ``RuntimeFailedConfig``, ``InvalidConfig`` for a
pruned config), the build's and the run's wall times when known (``compile_time``,
``benchmark_time``, ms), a ``timestamp`` and the config's other finite metrics.
``problem_size`` is the one ``ksweep.kt.tune_kernel`` was given (the database keeps it), else
empty: a spec's sweep keeps a shape's name, not its sizes, and Kernel Tuner's
``tune_kernel(..., simulation_mode=True)`` then needs ``problem_size=[]``. ``cache`` comes
last and the text ends with ``}`` on its own line: Kernel Tuner checks the last characters
to tell a closed cache from one a crash left open.

Kernel Tuner's simulation mode needs every config of the space it is given in the cache;
``tune_cache(FILE)`` takes the space from the cache itself, so a partial sweep replays too.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone

from ..status import Status
from .recording import Recording

KT_RESERVED = {"time", "times", "compile_time", "verification_time", "benchmark_time", "strategy_time",
               "framework_time", "timestamp", "__error__"}


def failure_name(status: Status) -> str:
    """Kernel Tuner's name for a config that has no time."""
    if status is Status.PRUNED:
        return "InvalidConfig"
    return "CompilationFailedConfig" if status.build_failure else "RuntimeFailedConfig"


def timestamp(seconds: float | None) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, timezone.utc).isoformat()


def parameter_values(rec: Recording) -> dict[str, list]:
    """Each parameter's values in the recording: ascending when numeric, else as first seen."""
    out = {}
    for name in rec.params:
        seen = list(dict.fromkeys(x.result.params[name] for x in rec.records if name in x.result.params))
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen)
        out[name] = sorted(seen) if numeric else seen
    return out


def kt_cache(rec: Recording, kernel: str, problem_size=None) -> dict:
    cache = {}
    for x in rec.records:
        p = x.result.params
        key = ",".join(str(p.get(k)) for k in rec.params)
        entry = {k: p.get(k) for k in rec.params}
        entry["time"] = x.time_ms if x.time_ms is not None else failure_name(x.status)
        if x.result.build_seconds is not None:
            entry["compile_time"] = 1000 * x.result.build_seconds
        if x.result.run_seconds is not None and x.status is Status.OK:
            entry["benchmark_time"] = 1000 * x.result.run_seconds
        if (stamp := timestamp(x.result.finished)) is not None:
            entry["timestamp"] = stamp
        if x.status is Status.OK:
            entry.update({k: v for k, v in x.result.metrics.items() if k not in entry and k not in KT_RESERVED
                          and isinstance(v, (int, float)) and math.isfinite(v)})
        cache.setdefault(key, entry)
    return {
        "device_name": rec.gpu or "unknown", "kernel_name": kernel,
        "problem_size": problem_size if problem_size is not None else [],
        "tune_params_keys": list(rec.params), "tune_params": parameter_values(rec), "objective": ["time"],
        "cache": cache,
    }


def kt_cache_text(rec: Recording, kernel: str, problem_size=None) -> str:
    return json.dumps(kt_cache(rec, kernel, problem_size), indent=1, allow_nan=False) + "\n"
