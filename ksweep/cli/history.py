"""ksweep history DB: the best result per source revision, in time order, regressions marked."""

from __future__ import annotations

import json

from ..app.history import history
from ..app.plot import image_output
from ..errors import require
from ..report.history import plot, render
from .main import percent_of


def add_parser(sub) -> None:
    p = sub.add_parser("history", help="the best result per source revision, regressions marked")
    p.add_argument("db", help="results database")
    p.add_argument("--shape", help="only this shape")
    p.add_argument("--variant", help="only this variant")
    p.add_argument("--tolerance", type=percent_of("--tolerance"), default=2.0, metavar="PCT",
                   help="a revision slower than the previous by more than PCT %% (and not within noise) is a "
                        "regression (default 2)")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the timeline")
    p.add_argument("--force", action="store_true", help="replace an existing --plot image")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args) -> int:
    if args.plot:  # said before the table, not after it
        require("matplotlib", "plot", "ksweep history --plot")
    out = image_output(args.plot, args.db, force=args.force, option="--plot") if args.plot else None
    lines, metric = history(args.db, shape=args.shape, variant=args.variant, tolerance=args.tolerance / 100)
    if args.json:
        print(json.dumps([{"variant": v, "shape": s, "points": [p.to_json() for p in pts]}
                          for (v, s), pts in lines.items()], indent=2))
    else:
        print(render(lines, metric) if lines else
              f"{args.db}: no evaluated result yet" + (": no plot written" if args.plot else ""))
    if out is not None and lines:
        print(plot(lines, metric, out))
    return 0
