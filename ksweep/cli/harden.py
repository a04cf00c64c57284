"""ksweep harden DB: the leaders of a stored sweep run under compute-sanitizer, the verdicts stored."""

from __future__ import annotations

from ..app.harden import harden


def add_parser(sub) -> None:
    p = sub.add_parser("harden", help="run the leaders of a stored sweep under compute-sanitizer (memcheck, "
                                      "racecheck, initcheck, synccheck) and store the verdicts")
    p.add_argument("db", help="results database")
    p.add_argument("--spec", help="the spec of a database that does not name it")
    p.add_argument("--shape", help="only this shape")
    p.add_argument("--variant", help="only this variant")
    p.add_argument("--tool", action="append", choices=("memcheck", "racecheck", "initcheck", "synccheck"),
                   help="only this tool (repeatable; default: [harden] tools, else all four)")
    p.add_argument("--gpu", type=int, default=0, help="the GPU to run on (default 0)")
    p.add_argument("--sanitizer", metavar="PATH", help="the compute-sanitizer program (default: on the PATH, "
                                                        "else the CUDA toolkit's)")
    p.add_argument("--output", metavar="DIR", help="write each tool's report of each config to a file in DIR "
                                                    "(SHAPE-VARIANT-DIGEST-TOOL.txt)")
    p.set_defaults(handler=run)


def run(args) -> int:
    done = harden(args.db, spec_path=args.spec, shape=args.shape, variant=args.variant, gpu=args.gpu,
                  sanitizer=args.sanitizer, tools=args.tool, output=args.output, echo=print)
    found = sum(d.status is not None for d in done)
    counts: dict[str, int] = {}
    for d in done:
        counts[d.verdict] = counts.get(d.verdict, 0) + 1
    said = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no leader to harden"
    print(f"hardened {len(done)} config(s): {said}; the verdicts are stored in {args.db}")
    return 1 if found else 0
