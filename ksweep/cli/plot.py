"""ksweep plot heatmap DB --x P1 --y P2 (best value per pair of parameters) and
ksweep plot convergence DB (best so far against evaluations)."""

from __future__ import annotations

from ..app.plot import image_output, marked_best, to_plot
from ..report.plot import plot_convergence, plot_heatmap

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
    h.add_argument("--out", default="heatmap.png", help="output image (default heatmap.png; .png, .svg, .pdf …)")
    h.add_argument("--force", action="store_true", help="replace an existing --out image")
    h.set_defaults(handler=run)
    c = kinds.add_parser("convergence", help="best value so far against evaluations, a line per shape")
    c.add_argument("db", help="results database")
    c.add_argument("--metric", help="metric (default: the sweep's objective)")
    c.add_argument("--direction", choices=("min", "max"), help=DIRECTION_HELP)
    c.add_argument("--shape", help="only this shape")
    c.add_argument("--variant", help="only this variant")
    c.add_argument("--out", default="convergence.png", help="output image (default convergence.png; .png, .svg, .pdf …)")
    c.add_argument("--force", action="store_true", help="replace an existing --out image")
    c.set_defaults(handler=run_convergence)


def _load(args):
    """The results to plot, the metric and which way is better (--direction, else
    metric_direction's rule over the sweep's objectives), read in one transaction."""
    return to_plot(args.db, shape=args.shape, variant=args.variant, metric=args.metric, direction=args.direction)


def run(args) -> int:
    out = image_output(args.out, args.db, force=args.force)
    results, metric, direction = _load(args)
    best = marked_best(args.db, metric, shape=args.shape, variant=args.variant)  # as the table marks it
    print(plot_heatmap(results, args.x, args.y, metric, direction, out, best=best))
    return 0


def run_convergence(args) -> int:
    out = image_output(args.out, args.db, force=args.force)
    results, metric, direction = _load(args)
    print(plot_convergence(results, metric, direction, out))
    return 0
