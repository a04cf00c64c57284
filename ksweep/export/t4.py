"""A T4 results file of one recording (pure): the Auto-Tuning Association's open format for
tuning results, schema version 1.0.0 (the schema ships with Kernel Tuner:
``kernel_tuner/schema/T4/1.0.0/results-schema.json``).

Each config is a result: its ``configuration``, ``times`` (``compilation_time``, in the
file's time unit, milliseconds, when known; ``runtimes`` empty: ksweep keeps a run's
reported value, not its repetitions), ``invalidity`` (``correct``, ``compile``, ``runtime``,
``timeout``, ``correctness`` or ``constraints`` for a pruned config), ``correctness`` (1 for
a config that ran OK, else 0), ``measurements`` (``time`` in milliseconds, which ranks the
configs, and the run's other metrics) and ``objectives`` (the sweep's objective).
"""

from __future__ import annotations

import json
import math

from ..result import time_unit_ms
from ..status import Status
from .kt_cache import timestamp
from .recording import Recording

SCHEMA_VERSION = "1.0.0"


def invalidity(status: Status) -> str:
    if status is Status.OK:
        return "correct"
    if status is Status.PRUNED:
        return "constraints"
    if status.build_failure:
        return "compile"
    if status is Status.HANG:
        return "timeout"
    if status in (Status.CHECKSUM_MISMATCH, Status.IMPOSSIBLE):  # IMPOSSIBLE: a result no hardware gives
        return "correctness"
    return "runtime"


def _unit(metric: str) -> str:
    scale = time_unit_ms(metric)
    if scale is None:
        return ""
    return {1.0: "ms", 1e-3: "us", 1e-6: "ns", 1e3: "s"}[scale]


def t4_results(rec: Recording, kernel: str, metric: str, generator: str = "ksweep") -> dict:
    results = []
    for x in rec.records:
        r = x.result
        times: dict = {"runtimes": []}
        if r.build_seconds is not None:
            times["compilation_time"] = 1000 * r.build_seconds
        measurements = []
        if x.time_ms is not None:
            measurements.append({"name": "time", "value": x.time_ms, "unit": "ms"})
            measurements += [{"name": k, "value": v, "unit": _unit(k)} for k, v in r.metrics.items()
                             if k != "time" and isinstance(v, (int, float)) and math.isfinite(v)]
        item = {"configuration": dict(r.params), "times": times, "invalidity": invalidity(x.status),
                "correctness": 1 if x.status is Status.OK else 0, "measurements": measurements,
                "objectives": [metric]}
        if (stamp := timestamp(r.finished)) is not None:
            item = {"timestamp": stamp, **item}
        results.append(item)
    return {
        "schema_version": SCHEMA_VERSION,
        "metadata": {"timeunit": "milliseconds", "generator": generator, "kernel": kernel, "variant": rec.variant,
                     "shape": rec.shape, "device": rec.gpu, "time_from": rec.time_metric},
        "results": results,
    }


def t4_text(rec: Recording, kernel: str, metric: str, generator: str = "ksweep") -> str:
    return json.dumps(t4_results(rec, kernel, metric, generator), indent=1, allow_nan=False) + "\n"
