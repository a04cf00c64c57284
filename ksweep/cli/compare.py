"""ksweep compare: two configs of a database, or two ncu CSV exports, side by side."""

from __future__ import annotations

import json

from ..app.compare import compare
from ..errors import KsweepError
from ..report.compare_view import render


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="two configs (or two ncu CSV exports) side by side: metrics, "
                                       "resources, derived values, SASS mix")
    p.add_argument("items", nargs="+", metavar="ARG",
                   help="A.csv B.csv (Nsight Compute CSV exports), or DB A B where A and B are each 'best', "
                        "'default', a result id or NAME=VALUE,NAME=VALUE")
    p.add_argument("--shape", help="the shape (default: the first)")
    p.add_argument("--variant", help="the variant (default: the first)")
    p.add_argument("--spec", help="the spec of a database that does not name it")
    p.add_argument("--no-sass", action="store_true", help="skip the SASS instruction-mix diff (no builds)")
    p.add_argument("--changed", action="store_true", help="only the rows that differ")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args) -> int:
    items = args.items
    if len(items) == 2:
        c = compare(items[0], items[1])
    elif len(items) == 3:
        c = compare(items[1], items[2], items[0], shape=args.shape, variant=args.variant,
                    spec_path=args.spec, sass=not args.no_sass)
    else:
        raise KsweepError("compare: give A.csv B.csv, or DB A B")
    print(json.dumps(c.to_json(), indent=2, default=str) if args.json else render(c, only_changed=args.changed))
    return 0
