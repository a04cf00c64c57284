"""ksweep run SPEC: build, run, verify and store every config; print the table."""

from __future__ import annotations


import argparse
import signal
from dataclasses import replace
from pathlib import Path

from ..errors import KsweepError
from ..report.export import to_csv
from ..report.progress import make_observer
from ..report.table import render, wide_console
from ..spec.load import load_spec
from ..sweep.driver import SweepOptions
from ..sweep.local import default_db_path, make_dask_executor, run_sweep
from .report import load_results


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="sweep a spec: build, run, verify, store, report")
    p.add_argument("spec", help="the sweep spec (TOML)")
    p.add_argument("--db", help="results database (default: .ksweep/<spec>.db beside the spec)")
    p.add_argument("--jobs", "-j", type=int, help="parallel builds (default: all cores)")
    p.add_argument("--strategy", default="auto", help="grid, phased, random, bayes or auto (default)")
    p.add_argument("--max-evals", type=int, help="evaluate at most N configs per shape and variant (failures count)")
    p.add_argument("--time-limit", type=float, help="stop after S seconds")
    p.add_argument("--patience", type=int, help="stop a shape/variant after N evaluations without improvement")
    p.add_argument("--seed", type=int, default=0, help="seed of the search strategy")
    p.add_argument("--shape", action="append", help="only this shape (repeatable)")
    p.add_argument("--variant", action="append", help="only this variant (repeatable)")
    p.add_argument("--gpus", help="GPU indices to use, e.g. 0,1 (default: all visible)")
    p.add_argument("--cluster", metavar="local|tcp://HOST:PORT",
                   help="build and run on a Dask cluster: 'local' starts one on this host (a worker per GPU "
                        "plus a build worker); an address uses a running scheduler (needs ksweep[dask])")
    p.add_argument("--fake-gpus", type=int, metavar="N",
                   help="with --cluster local: N pretend GPUs (CUDA_VISIBLE_DEVICES=0..N-1), for tests without GPUs")
    p.add_argument("--shared-cache", metavar="DIR",
                   help="with --cluster: a build cache every worker sees at this path; binaries then travel by "
                        "path, not inside the tasks (default with --cluster local: .ksweep/cache beside the spec)")
    p.add_argument("--start-gap", type=seconds, metavar="S",
                   help="least seconds between run starts on one host (default: [run] start_gap, else 0.25 "
                        "where one host runs on several GPUs, 0 otherwise; 0 turns the gate off)")
    p.add_argument("--persistent", action=argparse.BooleanOptionalAction, default=None,
                   help="run every config in one long-lived process per GPU, built as a shared library whose "
                        "main ksweep calls (default: [run] persistent); see docs/spec.md")
    p.add_argument("--top", type=int, default=20, help="rows of the final table per shape/variant")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.set_defaults(handler=run)


def seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError(text)
    return value


def _sigterm(signum, frame):
    raise KeyboardInterrupt


def run(args) -> int:
    spec = load_spec(args.spec)
    if args.persistent is not None:
        spec = replace(spec, run=replace(spec.run, persistent=args.persistent))
    options = SweepOptions(
        strategy=args.strategy, seed=args.seed, max_evals=args.max_evals, time_limit=args.time_limit,
        patience=args.patience, shapes=tuple(args.shape) if args.shape else None,
        variants=tuple(args.variant) if args.variant else None,
    )
    gpus = [int(g) for g in args.gpus.split(",") if g.strip()] if args.gpus else None
    signal.signal(signal.SIGTERM, _sigterm)
    executor = _executor(spec, args, gpus)
    observer = make_observer(spec.objective.metric, args.quiet)
    interrupted = False
    try:
        summary, db = run_sweep(spec, db=args.db, options=options, gpus=gpus, jobs=args.jobs, observer=observer,
                                executor=executor, start_gap=args.start_gap)
    except KeyboardInterrupt:
        interrupted = True
        summary, db = None, Path(args.db) if args.db else None
    finally:
        if executor is not None:
            executor.shutdown()
    db = db or default_db_path(spec)
    if not db.exists():
        return 130 if interrupted else 0
    results, _, order = load_results(str(db))
    csv_path = db.with_suffix(".csv")
    csv_path.write_text(to_csv(results))
    console = wide_console()
    if not args.quiet:
        render([r for r in results if _selected(r, options)], spec.objective.metric, spec.objective.direction,
               console, param_order=order, top=args.top)
    if summary is not None:
        console.print(
            f"{summary.evaluated} evaluated, {summary.resumed} resumed from the store; "
            f"wall {summary.wall_seconds:.1f} s, build CPU {summary.build_cpu_seconds:.1f} s, "
            f"GPU {summary.gpu_seconds:.1f} s, GPU idle {100 * summary.gpu_idle_share:.0f}%, "
            f"{summary.configs_per_minute:.1f} configs/min", soft_wrap=True)
    console.print(f"results: {db}  csv: {csv_path}", soft_wrap=True)
    return 130 if interrupted else 0


def _executor(spec, args, gpus):
    """None (run_sweep's local executor) unless --cluster asks for a Dask one."""
    if args.cluster is None:
        if args.fake_gpus or args.shared_cache:
            raise KsweepError("--fake-gpus and --shared-cache apply to a Dask cluster: add --cluster local")
        return None
    return make_dask_executor(spec, args.cluster, gpus=gpus, fake_gpus=args.fake_gpus, jobs=args.jobs,
                              shared_cache=args.shared_cache, start_gap=args.start_gap)


def _selected(r, options: SweepOptions) -> bool:
    return (not options.shapes or r.shape in options.shapes) and (not options.variants or r.variant in options.variants)
