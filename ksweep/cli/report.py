"""ksweep report DB: the sorted table, CSV or JSON of a results database."""

from __future__ import annotations

import sys

from ..app.report import keys_of, load_all, objectives_of
from ..report.edited import edited_notes
from ..report.rank import unverified_notes
from ..report.pareto import front_ids, render_fronts
from ..report.records import to_csv, to_json
from ..report.profile_view import profiles_block
from ..report.table import render, wide_console


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
    p.add_argument("--objectives", metavar="A,B",
                   help="the Pareto front over these metrics (default: the sweep's objectives, when it had "
                        "several): time, energy, power, gflops_per_watt or any metric, NAME:max to maximise; "
                        "CSV and JSON get a pareto column")
    p.add_argument("--superseded", action="store_true",
                   help="also the superseded results: measured on another source or spec, which a later sweep "
                        "or check --update found out of date, or not measured again yet by a --rerun all "
                        "(never ranked with the others)")
    p.add_argument("--html", metavar="PAGE.html",
                   help="write one self-contained HTML page instead: per shape × variant the sortable table, "
                        "heat-maps, convergence, Pareto front, history, the leaders' facts and the insights "
                        "(needs ksweep[html]; opens without a network)")
    p.add_argument("--force", action="store_true", help="replace an existing --html page")
    p.set_defaults(handler=run)


def count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def run(args) -> int:
    if args.html is not None:
        return html(args)
    profiles: list = []
    old: list = []
    standings, order, objectives = load_all(args.db, args.shape, args.variant, profiles, old)
    results, objective, conf = standings.results, standings.objective, standings.confirmations
    if args.objectives is not None:  # kernel mode's names (time: ms…) unless the results have such a metric
        objectives = objectives_of(args.objectives, results)
    old_rows = old if args.superseded else []
    marked = keys_of(old) if args.superseded else None
    for line in [*edited_notes(results), *unverified_notes(results)]:  # what the user must know of them
        print(f"note: {line}", file=sys.stderr if args.format != "table" else sys.stdout)
    if args.format == "csv":
        print(to_csv(results + old_rows, conf, front_ids(results, objectives), marked), end="")
    elif args.format == "json":
        print(to_json(results + old_rows, conf, front_ids(results, objectives), marked))
    elif not results and not old:  # a sweep stopped before its first result: say so, not an empty page
        print(f"{args.db}: no evaluated result yet")
    else:
        console = wide_console()
        render(results, objective.metric, objective.direction, console, param_order=order,
               top=None if args.all else args.top, confirmations=conf)
        if old_rows:
            render(old_rows, objective.metric, objective.direction, console, param_order=order,
                   top=None if args.all else args.top, best=False,
                   title_suffix=" · superseded: measured on another source or spec, or not measured again yet "
                                "by a --rerun all; not ranked")
        elif old:
            n = len(old)
            them = 'them' if n != 1 else 'it'
            print(f"{n} superseded result{'s' if n != 1 else ''} {'are' if n != 1 else 'is'} not shown: measured on "
                  f"another source or spec (a later sweep or check --update found {them} out of date), or not "
                  f"measured again yet by a --rerun all (--superseded shows {them})")
        if len(objectives) >= 2:
            render_fronts(results, objectives, console, order)
        if profiles:
            print("\n".join(profiles_block(profiles)))
    return 0


def html(args) -> int:
    from ..app.html import html_output, library, write_page

    out = html_output(args.html, args.db, force=args.force)  # before any work
    library()  # the charting library installed (else one line with the pip command)
    print(write_page(args.db, out, shape=args.shape, variant=args.variant))
    return 0
