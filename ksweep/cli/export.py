"""ksweep export DB --format header|json|t4|kt-cache: the tuned configs for a library, or the
results for another tuner."""

from __future__ import annotations

import sys

from ..app.export import FORMATS, export
from ..report.edited import edited_notes
from ..report.rank import unverified_notes
from .main import percent_of, version


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="write the best configs as a C/C++ header or JSON, or the results "
                                      "as a T4 file or a Kernel Tuner cache")
    p.add_argument("db", help="results database")
    p.add_argument("--format", required=True, choices=FORMATS,
                   help="header: a C/C++ header of each shape's best config; json: the same as JSON; t4: the "
                        "T4 results file of one shape; kt-cache: a Kernel Tuner cache of one shape")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: standard output)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing -o file (never a database, a spec or a source it builds)")
    p.add_argument("--cover", type=percent_of("--cover"), metavar="PCT",
                   help="header, json: the fewest configs that keep every shape within PCT%% of its own best")
    p.add_argument("--robust", action="store_true",
                   help="header, json: one config per shape for every GPU model, the worst loss over the shapes "
                        "and GPU models the least it can be, with the fewest configs (with --cover PCT: any loss "
                        "up to PCT%% too)")
    p.add_argument("--shape", help="only this shape")
    p.add_argument("--variant", help="only this variant")
    p.add_argument("--gpu", metavar="MODEL", help="only this GPU model (its name or a part of it)")
    p.add_argument("--allow-unhardened", action="store_true",
                   help="header, json: ship configs the sanitizers have not checked, where the database was "
                        "hardened (a config found unsafe is never shipped); see docs/cli.md")
    p.set_defaults(handler=run)


def run(args) -> int:
    done = export(args.db, args.format, generator=f"ksweep {version()}", cover=args.cover, shape=args.shape,
                  variant=args.variant, gpu=args.gpu, output=args.output, force=args.force,
                  allow_unhardened=args.allow_unhardened, robust=args.robust)
    out = done.out
    said = sys.stdout
    if done.written:
        print(f"wrote {done.written}")
    else:
        sys.stdout.write(out.text)
        said = sys.stderr
    for line in out.lines:
        print(line, file=said)
    for note in out.notes:
        print(f"note: {note}", file=said)
    shipped = done.shipped
    for note in [*edited_notes(shipped), *unverified_notes(shipped)]:  # the source on disk changed; unchecked
        print(f"note: {note}", file=said)
    left_out = done.left_out
    if left_out:  # chosen among the others: the user should know some configs' results did not count
        print(f"note: {left_out} superseded result{'s' if left_out != 1 else ''} left out: measured on another "
              "source or spec, or not measured again yet by a --rerun all that did not end "
              f"(ksweep report {args.db} --superseded lists them)", file=said)
    return 0
