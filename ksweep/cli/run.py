"""ksweep run SPEC: build, run, verify and store every config; print the table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..app.estimate import EFFORTS, preset
from ..app.insights import headlines
from ..app.report import load_all, objectives_option
from ..app.sweep import Confirmation, SweepOptions, check_options, tune, with_overrides
from ..app.outputs import spec_inputs
from ..app.wiring import database, load_spec
from ..errors import KsweepError
from ..report.pareto import render_fronts
from ..report.rank import unverified_notes
from ..report.progress import make_observer, summary_line
from ..report.table import render, wide_console
from .main import count_of, parse_gpus, seconds_of


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="sweep a spec: build, run, verify, store, report")
    p.add_argument("spec", help="the sweep spec (TOML)")
    p.add_argument("--db", help="results database (default: .ksweep/<spec>.db beside the spec)")
    p.add_argument("--cache", metavar="DIR",
                   help="build cache folder (default: cache/ beside --db when it is given, else .ksweep/cache "
                        "beside the spec)")
    p.add_argument("--jobs", "-j", type=count_of("--jobs"), help="parallel builds (default: all cores)")
    p.add_argument("--strategy", default=None,
                   help="auto (default), grid, phased, random, bayes or surrogate; see docs/strategies.md")
    p.add_argument("--warm-start", action="append", metavar="SOURCE",
                   help="start each search from the results of SOURCE: a ksweep database of the same spec "
                        "(another shape, GPU or source revision) or a recorded dataset of the same kernel "
                        "(Kernel Tuner cache or T4); parameters are matched by name (repeatable)")
    p.add_argument("--no-warm-start", dest="warm_between_shapes", action="store_false",
                   help="do not start each shape from the shapes this run swept before it")
    p.add_argument("--effort", choices=EFFORTS,
                   help="choose the strategy and budget from the space's size and the measured cost: "
                        "quick, default or full (printed before the sweep starts; --strategy and "
                        "--max-evals, when given, win)")
    p.add_argument("--max-evals", type=count_of("--max-evals"),
                   help="N evaluated configs per shape and variant in the database (failures count; configs "
                        "already there count too, so a finished sweep run again evaluates nothing)")
    p.add_argument("--time-limit", type=seconds_of("--time-limit"), help="stop after S seconds")
    p.add_argument("--cross", type=count_of("--cross"), default=0, metavar="K",
                   help="once every shape is searched, measure each shape's K best configs at every other "
                        "shape too (then confirm each shape's leaders again): what `export --robust` weighs one "
                        "config for every shape by (default: 0, not)")
    p.add_argument("--patience", type=count_of("--patience"),
                   help="stop a shape/variant after N evaluations without improvement")
    p.add_argument("--seed", type=int, default=0, help="seed of the search strategy")
    p.add_argument("--rerun", choices=("failed", "all"),
                   help="evaluate again the stored configs that failed, or all of them (default: resume, "
                        "re-evaluating only configs whose result key changed)")
    p.add_argument("--confirm", metavar="K,R[,W]", default=None,
                   help="after each shape/variant, measure the K best configs (those of them within W%% of the "
                        "second best; W 'all': whatever their values) and the default again in R interleaved rounds; "
                        "BEST, TIE and the speed-up over the default come from those (default 5,3,5; not "
                        "counted by --max-evals)")
    p.add_argument("--no-confirm", dest="confirm", action="store_const", const=NO_CONFIRM,
                   help="no confirmation runs: BEST is the single best measurement")
    p.add_argument("--no-harden", dest="harden", action="store_false",
                   help="do not run the confirmed leaders under compute-sanitizer (memcheck, racecheck, initcheck, "
                        "synccheck) before naming BEST; see docs/cli.md, \"Hardening\"")
    p.add_argument("--deterministic", action="store_true",
                   help="a config whose outputs (checksum, checked metrics; kernel mode: the output buffers) "
                        "differ from one run to the next may not be BEST ([harden] deterministic)")
    p.add_argument("--no-gpu-check", dest="gpu_check", action="store_false",
                   help="run a spec of CUDA programs on a host without a GPU (its programs need none)")
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
    p.add_argument("--start-gap", type=seconds_of("--start-gap"), metavar="S",
                   help="least seconds between run starts on one host (default: [run] start_gap, else 0.25 "
                        "where one host runs on several GPUs, 0 otherwise; 0 turns the gate off)")
    p.add_argument("--objectives", metavar="A,B",
                   help="rank by A and report the Pareto front over all of them (overrides [sweep] objective): "
                        "time, energy, power, gflops_per_watt (kernel mode measures energy through NVML) or "
                        "any metric, NAME:max for one to maximise; see docs/cli.md, \"Several objectives\"")
    p.add_argument("--persistent", action=argparse.BooleanOptionalAction, default=None,
                   help="run every config in one long-lived process per GPU, built as a shared library whose "
                        "main ksweep calls (default: [run] persistent); see docs/spec.md")
    p.add_argument("--top", type=int, default=20,
                   help="the N best valid configs and at most N failed or pruned ones per shape/variant in the "
                        "final table (default 20; 0: all)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.add_argument("--html", metavar="PAGE.html",
                   help="keep a self-contained HTML report of the database, rewritten as results arrive (it "
                        "reloads itself: progress, ETA, best so far); at the end the page report --html writes "
                        "(needs ksweep[html])")
    p.add_argument("--force", action="store_true", help="replace an existing --html page")
    p.set_defaults(handler=run)


def seconds(text: str) -> float:
    return seconds_of("--start-gap")(text)


NO_CONFIRM = "none"  # --no-confirm; no --confirm at all: the library's default (SweepOptions)


def _confirmation(text: str | None) -> Confirmation | None:
    """--confirm's plan: the library's default when none was typed (the CLI sets only what the
    user typed), None for --no-confirm."""
    if text is None:
        return SweepOptions().confirm
    if text == NO_CONFIRM:
        return None
    try:
        return Confirmation.parse(text)
    except ValueError as exc:
        raise KsweepError(str(exc)) from None


def run(args) -> int:
    spec = load_spec(args.spec)
    for warning in getattr(spec, "warnings", ()):
        print(f"ksweep: warning: {warning}", file=sys.stderr)
    spec = with_overrides(spec, persistent=args.persistent)
    if args.objectives is not None:
        spec = with_overrides(spec, objectives=objectives_option(args.objectives))
    db = database(spec, args.db)
    page = _page(args, spec, db)
    warm_start = tuple(args.warm_start or ())
    default = SweepOptions()  # the library's defaults, where the user typed nothing
    strategy, max_evals = args.strategy or default.strategy, args.max_evals
    shapes, variants = tuple(args.shape or ()) or None, tuple(args.variant or ()) or None
    # the shapes, variants and strategy, in the options' words, before an --effort estimate (tune()
    # checks them again, cheaply, and reads the warm-start sources, which the estimate needs first)
    check_options(spec, SweepOptions(strategy=strategy, shapes=shapes, variants=variants,
                                     warm_start=warm_start if args.effort else ()), cli=True)
    if args.effort:
        conf = _confirmation(args.confirm)
        # no build measured in the database (or a --warm-start one): `plan --estimate`'s sample
        # builds, when the build cache holds them (nothing is built here)
        effort, seconds, est = preset(spec, args.effort, db=args.db, cache=args.cache, warm_start=warm_start,
                                      jobs=args.jobs, gpus=parse_gpus(args.gpus), shapes=shapes, variants=variants,
                                      max_evals=args.max_evals,
                                      limited=args.time_limit is not None or args.patience is not None, confirm=conf)
        strategy = args.strategy or effort.strategy
        max_evals = effort.max_evals
        print(effort_line(effort, seconds, est, strategy, max_evals), file=sys.stderr)
    options = SweepOptions(
        strategy=strategy, seed=args.seed, max_evals=max_evals, time_limit=args.time_limit,
        patience=args.patience, shapes=shapes, variants=variants,
        rerun=args.rerun, gpu_check=args.gpu_check, warm_start=warm_start,
        warm_between_shapes=args.warm_between_shapes, confirm=_confirmation(args.confirm),
        harden=args.harden, deterministic=args.deterministic, cross=args.cross,
    )
    gpus = parse_gpus(args.gpus)
    observer = make_observer(spec.objective.metric, args.quiet)
    if page is not None:
        from ..app.html import LivePage

        observer = LivePage(observer, db, page, metric=spec.objective.metric)
    try:
        done = tune(spec, db=db, options=options, gpus=gpus, jobs=args.jobs, cluster=args.cluster,
                    fake_gpus=args.fake_gpus, shared_cache=args.shared_cache, start_gap=args.start_gap,
                    observer=observer, cache=args.cache)
    except KeyboardInterrupt as exc:
        stopped = getattr(exc, "summary", None)
        _show(spec, args, options, db, None, _final(observer, db))
        sys.stdout.flush()  # the hint comes last, below the table: on a terminal it is what stays in view
        print(f"ksweep: interrupted: {stopped.evaluated if stopped else 0} evaluated — run the same command "
              f"to resume", file=sys.stderr)
        return 130
    except KsweepError:
        try:
            _final(observer, db)  # a page that no longer says the sweep runs
        except KsweepError:
            pass  # the error that stopped the sweep is the one to say
        raise
    _show(spec, args, options, done.db, done.summary, _final(observer, done.db))
    failed = no_success(done.summary)
    if failed:
        print(f"ksweep: {failed}", file=sys.stderr)
        return 1
    return 0


def effort_line(effort, seconds, est, strategy: str, max_evals: int | None) -> str:
    """'effort default: auto, --max-evals 100 per shape × variant (100 evaluations (cold) of
    4,201 configs); expected 25 min on 16 cores, 1 GPU (from 40 results in the database)'"""
    from .plan import expected as at_least

    budget = "every config" if max_evals is None else f"--max-evals {max_evals} per shape × variant"
    where = est.machine
    stored = sum(est.stored)
    held = f", {stored:,} results in the database resumed" if stored else ""
    expected = (f"expected {at_least(est, seconds)} on {where} ({est.cost.describe()}{held})" if seconds is not None
                else "no build or run time measured yet: the preset goes by the space's size")
    return f"ksweep: effort {effort.name}: {strategy}, {budget} ({effort.reason}); {expected}"


def no_success(summary) -> str | None:
    """'no config succeeded: 12 COMPILE_ERROR, 3 HANG' when configs were evaluated (or
    resumed) and none of them is OK; None otherwise."""
    counts = {k: n for k, n in summary.counts.items() if k != "PRUNED" and n}
    if not counts or counts.get("OK"):
        return None
    parts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"no config succeeded: {parts} (the table above gives each one's message)"


def _page(args, spec, db: Path):
    """--html's page, checked (and the charting library found) before any work; None without it."""
    if args.html is None:
        return None
    from ..app.html import html_output, library

    page = html_output(args.html, db, force=args.force, reads=spec_inputs(spec))
    library()
    return page


def _final(observer, db: Path) -> Path | None:
    """The finished page of a run with --html (the one report --html writes), when its
    database was made."""
    final = getattr(observer, "final", None)  # app.html.LivePage's
    return final() if final is not None and Path(db).is_file() else None


def _show(spec, args, options: SweepOptions, db: Path, summary, page: Path | None = None) -> None:
    """The final table, the run's summary line, and where the results are."""
    if not db.exists():
        return
    standings, order, _ = load_all(str(db))
    results, conf = standings.results, standings.confirmations
    console = wide_console()
    selected = [r for r in results if _selected(r, options)]
    if not args.quiet:
        render(selected, spec.objective.metric, spec.objective.direction,
               console, param_order=order, top=args.top, confirmations=conf)
    if len(spec.objective_list()) > 1:  # the end of a multi-objective run: its front, quiet or not
        render_fronts(selected, spec.objective_list(), console, order)
    if summary is not None:
        for line in summary.hardened:  # what the hardening of the leaders found, or why it did not run
            console.print(f"harden: {line}", soft_wrap=True, markup=False)
        for note in summary.notes:  # a blind check, no compute-sanitizer
            print(f"ksweep: warning: {note}", file=sys.stderr)
        console.print(summary_line(summary), soft_wrap=True)
        for line in headlines(db):  # at most two: a failure rule, a knob with no effect
            console.print(line, soft_wrap=True, markup=False)
    for note in unverified_notes(selected):
        console.print(f"note: {note}", soft_wrap=True, markup=False)
    console.print(f"results: {db}  csv: {db.with_suffix('.csv')}" + (f"  page: {page}" if page else ""),
                  soft_wrap=True, markup=False)


def _selected(r, options: SweepOptions) -> bool:
    return (not options.shapes or r.shape in options.shapes) and (not options.variants or r.variant in options.variants)
