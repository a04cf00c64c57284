"""ksweep plot heatmap DB --x P1 --y P2: best value per pair of parameters."""

from __future__ import annotations

from ..report.plot import plot_heatmap
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


def run(args) -> int:
    results, objective, _ = load_results(args.db, args.shape, args.variant)
    metric = args.metric or objective["metric"]
    direction = objective["direction"] if metric == objective["metric"] else "min"
    out = plot_heatmap(results, args.x, args.y, metric, direction, args.out)
    print(out)
    return 0
