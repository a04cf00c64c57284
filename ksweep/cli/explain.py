"""ksweep explain SPEC|DB CONFIG: why a config is valid or pruned, its resources and occupancy."""

from __future__ import annotations

import json

from ..app.explain import explain
from ..report.explain import render


def add_parser(sub) -> None:
    p = sub.add_parser("explain", help="derived values, constraints with margins, resources and occupancy of a config")
    p.add_argument("target", help="a spec (.toml) or a results database")
    p.add_argument("config", nargs="*", metavar="CONFIG",
                   help="NAME=VALUE ... (the rest at their defaults), a result id, 'best' or 'default' (the default)")
    p.add_argument("--shape", help="the shape (default: the first)")
    p.add_argument("--variant", help="the variant (default: the first)")
    p.add_argument("--spec", help="the spec of a database that does not name it (or names a moved file)")
    p.add_argument("--build", action="store_true",
                   help="compile the config (through the build cache) for ptxas's resources and the occupancy")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args) -> int:
    e = explain(args.target, args.config, shape=args.shape, variant=args.variant, build=args.build,
                spec_path=args.spec)
    if args.json:
        print(json.dumps(e.to_json(), indent=2, default=str))
    else:
        print(render(e))
    return 0
