"""``ksweep bench-strategies DATASET...``: compare search strategies on recorded data."""

from __future__ import annotations

import argparse
import json
import sys

from ..app.bench_strategies import STRATEGIES, bench
from ..errors import KsweepError
from .main import count_of


def _int_list(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got '{text}'") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"budgets must be positive integers, got '{text}'")
    return out


def _names(text: str) -> list[str]:
    names = list(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown strategy '{(unknown or [text])[0]}': choose from {', '.join(STRATEGIES)}")
    return names


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "bench-strategies",
        help="compare search strategies on recorded tuning results",
        description="Replay every strategy on every dataset at every budget, repeat r with seed r. "
        "ratio = optimum / best valid time found; evals-to-5%% = evaluations until the best found "
        "is within 5%% of the optimum. Random search is also given exactly, not simulated.",
    )
    p.add_argument("datasets", nargs="+", metavar="DATASET", help="Kernel Tuner cache or T4 results files")
    p.add_argument("--strategies", type=_names, default=None,
                   help=f"comma-separated (default: all: {','.join(STRATEGIES)}; those whose optional package "
                        "is not installed are left out, with a note)")
    p.add_argument("--budgets", type=_int_list, default=[25, 50, 100, 200], help="comma-separated (default 25,50,100,200)")
    p.add_argument("--repeats", type=int, default=30, help="repeats per strategy, dataset and budget (default 30)")
    p.add_argument("--jobs", type=count_of("--jobs"), default=None, help="worker processes (default: the CPU count)")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p.add_argument("--save", metavar="FILE.json", help="also write the records to FILE.json")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    p.add_argument("--plot", metavar="FILE.png", help="draw best-found-versus-evaluations curves")
    p.add_argument("--warm-start-from", metavar="PAIRS",
                   help="also search each TARGET warm-started from the recorded results of SOURCE: "
                        "comma-separated TARGET<-SOURCE pairs of dataset names (a file's name without "
                        ".json.gz), or same-kernel: every ordered pair of datasets whose names agree up to "
                        "the first underscore; each pair is a table 'TARGET ← SOURCE'")
    p.add_argument("--warm-only", action="store_true",
                   help="with --warm-start-from: only the warm-started searches, not the cold ones")
    p.set_defaults(handler=run)
    return p


def run(args: argparse.Namespace) -> int:
    if args.repeats < 1:
        raise KsweepError(f"--repeats must be at least 1, got {args.repeats}")
    progress = None if args.json or not sys.stderr.isatty() else _progress
    done = bench(args.datasets, args.strategies, args.budgets, args.repeats, jobs=args.jobs,
                 warm_start_from=args.warm_start_from, warm_only=args.warm_only, progress=progress,
                 note=lambda missing: print(f"note: {missing}; left out", file=sys.stderr))
    result, datasets = done.result, done.datasets
    if progress:
        print(file=sys.stderr)
    records = [r.as_json() for r in result.records]
    if args.save:
        try:
            with open(args.save, "w") as f:
                json.dump(records, f, indent=1)
        except OSError as exc:
            raise KsweepError(f"--save {args.save}: cannot write: {exc.strerror or exc}") from exc
    if args.json:
        print(json.dumps(records, indent=1))
    elif args.markdown:
        from ..report.bench_tables import markdown

        print(markdown(result.records))
    else:
        _print_tables(result.records)
    if args.plot:
        from ..report.bench_plot import plot_curves

        path = plot_curves(result, datasets, args.plot)
        if not args.json:
            print(f"curves written to {path}")
    return 0


def _print_tables(records) -> None:
    from rich.table import Table

    from ..report.bench_tables import tables
    from ..report.table import wide_console

    console = wide_console()  # a pipe gets whole lines
    console.print("cells: mean / median ratio (optimum / best found), median evals to within 5% "
                  "(repeats that got there; random-exact: its probability)")
    for title, header, rows in tables(records):
        t = Table(title=title, title_justify="left")
        for h in header:
            t.add_column(h, justify="left" if h == "strategy" else "right")
        for row in rows:
            t.add_row(*row)
        console.print(t)


def _progress(done: int, total: int) -> None:
    print(f"\r{done}/{total} replays", end="", file=sys.stderr, flush=True)
