"""ksweep report DB: the sorted table, CSV or JSON of a results database."""

from __future__ import annotations

from ..report.export import to_csv, to_json
from ..report.confirmed import confirmed
from ..report.profile_view import profiles_block
from ..report.table import render, wide_console
from ..store.sqlite import Store


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="print the results of a sweep")
    p.add_argument("db", help="results database")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.add_argument("--shape", help="only this shape")
    p.add_argument("--variant", help="only this variant")
    p.add_argument("--top", type=count, metavar="N",
                   help="table: the N best valid configs and at most N failed ones per shape/variant, "
                        "with a line counting the rest (0: all)")
    p.add_argument("--all", action="store_true", help="table: every row (the same as --top 0)")
    p.set_defaults(handler=run)


def count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def load_results(db: str, shape=None, variant=None):
    results, objective, order, _ = load_all(db, shape, variant)
    return results, objective, order


def load_all(db: str, shape=None, variant=None, profiles: list | None = None):
    """Results, objective, parameter order and what the confirmation runs say (and, into
    ``profiles`` when given, the stored Nsight Compute profiles)."""
    with Store(db, create=False) as store:
        results = store.results(variant=variant, shape=shape)
        objective = store.get_meta("objective", {"metric": "ms", "direction": "min"})
        order = store.param_orders()
        conf = confirmed(results, store.measurements(variant, shape), objective["direction"],
                         store.default_configs())
        if profiles is not None:
            profiles.extend(store.profiles(variant, shape))
    return results, objective, order, conf


def run(args) -> int:
    profiles: list = []
    results, objective, order, conf = load_all(args.db, args.shape, args.variant, profiles)
    if args.format == "csv":
        print(to_csv(results, conf), end="")
    elif args.format == "json":
        print(to_json(results, conf))
    else:
        render(results, objective["metric"], objective["direction"], wide_console(), param_order=order,
               top=None if args.all else args.top, confirmations=conf)
        if profiles:
            print("\n".join(profiles_block(profiles)))
    return 0
