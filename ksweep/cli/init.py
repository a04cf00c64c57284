"""ksweep init FILE: a starting spec from a source's guarded defines and #ifdef switches."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import KsweepError
from ..run.gpus import local_arch
from ..source.files import read_source, write_source
from ..source.starter import starter_spec


def add_parser(sub) -> None:
    p = sub.add_parser("init", help="write a starting spec from a source's #ifndef-guarded defines")
    p.add_argument("file", help="the C, C++ or CUDA source the build compiles")
    p.add_argument("-o", "--output", metavar="SPEC.toml",
                   help="write the spec there (default: print it; sources are then relative to this folder)")
    p.add_argument("--force", action="store_true", help="replace an existing -o file")
    p.set_defaults(handler=run)


def run(args) -> int:
    source = Path(args.file)
    text = read_source(source)
    out = Path(args.output) if args.output else None
    if out is not None and out.exists() and not args.force:
        raise KsweepError(f"{out} exists: give --force to replace it, or another -o")
    folder = (out.parent if out is not None else Path.cwd()).resolve()
    named = Path(os.path.relpath(source.resolve(), folder)).as_posix()
    arch = local_arch() if source.suffix.lower() == ".cu" else None
    spec = starter_spec(text, named, arch=arch, arch_note="the local GPU" if arch else "",
                        spec_name=out.name if out is not None else None)
    if out is None:
        sys.stdout.write(spec)
    else:
        write_source(out, spec)
        print(f"ksweep: wrote {out}: check its values, then ksweep plan {out}", file=sys.stderr)
    return 0
