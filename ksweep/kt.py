"""Kernel Tuner's ``tune_kernel`` on ksweep's kernel mode: the same keywords, the same
``(results, env)``, so that moving a tuning script over is one changed import::

    from ksweep.kt import tune_kernel      # was: from kernel_tuner import tune_kernel

The keywords are mapped onto ``api.kernel_tuning_spec`` (grid = ceil(problem size / grid
divisor), the divisor defaulting to the block size names; the block from the block size
names, 256 × 1 × 1 where a name is not tuned; restrictions as expressions or functions;
``answer`` entries as the checked outputs); what cannot be honoured is refused in one line
(``KtUnsupported``). Above every layer, like ``api.py``.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .errors import ExprError, KsweepError
from .spec.expr import parse
from .spec.kernel import COMPILERS, Timing, default_flags, valid_race
from .spec.model import Build, Constraint, Derived
from .spec.pyref import PyFunction

DEFAULT_BLOCK_SIZE_NAMES = ("block_size_x", "block_size_y", "block_size_z")
DEFAULT_BLOCK = (256, 1, 1)  # Kernel Tuner's block where a dimension's name is not tuned
# Kernel Tuner's strategy names -> ksweep's (ksweep's own names are accepted as they are)
STRATEGIES = {"brute_force": "grid", "random_sample": "random", "bayes_opt": "bayes"}
CUDA_LANGS = {"CUDA", "CUPY", "NVCUDA"}
STRATEGY_OPTIONS = {"max_fevals", "time_limit", "fraction"}
# the objectives whose direction Kernel Tuner knows without objective_higher_is_better
MAXIMISED = {"fitness", "GFLOP/s", "TFLOP/s", "GB/s", "TB/s", "GFLOPS/W", "TFLOPS/W", "GFLOP/J", "TFLOP/J"}
MINIMISED = {"time", "energy", "cost", "loss"}


class KtUnsupported(KsweepError):
    """A Kernel Tuner keyword (or value) that ksweep's kernel mode cannot honour."""


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


def tune_kernel(kernel_name, kernel_source, problem_size, arguments, tune_params, grid_div_x=None, grid_div_y=None,
                grid_div_z=None, restrictions=None, answer=None, atol=1e-6, verify=None, verbose=False, lang=None,
                device=0, platform=0, smem_args=None, cmem_args=None, texmem_args=None, compiler=None,
                compiler_options=None, defines=None, log=None, iterations=7, block_size_names=None, quiet=False,
                strategy=None, strategy_options=None, cache=None, metrics=None, simulation_mode=False,
                parallel=None, observers=None, objective=None, objective_higher_is_better=None, objectives=None,
                seed=None, *, backend: str = "cuda", arch: str | None = None, jobs: int | None = None,
                race: float | None = None, confirm: bool = True):
    """Tune ``kernel_name`` as Kernel Tuner 1.5's ``tune_kernel`` does, in ksweep's kernel mode.

    Returns ``(results, env)``: one dict per evaluated config (each tunable parameter;
    ``time``, the median of the timed launches in ms (no ``times``: they are not kept), or
    ``__error__`` naming the failure; ``compile_time``, ``verification_time``,
    ``benchmark_time`` in ms; ``timestamp``; each metric), and the environment (device,
    problem size, iterations, compiler options, best config, totals). ``backend``,
    ``arch``, ``jobs`` and ``race`` are ksweep's own: the GPU backend (a stand-in for tests),
    the target architecture, the build jobs, and the racing factor (``[kernel] timing.race``:
    a config whose first 3 timed launches all took more than ``race`` times the best median
    so far is timed no further, fewer than ``iterations`` times; ``race=0`` times every config
    at least ``iterations`` times). ``confirm`` (ksweep's default, as ``ksweep run``): with
    ``time`` the objective, the leaders (the best and those within 5% of the second best, at
    most 5) are measured 3 more times, interleaved, and
    ``env["best_config"]`` is the row of the one those runs find fastest (its median in
    ``env["confirmed_time"]``): one sweep measurement can be lucky, or taken while the GPU
    ran at another clock. ``log`` and ``platform`` (OpenCL) are ignored.
    """
    from .app.kernel import kernel_tuning_spec, of_this_space
    from .app.sweep import run_sweep
    from .verify.confirm import Confirmation
    from .store.standings import standings_of
    from .job import config_id
    from .export.kt_cache import failure_name
    from .gpu.limits import DEFAULT_ARCH
    from .store.sqlite import Store
    from .sweep.options import SweepOptions

    started = time.perf_counter()
    _refuse(lang=lang, verify=verify, texmem_args=texmem_args, simulation_mode=simulation_mode, observers=observers,
            defines=defines, compiler=compiler, objectives=objectives)
    timing = replace(Timing(), min_reps=int(iterations), max_reps=max(int(iterations), Timing().max_reps))
    if race is not None:
        factor = float(race) if isinstance(race, (int, float)) and not isinstance(race, bool) else math.nan
        if not valid_race(factor):
            raise KtUnsupported(f"race={race!r}: give 0 (time every config `iterations` times) or a factor of at "
                                "least 1, e.g. 1.5")
        timing = replace(timing, race=factor)
    tune_params = {name: [_plain(v) for v in values] for name, values in dict(tune_params).items()}
    names = list(block_size_names or DEFAULT_BLOCK_SIZE_NAMES)
    names += list(DEFAULT_BLOCK_SIZE_NAMES[len(names):])
    block = [names[i] if names[i] in tune_params else str(DEFAULT_BLOCK[i]) for i in range(3)]
    sizes = _problem_size(problem_size)
    divisors = [_divisor(d, names[i], tune_params, f"grid_div_{'xyz'[i]}")
                for i, d in enumerate((grid_div_x, grid_div_y, grid_div_z))]
    grid = [f"cdiv({sizes[i]}, {divisors[i]})" for i in range(3)]
    restricted = _restrictions(restrictions, tune_params)
    measures = _metrics(metrics, tune_params)
    objective, higher = _objective(objective, objective_higher_is_better, metrics)
    strategy_name, max_evals, time_limit, fraction = _strategy(strategy, strategy_options or {})
    confirming = bool(confirm) and objective == "time"
    try:  # its values checked now, before anything is written
        options = SweepOptions(strategy=strategy_name, max_evals=max_evals, time_limit=time_limit,
                               seed=int(seed) if _whole_number(seed) else (seed or 0), record_pruned=False,  # as Kernel Tuner: restricted configs are not results
                               confirm=Confirmation(default=False) if confirming else None)  # no extra config
    except KsweepError as exc:
        raise KtUnsupported(str(exc).replace("max_evals", "strategy_options max_fevals")
                            .replace("time_limit", "strategy_options time_limit")) from None
    if objective != "time" and strategy_name != "grid":
        raise KtUnsupported(f"objective '{objective}': ksweep searches on time; a metric as the objective works with "
                            f"strategy='brute_force' only (every config is measured, then ranked by the metric)")
    arrays = list(arguments)
    answer = list(answer) if answer is not None else None
    if answer is not None and len(answer) != len(arrays):
        raise KtUnsupported(f"answer has {len(answer)} entries for {len(arrays)} arguments: give one per "
                            "argument, None where there is nothing to check")
    if answer is not None and all(a is None for a in answer):
        answer = None  # Kernel Tuner checks nothing then: every array may be written
    if answer is not None:
        outputs = [i for i, a in enumerate(answer) if a is not None]
        reference = [np.asarray(answer[i]) for i in outputs]
    else:  # nothing to check: every array may be written
        outputs = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]
        reference = None
    source = _source_file(kernel_name, kernel_source)
    given_name, kernel_name = kernel_name, _kernel_name(kernel_name, tune_params)
    arch = arch or DEFAULT_ARCH
    compiler, flags = lang_build(lang, compiler, _options(compiler_options))
    spec = kernel_tuning_spec(
        kernel_name, source, {"kernel_tuner": 1}, arrays, tune_params, grid=grid, block=block, smem=_smem(smem_args),
        restrictions=(), outputs=outputs, reference=reference, atol=atol, rtol=1e-5, arch=arch,
        flags=flags, compiler=compiler,
        cmem=cmem_args, timing=timing)
    # Kernel Tuner defines grid_size_x/y/z, the block size names and kernel_tuner=1 (the
    # shape's define) for the source, drops blocks over the device's thread limit and runs configs that spill
    derived = [Derived(f"grid_size_{'xyz'[i]}", parse(grid[i]), define=True) for i in range(3)]
    derived += [Derived(names[i], parse(block[i]), define=True) for i in range(3) if names[i] not in tune_params]
    threads = " * ".join(f"({b})" for b in block)
    limit = Constraint("threads per block", expr=parse(f"{threads} <= MAX_THREADS_PER_BLOCK"),
                       reason=f"{threads} threads per block > the device's MAX_THREADS_PER_BLOCK")
    spec = replace(spec, derived=tuple(derived), kernel=replace(spec.kernel, defines=True),  # templated ones too
                   constraints=(*restricted, limit), build=Build(allow_spills=True))
    if fraction is not None:  # random_sample's share of the valid configs, rounded up, as Kernel Tuner's
        from .space.space import Space

        options = replace(options, max_evals=max(1, math.ceil(fraction * Space.from_spec(spec).size)))
    # cache: a ksweep database beside it (resumed as Kernel Tuner resumes its cache); without
    # one, a fresh database per call, so that nothing is taken from an earlier call
    db = Path(cache).with_suffix(".db") if cache else _fresh_db(source, kernel_name)
    gpus = None if parallel else [int(device)]
    _, db = run_sweep(spec, db=db, options=options, gpus=gpus, jobs=jobs, kernel_backend=backend,
                      observer=None if quiet or not verbose else _verbose_observer())
    _, mine = of_this_space(spec, db)  # a cache shared with calls of other tune_params keeps theirs too
    with Store(db) as store:
        # as Kernel Tuner writes it in its cache, for `ksweep export --format kt-cache`
        store.set_meta("kt_problem_size", _plain_size(problem_size))
        store.set_meta("kt_kernel_name", given_name)  # the name Kernel Tuner's simulation mode compares
        stored = sorted(mine, key=lambda r: r.finished or 0.0)
        # the store's confirmation of the one shape × variant (its BEST is the pick when there is one)
        verdicts = standings_of(stored, store.measurements(), store.objective(),
                                store.default_configs()).confirmations if confirming else {}
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
    env = _environment(stored, problem_size, iterations, compiler_options, db, spec)
    ok = [r for r in results if objective in r and isinstance(r[objective], (int, float))]
    row_of = {config_id(r.params): row for r, row in zip(stored, results)}
    found = next((c for c in verdicts.values() if c.best is not None), None)  # one shape, one variant
    if found is not None and objective in row_of.get(found.best, {}):
        env["best_config"] = row_of[found.best]
        env["confirmed_time"] = found.verdicts[found.best].interval.median
    elif ok:
        pick = max if higher else min
        env["best_config"] = pick(ok, key=lambda r: r[objective])
    if ok:
        if not quiet:
            best = env["best_config"]
            shown = ", ".join(f"{k}={best[k]}" for k in [*tune_params, objective, *(metrics or {})] if k in best)
            if "confirmed_time" in env:  # the pick is the confirmation's: its row's time is one sweep run
                shown += f" (confirmed: median {env['confirmed_time']:.6g} ms over its confirmation runs)"
            print(f"best performing configuration: {shown}")
    elif not quiet:
        print("no results to report")
    for key in ("compile", "verification", "benchmark", "strategy", "framework"):
        env[f"total_{key}_time"] = sum(r[f"{key}_time"] for r in results)
    env["overhead_time"] = 1000 * (time.perf_counter() - started)
    return results, env


def _refuse(*, lang, verify, texmem_args, simulation_mode, observers, defines, compiler, objectives) -> None:
    if lang is not None and str(lang).upper() not in CUDA_LANGS:
        raise KtUnsupported(f"lang='{lang}': ksweep tunes CUDA kernels only (lang None, 'CUDA', 'CUPY' or 'NVCUDA')")
    if verify is not None:
        raise KtUnsupported("verify: ksweep compares outputs with answer itself (atol, and rtol 1e-5): give answer, "
                            "or use ksweep.tune_kernel with reference=\"file.py:function\"")
    if texmem_args:
        raise KtUnsupported("texmem_args: textures are not supported by ksweep's kernel mode")
    if simulation_mode:
        raise KtUnsupported("simulation_mode: replay a recorded cache with `ksweep replay` instead")
    if observers:
        raise KtUnsupported("observers: ksweep records the GPU's clocks, power and throttling by itself (NVML); "
                            "Kernel Tuner observers cannot be attached")
    if defines is not None:
        raise KtUnsupported("defines: ksweep passes each tunable parameter, the block size names and grid_size_x/y/z "
                            "as -D flags; a custom defines dict is not supported")
    if compiler not in (None, *COMPILERS):
        raise KtUnsupported(f"compiler='{compiler}': ksweep builds with 'nvcc' (the default) or 'nvrtc'")
    if objectives:
        raise KtUnsupported("objectives: ksweep.kt tunes one objective (objective=...)")


def _plain(value):
    """numpy scalars as Python values (ksweep's spaces hold ints, floats, strings, bools)."""
    return value.item() if isinstance(value, np.generic) else value


def _expr(text: str, what: str) -> str:
    try:
        parse(text)
    except ExprError as exc:
        raise KtUnsupported(f"{what} '{text}': {exc}") from None
    return text


def _plain_size(problem_size):
    """The problem size as Kernel Tuner's cache holds it: a number or string as given, a
    tuple as a list."""
    if isinstance(problem_size, (list, tuple)):
        return [_plain(s) for s in problem_size]
    return _plain(problem_size)


def _problem_size(problem_size) -> list[str]:
    """Three size expressions (1 where not given)."""
    if callable(problem_size):
        raise KtUnsupported("problem_size as a function: give numbers or expressions of the tunable parameters")
    items = list(problem_size) if isinstance(problem_size, (list, tuple)) else [problem_size]
    if not 1 <= len(items) <= 3:
        raise KtUnsupported(f"problem_size has {len(items)} dimensions: give 1 to 3")
    out = []
    for s in items:
        if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            out.append(str(int(s)))
        elif isinstance(s, str):  # an integer, as Kernel Tuner truncates it
            out.append(f"int({_expr(s, 'problem_size')})")
        else:
            raise KtUnsupported(f"problem_size entry {s!r}: give integers or strings")
    return out + ["1"] * (3 - len(out))


def _divisor(div, default: str, tune_params: Mapping[str, Any], what: str) -> str:
    """Kernel Tuner's grid divisor as an expression: None -> the block size name (1 when it
    is not tuned), an int, an expression (its value truncated to an integer), or a list of
    those multiplied."""
    if div is None:
        return default if default in tune_params else "1"
    if isinstance(div, (int, np.integer)) and not isinstance(div, bool):
        return str(int(div))
    if isinstance(div, str):  # an integer, as Kernel Tuner truncates it: "block_size_x/32"
        return f"int({_expr(div, what)})"
    if callable(div):
        raise KtUnsupported(f"{what} as a function: give a parameter name, an expression or a list of them")
    parts = [_divisor(d, "1", tune_params, what) for d in div]
    return " * ".join(parts) if parts else "1"


def _smem(smem_args) -> str | None:
    if not smem_args:
        return None
    size = smem_args.get("size")
    if size is None or callable(size) or set(smem_args) - {"size"}:
        raise KtUnsupported("smem_args: give {'size': bytes or an expression of the tunable parameters}")
    return str(int(size)) if isinstance(size, (int, np.integer)) else _expr(str(size), "smem_args size")


def lang_build(lang, compiler: str | None, options: list[str]) -> tuple[str, tuple[str, ...]]:
    """(compiler, flags) that build a config as Kernel Tuner's backend for ``lang`` does, so
    that both tools time the same binary: ``cupy`` and ``nvcuda`` compile with NVRTC and add
    ``--std=c++11`` unless a standard is given; CuPy also adds ``-ftz=true`` (denormals
    flushed to zero, which changes the code of divisions and square roots); ``CUDA`` (PyCUDA,
    Kernel Tuner's default) and no ``lang`` compile with nvcc. ``compiler``, when given,
    wins; the flags Kernel Tuner's backend would add come before ``options``."""
    kind = str(lang).upper() if lang is not None else "CUDA"
    compiler = compiler or ("nvrtc" if kind in ("CUPY", "NVCUDA") else "nvcc")
    added: list[str] = []
    if kind in ("CUPY", "NVCUDA") and compiler == "nvrtc":
        if not any(o.lstrip("-").startswith("std=") for o in options):
            added.append("--std=c++11")
        if kind == "CUPY" and not any(o.lstrip("-").startswith("ftz") for o in options):
            added.append("-ftz=true")
    return compiler, (*default_flags(compiler), *added, *options)


def _options(compiler_options) -> list[str]:
    if compiler_options is None:
        return []
    if isinstance(compiler_options, str) or not all(isinstance(o, str) for o in compiler_options):
        raise KtUnsupported("compiler_options: give a list of strings, e.g. ['-use_fast_math']")
    return list(compiler_options)


def _metrics(metrics, tune_params: Mapping[str, Any]) -> list[tuple[str, Callable[[dict], Any]]]:
    """Kernel Tuner's metrics, in order: name -> a function of the result's dict, or an
    expression of the parameters, ``time`` and the metrics before it."""
    if metrics is None:
        return []
    if not isinstance(metrics, Mapping):
        raise KtUnsupported("metrics: give a dict of name -> a function of the result's dict or an expression")
    known = {*tune_params, "time"}
    out: list[tuple[str, Callable[[dict], Any]]] = []
    for name, metric in metrics.items():
        if isinstance(metric, str):
            expr = parse(_expr(metric, f"metric {name}"))
            unknown = sorted(expr.names - known)
            if unknown:
                raise KtUnsupported(f"metric {name} '{metric}': {', '.join(unknown)} is not a parameter, time or "
                                    "a metric before it")
            out.append((name, lambda row, e=expr: e.evaluate(row)))
        elif callable(metric):
            out.append((name, metric))
        else:
            raise KtUnsupported(f"metric {name}: give a function of the result's dict or an expression, not "
                                f"{metric!r}")
        known.add(name)
    return out


def _objective(objective, higher, metrics) -> tuple[str, bool]:
    # Kernel Tuner 1.5 also takes one objective (and its direction) as a list of one
    if isinstance(objective, (list, tuple)):
        if len(objective) != 1:
            raise KtUnsupported(f"objective {list(objective)!r}: ksweep.kt tunes one objective; give one name")
        objective = objective[0]
    if isinstance(higher, (list, tuple)):
        if len(higher) != 1:
            raise KtUnsupported(f"objective_higher_is_better {list(higher)!r}: give one True or False, for the one "
                                "objective")
        higher = higher[0]
    objective = objective or "time"
    if not isinstance(objective, str):
        raise KtUnsupported(f"objective {objective!r}: give the name of time or of one of the metrics")
    if objective != "time" and objective not in (metrics or {}):
        raise KtUnsupported(f"objective '{objective}': ksweep measures time; another objective must be one of the "
                            "metrics given")
    if higher is None:
        if objective not in MAXIMISED | MINIMISED:
            raise KtUnsupported(f"objective '{objective}': say objective_higher_is_better")
        higher = objective in MAXIMISED
    return objective, bool(higher)


def _strategy(strategy, options: Mapping[str, Any]) -> tuple[str, int | None, float | None, float | None]:
    """ksweep's strategy, its budget (evaluations, seconds) and the share of the space to
    sample, as Kernel Tuner 1.5 reads ``strategy_options``: brute_force takes none,
    random_sample covers ``fraction`` (0.1 by default) of the space unless ``max_fevals``
    is given, bayes_opt stops after ``max_fevals`` (100 by default) and takes no fraction."""
    from .strategies import STRATEGIES as KSWEEP

    if strategy is not None and not isinstance(strategy, str):
        raise KtUnsupported("strategy: a custom strategy object is not supported; give a strategy name")
    name = STRATEGIES.get(strategy or "brute_force", strategy)
    if name not in KSWEEP:
        raise KtUnsupported(f"strategy '{strategy}': ksweep.kt runs {', '.join(STRATEGIES)} (as ksweep's "
                            f"{', '.join(STRATEGIES.values())}) or ksweep's own {', '.join(KSWEEP)}")
    unknown = set(options) - STRATEGY_OPTIONS
    if unknown:
        raise KtUnsupported(f"strategy_options {', '.join(sorted(unknown))}: ksweep.kt takes "
                            f"{', '.join(sorted(STRATEGY_OPTIONS))}")
    max_evals = options.get("max_fevals")
    if max_evals is not None and not _whole_number(max_evals):
        raise KtUnsupported(f"strategy_options max_fevals {max_evals!r}: give a whole number of at least 1")
    fraction = options.get("fraction")
    if fraction is not None and not (isinstance(fraction, (int, float, np.integer, np.floating))
                                     and not isinstance(fraction, bool) and 0 < fraction <= 1):
        raise KtUnsupported(f"strategy_options fraction {fraction!r}: give a number above 0 and at most 1")
    kt_name = strategy or "brute_force"
    if kt_name == "brute_force" and options:
        raise KtUnsupported(f"strategy_options {', '.join(sorted(options))}: brute_force measures every config and "
                            "takes no strategy_options (Kernel Tuner refuses them too); give strategy='random_sample' "
                            "to measure a part of the space")
    if kt_name == "bayes_opt" and fraction is not None:
        raise KtUnsupported("strategy_options fraction: bayes_opt takes max_fevals, not fraction (as Kernel Tuner)")
    if max_evals is not None:
        fraction = None  # max_fevals decides, as in Kernel Tuner's random_sample
    elif kt_name == "random_sample" and fraction is None:
        fraction = 0.1
    elif kt_name == "bayes_opt":
        max_evals = 100
    return (name, int(max_evals) if max_evals is not None else None, options.get("time_limit"),
            float(fraction) if fraction is not None else None)


def _whole_number(value) -> bool:
    """An int, or a float holding one (Kernel Tuner's scripts compute budgets); not a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    return math.isfinite(value) and float(value) == int(value)


def _restrictions(restrictions, tune_params: Mapping[str, Any]) -> list[Constraint]:
    """Kernel Tuner's restrictions as constraints: a function of the whole config, or a list
    of expressions, functions of the parameters (as keywords), or (function, names) pairs."""
    if restrictions is None:
        return []
    if callable(restrictions):
        return [_function_constraint("restrictions", lambda config: restrictions(_params(config, tune_params)))]
    out = []
    for i, r in enumerate(restrictions):
        if isinstance(r, str):
            out.append(Constraint(f"restriction {i}", expr=parse(_expr(r, "restriction")), reason=r))
        elif callable(r):
            out.append(_function_constraint(f"restriction {i}", lambda config, f=r: f(**_params(config, tune_params))))
        elif isinstance(r, tuple) and len(r) in (2, 3) and callable(r[0]):
            out.append(_function_constraint(
                f"restriction {i}", lambda config, f=r[0], names=tuple(r[1]): f(**{n: config[n] for n in names})))
        else:
            raise KtUnsupported(f"restriction {r!r}: give an expression, a function or (function, parameter names)")
    return out


def _params(config: Mapping[str, Any], tune_params: Mapping[str, Any]) -> dict:
    return {name: config[name] for name in tune_params}


def _function_constraint(name: str, fn: Callable[[Mapping[str, Any]], bool]) -> Constraint:
    def check(config):  # the one parameter called `config`: ksweep passes every name as a dict
        return bool(fn(config))

    return Constraint(name, function=PyFunction(path=Path(name), function=name, fn=check))


def _kernel_name(kernel_name: str, tune_params: Mapping[str, Any]) -> str:
    """A templated name as Kernel Tuner reads it (each tunable parameter named among the
    template arguments stands for its value) in ksweep's form, those names placeholders:
    ``"vscale<float, TILE>"`` -> ``"vscale<float, {TILE}>"``. A name with placeholders already
    is left as it is."""
    base, sep, arguments = kernel_name.partition("<")
    if not sep or "{" in arguments:
        return kernel_name
    return base + sep + re.sub(r"\w+", lambda m: f"{{{m[0]}}}" if m[0] in tune_params else m[0], arguments)


def _source_file(kernel_name: str, kernel_source) -> Path:
    """The kernel's file: a path as it is, or code (Kernel Tuner accepts both) written to the
    workspace of the current folder under a name of its content."""
    if isinstance(kernel_source, (list, tuple)):
        if len(kernel_source) != 1:
            raise KtUnsupported("kernel_source as several files: give the kernel's file (it may #include the others)")
        kernel_source = kernel_source[0]
    if isinstance(kernel_source, Path) or (isinstance(kernel_source, str) and "\n" not in kernel_source
                                           and Path(kernel_source).is_file()):
        return Path(kernel_source).resolve()
    if not isinstance(kernel_source, str):
        raise KtUnsupported(f"kernel_source: give a file name or the code as a string, not a "
                            f"{type(kernel_source).__name__}")
    if "\n" not in kernel_source and kernel_source.endswith((".cu", ".cuh", ".h")):
        raise KtUnsupported(f"kernel_source '{kernel_source}' does not exist")
    from .workspace import workspace

    folder = workspace(Path.cwd()) / "kt"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(kernel_source.encode()).hexdigest()[:16]
    path = folder / f"{kernel_name.split('<')[0]}-{digest}.cu"
    if not path.exists():
        path.write_text(kernel_source)
    return path


def _fresh_db(source: Path, kernel_name: str) -> Path:
    from .workspace import workspace

    folder = workspace(source.parent) / "kt-runs"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return folder / f"{kernel_name.split('<')[0]}-{stamp}.db"


def _verbose_observer():
    from .report.progress import make_observer

    return make_observer("ms", quiet=False)


def _environment(stored, problem_size, iterations, compiler_options, db: Path, spec) -> dict:
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
