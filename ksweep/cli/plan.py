"""ksweep plan SPEC: what a sweep will do, before anything is compiled."""

from __future__ import annotations

import json
import sys

from ..report.plan_view import print_plan, spilled
from ..space.plan import make_plan
from ..spec.load import load_spec
from .main import count_of


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="count valid and pruned configs per shape and variant")
    p.add_argument("spec", help="the sweep spec (TOML)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--show", type=count_of("--show", least=0), default=5, metavar="N",
                   help="valid configs to show per shape/variant (default 5)")
    p.add_argument("--db", help="results database whose build and run times give the cost estimate "
                                "(default: .ksweep/<spec>.db beside the spec, when it exists)")
    p.add_argument("--estimate", type=count_of("--estimate"), metavar="N",
                   help="build N random valid configs now to measure the build time (kept in the build cache)")
    p.add_argument("--warm-start", action="append", metavar="SOURCE",
                   help="the sweep will be warm-started from SOURCE (smaller presets; its times are used "
                        "when the database has none)")
    p.add_argument("--jobs", "-j", type=count_of("--jobs"), help="parallel builds to plan for (default: all cores)")
    p.add_argument("--cache", metavar="DIR", help="build cache for --estimate's builds (default: as ksweep run's, "
                                                   "cache/ beside --db when it is given, else .ksweep/cache)")
    p.set_defaults(handler=run)


def run(args) -> int:
    spec = load_spec(args.spec)
    for warning in spec.warnings:
        print(f"ksweep: warning: {warning}", file=sys.stderr)
    plan = make_plan(spec, show=args.show)
    est = _estimate(spec, args)
    spills = _spilled(spec, args)
    if args.json:
        out = plan.to_json()
        out["estimate"] = _estimate_json(est)
        out["spilled"] = [{"variant": v, "shape": s, "configs": n, "will_run": spec.build.allow_spills}
                          for (v, s), n in spills.items()]
        print(json.dumps(out, indent=2, default=str))
    else:
        print_plan(spec, plan, spills=spills)
        _print_estimate(est)
    return 0


def _spilled(spec, args) -> dict:
    """(variant, shape) -> valid configs the database holds as SPILLS (report/plan_view.spilled)."""
    from pathlib import Path

    from ..store.sqlite import Store
    from ..sweep.local import default_db_path

    db = Path(args.db) if args.db else default_db_path(spec)
    if not db.exists():
        return {}
    with Store(db, create=False) as store:
        return spilled(spec, store.results())


def _estimate(spec, args):
    from pathlib import Path

    from ..api import cache_folder, estimate, sample_builds
    from ..report.estimate import sample_cost
    from ..sweep.local import default_db_path

    # the build cache `ksweep run` with the same --db and --cache will use, so that it reuses the samples
    cache = cache_folder(args.db, args.cache)
    if args.warm_start:
        from ..warm.sources import check_warm_start

        check_warm_start(args.warm_start, spec.param_names())  # as ksweep run will
    cost = sample_cost(sample_builds(spec, args.estimate, cache=cache)) if args.estimate else None
    db = Path(args.db) if args.db else default_db_path(spec)
    return estimate(spec, db=db, warm_start=tuple(args.warm_start or ()), cost=cost, jobs=args.jobs)


def _estimate_json(est) -> dict:
    return {
        "cores": est.cores, "gpus": est.gpus, "warm": est.warm,
        "cost": None if est.cost is None else est.cost.__dict__,
        "exhaustive_seconds": est.exhaustive_seconds, "lower_bound": est.lower_bound, "stored": list(est.stored),
        "presets": [{"effort": e.name, "strategy": e.strategy, "max_evals": e.max_evals, "reason": e.reason,
                     "seconds": t} for e, t in est.presets],
    }


def expected(est, seconds: float) -> str:
    """'12 min', or 'at least 12 min' when the figure counts builds or runs alone (one of them
    was not measured)."""
    from ..report.estimate import duration

    return ("at least " if est.lower_bound else "") + duration(seconds)


def _print_estimate(est) -> None:
    where = est.machine
    print()
    if est.cost is None:
        print(f"cost: no build or run time measured yet (give --estimate N to build N configs now, "
              f"or --db a database of an earlier sweep)")
    else:
        print(f"cost on this machine ({where}): {est.cost.describe()}")
        stored = sum(est.stored)
        held = f" ({stored:,} of them in the database, resumed)" if stored else ""
        print(f"  exhaustive: {sum(est.sizes):,} configs{held}, expected {expected(est, est.exhaustive_seconds)}")
    for effort, seconds in est.presets:
        budget = "every config" if effort.max_evals is None else f"{effort.max_evals} per shape × variant"
        time = f", expected {expected(est, seconds)}" if seconds is not None else ""
        print(f"  --effort {effort.name}: {effort.strategy}, {budget}{time}")
    if est.cost is not None:
        print("  (confirmation runs included" + ("; with no run measured, a preset chooses by the space's size: "
                                                 "ksweep run measures the runs)" if est.lower_bound else ")"))
