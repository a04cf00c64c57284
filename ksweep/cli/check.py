"""ksweep check SPEC: build the current source and the baseline revision, measure the best
known config of each shape on both in interleaved rounds until they are told apart, and
exit 1 when a shape regressed beyond tolerance and noise (or, with --strict, could not be told)."""

from __future__ import annotations

import json
import sys

from ..app.check import BUDGET, REPEATS, check
from ..app.sweep import Confirmation, SweepOptions, check_options
from ..app.wiring import load_spec
from .main import count_of, parse_gpus, percent_of, seconds_of


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="a regression gate: the best known configs measured on the current source")
    p.add_argument("spec", help="the sweep spec (TOML)")
    p.add_argument("--db", help="its results database (default: the spec's, under .ksweep/)")
    p.add_argument("--tolerance", type=percent_of("--tolerance"), default=5.0, metavar="PCT",
                   help="slower by more than PCT %% (and beyond noise) is a regression (default 5)")
    p.add_argument("--shape", action="append", help="only this shape (repeatable)")
    p.add_argument("--variant", action="append", help="only this variant (repeatable)")
    p.add_argument("--repeats", type=count_of("--repeats", least=0, most=Confirmation.MAX_ROUNDS),
                   default=REPEATS, metavar="R",
                   help=f"interleaved rounds at least, each a run of the baseline and of the current build "
                        f"(default {REPEATS}; 0: one run against the stored figures)")
    p.add_argument("--budget", type=seconds_of("--budget"), default=BUDGET, metavar="S",
                   help=f"seconds of rounds of a shape after which one not told apart is inconclusive "
                        f"(default {BUDGET:g})")
    p.add_argument("--strict", action="store_true", help="an inconclusive shape fails the gate too")
    p.add_argument("--update", action="store_true", help="record the new measurements in the history")
    p.add_argument("--gpus", help="the GPU to measure on: the first of these (default: the host's first)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args) -> int:
    gpus = parse_gpus(args.gpus) if args.gpus else None  # "": every GPU, as no --gpus
    spec = load_spec(args.spec)
    # a --shape or --variant the spec lacks: one line, as `ksweep run` says it (a typo must not pass a gate)
    check_options(spec, SweepOptions(shapes=args.shape, variants=args.variant), own_strategy=True, cli=True)
    verdicts = check(spec, db=args.db, tolerance=args.tolerance / 100, shapes=args.shape or (),
                     variants=args.variant or (), repeats=args.repeats, budget=args.budget, update=args.update,
                     gpus=gpus)
    metric = spec.objective.metric
    if args.json:
        print(json.dumps([{"variant": v.variant, "shape": v.shape, "verdict": v.verdict, "params": v.params,
                           "baseline": v.baseline, "baseline_revision": v.baseline_revision, "now": v.now,
                           "revision": v.revision, "speedup": v.speedup, "beyond_noise": v.beyond_noise,
                           "baseline_ci95": _ci(v.baseline_interval), "now_ci95": _ci(v.now_interval),
                           "speedup_ci95": _ci(v.speedup_interval), "rounds": v.rounds,
                           "seconds": round(v.seconds, 3), "baseline_rebuilt": v.rebuilt,
                           "stored_baseline": v.stored, "note": v.note,
                           "message": v.message} for v in verdicts], indent=2))
    else:
        for v in verdicts:
            print(v.line(metric))
    unsure = [v for v in verdicts if v.verdict == "inconclusive"]
    if unsure:
        print(f"ksweep check: {len(unsure)} of {len(verdicts)} shapes slower beyond the tolerance but within "
              f"noise, or too noisy to tell (inconclusive: "
              + ("failed, --strict)" if args.strict else "not failed; --strict fails them)"),
              file=sys.stderr if args.json else sys.stdout)
    checked = [v for v in verdicts if v.verdict != "no baseline"]
    if verdicts and not checked:  # a gate that measured nothing must not pass
        print(f"ksweep check: no shape was checked ({len(verdicts)} without a baseline): nothing to pass",
              file=sys.stderr if args.json else sys.stdout)
        return 1
    bad = [v for v in verdicts if v.failed]
    if bad:
        print(f"ksweep check: {len(bad)} of {len(verdicts)} shapes regressed or failed",
              file=sys.stderr if args.json else sys.stdout)
    return 1 if bad or (unsure and args.strict) else 0


def _ci(iv):
    return None if iv is None or iv.n < 2 else [iv.lo, iv.hi]
