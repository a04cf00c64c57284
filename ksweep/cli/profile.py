"""ksweep profile DB: Nsight Compute on the best configs (and the default), stored with their results."""

from __future__ import annotations

from ..app.profile import profile
from ..report.profile_view import profile_lines


def add_parser(sub) -> None:
    p = sub.add_parser("profile", help="profile chosen configs of a sweep with Nsight Compute")
    p.add_argument("db", help="results database")
    p.add_argument("--top", type=int, default=3, metavar="N", help="the N best configs of each shape (default 3), "
                   "plus the default config")
    p.add_argument("--configs", nargs="+", metavar="CONFIG",
                   help="these configs instead: each NAME=VALUE,NAME=VALUE (the rest at their defaults), a result "
                        "id, 'best' or 'default'")
    p.add_argument("--metrics", metavar="SET",
                   help="'default', 'full' (ncu's --set full) or a comma-separated list of metric names "
                        "(default: [profile] metrics, else 'default')")
    p.add_argument("--shape", help="only this shape")
    p.add_argument("--variant", help="only this variant")
    p.add_argument("--spec", help="the spec of a database that does not name it")
    p.add_argument("--gpu", type=int, default=0, help="the GPU to profile on (default 0)")
    p.add_argument("--ncu", help="the ncu program (default: on the PATH)")
    p.add_argument("--csv-dir", metavar="DIR", help="also write each profile's ncu CSV exports (raw and details "
                   "pages) there, for ksweep compare A.csv B.csv")
    p.set_defaults(handler=run)


def run(args) -> int:
    metrics = None
    if args.metrics:
        metrics = args.metrics if args.metrics in ("default", "full") else tuple(
            m.strip() for m in args.metrics.split(",") if m.strip())
    done = profile(args.db, top=args.top, configs=args.configs or (), metrics=metrics, shape=args.shape,
                   variant=args.variant, spec_path=args.spec, gpu=args.gpu, ncu=args.ncu, csv_dir=args.csv_dir,
                   echo=lambda line: None)
    failed = 0
    for p in done:
        head = f"{p.shape}/{p.variant} {p.label}: " + " ".join(f"{k}={v}" for k, v in p.params.items())
        if not p.ok:
            failed += 1
            print(f"{head}\n  not profiled: {p.message}")
            continue
        print(head)
        if p.launches:
            print("\n".join(profile_lines({"launches": [p.launches[0].to_json()]})))
    print(f"{len(done) - failed} of {len(done)} configs profiled; their metrics are stored in {args.db}")
    return 1 if failed == len(done) else 0
