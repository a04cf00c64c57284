"""ksweep plot heatmap DB --x P1 --y P2 (best value per pair of parameters) and
ksweep plot convergence DB (best so far against evaluations)."""

from __future__ import annotations

from ..report.plot import plot_convergence, plot_heatmap
from ..spec.objectives import metric_direction
from ..store import standings
from ..store.sqlite import Store
from ..app.report import check_names

DIRECTION_HELP = ("min: lower is better, max: higher is better (default: the sweep's direction for one of its "
                  "objectives, max for a throughput such as gflops, tflops, bandwidth, else min)")


def add_parser(sub) -> None:
    p = sub.add_parser("plot", help="plots of a results database")
    kinds = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    h = kinds.add_parser("heatmap", help="best value for each (x, y) pair over the other parameters")
    h.add_argument("db", help="results database")
    h.add_argument("--x", required=True, help="parameter on the x axis")
    h.add_argument("--y", required=True, help="parameter on the y axis")
    h.add_argument("--metric", help="metric (default: the sweep's objective)")
    h.add_argument("--direction", choices=("min", "max"), help=DIRECTION_HELP)
    h.add_argument("--shape", help="only this shape (default: a panel per shape)")
    h.add_argument("--variant", help="only this variant")
    h.add_argument("--out", default="heatmap.png", help="output image (default heatmap.png)")
    h.set_defaults(handler=run)
    c = kinds.add_parser("convergence", help="best value so far against evaluations, a line per shape")
    c.add_argument("db", help="results database")
    c.add_argument("--metric", help="metric (default: the sweep's objective)")
    c.add_argument("--direction", choices=("min", "max"), help=DIRECTION_HELP)
    c.add_argument("--shape", help="only this shape")
    c.add_argument("--variant", help="only this variant")
    c.add_argument("--out", default="convergence.png", help="output image (default convergence.png)")
    c.set_defaults(handler=run_convergence)


def _load(args):
    """The results to plot, the metric and which way is better (--direction, else
    metric_direction's rule over the sweep's objectives), read in one transaction."""
    with Store(args.db, create=False) as store, store.snapshot():
        check_names(store, args.shape, args.variant)
        results = store.results(variant=args.variant, shape=args.shape)
        objective, objectives = store.objective(), store.objectives()
    metric = args.metric or objective.metric
    return results, metric, args.direction or metric_direction(metric, (objective, *objectives))


def run(args) -> int:
    results, metric, direction = _load(args)
    with Store(args.db, create=False) as store:  # the store's BEST of each shape, as the table marks it
        found = standings.read(store, args.variant, args.shape)
    best = {}
    if metric == found.objective.metric:
        for key, s in found.items():
            r = s.best()
            v = s.value(r, singles=True) if r is not None else None
            if v is not None:
                best[key] = (r, v.value, v.confirmed)
    out = plot_heatmap(results, args.x, args.y, metric, direction, args.out, best=best)
    print(out)
    return 0


def run_convergence(args) -> int:
    results, metric, direction = _load(args)
    print(plot_convergence(results, metric, direction, args.out))
    return 0
