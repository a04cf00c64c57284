"""ksweep plan SPEC: what a sweep will do, before anything is compiled."""

from __future__ import annotations

import json
import sys

from ..report.plan_view import print_plan
from ..space.plan import make_plan
from ..spec.load import load_spec


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="count valid and pruned configs per shape and variant")
    p.add_argument("spec", help="the sweep spec (TOML)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--show", type=int, default=5, metavar="N", help="valid configs to show per shape/variant (default 5)")
    p.set_defaults(handler=run)


def run(args) -> int:
    spec = load_spec(args.spec)
    for warning in spec.warnings:
        print(f"ksweep: warning: {warning}", file=sys.stderr)
    plan = make_plan(spec, show=args.show)
    if args.json:
        print(json.dumps(plan.to_json(), indent=2, default=str))
    else:
        print_plan(spec, plan)
    return 0
