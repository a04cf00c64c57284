"""ksweep init FILE: a starting spec from a source's guarded defines and #ifdef switches."""

from __future__ import annotations

import sys

from ..app.init import spec_output, starter


def add_parser(sub) -> None:
    p = sub.add_parser("init", help="write a starting spec from a source's #ifndef-guarded defines")
    p.add_argument("file", help="the C, C++ or CUDA source the build compiles")
    p.add_argument("-o", "--output", metavar="SPEC.toml",
                   help="write the spec there (default: print it; sources are then relative to this folder)")
    p.add_argument("--force", action="store_true", help="replace an existing -o file (never the source itself, a database or a spec)")
    p.set_defaults(handler=run)


def run(args) -> int:
    # the output checked before the source is read: an existing file only with --force, never the source
    out = spec_output(args.file, args.output, force=args.force) if args.output else None
    spec = starter(args.file, args.output)
    if out is None:
        sys.stdout.write(spec)
    else:
        print(f"ksweep: wrote {out.write(spec)}: check its values, then ksweep plan {out.path}", file=sys.stderr)
    return 0
