"""ksweep init FILE: a starting spec from a source's guarded defines and #ifdef switches."""

from __future__ import annotations

import sys
from pathlib import Path

from ..app.init import starter, write


def add_parser(sub) -> None:
    p = sub.add_parser("init", help="write a starting spec from a source's #ifndef-guarded defines")
    p.add_argument("file", help="the C, C++ or CUDA source the build compiles")
    p.add_argument("-o", "--output", metavar="SPEC.toml",
                   help="write the spec there (default: print it; sources are then relative to this folder)")
    p.add_argument("--force", action="store_true", help="replace an existing -o file (never the source itself, a database or a spec)")
    p.set_defaults(handler=run)


def run(args) -> int:
    spec = starter(args.file, args.output, force=args.force)
    out = Path(args.output) if args.output else None
    if out is None:
        sys.stdout.write(spec)
    else:
        write(out, spec, force=args.force, source=args.file)
        print(f"ksweep: wrote {out}: check its values, then ksweep plan {out}", file=sys.stderr)
    return 0
