"""ksweep plot heatmap DB --x P1 --y P2 (best value per pair of parameters) and
ksweep plot convergence DB (best so far against evaluations)."""

from __future__ import annotations

from ..report.plot import plot_convergence, plot_heatmap
from .report import load_results


def add_parser(sub) -> None:
    p = sub.add_parser("plot", help="plots of a results database")
    kinds = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    h = kinds.add_parser("heatmap", help="best value for each (x, y) pair over the other parameters")
    h.add_argument("db", help="results database")
    h.add_argument("--x", required=True, help="parameter on the x axis")
    h.add_argument("--y", required=True, help="parameter on the y axis")
    h.add_argument("--metric", help="metric (default: the sweep's objective)")
    h.add_argument("--shape", help="only this shape")
    h.add_argument("--variant", help="only this variant")
    h.add_argument("--out", default="heatmap.png", help="output image (default heatmap.png)")
    h.set_defaults(handler=run)
    c = kinds.add_parser("convergence", help="best value so far against evaluations, a line per shape")
    c.add_argument("db", help="results database")
    c.add_argument("--metric", help="metric (default: the sweep's objective)")
    c.add_argument("--shape", help="only this shape")
    c.add_argument("--variant", help="only this variant")
    c.add_argument("--out", default="convergence.png", help="output image (default convergence.png)")
    c.set_defaults(handler=run_convergence)


def run(args) -> int:
    results, objective, _ = load_results(args.db, args.shape, args.variant)
    metric = args.metric or objective["metric"]
    direction = objective["direction"] if metric == objective["metric"] else "min"
    out = plot_heatmap(results, args.x, args.y, metric, direction, args.out)
    print(out)
    return 0


def run_convergence(args) -> int:
    results, objective, _ = load_results(args.db, args.shape, args.variant)
    metric = args.metric or objective["metric"]
    direction = objective["direction"] if metric == objective["metric"] else "min"
    print(plot_convergence(results, metric, direction, args.out))
    return 0
