"""ksweep insights DB: failures as constraints, the knobs' importance, the winner's risk."""

from __future__ import annotations

import json

from ..app.insights import constraints, insights
from ..report.insights_view import constraints_toml, render


def add_parser(sub) -> None:
    p = sub.add_parser("insights", help="failures as constraints, knob importance and the winner's risk of a "
                                        "database or a recorded dataset")
    p.add_argument("db", metavar="DB", help="a results database, or a recorded dataset (Kernel Tuner cache or T4 "
                                            "results file, as ksweep replay reads)")
    p.add_argument("--shape", help="only this shape")
    p.add_argument("--variant", help="only this variant")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print everything as one JSON object")
    out.add_argument("--constraints", action="store_true",
                     help="print the failure rules as [[constraints]] blocks to append to the spec")
    p.set_defaults(handler=run)


def run(args) -> int:
    done = insights(args.db, shape=args.shape, variant=args.variant)
    if args.json:
        out = done.to_json()
        out["constraints"] = constraints(done)
        print(json.dumps(out, indent=2, default=str))
    elif args.constraints:
        print(constraints_toml(constraints(done), args.db), end="")
    else:
        print(render(done))
    return 0
