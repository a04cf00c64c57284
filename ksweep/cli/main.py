"""The ``ksweep`` command: parse, call the library, map user errors to one line and exit 2."""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import KsweepError

# One module per command, each with add_parser(subparsers) and run(args) -> int.
COMMANDS = ("plan", "run", "report", "plot", "replay", "bench_strategies", "tune_kernel")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ksweep", description="Autotune the compile-time parameters of CUDA kernels."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"ksweep.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"ksweep.cli.{name}":
                continue  # a command not shipped in this build
            raise
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except KsweepError as exc:
        print(f"ksweep: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ksweep: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
