"""ksweep: an autotuner for CUDA kernels.

    import ksweep
    spec = ksweep.load_spec("sgemm.toml")
    ksweep.make_plan(spec)                                 # .total, .valid, .pruned
    summary, db = ksweep.run_sweep(spec, options=ksweep.SweepOptions(strategy="auto", max_evals=100))
    best = ksweep.best_result(db)                          # the confirmed BEST, as report and export show it
    ksweep.tune_kernel("vadd", "vadd.cu", {"N": 1 << 20}, "args.py:make", {"BLOCK": [64, 128, 256]},
                       grid=["cdiv(N, BLOCK)"], block=["BLOCK"])

Every name but the errors loads on first use (the sweep, the store and the search
strategies pull in numpy, rich and the run machinery; a spec alone does not).
"""

from __future__ import annotations

import importlib
import importlib.util

from .errors import EnvironmentProblem, Interrupted, KsweepError, SpecError, StoreInUse

# public name -> module that defines it (imported when the name is first used, so that a
# command run as ``python -m ksweep.X`` — one build through NVRTC per config — pays only for X)
_LAZY = {
    "make_plan": "ksweep.space.plan", "Space": "ksweep.space.space", "load_spec": "ksweep.spec.load",
    "spec_from_dict": "ksweep.spec.load", "Status": "ksweep.status",
    **{name: "ksweep.spec.model" for name in ("Build", "Check", "Constraint", "Derived", "Harness", "Objective",
                                              "Param", "Run", "Shape", "Spec", "Variant")},
    "run_sweep": "ksweep.app.sweep", "tune": "ksweep.app.sweep", "SweepRun": "ksweep.app.sweep",
    "best_result": "ksweep.app.sweep", "tune_kernel": "ksweep.app.kernel", "TuneResult": "ksweep.app.kernel",
    "Confirmation": "ksweep.verify.confirm",
    "SweepOptions": "ksweep.sweep.driver", "Summary": "ksweep.sweep.driver",
    "Store": "ksweep.store.sqlite", "Result": "ksweep.result", "make_strategy": "ksweep.strategies",
    "load_dataset": "ksweep.replay.importers", "Observer": "ksweep.observer",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"ksweep.{name}") is not None:
        value = importlib.import_module(f"ksweep.{name}")  # a subpackage, as `ksweep.spec.expr` after `import ksweep`
    else:
        raise AttributeError(f"module 'ksweep' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "Build", "Check", "Constraint", "Derived", "Harness", "KsweepError", "Objective", "Observer", "Param", "Result",
    "Run", "Shape", "Space", "Spec", "SpecError", "Status", "Store", "Summary", "SweepOptions", "SweepRun",
    "TuneResult", "Variant", "load_dataset", "load_spec", "make_plan", "make_strategy", "run_sweep", "spec_from_dict",
    "tune", "tune_kernel", "best_result", "Confirmation", "Interrupted", "StoreInUse", "EnvironmentProblem",
]
__version__ = "0.1.0"


def version() -> str:
    """The installed distribution's version; the package's own when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version as dist_version

    try:
        return dist_version("ksweep")
    except PackageNotFoundError:
        return __version__
