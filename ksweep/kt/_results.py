"""What ``ksweep.kt.tune_kernel`` returns, as Kernel Tuner returns it: a row per evaluated
config (a failure named by Kernel Tuner's error classes) and the environment."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable


class ErrorConfig(str):
    """A config without a time, named as Kernel Tuner names it (``str()`` is the class name)."""

    def __new__(cls):
        return super().__new__(cls, cls.__name__)


class InvalidConfig(ErrorConfig):
    pass


class CompilationFailedConfig(ErrorConfig):
    pass


class RuntimeFailedConfig(ErrorConfig):
    pass


def rows(stored, tune_params, measures: list[tuple[str, Callable[[dict], Any]]]) -> list[dict]:
    """One dict per stored result, as Kernel Tuner's results list holds it: each tunable
    parameter, ``time`` in ms or ``__error__``, the phases' times, the timestamp, the metrics."""
    from ..export.kt_cache import failure_name

    results = []
    for r in stored:
        row: dict[str, Any] = {name: r.params.get(name) for name in tune_params}
        if r.status.value == "OK":
            row["time"] = float(r.metrics["ms"])
        else:
            row["__error__"] = {"InvalidConfig": InvalidConfig, "CompilationFailedConfig": CompilationFailedConfig,
                                "RuntimeFailedConfig": RuntimeFailedConfig}[failure_name(r.status)]()
        row["compile_time"] = 1000 * (r.build_seconds or 0.0) if not r.cached else 0.0
        row["verification_time"] = 0.0  # within the benchmark: the worker checks and times in one request
        row["benchmark_time"] = 1000 * (r.run_seconds or 0.0)
        row["strategy_time"] = 0.0
        row["framework_time"] = 0.0
        row["timestamp"] = datetime.fromtimestamp(r.finished or time.time(), timezone.utc).isoformat()
        if "time" in row:
            for name, fn in measures:
                row[name] = fn(row)
        results.append(row)
    return results


def environment(stored, problem_size, iterations, compiler_options, db: Path, spec) -> dict:
    gpu = next((r for r in stored if r.gpu_name), None)
    env: dict[str, Any] = {
        "device_name": gpu.gpu_name if gpu else None,
        "problem_size": problem_size,
        "iterations": iterations,
        "compiler_options": compiler_options,
        "compiler": spec.kernel.compiler,
        "arch": spec.arch,
        "ksweep_db": str(db),
    }
    if gpu is not None:
        env["driver"] = gpu.driver
        env["uuid"] = gpu.gpu_uuid
        env.update({k: v for k, v in gpu.gpu_state.items() if k == "cuda_version"})
    return env
