"""``ksweep.kt.tune_kernel``: Kernel Tuner 1.5's call on ksweep's kernel mode. Its keywords
are read by ``_keywords.py`` into a kernel-mode spec (``ksweep.app.kernel``), swept by
``ksweep.app.sweep``, and the stored results returned as Kernel Tuner returns them
(``_results.py``)."""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np

from ..errors import KsweepError
from ..spec.expr import parse
from ..spec.kernel import Timing, valid_race
from ..spec.model import Build, Constraint, Derived
from ._inputs import (check_names_kernel, checked_arguments, checked_block_size_names, checked_cache,
                      checked_iterations, include_dirs, source_text)
from ._keywords import (DEFAULT_BLOCK, KtUnsupported, compiler_flags, divisor,
                        lang_build, metric_functions, objective_of, plain, plain_size, refuse,
                        restriction_constraints, size_exprs, smem_expr, strategy_of, template_name, whole_number)
from ._results import environment, rows


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
    from ..app import kernel, sweep
    from ..job import config_id
    from ..gpu.limits import DEFAULT_ARCH
    from ..store.sqlite import Store
    from ..store.standings import standings_of
    from ..sweep.options import SweepOptions
    from ..verify.confirm import Confirmation

    started = time.perf_counter()
    refuse(lang=lang, verify=verify, texmem_args=texmem_args, simulation_mode=simulation_mode, observers=observers,
           defines=defines, compiler=compiler, objectives=objectives)
    iterations = checked_iterations(iterations)
    names = checked_block_size_names(block_size_names)
    arrays = checked_arguments(arguments)
    cache = checked_cache(cache)
    timing = replace(Timing(), min_reps=iterations, max_reps=max(iterations, Timing().max_reps))
    if race is not None:
        factor = float(race) if isinstance(race, (int, float)) and not isinstance(race, bool) else math.nan
        if not valid_race(factor):
            raise KtUnsupported(f"race={race!r}: give 0 (time every config `iterations` times) or a factor of at "
                                "least 1, e.g. 1.5")
        timing = replace(timing, race=factor)
    tune_params = {name: [plain(v) for v in values] for name, values in dict(tune_params).items()}
    block = [names[i] if names[i] in tune_params else str(DEFAULT_BLOCK[i]) for i in range(3)]
    sizes = size_exprs(problem_size)
    divisors = [divisor(d, names[i], tune_params, f"grid_div_{'xyz'[i]}")
                for i, d in enumerate((grid_div_x, grid_div_y, grid_div_z))]
    grid = [f"cdiv({sizes[i]}, {divisors[i]})" for i in range(3)]
    restricted = restriction_constraints(restrictions, tune_params)
    measures = metric_functions(metrics, tune_params)
    objective, higher = objective_of(objective, objective_higher_is_better, metrics)
    strategy_name, max_evals, time_limit, fraction = strategy_of(strategy, strategy_options or {})
    confirming = bool(confirm) and objective == "time"
    try:  # its values checked now, before anything is written
        options = SweepOptions(strategy=strategy_name, max_evals=max_evals, time_limit=time_limit,
                               seed=int(seed) if whole_number(seed) else (seed or 0), record_pruned=False,  # as Kernel Tuner: restricted configs are not results
                               confirm=Confirmation(default=False) if confirming else None)  # no extra config
    except KsweepError as exc:
        raise KtUnsupported(str(exc).replace("max_evals", "strategy_options max_fevals")
                            .replace("time_limit", "strategy_options time_limit")) from None
    if objective != "time" and strategy_name != "grid":
        raise KtUnsupported(f"objective '{objective}': ksweep searches on time; a metric as the objective works with "
                            f"strategy='brute_force' only (every config is measured, then ranked by the metric)")
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
    compiler, flags = lang_build(lang, compiler, compiler_flags(compiler_options))
    source = _source_file(kernel_name, kernel_source, flags)
    given_name, kernel_name = kernel_name, template_name(kernel_name, tune_params)
    arch = arch or DEFAULT_ARCH
    spec = kernel.kernel_tuning_spec(
        kernel_name, source, {"kernel_tuner": 1}, arrays, tune_params, grid=grid, block=block, smem=smem_expr(smem_args),
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
        from ..space.space import Space

        options = replace(options, max_evals=max(1, math.ceil(fraction * Space.from_spec(spec).size)))
    # cache: a ksweep database beside it (resumed as Kernel Tuner resumes its cache); without
    # one, a fresh database per call, so that nothing is taken from an earlier call
    db = cache.with_suffix(".db") if cache is not None else _fresh_db(source, kernel_name)
    gpus = None if parallel else [int(device)]
    _, db = sweep.run_sweep(spec, db=db, options=options, gpus=gpus, jobs=jobs, kernel_backend=backend,
                            observer=None if quiet or not verbose else _verbose_observer())
    _, mine = kernel.of_this_space(spec, db)  # a cache shared with calls of other tune_params keeps theirs too
    with Store(db) as store:
        # as Kernel Tuner writes it in its cache, for `ksweep export --format kt-cache`
        store.set_meta("kt_problem_size", plain_size(problem_size))
        store.set_meta("kt_kernel_name", given_name)  # the name Kernel Tuner's simulation mode compares
        stored = sorted(mine, key=lambda r: r.finished or 0.0)
        # the store's confirmation of the one shape × variant (its BEST is the pick when there is one)
        verdicts = standings_of(stored, store.measurements(), store.objective(),
                                store.default_configs()).confirmations if confirming else {}
    results = rows(stored, tune_params, measures)
    env = environment(stored, problem_size, iterations, compiler_options, db, spec)
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


def _source_file(kernel_name: str, kernel_source, flags=()) -> Path:
    """The kernel's file: a path as it is, or code (Kernel Tuner accepts both) written to the
    workspace of the current folder under a name of its content; either checked first
    (``_inputs.py``: readable UTF-8 text that names the kernel)."""
    path, text = source_text(kernel_source)
    check_names_kernel(kernel_name, path, text, include_dirs(flags))
    if path is not None:
        return path
    from ..workspace import workspace

    folder = workspace(Path.cwd()) / "kt"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = folder / f"{kernel_name.split('<')[0]}-{digest}.cu"
    if not path.exists():
        path.write_text(text)
    return path


def _fresh_db(source: Path, kernel_name: str) -> Path:
    from ..workspace import workspace

    folder = workspace(source.parent) / "kt-runs"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return folder / f"{kernel_name.split('<')[0]}-{stamp}.db"


def _verbose_observer():
    from ..report.progress import make_observer

    return make_observer("ms", quiet=False)
