"""``ksweep replay DATASET``: run a search strategy against recorded results, no GPU."""

from __future__ import annotations

import argparse
import json

from ..app.replay import DEFAULT, STRATEGIES, replay
from .main import count_of, seconds_of


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "replay",
        help="run a search strategy against recorded tuning results (no GPU)",
        description="Run a search strategy against a recorded brute-force dataset (a Kernel Tuner "
        "cache file or a T4 results file, plain or gzipped): each config it asks for is answered "
        "with its recorded time, a recorded failure as a failure.",
    )
    p.add_argument("dataset", help="Kernel Tuner cache or T4 results file (.json or .json.gz)")
    p.add_argument("--strategy", default=DEFAULT, choices=STRATEGIES, help=f"search strategy (default {DEFAULT})")
    p.add_argument("--max-evals", type=count_of("--max-evals"), default=100, metavar="N", help="evaluation budget; failures count (default 100)")
    p.add_argument("--time-limit", type=seconds_of("--time-limit"), default=None, metavar="S", help="stop after S seconds")
    p.add_argument("--patience", type=count_of("--patience"), default=None, metavar="N", help="stop after N evaluations without improvement")
    p.add_argument("--seed", type=int, default=0, metavar="K", help="random seed (default 0)")
    p.add_argument("--batch", type=count_of("--batch"), default=1, metavar="K", help="configs asked at a time (default 1)")
    p.add_argument("--warm-start", action="append", metavar="SOURCE",
                   help="start from the results of SOURCE: a recorded dataset or a ksweep database of the "
                        "same kernel (another GPU, shape or revision); parameters are matched by name "
                        "(repeatable; see docs/strategies.md#warm-start)")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace) -> int:
    done = replay(args.dataset, args.strategy, seed=args.seed, max_evals=args.max_evals, time_limit=args.time_limit,
                  patience=args.patience, batch=args.batch, warm_start=args.warm_start or ())
    dataset, prior, out = done.dataset, done.prior, done.outcome
    if args.json:
        print(json.dumps({**out.__dict__, "ratio": out.ratio}))
        return 0
    from ..report.table import wide_console

    console = wide_console()  # a pipe gets whole lines (grep finds a config on one)
    console.print(f"[bold]{out.dataset}[/]: {len(dataset)} recorded configs, {dataset.failures} failed; "
                  f"strategy [bold]{out.strategy}[/], seed {out.seed}")
    if prior is not None:
        console.print(f"warm start from: {', '.join(prior.labels)}")
    console.print(f"evaluations: {out.evaluations} ({out.failures} failed)")
    if out.best_config is None:
        console.print("best: nothing valid found")
    else:
        config = " ".join(f"{k}={v}" for k, v in out.best_config.items())
        console.print(f"best:    {out.best_value:.6g} ms  {config}")
    console.print(f"optimum: {out.optimum:.6g} ms")
    reached = "never" if out.evals_to_5pct is None else f"after {out.evals_to_5pct} evaluations"
    console.print(f"ratio (optimum / best): {out.ratio:.4f}; within 5% of the optimum: {reached}")
    return 0
