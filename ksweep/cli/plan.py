"""ksweep plan SPEC: what a sweep will do, before anything is compiled."""

from __future__ import annotations

import json
import sys

from ..app.plan import plan as plan_of
from ..app.wiring import load_spec
from ..report.plan_view import print_plan
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
    planned = plan_of(spec, show=args.show, db=args.db, samples=args.estimate,
                      warm_start=tuple(args.warm_start or ()), jobs=args.jobs, cache=args.cache)
    plan, est, spills = planned.plan, planned.estimate, planned.spilled
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
