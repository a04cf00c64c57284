"""Kernel Tuner's keywords read as ksweep's: each checked and mapped onto a piece of a
kernel-mode spec (size and grid expressions, the block, shared memory, restrictions as
constraints, metrics, the objective, the strategy and its budget, the build); what ksweep
cannot honour is one ``KtUnsupported`` line."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ExprError, KsweepError
from ..spec.expr import parse
from ..spec.kernel import COMPILERS, default_flags
from ..spec.model import Constraint
from ..spec.pyref import PyFunction

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


def refuse(*, lang, verify, texmem_args, simulation_mode, observers, defines, compiler, objectives) -> None:
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


def plain(value):
    """numpy scalars as Python values (ksweep's spaces hold ints, floats, strings, bools)."""
    return value.item() if isinstance(value, np.generic) else value


def checked_expr(text: str, what: str) -> str:
    try:
        parse(text)
    except ExprError as exc:
        raise KtUnsupported(f"{what} '{text}': {exc}") from None
    return text


def plain_size(problem_size):
    """The problem size as Kernel Tuner's cache holds it: a number or string as given, a
    tuple as a list."""
    if isinstance(problem_size, (list, tuple)):
        return [plain(s) for s in problem_size]
    return plain(problem_size)


def size_exprs(problem_size) -> list[str]:
    """Three size expressions (1 where not given)."""
    if callable(problem_size):
        raise KtUnsupported("problem_size as a function: give numbers or expressions of the tunable parameters")
    items = list(problem_size) if isinstance(problem_size, (list, tuple)) else [problem_size]
    if not 1 <= len(items) <= 3:
        raise KtUnsupported(f"problem_size has {len(items)} dimensions: give 1 to 3")
    out = []
    for s in items:
        if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            if s < 1:
                raise KtUnsupported(f"problem_size entry {s!r}: give sizes of at least 1")
            out.append(str(int(s)))
        elif isinstance(s, str):  # an integer, as Kernel Tuner truncates it
            out.append(f"int({checked_expr(s, 'problem_size')})")
        else:
            raise KtUnsupported(f"problem_size entry {s!r}: give integers or strings")
    return out + ["1"] * (3 - len(out))


def divisor(div, default: str, tune_params: Mapping[str, Any], what: str) -> str:
    """Kernel Tuner's grid divisor as an expression: None -> the block size name (1 when it
    is not tuned), an int, an expression (its value truncated to an integer), or a list of
    those multiplied."""
    if div is None:
        return default if default in tune_params else "1"
    if isinstance(div, (int, np.integer)) and not isinstance(div, bool):
        return str(int(div))
    if isinstance(div, str):  # an integer, as Kernel Tuner truncates it: "block_size_x/32"
        return f"int({checked_expr(div, what)})"
    if callable(div):
        raise KtUnsupported(f"{what} as a function: give a parameter name, an expression or a list of them")
    parts = [divisor(d, "1", tune_params, what) for d in div]
    return " * ".join(parts) if parts else "1"


def smem_expr(smem_args) -> str | None:
    if not smem_args:
        return None
    size = smem_args.get("size")
    if size is None or callable(size) or set(smem_args) - {"size"}:
        raise KtUnsupported("smem_args: give {'size': bytes or an expression of the tunable parameters}")
    return str(int(size)) if isinstance(size, (int, np.integer)) else checked_expr(str(size), "smem_args size")


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


def compiler_flags(compiler_options) -> list[str]:
    if compiler_options is None:
        return []
    if isinstance(compiler_options, str) or not all(isinstance(o, str) for o in compiler_options):
        raise KtUnsupported("compiler_options: give a list of strings, e.g. ['-use_fast_math']")
    return list(compiler_options)


def metric_functions(metrics, tune_params: Mapping[str, Any]) -> list[tuple[str, Callable[[dict], Any]]]:
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
            expr = parse(checked_expr(metric, f"metric {name}"))
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


def objective_of(objective, higher, metrics) -> tuple[str, bool]:
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


def strategy_of(strategy, options: Mapping[str, Any]) -> tuple[str, int | None, float | None, float | None]:
    """ksweep's strategy, its budget (evaluations, seconds) and the share of the space to
    sample, as Kernel Tuner 1.5 reads ``strategy_options``: brute_force takes none,
    random_sample covers ``fraction`` (0.1 by default) of the space unless ``max_fevals``
    is given, bayes_opt stops after ``max_fevals`` (100 by default) and takes no fraction."""
    from ..strategies import STRATEGIES as KSWEEP

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
    if max_evals is not None and not whole_number(max_evals):
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


def whole_number(value) -> bool:
    """An int, or a float holding one (Kernel Tuner's scripts compute budgets); not a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    return math.isfinite(value) and float(value) == int(value)


def restriction_constraints(restrictions, tune_params: Mapping[str, Any]) -> list[Constraint]:
    """Kernel Tuner's restrictions as constraints: a function of the whole config, or a list
    of expressions, functions of the parameters (as keywords), or (function, names) pairs."""
    if restrictions is None:
        return []
    if callable(restrictions):
        return [_function_constraint("restrictions", lambda config: restrictions(_params(config, tune_params)))]
    out = []
    for i, r in enumerate(restrictions):
        if isinstance(r, str):
            out.append(Constraint(f"restriction {i}", expr=parse(checked_expr(r, "restriction")), reason=r))
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


def template_name(kernel_name: str, tune_params: Mapping[str, Any]) -> str:
    """A templated name as Kernel Tuner reads it (each tunable parameter named among the
    template arguments stands for its value) in ksweep's form, those names placeholders:
    ``"vscale<float, TILE>"`` -> ``"vscale<float, {TILE}>"``. A name with placeholders already
    is left as it is."""
    base, sep, arguments = kernel_name.partition("<")
    if not sep or "{" in arguments:
        return kernel_name
    return base + sep + re.sub(r"\w+", lambda m: f"{{{m[0]}}}" if m[0] in tune_params else m[0], arguments)
