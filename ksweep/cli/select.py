"""ksweep select DB --size N=3000: the config the shipped size selector picks, and why."""

from __future__ import annotations

import json
import sys

from ..app.select import select
from .main import percent_of


def add_parser(sub) -> None:
    p = sub.add_parser("select", help="the tuned config for any size: the selector an exported header ships")
    p.add_argument("db", help="results database")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                   help="a size (a define or run argument of the shapes that is a number, ARG<i> for the i-th "
                        "run argument); repeat it for each size that differs between the tuned shapes")
    p.add_argument("--gpu", metavar="MODEL",
                   help="the GPU model (its name or a part of it); one never tuned on falls back to the tuned "
                        "model of its architecture, else to each shape's config that travels best")
    p.add_argument("--arch", metavar="SM", help="the GPU's architecture (sm_90, 90 or 9.0), for that fallback")
    p.add_argument("--variant", help="the variant (default: the first)")
    p.add_argument("--cover", type=percent_of("--cover"), metavar="PCT",
                   help="the selector of export --cover PCT (the fewest configs within PCT%% of each shape's best)")
    p.add_argument("--robust", action="store_true", help="the selector of export --robust")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    p.set_defaults(handler=run)


def run(args) -> int:
    options = dict(gpu=args.gpu, arch=args.arch, variant=args.variant, cover=args.cover, robust=args.robust)
    chosen = select(args.db, args.size, **options)
    if args.json:
        print(json.dumps(chosen.as_json(), indent=2, default=str))
        return 0
    print(" ".join(f"{k}={v}" for k, v in chosen.params.items()))
    print(f"rule: {chosen.choice.rule}")
    for line in chosen.choice.extrapolated:
        print(f"extrapolated: {line}")
    for note in chosen.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0

