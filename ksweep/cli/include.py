"""ksweep include: the folder of ksweep.h, for -I (as ``pybind11 --includes`` does)."""

from __future__ import annotations

from ..app.include import where


def add_parser(sub) -> None:
    p = sub.add_parser("include", help="print the folder of ksweep.h (nvcc -I$(ksweep include) ...)")
    p.add_argument("--flag", action="store_true", help="print it as a compiler flag: -I<folder>")
    p.set_defaults(handler=run)


def run(args) -> int:
    print(where(args.flag))
    return 0
