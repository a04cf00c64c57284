"""ksweep guard FILE [NAME ...] [--convert NAME ...]: wrap plain #define lines in #ifndef guards, and
turn constants into guarded macros, so -D can set them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..app.guard import DEFAULT_TIMEOUT, check_code, guard_file, guarded_output, not_macros
from ..errors import KsweepError


def add_parser(sub) -> None:
    p = sub.add_parser("guard", help="wrap #define NAME value lines in #ifndef NAME guards (prints a diff)")
    p.add_argument("file", help="the C, C++ or CUDA source")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="guard these defines only (default: every object-like define with a value)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--in-place", action="store_true", help="rewrite FILE (its line endings kept)")
    out.add_argument("-o", "--output", metavar="OUT", help="write the guarded source to OUT (a new file, or "
                                                            "with --force an existing one; never FILE)")
    p.add_argument("--convert", nargs="+", metavar="NAME", default=[],
                   help="turn these integer const/constexpr declarations (const uint K10_BM = 128;) into guarded "
                        "macros of the same name and value (its type kept: 128u)")
    p.add_argument("--force", action="store_true", help="replace an existing -o file")
    p.add_argument("--check", nargs=argparse.REMAINDER, metavar="BUILD COMMAND",
                   help="after '--': a command that compiles FILE (with -o); FILE is built as it is and as "
                        "guarded, and the generated code compared; --in-place and -o write only when it is "
                        "identical")
    p.add_argument("--against", metavar="OLD",
                   help="with --check: compare with the code of OLD (the file before your own edits, such as "
                        "hard-coded constants turned into expressions) instead of FILE as it is")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"seconds each --check build may take (default {DEFAULT_TIMEOUT:g})")
    p.set_defaults(handler=run)


def run(args) -> int:
    path = Path(args.file)
    if args.timeout <= 0:
        raise KsweepError(f"--timeout {args.timeout:g}: give a positive number of seconds")
    if args.check is not None and not args.check:
        raise KsweepError("--check needs the build command after it: --check -- nvcc -cubin -o k.cubin k.cu")
    if args.against and args.check is None:
        raise KsweepError("--against compares generated code: give --check -- BUILD COMMAND too")
    target = (guarded_output(path, output=args.output, force=args.force, against=args.against)
              if args.in_place or args.output else None)
    guarded = guard_file(path, args.names or None, args.convert)
    result = guarded.result
    names = list(dict.fromkeys(d.name for d in result.guarded))
    left = f"; left: {', '.join(f'{x.name} ({x.why}, line {x.line})' for x in result.left)}" if result.left else ""
    done = [f"guarded {', '.join(names)}"] if names else []
    done += [f"converted {', '.join(f'{c.name} ({c.what})' for c in result.converted)}"] if result.converted else []
    print(f"ksweep: {path}: " + ("; ".join(done) or "nothing to guard") + left, file=sys.stderr)
    if not args.names and not args.convert:
        others = [s for s in not_macros(path) if s.number]  # an integer literal: a knob, maybe
        if others:
            shown = ", ".join(s.described() for s in others[:8]) + (" …" if len(others) > 8 else "")
            print(f"ksweep: {path}: not macros, so -D cannot set them: {shown} (--convert NAME … makes a "
                  f"constant a guarded macro)", file=sys.stderr)
    code = 0
    if args.check is not None and (result.changed or args.against):
        report = check_code(guarded, args.check, against=args.against, timeout=args.timeout)
        print(f"ksweep: {report.summary}", file=sys.stderr)
        for line in report.details():
            print(line, file=sys.stderr)
        code = 0 if report.identical else 1
    if not result.changed:
        return code
    if target is None:
        sys.stdout.write(guarded.diff())
    elif code == 0:
        print(f"ksweep: wrote {target.write(result.text)}", file=sys.stderr)
    else:
        print(f"ksweep: {target.path} not written: the generated code differs", file=sys.stderr)
    return code
