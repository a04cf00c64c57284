"""The ``ksweep`` command: parse, call the library, map user errors to one line and exit 2."""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import os
import signal
import sys
import threading

from ..errors import KsweepError

# One module per command, each with add_parser(subparsers) and run(args) -> int.
COMMANDS = ("plan", "run", "report", "explain", "profile", "compare", "insights", "history", "check", "harden",
            "export", "select", "plot", "replay", "bench_strategies", "include", "guard", "init")


def version() -> str:
    """The installed distribution's version; the package's own when it is not installed."""
    from .. import version as installed

    return installed()


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake said in one line (the option, the value, the fix)
    and exit code 2; ``--help`` still shows the whole usage."""

    def parse_known_args(self, args=None, namespace=None):
        # `ksweep guard F --check -- gcc -c F`: argparse leaves an option that takes the rest of
        # the line (nargs=REMAINDER) empty when `--` follows it; there `--` only marks where the
        # command starts, so it is dropped.
        if args is not None:
            args = list(args)
            rest = {s for s, a in self._option_string_actions.items() if a.nargs == argparse.REMAINDER}
            at = next((i for i, a in enumerate(args[:-1]) if a in rest and args[i + 1] == "--"), None)
            if at is not None:
                del args[at + 1]
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        message = re.sub(r"^argument [^:]+: (?=--)", "", message)  # our own types name the option already
        where = f"{self.prog.split(' ', 1)[-1]}: " if " " in self.prog else ""
        self.exit(2, f"ksweep: error: {where}{message} (see {self.prog} --help)\n")

    def unrecognized(self, extra: list[str]) -> None:
        """One line for arguments this command does not take, with the option meant when an
        option is misspelt (--max-evls: did you mean --max-evals?)."""
        options = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        mine = extra[:extra.index("--")] if "--" in extra else extra  # after `--`: not an option of ours
        close = next((m for x in mine if x.startswith("--")
                      for m in difflib.get_close_matches(x.split("=", 1)[0], options, n=1, cutoff=0.75)), None)
        self.error(f"unrecognized arguments: {' '.join(extra)}" + (f" — did you mean {close}?" if close else ""))


# Option types the commands share: a bad value is one line naming the option (_Parser.error).
class _OptionError(argparse.ArgumentTypeError):
    pass


def _option_type(option: str, convert, accept, wanted: str):
    """An argparse type: ``convert(text)`` when it converts and ``accept`` takes it, else one
    line naming the option and what to give (``wanted``)."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not accept(value):
            raise _OptionError(f"{option} {text}: give {wanted}")
        return value
    return parse


def count_of(option: str, least: int = 1, most: int | None = None):
    """An argparse type: a whole number of at least ``least`` (and at most ``most``)."""
    if most is not None:
        return _option_type(option, int, lambda v: least <= v <= most, f"a whole number from {least} to {most}")
    return _option_type(option, int, lambda v: v >= least, f"a whole number of at least {least}")


def percent_of(option: str):
    """An argparse type: a percentage, 0 or more (``5`` or ``5%``), finite."""
    return _option_type(option, lambda t: float(t.rstrip("%")) + 0.0, lambda v: 0 <= v < float("inf"),
                        "a percentage, 0 or more")  # + 0.0: -0 is 0, never printed "-0%"


def seconds_of(option: str):
    """An argparse type: seconds, 0 or more, finite."""
    return _option_type(option, float, lambda v: 0 <= v < float("inf"), "a number of seconds, 0 or more")


def parse_gpus(text: str | None) -> list[int] | None:
    """``--gpus 0,1``: the GPU indices (None: not given); a KsweepError naming the option."""
    if text is None:
        return None
    parts = [g.strip() for g in text.split(",") if g.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise KsweepError(f"--gpus {text}: give GPU indices separated by commas, e.g. --gpus 0,1 "
                          f"(nvidia-smi lists them)")
    return [int(p) for p in parts]


class _Version(argparse.Action):
    """``--version``: the version looked up only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"ksweep {version()}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command`` (one of COMMANDS), only that command's
    module is imported and its sub-command added (what a call naming it needs)."""
    parser = _Parser(
        prog="ksweep", description="Autotune the compile-time parameters of CUDA kernels."
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = (command or "").replace("-", "_")  # bench-strategies is bench_strategies.py
    for name in (wanted,) if wanted in COMMANDS else COMMANDS:
        importlib.import_module(f"ksweep.cli.{name}").add_parser(sub)
    parser.commands = sub.choices  # name -> its parser (for a mistake said by the command's own)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # `ksweep run ...` imports the run command's module only (the others' imports cost start-up)
    parser = build_parser(argv[0] if argv else None)
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's parser, unless it came before the command's name
        before = argv.index(args.command) > argv.index(extra[0]) if extra[0] in argv else False
        (parser if before else parser.commands.get(args.command, parser)).unrecognized(extra)
    previous = _stop_on_sigterm()
    try:
        code = int(args.handler(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except KsweepError as exc:
        print(f"ksweep: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ksweep: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # some other pipe: a bug, not the reader of our output going away
        # `ksweep report DB | head`: the reader has gone. Point stdout at devnull so that
        # the flush at exit cannot fail again, and exit quietly (as the Python docs advise).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _sigterm(signum, frame):
    raise KeyboardInterrupt


def _stop_on_sigterm():
    """SIGTERM (``kill``, a CI job's timeout) stops a command as Ctrl-C does: its clean-up runs
    (temporary copies removed, a sweep's processes stopped, its results kept). The handler it
    replaced, to put back; None when not on the main thread (a handler cannot be set there)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _sigterm)


def _stdout_closed() -> bool:
    """True when nothing reads our standard output any more (its pipe's reader is gone)."""
    try:
        import select

        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() here, or stdout is no file
        return True


if __name__ == "__main__":
    sys.exit(main())
